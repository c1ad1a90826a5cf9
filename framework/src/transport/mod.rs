//! The transport: queues, topics, dead letters, delayed delivery and subscriptions over any
//! driver, written once ([`sql_transport::SqlTransport`], generic over
//! [`crate::driver::Driver`]). The storage layout is chosen once, as a [`storage::Storage`]
//! strategy.
//!
//! Everything above this module (pipeline, actors, bus) talks to a `dyn Transport` and never sees
//! SQL or a driver type. To add a database: write its statement files in `schema/<database>/`, a
//! [`crate::sql::Dialect`] for them, and a driver in `crate::driver`; then make
//! [`DatabaseUrl`] parse its URLs and [`connect`] build it. The conformance suite in `tests/` then
//! runs unchanged against it.

mod addressing;
mod admin;
mod batching;
mod catalog;
mod database_url;
mod delayed;
pub(crate) mod index_check;
pub(crate) mod instances;
pub(crate) mod monitoring;
pub(crate) mod schedules;
mod server_wait;
mod shared_reads;
mod sql_transport;
mod storage;
pub(crate) mod wakeups;
mod watcher;

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use crate::dead_letter::DeadLetter;
pub use crate::driver::body_statements::BodySummary;
pub use crate::driver::group_statements::{GroupSummary, PriorityCount};
pub use crate::driver::limit_statements::LimitSummary;
pub(crate) use crate::driver::schedule_statements::{
    ScheduleDefinition, ScheduleFiring, ScheduleList, ScheduleRow,
};
pub(crate) use crate::driver::statements::{PausedRow, SagaRow};
pub(crate) use crate::driver::Statement;
use crate::envelope::{MessageIds, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};

pub(crate) use addressing::resolve as resolve_address;
pub(crate) use admin::{Admin, RawRow};
#[cfg(feature = "postgres")]
pub(crate) use database_url::connect_postgres_client;
pub(crate) use database_url::DatabaseUrl;
pub use database_url::{DatabaseKind, DEFAULT_CONNECT_TIMEOUT};
pub use delayed::{DelayedMessage, Due};
pub(crate) use index_check::IndexProblem;
pub use schedules::{Missed, ScheduleState, CATCH_UP_WITHIN, MIN_SCHEDULE_INTERVAL};
pub(crate) use server_wait::ServerWait;
pub(crate) use sql_transport::SqlTransport;
pub(crate) use storage::Wanted;

/// How queues are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StorageLayout {
    /// One table per queue (seed 000), FIFO by an identity `RowVersion`; tables are created per
    /// queue at run time when auto-create is on. The default.
    #[default]
    TablePerQueue,
    /// Every queue in the one table `NimbusMessages` (seed 003), as a `Destination` value, FIFO
    /// by `VisibleAfter` then `MessageId`; headers travel inside `Body`. Needs only the three
    /// tables of seed 003, which a DBA can create once: no table is ever created at run time.
    SharedTable,
    /// One table per queue in the shape NServiceBus's PostgreSQL transport
    /// (`NServiceBus.Transport.PostgreSql`) creates and reads: `Id` (the primary key), `Expires`,
    /// `Headers`, `Body`, FIFO by a `serial` `Seq`. A Nimbus endpoint and an NServiceBus endpoint
    /// can then receive from one queue and send to each other's. PostgreSQL only: on SQL Server
    /// [`StorageLayout::TablePerQueue`] already is the NServiceBus SQL Server transport's table.
    #[serde(rename = "nservicebus_postgresql")]
    NServiceBusPostgreSql,
}

/// Whether `dialect`'s database has storage layout `layout`: NServiceBus's PostgreSQL table
/// shape exists only on PostgreSQL.
pub(crate) fn check_layout(dialect: &crate::sql::Dialect, layout: StorageLayout) -> Result<()> {
    if layout != StorageLayout::NServiceBusPostgreSql || dialect.nservicebus_files.is_some() {
        return Ok(());
    }
    Err(NimbusError::config(
        format!(
            "StorageLayout::NServiceBusPostgreSql is NServiceBus's PostgreSQL table shape; this \
             database is {}",
            dialect.name
        ),
        if dialect.folder == "sqlserver" {
            "use StorageLayout::TablePerQueue (the default): on SQL Server it is the table \
             NServiceBus's SQL Server transport uses"
        } else {
            "use StorageLayout::TablePerQueue (NServiceBus has no transport for this database)"
        },
    ))
}

/// Set once an endpoint stops: a receive still waiting for a connection (on SQLite, for the one
/// writer) gives up instead of taking a message after `stop()` was called. A receive whose
/// statement has started finishes as every receive in flight does. A receiver's own signal
/// ([`StopSignal::or_when`]) is also set while its queue is paused, so that a receive that waited
/// for a connection across a pause takes nothing.
#[derive(Clone)]
pub(crate) struct StopSignal {
    stopping: tokio::sync::watch::Receiver<bool>,
    /// Also set while this says so (a receiver's queue is paused).
    also: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

impl std::fmt::Debug for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopSignal")
            .field("set", &self.is_set())
            .finish()
    }
}

impl StopSignal {
    /// A signal, and the sender that sets it.
    pub fn new() -> (tokio::sync::watch::Sender<bool>, StopSignal) {
        let (tx, stopping) = tokio::sync::watch::channel(false);
        (
            tx,
            StopSignal {
                stopping,
                also: None,
            },
        )
    }

