//! The receive loop: handlers on several threads, one concurrency limit for the whole endpoint,
//! no stall behind a slow handler, and wake-ups instead of polling. These are behaviours, not
//! timings: each test waits with a generous deadline for something that, without the feature,
//! would not happen at all before the deadline (or records what ran at once).
//!
//! Parallel handlers need row locks: on SQLite a receive holds the file's one write lock, so
//! handlers there run one at a time and only the wake-up test applies.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{unique, wait_for, Kind, Setup, TestDatabase};

async fn database(kind: Kind) -> TestDatabase {
    TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await
}

/// Blocks its thread (as CPU-bound work does) and records which threads ran handlers and how
/// many ran at once.
#[derive(Clone, Default)]
struct Blocking {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
    threads: Arc<Mutex<HashSet<std::thread::ThreadId>>>,
}

impl Handler<Numbered> for Blocking {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        std::thread::sleep(Duration::from_millis(300)); // blocks the thread, not just the task
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[actix_rt::test]
async fn blocking_handlers_run_side_by_side_on_several_threads() {
    let db = database(Kind::Postgres).await;
    let queue = unique("Blocking");
    let handler = Blocking::default();
    let bus = db
        .builder(&queue, "blocking-1")
        .concurrency(4)
        .handler_threads(2)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..8 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    wait_for("all 8 are handled", Duration::from_secs(60), || {
        handler.done.load(Ordering::SeqCst) == 8
    })
    .await;
    bus.stop().await.unwrap();
    let threads = handler.threads.lock().unwrap().len();
    let peak = handler.peak.load(Ordering::SeqCst);
    assert_eq!(threads, 2, "handlers ran on both worker threads");
    assert!(
        peak >= 2,
        "two thread-blocking handlers ran at the same moment (peak {peak})"
    );
}

/// Counts handlers running at once, across every queue of the endpoint; each waits a moment.
#[derive(Clone, Default)]
struct Gauge {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

impl Handler<Numbered> for Gauge {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[actix_rt::test]
async fn the_concurrency_limit_spans_every_queue_of_the_endpoint() {
    let db = database(Kind::Postgres).await;
    let queue = unique("Limited");
    let gauge = Gauge::default();
    // The input queue and the instance queue (made and received from with requests enabled;
    // ordinary handlers handle what is sent to it): two queues, one limit.
    let bus = db
        .builder(&queue, "limited-1")
        .enable_requests()
        .concurrency(2)
        .handler_threads(2)
        .handler(gauge.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let instance_queue = format!("{queue}.limited-1");
    let sender = db
        .builder(&unique("Sender"), "s-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..20 {
        sender.send_to(&queue, Numbered { n }).await.unwrap();
        sender
            .send_to(&instance_queue, Numbered { n: 100 + n })
            .await
            .unwrap();
    }
    wait_for("both queues drain", Duration::from_secs(60), || {
        gauge.done.load(Ordering::SeqCst) == 40
    })
    .await;
    sender.stop().await.unwrap();
    bus.stop().await.unwrap();
    let peak = gauge.peak.load(Ordering::SeqCst);
    assert!(
        peak <= 2,
        "never more than the endpoint's 2 at once, saw {peak}"
    );
}

/// Holds its message until the test opens the gate; handles everything else at once.
#[derive(Clone, Default)]
struct SlowFirst {
    gate: Arc<tokio::sync::Notify>,
    started_slow: Arc<AtomicUsize>,
    quick: Arc<AtomicUsize>,
}

impl Handler<Numbered> for SlowFirst {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 0 {
            self.started_slow.fetch_add(1, Ordering::SeqCst);
            self.gate.notified().await;
        } else {
            self.quick.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[actix_rt::test]
async fn a_slow_handler_does_not_hold_back_messages_that_arrive_after_it() {
    let db = database(Kind::Postgres).await;
    let queue = unique("Slow");
    let handler = SlowFirst::default();
    let bus = db
        .builder(&queue, "slow-1")
        .concurrency(4)
        .handler_timeout(Duration::from_secs(120))
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 0 }).await.unwrap();
    wait_for("the slow handler starts", Duration::from_secs(30), || {
        handler.started_slow.load(Ordering::SeqCst) == 1
    })
    .await;
    for n in 1..=5 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    // Before, the next peek waited for every receive of the round: these waited for the gate.
    wait_for(
        "the five later messages are handled while the slow one still runs",
        Duration::from_secs(30),
        || handler.quick.load(Ordering::SeqCst) == 5,
    )
    .await;
    assert_eq!(handler.started_slow.load(Ordering::SeqCst), 1);
    handler.gate.notify_waiters();
    bus.stop().await.unwrap();
}

/// Records when it ran.
#[derive(Clone, Default)]
struct Stamp(Arc<Mutex<Vec<Instant>>>);

impl Handler<Numbered> for Stamp {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.lock().unwrap().push(Instant::now());
        Ok(())
    }
}

/// With a 10 s peek delay an idle endpoint would find a message after up to 10 s; a send from
/// the same process wakes its receivers instead.
async fn a_send_wakes_an_idle_endpoint(kind: Kind) {
    let db = database(kind).await;
    let queue = unique("Idle");
    let stamps = Stamp::default();
    let bus = db
        .builder(&queue, "idle-1")
        .peek_delay(Duration::from_secs(10))
        .handler(stamps.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Let the first peek find the queue empty and the 10 s timer start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sender = db
        .builder(&unique("Sender"), "s-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..3 {
        let sent = Instant::now();
        sender.send_to(&queue, Numbered { n }).await.unwrap();
        let count = usize::try_from(n).unwrap() + 1;
        wait_for(
            "the send wakes the receiver before its 10 s peek delay",
            Duration::from_secs(5),
            || stamps.0.lock().unwrap().len() == count,
        )
        .await;
        let latency = stamps.0.lock().unwrap()[count - 1] - sent;
        println!("send -> handled: {latency:?}");
    }
    sender.stop().await.unwrap();
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn a_send_in_the_same_process_wakes_an_idle_endpoint_on_sqlite() {
    a_send_wakes_an_idle_endpoint(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn a_send_in_the_same_process_wakes_an_idle_endpoint_on_postgres() {
    a_send_wakes_an_idle_endpoint(Kind::Postgres).await;
}

/// Records when it ran, by the wall clock (to compare with another process's).
#[derive(Clone, Default)]
struct WallStamp(Arc<Mutex<Vec<u128>>>);

impl Handler<Numbered> for WallStamp {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros();
        self.0.lock().unwrap().push(now);
        Ok(())
    }
}

/// Another process's send wakes an idle endpoint (PostgreSQL: LISTEN/NOTIFY; SQLite: the
/// file's `data_version`, watched; SQL Server: idle receivers peek every `idle_poll`): with a
/// 10 s peek delay, all five messages (sent 200 ms apart) are handled within a few seconds.
async fn a_send_from_another_process_wakes_an_idle_endpoint(kind: Kind) {
    let db = database(kind).await;
    let queue = unique("Remote");
    let stamps = WallStamp::default();
    let bus = db
        .builder(&queue, "remote-1")
        .peek_delay(Duration::from_secs(10))
        .handler(stamps.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let output = nimbus_conformance::send_from_another_process(
        env!("CARGO_BIN_EXE_sender"),
        &db.url(),
        db.schema(),
        &queue,
        5,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while stamps.0.lock().unwrap().len() < 5 {
        assert!(
            Instant::now() < deadline,
            "the other process's sends wake the receiver before its 10 s peek delay: {} of 5 \
             handled; sender said {}",
            stamps.0.lock().unwrap().len(),
            String::from_utf8_lossy(&output.stdout)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bus.stop().await.unwrap();
    let sent: Vec<u128> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let handled = stamps.0.lock().unwrap().clone();
    for (s, h) in sent.iter().zip(&handled) {
        println!(
            "{kind:?}: send -> handled across processes: {} us",
            h.saturating_sub(*s)
        );
    }
}

#[actix_rt::test]
async fn a_send_from_another_process_wakes_an_idle_endpoint_on_postgres() {
    a_send_from_another_process_wakes_an_idle_endpoint(Kind::Postgres).await;
}

#[actix_rt::test]
async fn a_send_from_another_process_wakes_an_idle_endpoint_on_sqlite() {
    a_send_from_another_process_wakes_an_idle_endpoint(Kind::Sqlite).await;
}

#[actix_rt::test]
#[ignore = "needs a SQL Server: set NIMBUS_SQLSERVER and run with --include-ignored"]
async fn a_send_from_another_process_wakes_an_idle_endpoint_on_sql_server() {
    a_send_from_another_process_wakes_an_idle_endpoint(Kind::SqlServer).await;
}

/// Sleeps (without blocking its thread) and counts.
#[derive(Clone, Default)]
struct Naps(Arc<AtomicUsize>);

impl Handler<Numbered> for Naps {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A stream of sends from the same process wakes the queue once per send. While every receiver
/// is busy, or the last estimate still has receives to hand out, a peek would say nothing the
/// supervisor can act on: it looks again when a receive ends instead, so the peeks stay a
/// handful, not one per message (before: about one per send, each a query on the server).
#[actix_rt::test]
async fn sends_from_this_process_do_not_make_a_busy_endpoint_peek_once_per_message() {
    let db = database(Kind::Postgres).await;
    let queue = unique("Busy");
    let handled = Naps::default();
    let bus = db
        .builder(&queue, "busy-1")
        .concurrency(2)
        .peek_delay(Duration::from_secs(10))
        .handler(handled.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let before = bus.metrics().peeks;
    const MESSAGES: usize = 100;
    for n in 0..MESSAGES as u32 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    wait_for("every message is handled", Duration::from_secs(60), || {
        handled.0.load(Ordering::SeqCst) == MESSAGES
    })
    .await;
    let peeks = bus.metrics().peeks - before;
    bus.stop().await.unwrap();
    eprintln!("{peeks} peeks for {MESSAGES} messages sent one by one");
    assert!(
        peeks <= 20,
        "{peeks} peeks for {MESSAGES} messages: the busy endpoint peeked on every wake-up"
    );
}

/// Handles `Numbered` messages, each sending the next (up to `length`) in its receive's
/// transaction, and counts them.
#[derive(Clone)]
struct Chain {
    queue: String,
    length: u32,
    handled: Arc<AtomicUsize>,
}

impl Handler<Numbered> for Chain {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n + 1 < self.length {
            ctx.send_to(&self.queue, Numbered { n: m.n + 1 })?;
        }
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Messages that arrive one by one, each committed before the last receive ends, are received
/// one after the other without a peek between them: the peek would only say "receive", and
/// costs a round trip per message. Before, every receive that ended peeked (one peek per
/// message); now a chain of 40 takes a handful.
async fn a_steady_stream_is_received_without_a_peek_per_message(kind: Kind) {
    const LENGTH: u32 = 40;
    let db = database(kind).await;
    let queue = unique("Chain");
    let chain = Chain {
        queue: queue.clone(),
        length: LENGTH,
        handled: Arc::default(),
    };
    let bus = db
        .builder(&queue, "chain-1")
        .concurrency(1)
        // Long enough that no peek is due to the clock while the chain runs.
        .peek_delay(Duration::from_secs(120))
        .handler(chain.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let before = bus.metrics();
    bus.send_to(&queue, Numbered { n: 0 }).await.unwrap();
    wait_for(
        "the whole chain is handled",
        Duration::from_secs(120),
        || chain.handled.load(Ordering::SeqCst) == LENGTH as usize,
    )
    .await;
    let after = bus.metrics();
    bus.stop().await.unwrap();
    let peeks = after.peeks - before.peeks;
    let empty = after.empty_receives - before.empty_receives;
    println!("{kind:?}: {peeks} peeks and {empty} empty receives for a chain of {LENGTH}");
    assert!(
        peeks <= 8,
        "{peeks} peeks for {LENGTH} messages arriving one by one: each receive peeked first"
    );
    assert!(
        empty <= 8,
        "{empty} empty receives for {LENGTH} messages: receiving instead of peeking must not \
         poll an empty queue"
    );
}

#[actix_rt::test]
async fn a_steady_stream_is_received_without_a_peek_per_message_on_postgres() {
    a_steady_stream_is_received_without_a_peek_per_message(Kind::Postgres).await;
}

#[actix_rt::test]
async fn a_steady_stream_is_received_without_a_peek_per_message_on_sqlite() {
    a_steady_stream_is_received_without_a_peek_per_message(Kind::Sqlite).await;
}

#[actix_rt::test]
#[ignore = "needs a SQL Server: set NIMBUS_SQLSERVER and run with --include-ignored"]
async fn a_steady_stream_is_received_without_a_peek_per_message_on_sql_server() {
    a_steady_stream_is_received_without_a_peek_per_message(Kind::SqlServer).await;
}
