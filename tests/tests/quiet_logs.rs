//! What an endpoint logs: no NOTICE lines from the PostgreSQL driver when auto-create finds
//! tables in place, one WARN per failed attempt (a panic included), the message id once per
//! line, "published to no subscriber" once per type, and never a password, at any level. Every
//! log line of this test binary (the `log` records of the drivers included) is captured at
//! TRACE into one buffer; each test reads the lines that name its own queue.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use nimbus::{Event, Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

/// Every line logged in this process.
fn lines() -> &'static Mutex<Vec<u8>> {
    static LINES: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    LINES.get_or_init(|| {
        struct Writer;
        impl Write for Writer {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                lines()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        // `init` also routes the `log` crate's records (tokio-postgres's NOTICE lines) here.
        tracing_subscriber::fmt()
            .with_env_filter("trace")
            .with_ansi(false)
            .with_writer(|| Writer)
            .init();
        Mutex::new(Vec::new())
    })
}

fn captured() -> String {
    String::from_utf8_lossy(&lines().lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

struct Quiet;

impl Handler<Numbered> for Quiet {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[actix_rt::test]
async fn auto_create_of_what_exists_prints_no_notice_on_postgres() {
    lines();
    let db = TestDatabase::new(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    let first = db
        .builder(&unique("First"), "first-1")
        .handler(Quiet)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // A second endpoint with a queue of its own finds it missing, and so runs auto-create's
    // statements on tables the first one made.
    let second = db
        .builder(&unique("Second"), "second-1")
        .handler(Quiet)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    first.stop().await.unwrap();
    second.stop().await.unwrap();
    let log = captured();
    let notices: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("already exists, skipping"))
        .collect();
    assert!(notices.is_empty(), "{notices:#?}");
}

/// Panics on its first attempt at each message.
#[derive(Clone, Default)]
struct PanicsOnce(Arc<AtomicUsize>);

impl Handler<Numbered> for PanicsOnce {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the first attempt panics");
        }
        Ok(())
    }
}

#[actix_rt::test]
async fn a_panicking_attempt_is_one_warning_with_the_message_id_once() {
    lines();
    let db = TestDatabase::new(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
    let queue = unique("Panicky");
    let handler = PanicsOnce::default();
    let bus = db
        .builder(&queue, "panicky-1")
        .route::<Numbered>(queue.clone())
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(Numbered { n: 1 }).await.unwrap();
    wait_for("the second attempt succeeds", async || {
        bus.metrics().handled == 1
    })
    .await;
    bus.stop().await.unwrap();
    let log = captured();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| (l.contains(" WARN ") || l.contains(" ERROR ")) && l.contains(&queue))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("the first attempt panics"),
        "{}",
        warnings[0]
    );
    assert_eq!(
        warnings[0].matches("messaging.message.id").count(),
        1,
        "{}",
        warnings[0]
    );
}

#[derive(serde::Serialize, serde::Deserialize, Event)]
#[nimbus(type_name = "Quiet.NobodyListens")]
struct NobodyListens;

#[actix_rt::test]
async fn an_event_nobody_subscribes_to_is_said_once_at_info() {
    lines();
    let db = TestDatabase::new(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
    let bus = db
        .builder(&unique("Publisher"), "publisher-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.publish(NobodyListens).await.unwrap();
    bus.publish(NobodyListens).await.unwrap();
    bus.stop().await.unwrap();
    let log = captured();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains(" INFO ")
                && l.contains("Quiet.NobodyListens")
                && l.contains("nothing subscribes")
        })
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
}