    /// A signal that is never set (benchmarks, one-off receives).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub fn never() -> StopSignal {
        let (tx, signal) = StopSignal::new();
        // The sender's end may go: a signal whose sender is gone stays as it was.
        drop(tx);
        signal
    }

    /// This signal, also set whenever `condition` holds (read when a receive has its connection,
    /// just before it takes anything).
    pub fn or_when(&self, condition: impl Fn() -> bool + Send + Sync + 'static) -> StopSignal {
        StopSignal {
            stopping: self.stopping.clone(),
            also: Some(Arc::new(condition)),
        }
    }

    /// Whether the endpoint is stopping (or the extra condition holds).
    pub fn is_set(&self) -> bool {
        *self.stopping.borrow() || self.also.as_ref().is_some_and(|also| also())
    }

    /// Resolves once the endpoint is stopping (never, if it cannot be any more).
    pub async fn set(&self) {
        let mut rx = self.stopping.clone();
        if rx.wait_for(|stopping| *stopping).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The SQL Server computed column `BodyString`, which shows a queue table's `Body` (bytes) as
/// text to people querying the table; nothing in Nimbus reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyStringColumn {
    /// `BodyString AS CAST([Body] AS varchar(max))`: the body's bytes read as text in the
    /// database's default collation. A UTF-8 JSON body reads as itself when that collation is a
    /// UTF-8 one (`…_UTF8`, SQL Server 2019 and later) and, under any collation, when it is
    /// ASCII; other characters then show as their bytes in the collation's code page. The
    /// readable choice for tables only Nimbus uses.
    Text,
    /// NServiceBus's definition exactly, `BodyString AS CAST([Body] AS nvarchar(max))`, for
    /// tables shared with NServiceBus endpoints (one `BodyString` whoever added it). `nvarchar`
    /// reads the bytes as UTF-16, so a UTF-8 JSON body does not read as its text; read such
    /// tables with `CAST([Body] AS varchar(max))`.
    NServiceBus,
}

/// What a transport is configured with.
#[derive(Clone, Debug)]
pub(crate) struct TransportSettings {
    pub database: DatabaseUrl,
    pub schema: SchemaName,
    /// Create tables that are missing (the common ones, the endpoint's queues, a subscriber's).
    pub auto_create: bool,
    /// Sends may create the queue they name; otherwise a send to a queue no endpoint has made
    /// fails with [`NimbusError::UnknownQueue`].
    pub create_on_send: bool,
    /// Subscriptions not seen for this long are lapsed: publishers skip them, the sweep deletes.
    pub idle_seconds: i64,
    pub layout: StorageLayout,
    /// How row ids are made when one message becomes several rows (a publish in the shared
    /// table, where `MessageId` is the primary key).
    pub message_ids: MessageIds,
    /// Add SQL Server's computed `BodyString` column to queue tables it creates, in this form.
    pub body_string: Option<BodyStringColumn>,
    /// Connections a server database's pool may open (SQLite has one per file).
    #[cfg_attr(
        not(any(feature = "postgres", feature = "sqlserver")),
        allow(dead_code)
    )]
    pub pool_size: usize,
    /// The most connections the process opens to this database, if the application set it
    /// (`BusBuilder::connection_limit`); shared by every bus of the process on it.
    #[cfg_attr(
        not(any(feature = "postgres", feature = "sqlserver")),
        allow(dead_code)
    )]
    pub connection_limit: Option<usize>,
    /// How long connecting and each statement may take.
    pub deadlines: crate::driver::Deadlines,
    /// Some messages are handled under a lease: `NimbusLeases` is created and verified too.
    pub leases: bool,
    /// The endpoint has sagas: `NimbusSagas` is created and verified too.
    pub sagas: bool,
    /// The endpoint declares schedules: `NimbusSchedules` is verified too (auto-create makes
    /// it for every endpoint).
    pub schedules: bool,
    /// The endpoint keeps an inbox: `NimbusDeduplication` is verified too (auto-create makes it
    /// for every endpoint).
    pub inbox: bool,
    /// The endpoint has limits: `NimbusLimits` is verified too (auto-create makes it for
    /// every endpoint).
    pub limits: bool,
    /// The endpoint stores bodies apart: `NimbusBodies` is verified too (auto-create makes it
    /// for every endpoint).
    pub bodies: bool,
    /// The object stores bodies stored apart are written to and read from.
    pub stores: crate::claim_check::Stores,
    /// NServiceBus's subscription table, when subscriptions are shared with NServiceBus.
    pub nservicebus_subscriptions: Option<QueueName>,
}

