//! The behaviours every backend must have. Each function is one test; [`crate::conformance_suite!`]
//! runs them per backend. No test asserts on time: waits only bound how long a failure takes.
//!
//! This file is over 1,000 lines because it lists the behaviours every backend must have, one
//! function each.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::{Command, Event, Handler, HandlerContext, HandlerError, NimbusError};
use serde::{Deserialize, Serialize};

use crate::db::{Kind, Setup, TestDatabase};

pub use crate::addressing::*;
pub use crate::bridge::*;
pub use crate::deduplication::*;
pub use crate::delayed::*;
pub use crate::failures::*;
pub use crate::groups::{
    a_group_behind_a_long_run_is_not_held_behind_it,
    a_grouped_send_needs_a_queue_that_keeps_groups,
    ordered_groups_keep_send_order_across_instances,
};
pub use crate::leases::*;
pub use crate::limits::*;
pub use crate::nservicebus::*;
pub use crate::pause::*;
pub use crate::payloads::*;
pub use crate::priorities::*;
pub use crate::pubsub::*;
pub use crate::sagas::*;
pub use crate::schedules::{
    a_paused_schedule_fires_nothing_until_resumed,
    a_schedule_fires_each_tick_once_across_instances, an_existing_schema_gains_the_schedules_table,
    missed_ticks_fire_once_or_are_skipped, schedules_follow_the_code_that_declares_them,
};

/// How long a test waits for something that should happen within a second or two.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// A numbered command.
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.Numbered")]
pub struct Numbered {
    pub n: u32,
}

/// A command whose handler fails or panics on its first attempt.
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.Flaky")]
pub struct Flaky {
    pub n: u32,
}

/// An audit record a handler sends; the test counts them in their queue.
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.Audit")]
pub struct Audit {
    pub n: u32,
}

/// An event.
#[derive(Debug, Clone, Serialize, Deserialize, Event)]
#[nimbus(type_name = "Conformance.SomethingHappened")]
pub struct SomethingHappened {
    pub n: u32,
}

/// Records what it handles, with the instance that handled it.
#[derive(Clone, Default)]
pub struct Recorder {
    instance: String,
    seen: Arc<Mutex<Vec<(String, u32)>>>,
}

impl Recorder {
    pub(crate) fn new(instance: &str, seen: &Arc<Mutex<Vec<(String, u32)>>>) -> Self {
        Recorder {
            instance: instance.into(),
            seen: seen.clone(),
        }
    }
    fn record(&self, n: u32) {
        self.seen.lock().unwrap().push((self.instance.clone(), n));
    }
}

#[nimbus::handler]
impl Handler<Numbered> for Recorder {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.record(m.n);
        Ok(())
    }
}

#[nimbus::handler]
impl Handler<SomethingHappened> for Recorder {
    async fn handle(
        &self,
        m: SomethingHappened,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        self.record(m.n);
        Ok(())
    }
}

pub(crate) fn seen_list() -> Arc<Mutex<Vec<(String, u32)>>> {
    Arc::new(Mutex::new(Vec::new()))
}

pub(crate) fn count_of(seen: &Arc<Mutex<Vec<(String, u32)>>>) -> usize {
    seen.lock().unwrap().len()
}

