//! The bus builder: every setting, checked when [`BusBuilder::build`] runs, so that a bad
//! configuration fails before anything starts and says what to change.
//!
//! This file is over 1,000 lines because it has one method per setting, each with the documentation
//! users read, and `build()`'s checks beside the settings they check.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::envelope::EndpointIdentity;
use crate::error::{NimbusError, Result};
use crate::message::{Command, Message};
use crate::names::{QueueName, SchemaName};
use crate::pipeline::batch_size::ReceiveBatching;
use crate::pipeline::config::{CriticalErrorCallback, EndpointConfig};
use crate::pipeline::handler::{
    BlockingHandler, Handler, HandlerRegistry, Routes, SubscriptionMode,
};
use crate::pipeline::lease::{Lease, Leases};
use crate::recoverability::RetryPolicy;
use crate::subscriptions::{DEFAULT_AUTO_DELETE_ON_IDLE, MIN_AUTO_DELETE_ON_IDLE};
use crate::transport::instances::host_name;
use crate::transport::{DatabaseUrl, StorageLayout};

/// The database used when the builder is given none: a file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://nimbus.db";
/// How long a receiver waits before looking again at an empty queue, unless configured.
pub const DEFAULT_PEEK_DELAY: Duration = Duration::from_secs(1);
/// The shortest peek delay accepted: less puts needless load on the database.
pub const MIN_PEEK_DELAY: Duration = Duration::from_millis(100);

/// How often, by default, an idle receiver looks for other processes' messages on a database
/// that cannot announce them (see [`BusBuilder::idle_poll`]).
pub const DEFAULT_IDLE_POLL: Duration = Duration::from_millis(10);
/// Peek delays above this are accepted with a warning: messages may back up.
pub const MAX_RECOMMENDED_PEEK_DELAY: Duration = Duration::from_secs(10);
/// How long a handler may run before the attempt counts as failed, unless configured.
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(60);
/// How often expired messages are purged, unless configured (NServiceBus: 5 minutes).
/// How often queue tables are checked for dead rows by default (PostgreSQL).
pub const DEFAULT_TABLE_MAINTENANCE_INTERVAL: Duration = Duration::from_secs(30);
pub const DEFAULT_PURGE_INTERVAL: Duration = Duration::from_secs(300);
/// How many expired messages one purge statement deletes, unless configured (NServiceBus: 10000).
pub const DEFAULT_PURGE_BATCH_SIZE: i64 = 10_000;
/// How long the database may fail before the critical-error callback fires, unless configured
/// (NServiceBus: 2 minutes).
pub const DEFAULT_CRITICAL_ERROR_AFTER: Duration = Duration::from_secs(120);
/// How long `Bus::request` waits for the reply, unless configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a running bus refreshes its row in `NimbusInstances`, unless configured: an
/// instance that misses three heartbeats in a row shows as "not responding".
pub const DEFAULT_INSTANCE_HEARTBEAT: Duration = Duration::from_secs(5);
/// How long dead letters are kept, unless configured: older ones are deleted by the endpoints'
/// maintenance (about hourly).
pub const DEFAULT_DEAD_LETTER_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// The shortest dead-letter retention accepted.
pub const MIN_DEAD_LETTER_RETENTION: Duration = Duration::from_secs(60);
/// How long a completed saga instance is kept, unless configured, so that a message of it that
/// comes late finds it completed instead of starting it again.
pub const DEFAULT_COMPLETED_SAGAS_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The largest message body (as JSON) a bus sends, unless configured: 16 MiB.
pub const DEFAULT_MAX_BODY_SIZE: usize = 16 * 1024 * 1024;
/// How often a receiving bus writes its monitoring report (a row per queue in
/// `NimbusMonitoring`, one statement), unless configured.
pub const DEFAULT_MONITORING_INTERVAL: Duration = Duration::from_secs(10);
/// How long monitoring reports are kept, unless configured: the console's longest window.
pub const DEFAULT_MONITORING_RETENTION: Duration = Duration::from_secs(6 * 3600);
/// How long a pooled connection nobody takes stays open, unless configured.
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The shortest instance heartbeat interval accepted.
pub const MIN_INSTANCE_HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a send's deduplication key is remembered unless
/// [`BusBuilder::deduplication_window`] says otherwise: a day.
pub const DEFAULT_DEDUPLICATION_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// The shortest deduplication window or inbox window accepted.
pub const MIN_DEDUPLICATION_WINDOW: Duration = Duration::from_secs(1);
pub use crate::driver::DEFAULT_DATABASE_TIMEOUT;

/// Builds a bus. Start from [`crate::Bus::builder`].
///
/// ```
/// use std::time::Duration;
/// let endpoint = nimbus::Bus::builder()
///     .names("Sales", "sales-1")
///     .database_url("sqlite://sales.db")
///     .peek_delay(Duration::from_millis(250))
///     .concurrency(4)
///     .build()
///     .expect("valid configuration");
/// assert_eq!(endpoint.input_queue(), "Sales");
/// ```
#[must_use = "a builder does nothing until build() and start() are called"]
pub struct BusBuilder {
    application: Option<String>,
    instance: Option<String>,
    database_url: String,
    schema: Option<String>,
    auto_create_schema: bool,
    peek_delay: Duration,
    idle_poll: Duration,
    concurrency: usize,
    /// `None`: the default for the database (see [`BusBuilder::handler_threads`]).
    handler_threads: Option<usize>,
    /// `None`: the concurrency limit (see [`BusBuilder::blocking_threads`]).
    blocking_threads: Option<usize>,
    /// `None`: adaptive (see [`BusBuilder::receive_batch`]).
    receive_batch: Option<usize>,
    fill_v1_columns: bool,
    body_string_column: Option<crate::BodyStringColumn>,
    retry: RetryPolicy,
    handler_timeout: Duration,
    purge_interval: Duration,
    purge_batch_size: i64,
    table_maintenance_interval: Duration,
    critical_error_after: Duration,
    on_critical_error: Option<CriticalErrorCallback>,
    auto_delete_on_idle: Duration,
    request_timeout: Duration,
    database_timeout: Duration,
    create_queues_on_send: bool,
    shared_commits: bool,
    nservicebus_subscriptions: Option<String>,
    requests: bool,
    layout: StorageLayout,
    routes: Vec<(&'static str, String)>,
    schedules: Vec<crate::Schedule>,
    inbox: Option<Duration>,
    ordered_groups: bool,
    priorities: bool,
    deduplication_window: Duration,
    handlers: HandlerRegistry,
    leases: Leases,
    limits: crate::pipeline::limits::Limits,
    /// Some handlers are sagas.
    sagas: bool,
    /// The message types sagas handle (their timeouts included).
    saga_types: Vec<&'static str>,
    instance_heartbeat: Duration,
    share_instance_name: bool,
    dead_letter_retention: Option<Duration>,
    monitoring_interval: Option<Duration>,
    monitoring_retention: Duration,
    connection_idle_timeout: Duration,
    connection_limit: Option<usize>,
    max_body_size: usize,
    body_compression: Option<crate::BodyCompression>,
    body_encryption: Option<crate::BodyEncryption>,
    pub(crate) claim_check: Option<crate::ClaimCheck>,
    completed_sagas_kept: Duration,
    #[cfg(feature = "sqlserver")]
    sql_server_token: Option<crate::SqlServerToken>,
}

impl Default for BusBuilder {
    fn default() -> Self {
        BusBuilder {
            application: None,
            instance: None,
            database_url: DEFAULT_DATABASE_URL.to_string(),
            schema: None,
            auto_create_schema: true,
            peek_delay: DEFAULT_PEEK_DELAY,
            idle_poll: DEFAULT_IDLE_POLL,
            concurrency: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .max(2),
            handler_threads: None,
            blocking_threads: None,
            receive_batch: None,
            fill_v1_columns: false,
            body_string_column: None,
            retry: RetryPolicy::default(),
            handler_timeout: DEFAULT_HANDLER_TIMEOUT,
            purge_interval: DEFAULT_PURGE_INTERVAL,
            table_maintenance_interval: DEFAULT_TABLE_MAINTENANCE_INTERVAL,
            purge_batch_size: DEFAULT_PURGE_BATCH_SIZE,
            critical_error_after: DEFAULT_CRITICAL_ERROR_AFTER,
            on_critical_error: None,
            auto_delete_on_idle: DEFAULT_AUTO_DELETE_ON_IDLE,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            database_timeout: DEFAULT_DATABASE_TIMEOUT,
            create_queues_on_send: false,
            shared_commits: true,
            nservicebus_subscriptions: None,
            requests: false,
            layout: StorageLayout::TablePerQueue,
            routes: Vec::new(),
            schedules: Vec::new(),
            inbox: None,
            ordered_groups: false,
            priorities: false,
            deduplication_window: DEFAULT_DEDUPLICATION_WINDOW,
            handlers: HandlerRegistry::default(),
            leases: Leases::default(),
            limits: Default::default(),
            sagas: false,
            saga_types: Vec::new(),
            instance_heartbeat: DEFAULT_INSTANCE_HEARTBEAT,
            share_instance_name: false,
            dead_letter_retention: Some(DEFAULT_DEAD_LETTER_RETENTION),
            monitoring_interval: Some(DEFAULT_MONITORING_INTERVAL),
            monitoring_retention: DEFAULT_MONITORING_RETENTION,
            connection_idle_timeout: DEFAULT_CONNECTION_IDLE_TIMEOUT,
            connection_limit: None,
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            body_compression: None,
            body_encryption: None,
            claim_check: None,
            completed_sagas_kept: DEFAULT_COMPLETED_SAGAS_KEPT,
            #[cfg(feature = "sqlserver")]
            sql_server_token: None,
        }
    }
}

impl std::fmt::Debug for BusBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusBuilder")
            .field("application", &self.application)
            .field("instance", &self.instance)
            .field("schema", &self.schema)
            .field("layout", &self.layout)
            .field("concurrency", &self.concurrency)
            .field("handler_threads", &self.handler_threads)
            .field("blocking_threads", &self.blocking_threads)
            .field("peek_delay", &self.peek_delay)
            .field("idle_poll", &self.idle_poll)
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

impl crate::endpoint::bus::Bus {
    /// A new builder. See [`BusBuilder`].
    pub fn builder() -> BusBuilder {
        BusBuilder::default()
    }
}

impl BusBuilder {
    /// The application name (it is also the endpoint's input queue); this instance is named
    /// after the host it runs on ([`host_name`]), as NServiceBus names instances after the
    /// machine. Each process needs an instance name of its own: run several processes of one
    /// application on one host with [`names`](Self::names) instead.
    ///
    /// ```
    /// let endpoint = nimbus::Bus::builder()
    ///     .application("Sales")
    ///     .database_url("sqlite://sales.db")
    ///     .build()
    ///     .expect("valid configuration");
    /// assert_eq!(endpoint.instance_name(), nimbus::host_name());
    /// ```
    pub fn application(mut self, application: impl Into<String>) -> Self {
        self.application = Some(application.into());
        self.instance = Some(host_name());
        self
    }