/// A database that holds queues.
#[async_trait]
pub(crate) trait Transport: Send + Sync + 'static {
    /// The database's name for messages.
    fn name(&self) -> &'static str;

    /// Whether `a` and `b` name one queue on this database (regardless of case on SQL Server,
    /// exactly elsewhere).
    fn same_queue_name(&self, a: &str, b: &str) -> bool;

    /// Whether the database has one writer at a time (SQLite): a second transaction of the same
    /// process waits for the first.
    fn single_writer(&self) -> bool;

    /// Whether this process hears that another one wrote to a queue (PostgreSQL's LISTEN/NOTIFY,
    /// SQLite's watcher of the file, SQL Server's one statement that watches the idle queues);
    /// where it does not (a PostgreSQL pooler without LISTEN), idle receivers poll.
    fn hears_other_processes(&self) -> bool;

    /// Whether [`Transport::peek`] counts the rows that receives in progress hold (SQLite);
    /// where it does not, its estimate is what waits for a receiver.
    fn peek_counts_held_rows(&self) -> bool;

    /// Where the database is (host and database, or the file), for messages and identity.
    fn target(&self) -> &str;

    /// The process-wide name of `queue` on this database and schema, for wake-ups
    /// ([`wakeups::key`]).
    fn wake_key(&self, queue: &QueueName) -> String;

    /// Starts cross-process wake-ups where the database offers them (PostgreSQL's
    /// LISTEN/NOTIFY): writes are announced to other processes, and their announcements wake
    /// this process's receivers. On SQL Server it joins the process's watch of the database's
    /// idle queues, which looks every `idle_poll` (none when it is zero). Idempotent; without
    /// it, only this process is woken.
    fn start_wakeups(&self, idle_poll: std::time::Duration);

    /// Resolves once every write announced so far has reached the database's channel (at most
    /// the statement deadline), so a process that stops right after a send still wakes the
    /// receivers of other processes.
    async fn flush_wakeups(&self);

    /// Creates the common tables and the tables of `queues` if they do not exist. Idempotent and
    /// safe when several instances run it at once.
    async fn create_schema(&self, queues: &[QueueName]) -> Result<()>;

    /// Checks that the common tables and the tables of `queues` exist; the error names the
    /// statement that creates what is missing.
    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()>;

    /// The seed's indexes of `queue` that are missing or defined otherwise (compared by type,
    /// key and included columns, not by name alone), with the statements that fix them.
    async fn index_problems(&self, queue: &QueueName) -> Result<Vec<IndexProblem>>;

    /// Whether this schema's tables stay on the coordinator of a Citus cluster that has worker
    /// nodes (the schema is not distributed, nor any of its tables): `false` elsewhere.
    async fn stays_on_citus_coordinator(&self) -> Result<bool>;

    /// Estimates how many messages wait in `queue`.
    async fn peek(&self, queue: &QueueName) -> Result<i64>;

    /// Tells the process's watch of the database that `queue` is idle (its supervisor found it
    /// empty): its receivers are woken when another process's message arrives, where the
    /// database cannot announce it (SQL Server, see [`watcher`]). Nothing elsewhere.
    fn watch(&self, queue: &QueueName);

    /// Opens a connection for the calling thread's pool, if it has none idle, and gives it
    /// back: a receiver on a handler thread does this when it starts, so that its first receive
    /// does not wait for a login. Not while the process's connection budget is spent: a
    /// connection another pool would have to close is not opened ahead of need.
    async fn warm_up(&self) -> Result<()>;

    /// Takes up to `limit` messages of `queue` in one transaction (a batched receive); `None`
    /// when there is nothing to take, or when `stop` is set while it waits for a connection.
    /// With `lock_wait`, a statement of the batch's transaction (a handler's own included)
    /// that waits longer than that for a row lock fails with a lock timeout, where the
    /// database can bound it for one transaction (PostgreSQL).
    async fn receive_batch(
        &self,
        queue: &QueueName,
        limit: i64,
        stop: &StopSignal,
        lock_wait: Option<std::time::Duration>,
    ) -> Result<Option<Box<dyn ReceivedBatch>>>;

    /// The statements that write `messages` (each publish fanned out to its live subscribers,
    /// each queue made to exist as a send would), for the application to run in a transaction
    /// of its own on its own connection. Reads and creations go through the framework's pool
    /// and are committed before this returns; nothing is written to a queue.
    async fn plan_sends(&self, messages: &[OutgoingMessage]) -> Result<PlannedSends>;

    /// Reads the dead rows of the table holding `queue`'s messages and whether the server's
    /// autovacuum looks after it, and reclaims them (PostgreSQL: `VACUUM`) when `vacuum` says
    /// so; `None` where the database needs no such care (SQLite, SQL Server).
    async fn maintain(
        &self,
        queue: &QueueName,
        vacuum: &(dyn for<'s> Fn(&'s TableStats) -> bool + Send + Sync),
    ) -> Result<Option<TableHealth>>;

    /// The headers (JSON text) of the first message in `queue`'s receive order, without taking
    /// it; `None` when the queue is empty.
    async fn first_headers(&self, queue: &QueueName) -> Result<Option<String>>;

    /// Takes the oldest message no other receiver holds, inside a transaction that stays open
    /// until the returned handle commits. `None` when there is nothing to take.
    /// A receive that is still waiting for a connection when `stop` is set takes nothing.
    async fn receive(
        &self,
        queue: &QueueName,
        stop: &StopSignal,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>>;

    /// Takes back the longest-expired lease of `queue` (its holder crashed or stalled past
    /// it), inside a transaction that stays open until the returned handle commits what becomes
    /// of the message (a retry or a dead letter). `None` when no lease of `queue` has expired.
    async fn take_expired_lease(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>>;

    /// Writes `messages` in one transaction: all of them or none.
    async fn send(&self, messages: &[OutgoingMessage]) -> Result<()>;

    /// As [`send`](Self::send), but where the messages fit one autocommitted statement and the
    /// database has one connection that every writer waits for (SQLite), the statement may run
    /// inside the transaction that holds the connection and commit with it (one commit instead
    /// of two). Returns once the messages have committed, as `send` does.
    async fn send_shared(&self, messages: &[OutgoingMessage]) -> Result<()> {
        self.send(messages).await
    }

    /// Writes (or refreshes) the subscription of `queue` to `topic`.
    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()>;

    /// Where subscriptions are shared with NServiceBus: creates its subscription table where
    /// missing (with auto-create; else a missing table is an error naming its statement).
    /// Nothing to do otherwise.
    async fn prepare_nservicebus_subscriptions(&self) -> Result<()>;

    /// Where subscriptions are shared with NServiceBus: subscribes `endpoint` (its input queue
    /// `queue`) to `topic` in NServiceBus's table. Nothing to do otherwise.
    async fn subscribe_nservicebus(
        &self,
        topic: &str,
        endpoint: &str,
        queue: &QueueName,
    ) -> Result<()>;

    /// Refreshes `LastSeenAt` of each (topic, queue) subscription; returns the positions of
    /// those that were gone (swept), which the caller writes again.
    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>>;

    /// In one transaction: deletes the subscriptions not seen for `idle_seconds` (database
    /// time), and drops the per-instance queues that no subscription is left for.
    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport>;

    /// Records that `queues` exist where the layout has no table per queue (the shared table),
    /// so that sends to them are accepted. Needs only the right to write rows.
    async fn register_queues(&self, queues: &[QueueName]) -> Result<()>;

    /// Whether `queue` has its storage (its table; always, in the shared table).
    async fn queue_exists(&self, queue: &QueueName) -> Result<bool>;

    /// Finds whether `queue`'s table keeps ordered groups, and makes sure of what `wanted`
    /// says (creating what is missing, or naming it in an error). Returns whether it keeps
    /// them: from then on this process receives from it one message per group at a time, in
    /// each group's order.
    async fn ordered_groups(&self, queue: &QueueName, wanted: Wanted) -> Result<bool>;

    /// Finds whether `queue`'s table keeps priorities, and makes sure of what `wanted` says.
    /// Returns whether it keeps them: from then on this process receives from it the highest
    /// priority first.
    async fn priorities(&self, queue: &QueueName, wanted: Wanted) -> Result<bool>;

    /// The messages of `queue` per priority, the highest first; empty when its table keeps no
    /// priorities.
    async fn priority_counts(&self, queue: &QueueName) -> Result<Vec<PriorityCount>>;

    /// Whether `queue`'s table keeps ordered groups, as this process last found
    /// ([`Transport::ordered_groups`]); `false` until it looked.
    fn keeps_groups(&self, queue: &QueueName) -> bool;

    /// The groups of `queue` with messages waiting, the longest first (at most `limit`); empty
    /// when its table keeps no groups.
    async fn groups(&self, queue: &QueueName, limit: i64) -> Result<Vec<GroupSummary>>;

    /// Drops the table of `queue` with everything in it (maintenance and benchmarks).
    async fn drop_queue(&self, queue: &QueueName) -> Result<()>;

    /// Deletes the bodies in `stores` (this schema's folder) older than their claim check's
    /// `orphans_after` that have no row in `NimbusBodies`; returns how many.
    async fn sweep_orphan_objects(&self, stores: &crate::claim_check::Stores) -> Result<u64>;

    /// Adds the slots the limit `scope` lacks (of `slots`), in a short transaction of its own.
    async fn add_limit_slots(&self, scope: &str, slots: u32) -> Result<()>;

    /// Counts a message the limit `scope` held back, in a short transaction of its own after
    /// the hold committed (inside the receive's, the count's row would be held by every batch
    /// that held a message until the batch commits).
    async fn count_limit_held(&self, scope: &str) -> Result<()>;

    /// Deletes at most `batch` messages of `queue` whose expiry has passed (by database time),
    /// skipping rows other transactions hold. Returns how many it deleted.
    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64>;

    /// Deletes at most `batch` of `rows` older than `older_than` (by database time: a dead
    /// letter's `FailedAt`, a saga's `CompletedAt`), skipping rows others hold. Returns how
    /// many it deleted.
    async fn delete_aged(
        &self,
        rows: AgedRows,
        older_than: std::time::Duration,
        batch: i64,
    ) -> Result<u64>;

    /// Moves at most `batch` due delayed messages into their queues, in one transaction, skipping
    /// rows another mover holds. Returns how many it moved.
    async fn deliver_due(&self, batch: i64) -> Result<u64>;

    /// Registers a start of a bus in `NimbusInstances`, unless another live holder of its name
    /// that `blocks` says forbids it holds the name (then nothing is written and that holder is
    /// returned). Serialized per name across processes.
    async fn register_instance(
        &self,
        registration: &instances::InstanceRegistration,
        blocks: &(dyn for<'h> Fn(&'h instances::InstanceHolder) -> bool + Send + Sync),
    ) -> Result<instances::Registered>;

    /// The heartbeat of the start `run_id` (`stopped` false), or its stop (`stopped` true);
    /// `false` when its row is gone.
    async fn touch_instance(&self, run_id: Uuid, stopped: bool) -> Result<bool>;

    /// Writes one monitoring report of this bus (a row per queue); `false` when
    /// `NimbusMonitoring` does not exist.
    async fn write_monitoring(
        &self,
        rows: &[crate::driver::monitoring_statements::ReportRow],
    ) -> Result<bool>;

    /// A round trip to the database within `within` (taking a connection included): reads
    /// whether `NimbusDeadLetters` exists. For health checks.
    async fn ping(&self, within: std::time::Duration) -> Result<()>;

    /// Closes the idle pooled connections nobody took for `unused_for`; how many.
    fn close_unused_connections(&self, unused_for: std::time::Duration) -> usize;

    /// Deletes the rows of instances not seen (stopped or silent) for `older_than`.
    async fn cleanup_instances(&self, older_than: std::time::Duration) -> Result<u64>;

    /// The queues an operator paused, read from `NimbusPausedQueues`; `None` when that table
    /// does not exist (a schema made before pausing, with auto-create off): nothing can be
    /// paused there.
    async fn paused_queues(&self) -> Result<Option<Vec<PausedRow>>>;

    /// Moves the dead letter `id` back to its queue in one transaction, rebuilt by `rebuild`
    /// from its original destination and body. `false` when there is no such dead letter.
    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool>;

    /// Cancels the delayed message `id` while it is pending: `true` when it was (it will never
    /// be delivered), `false` when it was delivered already or no pending delayed message has
    /// that id.
    async fn cancel_delayed(&self, id: Uuid) -> Result<bool>;

    /// Moves the due time of the delayed message `id` while it is pending; `false` when it was
    /// delivered already or no pending delayed message has that id.
    async fn reschedule_delayed(&self, id: Uuid, due: Due) -> Result<bool>;

    /// Up to `limit` pending delayed messages, soonest due first.
    async fn delayed_messages(&self, limit: i64) -> Result<Vec<DelayedMessage>>;

    /// The schedules of `endpoint` (of every endpoint when `None`) in `NimbusSchedules`, each
    /// with the database's time of the read.
    async fn schedules(&self, endpoint: Option<&str>) -> Result<ScheduleList>;

    /// Adds a schedule an endpoint declares: `false` when it had one of that name already.
    async fn declare_schedule(&self, definition: &ScheduleDefinition<'_>) -> Result<bool>;

    /// Gives a schedule a new definition: `false` when its row changed since `version`.
    async fn redefine_schedule(
        &self,
        definition: &ScheduleDefinition<'_>,
        version: i64,
    ) -> Result<bool>;

    /// Deletes a schedule: `false` when there was none.
    async fn retire_schedule(&self, endpoint: &str, name: &str) -> Result<bool>;

    /// Moves a due schedule on and sends `message` (a tick's, if any) in one transaction:
    /// `false`, with nothing sent, when another instance moved it first or it was paused.
    async fn fire_schedule(
        &self,
        firing: &ScheduleFiring<'_>,
        message: Option<OutgoingMessage>,
    ) -> Result<bool>;

    /// Sends `messages` in one transaction that first claims `key` in `scope` for `window`:
    /// `false`, with nothing sent, when the key was claimed within its window already.
    async fn send_deduplicated(
        &self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
        messages: &[OutgoingMessage],
    ) -> Result<bool>;

    /// Sends each `(key, message)` whose key is not claimed in `scope` within `window` yet, in
    /// one transaction that claims every key first: for each, whether it was sent.
    async fn send_each_deduplicated(
        &self,
        scope: &str,
        window: std::time::Duration,
        items: Vec<(String, OutgoingMessage)>,
    ) -> Result<Vec<bool>>;

    /// Pauses a schedule: `false` when it was paused already or does not exist.
    async fn pause_schedule(&self, endpoint: &str, name: &str, by: &str) -> Result<bool>;

    /// Resumes a paused schedule from `next_due`: `false` when it was not paused or does not
    /// exist.
    async fn resume_schedule(
        &self,
        endpoint: &str,
        name: &str,
        next_due: chrono::NaiveDateTime,
    ) -> Result<bool>;
}

/// The longest key `NimbusDeduplication` holds, in characters (its `Key` column is
/// `varchar(255)`).
pub(crate) const MAX_DEDUPLICATION_KEY_CHARS: usize = 255;

/// The scope of deduplication keys in `NimbusDeduplication`: `send:<queue>` for the keys of
/// sends to a queue, `inbox:<queue>` for the ids an inbox handled from it.
pub(crate) fn deduplication_scope(kind: &str, queue: &QueueName) -> String {
    format!("{kind}:{}", queue.as_str())
}

/// Rows the endpoints' maintenance deletes once they are old enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgedRows {
    /// Dead letters past the retention period.
    DeadLetters,
    /// Saga instances completed longer than `completed_sagas_kept` ago.
    CompletedSagas,
    /// Monitoring reports older than `monitoring_retention`.
    MonitoringReports,
    /// Deduplication keys (send keys, inbox ids) whose window ended.
    DeduplicationKeys,
    /// Slots of limits untouched for a while (the keys of a limit per key no longer seen).
    LimitSlots,
    /// Bodies stored apart whose message expired (its row is purged, or discarded unread).
    ExpiredBodies,
    /// Bodies stored apart for dead letters past the retention period.
    DeadLetteredBodies,
}

