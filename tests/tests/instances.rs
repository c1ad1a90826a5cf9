//! The instance registry (`NimbusInstances`) on every database and layout: every bus registers
//! and heartbeats whether or not it receives, `stop()` marks it stopped, a SIGKILLed process
//! shows as not responding after three missed heartbeats, and a second live process with one
//! instance name is refused with an error that names the first (unless both share the name).
//! The second processes are the `instance_holder` binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use nimbus::admin::{InstanceInfo, InstanceState};
use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

struct Quiet;

impl Handler<Numbered> for Quiet {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// A process running `instance_holder`, killed when dropped.
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its output, line by line, read by a thread of its own.
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Holder {
    /// Starts `instance_holder` on `db` with these names; returns it with its first line
    /// (`started`, or `refused: …`), read on a blocking thread.
    async fn start(
        db: &TestDatabase,
        application: &str,
        instance: &str,
        share: bool,
    ) -> (Holder, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_instance_holder"));
        command
            .arg(db.url())
            .arg(if db.shared_table() {
                "shared"
            } else if db.nservicebus_shape() {
                "nservicebus"
            } else {
                "table"
            })
            .arg(db.schema().unwrap_or("-"))
            .args([application, instance, if share { "1" } else { "0" }, "1000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = command.spawn().expect("start instance_holder");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut holder = Holder {
            child,
            stdin,
            lines,
        };
        let first = holder.next_line().await;
        (holder, first)
    }

    async fn next_line(&mut self) -> String {
        self.lines
            .recv()
            .await
            .unwrap_or_else(|| "(instance_holder exited without a word)".into())
    }

    /// Asks it to stop its bus; returns what it printed.
    async fn stop(&mut self) -> String {
        if let Some(mut stdin) = self.stdin.take() {
            writeln!(stdin, "stop").expect("write to instance_holder");
        }
        self.next_line().await
    }

    fn pid(&self) -> i64 {
        i64::from(self.child.id())
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn instances(db: &TestDatabase) -> Vec<InstanceInfo> {
    db.admin()
        .instances()
        .await
        .expect("list the instances")
        .expect("auto-create made NimbusInstances")
}

/// The row of the newest start of `application`/`instance` (with process `pid` when given).
async fn row(db: &TestDatabase, instance: &str, pid: Option<i64>) -> Option<InstanceInfo> {
    instances(db)
        .await
        .into_iter()
        .find(|i| i.instance == instance && pid.is_none_or(|p| i.process_id == p))
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn registry(setup: Setup) {
    nimbus_conformance::capture_logs();
    let db = TestDatabase::new(setup).await;
    let this_pid = i64::from(std::process::id());

    // A receiving bus and a send-only bus both register, live.
    let receiving = db
        .builder("Registry", "registry-1")
        .enable_requests()
        .handler(Quiet)
        .instance_heartbeat(Duration::from_secs(1))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sending = db
        .builder("RegistrySender", "sender-1")
        .route::<Numbered>("Registry")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let me = row(&db, "registry-1", Some(this_pid))
        .await
        .expect("the receiving bus registered");
    assert_eq!(me.state, InstanceState::Live, "{me:?}");
    assert_eq!(me.application, "Registry");
    assert_eq!(me.host, nimbus::host_name());
    assert_eq!(me.heartbeat, Duration::from_secs(1));
    assert!(
        me.queues.iter().any(|q| q == "Registry") && me.queues.len() == 2,
        "its input and instance queues: {me:?}"
    );
    assert_eq!(me.handlers, vec!["Conformance.Numbered".to_string()]);
    let sender = row(&db, "sender-1", Some(this_pid))
        .await
        .expect("a send-only bus registers too");
    assert_eq!(sender.state, InstanceState::Live);
    assert!(sender.queues.is_empty(), "{sender:?}");
    // The heartbeat moves LastSeenAt on.
    let first_seen = me.last_seen_at;
    wait_for("the heartbeat refreshes the row", async || {
        row(&db, "registry-1", Some(this_pid))
            .await
            .map(|r| r.last_seen_at)
            > Some(first_seen)
    })
    .await;

    // A second process with the live name is refused, and the error names this process.
    let (mut second, said) = Holder::start(&db, "Registry", "registry-1", false).await;
    assert!(said.starts_with("refused: "), "{said}");
    assert!(
        said.contains(&format!(
            "process {this_pid} on host {:?}",
            nimbus::host_name()
        )) && said.contains("Fix:")
            && said.contains("share_instance_name(true)"),
        "{said}"
    );
    second.kill();

    // Stopped, the name is free at once.
    receiving.stop().await.unwrap();
    let stopped = row(&db, "registry-1", Some(this_pid)).await.unwrap();
    assert_eq!(stopped.state, InstanceState::Stopped);
    assert!(stopped.stopped_at.is_some());
    let (mut second, said) = Holder::start(&db, "Registry", "registry-1", false).await;
    assert_eq!(said, "started");
    let theirs = row(&db, "registry-1", Some(second.pid())).await.unwrap();
    assert_eq!(theirs.state, InstanceState::Live);
    assert_eq!(second.stop().await, "stopped");

    // Two processes that both share a name both run.
    let (_a, said_a) = Holder::start(&db, "Registry", "shared-1", true).await;
    let (_b, said_b) = Holder::start(&db, "Registry", "shared-1", true).await;
    assert_eq!((said_a.as_str(), said_b.as_str()), ("started", "started"));
    let live = instances(&db)
        .await
        .into_iter()
        .filter(|i| i.instance == "shared-1" && i.state == InstanceState::Live)
        .count();
    assert_eq!(live, 2);

    // SIGKILLed, an instance shows as not responding after three missed heartbeats, and a new
    // process may take its name at once (its process is gone from this host).
    let (mut doomed, said) = Holder::start(&db, "Registry", "doomed-1", false).await;
    assert_eq!(said, "started");
    let doomed_pid = doomed.pid();
    doomed.kill();
    let killed_at = Instant::now();
    wait_for("the killed instance shows as not responding", async || {
        row(&db, "doomed-1", Some(doomed_pid))
            .await
            .is_some_and(|r| r.state == InstanceState::NotResponding)
    })
    .await;
    println!(
        "a SIGKILLed instance (heartbeat 1 s) showed as not responding {:.1} s after the kill",
        killed_at.elapsed().as_secs_f64()
    );
    let (mut successor, said) = Holder::start(&db, "Registry", "doomed-1", false).await;
    assert_eq!(said, "started", "the killed process's name is free");
    assert_eq!(successor.stop().await, "stopped");
    sending.stop().await.unwrap();
}

#[actix_rt::test]
async fn the_registry_knows_every_instance_on_sqlite() {
    registry(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
    registry(Setup::new(Kind::Sqlite, StorageLayout::SharedTable)).await;
}

#[actix_rt::test]
async fn the_registry_knows_every_instance_on_postgres() {
    registry(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    registry(Setup::new(Kind::Postgres, StorageLayout::SharedTable)).await;
    registry(Setup::new(
        Kind::Postgres,
        StorageLayout::NServiceBusPostgreSql,
    ))
    .await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test instances -- --include-ignored"]
async fn the_registry_knows_every_instance_on_sql_server() {
    registry(Setup::new(Kind::SqlServer, StorageLayout::TablePerQueue)).await;
    registry(Setup::new(Kind::SqlServer, StorageLayout::SharedTable)).await;
}