    /// The application name (it is also the endpoint's input queue) and this instance's name,
    /// which no other live process may use (a start with the name of a live instance fails,
    /// naming the other process) unless both allow it with
    /// [`share_instance_name`](Self::share_instance_name). Required, or
    /// [`application`](Self::application).
    pub fn names(mut self, application: impl Into<String>, instance: impl Into<String>) -> Self {
        self.application = Some(application.into());
        self.instance = Some(instance.into());
        self
    }

    /// Where the queues live: `sqlite://path` (the default, `sqlite://nimbus.db`),
    /// `postgres://user@host:port/database`, or for SQL Server an ADO.NET connection string
    /// (`Server=tcp:host,1433;Database=Orders;User Id=app;Password=…;TrustServerCertificate=true`).
    pub fn database_url(mut self, url: impl Into<String>) -> Self {
        self.database_url = url.into();
        self
    }

    /// SQL Server and Azure SQL: log in with Microsoft Entra ID (Azure AD) access tokens from
    /// `token`, asked for a fresh one for every new connection. The connection string names no
    /// SQL login (no `User Id`/`Password`, no `Integrated Security`), or says
    /// `Authentication=ActiveDirectoryDefault` (or another `ActiveDirectory…` mode, which Nimbus
    /// leaves to the provider). See [`crate::SqlServerToken`].
    #[cfg(feature = "sqlserver")]
    pub fn sql_server_token(mut self, token: crate::SqlServerToken) -> Self {
        self.sql_server_token = Some(token);
        self
    }

    /// The database schema for every table (PostgreSQL default `public`, SQL Server `dbo`; SQLite
    /// has only `main`).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Create missing tables at start (default on). Idempotent and safe with several instances
    /// starting at once. When off, start checks that the tables exist and names the statement to
    /// run if one does not.
    pub fn auto_create_schema(mut self, enabled: bool) -> Self {
        self.auto_create_schema = enabled;
        self
    }

    /// How long to wait before looking again at an empty queue (default 1 s). Under 100 ms is a
    /// configuration error; over 10 s is accepted with a warning.
    pub fn peek_delay(mut self, delay: Duration) -> Self {
        self.peek_delay = delay;
        self
    }

    /// On a database that cannot tell this process that another one sent a message (SQL Server
    /// and Azure SQL; PostgreSQL announces sends with LISTEN/NOTIFY and SQLite's file shows
    /// every commit), how often the idle queues are looked at for what other processes sent
    /// (default 10 ms, so such a message waits milliseconds, not up to the peek delay). One
    /// statement per database and process watches every idle queue of the process's buses at
    /// once, on one pooled connection: it looks (an index seek per queue that skips locked
    /// rows) every `idle_poll`, with `WAITFOR DELAY` between looks, for up to 250 ms, and wakes
    /// the receivers of the queues that got a message — four round trips a second for the whole
    /// process, however many endpoints it runs, and no lock held between looks. A queue that
    /// goes idle is watched from the next statement on (at most 250 ms later); until then, and
    /// whenever the watch fails (logged), its peeks every peek delay find its messages. Where
    /// the server has no `WAITFOR` (Babelfish for PostgreSQL), the statement is one look over
    /// every idle queue, repeated from the client every `idle_poll` at first and up to 250 ms
    /// apart while nothing comes (said once in the log). On PostgreSQL through a pooler with
    /// nowhere to LISTEN (`pooler=transaction` without `listen_host`), each idle queue peeks
    /// instead, one round trip per look: every `idle_poll` at first, each empty look doubling
    /// the wait up to 1 s (or the peek delay, if shorter); a message found, or a send from this
    /// process, starts again from `idle_poll`. `Duration::ZERO` leaves idle queues to the peek
    /// delay. Sends from this process wake its receivers at once whatever this says.
    pub fn idle_poll(mut self, every: Duration) -> Self {
        self.idle_poll = every;
        self
    }

    /// How many messages the endpoint handles at once, across all of its queues (its input
    /// queue and its instance queue share the limit, as in NServiceBus; default: the number of
    /// CPUs, at least 2). A slot freed by one handler goes to the next waiting message at once,
    /// whatever its queue. On SQLite a receive holds the database's write lock, so handlers run
    /// one at a time there.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit;
        self
    }

    /// How many messages a receiver takes in one transaction, always (from 1 to 1,000).
    ///
    /// **By default the size adapts:** a receiver takes one message per transaction while its
    /// queue is shallow or its handlers are slow, and up to 32 at once while a backlog of fast
    /// messages waits. The size doubles after a transaction that found more waiting and took
    /// less than about 10 ms, and shrinks after a slower one to what would have fit in that
    /// time. A receive that finds a single message halves it; a failed handler or a database
    /// error brings it back to one. Endpoints with sagas or leases always take one, and so does
    /// a queue once one of its handlers runs statements of its own in the receive's transaction
    /// (`ctx.postgres()`, `ctx.sql_server()`, `ctx.sqlite(..)`): several messages in one
    /// transaction would take their row locks in orders that deadlock with other receivers'
    /// (handlers updating a few shared rows ran 2–6 times slower batched than one at a time).
    /// A batch that gives way to another transaction anyway (a deadlock, a serialization
    /// failure) holds its queue at one message per transaction for 10 s, doubling up to 320 s
    /// while batches keep colliding.
    ///
    /// Above 1, a receiver takes up to that many at once and handles each under its own
    /// savepoint: what a handler writes and sends, and a failed attempt's retry or dead letter,
    /// still go with its own message, but the batch commits once, so its messages are handled
    /// (and visible as handled) only when the last of them is, their rows stay locked that
    /// long, and a crash or lost connection returns the whole batch to the queue. It trades
    /// latency for throughput (one receive statement and one commit instead of N). The batch's
    /// messages are handled one after the other on one handler thread (one hand-off per batch,
    /// not per message). Every database.
    ///
    /// `receive_batch(1)` takes one message per transaction whatever the backlog: for handlers
    /// that are usually fast but sometimes wait long (on a lock, say), whose slow message would
    /// hold up the messages taken with it.
    pub fn receive_batch(mut self, messages: usize) -> Self {
        self.receive_batch = Some(messages);
        self
    }

    /// How often the endpoint looks at the dead rows of its queue tables and reclaims them
    /// (PostgreSQL's `VACUUM`, once a table has 1,000 or more), so that receives stay fast
    /// whatever the server's autovacuum settings (default 30 s; `Duration::ZERO` turns it off,
    /// leaving it to autovacuum). SQLite and SQL Server need no such care.
    pub fn table_maintenance_interval(mut self, interval: Duration) -> Self {
        self.table_maintenance_interval = interval;
        self
    }

    /// How many threads receive messages and run their async handlers (default: the number of
    /// CPUs; on SQLite 1, since its one writer runs handlers one at a time anyway). The
    /// receivers are spread over them, each thread with its own handler actors and its own
    /// connections, so a message is received, handled and committed on one thread; a
    /// CPU-heavy handler holds one thread, not the whole endpoint (new work goes to the others);
    /// `1` runs everything on the bus's own thread. For blocking work, register a
    /// [`BlockingHandler`] (see [`blocking_handler`](Self::blocking_handler)), or use
    /// `tokio::task::spawn_blocking` inside an async handler.
    pub fn handler_threads(mut self, threads: usize) -> Self {
        self.handler_threads = Some(threads);
        self
    }