/// What one idle sweep removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepReport {
    /// The lapsed subscriptions deleted, as (topic, subscriber queue).
    pub subscriptions: Vec<(String, String)>,
    /// The per-instance queue tables dropped with the messages still in them.
    pub queues_dropped: Vec<String>,
}

/// Rebuilds the message a dead letter holds: `(OriginalDestination, Body) -> message`.
pub(crate) type RebuildDeadLetter = fn(&str, &[u8]) -> Result<OutgoingMessage>;

/// The open transaction of one received message. Every way of finishing it commits (the message
/// handled, retried or dead-lettered); dropping it unfinished rolls back, leaving the message in
/// its queue.
#[async_trait]
pub(crate) trait ReceiveTransaction: Send {
    /// Writes `outgoing` and commits, so that the receive and the sends happen together or not at
    /// all.
    async fn commit(self: Box<Self>, outgoing: Vec<OutgoingMessage>) -> Result<()>;

    /// Writes `letter` to `NimbusDeadLetters` (under a fresh id if one with its id is already
    /// there) and commits: the message leaves its queue and becomes a dead letter atomically.
    async fn dead_letter(self: Box<Self>, letter: DeadLetter) -> Result<()>;

    /// Like [`ReceiveTransaction::commit`] for a handler's sends, but when the database refuses
    /// one of them for good (a missing table, a value too long, a constraint), only the sends
    /// are undone (to a savepoint) and the still-open transaction comes back with the error, so
    /// the failed attempt can be recorded in it.
    async fn commit_handled(
        self: Box<Self>,
        outgoing: Vec<OutgoingMessage>,
    ) -> std::result::Result<(), CommitFailure>;