/// Waits until `condition` holds, or fails the test after [`PATIENCE`] saying what it waited for.
pub(crate) async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition().await {
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {PATIENCE:?} waiting until {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `state` says done, for as long as the progress it reports keeps moving: fails
/// only after [`PATIENCE`] without a change. A slow server that is still working is waited for;
/// one that stalled is reported with how far it got.
pub(crate) async fn wait_while_progressing<F, Fut>(what: &str, mut state: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = (i64, bool)>,
{
    let mut last = None;
    let mut since = tokio::time::Instant::now();
    loop {
        let (progress, done) = state().await;
        if done {
            return;
        }
        if last != Some(progress) {
            last = Some(progress);
            since = tokio::time::Instant::now();
        } else if since.elapsed() > PATIENCE {
            panic!("no progress for {PATIENCE:?} (stuck at {progress}) waiting until {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A send-only endpoint that routes `Numbered` and `Flaky` to `queue`.
/// A send-only endpoint routing the test messages to `queue`. Tests often send before the
/// receiving endpoint has started, so this sender may make the queue it names
/// (`create_queues_on_send`); the default, which refuses a queue no endpoint has made, has a test
/// of its own.
pub(crate) async fn sender(db: &TestDatabase, queue: &str) -> nimbus::Bus {
    db.builder("Sender", "sender-1")
        .create_queues_on_send(true)
        .route::<Numbered>(queue)
        .route::<Flaky>(queue)
        .build()
        .expect("sender config")
        .start()
        .await
        .expect("start sender")
}

pub async fn fifo_order_on_one_receiver(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let bus = db
        .builder("Fifo", "fifo-1")
        .concurrency(1)
        .route::<Numbered>("Fifo")
        .handler::<Numbered, _>(Recorder::new("fifo-1", &seen))
        .build()
        .unwrap();
    // Fill the queue before the endpoint starts receiving, so order is the queue's order.
    let sender = sender(&db, "Fifo").await;
    sender
        .send_batch((0..100).map(|n| Numbered { n }))
        .await
        .unwrap();
    let bus = bus.start().await.unwrap();
    wait_until("all 100 messages are handled", || async {
        count_of(&seen) == 100
    })
    .await;
    bus.stop().await.unwrap();
    let order: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    assert_eq!(order, (0..100).collect::<Vec<_>>(), "FIFO by RowVersion");
    assert_eq!(db.count("Fifo").await, 0);
}

pub async fn competing_consumers_handle_each_message_once(kind: Setup) {
    const TOTAL: u32 = 2_000;
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let sender = sender(&db, "Competing").await;
    for chunk in (0..TOTAL).collect::<Vec<_>>().chunks(250) {
        sender
            .send_batch(chunk.iter().map(|&n| Numbered { n }))
            .await
            .unwrap();
    }
    let mut buses = Vec::new();
    for instance in ["competing-a", "competing-b"] {
        buses.push(
            db.builder("Competing", instance)
                .concurrency(4)
                .handler::<Numbered, _>(Recorder::new(instance, &seen))
                .build()
                .unwrap()
                .start()
                .await
                .unwrap(),
        );
    }
    wait_while_progressing("all messages are handled", || async {
        let handled = count_of(&seen);
        (handled as i64, handled >= TOTAL as usize)
    })
    .await;
    // Give a duplicate, if there were one, the chance to show up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for bus in &buses {
        bus.stop().await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let mut per_message: BTreeMap<u32, usize> = BTreeMap::new();
    let mut per_instance: BTreeMap<String, usize> = BTreeMap::new();
    for (instance, n) in &seen {
        *per_message.entry(*n).or_default() += 1;
        *per_instance.entry(instance.clone()).or_default() += 1;
    }
    assert_eq!(per_message.len(), TOTAL as usize, "no message lost");
    let duplicates: Vec<_> = per_message.iter().filter(|(_, c)| **c > 1).collect();
    assert!(duplicates.is_empty(), "handled twice: {duplicates:?}");
    assert_eq!(
        per_instance.len(),
        2,
        "both instances competed: {per_instance:?}"
    );
    assert_eq!(db.count("Competing").await, 0);
}

/// Sends an `Audit` and then fails (or panics) on the first attempt of each message.
struct FailOnce {
    attempts: Arc<AtomicUsize>,
    panic: bool,
}

#[nimbus::handler]
impl Handler<Flaky> for FailOnce {
    async fn handle(&self, m: Flaky, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send(Audit { n: m.n })?;
        if self.attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            if self.panic {
                panic!("first attempt panics on purpose");
            }
            return Err("first attempt fails on purpose".into());
        }
        Ok(())
    }
}

async fn first_attempt_fails(kind: Setup, panic: bool) {
    let db = TestDatabase::new(kind).await;
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = seen_list();
    let bus = db
        .builder("Flaky", "flaky-1")
        .concurrency(1)
        // Nobody receives the audits: this endpoint makes their queue.
        .create_queues_on_send(true)
        .route::<Audit>("Audits")
        .handler(FailOnce {
            attempts: attempts.clone(),
            panic,
        })
        .handler::<Numbered, _>(Recorder::new("flaky-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "Flaky").await;
    sender.send(Flaky { n: 1 }).await.unwrap();
    wait_until("the message is handled on its second attempt", || async {
        attempts.load(Ordering::SeqCst) >= 2 && db.count("Flaky").await == 0
    })
    .await;
    // The endpoint keeps processing other messages after the failure.
    sender.send(Numbered { n: 7 }).await.unwrap();
    wait_until("a later message is handled", || async {
        count_of(&seen) == 1
    })
    .await;
    bus.stop().await.unwrap();
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(
        db.count("Audits").await,
        1,
        "the failed attempt's Audit was rolled back, the successful one committed"
    );
}

pub async fn handler_error_rolls_back_outgoing_and_returns_message(kind: Setup) {
    first_attempt_fails(kind, false).await;
}

pub async fn handler_panic_rolls_back_and_endpoint_keeps_running(kind: Setup) {
    first_attempt_fails(kind, true).await;
}

pub async fn messages_sent_while_no_endpoint_runs_are_handled_after_start(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = sender(&db, "Later").await;
    for n in 0..10 {
        sender.send(Numbered { n }).await.unwrap();
    }
    sender.stop().await.unwrap();
    assert_eq!(db.count("Later").await, 10, "waiting in the queue table");
    let seen = seen_list();
    let bus = db
        .builder("Later", "later-1")
        .handler::<Numbered, _>(Recorder::new("later-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_until("the 10 waiting messages are handled", || async {
        count_of(&seen) == 10
    })
    .await;
    bus.stop().await.unwrap();
    assert_eq!(db.count("Later").await, 0);
}

fn config_error(result: Result<nimbus::Endpoint, NimbusError>, needle: &str) {
    match result {
        Ok(_) => panic!("expected a configuration error mentioning {needle:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(needle), "{text:?} should mention {needle:?}");
            assert!(text.contains("Fix:"), "{text:?} should say what to do");
        }
    }
}

pub async fn configuration_errors_are_clear(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    config_error(
        db.builder("Cfg", "1")
            .peek_delay(Duration::from_millis(99))
            .build(),
        "100 ms",
    );
    config_error(db.builder("Cfg", "1").concurrency(0).build(), "concurrency");
    config_error(
        nimbus::Bus::builder().database_url(db.url()).build(),
        ".names(",
    );
    config_error(
        db.builder("Cfg", "1")
            .database_url("mysql://localhost/x")
            .build(),
        "not supported",
    );
    config_error(
        db.builder("Cfg", "1")
            .database_url("no scheme at all")
            .build(),
        "not supported",
    );
    config_error(db.builder("bad\nname", "1").build(), "control character");
    config_error(db.builder(&"q".repeat(200), "1").build(), "bytes long");
    config_error(
        db.builder("Cfg", "1").route::<Numbered>("").build(),
        "empty",
    );
    config_error(db.builder("Cfg", "").build(), "instance name");
    config_error(
        db.builder("Cfg", "1")
            .auto_delete_on_idle(Duration::from_secs(299))
            .build(),
        "5 minutes",
    );
    match kind.kind {
        Kind::Sqlite => config_error(
            db.builder("Cfg", "1").schema("other").build(),
            "SQLite has no schema",
        ),
        Kind::Postgres => {
            // PostgreSQL identifiers are limited to 63 bytes, index names carry the queue name.
            config_error(db.builder(&"q".repeat(47), "1").build(), "bytes long");
            config_error(
                db.builder("Cfg", "1").schema("s".repeat(64)).build(),
                "bytes long",
            );
        }
        Kind::SqlServer => {
            // sysname: 128 characters.
            config_error(db.builder(&"q".repeat(129), "1").build(), "bytes long");
        }
    }
    if kind != Kind::SqlServer {
        config_error(
            db.builder("Cfg", "1")
                .create_body_string_column(true)
                .build(),
            "BodyString",
        );
        config_error(
            db.builder("Cfg", "1")
                .body_string_column(nimbus::BodyStringColumn::Text)
                .build(),
            "BodyString",
        );
    }
    // Nothing of the refused configurations reached the database.
    assert_eq!(db.count("Cfg").await, 0);
    // A long peek delay is accepted (with a warning).
    assert!(db
        .builder("Cfg", "1")
        .peek_delay(Duration::from_secs(11))
        .build()
        .is_ok());
}

/// A queue named at run time (`send_to`, a reply address) is held to the database's name limit
/// as configured names are: PostgreSQL would otherwise truncate it to 63 bytes, and two long
/// names would share one table (without its index).
pub async fn a_run_time_queue_name_over_the_limit_is_refused(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let limit = match kind.kind {
        Kind::Sqlite => nimbus::MAX_NAME_LEN,
        Kind::Postgres => 46,
        Kind::SqlServer => 128,
    };
    let bus = sender(&db, "Long").await;
    let too_long = format!("{}A", "L".repeat(limit));
    let refused = bus
        .send_to(&too_long, Numbered { n: 1 })
        .await
        .expect_err("a queue name over the limit is refused");
    let text = refused.to_string();
    assert!(
        matches!(refused, NimbusError::InvalidName { .. }) && text.contains(&limit.to_string()),
        "the error names the limit: {text}"
    );
    if too_long.len() <= nimbus::MAX_NAME_LEN {
        // (Longer names are refused by every database, and by the test's own helpers.)
        assert!(!db.queue_exists(&too_long).await, "nothing was written");
    }
    // At the limit it works.
    let longest = "L".repeat(limit);
    bus.send_to(&longest, Numbered { n: 2 }).await.unwrap();
    assert_eq!(
        db.count(&longest).await,
        1,
        "the queue with the longest name the database allows holds its message"
    );
    bus.stop().await.unwrap();
}

pub async fn unreachable_database_is_a_clear_error(kind: Setup) {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let url = match kind.kind {
        Kind::Sqlite => "sqlite:///nonexistent-dir-of-nimbus/sub/x.db".to_string(),
        Kind::Postgres => {
            "postgres://postgres:s3cret@127.0.0.1:1/postgres?connect_timeout=5".to_string()
        }
        Kind::SqlServer => "Server=tcp:127.0.0.1,1;Database=nimbus;User Id=sa;Password=s3cret;\
                            TrustServerCertificate=true;Connect Timeout=5"
            .to_string(),
    };
    let result = nimbus::Bus::builder()
        .names("Unreachable", "1")
        .database_url(url)
        .build()
        .unwrap()
        .start()
        .await;
    match result {
        Ok(_) => panic!("start must fail when the database is unreachable"),
        Err(e @ NimbusError::Connect { .. }) => {
            let text = e.to_string();
            assert!(text.contains("Fix:"), "{text}");
            match kind.kind {
                Kind::Sqlite => assert!(text.contains("nonexistent-dir-of-nimbus"), "{text}"),
                Kind::Postgres => assert!(text.contains("127.0.0.1:1"), "{text}"),
                Kind::SqlServer => assert!(text.contains("127.0.0.1,1/nimbus"), "{text}"),
            }
            assert!(!text.contains("s3cret"), "never shows the password: {text}");
        }
        Err(other) => panic!("expected a connect error, got {other}"),
    }
}

pub async fn awkward_queue_names_work(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    // On SQL Server, with NServiceBus's BodyString column too, made twice (its guard must find
    // it under an awkward name). The name with a right bracket comes last: Babelfish cannot
    // parse it (a known gap), and the others are proven there first.
    let body_string = kind == Kind::SqlServer && !db.shared_table();
    for name in [
        "it's \"odd\"",
        "semi;colon -- not a comment",
        "[bracketed] queue",
    ] {
        let seen = seen_list();
        let start = || {
            db.builder(name, "awkward-1")
                .route::<Numbered>(name)
                .create_body_string_column(body_string)
                .handler::<Numbered, _>(Recorder::new("awkward-1", &seen))
                .build()
                .unwrap()
                .start()
        };
        let bus = start().await.unwrap();
        bus.send(Numbered { n: 3 }).await.unwrap();
        wait_until(
            "the message to an awkwardly named queue is handled",
            || async { count_of(&seen) == 1 },
        )
        .await;
        bus.stop().await.unwrap();
        if !db.shared_table() {
            assert!(
                db.indexes(name).await.len() >= 2,
                "the queue table {name:?} and its indexes exist under that exact name"
            );
        }
        if body_string {
            start()
                .await
                .expect("a second start finds BodyString")
                .stop()
                .await
                .unwrap();
            let columns = db
                .scalar(
                    "SELECT COUNT(*) FROM sys.columns AS c \
                     JOIN sys.tables AS t ON t.[object_id] = c.[object_id] \
                     WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2 \
                     AND c.[name] = N'BodyString'",
                    &[db.schema().unwrap_or("dbo"), name],
                )
                .await;
            assert_eq!(columns, 1, "{name:?} has one BodyString column");
        }
    }
}

/// Business tables share the schema with the queues (handler SQL in the receive's transaction
/// recommends it): they are never taken for queues. Not listed by the admin API, not accepted
/// as a send's destination, not suggested for a typo.
pub async fn business_tables_in_the_schema_are_not_queues(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let bus = db
        .builder("Shop", "shop-1")
        .handler::<Numbered, _>(Recorder::default())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let table = db.table("shop_orders");
    db.execute(&format!(
        "CREATE TABLE {table} (order_id bigint NOT NULL, total_cents bigint NOT NULL)"
    ))
    .await;
    let queues: Vec<String> = db
        .admin()
        .queues()
        .await
        .expect("the queues are listed beside a business table")
        .into_iter()
        .map(|q| q.name)
        .collect();
    // Babelfish lists table names folded to lower case; SQL Server as created.
    assert!(
        queues
            .iter()
            .any(|q| q == "Shop" || (kind == Kind::SqlServer && q == "shop")),
        "{queues:?}"
    );
    assert!(
        !queues.iter().any(|q| q.eq_ignore_ascii_case("shop_orders")),
        "a business table is no queue: {queues:?}"
    );
    let err = bus
        .send_with(
            Numbered { n: 1 },
            nimbus::SendOptions::new().to("shop_orders"),
        )
        .await
        .expect_err("a business table is no destination");
    match (&err, kind.layout) {
        // No queue has a table of its own there: a table of that name is not one.
        (NimbusError::UnknownQueue { closest, .. }, nimbus::StorageLayout::SharedTable) => {
            assert!(
                !closest
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case("shop_orders")),
                "{err}"
            )
        }
        // Where queues are tables, it says what the table is, not that it is missing.
        (_, nimbus::StorageLayout::SharedTable) => panic!("expected UnknownQueue, got {err}"),
        _ => {
            let text = err.to_string();
            assert!(
                text.contains("exists but is not a queue table")
                    && !text.contains("does not exist"),
                "{text}"
            );
        }
    }
    bus.stop().await.unwrap();
}

/// A subscription row whose queue name the framework refuses (written by hand or by another
/// tool) is skipped with a warning on every database: the other subscribers still get the event.
pub async fn a_refused_subscriber_name_does_not_stop_publishing(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let billing = db
        .builder("Billing", "billing-1")
        .handler::<SomethingHappened, _>(Recorder::new("Billing", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let admin = db.admin();
    db.execute(&format!(
        "INSERT INTO {} ({}, {}) VALUES ('Conformance.SomethingHappened', ' padded name ')",
        admin.qualified_table("NimbusSubscriptions"),
        admin.quote("TopicName"),
        admin.quote("SubscriberQueue"),
    ))
    .await;
    let publisher = sender(&db, "Nowhere").await;
    publisher.publish(SomethingHappened { n: 1 }).await.unwrap();
    wait_until("Billing handles the event", || async {
        count_of(&seen) == 1
    })
    .await;
    billing.stop().await.unwrap();
    publisher.stop().await.unwrap();
}

pub async fn events_reach_every_subscribed_queue(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let mut buses = Vec::new();
    for app in ["Billing", "Shipping"] {
        buses.push(
            db.builder(app, &format!("{app}-1"))
                .concurrency(1)
                .handler::<SomethingHappened, _>(Recorder::new(app, &seen))
                .build()
                .unwrap()
                .start()
                .await
                .unwrap(),
        );
    }
    let publisher = sender(&db, "Nowhere").await;
    for n in 0..5 {
        publisher.publish(SomethingHappened { n }).await.unwrap();
    }
    wait_until("both subscribers handle all five events", || async {
        count_of(&seen) == 10
    })
    .await;
    for bus in &buses {
        bus.stop().await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    for app in ["Billing", "Shipping"] {
        let got: Vec<u32> = seen
            .iter()
            .filter(|(a, _)| a == app)
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(
            got,
            vec![0, 1, 2, 3, 4],
            "{app} got each event once, in order"
        );
    }
    // An event nobody subscribes to is written nowhere.
    #[derive(Serialize, Deserialize, Event)]
    #[nimbus(type_name = "Conformance.Unheard")]
    struct Unheard;
    publisher.publish(Unheard).await.unwrap();
    assert_eq!(db.count("Billing").await + db.count("Shipping").await, 0);
}

/// Releases held handlers when dropped, so that a failing test ends instead of waiting for its
/// handlers forever.
struct ReleaseOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// SQL Server's `BodyString` column in both forms: the text form reads as the JSON body that was
/// sent, NServiceBus's form is its `nvarchar` definition (which reads UTF-8 as UTF-16).
pub async fn body_string_columns_read_as_defined(kind: Setup) {
    assert_eq!(
        kind.kind,
        Kind::SqlServer,
        "BodyString exists on SQL Server only"
    );
    let db = TestDatabase::new(kind).await;
    for (queue, form, definition) in [
        ("TextBody", nimbus::BodyStringColumn::Text, "varchar"),
        ("NsbBody", nimbus::BodyStringColumn::NServiceBus, "nvarchar"),
    ] {
        // The endpoint makes its queue with the column, and is stopped before it receives.
        let endpoint = db
            .builder(queue, "1")
            .body_string_column(form)
            .handler::<Numbered, _>(Recorder::new("1", &seen_list()))
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        endpoint.stop().await.unwrap();
        let sender = sender(&db, queue).await;
        sender.send(Numbered { n: 7 }).await.unwrap();
        sender.stop().await.unwrap();
        let table = db.table(queue);
        let typed = db
            .scalar(
                &format!(
                    "SELECT COUNT(*) FROM sys.columns AS c \
                     WHERE c.[object_id] = OBJECT_ID(N'{}') AND c.[name] = N'BodyString' \
                     AND TYPE_NAME(c.[system_type_id]) = @P1",
                    table.replace('\'', "''")
                ),
                &[definition],
            )
            .await;
        assert_eq!(typed, 1, "{queue}: BodyString is {definition}");
        if form == nimbus::BodyStringColumn::Text {
            let readable = db
                .scalar(
                    &format!("SELECT COUNT(*) FROM {table} WHERE [BodyString] = @P1"),
                    &[r#"{"n":7}"#],
                )
                .await;
            assert_eq!(readable, 1, "the body reads as its text");
        }
    }
}

/// Holds every message it handles until released: a long-running handler, with its receive's
/// transaction open all along.
#[derive(Clone, Default)]
struct Holding {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

#[nimbus::handler]
impl Handler<Numbered> for Holding {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        while !self.released.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A rolling deploy: a second instance of an endpoint starts while the first one's handler runs
/// (its receive's transaction open), and sends go on meanwhile. Neither may wait for that
/// handler: a start on a complete schema takes no lock and runs no DDL (on PostgreSQL even
/// `CREATE INDEX IF NOT EXISTS` would wait for the open receive, and every send behind it).
///
/// SQLite has one writer, which a receive holds while its handler runs: there every write waits
/// for the handler, so long handlers run under a lease, which holds nothing while they run.
pub async fn a_starting_instance_waits_for_no_running_handler(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let holding = Holding::default();
    let _release = ReleaseOnDrop(holding.released.clone());
    let builder = db.builder("Rolling", "rolling-a").handler(holding.clone());
    let builder = if kind == Kind::Sqlite {
        builder.lease::<Numbered>(nimbus::Lease::of(Duration::from_secs(30)))
    } else {
        builder
    };
    let first = builder.build().unwrap().start().await.unwrap();
    let sender = sender(&db, "Rolling").await;
    sender.send(Numbered { n: 1 }).await.unwrap();
    wait_until("the first instance is handling", || async {
        holding.started.load(Ordering::SeqCst) >= 1
    })
    .await;
    // A start or a send that waited for the running handler would fail at this deadline.
    let starting = std::time::Instant::now();
    let second = db
        .builder("Rolling", "rolling-b")
        .database_timeout(Duration::from_secs(10))
        .handler(holding.clone())
        .build()
        .unwrap()
        .start()
        .await
        .expect("a second instance starts while the first one's handler runs");
    let started = starting.elapsed();
    let sending = std::time::Instant::now();
    sender
        .send(Numbered { n: 2 })
        .await
        .expect("sends go on while a handler runs");
    println!(
        "while a handler ran: a second instance started in {started:?}, a send took {:?}",
        sending.elapsed()
    );
    assert_eq!(
        holding.finished.load(Ordering::SeqCst),
        0,
        "the handler was still running all along"
    );
    holding.released.store(true, Ordering::SeqCst);
    wait_until("both messages are handled", || async {
        holding.finished.load(Ordering::SeqCst) == 2
    })
    .await;
    for bus in [first, second, sender] {
        bus.stop().await.unwrap();
    }
}

/// A send made while a handler runs: on SQLite, whose one writer the handler's receive holds,
/// it commits with that receive's commit once the handler ends (and a send whose deadline
/// passes first says why, with what to do); on server databases it does not wait at all.
pub async fn a_send_behind_a_running_handler_commits_with_it_or_says_why_it_waited(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let holding = Holding::default();
    let _release = ReleaseOnDrop(holding.released.clone());
    let receiver = db
        .builder("Behind", "behind-1")
        .handler(holding.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "Behind").await;
    // Started before the handler runs: on SQLite a start too waits for the file's one writer.
    // Its deadline: on SQLite shorter than the handler runs; on a server database a send that
    // waited for the handler would meet it too, but a loaded server gets time for the start.
    let deadline = if kind == Kind::Sqlite {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    let impatient = db
        .builder("Impatient", "impatient-1")
        .route::<Numbered>("Behind")
        .database_timeout(deadline)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sender.send(Numbered { n: 1 }).await.unwrap();
    wait_until("the handler is running", || async {
        holding.started.load(Ordering::SeqCst) >= 1
    })
    .await;

    let hurried = impatient.send(Numbered { n: 2 }).await;
    if kind == Kind::Sqlite {
        let error = hurried.expect_err("the handler holds SQLite's one writer past the deadline");
        let text = error.to_string();
        assert!(
            text.contains("one writer") && text.contains("handler"),
            "the error says why the send waited and what to do: {text}"
        );
    } else {
        hurried.expect("a server database takes the send beside the running handler");
    }

    // A patient send waits for the handler's commit (on SQLite it commits with it).
    let waiting = tokio::spawn({
        let sender = sender.clone();
        async move { sender.send(Numbered { n: 3 }).await }
    });
    holding.released.store(true, Ordering::SeqCst);
    waiting.await.unwrap().unwrap();
    let expected = if kind == Kind::Sqlite { 2 } else { 3 };
    wait_until("every committed message is handled", || async {
        holding.finished.load(Ordering::SeqCst) >= expected
    })
    .await;
    impatient.stop().await.unwrap();
    sender.stop().await.unwrap();
    receiver.stop().await.unwrap();
    assert_eq!(holding.finished.load(Ordering::SeqCst), expected);
}

/// Scale-out: instance A holds every message of the queue in running handlers; instance B of
/// the same endpoint must see nothing to take. A peek that counted A's rows would send B's idle
/// receivers after them, a round of empty receives per peek, for as long as A's handlers run.
pub async fn peeks_do_not_count_rows_other_instances_hold(kind: Setup) {
    if kind == Kind::Sqlite {
        // SQLite has one writer: B's receives wait for A's, whatever the peek says.
        return;
    }
    let db = TestDatabase::new(kind).await;
    let holding = Holding::default();
    let _release = ReleaseOnDrop(holding.released.clone());
    let first = db
        .builder("Held", "held-a")
        .concurrency(4)
        .handler(holding.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "Held").await;
    for n in 0..4 {
        sender.send(Numbered { n }).await.unwrap();
    }
    wait_until("instance A holds all four messages", || async {
        holding.started.load(Ordering::SeqCst) == 4
    })
    .await;
    let second = db
        .builder("Held", "held-b")
        .concurrency(4)
        .peek_delay(Duration::from_millis(100))
        .handler(holding.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let before = second.metrics();
    wait_until(
        "instance B peeks 10 times while instance A holds every message",
        || async { second.metrics().peeks >= before.peeks + 10 },
    )
    .await;
    let after = second.metrics();
    assert_eq!(
        after.empty_receives - before.empty_receives,
        0,
        "B's peeks counted rows A holds: {} empty receives in {} peeks",
        after.empty_receives - before.empty_receives,
        after.peeks - before.peeks
    );
    assert_eq!(after.queue_depth, 0, "B sees nothing waiting");
    assert_eq!(holding.finished.load(Ordering::SeqCst), 0);
    holding.released.store(true, Ordering::SeqCst);
    wait_until("A finishes its four messages", || async {
        holding.finished.load(Ordering::SeqCst) == 4
    })
    .await;
    for bus in [first, second, sender] {
        bus.stop().await.unwrap();
    }
}

/// Holds message 0 until released; counts the others as they are handled.
#[derive(Clone, Default)]
struct SlowFirst {
    slow_started: Arc<AtomicUsize>,
    others: Arc<AtomicUsize>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

#[nimbus::handler]
impl Handler<Numbered> for SlowFirst {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 0 {
            self.slow_started.fetch_add(1, Ordering::SeqCst);
            while !self.released.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        } else {
            self.others.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Messages written by another process wake nobody in this one (on SQL Server and SQLite never;
/// on PostgreSQL when a notification is lost): idle receivers must find them by peeking, and
/// must keep peeking while a slow handler runs, not wait for it to end.
pub async fn a_slow_handler_does_not_hide_other_processes_messages(kind: Setup) {
    if kind == Kind::Sqlite {
        // SQLite has one writer: a running receive holds it, and every other receive waits.
        return;
    }
    let db = TestDatabase::new(kind).await;
    let handler = SlowFirst::default();
    let _release = ReleaseOnDrop(handler.released.clone());
    let endpoint = db
        .builder("SlowFirst", "slow-first-1")
        .concurrency(4)
        .peek_delay(Duration::from_millis(100))
        // The slow handler runs until released, however long the others take.
        .handler_timeout(Duration::from_secs(600))
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "SlowFirst").await;
    sender.send(Numbered { n: 0 }).await.unwrap();
    wait_until("the slow handler runs", || async {
        handler.slow_started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Written as another process would: no wake-up reaches this one.
    for n in 1..=3 {
        db.admin()
            .send_json(
                "SlowFirst",
                "Conformance.Numbered",
                &format!("{{\"n\":{n}}}"),
                "ElsewhereSender",
                &[],
            )
            .await
            .expect("writing a message as another process");
    }
    wait_until(
        "the other process's three messages are handled while the slow handler runs",
        || async { handler.others.load(Ordering::SeqCst) == 3 },
    )
    .await;
    assert_eq!(
        handler.slow_started.load(Ordering::SeqCst),
        1,
        "the slow handler ran once, and was still running"
    );
    handler.released.store(true, Ordering::SeqCst);
    for bus in [endpoint, sender] {
        bus.stop().await.unwrap();
    }
    assert_eq!(
        db.count("SlowFirst").await,
        0,
        "the slow message was handled once released"
    );
}

/// Tracks how many handlers run at once.
struct Gauge {
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
}

#[nimbus::handler]
impl Handler<Numbered> for Gauge {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

pub async fn concurrency_limit_is_never_exceeded(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = sender(&db, "Limited").await;
    sender
        .send_batch((0..60).map(|n| Numbered { n }))
        .await
        .unwrap();
    let (now, max, done) = Default::default();
    let gauge = Gauge {
        now: Arc::clone(&now),
        max: Arc::clone(&max),
        done: Arc::clone(&done),
    };
    let bus = db
        .builder("Limited", "limited-1")
        .concurrency(3)
        .handler(gauge)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_until("all 60 are handled", || async {
        done.load(Ordering::SeqCst) == 60
    })
    .await;
    bus.stop().await.unwrap();
    let max = max.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&max),
        "at most 3 handlers at once, saw {max}"
    );
    if kind != Kind::Sqlite {
        // Row locks let receivers run side by side; SQLite serializes them on its write lock.
        assert!(
            max > 1,
            "receivers ran in parallel on {:?} (row locks skipped by SKIP LOCKED / READPAST), \
             saw {max}",
            kind.kind
        );
    }
}

pub async fn missing_indexes_are_reported_with_their_statement(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let start = |auto_create: bool| {
        db.builder("Indexed", "indexed-1")
            .auto_create_schema(auto_create)
            .handler::<Numbered, _>(Recorder::default())
            .build()
            .unwrap()
            .start()
    };
    let bus = start(true).await.unwrap();
    assert!(bus.warnings().is_empty(), "{:?}", bus.warnings());
    bus.stop().await.unwrap();
    let (table, expected) = db.seed_indexes("Indexed");
    for index in &expected {
        assert!(
            db.has_index(&table, index).await,
            "{index} in {:?}",
            db.indexes(&table).await
        );
    }
    let expires = expected.last().cloned().unwrap();
    db.drop_index(&table, &expires).await;
    let bus = start(false).await.unwrap();
    let warnings = bus.warnings().to_vec();
    bus.stop().await.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(&expires), "{}", warnings[0]);
    assert!(
        warnings[0].contains("CREATE INDEX")
            || warnings[0].contains("CREATE UNIQUE INDEX")
            || warnings[0].contains("CREATE NONCLUSTERED INDEX"),
        "quotes the statement: {}",
        warnings[0]
    );
    // The quoted statement creates the index.
    let statement = warnings[0]
        .split_once("create it with:\n")
        .map(|(_, s)| s.to_string())
        .unwrap();
    db.execute(&statement).await;
    assert!(db.has_index(&table, &expires).await);
}

/// An index of the right name on the wrong column passes a check by name; the check by
/// definition (type, key and included columns) reports it at start, quoting the statements
/// that replace it, and those statements fix it.
pub async fn a_wrongly_defined_index_is_reported_with_its_fix(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let start = || {
        db.builder("Misindexed", "misindexed-1")
            .handler::<Numbered, _>(Recorder::default())
            .build()
            .unwrap()
            .start()
    };
    let bus = start().await.unwrap();
    assert!(bus.warnings().is_empty(), "{:?}", bus.warnings());
    bus.stop().await.unwrap();
    // The index the receive relies on (Index_RowVersion, or IX_NimbusMessages_Dequeue), made
    // again under its own name on another column.
    let (table, expected) = db.seed_indexes("Misindexed");
    let index = expected[0].clone();
    let column = if db.shared_table() {
        "MessageId"
    } else if db.nservicebus_shape() {
        // NServiceBus's names are unquoted: PostgreSQL stores them in lower case.
        "id"
    } else {
        "Id"
    };
    db.drop_index(&table, &index).await;
    db.create_index(&table, &index, column).await;
    assert!(db.has_index(&table, &index).await, "same name");
    let bus = start().await.unwrap();
    let warnings = bus.warnings().to_vec();
    bus.stop().await.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    assert!(warning.contains(&format!("{index:?}")), "{warning}");
    // Babelfish lists column names folded to lower case; SQL Server as created.
    let found = format!("on ({column})");
    assert!(
        warning.contains(&found)
            || (kind == Kind::SqlServer && warning.contains(&found.to_lowercase())),
        "names what it found: {warning}"
    );
    assert!(warning.contains("DROP INDEX"), "{warning}");
    assert_eq!(
        db.admin().index_warnings("Misindexed").await.unwrap(),
        warnings,
        "the admin API says the same"
    );
    // The quoted statements replace it: the next start has nothing to say.
    let (_, fix) = warning
        .split_once("replace it with:\n")
        .expect("the warning quotes the fix");
    db.execute(fix).await;
    let bus = start().await.unwrap();
    assert!(bus.warnings().is_empty(), "{:?}", bus.warnings());
    bus.stop().await.unwrap();
}

/// SQL Server: a queue table whose `Index_RowVersion` is CLUSTERED (made by an NServiceBus SQL
/// Server transport before its 3.1.5, 4.3.2, 5.0.3 and 6.0.1 patches, the upgrade case seed 000
/// points to) is reported at start with the statements that make it non-clustered, and they do.
pub async fn a_clustered_rowversion_index_is_reported(kind: Setup) {
    assert_eq!(
        kind.kind,
        Kind::SqlServer,
        "clustered indexes are SQL Server's"
    );
    assert!(!kind.shared_table(), "Index_RowVersion is a queue table's");
    let db = TestDatabase::new(kind).await;
    let start = || {
        db.builder("Clustered", "clustered-1")
            .handler::<Numbered, _>(Recorder::default())
            .build()
            .unwrap()
            .start()
    };
    start().await.unwrap().stop().await.unwrap();
    db.drop_index("Clustered", "Index_RowVersion").await;
    db.create_clustered_index("Clustered", "Index_RowVersion", "RowVersion")
        .await;
    let clustered = db
        .scalar(
            "SELECT COUNT(*) FROM sys.indexes WHERE [object_id] = OBJECT_ID(@P1) AND [type] = 1",
            &[&db.table("Clustered")],
        )
        .await;
    assert_eq!(
        clustered, 1,
        "CREATE CLUSTERED INDEX made no CLUSTERED index (sys.indexes type 1)"
    );
    let bus = start().await.unwrap();
    let warnings = bus.warnings().to_vec();
    bus.stop().await.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    for needle in [
        "\"Index_RowVersion\"",
        "CLUSTERED index on (RowVersion)",
        "non-clustered",
        "DROP INDEX IF EXISTS [Index_RowVersion]",
        "CREATE NONCLUSTERED INDEX [Index_RowVersion]",
    ] {
        assert!(warning.contains(needle), "{needle}: {warning}");
    }
    let (_, fix) = warning
        .split_once("Replace it with:\n")
        .expect("quotes the fix");
    db.execute(fix).await;
    let bus = start().await.unwrap();
    assert!(bus.warnings().is_empty(), "{:?}", bus.warnings());
    bus.stop().await.unwrap();
}

/// A schema whose name is full of quotes, brackets and spaces: tables, indexes and every
/// statement quote it (SQL Server's suite otherwise runs in plainly named schemas).
pub async fn hostile_schema_names_work(kind: Setup) {
    let db = TestDatabase::with_hostile_schema(kind).await;
    let schema = db.schema().unwrap_or_default().to_string();
    assert!(schema.contains(']') && schema.contains('"') && schema.contains('\''));
    let seen = seen_list();
    let bus = db
        .builder("Hostile", "hostile-1")
        .route::<Numbered>("Hostile")
        .handler::<Numbered, _>(Recorder::new("hostile-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    assert!(bus.warnings().is_empty(), "{:?}", bus.warnings());
    for n in 0..3 {
        bus.send(Numbered { n }).await.unwrap();
    }
    wait_until("the messages are handled", || async {
        count_of(&seen) == 3
    })
    .await;
    bus.stop().await.unwrap();
    assert_eq!(db.count("Hostile").await, 0);
}

pub async fn missing_tables_without_auto_create_name_the_statement(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let result = db
        .builder("Manual", "manual-1")
        .auto_create_schema(false)
        .handler::<Numbered, _>(Recorder::default())
        .build()
        .unwrap()
        .start()
        .await;
    match result {
        Err(e @ NimbusError::MissingSchema { .. }) => {
            let text = e.to_string();
            assert!(text.contains("CREATE TABLE"), "{text}");
            assert!(text.contains("NimbusSubscriptions"), "{text}");
        }
        Err(other) => panic!("expected MissingSchema, got {other}"),
        Ok(_) => panic!("start must fail when tables are missing and auto-create is off"),
    }
    assert_eq!(db.count("Manual").await, 0);
}

pub async fn concurrent_auto_create_is_safe(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let starts = (0..4).map(|i| {
        db.builder("Racing", &format!("racing-{i}"))
            .handler::<Numbered, _>(Recorder::default())
            .build()
            .unwrap()
            .start()
    });
    let buses: Vec<_> = futures::future::join_all(starts)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every instance starts while the others create the same schema");
    for bus in &buses {
        bus.stop().await.unwrap();
    }
    let (table, expected) = db.seed_indexes("Racing");
    for index in &expected {
        assert!(
            db.has_index(&table, index).await,
            "{index} in {:?}",
            db.indexes(&table).await
        );
    }
}

/// Sends an `Audit` after a pause, so that a stop can arrive while it runs.
struct Slow {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

#[nimbus::handler]
impl Handler<Numbered> for Slow {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        ctx.send(Audit { n: m.n })?;
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

pub async fn stop_lets_in_flight_handlers_finish(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let (started, finished): (Arc<AtomicUsize>, Arc<AtomicUsize>) = Default::default();
    let bus = db
        .builder("Stopping", "stopping-1")
        .concurrency(1)
        // Nobody receives the audits: this endpoint makes their queue.
        .create_queues_on_send(true)
        .route::<Audit>("StopAudits")
        .handler(Slow {
            started: started.clone(),
            finished: finished.clone(),
        })
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "Stopping").await;
    sender
        .send_batch((0..3).map(|n| Numbered { n }))
        .await
        .unwrap();
    wait_until("a handler is running", || async {
        started.load(Ordering::SeqCst) >= 1
    })
    .await;
    bus.stop().await.unwrap();
    let (started, finished) = (
        started.load(Ordering::SeqCst),
        finished.load(Ordering::SeqCst),
    );
    assert_eq!(started, finished, "stop waited for the handler in flight");
    assert!(started < 3, "stop stopped receiving");
    assert_eq!(
        db.count("StopAudits").await as usize,
        finished,
        "its sends committed"
    );
    assert_eq!(
        db.count("Stopping").await as usize,
        3 - finished,
        "the rest is still queued"
    );
    assert!(matches!(
        bus.send_to("Stopping", Numbered { n: 9 }).await,
        Err(NimbusError::NotRunning(_))
    ));
}

/// `stop()` takes no new message: receives that were still waiting for a connection when it was
/// called (on SQLite every receive waits for the one writer while a handler runs) give up; only
/// what was already taken is handled, and the rest stays queued.
pub async fn stop_takes_no_new_message(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let handler = SlowFirst::default();
    let _release = ReleaseOnDrop(handler.released.clone());
    let bus = db
        .builder("StopNew", "stop-new-1")
        .concurrency(4)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = sender(&db, "StopNew").await;
    sender
        .send_batch((0..10).map(|n| Numbered { n }))
        .await
        .unwrap();
    wait_until("the slow handler runs", || async {
        handler.slow_started.load(Ordering::SeqCst) == 1
    })
    .await;
    // What the other receivers have taken by now is in flight; nothing may be taken later.
    let taken_before = handler.others.load(Ordering::SeqCst);
    let mut stop = std::pin::pin!(bus.stop());
    assert!(
        futures::poll!(&mut stop).is_pending(),
        "stop waits for the slow handler"
    );
    handler.released.store(true, Ordering::SeqCst);
    stop.await.unwrap();
    let others = handler.others.load(Ordering::SeqCst);
    if kind == Kind::Sqlite {
        assert_eq!(
            others, taken_before,
            "on SQLite the other receives waited for the writer, and gave up at stop()"
        );
    }
    assert!(
        others <= taken_before + 3,
        "after stop() only the other receives in flight finished: {others} handled, {taken_before} before"
    );
    assert_eq!(
        db.count("StopNew").await as usize,
        10 - 1 - others,
        "what was not handled is still queued"
    );
    sender.stop().await.unwrap();
}

pub async fn version_1_columns_are_null_unless_asked_for(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    if db.shared_table() {
        // NimbusMessages has no version-1 columns: asking for them is refused, with the fix.
        config_error(
            db.builder("V1Sender", "v1-1").fill_v1_columns(true).build(),
            "version-1",
        );
        return;
    }
    if db.nservicebus_shape() {
        // Nor has NServiceBus's PostgreSQL table.
        config_error(
            db.builder("V1Sender", "v1-1").fill_v1_columns(true).build(),
            "no CorrelationId/ReplyToAddress columns",
        );
        return;
    }
    let plain = sender(&db, "V1").await;
    plain.send(Numbered { n: 1 }).await.unwrap();
    let v1 = db
        .builder("V1Sender", "v1-1")
        .fill_v1_columns(true)
        .route::<Numbered>("V1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    v1.send(Numbered { n: 2 }).await.unwrap();
    assert_eq!(db.count("V1").await, 2);
    assert_eq!(
        db.rows_with_v1_columns("V1").await,
        1,
        "only the sender that asked for version-1 columns filled them"
    );
}

pub async fn a_dropped_queue_is_made_again_not_failed_forever(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = sender(&db, "Dropped").await;
    sender.send(Numbered { n: 1 }).await.unwrap();
    // Someone (an idle sweep, a DBA) drops the queue this process knows.
    db.drop_queue("Dropped").await;
    // At most the first send after the drop fails; from then on auto-create makes it again.
    let first = sender.send(Numbered { n: 2 }).await;
    sender.send(Numbered { n: 3 }).await.unwrap();
    let bodies: Vec<u32> = db
        .bodies("Dropped")
        .await
        .iter()
        .map(|b| serde_json::from_slice::<Numbered>(b).unwrap().n)
        .collect();
    match first {
        Ok(()) => assert_eq!(bodies, vec![2, 3]),
        Err(_) => assert_eq!(bodies, vec![3]),
    }
}

pub async fn batch_send_is_atomic_and_ordered(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = sender(&db, "Batch").await;
    sender
        .send_batch((0..20).map(|n| Numbered { n }))
        .await
        .unwrap();
    let bodies = db.bodies("Batch").await;
    let numbers: Vec<u32> = bodies
        .iter()
        .map(|b| serde_json::from_slice::<Numbered>(b).unwrap().n)
        .collect();
    assert_eq!(numbers, (0..20).collect::<Vec<_>>());
    // A batch with an unroutable message fails before anything is written.
    #[derive(Serialize, Deserialize, Command)]
    struct Unrouted;
    assert!(matches!(
        sender.send_batch([Unrouted]).await,
        Err(NimbusError::NoRoute { .. })
    ));
    assert_eq!(db.count("Batch").await, 20);
}

/// Sends that arrive together commit together (far fewer commits than sends), each still
/// returning only once its rows committed; a send the database refuses fails alone, and the
/// sends that shared its commit are written without it.
pub async fn concurrent_sends_share_commits_and_fail_alone(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    // The queue exists (made by a first send); the bus under test may not create queues.
    sender(&db, "Shared")
        .await
        .send(Numbered { n: 0 })
        .await
        .unwrap();
    let bus = db
        .builder("SharedSender", "shared-sender-1")
        .route::<Numbered>("Shared")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sends = (1..=160).map(|n| bus.send(Numbered { n }));
    for result in futures::future::join_all(sends).await {
        result.unwrap();
    }
    assert_eq!(db.count("Shared").await, 161, "every send committed");
    let metrics = bus.metrics();
    println!("160 concurrent sends took {} commits", metrics.send_commits);
    assert_eq!(metrics.sends, 160);
    assert!(
        metrics.send_commits <= 40,
        "160 concurrent sends shared commits: {} commits",
        metrics.send_commits
    );

    // One send to a queue that does not exist, among good ones: it fails alone.
    let good = (161..=176).map(|n| bus.send(Numbered { n }));
    let (good, bad) = futures::join!(
        futures::future::join_all(good),
        bus.send_to("NoSuchQueue", Numbered { n: 999 })
    );
    assert!(
        matches!(bad, Err(NimbusError::UnknownQueue { .. })),
        "the faulty send gets its own error: {bad:?}"
    );
    for result in good {
        result.unwrap();
    }
    // A send that asks for a transaction of its own.
    bus.send_with(
        Numbered { n: 177 },
        nimbus::SendOptions::new().own_transaction(),
    )
    .await
    .unwrap();
    assert_eq!(db.count("Shared").await, 178, "the good sends committed");
    let numbers: std::collections::BTreeSet<u32> = db
        .bodies("Shared")
        .await
        .iter()
        .map(|b| serde_json::from_slice::<Numbered>(b).unwrap().n)
        .collect();
    assert_eq!(numbers, (0..=177).collect(), "each message once");
    bus.stop().await.unwrap();
}

/// The rows of a business table keyed by message id, and how many distinct ids they hold.
pub async fn business_rows(db: &TestDatabase, table: &str) -> (i64, i64) {
    let rows = db
        .scalar(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .await;
    let distinct = db
        .scalar(
            &format!("SELECT COUNT(DISTINCT message_id) FROM {table}"),
            &[],
        )
        .await;
    (rows, distinct)
}

/// A worker process that is killed when the test lets go of it, also when a wait inside the
/// test panics: no worker outlives its test.
pub struct Worker(std::process::Child);

impl Worker {
    /// Starts `command` as a worker process.
    pub fn spawn(command: &mut std::process::Command) -> Worker {
        Worker(command.spawn().expect("start the worker process"))
    }

    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends the numbers `0..total` to the `Worker` queue, 500 per transaction, for the worker
/// processes of the SIGKILL tests; returns the sending bus.
pub async fn fill_worker_queue(db: &TestDatabase, total: u32) -> nimbus::Bus {
    let sender = sender(db, "Worker").await;
    for chunk in (0..total).collect::<Vec<_>>().chunks(500) {
        sender
            .send_batch(chunk.iter().map(|&n| Numbered { n }))
            .await
            .unwrap();
    }
    sender
}

/// Starts the worker process `worker` (the `crash_worker` binary) on `db`, in its layout and
/// schema, with `env` set and its output discarded.
pub fn start_worker(db: &TestDatabase, worker: &str, env: &[(&str, &str)]) -> Worker {
    let mut cmd = std::process::Command::new(worker);
    cmd.arg(db.url())
        .arg(if db.shared_table() {
            "shared"
        } else if db.nservicebus_shape() {
            "nservicebus"
        } else {
            "table"
        })
        .envs(env.iter().copied());
    if let Some(schema) = db.schema() {
        cmd.arg(schema);
    }
    Worker(
        cmd.stdout(std::process::Stdio::null())
            .spawn()
            .expect("start the worker process"),
    )
}

/// Starts workers with `spawn` and kills each (SIGKILL) at a random moment after it forwarded
/// its first message to `Done`, `kills` times at most (fewer once `total` are done), checks
/// that one was killed in the middle of the work, then lets a last worker drain `Worker` until
/// `total` are done, and kills it too. The moments and progress are printed, so that a failing
/// run can be repeated.
pub(crate) async fn kill_then_drain(
    db: &TestDatabase,
    total: u32,
    kills: usize,
    spawn: impl Fn() -> Worker,
) {
    // Random moments after each worker's first handled message (a worker's start takes
    // what the server makes it take).
    let moments: Vec<u64> = uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(kills)
        .map(|b| 20 + u64::from(*b) * 2)
        .collect();
    println!("killing the worker {moments:?} ms after it starts handling");
    let mut progress = Vec::new();
    for wait in &moments {
        let before = db.count("Done").await;
        let mut worker = spawn();
        wait_until("the worker handles a message", || async {
            db.count("Done").await > before
        })
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(*wait)).await;
        worker.kill(); // SIGKILL, wherever it was
        let done = db.count("Done").await;
        progress.push(done);
        if done >= i64::from(total) {
            break;
        }
    }
    println!("forwarded after each kill: {progress:?}");
    assert!(
        progress.iter().any(|&d| d > 0 && d < i64::from(total)),
        "at least one worker was killed in the middle of the work: {progress:?}"
    );
    let mut last = spawn();
    wait_while_progressing("the last worker drains the queue", || async {
        let done = db.count("Done").await;
        (
            done,
            db.count("Worker").await == 0 && done >= i64::from(total),
        )
    })
    .await;
    last.kill();
}

/// Runs three workers made by `spawn` side by side and, `kills` times at most (fewer once
/// `total` are done), SIGKILLs one of them at random at a random moment after `Done` grew and
/// starts it again; then lets them drain `Worker` until `total` are done, and kills them all.
/// The moments and progress are printed, so that a failing run can be repeated.
pub(crate) async fn kill_among_three_then_drain(
    db: &TestDatabase,
    total: u32,
    kills: usize,
    spawn: impl Fn() -> Worker,
) {
    let mut workers: Vec<Worker> = (0..3).map(|_| spawn()).collect();
    let moments: Vec<(usize, u64)> = uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .chain(uuid::Uuid::new_v4().as_bytes())
        .take(kills)
        .map(|b| (usize::from(*b % 3), 20 + u64::from(*b) * 2))
        .collect();
    println!("killing (worker, ms after progress): {moments:?}");
    let mut progress = Vec::new();
    for (victim, wait) in &moments {
        let before = db.count("Done").await;
        wait_until("the workers handle a message", || async {
            db.count("Done").await > before
        })
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(*wait)).await;
        workers[*victim].kill(); // SIGKILL, wherever it was
        workers[*victim] = spawn();
        let done = db.count("Done").await;
        progress.push(done);
        if done >= i64::from(total) {
            break;
        }
    }
    println!("forwarded after each kill: {progress:?}");
    wait_while_progressing("the workers drain the queue", || async {
        let done = db.count("Done").await;
        (
            done,
            db.count("Worker").await == 0 && done >= i64::from(total),
        )
    })
    .await;
    workers.iter_mut().for_each(Worker::kill);
}

/// Handlers insert into a business table keyed by message id, in the receive's transaction,
/// while the worker process is killed (SIGKILL) at random moments: at the end every message has
/// exactly one row and one forwarded copy, and none is lost.
pub fn sigkill_keeps_business_data_exactly_once(kind: Setup, worker: &str) {
    sigkill_keeps_business_data_exactly_once_with(kind, worker, 1);
}

/// [`sigkill_keeps_business_data_exactly_once`] with workers that receive `batch` messages per
/// transaction.
pub fn sigkill_keeps_business_data_exactly_once_with(kind: Setup, worker: &str, batch: usize) {
    const TOTAL: u32 = 1_500;
    let system = actix_rt::System::new();
    system.block_on(async {
        let db = TestDatabase::new(kind).await;
        let table = db.table("Orders");
        db.execute(&format!(
            "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
        ))
        .await;
        let _sender = fill_worker_queue(&db, TOTAL).await;
        let batch = batch.to_string();
        let spawn = || {
            start_worker(
                &db,
                worker,
                &[
                    ("NIMBUS_BUSINESS_TABLE", table.as_str()),
                    ("NIMBUS_RECEIVE_BATCH", batch.as_str()),
                ],
            )
        };
        kill_then_drain(&db, TOTAL, 6, spawn).await;
        let (rows, distinct) = business_rows(&db, &table).await;
        assert_eq!(
            distinct,
            i64::from(TOTAL),
            "every message has its row: none lost"
        );
        assert_eq!(
            rows,
            i64::from(TOTAL),
            "no message has two rows: exactly once"
        );
        assert_eq!(
            db.count("Done").await,
            i64::from(TOTAL),
            "sends exactly once too"
        );
    });
}

pub fn sigkill_in_the_middle_loses_nothing(kind: Setup, worker: &str) {
    const TOTAL: u32 = 3_000;
    let system = actix_rt::System::new();
    system.block_on(async {
        let db = TestDatabase::new(kind).await;
        let _sender = fill_worker_queue(&db, TOTAL).await;
        let spawn = || start_worker(&db, worker, &[]);
        let mut first = spawn();
        wait_while_progressing("the first worker has handled 300 messages", || async {
            let done = db.count("Done").await;
            (done, done >= 300)
        })
        .await;
        first.kill(); // SIGKILL
        let handled_before = db.count("Done").await;
        assert!(handled_before < TOTAL as i64, "killed in the middle");
        let mut second = spawn();
        wait_while_progressing("the second worker drains the queue", || async {
            let done = db.count("Done").await;
            (done, db.count("Worker").await == 0 && done >= TOTAL as i64)
        })
        .await;
        second.kill();
        let done: Vec<u32> = db
            .bodies("Done")
            .await
            .iter()
            .map(|b| serde_json::from_slice::<Numbered>(b).unwrap().n)
            .collect();
        let unique: HashSet<u32> = done.iter().copied().collect();
        assert_eq!(unique.len(), TOTAL as usize, "none lost");
        assert_eq!(done.len(), TOTAL as usize, "none handled twice");
    });
}
