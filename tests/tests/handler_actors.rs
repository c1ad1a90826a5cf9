//! Handlers as actors: async handlers on the handler threads (the least busy one gets the next
//! message), blocking handlers on a pool of their own, and what a blocking handler's sends,
//! errors, panics and timeouts do to its message. Behaviours, not timings: every wait has a
//! generous deadline and fails the test (never hangs it) when it passes.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nimbus::{BlockingHandler, Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{unique, wait_for, Kind, Setup, TestDatabase};

async fn database(kind: Kind) -> TestDatabase {
    TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await
}

/// A gate a handler can block its thread on, opened by the test; never waits past a minute,
/// so a test that goes wrong fails instead of hanging.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, changed) = &*self.0;
        let guard = open.lock().unwrap();
        let _ = changed
            .wait_timeout_while(guard, Duration::from_secs(60), |open| !*open)
            .unwrap();
    }

    fn open(&self) {
        let (open, changed) = &*self.0;
        *open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        changed.notify_all();
    }
}

/// Opens the gate when dropped, so a failing assertion does not leave a thread held.
struct OpensOnDrop(Gate);

impl Drop for OpensOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// Message 1000 blocks its thread on the gate; every other message is recorded with its thread.
#[derive(Clone, Default)]
struct HoldsOneThread {
    gate: Gate,
    held: Arc<Mutex<Option<std::thread::ThreadId>>>,
    others: Arc<Mutex<Vec<(u32, std::thread::ThreadId)>>>,
}

impl Handler<Numbered> for HoldsOneThread {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 1000 {
            *self.held.lock().unwrap() = Some(std::thread::current().id());
            self.gate.wait(); // blocks the thread, as careless blocking code in a handler does
        } else {
            self.others
                .lock()
                .unwrap()
                .push((m.n, std::thread::current().id()));
        }
        Ok(())
    }
}

#[actix_rt::test]
async fn a_handler_that_holds_its_thread_does_not_hold_back_the_other_threads() {
    holds_one_thread(1).await;
}

/// A batch is handled on one handler thread: one held there holds its batch, not the others.
#[actix_rt::test]
async fn a_handler_that_holds_its_thread_in_a_batch_does_not_hold_back_the_other_threads() {
    holds_one_thread(5).await;
}

async fn holds_one_thread(receive_batch: usize) {
    let db = database(Kind::Postgres).await;
    let queue = unique("Held");
    let handler = HoldsOneThread::default();
    let _opens = OpensOnDrop(handler.gate.clone());
    let bus = db
        .builder(&queue, "held-1")
        .concurrency(4)
        .receive_batch(receive_batch)
        .handler_threads(2)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Warm up: receives open pooled connections; handlers run on both threads.
    for n in 0..20 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    wait_for("the first 20 are handled", Duration::from_secs(30), || {
        handler.others.lock().unwrap().len() == 20
    })
    .await;
    bus.send_to(&queue, Numbered { n: 1000 }).await.unwrap();
    wait_for(
        "a handler holds its thread",
        Duration::from_secs(30),
        || handler.held.lock().unwrap().is_some(),
    )
    .await;
    // The held thread misses its pulses (every 50 ms; held after 250 ms).
    tokio::time::sleep(Duration::from_millis(600)).await;
    for n in 20..30 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    wait_for(
        "every message sent while one thread was held is handled",
        Duration::from_secs(30),
        || handler.others.lock().unwrap().len() == 30,
    )
    .await;
    let held = handler.held.lock().unwrap().expect("recorded above");
    handler.gate.open();
    bus.stop().await.unwrap();
    let others = handler.others.lock().unwrap();
    // Where the warm-up's batches ran is the dispatcher's choice (a loaded machine may give
    // them all to one thread); the held message and the later ones ran on both.
    let mut threads: HashSet<_> = others.iter().map(|(_, t)| *t).collect();
    threads.insert(held);
    assert_eq!(threads.len(), 2, "the handlers ran on both handler threads");
    let late_threads: HashSet<_> = others
        .iter()
        .filter(|(n, _)| *n >= 20)
        .map(|(_, t)| *t)
        .collect();
    assert!(
        !late_threads.contains(&held),
        "messages sent while a thread was held went to the other thread"
    );
}