    /// Like [`ReceiveTransaction::commit_handled`], and then takes the next message of `queue`
    /// on the same connection — with the commit in one round trip where the database can
    /// pipeline them (PostgreSQL), so that a receiver going from message to message pays one
    /// round trip per message instead of two. Where it cannot, or where the handler sent
    /// messages or ran its own statements, this commits as `commit_handled` does and says
    /// [`NextReceive::NotTried`]. The caller asks only when it wants the next message (its run
    /// goes on, the endpoint is not stopping, the queue is not paused).
    async fn commit_handled_and_receive(
        self: Box<Self>,
        outgoing: Vec<OutgoingMessage>,
        queue: &QueueName,
    ) -> std::result::Result<NextReceive, CommitFailure> {
        let _ = queue;
        self.commit_handled(outgoing)
            .await
            .map(|()| NextReceive::NotTried)
    }

    /// The receive's connection, inside its open transaction, for a handler's own statements.
    /// The first call marks a savepoint, so that a failed attempt undoes the handler's
    /// statements alone ([`ReceiveTransaction::undo_handler_work`]) and its failure can still
    /// be recorded in the transaction.
    async fn handler_connection(&mut self) -> Result<&mut (dyn std::any::Any + Send)>;

    /// The body of this message that the claim check stored apart (its headers name it), read
    /// in this transaction; `None` when its body is in its row. An error when it is missing.
    async fn stored_body(&mut self) -> Result<Option<Vec<u8>>>;

