//! Metrics through the `metrics` facade, read back with a debugging recorder: counters and
//! histograms labelled by queue and message type, a depth gauge per queue, and `Bus::metrics()`
//! reporting each queue on its own. One recorder serves the whole test binary; each test reads
//! only the series of its own queues.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("the only metrics recorder of this test binary");
        snapshotter
    })
}

/// A recorded value: a counter's increments, a gauge's setting, a histogram's sample count.
#[derive(Clone, Debug)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Samples(usize),
}

/// One recorded series: its name, its labels, a value.
type Recorded = (String, Vec<(String, String)>, Value);

/// Everything recorded so far. The recorder's snapshot drains what it returns (counters are
/// reset to 0, histograms emptied), and the tests run in parallel: every snapshot is added to one
/// store, which the tests read.
fn recorded() -> std::sync::MutexGuard<'static, Vec<Recorded>> {
    static STORE: OnceLock<Mutex<Vec<Recorded>>> = OnceLock::new();
    let mut store = STORE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    for (key, _, description, value) in snapshotter().snapshot().into_vec() {
        let key = key.key();
        if let Some(description) = description {
            descriptions()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.name().to_string(), description.to_string());
        }
        let labels = key
            .labels()
            .map(|l| (l.key().to_string(), l.value().to_string()))
            .collect();
        let value = match value {
            DebugValue::Counter(n) => Value::Counter(n),
            DebugValue::Gauge(g) => Value::Gauge(g.into_inner()),
            DebugValue::Histogram(samples) => Value::Samples(samples.len()),
        };
        store.push((key.name().to_string(), labels, value));
    }
    store
}

/// The help text of each metric that was described to the recorder.
fn descriptions() -> &'static Mutex<std::collections::HashMap<String, String>> {
    static DESCRIPTIONS: OnceLock<Mutex<std::collections::HashMap<String, String>>> =
        OnceLock::new();
    DESCRIPTIONS.get_or_init(Default::default)
}

/// Every recorded value of series `name` whose labels include all of `labels`.
fn series(name: &str, labels: &[(&str, &str)]) -> Vec<Value> {
    recorded()
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, _, value)| value.clone())
        .collect()
}

fn counter(name: &str, labels: &[(&str, &str)]) -> u64 {
    series(name, labels)
        .into_iter()
        .map(|v| match v {
            Value::Counter(n) => n,
            _ => 0,
        })
        .sum()
}