    /// How many threads run [`BlockingHandler`]s (default: the concurrency limit, so a blocking
    /// handler never waits for a thread while the endpoint has a free slot). The pool exists
    /// only when a blocking handler is registered.
    pub fn blocking_threads(mut self, threads: usize) -> Self {
        self.blocking_threads = Some(threads);
        self
    }

    /// Also write the `CorrelationId` and `ReplyToAddress` columns, for receivers that run
    /// NServiceBus SQL Server transport version 1 (default off: the columns are NULL and the
    /// values travel in the headers).
    pub fn fill_v1_columns(mut self, enabled: bool) -> Self {
        self.fill_v1_columns = enabled;
        self
    }

    /// On SQL Server, add the computed column `BodyString` to every queue table auto-create
    /// makes or finds, defined as NServiceBus defines it (`CreateMessageBodyComputedColumn`:
    /// `CAST(Body AS nvarchar(max))`, which reads UTF-8 bodies as UTF-16, i.e. not as their
    /// text); `false` adds none (the default). For a column that reads as the body's text use
    /// [`BusBuilder::body_string_column`] with [`crate::BodyStringColumn::Text`]. Not supported
    /// on PostgreSQL and SQLite.
    pub fn create_body_string_column(mut self, enabled: bool) -> Self {
        self.body_string_column = enabled.then_some(crate::BodyStringColumn::NServiceBus);
        self
    }

    /// On SQL Server, add the computed column `BodyString` to every queue table auto-create
    /// makes or finds, in the form given (see [`crate::BodyStringColumn`]: `Text` reads as the
    /// body's text, `NServiceBus` is NServiceBus's definition for shared tables). A table that
    /// already has a `BodyString` keeps it as it is. Not supported on PostgreSQL and SQLite.
    pub fn body_string_column(mut self, form: crate::BodyStringColumn) -> Self {
        self.body_string_column = Some(form);
        self
    }

    /// How many times a failed message is retried at once before delayed retries begin
    /// (default 5; 0 allowed).
    pub fn immediate_retries(mut self, count: u32) -> Self {
        self.retry.immediate = count;
        self
    }

    /// How many delayed retries follow the immediate ones, and the delay increment: the n-th
    /// delayed retry waits n × `increment` (default 3 retries, 10 s: 10 s, 20 s, 30 s; 0 allowed).
    /// After them the message moves to `NimbusDeadLetters`, having been tried
    /// 1 + immediate + delayed times. Counts live in the message's headers and survive restarts.
    pub fn delayed_retries(mut self, count: u32, increment: Duration) -> Self {
        self.retry.delayed = count;
        self.retry.delayed_increment = increment;
        self
    }

    /// The delayed-retry count and increment set so far.
    pub(crate) fn delayed_retry_policy(&self) -> (u32, Duration) {
        (self.retry.delayed, self.retry.delayed_increment)
    }

    /// How long one handler may run before the attempt counts as failed (default 60 s). The
    /// receive's transaction stays open meanwhile.
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// How often expired messages are purged from the received queues, and how many rows one
    /// statement deletes (default every 5 minutes, 10,000 rows).
    pub fn expiry_purge(mut self, interval: Duration, batch_size: u32) -> Self {
        self.purge_interval = interval;
        self.purge_batch_size = i64::from(batch_size);
        self
    }

    /// How long the database may keep failing (receivers back off and retry by themselves
    /// meanwhile) before the critical-error callback fires (default 2 minutes). Counted from
    /// when it stopped answering: a call that gave up after `database_timeout` counts from when
    /// it was sent.
    pub fn critical_error_after(mut self, outage: Duration) -> Self {
        self.critical_error_after = outage;
        self
    }

    /// Called when the database has been failing longer than
    /// [`critical_error_after`](Self::critical_error_after), for example to alert or to stop the
    /// process. The endpoint keeps retrying either way.
    pub fn on_critical_error(
        mut self,
        callback: impl Fn(&NimbusError) + Send + Sync + 'static,
    ) -> Self {
        self.on_critical_error = Some(Arc::new(callback));
        self
    }

    /// How long a subscription may go without a heartbeat before it counts as gone: publishers
    /// skip it and the idle sweep deletes it, with its instance queue and the messages still in
    /// it. Default 4 days; less than 5 minutes is a configuration error. Heartbeats run every
    /// quarter of it (at most hourly), sweeps every half (at most hourly); see
    /// [`crate::subscriptions`].
    pub fn auto_delete_on_idle(mut self, idle: Duration) -> Self {
        self.auto_delete_on_idle = idle;
        self
    }

    /// How queues are stored: a table per queue (the default), the shared `NimbusMessages`
    /// table of seed 003, or (PostgreSQL) a table per queue in the shape NServiceBus's
    /// PostgreSQL transport uses, so that NServiceBus endpoints share the queues. Endpoints that
    /// exchange messages must use the same layout.
    pub fn storage_layout(mut self, layout: StorageLayout) -> Self {
        self.layout = layout;
        self
    }

    /// How often the bus refreshes its row in `NimbusInstances` (default 5 s, at least 1 s): one
    /// `UPDATE` per interval. An instance that misses three heartbeats in a row shows as "not
    /// responding" in `nimbus instances` and the console, and no longer holds its name.
    pub fn instance_heartbeat(mut self, every: Duration) -> Self {
        self.instance_heartbeat = every;
        self
    }

    /// How long dead letters are kept (default 30 days, at least a minute): every receiving
    /// endpoint deletes older ones (by `FailedAt`, database time) in batches of the
    /// `expiry_purge` size with its idle sweep, at start and then about hourly, and logs how
    /// many at `INFO`. `None` keeps them until someone replays or purges them
    /// (`nimbus dead-letters purge --older-than 30days`).
    pub fn dead_letter_retention(mut self, retention: Option<Duration>) -> Self {
        self.dead_letter_retention = retention;
        self
    }

    /// How often a receiving bus writes what it handled into `NimbusMonitoring` (default 10 s,
    /// at least 1 s): one row per queue it receives from, in one statement, with the messages
    /// handled, failed, retried and dead-lettered in the period, the processing time (its
    /// handlers' run) and critical time (from the sender's `TimeSent` to handled) as
    /// histograms, and the queue's length. The console's Monitoring page draws its charts from
    /// these rows, for every instance at once. `None` writes none.
    pub fn monitoring_interval(mut self, every: Option<Duration>) -> Self {
        self.monitoring_interval = every;
        self
    }

    /// How long monitoring reports are kept (default 6 hours, the console's longest window; at
    /// least a minute): receiving endpoints delete older ones with their idle sweep, at start
    /// and then about hourly. Each report row is a few hundred bytes: an instance receiving
    /// from two queues writes about 4,300 rows in 6 hours at the default interval.
    pub fn monitoring_retention(mut self, kept: Duration) -> Self {
        self.monitoring_retention = kept;
        self
    }

    /// How long a pooled connection nobody takes stays open (default 60 s, at least 1 s): an
    /// endpoint that went quiet closes the connections a busy spell opened (up to
    /// `concurrency` + 2 on PostgreSQL and SQL Server) and keeps only what its idle work uses —
    /// the peeks, the heartbeats — instead of holding a full pool against the server's
    /// `max_connections` for ever. Checked about every `timeout / 2` (at most every 30 s).
    pub fn connection_idle_timeout(mut self, timeout: Duration) -> Self {
        self.connection_idle_timeout = timeout;
        self
    }

    /// The most connections this process opens to the bus's database (PostgreSQL and SQL
    /// Server; at least 1). Every bus of the process given the same database URL shares one
    /// budget. When every connection of the budget is in use, a receiver or a send waits for
    /// one — it does not fail — while the pools close connections unused for 250 ms for it;
    /// waits are counted in `nimbus_connection_waits_total` and
    /// `nimbus_connection_wait_seconds`, and one of over 5 s is logged. Buses that set it must
    /// set the same number (`build()` says which differ). SQLite opens its own few connections
    /// per file and takes no budget.
    ///
    /// The default is 20 on PostgreSQL (well under the server's default `max_connections`,
    /// which every client shares) and, on SQL Server, the connection string's `Max Pool Size`
    /// or 100 (ADO.NET's default); or the largest `concurrency` among the process's buses on
    /// the database plus 4 where that is more. The buses also share one pool for their work outside
    /// handler threads (peeks, heartbeats, sends from outside handlers) and one way of hearing
    /// other processes' sends: on PostgreSQL a wake-up listener, which is not counted; on SQL
    /// Server one statement that watches every idle queue of the process (see
    /// [`idle_poll`](Self::idle_poll)), on one connection of the shared pool.
    ///
    /// ```
    /// # #[cfg(feature = "postgres")]
    /// # fn main() -> nimbus::Result<()> {
    /// // Ten endpoints like this one in a process hold at most 40 connections together.
    /// let endpoint = nimbus::Bus::builder()
    ///     .application("Sales")
    ///     .database_url("postgres://app@db.internal/shop")
    ///     .concurrency(8)
    ///     .connection_limit(40)
    ///     .build()?;
    /// # let _ = endpoint;
    /// # Ok(()) }
    /// # #[cfg(not(feature = "postgres"))]
    /// # fn main() {}
    /// ```
    pub fn connection_limit(mut self, connections: usize) -> Self {
        self.connection_limit = Some(connections);
        self
    }