    /// Reads the saga instance of `saga_type` for `correlation` in this transaction, locking
    /// its row until the transaction ends where the database can (after the handler's savepoint,
    /// so a failed attempt undoes what the saga wrote, as it undoes the handler's statements).
    async fn saga_get(&mut self, saga_type: &str, correlation: &str) -> Result<Option<SagaRow>>;

    /// Writes a saga instance's change in this transaction. Another message that started or
    /// changed the same instance first is an error of kind
    /// [`FailureKind::Transient`](crate::FailureKind): the receive rolls back and is tried
    /// again without counting an attempt, and then reads what the other committed.
    async fn saga_save(&mut self, change: SagaChange<'_>) -> Result<()>;

    /// Cancels the delayed message `id` in this transaction (after the handler's savepoint, so
    /// a failed attempt undoes it): `true` when it was still waiting. It is gone once this
    /// transaction commits; a delivery holding it is waited for.
    async fn cancel_delayed(&mut self, id: Uuid) -> Result<bool>;

    /// Claims `key` in `scope` for `window` in this transaction: `false` when it was claimed
    /// within its window already, by a transaction that committed (a claim racing this one is
    /// waited for). A failed attempt gives it back with [`ReceiveTransaction::release_key`].
    async fn claim_key(
        &mut self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
    ) -> Result<bool>;

    /// Gives back `key` of `scope`, claimed in this transaction before the handlers ran; undoes
    /// what the handler's own statements did first (a later rollback to their savepoint would
    /// bring the claim back). For a failed attempt, before its retry or dead letter is written.
    async fn release_key(&mut self, scope: &str, key: &str) -> Result<()>;

    /// Takes a slot of the limit `limit` in this transaction, before the handlers run: a
    /// concurrency limit's slot stays held until the transaction ends, a rate's stays taken for
    /// its period. Adds the slots the limit lacks in `NimbusLimits` first where needed. Says
    /// when the limit is full, with how soon its next slot is ready where the database knows.
    async fn take_limit(&mut self, limit: &LimitSlots<'_>) -> Result<LimitTaken>;

    /// Rolls back to the savepoint what the handler's own statements did; nothing if it never
    /// asked for the connection.
    async fn undo_handler_work(&mut self) -> Result<()>;

    /// How long one statement may take on this transaction's connection (the endpoint's
    /// `database_timeout`): a handler's own statements are bounded by it too.
    fn statement_deadline(&self) -> std::time::Duration;

    /// Moves the message into `NimbusLeases` under a lease of `terms` and commits: the message
    /// is out of its queue, no transaction stays open while its handler runs, and the lease
    /// (renewed while the handler runs) decides who may finish it. Not for a message of a
    /// batch, whose transaction commits only with the batch.
    async fn hold_under_lease(
        self: Box<Self>,
        message: &ReceivedMessage,
        terms: &LeaseTerms,
    ) -> Result<Arc<dyn HeldLease>>;
}

/// One limit's slots in `NimbusLimits`, as [`ReceiveTransaction::take_limit`] takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LimitSlots<'a> {
    /// The limit's scope (see `LimitSummary::scope`).
    pub scope: &'a str,
    /// How many slots it has.
    pub slots: u32,
    /// How long a taken slot stays taken: zero for a limit of handlers at once (free again
    /// when the transaction ends), the period for a rate.
    pub period: std::time::Duration,
}

/// What [`ReceiveTransaction::take_limit`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitTaken {
    /// A slot is this transaction's.
    Taken,
    /// Every slot is held or taken; `ready_in` is how soon the soonest one is ready again, where
    /// that is known (a rate's taken slot), `None` when it is held by a running handler.
    Full {
        ready_in: Option<std::time::Duration>,
    },
    /// The limit lacks slots in `NimbusLimits` (its first use, or it grew): the message waits,
    /// and [`Transport::add_limit_slots`] adds them once its transaction has ended.
    Missing,
}