/// Fails the first attempt of message 0, handles everything else.
#[derive(Clone, Default)]
struct FirstFails(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl Handler<Numbered> for FirstFails {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 0 && self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err("the first attempt fails".into());
        }
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn labelled_metrics(kind: Kind) {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Metered{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handler = FirstFails::default();
    let bus = db
        .builder(&queue, "metered-1")
        .enable_requests()
        .create_queues_on_send(true)
        .route::<Numbered>(&queue)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // The failure series exist at 0 from the start, so dashboards and alerts see them before
    // the first failure.
    let labels = [
        ("queue", queue.as_str()),
        ("message_type", "Conformance.Numbered"),
    ];
    for name in [
        "nimbus_messages_failed_total",
        "nimbus_messages_dead_lettered_total",
        "nimbus_messages_retried_total",
    ] {
        assert!(
            !series(name, &labels).is_empty(),
            "{name} is registered when the endpoint starts"
        );
    }
    assert_eq!(counter("nimbus_messages_dead_lettered_total", &labels), 0);
    for n in 0..3 {
        bus.send(Numbered { n }).await.unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // The handler counts before its receive commits; the bus counts after: wait for the bus.
    while handler.1.load(Ordering::SeqCst) < 3 || bus.metrics().handled < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "all three are handled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let metrics = bus.metrics();
    bus.stop().await.unwrap();

    assert_eq!(counter("nimbus_messages_handled_total", &labels), 3);
    // Exporters show a help text for each series (Prometheus's # HELP).
    drop(recorded());
    let help = descriptions()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get("nimbus_messages_handled_total")
        .cloned();
    assert_eq!(help.as_deref(), Some("Messages handled and committed"));
    assert_eq!(counter("nimbus_messages_received_total", &labels), 4);
    assert_eq!(counter("nimbus_messages_failed_total", &labels), 1);
    assert_eq!(
        counter(
            "nimbus_messages_retried_total",
            &[("queue", queue.as_str()), ("retry", "immediate")]
        ),
        1
    );
    let handling: usize = series("nimbus_handling_seconds", &labels)
        .into_iter()
        .map(|v| match v {
            Value::Samples(n) => n,
            _ => 0,
        })
        .sum();
    assert_eq!(handling, 3, "one handling time per handled message");
    assert!(
        !series("nimbus_queue_depth", &[("queue", queue.as_str())]).is_empty(),
        "a depth gauge for the queue"
    );
    assert!(
        !series("nimbus_queue_paused", &[("queue", queue.as_str())]).is_empty(),
        "a paused gauge for the queue, at 0 from the start"
    );
    // Bus::metrics() reports each of the endpoint's queues on its own: the input queue and the
    // instance queue for replies.
    let instance_queue = format!("{queue}.metered-1");
    assert!(
        metrics.queue_depths.contains_key(&queue)
            && metrics.queue_depths.contains_key(&instance_queue),
        "{:?}",
        metrics.queue_depths
    );
    assert_eq!(metrics.handled, 3);
}

#[actix_rt::test]
async fn metrics_are_labelled_by_queue_and_message_type_on_sqlite() {
    labelled_metrics(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn metrics_are_labelled_by_queue_and_message_type_on_postgres() {
    labelled_metrics(Kind::Postgres).await;
}

/// Counts what it handles, once the test opens its gate.
#[derive(Clone)]
struct GatedCount(Arc<AtomicUsize>, Arc<tokio::sync::Semaphore>);

impl Handler<Numbered> for GatedCount {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.1.acquire().await?.forget();
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A backlog that waited before its endpoint started shows its age; the drained queue shows 0.
async fn oldest_message_age(kind: Kind) {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Aged{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let sender = db
        .builder(&format!("{queue}Sender"), "sender-1")
        .create_queues_on_send(true)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..3 {
        sender.send_to(&queue, Numbered { n }).await.unwrap();
    }
    sender.stop().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let handled = GatedCount(Arc::default(), gate.clone());
    let bus = db
        .builder(&queue, "aged-1")
        .handler(handled.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Nothing is handled until the gate opens: the first peek sees the whole backlog.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let seen = loop {
        if let Some(age) = bus.metrics().oldest_message_ages.get(&queue) {
            break *age;
        }
        assert!(std::time::Instant::now() < deadline, "an age is reported");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        seen >= Duration::from_millis(1400),
        "the first peek saw the backlog's age (sent 1.5 s before): {seen:?}"
    );
    let gauges: Vec<f64> = series(
        "nimbus_queue_oldest_message_age_seconds",
        &[("queue", queue.as_str())],
    )
    .into_iter()
    .filter_map(|v| match v {
        Value::Gauge(g) => Some(g),
        _ => None,
    })
    .collect();
    assert!(
        gauges.iter().any(|&age| age >= 1.4),
        "the same age through the metrics facade: {gauges:?}"
    );
    gate.add_permits(3);
    loop {
        let drained = handled.0.load(Ordering::SeqCst) == 3
            && bus.metrics().oldest_message_ages.get(&queue) == Some(&Duration::ZERO);
        if drained {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the backlog is handled and an empty peek reports age 0: {:?}",
            bus.metrics().oldest_message_ages
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn the_oldest_message_age_is_reported_per_queue_on_sqlite() {
    oldest_message_age(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn the_oldest_message_age_is_reported_per_queue_on_postgres() {
    oldest_message_age(Kind::Postgres).await;
}

/// A saga of one message type: number 0 (of each name) starts an instance, number 1 completes
/// it. Each metered test names its saga type apart, as counters are process-wide.
#[derive(Clone)]
struct OpenClose;

impl nimbus::saga::Saga for OpenClose {
    type State = u32;
    const NAME: &'static str = "Metrics.OpenClose";
}

impl nimbus::saga::SagaHandler<Numbered> for OpenClose {
    const STARTS: bool = true;
    fn correlation(m: &Numbered) -> String {
        (m.n / 2).to_string()
    }
    async fn handle(
        &self,
        m: Numbered,
        saga: &mut nimbus::saga::SagaInstance<u32>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        if m.n % 2 == 1 {
            saga.mark_complete();
        }
        Ok(())
    }
}

/// Sagas started and completed are counted once their message committed.
#[actix_rt::test]
async fn sagas_started_and_completed_are_counted() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let bus = db
        .builder("Sagas", "sagas-1")
        .concurrency(1)
        .route::<Numbered>("Sagas")
        .saga_handler::<Numbered, _>(OpenClose)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Two instances start (0, 2), one completes (1); in order, on one receiver.
    for n in [0, 1, 2] {
        bus.send(Numbered { n }).await.unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while bus.metrics().handled < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "three messages handled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bus.stop().await.unwrap();
    let saga = [("saga", "Metrics.OpenClose")];
    assert_eq!(counter("nimbus_sagas_started_total", &saga), 2);
    assert_eq!(counter("nimbus_sagas_completed_total", &saga), 1);
}

/// Cancels and reschedules of delayed messages are counted with what they found.
#[actix_rt::test]
async fn delayed_changes_are_counted_with_what_they_found() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let bus = db
        .builder("Delayer", "delayer-1")
        .create_queues_on_send(true)
        .route::<Numbered>("Later")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let id = bus
        .send_delayed(
            Numbered { n: 1 },
            nimbus::SendOptions::new().delay(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    assert!(bus
        .reschedule_delayed(id, nimbus::Due::In(Duration::from_secs(60)))
        .await
        .unwrap());
    assert!(bus.cancel_delayed(id).await.unwrap());
    assert!(!bus.cancel_delayed(id).await.unwrap());
    bus.stop().await.unwrap();
    let seen = |operation: &str, found: &str| {
        counter(
            "nimbus_delayed_changes_total",
            &[("operation", operation), ("found", found)],
        )
    };
    assert_eq!(seen("reschedule", "true"), 1);
    assert_eq!(seen("cancel", "true"), 1);
    assert_eq!(seen("cancel", "false"), 1);
}

/// A schedule's ticks are counted, with how late each was sent; ticks missed while no instance
/// ran are counted with what became of them; a pause by an operator is counted and shows in
/// the paused gauge.
#[actix_rt::test]
async fn schedule_ticks_and_pauses_are_counted() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let handled = Arc::new(AtomicUsize::new(0));
    let pulse = || {
        nimbus::Schedule::every("metrics-pulse", Duration::from_secs(1))
            .send_to("Metronome", Numbered { n: 0 })
    };
    let hourly = || {
        nimbus::Schedule::every("metrics-hourly", Duration::from_secs(3600))
            .send_to("Metronome", Numbered { n: 1 })
    };
    let start = || {
        db.builder("Metronome", "metronome-1")
            .handler(Counting(handled.clone()))
            .schedule(pulse())
            .schedule(hourly())
            .build()
            .unwrap()
            .start()
    };
    let bus = start().await.unwrap();
    bus.stop().await.unwrap();
    // The hourly schedule's first tick moved three and a half hours back: three ticks due.
    db.execute(&format!(
        "UPDATE {} SET \"NextDue\" = strftime('%Y-%m-%d %H:%M:%f', \"NextDue\", '-12600 seconds') WHERE \"Name\" = 'metrics-hourly'",
        db.table("NimbusSchedules")
    ))
    .await;
    let bus = start().await.unwrap();
    let ours = |name: &str, schedule: &str, more: &[(&str, &str)]| {
        let mut labels = vec![("endpoint", "Metronome"), ("schedule", schedule)];
        labels.extend_from_slice(more);
        counter(name, &labels)
    };
    nimbus_conformance::eventually("two ticks of the pulse are sent", async || {
        ours("nimbus_schedule_ticks_fired_total", "metrics-pulse", &[]) >= 2
    })
    .await;
    assert_eq!(
        ours("nimbus_schedule_ticks_fired_total", "metrics-hourly", &[]),
        1,
        "one message for the missed ticks"
    );
    assert_eq!(
        ours(
            "nimbus_schedule_ticks_missed_total",
            "metrics-hourly",
            &[("outcome", "fired_once")]
        ),
        2
    );
    assert!(!series(
        "nimbus_schedule_lateness_seconds",
        &[("schedule", "metrics-pulse")]
    )
    .is_empty());
    let admin = db.admin();
    assert!(admin
        .pause_schedule("Metronome", "metrics-pulse", "the test")
        .await
        .unwrap());
    assert!(
        counter(
            "nimbus_schedule_changes_total",
            &[("operation", "pause"), ("changed", "true")]
        ) >= 1
    );
    nimbus_conformance::eventually("the instance sees the pause", async || {
        series(
            "nimbus_schedule_paused",
            &[("endpoint", "Metronome"), ("schedule", "metrics-pulse")],
        )
        .iter()
        .any(|v| matches!(v, Value::Gauge(g) if *g == 1.0))
    })
    .await;
    bus.stop().await.unwrap();
}

/// Counts the messages it handles.
#[derive(Clone)]
struct Counting(Arc<AtomicUsize>);

impl Handler<Numbered> for Counting {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A deduplicated send dropped and a copy the inbox removed are each counted.
#[actix_rt::test]
async fn deduplicated_sends_and_inbox_copies_are_counted() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let handled = Arc::new(AtomicUsize::new(0));
    let bus = db
        .builder("Deduplicating", "deduplicating-1")
        .route::<Numbered>("Deduplicating")
        .inbox(Duration::from_secs(3600))
        .handler(Counting(handled.clone()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let options = nimbus::SendOptions::new;
    assert!(bus
        .send_deduplicated("metrics-key", Numbered { n: 1 }, options())
        .await
        .unwrap());
    assert!(!bus
        .send_deduplicated("metrics-key", Numbered { n: 1 }, options())
        .await
        .unwrap());
    assert_eq!(
        counter(
            "nimbus_sends_deduplicated_total",
            &[("queue", "Deduplicating")]
        ),
        1
    );
    let id = uuid::Uuid::new_v4();
    for _ in 0..2 {
        bus.send_with(Numbered { n: 2 }, options().message_id(id))
            .await
            .unwrap();
    }
    nimbus_conformance::eventually("the copy is removed by the inbox", async || {
        counter(
            "nimbus_messages_deduplicated_total",
            &[
                ("queue", "Deduplicating"),
                ("message_type", "Conformance.Numbered"),
            ],
        ) == 1
    })
    .await;
    assert_eq!(handled.load(Ordering::SeqCst), 2, "key-1 once, the id once");
    bus.stop().await.unwrap();
}

/// Fails the first attempt of every message, then counts it.
#[derive(Clone)]
struct FailingOnce(
    Arc<AtomicUsize>,
    Arc<std::sync::Mutex<std::collections::HashSet<u32>>>,
);

impl Handler<Numbered> for FailingOnce {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.1.lock().unwrap().insert(m.n) {
            return Err("the first attempt fails".into());
        }
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A failed attempt of a message of an ordered group, which holds its group until its retry,
/// is counted per queue.
#[actix_rt::test]
async fn a_group_held_by_a_retry_is_counted() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let handled = Arc::new(AtomicUsize::new(0));
    let bus = db
        .builder("GroupedMetrics", "grouped-metrics-1")
        .route::<Numbered>("GroupedMetrics")
        .ordered_groups()
        .handler(FailingOnce(handled.clone(), Default::default()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..3 {
        let options = nimbus::SendOptions::new().group("metrics-group");
        bus.send_with(Numbered { n }, options).await.unwrap();
    }
    nimbus_conformance::eventually("the three are handled", async || {
        handled.load(Ordering::SeqCst) == 3
    })
    .await;
    assert_eq!(
        counter("nimbus_groups_held_total", &[("queue", "GroupedMetrics")]),
        3,
        "one hold per failed attempt"
    );
    bus.stop().await.unwrap();
}

/// Messages sent with a priority are counted per queue and priority when received.
#[actix_rt::test]
async fn prioritized_messages_are_counted_by_priority() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let handled = Arc::new(AtomicUsize::new(0));
    let bus = db
        .builder("PriorityMetrics", "priority-metrics-1")
        .route::<Numbered>("PriorityMetrics")
        .priorities()
        .handler(Counting(handled.clone()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for (n, priority) in [(0, 8), (1, 8), (2, -1)] {
        let options = nimbus::SendOptions::new().priority(priority);
        bus.send_with(Numbered { n }, options).await.unwrap();
    }
    bus.send(Numbered { n: 3 }).await.unwrap();
    nimbus_conformance::eventually("the four are handled", async || {
        handled.load(Ordering::SeqCst) == 4
    })
    .await;
    let at = |priority: &str| {
        counter(
            "nimbus_prioritized_messages_received_total",
            &[("queue", "PriorityMetrics"), ("priority", priority)],
        )
    };
    assert_eq!((at("8"), at("-1"), at("0")), (2, 1, 0));
    bus.stop().await.unwrap();
}

/// A message put back to wait because its limit was full is counted per queue, message type
/// and kind of limit (a rate of one an hour: the second message waits).
#[actix_rt::test]
async fn messages_held_by_a_limit_are_counted() {
    snapshotter();
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let handled = Arc::new(AtomicUsize::new(0));
    let hour = std::time::Duration::from_secs(3600);
    let bus = db
        .builder("LimitedMetrics", "limited-metrics-1")
        .route::<Numbered>("LimitedMetrics")
        .handler(Counting(handled.clone()))
        .limit::<Numbered>(nimbus::Limit::rate(1, hour))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..2 {
        bus.send(Numbered { n }).await.unwrap();
    }
    nimbus_conformance::eventually("the second is held back", async || {
        counter(
            "nimbus_messages_held_total",
            &[
                ("queue", "LimitedMetrics"),
                ("message_type", "Conformance.Numbered"),
                ("limit", "rate"),
            ],
        ) >= 1
    })
    .await;
    assert_eq!(handled.load(Ordering::SeqCst), 1, "one an hour");
    bus.stop().await.unwrap();
}