    /// How long a completed saga instance stays in `NimbusSagas`, marked completed (default 7
    /// days, at least a minute): a message of it that comes later (a replayed dead letter, a
    /// process that sent it late) finds it completed and is ignored, counted in
    /// `nimbus_saga_messages_after_completion_total`, instead of starting a new instance that
    /// would wait for ever. Endpoints with sagas delete older ones with their idle sweep.
    pub fn completed_sagas_kept(mut self, kept: Duration) -> Self {
        self.completed_sagas_kept = kept;
        self
    }

    /// The largest body, in bytes of JSON, a send of this bus writes (default 16 MiB): a larger
    /// message is refused with `NimbusError::MessageTooLarge` before anything is written (a
    /// handler's send fails its attempt). Every row is read whole into memory by its receiver,
    /// so a body of hundreds of megabytes costs that much memory on both sides; keep such data
    /// elsewhere and send its key.
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = bytes;
        self
    }

    /// Compresses the bodies this bus sends (see [`BodyCompression`](crate::BodyCompression)):
    /// gzip (or zstd, with the `zstd` feature), for bodies of at least 1,024 bytes by default, of
    /// every type or of those named. Compression comes before encryption. Every Nimbus receiver
    /// reads gzip bodies, whether or not it compresses its own, and zstd bodies when built with
    /// the `zstd` feature; NServiceBus receivers read neither.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct Report { lines: Vec<String> }
    /// let builder = nimbus::Bus::builder()
    ///     .names("Reports", "reports-1")
    ///     .body_compression(nimbus::BodyCompression::gzip().only::<Report>());
    /// ```
    pub fn body_compression(mut self, compression: crate::BodyCompression) -> Self {
        self.body_compression = Some(compression);
        self
    }

    /// Encrypts the bodies this bus sends and decrypts the ones it receives with AES-256-GCM
    /// (see [`BodyEncryption`](crate::BodyEncryption)): every type's, or those named, with the
    /// current key; older keys only decrypt, so keys can rotate. A message this endpoint cannot
    /// decrypt (a key id it lacks, a changed body) goes to the dead letters with the reason, as
    /// it came: give the endpoint the key and replay it.
    ///
    /// ```no_run
    /// # fn key_from_your_secret_store(_: &str) -> String { String::new() }
    /// # fn run() -> nimbus::Result<()> {
    /// let keys = nimbus::BodyEncryption::from_base64("2026-12", &key_from_your_secret_store("2026-12"))?;
    /// let builder = nimbus::Bus::builder()
    ///     .names("Payments", "payments-1")
    ///     .body_encryption(keys);
    /// # Ok(()) }
    /// ```
    pub fn body_encryption(mut self, encryption: crate::BodyEncryption) -> Self {
        self.body_encryption = Some(encryption);
        self
    }

    /// Which bodies this bus stores apart from their queue rows (see
    /// [`ClaimCheck`](crate::ClaimCheck)). By default bodies above 1 MiB (as written, after
    /// compression and encryption) go to the table `NimbusBodies` of the same database, in the
    /// send's transaction, and are fetched when their message is handled; with NServiceBus's
    /// PostgreSQL table shape the default is [`ClaimCheck::off`](crate::ClaimCheck::off), because
    /// NServiceBus endpoints do not read bodies stored apart. Every Nimbus receiver reads them,
    /// whatever its own setting.
    ///
    /// ```no_run
    /// let builder = nimbus::Bus::builder()
    ///     .names("Archive", "archive-1")
    ///     .claim_check(nimbus::ClaimCheck::in_database().above(256 * 1024));
    /// ```
    pub fn claim_check(mut self, claim_check: crate::ClaimCheck) -> Self {
        self.claim_check = Some(claim_check);
        self
    }

    /// Lets other live processes start with this bus's application and instance name (each of
    /// them must allow it too); refused by default, because processes sharing a name share its
    /// instance queue: a reply to a request can reach the process that did not ask, and
    /// multicast events reach only one of them.
    pub fn share_instance_name(mut self, share: bool) -> Self {
        self.share_instance_name = share;
        self
    }

    /// Gives this instance its own queue (`Application.instance`) for replies, so that
    /// [`Bus::request`](crate::Bus::request) works. Endpoints with multicast handlers have one
    /// anyway.
    pub fn enable_requests(mut self) -> Self {
        self.requests = true;
        self
    }

    /// How long [`Bus::request`](crate::Bus::request) waits for a reply (default 30 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Lets `send` (and a handler's `ctx.send`) create the queue it names when no endpoint has
    /// made it yet (default off). Off, such a send fails with [`NimbusError::UnknownQueue`],
    /// naming the closest existing queues: a typo (`"Billling"`, `"billing"` for `"Billing"`)
    /// is an error, not a message stranded where nobody reads. Queues compare as the database
    /// compares them: exactly, case included, on PostgreSQL and SQLite; regardless of case on
    /// SQL Server, where `"billing"` is the queue `"Billing"` (its default collations make them
    /// one table). Publishes always reach their subscribers' queues.
    pub fn create_queues_on_send(mut self, create: bool) -> Self {
        self.create_queues_on_send = create;
        self
    }

    /// Whether the application's sends (`Bus::send`, `publish`, `send_batch`, `send_with`,
    /// `request`) that arrive while another of this bus's sends is being written wait for it
    /// and then commit together, in one transaction with one multi-row statement per queue
    /// (default on). A lone send waits for nothing. Each send still returns only once its own
    /// rows have committed: a shared write refused for good (an unknown queue) is written again
    /// send by send, so only the faulty send fails; one that fails in a way that may pass (a
    /// lost connection) fails every send in it. Off, every send has a transaction of its own;
    /// [`SendOptions::own_transaction`](crate::SendOptions::own_transaction) asks that for one
    /// send. Sends through a handler's context commit with its receive either way.
    pub fn shared_commits(mut self, on: bool) -> Self {
        self.shared_commits = on;
        self
    }

    /// Shares subscriptions with NServiceBus endpoints through their subscription table
    /// (NServiceBus's default: `SubscriptionRouting`, in the bus's schema; an address such as
    /// `SubscriptionRouting@[nsb]` names another schema). Events this bus publishes then also
    /// reach every queue subscribed there (NServiceBus's topics are the events' type names, as
    /// here), and the events this endpoint handles (competing, not multicast) are subscribed
    /// there too — `Endpoint` the application name, `QueueAddress` its input queue's address —
    /// so that NServiceBus publishers deliver them. The table is created where missing (with
    /// auto-create) in NServiceBus's shape. Off by default.
    pub fn nservicebus_subscriptions(mut self, table: impl Into<String>) -> Self {
        self.nservicebus_subscriptions = Some(table.into());
        self
    }

    /// How long one database statement, begin or commit may take (default 30 s). A call past it
    /// drops its connection (a frozen connection: a failover behind a virtual IP, a stuck
    /// pooler, a lost NAT entry), the receiver backs off as in an outage, and `send` returns the
    /// error. Opening a connection is bounded by the connection string's connect timeout.
    pub fn database_timeout(mut self, timeout: Duration) -> Self {
        self.database_timeout = timeout;
        self
    }

    /// Registers a handler for event `M` that runs on **every** running instance of the
    /// application (each instance subscribes its own queue), instead of on one of them as
    /// [`handler`](Self::handler) does for events.
    pub fn multicast_handler<M: crate::message::Event, H: Handler<M>>(
        mut self,
        handler: H,
    ) -> Self {
        self.handlers
            .add::<M, H>(handler, SubscriptionMode::Multicast);
        self
    }

    /// Registers a [`BlockingHandler`] for event `M` that runs on **every** running instance,
    /// as [`multicast_handler`](Self::multicast_handler) does for async handlers.
    pub fn multicast_blocking_handler<M: crate::message::Event, H: BlockingHandler<M>>(
        mut self,
        handler: H,
    ) -> Self {
        self.handlers
            .add_blocking::<M, H>(handler, SubscriptionMode::Multicast);
        self
    }

    /// Handles messages of type `M` under a lease instead of inside the transaction that
    /// received them: for handlers that run for minutes (a report, a call to a slow service).
    ///
    /// The message is moved from its queue into `NimbusLeases` in a short transaction; the
    /// handlers then run with no transaction, row lock or pooled connection held, while the
    /// lease is renewed every third of its duration; when they finish, one short transaction
    /// ends the lease and commits what they sent (or the retry, or the dead letter). If the
    /// process dies or stalls past the lease, any instance of the endpoint takes the lease
    /// back and the message is retried (counted as a failed attempt, so a message that crashes
    /// every process ends in the dead letters).
    ///
    /// **Handling becomes at-least-once:** after a crash the handler runs again, so it must be
    /// idempotent, and it cannot use the receive's connection (`ctx.postgres()` and the others
    /// return an error). Sends through the context still commit exactly once. See [`Lease`].
    /// Not with [`receive_batch`](Self::receive_batch) above 1.
    ///
    /// ```
    /// # use nimbus::{Command, Handler, HandlerContext, HandlerError, Lease};
    /// # use std::time::Duration;
    /// #[derive(serde::Serialize, serde::Deserialize, Command)]
    /// struct RenderReport { id: u64 }
    ///
    /// struct Renderer;
    /// impl Handler<RenderReport> for Renderer {
    ///     async fn handle(&self, m: RenderReport, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
    ///         // minutes of work, safe to repeat
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let endpoint = nimbus::Bus::builder()
    ///     .names("Reports", "reports-1")
    ///     .database_url("sqlite://reports.db")
    ///     .handler(Renderer)
    ///     .lease::<RenderReport>(Lease::of(Duration::from_secs(60)).handler_timeout(Duration::from_secs(3600)))
    ///     .build()?;
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn lease<M: Message>(mut self, lease: Lease) -> Self {
        self.leases.insert(M::TYPE_NAME, lease);
        self
    }

    /// Handles messages of type `M` with the saga `saga` (see [`crate::saga`]): each message
    /// is handled with the state of the saga instance its correlation value names, read and
    /// written in the receive's transaction, so the state changes, the handler's sends and the
    /// receive commit together or not at all. Register the saga once per message type it
    /// handles (sagas are cheap to clone: keep what they share in an `Arc`).
    ///
    /// ```no_run
    /// # use nimbus::saga::{Saga, SagaHandler, SagaInstance};
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct PlaceOrder { id: u32 }
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct PaymentReceived { order: u32 }
    /// #[derive(Clone)]
    /// struct Checkout;
    /// #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// struct CheckoutState { paid: bool }
    /// impl Saga for Checkout {
    ///     type State = CheckoutState;
    ///     const NAME: &'static str = "Shop.Checkout";
    /// }
    /// impl SagaHandler<PlaceOrder> for Checkout {
    ///     const STARTS: bool = true;
    ///     fn correlation(m: &PlaceOrder) -> String { m.id.to_string() }
    ///     async fn handle(&self, _m: PlaceOrder, _saga: &mut SagaInstance<CheckoutState>,
    ///         _ctx: &mut nimbus::HandlerContext) -> Result<(), nimbus::HandlerError> { Ok(()) }
    /// }
    /// impl SagaHandler<PaymentReceived> for Checkout {
    ///     fn correlation(m: &PaymentReceived) -> String { m.order.to_string() }
    ///     async fn handle(&self, _m: PaymentReceived, saga: &mut SagaInstance<CheckoutState>,
    ///         _ctx: &mut nimbus::HandlerContext) -> Result<(), nimbus::HandlerError> {
    ///         saga.state.paid = true;
    ///         saga.mark_complete();
    ///         Ok(())
    ///     }
    /// }
    /// let endpoint = nimbus::Bus::builder()
    ///     .names("Shop", "shop-1")
    ///     .database_url("sqlite://shop.db")
    ///     .saga_handler::<PlaceOrder, _>(Checkout)
    ///     .saga_handler::<PaymentReceived, _>(Checkout)
    ///     .build()?;
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn saga_handler<M, S>(mut self, saga: S) -> Self
    where
        M: Message,
        S: crate::saga::SagaHandler<M>,
    {
        self.sagas = true;
        self.saga_types.push(M::TYPE_NAME);
        self.handler(crate::saga::SagaAdapter::<S, M>::new(saga))
    }

    /// Handles the saga timeouts of type `T` (sent by
    /// [`SagaInstance::request_timeout`](crate::saga::SagaInstance::request_timeout)) with the
    /// saga `saga`: each one comes back to the instance that asked for it, read and written in
    /// the receive's transaction; one whose instance completed meanwhile is dropped with a log
    /// line.
    pub fn saga_timeout<T, S>(mut self, saga: S) -> Self
    where
        T: Message,
        S: crate::saga::SagaTimeout<T>,
    {
        self.sagas = true;
        self.saga_types.push(T::TYPE_NAME);
        self.handler(crate::saga::TimeoutAdapter::<S, T>::new(saga))
    }

    /// Sends commands of type `M` to `queue` when `send` is called: a queue of the bus's schema,
    /// or an address of a queue in another schema (`Invoices@[billing]`, and on SQL Server
    /// `Invoices@[billing]@[Accounts]` for another database; see
    /// [`QueueName::parse`](crate::QueueName::parse)), checked by `build`.
    pub fn route<M: Command>(mut self, queue: impl Into<String>) -> Self {
        self.routes.push((M::TYPE_NAME, queue.into()));
        self
    }

    /// Keeps an **inbox**: the id of every message this endpoint handles is remembered in
    /// `NimbusDeduplication` for `window`, in the receive's transaction, and a message whose
    /// id was handled within the window is removed without running its handlers (counted in
    /// `nimbus_messages_deduplicated_total` and logged at INFO). A copy re-sent after an
    /// ambiguous commit, or delivered twice by anything outside the database's transaction,
    /// then runs its handlers once. A failed attempt gives its id back, so its retry runs.
    /// Costs one more statement per message; off by default. Not with
    /// [`lease`](Self::lease) (a build error).
    pub fn inbox(mut self, window: Duration) -> Self {
        self.inbox = Some(window);
        self
    }

    /// Makes the input queue keep ordered groups: messages sent with
    /// [`SendOptions::group`](crate::SendOptions::group) are handled one at a time per group, in
    /// the order they were sent, across every receiver and instance of the endpoint, while
    /// different groups run in parallel; a batched receive never takes two of one group.
    ///
    /// At start the queue table gains the columns `GroupKey`, `GroupPosition` and `NotBefore`
    /// and two indexes where it lacks them (with auto-create; otherwise the start fails naming
    /// the statements). Messages without a group are handled as before. A message that fails
    /// keeps its place: its retries (immediate and delayed) come before the rest of its group,
    /// which waits; once it is dead-lettered the group goes on without it.
    ///
    /// In the shared-table layout `NimbusMessages` gains `GroupKey` and `GroupPlace` and an
    /// index instead, for all of its queues. With [`priorities`](Self::priorities) too, the
    /// priorities choose which group goes next; a group's own messages keep their send order.
    ///
    /// Refused by `build()` in NServiceBus's PostgreSQL layout (not supported yet, and
    /// NServiceBus endpoints would not keep the order) and together with leases (a message
    /// under a lease leaves the queue while it is handled).
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct AdjustBalance { account: String, cents: i64 }
    /// # async fn run() -> nimbus::Result<()> {
    /// let bus = nimbus::Bus::builder()
    ///     .names("Ledger", "ledger-1")
    ///     .ordered_groups()
    ///     .route::<AdjustBalance>("Ledger")
    ///     .build()?
    ///     .start()
    ///     .await?;
    /// let adjust = AdjustBalance { account: "ACC-7".into(), cents: -250 };
    /// let group = adjust.account.clone();
    /// bus.send_with(adjust, nimbus::SendOptions::new().group(group)).await?;
    /// # Ok(()) }
    /// ```
    pub fn ordered_groups(mut self) -> Self {
        self.ordered_groups = true;
        self
    }

    /// Makes the input queue keep priorities: messages sent with
    /// [`SendOptions::priority`](crate::SendOptions::priority) are received highest priority
    /// first, and the oldest first within a priority; messages sent without one have priority
    /// 0 (normal).
    ///
    /// At start the queue table gains the column `Priority` (`NOT NULL DEFAULT 0`) and an
    /// index where it lacks them (with auto-create; otherwise the start fails naming the
    /// statements). NServiceBus endpoints that share the table keep working: their sends get
    /// priority 0, and their receives ignore priorities (first in, first out).
    ///
    /// In the shared-table layout `NimbusMessages` gains the column and an index instead, for
    /// all of its queues. With [`ordered_groups`](Self::ordered_groups) too, the priorities
    /// choose which group goes next (by the priority of each group's first message); a group's
    /// own messages keep their send order.
    ///
    /// Refused by `build()` in NServiceBus's PostgreSQL layout (not supported yet).
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct SendEmail { to: String }
    /// # async fn run() -> nimbus::Result<()> {
    /// let bus = nimbus::Bus::builder()
    ///     .names("Mailer", "mailer-1")
    ///     .priorities()
    ///     .route::<SendEmail>("Mailer")
    ///     .build()?
    ///     .start()
    ///     .await?;
    /// let reset = SendEmail { to: "ada@example.com".into() };
    /// bus.send_with(reset, nimbus::SendOptions::new().priority(10)).await?;
    /// # Ok(()) }
    /// ```
    pub fn priorities(mut self) -> Self {
        self.priorities = true;
        self
    }

    /// Limits the handling of messages of type `M` across every receiver and instance of the
    /// endpoint (see [`Limit`](crate::Limit)): at most N handlers at once
    /// ([`Limit::concurrency`](crate::Limit::concurrency)), or at most N messages whose handling
    /// starts per period ([`Limit::rate`](crate::Limit::rate)); one of each kind per type.
    ///
    /// The limit is kept in the database (`NimbusLimits`, made at start by auto-create), so it
    /// holds however many instances run, and a process that dies frees its slots with its
    /// transactions. A message over the limit goes back to wait in its queue and is received
    /// again a little later (100 ms at first, up to 5 s as it keeps waiting; for a rate, at
    /// least until its next slot): no attempt is counted, nothing is dead-lettered. Each time
    /// counts in `nimbus_messages_held_total`, and `nimbus limits` and the console's Limits
    /// page show the limit's slots and held messages. Costs one statement per limited message
    /// (three more when its limit is full). Not with [`lease`](Self::lease) for the same type
    /// (a build error).
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct CallPartner { order: u64 }
    /// # struct Caller;
    /// # impl nimbus::Handler<CallPartner> for Caller {
    /// #     async fn handle(&self, _m: CallPartner, _ctx: &mut nimbus::HandlerContext) -> Result<(), nimbus::HandlerError> { Ok(()) }
    /// # }
    /// use nimbus::Limit;
    ///
    /// let endpoint = nimbus::Bus::builder()
    ///     .names("Partners", "partners-1")
    ///     .handler(Caller)
    ///     .limit::<CallPartner>(Limit::concurrency(4))
    ///     .limit::<CallPartner>(Limit::per_second(20))
    ///     .build()?;
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn limit<M: Message>(mut self, limit: crate::Limit) -> Self {
        self.limits.add::<M>(limit);
        self
    }

    /// Like [`limit`](Self::limit), for each key of messages of type `M`: `key` reads it from
    /// a message (at most [`MAX_LIMIT_KEY_LEN`](crate::MAX_LIMIT_KEY_LEN) bytes; a longer
    /// one sends its message to the dead letters, saying so). With
    /// `Limit::concurrency(1)`, messages of one key are handled one at a time, in no
    /// particular order (for send order, see [`ordered_groups`](Self::ordered_groups)). A
    /// key's slots are made when it is first seen and deleted after a day without use.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct SyncAccount { tenant: String }
    /// # struct Syncer;
    /// # impl nimbus::Handler<SyncAccount> for Syncer {
    /// #     async fn handle(&self, _m: SyncAccount, _ctx: &mut nimbus::HandlerContext) -> Result<(), nimbus::HandlerError> { Ok(()) }
    /// # }
    /// use nimbus::Limit;
    ///
    /// let endpoint = nimbus::Bus::builder()
    ///     .names("Sync", "sync-1")
    ///     .handler(Syncer)
    ///     .limit_per_key::<SyncAccount>(Limit::concurrency(2), |m| m.tenant.clone())
    ///     .build()?;
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn limit_per_key<M: Message>(
        mut self,
        limit: crate::Limit,
        key: impl Fn(&M) -> String + Send + Sync + 'static,
    ) -> Self {
        self.limits.add_per_key::<M>(limit, key);
        self
    }

    /// How long a deduplication key of [`Bus::send_deduplicated`](crate::Bus::send_deduplicated)
    /// is remembered: a second send of the key to the same queue within it is dropped
    /// (default [`DEFAULT_DEDUPLICATION_WINDOW`], a day; 1 s or more).
    pub fn deduplication_window(mut self, window: Duration) -> Self {
        self.deduplication_window = window;
        self
    }

    /// Declares a recurring message (see [`Schedule`](crate::Schedule)): a cron expression or
    /// a fixed interval, and the message each tick sends or publishes. Each tick fires once
    /// however many instances of the endpoint run; missed ticks fire once on return, or are
    /// skipped ([`Missed`](crate::Missed)). A schedule the code no longer declares is deleted
    /// at the next start (and the log says so); an operator can pause and resume one
    /// (`nimbus schedules`, the console). `build()` checks each schedule: its cron expression,
    /// its interval (1 s or more), its message's route, a name of its own.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct BuildReport { full: bool }
    /// use nimbus::Schedule;
    ///
    /// let endpoint = nimbus::Bus::builder()
    ///     .names("Reports", "reports-1")
    ///     .route::<BuildReport>("Reports")
    ///     .schedule(Schedule::cron("nightly-report", "0 2 * * *").send(BuildReport { full: true }))
    ///     .build()?;
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn schedule(mut self, schedule: crate::Schedule) -> Self {
        self.schedules.push(schedule);
        self
    }

    /// Registers a handler for messages of type `M`. Several handlers for one type all run, in
    /// registration order, in the message's transaction. A handler of an event subscribes the
    /// endpoint to it.
    pub fn handler<M: Message, H: Handler<M>>(mut self, handler: H) -> Self {
        self.handlers
            .add::<M, H>(handler, SubscriptionMode::Competing);
        self
    }

    /// Registers a [`BlockingHandler`] for messages of type `M`: blocking code (a plain `fn`)
    /// that runs on a thread of the endpoint's blocking pool, so it never holds up the threads
    /// async handlers share. Otherwise it behaves as [`handler`](Self::handler) does: it runs
    /// in registration order with the type's other handlers, and what it sends commits with
    /// the message.
    pub fn blocking_handler<M: Message, H: BlockingHandler<M>>(mut self, handler: H) -> Self {
        self.handlers
            .add_blocking::<M, H>(handler, SubscriptionMode::Competing);
        self
    }

    /// Checks every setting and returns the endpoint, ready to start.
    pub fn build(self) -> Result<crate::endpoint::bus::Endpoint> {
        let database = DatabaseUrl::parse(&self.database_url)?;
        #[cfg(feature = "sqlserver")]
        let database = database.with_sql_server_token(self.sql_server_token)?;
        let (Some(application), Some(instance)) = (self.application, self.instance) else {
            return Err(NimbusError::config(
                "the bus has no application and instance names",
                "call .application(\"MyApplication\") (the instance is named after the host) \
                 or .names(\"MyApplication\", \"instance-1\") on the builder",
            ));
        };
        let input_queue = QueueName::new(application.clone())?;
        if instance.trim().is_empty() || instance.chars().any(char::is_control) {
            return Err(NimbusError::config(
                format!("the instance name {instance:?} is empty or has control characters"),
                "use a name such as the host name",
            ));
        }
        let dialect = database.dialect();
        let (max_queue, max_schema, default_schema) = (
            dialect.max_queue_name,
            dialect.max_schema_name,
            database.default_schema(),
        );
        if self.fill_v1_columns && self.layout == StorageLayout::SharedTable {
            return Err(NimbusError::config(
                "NimbusMessages has no CorrelationId/ReplyToAddress columns to fill for version-1 receivers",
                "remove .fill_v1_columns(true), or use StorageLayout::TablePerQueue to talk to NServiceBus v1 endpoints",
            ));
        }
        crate::transport::check_layout(dialect, self.layout)?;
        if self.fill_v1_columns && self.layout == StorageLayout::NServiceBusPostgreSql {
            return Err(NimbusError::config(
                "NServiceBus's PostgreSQL queue table has no CorrelationId/ReplyToAddress \
                 columns to fill",
                "remove .fill_v1_columns(true): NServiceBus reads both from the headers",
            ));
        }
        if self.nservicebus_subscriptions.is_some() && self.layout == StorageLayout::SharedTable {
            return Err(NimbusError::config(
                "NServiceBus endpoints read queue tables, not NimbusMessages: subscriptions \
                 shared with them need the table-per-queue layout",
                "remove .nservicebus_subscriptions(..), or use StorageLayout::TablePerQueue",
            ));
        }
        if self.body_string_column.is_some() && self.layout == StorageLayout::SharedTable {
            return Err(NimbusError::config(
                "the BodyString column belongs to the table-per-queue layout; NimbusMessages has none",
                "remove .body_string_column(..) / .create_body_string_column(true), or use StorageLayout::TablePerQueue",
            ));
        }
        if self.body_string_column.is_some() && !database.is_sql_server() {
            return Err(NimbusError::config(
                format!(
                    "the BodyString column is not supported on {} yet",
                    dialect.name
                ),
                "remove .body_string_column(..) / .create_body_string_column(true); read the Body column as UTF-8 JSON instead",
            ));
        }
        input_queue.check_len(max_queue)?;
        let schema = SchemaName::new(self.schema.unwrap_or_else(|| default_schema.into()))?;
        schema.check_len(max_schema)?;
        if dialect
            .only_schema
            .is_some_and(|only| schema.as_str() != only)
        {
            return Err(NimbusError::config(
                format!(
                    "SQLite has no schema {:?}: a database file has only \"main\"",
                    schema.as_str()
                ),
                "remove .schema(...) or use a separate database file",
            ));
        }
        if self.peek_delay < MIN_PEEK_DELAY {
            return Err(NimbusError::config(
                format!(
                    "peek delay {:?} is below the minimum of 100 ms and would put needless load on the database",
                    self.peek_delay
                ),
                "use .peek_delay(Duration::from_millis(100)) or more (the default is 1 s)",
            ));
        }
        if self.peek_delay > MAX_RECOMMENDED_PEEK_DELAY {
            tracing::warn!(
                peek_delay = ?self.peek_delay,
                "peek delay is above the recommended 10 s: messages may back up in the queue"
            );
        }
        if self.retry.delayed > 0 && self.retry.delayed_increment.is_zero() {
            return Err(NimbusError::config(
                "delayed retries have a zero delay increment",
                "use .delayed_retries(n, Duration::from_secs(10)) or .delayed_retries(0, ...)",
            ));
        }
        if self.handler_timeout.is_zero() {
            return Err(NimbusError::config(
                "the handler timeout is zero, so every handler would fail",
                "use .handler_timeout(Duration::from_secs(60)) or another positive duration",
            ));
        }
        if self.purge_interval < Duration::from_secs(1) || self.purge_batch_size <= 0 {
            return Err(NimbusError::config(
                format!(
                    "expiry purging every {:?} in batches of {} would overload the database or do nothing",
                    self.purge_interval, self.purge_batch_size
                ),
                "use .expiry_purge(Duration::from_secs(300), 10_000) or another interval of 1 s or more and a positive batch size",
            ));
        }
        if self.auto_delete_on_idle < MIN_AUTO_DELETE_ON_IDLE {
            return Err(NimbusError::config(
                format!(
                    "auto_delete_on_idle of {:?} is below the minimum of 5 minutes: live subscribers would be swept between heartbeats",
                    self.auto_delete_on_idle
                ),
                "use .auto_delete_on_idle(Duration::from_secs(300)) or more (the default is 4 days)",
            ));
        }
        if self.database_timeout < Duration::from_millis(100) {
            return Err(NimbusError::config(
                format!(
                    "the database timeout {:?} is shorter than a round trip to most databases",
                    self.database_timeout
                ),
                "use .database_timeout(Duration::from_secs(30)) or at least 100 ms",
            ));
        }
        if self.request_timeout.is_zero() {
            return Err(NimbusError::config(
                "the request timeout is zero, so every request would time out",
                "use .request_timeout(Duration::from_secs(30)) or another positive duration",
            ));
        }
        if self.critical_error_after.is_zero() {
            return Err(NimbusError::config(
                "critical_error_after is zero: every passing database hiccup would be critical",
                "use .critical_error_after(Duration::from_secs(120)) or another positive duration",
            ));
        }
        if self.instance_heartbeat < MIN_INSTANCE_HEARTBEAT {
            return Err(NimbusError::config(
                format!(
                    "instance_heartbeat of {:?} is below the minimum of 1 s",
                    self.instance_heartbeat
                ),
                "use .instance_heartbeat(Duration::from_secs(5)) (the default) or another \
                 interval of 1 s or more",
            ));
        }
        if self
            .dead_letter_retention
            .is_some_and(|r| r < MIN_DEAD_LETTER_RETENTION)
        {
            return Err(NimbusError::config(
                format!(
                    "dead_letter_retention of {:?} is below the minimum of 1 minute: failed \
                     messages would be deleted before anyone could look at them",
                    self.dead_letter_retention.unwrap_or_default()
                ),
                "use .dead_letter_retention(Some(Duration::from_secs(30 * 24 * 3600))) (the \
                 default), a shorter period of a minute or more, or None to keep them",
            ));
        }
        if self
            .monitoring_interval
            .is_some_and(|every| every < Duration::from_secs(1))
        {
            return Err(NimbusError::config(
                format!(
                    "monitoring_interval of {:?} is below the minimum of 1 s",
                    self.monitoring_interval.unwrap_or_default()
                ),
                "use .monitoring_interval(Some(Duration::from_secs(10))) (the default), another \
                 interval of 1 s or more, or None to write no reports",
            ));
        }
        if self.connection_limit == Some(0) {
            return Err(NimbusError::config(
                "connection_limit is 0, so no connection could open",
                "use a number of 1 or more, e.g. .connection_limit(20), or leave it unset for the default",
            ));
        }
        if self.connection_idle_timeout < Duration::from_secs(1) {
            return Err(NimbusError::config(
                format!(
                    "connection_idle_timeout of {:?} is below the minimum of 1 s",
                    self.connection_idle_timeout
                ),
                "use .connection_idle_timeout(Duration::from_secs(60)) (the default) or another \
                 period of 1 s or more",
            ));
        }
        if self.monitoring_retention < Duration::from_secs(60) {
            return Err(NimbusError::config(
                format!(
                    "monitoring_retention of {:?} is below the minimum of 1 minute",
                    self.monitoring_retention
                ),
                "use .monitoring_retention(Duration::from_secs(6 * 3600)) (the default) or                  another period of a minute or more",
            ));
        }
        if self.completed_sagas_kept < Duration::from_secs(60) {
            return Err(NimbusError::config(
                format!(
                    "completed_sagas_kept of {:?} is below the minimum of 1 minute: a message \
                     that comes a little late would start its saga instance again",
                    self.completed_sagas_kept
                ),
                "use .completed_sagas_kept(Duration::from_secs(7 * 24 * 3600)) (the default) or \
                 another period of a minute or more",
            ));
        }
        if let Some(encryption) = &self.body_encryption {
            encryption.check()?;
        }
        if self.max_body_size == 0 {
            return Err(NimbusError::config(
                "max_body_size is 0, so every send would be refused",
                "use .max_body_size(16 * 1024 * 1024) (the default) or another positive size",
            ));
        }
        if self.concurrency == 0 {
            return Err(NimbusError::config(
                "the concurrency limit is 0, so no message would ever be handled",
                "use .concurrency(1) or more",
            ));
        }
        let fixed_batch = self.receive_batch.unwrap_or(1);
        if !(1..=1_000).contains(&fixed_batch) {
            return Err(NimbusError::config(
                format!(
                    "receive_batch is {fixed_batch}: a receiver must take between 1 and 1,000 \
                     messages"
                ),
                "use .receive_batch(1) (one message per transaction) up to .receive_batch(1000)",
            ));
        }
        let handler_threads = self.handler_threads.unwrap_or_else(|| {
            if database.is_sqlite() {
                1
            } else {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            }
        });
        if handler_threads == 0 {
            return Err(NimbusError::config(
                "handler_threads is 0, so no handler could run",
                "use .handler_threads(1) or more (1: the bus's own thread)",
            ));
        }
        let blocking_threads = self.blocking_threads.unwrap_or(self.concurrency);
        if blocking_threads == 0 {
            return Err(NimbusError::config(
                "blocking_threads is 0, so no blocking handler could run",
                "use .blocking_threads(1) or more (default: the concurrency limit)",
            ));
        }
        let nservicebus_subscriptions = match &self.nservicebus_subscriptions {
            Some(table) => {
                let table = QueueName::parse(table)?;
                table.check_len(max_queue)?;
                Some(crate::transport::resolve_address(
                    dialect,
                    &schema,
                    StorageLayout::TablePerQueue,
                    &table,
                )?)
            }
            None => None,
        };
        let resolve = |queue: &str| -> Result<QueueName> {
            let queue = QueueName::parse(queue)?;
            queue.check_len(max_queue)?;
            crate::transport::resolve_address(dialect, &schema, self.layout, &queue)
        };
        let mut routes = HashMap::new();
        for (type_name, queue) in &self.routes {
            routes.insert(*type_name, resolve(queue)?);
        }
        let routes = Routes::new(routes);
        let schedules = crate::pipeline::schedule::check_all(self.schedules, &routes, &resolve)?;
        self.handlers.check()?;
        for (what, window) in [
            ("inbox", self.inbox),
            ("deduplication_window", Some(self.deduplication_window)),
        ] {
            if window.is_some_and(|w| w < MIN_DEDUPLICATION_WINDOW) {
                return Err(NimbusError::config(
                    format!("the {what} of {window:?} is below the minimum of 1 s"),
                    format!(
                        "use .{what}(Duration::from_secs(3600)) or another window of 1 s or more"
                    ),
                ));
            }
        }
        if self.ordered_groups && self.layout == StorageLayout::NServiceBusPostgreSql {
            return Err(NimbusError::config(
                "ordered groups are not supported yet in NServiceBus's PostgreSQL table shape: \
                 they need group columns its tables lack, and NServiceBus endpoints reading \
                 those tables would not keep the order",
                "remove .ordered_groups(), or use StorageLayout::TablePerQueue or \
                 StorageLayout::SharedTable",
            ));
        }
        if self.priorities && self.layout == StorageLayout::NServiceBusPostgreSql {
            return Err(NimbusError::config(
                "priorities are not supported yet in NServiceBus's PostgreSQL table shape: \
                 they need a Priority column its tables lack, and NServiceBus endpoints \
                 reading those tables would ignore it",
                "remove .priorities(), or use StorageLayout::TablePerQueue or \
                 StorageLayout::SharedTable",
            ));
        }
        if self.ordered_groups && !self.leases.is_empty() {
            return Err(NimbusError::config(
                "ordered groups cannot be kept for messages handled under a lease: a leased \
                 message leaves the queue while it is handled, and the next of its group would \
                 start beside it",
                "remove .ordered_groups(), or the .lease::<..>(..) settings",
            ));
        }
        if self.inbox.is_some() && !self.leases.is_empty() {
            return Err(NimbusError::config(
                "an inbox does not cover messages handled under a lease yet: their handlers run \
                 outside the receive's transaction, where the inbox keeps its ids",
                "remove .inbox(..), or the .lease::<..>(..) settings (handlers under a lease are \
                 at least once: make them idempotent)",
            ));
        }
        self.limits.check()?;
        for type_name in self.limits.type_names() {
            if self.handlers.get(type_name).is_none() {
                return Err(NimbusError::config(
                    format!("a limit is set for {type_name}, but no handler of this endpoint handles it"),
                    "register its handler with .handler(..), or remove the .limit::<..>(..)",
                ));
            }
            if self.leases.get(type_name).is_some() {
                return Err(NimbusError::config(
                    format!(
                        "{type_name} has a limit and a lease: a limit's slot is held by the \
                         receive's transaction, which a lease does not keep open while the \
                         handler runs; limits on messages under a lease are not supported yet"
                    ),
                    format!("remove .lease::<{type_name}>(..) or its .limit::<..>(..)"),
                ));
            }
        }
        for type_name in self.leases.type_names() {
            if self.handlers.get(type_name).is_none() {
                return Err(NimbusError::config(
                    format!("a lease is set for {type_name}, but no handler of this endpoint handles it"),
                    "register its handler with .handler(..), or remove the .lease::<..>(..)",
                ));
            }
            if let Some(lease) = self.leases.get(type_name) {
                lease.check(type_name)?;
            }
        }
        if self.sagas && fixed_batch > 1 {
            return Err(NimbusError::config(
                format!(
                    "receive_batch is {fixed_batch} and the endpoint has sagas: sagas in batched \
                     receives are not supported yet"
                ),
                "use .receive_batch(1) on this endpoint, or run the saga in an endpoint of its \
                 own",
            ));
        }
        if let Some(type_name) = self
            .saga_types
            .iter()
            .find(|t| self.leases.get(t).is_some())
        {
            return Err(NimbusError::config(
                format!(
                    "{type_name} is handled by a saga and under a lease: a saga's state commits \
                     with its message, which a lease does not hold open; sagas under a lease \
                     are not supported yet"
                ),
                format!("remove .lease::<{type_name}>(..)"),
            ));
        }
        if !self.leases.is_empty() && fixed_batch > 1 {
            return Err(NimbusError::config(
                format!(
                    "receive_batch is {fixed_batch} and some messages are handled under a lease; \
                     a batch commits once for all of its messages, a lease needs a commit of its \
                     own before its handler runs: leases in batched receives are not supported \
                     yet"
                ),
                "use .receive_batch(1) on this endpoint, or handle the long-running messages \
                 in an endpoint of their own",
            ));
        }
        let instance_queue = if self.requests || self.handlers.has_multicast() {
            let queue = QueueName::new(format!("{application}.{instance}"))?;
            queue.check_len(max_queue)?;
            Some(queue)
        } else {
            None
        };
        let message_ids = if database.is_sql_server() {
            crate::envelope::MessageIds::SqlServerOrdered
        } else {
            crate::envelope::MessageIds::TimeOrdered
        };
        let identity = Arc::new(EndpointIdentity {
            application,
            instance,
            input_queue,
            instance_queue,
            fill_v1_columns: self.fill_v1_columns,
            message_ids,
            schema: schema.clone(),
            address_form: dialect.address_form,
            reply_address: Default::default(),
            max_body_size: self.max_body_size,
            codecs: crate::body_codecs::BodyCodecs {
                compression: self.body_compression.clone(),
                encryption: self.body_encryption.clone(),
            },
            claim_check: self
                .claim_check
                .clone()
                .unwrap_or_else(|| match self.layout {
                    crate::StorageLayout::NServiceBusPostgreSql => crate::ClaimCheck::off(),
                    _ => crate::ClaimCheck::in_database(),
                }),
        });
        tracing::debug!(database = dialect.name, queue = %identity.input_queue, "endpoint configured");
        Ok(crate::endpoint::bus::Endpoint::new(EndpointConfig {
            identity,
            database,
            schema,
            auto_create_schema: self.auto_create_schema,
            peek_delay: self.peek_delay,
            idle_poll: self.idle_poll,
            concurrency: self.concurrency,
            handler_threads,
            blocking_threads,
            receive_batch: match self.receive_batch {
                Some(messages) => ReceiveBatching::Fixed(messages),
                // Batches hold neither sagas nor leases yet (see the checks above).
                None if self.sagas || !self.leases.is_empty() => ReceiveBatching::Fixed(1),
                None => ReceiveBatching::Adaptive,
            },
            routes: Arc::new(routes),
            handlers: Arc::new(self.handlers),
            body_string_column: self.body_string_column,
            retry: self.retry,
            handler_timeout: self.handler_timeout,
            purge_interval: self.purge_interval,
            table_maintenance_interval: self.table_maintenance_interval,
            purge_batch_size: self.purge_batch_size,
            critical_error_after: self.critical_error_after,
            on_critical_error: self.on_critical_error,
            auto_delete_on_idle: self.auto_delete_on_idle,
            request_timeout: self.request_timeout,
            database_timeout: self.database_timeout,
            create_queues_on_send: self.create_queues_on_send,
            shared_commits: self.shared_commits,
            nservicebus_subscriptions,
            layout: self.layout,
            leases: self.leases,
            limits: self.limits,
            sagas: self.sagas,
            schedules,
            inbox: self.inbox,
            ordered_groups: self.ordered_groups,
            priorities: self.priorities,
            deduplication_window: self.deduplication_window,
            instance_heartbeat: self.instance_heartbeat,
            share_instance_name: self.share_instance_name,
            dead_letter_retention: self.dead_letter_retention,
            monitoring_interval: self.monitoring_interval,
            monitoring_retention: self.monitoring_retention,
            connection_idle_timeout: self.connection_idle_timeout,
            connection_limit: self.connection_limit,
            completed_sagas_kept: self.completed_sagas_kept,
        }))
    }
}