/// What [`ReceiveTransaction::commit_handled_and_receive`] did after its commit.
pub(crate) enum NextReceive {
    /// Nothing: receive the next message the usual way.
    NotTried,
    /// The queue had nothing visible (that receive's transaction is committed).
    Empty,
    /// The next message, in its own open transaction.
    Taken(ReceivedMessage, Box<dyn ReceiveTransaction>),
    /// The receive failed (its connection is discarded); the commit before it stands.
    Failed(NimbusError),
}

/// What a saga handler's run changed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SagaChange<'a> {
    /// A new instance.
    Insert {
        id: Uuid,
        saga_type: &'a str,
        correlation: &'a str,
        state: &'a str,
    },
    /// A new state for the instance read at `version`.
    Update {
        id: Uuid,
        version: i64,
        state: &'a str,
    },
    /// The instance read at `version` completed, with its last state: it stays, marked
    /// completed, until the cleanup deletes it.
    Complete {
        id: Uuid,
        version: i64,
        state: &'a str,
    },
}

/// How a message is held under a lease.
#[derive(Debug, Clone)]
pub(crate) struct LeaseTerms {
    /// The queue it was received from: where it goes back if the lease expires.
    pub queue: QueueName,
    /// How long the lease lasts from each renewal (database time).
    pub duration: std::time::Duration,
    /// Who holds it (the instance), for operators.
    pub leased_by: String,
}

/// A message held under a lease ([`ReceiveTransaction::hold_under_lease`]).
#[async_trait]
pub(crate) trait HeldLease: Send + Sync {
    /// Extends the lease to its duration from now (database time); `false` when it is gone:
    /// it expired and was taken back, so the message is someone else's now.
    async fn renew(&self) -> Result<bool>;

    /// Ends the lease inside a new transaction, returned open, in which the caller records
    /// what became of the message (handled with its sends, retried, dead-lettered) and
    /// commits. `None` when the lease is gone: nothing may be committed for the message then.
    async fn end(&self) -> Result<Option<Box<dyn ReceiveTransaction>>>;
}

/// Messages taken together in one transaction ([`Transport::receive_batch`]). Each is handed
/// out in turn with its own [`ReceiveTransaction`], which works inside the batch's transaction
/// under a savepoint of its own: what one message's handling writes, sends, retries or
/// dead-letters stays with that message (a failure rolls back to its savepoint), and nothing is
/// committed until [`ReceivedBatch::commit`]. Dropped before that, everything rolls back and
/// every message of the batch is in its queue again.
#[async_trait]
pub(crate) trait ReceivedBatch: Send {
    /// How many messages the batch took.
    fn len(&self) -> usize;

    /// The next message and its part of the transaction; `None` once all were handed out.
    /// Call it only after the previous message's transaction was committed or dead-lettered.
    async fn next(&mut self) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>>;

    /// Commits what every message's handling wrote.
    async fn commit(self: Box<Self>) -> Result<()>;
}

/// What [`Transport::plan_sends`] returns: the statements to run in the application's
/// transaction — the rows, then (where the database can) the announcements that wake receivers
/// when it commits.
#[derive(Debug)]
pub(crate) struct PlannedSends {
    pub statements: Vec<Statement>,
    /// How many of them insert a message.
    pub rows: usize,
}

/// What [`Transport::maintain`] read of a queue table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableStats {
    /// Its dead rows when looked at.
    pub dead_rows: i64,
    /// The dead rows at which the server's autovacuum vacuums it; `None` when autovacuum is
    /// off for it.
    pub autovacuum_at: Option<i64>,
    /// How often autovacuum looks for work (`autovacuum_naptime`).
    pub autovacuum_naptime: std::time::Duration,
}