/// Blocks its (pool) thread for a moment; records how many ran at once and where.
#[derive(Clone, Default)]
struct SleepsOnPool {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
    threads: Arc<Mutex<HashSet<std::thread::ThreadId>>>,
}

impl BlockingHandler<Numbered> for SleepsOnPool {
    fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        std::thread::sleep(Duration::from_millis(400));
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[actix_rt::test]
async fn blocking_handlers_run_side_by_side_on_their_pool_off_the_bus_thread() {
    let db = database(Kind::Postgres).await;
    let queue = unique("Pool");
    let handler = SleepsOnPool::default();
    let bus = db
        .builder(&queue, "pool-1")
        .concurrency(4)
        .handler_threads(1) // async handlers would share the bus's one thread
        .blocking_threads(4)
        .blocking_handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..8 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    // The bus's thread stays free meanwhile: this test's own timer keeps ticking on it.
    let mut ticks = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while handler.done.load(Ordering::SeqCst) < 8 {
        assert!(Instant::now() < deadline, "all 8 are handled within 60 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
        ticks += 1;
    }
    bus.stop().await.unwrap();
    let peak = handler.peak.load(Ordering::SeqCst);
    let threads = handler.threads.lock().unwrap().clone();
    assert!(
        peak >= 3,
        "blocking handlers ran side by side on the pool (peak {peak})"
    );
    assert!(
        !threads.contains(&std::thread::current().id()),
        "no blocking handler ran on the bus's thread"
    );
    assert!(
        ticks >= 20,
        "the bus's thread kept running while handlers blocked ({ticks} ticks)"
    );
}

/// Sends one message per message and then succeeds, fails, panics or overruns by its number.
/// The overrun lasts until the test releases it (after its timeout was reported), not for a
/// fixed time: a loaded machine, or a panic hook symbolizing a backtrace, must not turn the
/// panic into a timeout or the overrun into a success.
#[derive(Clone)]
struct BlockingOutcomes {
    output: String,
    handled: Arc<AtomicUsize>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

impl BlockingHandler<Numbered> for BlockingOutcomes {
    fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send_to(&self.output, Numbered { n: m.n })?;
        self.handled.fetch_add(1, Ordering::SeqCst);
        match m.n {
            1 => Err("declined by the blocking handler".into()),
            2 => panic!("the blocking handler panicked on purpose"),
            3 => {
                let gives_up = Instant::now() + Duration::from_secs(120);
                while !self.released.load(Ordering::SeqCst) && Instant::now() < gives_up {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

async fn blocking_outcomes(kind: Kind) {
    let db = database(kind).await;
    let queue = unique("Outcomes");
    let output = unique("Output");
    let handled = Arc::new(AtomicUsize::new(0));
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bus = db
        .builder(&queue, "outcomes-1")
        .create_queues_on_send(true)
        .immediate_retries(0)
        .delayed_retries(0, Duration::from_secs(1))
        // Long enough for a panic's backtrace under load; message 3 outlasts it.
        .handler_timeout(Duration::from_secs(10))
        .blocking_handler(BlockingOutcomes {
            output: output.clone(),
            handled: handled.clone(),
            released: released.clone(),
        })
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // The output queue exists, so sends to it are accepted.
    bus.send_to(&output, Numbered { n: 99 }).await.unwrap();
    for n in 0..4 {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    let letters = db.dead_letters_within(3, Duration::from_secs(90)).await;
    released.store(true, Ordering::SeqCst);
    wait_for("message 0 is handled", Duration::from_secs(30), || {
        handled.load(Ordering::SeqCst) >= 4
    })
    .await;
    bus.stop().await.unwrap();
    let reasons: Vec<String> = letters
        .iter()
        .map(|l| String::from_utf8_lossy(&l.body).into_owned())
        .collect();
    for expected in [
        "declined by the blocking handler",
        "the blocking handler panicked on purpose",
        "did not finish within",
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(expected)),
            "a dead letter says {expected:?}: {reasons:?}"
        );
    }
    // Only message 0's send was written (besides the test's own message 99): the failed
    // attempts' sends were rolled back with them.
    let written: Vec<Numbered> = db
        .bodies(&output)
        .await
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    let mut numbers: Vec<u32> = written.iter().map(|m| m.n).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, vec![0, 99]);
    assert_eq!(db.count(&queue).await, 0, "no message is left in the queue");
}

#[actix_rt::test]
async fn a_blocking_handlers_sends_errors_panics_and_timeouts_go_with_its_message_on_sqlite() {
    blocking_outcomes(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn a_blocking_handlers_sends_errors_panics_and_timeouts_go_with_its_message_on_postgres() {
    blocking_outcomes(Kind::Postgres).await;
}

/// Asks for the receive's connection, which a blocking handler does not have.
struct WantsTheConnection;

impl BlockingHandler<Numbered> for WantsTheConnection {
    fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async { ctx.postgres().await.map(|_| ()) })?;
        Ok(())
    }
}

#[actix_rt::test]
async fn a_blocking_handler_is_told_to_use_an_async_handler_for_the_receives_connection() {
    let db = database(Kind::Postgres).await;
    let queue = unique("NoConnection");
    let bus = db
        .builder(&queue, "no-connection-1")
        .immediate_retries(0)
        .delayed_retries(0, Duration::from_secs(1))
        .blocking_handler(WantsTheConnection)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    let letters = db.dead_letters_within(1, Duration::from_secs(30)).await;
    bus.stop().await.unwrap();
    let reason = String::from_utf8_lossy(&letters[0].body).into_owned();
    assert!(
        reason.contains("async Handler"),
        "the dead letter says what to do instead: {reason}"
    );
}

/// What the bus logs, captured for one test thread.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Blocks its thread (not just its task) for 1.5 s: past its 300 ms timeout, which cannot fire
/// while the thread is held.
struct HoldsPastItsTimeout;

impl Handler<Numbered> for HoldsPastItsTimeout {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        std::thread::sleep(Duration::from_millis(1500));
        Ok(())
    }
}

#[actix_rt::test]
async fn a_handler_holding_its_thread_past_its_timeout_is_reported() {
    held_past_its_timeout(1).await;
}

/// In a batch, the bus's thread watches the handler thread the batch runs on.
#[actix_rt::test]
async fn a_handler_of_a_batch_holding_its_thread_past_its_timeout_is_reported() {
    held_past_its_timeout(10).await;
}

async fn held_past_its_timeout(receive_batch: usize) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    // The receivers run on this thread (the bus's), where the report is made.
    let _guard = tracing::subscriber::set_default(subscriber);
    let db = database(Kind::Postgres).await;
    let queue = unique("Stalled");
    let bus = db
        .builder(&queue, "stalled-1")
        .receive_batch(receive_batch)
        .handler_threads(2)
        .handler_timeout(Duration::from_millis(300))
        .immediate_retries(0)
        .delayed_retries(0, Duration::from_secs(1))
        .handler(HoldsPastItsTimeout)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    let logged = || String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    wait_for(
        "the stalled handler is reported",
        Duration::from_secs(30),
        || logged().contains("held its thread past the handler timeout"),
    )
    .await;
    // It ran past its timeout: a failed attempt, even though nothing could interrupt it.
    let letters = db.dead_letters_within(1, Duration::from_secs(30)).await;
    bus.stop().await.unwrap();
    let log = logged();
    assert!(
        log.contains("BlockingHandler") && log.contains("Conformance.Numbered"),
        "the report names the message type and the fix: {log}"
    );
    let reason = String::from_utf8_lossy(&letters[0].body).into_owned();
    assert!(
        reason.contains("did not finish within"),
        "the attempt failed as timed out: {reason}"
    );
}