#[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
mod tests {
    use crate::Bus;

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlite_runs_handlers_on_one_thread_unless_asked_for_more() {
        let build = |b: crate::BusBuilder| {
            b.names("Sales", "sales-1")
                .database_url("sqlite://sales.db")
                .build()
                .map(|e| e.handler_threads())
        };
        assert_eq!(
            build(Bus::builder()).ok(),
            Some(1),
            "one writer: one thread"
        );
        assert_eq!(build(Bus::builder().handler_threads(3)).ok(), Some(3));
        assert!(build(Bus::builder().handler_threads(0)).is_err());
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn leases_are_refused_where_they_cannot_work_with_the_fix() {
        use crate::{Handler, HandlerContext, HandlerError, Lease, Message, MessageKind};
        use std::time::Duration;

        #[derive(serde::Serialize, serde::Deserialize)]
        struct Render;
        impl Message for Render {
            const TYPE_NAME: &'static str = "Reports.Render";
            const KIND: MessageKind = MessageKind::Command;
        }
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Unhandled;
        impl Message for Unhandled {
            const TYPE_NAME: &'static str = "Reports.Unhandled";
            const KIND: MessageKind = MessageKind::Command;
        }
        struct Renderer;
        impl Handler<Render> for Renderer {
            async fn handle(&self, _: Render, _: &mut HandlerContext) -> Result<(), HandlerError> {
                Ok(())
            }
        }
        let base = || {
            Bus::builder()
                .names("Reports", "reports-1")
                .database_url("sqlite://reports.db")
                .handler(Renderer)
        };
        let lease = Lease::of(Duration::from_secs(30));
        assert!(base().lease::<Render>(lease).build().is_ok());
        let error =
            |b: crate::BusBuilder| b.build().err().map(|e| e.to_string()).unwrap_or_default();
        let batched = error(base().lease::<Render>(lease).receive_batch(10));
        assert!(
            batched.contains("not supported yet") && batched.contains("receive_batch(1)"),
            "{batched}"
        );
        let unhandled = error(base().lease::<Unhandled>(lease));
        assert!(
            unhandled.contains("no handler of this endpoint handles it"),
            "{unhandled}"
        );
        let short = error(base().lease::<Render>(Lease::of(Duration::from_millis(10))));
        assert!(short.contains("below the minimum"), "{short}");
        // An inbox keeps its ids in the receive's transaction, which a lease does not hold.
        let hour = Duration::from_secs(3600);
        assert!(base().inbox(hour).build().is_ok());
        let inbox_and_lease = error(base().inbox(hour).lease::<Render>(lease));
        assert!(
            inbox_and_lease.contains("inbox does not cover messages handled under a lease"),
            "{inbox_and_lease}"
        );
        let tiny = error(base().inbox(Duration::from_millis(10)));
        assert!(
            tiny.contains("inbox") && tiny.contains("below the minimum of 1 s"),
            "{tiny}"
        );
        let window = error(base().deduplication_window(Duration::ZERO));
        assert!(window.contains("deduplication_window"), "{window}");
        // A limit's slot is held by the receive's transaction, which a lease does not hold.
        let two = crate::Limit::concurrency(2);
        assert!(base().limit::<Render>(two).build().is_ok());
        let limit_and_lease = error(base().limit::<Render>(two).lease::<Render>(lease));
        assert!(
            limit_and_lease.contains("has a limit and a lease"),
            "{limit_and_lease}"
        );
        let unhandled = error(base().limit::<Unhandled>(two));
        assert!(
            unhandled.contains("a limit is set for") && unhandled.contains("no handler"),
            "{unhandled}"
        );
        let zero = error(base().limit::<Render>(crate::Limit::concurrency(0)));
        assert!(zero.contains("outside 1 to 1000 slots"), "{zero}");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn server_databases_run_handlers_on_every_cpu_by_default() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = Bus::builder()
            .names("Sales", "sales-1")
            .database_url("postgres://postgres@127.0.0.1/postgres")
            .build()
            .map(|e| e.handler_threads())
            .ok();
        assert_eq!(threads, Some(cpus));
    }
}