/// What [`Transport::maintain`] found and did.
#[derive(Debug, Clone)]
pub(crate) struct TableHealth {
    /// The table, schema-qualified.
    pub table: String,
    /// What was read of it.
    pub stats: TableStats,
    /// Its dead rows were reclaimed.
    pub vacuumed: bool,
}

/// Why [`ReceiveTransaction::commit_handled`] did not commit.
pub(crate) enum CommitFailure {
    /// A send the database refuses for good: the sends are undone, the receive's transaction is
    /// open again and comes back.
    Refused(NimbusError, Box<dyn ReceiveTransaction>),
    /// Anything else (the connection, a timeout): everything is rolled back, the message is
    /// where it was.
    Failed(NimbusError),
}

impl TransportSettings {
    /// What the bus asks of the process's connection budget for its database.
    #[cfg(any(feature = "postgres", feature = "sqlserver"))]
    fn budget_request(&self, default_limit: usize) -> crate::driver::budget::Request {
        crate::driver::budget::Request {
            limit: self.connection_limit,
            concurrency: self.pool_size.saturating_sub(2),
            default_limit,
        }
    }
}

/// Connects to the database of `settings`: builds the driver's pool, opens one connection (so
/// an unreachable server or a refused login fails here, naming the server), and returns the
/// transport over it.
pub(crate) async fn connect(settings: TransportSettings) -> Result<Arc<dyn Admin>> {
    match &settings.database {
        #[cfg(feature = "sqlite")]
        DatabaseUrl::Sqlite { path } => {
            let driver = crate::driver::sqlite::SqliteDriver::open(path)
                .await
                .map_err(|e| {
                    NimbusError::connect(
                        crate::sql::SQLITE.name,
                        path.display().to_string(),
                        "check that the directory exists and is writable, and that the file is \
                         an SQLite database",
                        e,
                    )
                })?;
            Ok(SqlTransport::start(driver, settings).await?)
        }
        #[cfg(feature = "postgres")]
        DatabaseUrl::Postgres {
            config,
            target,
            tls,
            pooling,
        } => {
            // Reads sslrootcert or the platform's roots now: a bad file fails before connecting.
            let connector = tls.connector()?;
            let driver = crate::driver::postgres::PostgresDriver::new(
                (**config).clone(),
                target.clone(),
                settings.pool_size,
                settings.budget_request(crate::driver::budget::DEFAULT_CONNECTION_LIMIT),
                tls.clone(),
                pooling.clone(),
                connector,
            )?;
            Ok(SqlTransport::start(driver, settings).await?)
        }
        #[cfg(feature = "sqlserver")]
        DatabaseUrl::SqlServer { settings: conn } => {
            let driver = crate::driver::sqlserver::SqlServerDriver::new(
                (**conn).clone(),
                settings.pool_size,
                settings.budget_request(
                    conn.max_pool_size
                        .unwrap_or(crate::driver::budget::SQLSERVER_DEFAULT_CONNECTION_LIMIT),
                ),
            )?;
            Ok(SqlTransport::start(driver, settings).await?)
        }
    }
}

#[cfg(all(test, feature = "sqlite", feature = "postgres", feature = "sqlserver"))]
mod tests {
    use super::*;
    use crate::sql::{POSTGRES, SQLITE, SQLSERVER};

    #[test]
    fn nservicebus_postgresql_shape_exists_only_on_postgres() {
        let layout = StorageLayout::NServiceBusPostgreSql;
        assert!(check_layout(&POSTGRES, layout).is_ok());
        let sql_server = check_layout(&SQLSERVER, layout).unwrap_err().to_string();
        assert!(sql_server.contains("TablePerQueue"), "{sql_server}");
        assert!(sql_server.contains("SQL Server transport"), "{sql_server}");
        assert!(check_layout(&SQLITE, layout).is_err());
        for other in [StorageLayout::TablePerQueue, StorageLayout::SharedTable] {
            assert!(check_layout(&SQLITE, other).is_ok());
            assert!(check_layout(&SQLSERVER, other).is_ok());
        }
    }

    #[test]
    fn the_layout_is_named_in_settings_as_users_write_it() {
        #[derive(serde::Deserialize)]
        struct Settings {
            layout: StorageLayout,
        }
        let settings: Settings =
            serde_json::from_str(r#"{"layout": "nservicebus_postgresql"}"#).unwrap();
        assert_eq!(settings.layout, StorageLayout::NServiceBusPostgreSql);
    }
}

/// An event published while nothing subscribed to it; logged at INFO the first time per type in
/// this process.
pub(crate) fn published_to_nobody(message_type: &str) {
    metrics::counter!(
        "nimbus_published_to_no_subscriber_total",
        "message_type" => message_type.to_string()
    )
    .increment(1);
    static SEEN: std::sync::Mutex<Option<std::collections::BTreeSet<String>>> =
        std::sync::Mutex::new(None);
    let first = SEEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(std::collections::BTreeSet::new)
        .insert(message_type.to_string());
    if first {
        tracing::info!(
            message_type,
            "an event was published while nothing subscribes to it: no copy was written (an \
             endpoint that handles it subscribes when it starts; events published before then \
             are not delivered). Said once per type; nimbus_published_to_no_subscriber_total \
             counts them"
        );
    }
}
