//! A PostgreSQL failover during traffic: workers connected through a multi-host URL
//! (`host=a,b`, `target_session_attrs=read-write`) keep handling while the primary is switched
//! over to its hot standby (pg_auto_failover, `scripts/failover-cluster.sh`) and while workers
//! are killed; at the end every message has exactly one business row and one forwarded copy.

use std::time::{Duration, Instant};

use crate::db::{Kind, Setup, TestDatabase};
use crate::suite::{business_rows, fill_worker_queue, start_worker, Worker};

/// Messages in the run.
pub const TOTAL: u32 = 10_000;

/// How long the run may stand still (no message handled) before the test fails.
const STALL: Duration = Duration::from_secs(180);

/// The cluster of `scripts/failover-cluster.sh`, stopped and deleted when dropped (also when the
/// test panics); or the one `NIMBUS_FAILOVER_URL` names, left as it is.
pub struct Cluster {
    pub url: String,
    script: std::path::PathBuf,
    owned: bool,
}

impl Cluster {
    /// Starts the cluster (about 20 s), or takes `NIMBUS_FAILOVER_URL`'s.
    pub fn start() -> Cluster {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/failover-cluster.sh");
        if let Ok(url) = std::env::var("NIMBUS_FAILOVER_URL") {
            return Cluster {
                url,
                script,
                owned: false,
            };
        }
        // A cluster a killed run left behind is in the way: start from nothing.
        let _ = std::process::Command::new(&script).arg("stop").status();
        println!("starting a primary and a hot standby under pg_auto_failover");
        let url = run_script(&script, "start");
        println!("the cluster answers at {url}");
        Cluster {
            url,
            script,
            owned: true,
        }
    }

    /// Switches the primary over to the standby; returns the new primary's port.
    pub fn failover(&self) -> String {
        run_script(&self.script, "failover")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            let _ = std::process::Command::new(&self.script)
                .arg("stop")
                .status();
        }
    }
}

fn run_script(script: &std::path::Path, command: &str) -> String {
    let output = std::process::Command::new(script)
        .arg(command)
        .output()
        .unwrap_or_else(|e| panic!("running {} {command}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} {command} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The depth of `queue`, asking again while the cluster is switching over (its connections
/// fail then): gives up only after [`STALL`].
async fn count(db: &TestDatabase, queue: &str) -> i64 {
    let deadline = Instant::now() + STALL;
    loop {
        match db.admin().queue_depth(queue).await {
            Ok(depth) => return depth,
            Err(e) if Instant::now() < deadline => {
                println!("counting {queue} failed, asking again: {e}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => panic!("counting {queue}: {e}"),
        }
    }
}

/// Waits until `Done` holds at least `target` messages, failing after [`STALL`] without
/// progress.
async fn wait_done(db: &TestDatabase, target: i64) -> i64 {
    let (mut last, mut since) = (-1, Instant::now());
    loop {
        let done = count(db, "Done").await;
        if done >= target {
            return done;
        }
        if done != last {
            (last, since) = (done, Instant::now());
        } else if since.elapsed() > STALL {
            panic!("no message handled for {STALL:?}, stuck at {done} of {target}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The figures of a run, printed for the guide.
#[derive(Debug)]
pub struct Recovery {
    /// From asking for the failover to the standby being the primary.
    pub switch_over: Duration,
    /// From asking for the failover to the first message handled on the new primary.
    pub first_message: Duration,
}

/// The run: [`TOTAL`] messages queued, workers handling them with a business row each in the
/// receive's transaction; a worker killed (SIGKILL) before the failover and one after; the
/// failover forced while a worker handles; a last worker drains.
pub fn a_failover_during_traffic_loses_nothing(cluster: &Cluster, worker: &str) -> Recovery {
    // The test database helpers connect through NIMBUS_POSTGRES: the cluster's multi-host URL.
    std::env::set_var("NIMBUS_POSTGRES", &cluster.url);
    let system = actix_rt::System::new();
    system.block_on(async {
        let setup = Setup {
            kind: Kind::Postgres,
            layout: nimbus::StorageLayout::TablePerQueue,
        };
        let db = TestDatabase::new(setup).await;
        let table = db.table("Orders");
        db.execute(&format!(
            "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
        ))
        .await;
        let sender = fill_worker_queue(&db, TOTAL).await;
        sender.stop().await.unwrap();
        let total = i64::from(TOTAL);
        let spawn = || start_worker(&db, worker, &[("NIMBUS_BUSINESS_TABLE", table.as_str())]);

        // A worker killed in the middle of its work, before the failover.
        let mut first: Worker = spawn();
        wait_done(&db, total / 10).await;
        first.kill();
        let mut second = spawn();
        let before = wait_done(&db, total / 4).await;
        println!("{before} of {total} handled: forcing a failover");
        let asked = Instant::now();
        let port = cluster.failover();
        let switch_over = asked.elapsed();
        let at_switch = count(&db, "Done").await;
        println!("the standby on port {port} is the primary after {switch_over:?}");
        wait_done(&db, at_switch + 1).await;
        let first_message = asked.elapsed();
        println!("the first message handled on the new primary {first_message:?} after asking");
        // A worker killed after the failover, then one that drains the queue.
        wait_done(&db, (at_switch + total) / 2).await;
        second.kill();
        let mut last = spawn();
        wait_done(&db, total).await;
        let deadline = Instant::now() + STALL;
        while count(&db, "Worker").await > 0 {
            assert!(Instant::now() < deadline, "Worker did not drain");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        last.kill();

        let (rows, distinct) = business_rows(&db, &table).await;
        assert_eq!(
            distinct, total,
            "every message has its business row: none lost"
        );
        assert_eq!(
            rows, total,
            "no message has two business rows: none committed twice"
        );
        assert_eq!(
            count(&db, "Done").await,
            total,
            "each forwarded exactly once"
        );
        assert!(db.dead_letters().await.is_empty(), "no dead letters");
        Recovery {
            switch_over,
            first_message,
        }
    })
}
