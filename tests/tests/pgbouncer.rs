//! The PostgreSQL conformance suite through PgBouncer in transaction pooling mode
//! (`pool_mode = transaction`), with the URL saying so (`?pooler=transaction`): statements go
//! unnamed, and wake-ups LISTEN on the server itself (`listen_port`).
//!
//! The harness starts a PgBouncer of its own on a free port in front of the server of
//! `NIMBUS_POSTGRES` (default 127.0.0.1:5432), and stops it at the end. Without a `pgbouncer`
//! program (Debian: `apt-get install pgbouncer`) its tests are reported as ignored, never as
//! passed — unless `NIMBUS_REQUIRE_PGBOUNCER` is set (as `.ci/run` does), which fails them.

use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Trial};
use nimbus::StorageLayout;
use nimbus_conformance::db::{postgres_url, route_postgres_through};
use nimbus_conformance::{conformance_suite, Kind, Runner, Setup};

const TABLE_PER_QUEUE: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::TablePerQueue,
};
const SHARED_TABLE: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::SharedTable,
};

/// A PgBouncer of the test's own, stopped when dropped.
struct PgBouncer {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `pgbouncer` program: on the PATH, or where Debian puts it.
fn pgbouncer_program() -> Option<std::path::PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("pgbouncer"))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// Starts PgBouncer in front of the server of `NIMBUS_POSTGRES`, in transaction mode, and waits
/// until it accepts connections.
fn start_pgbouncer(program: &std::path::Path) -> PgBouncer {
    let server: tokio_postgres::Config = postgres_url().parse().expect("NIMBUS_POSTGRES");
    let host = match server.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let server_port = server.get_ports().first().copied().unwrap_or(5432);
    let user = server.get_user().unwrap_or("postgres").to_string();
    let password = server
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .unwrap_or_default();
    let port = free_port();
    let dir = std::env::temp_dir().join(format!(
        "nimbus-pgbouncer-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    std::fs::create_dir_all(&dir).expect("a directory for PgBouncer");
    let dir = TempDir(dir);
    let path = |name: &str| dir.0.join(name).display().to_string();
    std::fs::write(
        path("users.txt"),
        format!("\"{user}\" \"{}\"\n", password.replace('"', "\"\"")),
    )
    .expect("PgBouncer's user list");
    std::fs::write(
        path("pgbouncer.ini"),
        format!(
            "[databases]\n* = host={host} port={server_port}\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {users}\n\
             pool_mode = transaction\ndefault_pool_size = 40\nmax_client_conn = 2000\n\
             logfile = {log}\n",
            users = path("users.txt"),
            log = path("pgbouncer.log"),
        ),
    )
    .expect("PgBouncer's configuration");
    // PgBouncer refuses to run as root: it then runs as the server's own account, which must
    // read its files.
    let mut command = Command::new(program);
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if root {
        for entry in [
            dir.0.clone(),
            dir.0.join("users.txt"),
            dir.0.join("pgbouncer.ini"),
        ] {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(entry, std::fs::Permissions::from_mode(0o777));
        }
        command.args(["-u", "postgres"]);
    }
    let child = command
        .arg(path("pgbouncer.ini"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("PgBouncer starts");
    let log = path("pgbouncer.log");
    let bouncer = PgBouncer {
        child,
        port,
        _dir: dir,
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "PgBouncer did not listen on 127.0.0.1:{port} within 30 s; its log: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    bouncer
}

/// Counts the messages it handles.
struct Count(std::sync::Arc<std::sync::atomic::AtomicUsize>);

#[nimbus::handler]
impl nimbus::Handler<nimbus_conformance::suite::Numbered> for Count {
    async fn handle(
        &self,
        _m: nimbus_conformance::suite::Numbered,
        _ctx: &mut nimbus::HandlerContext,
    ) -> Result<(), nimbus::HandlerError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// The log lines about LISTEN, kept for the test that checks them.
static LISTEN_LINES: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

fn said_lines() -> String {
    String::from_utf8_lossy(&LISTEN_LINES.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

/// Logs as the suite's `capture_logs` does (to standard output, `nimbus=info` unless
/// `RUST_LOG` says otherwise), keeping the lines about LISTEN too.
fn log_keeping_listen_lines() {
    struct Tee;
    impl std::io::Write for Tee {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if String::from_utf8_lossy(buf).contains("LISTEN") {
                LISTEN_LINES
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(buf);
            }
            std::io::stdout().write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            std::io::stdout().flush()
        }
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("nimbus=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_thread_names(true)
        .with_writer(|| Tee)
        .try_init();
}

/// The port of the suite's PostgreSQL server.
fn server_port() -> u16 {
    let server: tokio_postgres::Config = postgres_url().parse().expect("NIMBUS_POSTGRES");
    server.get_ports().first().copied().unwrap_or(5432)
}

/// A URL through `bouncer` to the suite's server, with `params` in its query.
fn url_through(bouncer_port: u16, params: &str) -> String {
    let server: tokio_postgres::Config = postgres_url().parse().expect("NIMBUS_POSTGRES");
    let user = server.get_user().unwrap_or("postgres");
    let password = server
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    let db = server.get_dbname().unwrap_or("postgres");
    format!("postgres://{user}{password}@127.0.0.1:{bouncer_port}/{db}?{params}")
}

/// Through a transaction pooler, a URL without `pooler=transaction` fails once its statement
/// is needed on another server connection, with an error that says what to add; the same calls
/// with it pass. PgBouncer hands a client the server connection used last (LIFO): another
/// client's open transaction holding that one makes the second call land on a new one.
async fn a_url_without_the_pooler_setting_says_what_to_add(bouncer_port: u16) {
    async fn twice_with_the_last_connection_taken(
        url: &str,
        bouncer_port: u16,
    ) -> nimbus::Result<i64> {
        let db = nimbus::admin::Database::connect(url).await?;
        db.query_scalar("SELECT length($1)::bigint", &["first"])
            .await?;
        let (holder, connection) = tokio_postgres::connect(
            &url_through(bouncer_port, "application_name=holder"),
            tokio_postgres::NoTls,
        )
        .await
        .expect("a second client through PgBouncer");
        let task = tokio::spawn(connection);
        holder
            .batch_execute("BEGIN; SELECT 1")
            .await
            .expect("BEGIN");
        let second = db
            .query_scalar("SELECT length($1)::bigint", &["second"])
            .await;
        holder.batch_execute("COMMIT").await.expect("COMMIT");
        drop(holder);
        let _ = task.await;
        second
    }
    // The other trials share this PgBouncer, so the second statement lands on the server
    // connection that knows the first one's name now and then: tried until it does not.
    let mut refused = None;
    for _ in 0..5 {
        if let Err(e) =
            twice_with_the_last_connection_taken(&url_through(bouncer_port, ""), bouncer_port).await
        {
            refused = Some(e);
            break;
        }
    }
    let text = refused
        .expect("a named statement missing on the other server connection, in five tries")
        .to_string();
    assert!(
        text.contains("prepared statement") && text.contains("add pooler=transaction to the URL"),
        "{text}"
    );
    let answer = twice_with_the_last_connection_taken(
        &url_through(bouncer_port, "pooler=transaction"),
        bouncer_port,
    )
    .await
    .expect("unnamed statements pass on any server connection");
    assert_eq!(answer, 6);
}

/// Through a transaction pooler, another process's sends reach an idle queue long before its
/// 10 s peek delay: by LISTEN on the server itself (`listen_port`), or with no address to
/// listen on by the idle poll, which the bus says at start.
async fn another_process_reaches_an_idle_queue(bouncer_port: u16, listen: bool) {
    use nimbus_conformance::TestDatabase;
    let db = TestDatabase::new(TABLE_PER_QUEUE).await;
    let url = if listen {
        url_through(
            bouncer_port,
            &format!("pooler=transaction&listen_port={}", server_port()),
        )
    } else {
        url_through(bouncer_port, "pooler=transaction")
    };
    let queue = format!("Idle{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let receiver = db
        .builder(&queue, "idle-1")
        .database_url(url.clone())
        .peek_delay(Duration::from_secs(10))
        .idle_poll(Duration::from_millis(50))
        .handler(Count(counter.clone()))
        .build()
        .expect("a receiver")
        .start()
        .await
        .expect("starts through PgBouncer");
    nimbus_conformance::send_from_another_process(
        env!("CARGO_BIN_EXE_sender"),
        &url,
        db.schema(),
        &queue,
        3,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while counter.load(std::sync::atomic::Ordering::SeqCst) < 3 {
        assert!(
            Instant::now() < deadline,
            "the other process's sends reach the idle queue before its 10 s peek delay \
             (listen: {listen}): {} of 3 handled",
            counter.load(std::sync::atomic::Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    receiver.stop().await.expect("stops");
    if !listen {
        let said = said_lines();
        assert!(
            said.contains("does not LISTEN: idle queues look for other processes' messages")
                && said.contains("add listen_host and listen_port"),
            "the start says that it polls, and what to add: {said}"
        );
    }
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    log_keeping_listen_lines();
    let program = pgbouncer_program();
    let required = std::env::var_os("NIMBUS_REQUIRE_PGBOUNCER").is_some();
    let bouncer = match &program {
        Some(program) => Some(start_pgbouncer(program)),
        None if required => {
            eprintln!(
                "NIMBUS_REQUIRE_PGBOUNCER is set but no pgbouncer program was found \
                 (apt-get install pgbouncer)"
            );
            return ExitCode::FAILURE;
        }
        None => None,
    };
    if let Some(bouncer) = &bouncer {
        // Wake-ups LISTEN on the server itself.
        route_postgres_through(url_through(
            bouncer.port,
            &format!("pooler=transaction&listen_port={}", server_port()),
        ));
    }
    let mut trials: Vec<(&'static str, Runner)> =
        conformance_suite!(@trials TABLE_PER_QUEUE, "table_per_queue");
    trials.extend(conformance_suite!(@trials SHARED_TABLE, "shared_table"));
    if let Some(port) = bouncer.as_ref().map(|b| b.port) {
        trials.push((
            "pooler::a_url_without_the_pooler_setting_says_what_to_add",
            Box::new(move || {
                nimbus_conformance::run_actix(a_url_without_the_pooler_setting_says_what_to_add(
                    port,
                ))
            }),
        ));
        trials.push((
            "pooler::another_process_wakes_an_idle_queue_by_listen_on_the_server",
            Box::new(move || {
                nimbus_conformance::run_actix(another_process_reaches_an_idle_queue(port, true))
            }),
        ));
        trials.push((
            "pooler::without_listen_an_idle_queue_polls_and_says_so",
            Box::new(move || {
                nimbus_conformance::run_actix(another_process_reaches_an_idle_queue(port, false))
            }),
        ));
    }
    let trials = trials
        .into_iter()
        .map(|(name, run)| {
            Trial::test(name, move || {
                run();
                Ok(())
            })
            .with_ignored_flag(bouncer.is_none())
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    if bouncer.is_none() {
        println!(
            "note: no pgbouncer program was found: the PgBouncer tests were ignored \
             (apt-get install pgbouncer)"
        );
    }
    drop(bouncer);
    conclusion.exit_code()
}