#[actix_rt::test]
async fn no_log_line_at_any_level_shows_the_password_on_postgres() {
    const SECRET: &str = "S3cret-in-logs";
    lines();
    let db = TestDatabase::new(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    let url = db
        .url()
        .replacen("postgres@", &format!("postgres:{SECRET}@"), 1);
    assert!(url.contains(SECRET), "{url}");
    let queue = unique("Secretive");
    let handler = PanicsOnce::default();
    let mut builder = nimbus::Bus::builder()
        .names(&queue, "secretive-1")
        .database_url(&url)
        .route::<Numbered>(queue.clone())
        .handler(handler.clone());
    if let Some(schema) = db.schema() {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    bus.send(Numbered { n: 1 }).await.unwrap();
    wait_for("the message is handled", async || {
        bus.metrics().handled == 1
    })
    .await;
    let health = bus.health().await;
    assert!(!format!("{health:?}").contains(SECRET));
    bus.stop().await.unwrap();
    // A server that does not answer: the error, its Debug and its log lines.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = nimbus::Bus::builder()
        .names("Refused", "refused-1")
        .database_url(format!("postgres://app:{SECRET}@127.0.0.1:{port}/db"))
        .build()
        .unwrap();
    assert!(!format!("{refused:?}").contains(SECRET));
    let error = refused.start().await.expect_err("nothing listens");
    assert!(!format!("{error} {error:?} {error:#?}").contains(SECRET));
    let log = captured();
    assert!(log.contains(&queue), "the bus's own lines were captured");
    let leaks: Vec<&str> = log.lines().filter(|l| l.contains(SECRET)).collect();
    assert!(leaks.is_empty(), "{leaks:#?}");
}

/// A saga instance per four consecutive numbers, which any of them may start: concurrent
/// receives race to start each.
#[derive(Clone)]
struct Tally;

impl nimbus::saga::Saga for Tally {
    type State = u32;
    const NAME: &'static str = "QuietLogs.Tally";
}

impl nimbus::saga::SagaHandler<Numbered> for Tally {
    const STARTS: bool = true;
    fn correlation(m: &Numbered) -> String {
        (m.n / 4).to_string()
    }
    async fn handle(
        &self,
        _m: Numbered,
        saga: &mut nimbus::saga::SagaInstance<u32>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state += 1;
        Ok(())
    }
}

/// Saga conflicts are an expected race: the message is received again at once, counted, logged
/// at DEBUG — never a "receive failed; backing off" warning or a back-off of the queue.
#[actix_rt::test]
async fn saga_conflicts_are_retried_at_once_without_a_warning_on_postgres() {
    lines();
    let db = TestDatabase::new(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    let queue = unique("Tallied");
    let mut buses = Vec::new();
    for i in 0..2 {
        let bus = db
            .builder(&queue, &format!("tallied-{i}"))
            .concurrency(8)
            .route::<Numbered>(&queue)
            .saga_handler::<Numbered, _>(Tally)
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        buses.push(bus);
    }
    futures::future::join_all((0..120).map(|n| buses[0].send(Numbered { n })))
        .await
        .into_iter()
        .for_each(|sent| sent.unwrap());
    wait_for("all 120 messages are handled", async || {
        buses.iter().map(|b| b.metrics().handled).sum::<u64>() == 120
    })
    .await;
    let conflicts: u64 = buses.iter().map(|b| b.metrics().conflicts).sum();
    let failed: u64 = buses.iter().map(|b| b.metrics().failed).sum();
    for bus in &buses {
        bus.stop().await.unwrap();
    }
    assert_eq!(failed, 0, "a conflict is not a failed attempt");
    let log = captured();
    let raced = log
        .lines()
        .filter(|l| l.contains("QuietLogs.Tally") || l.contains(&queue))
        .filter(|l| l.contains("conflict") || l.contains("gave way") || l.contains("backing off"))
        .count();
    assert!(
        conflicts > 0,
        "16 receivers racing to start 30 saga instances gave way to each other ({raced} lines)"
    );
    let loud: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&queue) || l.contains("QuietLogs.Tally"))
        .filter(|l| l.contains(" WARN ") || l.contains(" INFO ") || l.contains(" ERROR "))
        .filter(|l| {
            l.contains("conflict") || l.contains("backing off") || l.contains("rolled back")
        })
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
}
