//! A bus in any Rust service: started from a plain tokio runtime with `start_in_background`,
//! used from tokio tasks, stopped; and a process that stops gracefully on SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError};
use nimbus_conformance::suite::Numbered;

#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

impl Handler<Numbered> for Counting {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

async fn from_tokio(url: &str, schema: Option<&str>) {
    let handled = Counting::default();
    let mut builder = nimbus::Bus::builder()
        .names("Background", "background-1")
        .database_url(url)
        .peek_delay(Duration::from_millis(100))
        .route::<Numbered>("Background")
        .handler(handled.clone());
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder
        .build()
        .unwrap()
        .start_in_background()
        .await
        .expect("starts without an actix System on this thread");
    // Sends from several tokio tasks.
    let tasks: Vec<_> = (0..5)
        .map(|n| {
            let bus = bus.bus().clone();
            tokio::spawn(async move { bus.send(Numbered { n }).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while handled.0.load(Ordering::SeqCst) < 5 {
        assert!(Instant::now() < deadline, "the five messages are handled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bus.stop().await.unwrap();
    let refused = bus
        .send(Numbered { n: 9 })
        .await
        .expect_err("a stopped bus refuses to send");
    assert!(
        matches!(refused, nimbus::NimbusError::NotRunning(_)),
        "{refused}"
    );
    assert_eq!(handled.0.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_tokio_application_runs_the_bus_in_the_background_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-background-{}.db", unique()));
    from_tokio(&format!("sqlite://{}", path.display()), None).await;
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn a_tokio_application_runs_the_bus_in_the_background_on_postgres() {
    let url = std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let schema = format!("nimbus background {}", unique());
    from_tokio(&url, Some(&schema)).await;
    let db = nimbus::admin::Database::connect(&url)
        .await
        .expect("PostgreSQL is reachable");
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(&schema)))
        .await
        .expect("drop the test schema");
}

#[test]
fn sigterm_stops_the_bus_gracefully() {
    let path = std::env::temp_dir().join(format!("nimbus-signal-{}.db", unique()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_signal_worker"))
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the worker");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(|l| l.ok());
    assert_eq!(first.as_deref(), Some("started"));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    // The signal is now pending in (or handled by) the worker, before it polls the future
    // that waits for it: it must still stop gracefully.
    let _ = writeln!(stdin, "go"); // fails only if the worker died of the signal: see below
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the worker did not stop within 30 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let _ = std::fs::remove_file(&path);
    assert!(status.success(), "a graceful stop exits 0: {status}");
    assert_eq!(rest, vec!["stopped".to_string()]);
}

/// A System that stops right after the bus started (an application whose `main` returns, a
/// test that fails there) drops actors that never ran; actix polls each once as it drops it,
/// outside any runtime. None of them may panic then ("there is no reactor running"): each
/// panic there used to print a backtrace over the application's own error.
#[test]
fn a_system_stopped_right_after_start_drops_the_bus_without_a_panic() {
    use nimbus_conformance::{Kind, Setup, TestDatabase};
    let test_thread = std::thread::current().id();
    let panics = Arc::new(AtomicUsize::new(0));
    let counted = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == test_thread {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
    let (bus, db) = actix_rt::System::new().block_on(async {
        let db = TestDatabase::new(Setup {
            kind: Kind::Sqlite,
            layout: nimbus::StorageLayout::TablePerQueue,
        })
        .await;
        let bus = db
            .builder("Dropped", "dropped-1")
            .handler(Counting::default())
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        // No await after the start: the System's runtime goes with the block's end, before
        // the bus's actors first ran.
        (bus, db)
    });
    drop(bus);
    drop(db);
    let _ = std::panic::take_hook();
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "dropping the stopped System's actors panicked"
    );
}

/// `start()` needs an actix System; the error says what to do instead from a tokio program.
#[tokio::test]
async fn start_outside_an_actix_system_points_to_start_in_background() {
    let path = std::env::temp_dir().join(format!("nimbus-nosystem-{}.db", uuid::Uuid::new_v4()));
    let error = nimbus::Bus::builder()
        .names("NoSystem", "no-system-1")
        .database_url(format!("sqlite://{}", path.display()))
        .build()
        .unwrap()
        .start()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    assert!(error.contains("no actix System"), "{error}");
    assert!(error.contains("start_in_background"), "{error}");
}
