//! Drivers: one per database, each behind its cargo feature (`sqlite`, `postgres`, `sqlserver`).
//!
//! A driver connects, pools, binds [`Param`]s and decodes rows into [`Value`]s; nothing else.
//! It runs statements it is given and never builds SQL or decides anything about messages: the
//! transport (written once, in `crate::transport`) does that through [`statements`], whose
//! methods are one statement each with typed parameters and rows.
//!
//! Connections are handed out inside a [`Held`] guard: dropped without [`Held::release`] or
//! [`Held::commit`] (an error, a cancelled future), the connection is discarded, never pooled
//! again, so no later user finds a broken connection or a transaction left open.

pub(crate) mod access;
pub(crate) mod body_statements;
#[cfg(any(feature = "postgres", feature = "sqlserver"))]
pub(crate) mod budget;
mod catalog_names;
#[cfg(test)]
mod contract_tests;
pub(crate) mod deduplication_statements;
pub(crate) mod group_statements;
mod heap;
#[cfg(any(feature = "postgres", feature = "sqlserver"))]
pub(crate) mod home;
pub(crate) mod instance_statements;
pub(crate) mod limit_statements;
pub(crate) mod monitoring_statements;
pub(crate) mod schedule_statements;
pub(crate) mod shard;
#[cfg(any(feature = "postgres", feature = "sqlserver"))]
pub(crate) mod shared_runtime;
pub(crate) mod statements;
mod value;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_riders;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite_watch;
#[cfg(feature = "sqlserver")]
pub(crate) mod sqlserver;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

#[cfg(feature = "sqlite")]
pub(crate) use value::OwnedParam;
pub(crate) use value::{Param, Row, Statement, Value};

use crate::sql::Dialect;

/// The code of a [`DriverError`] for a call that ran past its deadline.
const TIMEOUT_CODE: &str = "nimbus:timeout";
/// The code of a conflict the framework found itself (a saga race), beside the databases' own.
const CONFLICT_CODE: &str = "nimbus:conflict";

/// Whether a database error code says a transaction gave way to another: PostgreSQL's
/// serialization failure (40001) and deadlock (40P01), SQL Server's deadlock victim (1205).
pub(crate) fn is_conflict_code(code: Option<&str>) -> bool {
    matches!(code, Some("40001" | "40P01" | "1205" | CONFLICT_CODE))
}

/// Whether a database error code says a statement waited for a row lock longer than its
/// transaction allows: PostgreSQL's lock not available (55P03, `lock_timeout`), SQL Server's
/// lock request time out (1222, `LOCK_TIMEOUT`).
pub(crate) fn is_lock_timeout_code(code: Option<&str>) -> bool {
    matches!(code, Some("55P03" | "1222"))
}

/// Whether a failed database call may succeed if tried again unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The connection, a lock, a deadlock, a timeout, a failover: retried after a back-off,
    /// without spending a message's retry budget.
    Transient,
    /// The statement itself cannot succeed (a missing table, a value too long, a constraint):
    /// counted as a failed attempt of the message, which ends in the dead letters.
    Permanent,
}

/// What a driver reports when a statement or a connection fails: the database's own message
/// (with every cause), its error code where it has one (SQLSTATE on PostgreSQL, the error number
/// on SQL Server, the extended result code on SQLite), and whether trying again may help.
#[derive(Debug, thiserror::Error)]
#[error("{message}{}", code.as_ref().map(|c| format!(" (code {c})")).unwrap_or_default())]
pub struct DriverError {
    message: String,
    code: Option<String>,
    kind: FailureKind,
    /// For a call that ran past its deadline, the deadline: how long it waited for the
    /// database.
    waited: Option<Duration>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl DriverError {
    /// Wraps a driver's error, keeping its message, causes and code.
    pub(crate) fn new(
        code: Option<String>,
        kind: FailureKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        DriverError {
            message: crate::error::error_chain(&source),
            code,
            kind,
            waited: None,
            source: Some(Box::new(source)),
        }
    }

    /// An error the framework itself detected while talking to the database.
    pub(crate) fn other(kind: FailureKind, message: impl Into<String>) -> Self {
        DriverError {
            message: message.into(),
            code: None,
            kind,
            waited: None,
            source: None,
        }
    }

    /// A call that did not finish within its deadline: the connection is dropped.
    pub(crate) fn timed_out(what: &str, deadline: Duration) -> Self {
        let mut error = Self::other(
            FailureKind::Transient,
            format!(
                "{what} did not finish within {deadline:?}; the connection was dropped (a frozen \
                 connection, a failover, a stuck pooler?). Raise it with \
                 BusBuilder::database_timeout if statements are legitimately slower"
            ),
        );
        error.code = Some(TIMEOUT_CODE.into());
        error.waited = Some(deadline);
        error
    }

    /// Whether this is a call that ran past its deadline.
    pub fn is_timeout(&self) -> bool {
        self.code.as_deref() == Some(TIMEOUT_CODE)
    }

    /// For a call that ran past its deadline, how long it waited: the database had stopped
    /// answering at least that long before the error.
    pub(crate) fn waited(&self) -> Option<Duration> {
        self.waited
    }

    /// Two transactions collided and this one was chosen to give way: `what` says which
    /// (a saga started or changed by another message at the same moment). Tried again at once.
    pub(crate) fn conflict(what: impl Into<String>) -> Self {
        let mut error = Self::other(FailureKind::Transient, what);
        error.code = Some(CONFLICT_CODE.into());
        error
    }

    /// Whether this transaction gave way to another: a deadlock victim (PostgreSQL 40P01, SQL
    /// Server 1205), a serialization failure (40001), or a saga race. Nothing is wrong with the
    /// database: the work is tried again at once, without a back-off.
    pub fn is_conflict(&self) -> bool {
        is_conflict_code(self.code.as_deref())
    }

    /// Whether a statement waited for a row lock longer than its transaction allows
    /// (PostgreSQL 55P03, SQL Server 1222).
    pub fn is_lock_timeout(&self) -> bool {
        is_lock_timeout_code(self.code.as_deref())
    }

    /// Whether a unique key refused a row: PostgreSQL 23505, SQLite's UNIQUE and PRIMARY KEY
    /// constraints (2067, 1555), SQL Server 2627 and 2601 (Babelfish answers with these too).
    pub(crate) fn is_unique_violation(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some("23505" | "2067" | "1555" | "2627" | "2601")
        )
    }

    /// The database's error code, when it gave one.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// Whether trying again may help.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }
}

/// Shorthand for a driver's results.
pub(crate) type DriverResult<T> = std::result::Result<T, DriverError>;

/// A database connection pool and the few primitives every statement needs.
#[async_trait]
pub(crate) trait Driver: Send + Sync + Sized + 'static {
    /// A connection taken from the pool.
    type Connection: Send + 'static;

    /// The database's SQL.
    fn dialect(&self) -> &'static Dialect;

    /// Where it connects, for messages (host and database, or a file); never a password.
    fn target(&self) -> &str;

    /// What connections to this database with these credentials share in the process (a pool,
    /// a budget, the watch of idle queues): never a password, and the same for every driver
    /// given the same connection settings.
    fn share_key(&self) -> &str {
        self.target()
    }

    /// Whether the database has one writer at a time, so that a second transaction of this
    /// process waits for the first (SQLite).
    fn single_writer(&self) -> bool {
        false
    }

    /// Whether `error` says the login lacks the right to do what it tried (create a table, say).
    fn permission_denied(&self, _error: &DriverError) -> bool {
        false
    }

    /// What to tell the user when opening a connection failed with `error`.
    fn connect_advice(&self, _error: &DriverError) -> String {
        "check that the server runs and accepts TCP connections, and that the user, password \
         and database in the connection settings are right"
            .into()
    }

    /// Starts announcing and hearing which queues got messages, across processes, where the
    /// database offers a way (PostgreSQL: LISTEN/NOTIFY). `None`: receivers of other processes
    /// find messages at their next peek.
    /// `listen` and `announce` are the dialect's `wake_listen.sql` and `wake_announce.sql`;
    /// `deadlines` bound its connecting and its statements as they bound the pool's.
    fn wake_channel(
        &self,
        listen: &str,
        announce: &str,
        deadlines: Deadlines,
    ) -> Option<WakeChannel> {
        let _ = (listen, announce, deadlines);
        None
    }

    /// Starts hearing that other connections committed, where the database offers no channel
    /// that names the queue but can tell that something changed (SQLite's `data_version`): what
    /// it hears is an empty payload, and every receiver of the database is woken. `None`
    /// elsewhere.
    fn watch_changes(&self) -> Option<WakeChannel> {
        None
    }

    /// Takes a connection from the pool, opening one if needed.
    async fn connection(&self) -> DriverResult<Self::Connection>;

    /// Waits, for as long as it takes, until a connection can be had without waiting for the
    /// process's connection budget: the pool of the calling thread has an idle one, or the
    /// budget has room to open one. Called before the deadline of taking a connection starts,
    /// so that a busy budget is waited for and not taken for a frozen server. Nothing to wait
    /// for where connections are not budgeted.
    async fn wait_for_room(&self) {}

    /// Whether a connection can be had on the calling thread now without waiting for the
    /// budget (see [`wait_for_room`](Self::wait_for_room)): always where connections are not
    /// budgeted.
    fn has_room(&self) -> bool {
        true
    }

    /// Whether [`connection`](Self::connection) would hand one out now without waiting, neither
    /// for the budget nor for a connection of the calling thread's pool to be given back: always
    /// where connections are not pooled.
    fn can_connect_now(&self) -> bool {
        true
    }

    /// As [`connection`](Self::connection), for a receive: where connections are shared (SQLite's
    /// one per file), a receiver may keep one a little longer while only other receivers wait
    /// (see [`pipelines_commit`](Self::pipelines_commit)).
    async fn connection_for_receive(&self) -> DriverResult<Self::Connection> {
        self.connection().await
    }

    /// Whether a write that commits on its own may share the commit of the transaction that
    /// holds the pool's connection ([`execute_sharing_commit`](Self::execute_sharing_commit)):
    /// where the pool is one connection that every writer waits for (SQLite).
    fn shares_commits(&self) -> bool {
        false
    }

    /// Runs `statement`, a write that commits on its own, inside the transaction that holds the
    /// pool's one connection, just before that transaction commits (under a savepoint of its
    /// own, so that a refused statement leaves that transaction as it was); or alone, once the
    /// connection is free, when no commit came first. Returns once it has committed, with the
    /// rows it changed; an error when the statement or the commit it shared failed. Only where
    /// [`shares_commits`](Self::shares_commits) says so.
    async fn execute_sharing_commit(&self, statement: &Statement) -> DriverResult<u64> {
        let _ = statement;
        Err(DriverError::other(
            FailureKind::Permanent,
            "this database's writes do not share other transactions' commits (not supported); \
             run the statement on a connection of its own",
        ))
    }

    /// Gives a connection with no transaction open back to the pool.
    fn release(&self, connection: Self::Connection);

    /// Closes a connection that failed or may have a transaction open: the server rolls back,
    /// and the pool never hands it out again.
    fn discard(&self, connection: Self::Connection);

    /// Closes every idle pooled connection: one of them froze (a call ran past its deadline),
    /// and those given back before it may be frozen too (a network freeze, a failover behind a
    /// virtual IP), each of which would cost another full deadline; new ones are opened
    /// instead. Nothing to do where connections are not pooled over a network.
    fn forget_idle(&self) {}

    /// Closes the idle pooled connections nobody took for `unused_for`; how many. An endpoint
    /// that went quiet gives its connections back to the server instead of holding a pool's
    /// worth for ever.
    fn close_unused(&self, _unused_for: std::time::Duration) -> usize {
        0
    }

    /// Opens a transaction.
    async fn begin(&self, connection: &mut Self::Connection) -> DriverResult<()>;

    /// Commits the open transaction.
    async fn commit(&self, connection: &mut Self::Connection) -> DriverResult<()>;

    /// Runs one statement; returns how many rows it affected.
    async fn execute(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64>;

    /// Runs one statement and returns its rows, every value decoded without panicking.
    async fn query(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>>;

    /// Opens a transaction and runs `sql` in it. Drivers that can send both in one round trip
    /// override this.
    async fn begin_and_query(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        self.begin(connection).await?;
        self.query(connection, sql, params).await
    }

    /// Whether [`commit_then_begin_and_query`](Self::commit_then_begin_and_query), called now,
    /// sends the commit and the next transaction's query in one round trip (SQLite: one trip to
    /// a blocking thread, and only while nobody else waits for the file's one connection, so the
    /// answer may change from call to call). Where it does not, callers commit and receive the
    /// usual way.
    fn pipelines_commit(&self) -> bool {
        false
    }

    /// Whether a connection keeps buffers as large as the largest value it moved (the
    /// network drivers' read and write buffers), so that one that moved a large body should
    /// be closed rather than pooled: pooled, it would hold that memory until it is closed.
    fn keeps_large_buffers(&self) -> bool {
        false
    }

    /// Commits the open transaction, then opens the next and runs `sql` in it — in one round
    /// trip where the driver [pipelines](Self::pipelines_commit) them. Returns the commit's
    /// outcome and, when the commit succeeded, the query's rows (`None` after a failed commit:
    /// whatever the query did then is the caller's to discard with the connection).
    async fn commit_then_begin_and_query(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> (DriverResult<()>, Option<DriverResult<Vec<Row>>>) {
        match self.commit(connection).await {
            Ok(()) => (
                Ok(()),
                Some(self.begin_and_query(connection, sql, params).await),
            ),
            Err(e) => (Err(e), None),
        }
    }

    /// As [`begin_and_query`](Self::begin_and_query), but `sql` runs with a plan that takes
    /// its rows by index and never scans the whole table, even when the plan was made while the
    /// table was empty (PostgreSQL's cached plans). Drivers whose plans cannot go wrong that
    /// way just run it.
    ///
    /// With `lock_wait`, a statement of the transaction that waits longer than that for a row
    /// lock fails with a [lock timeout](DriverError::is_lock_timeout) instead of waiting on
    /// (PostgreSQL's `lock_timeout`, local to the transaction). Drivers whose transactions
    /// never wait on each other's rows (SQLite) or cannot bound the wait for one transaction
    /// alone (SQL Server's `LOCK_TIMEOUT` outlives it on the pooled connection) ignore it.
    async fn begin_and_query_by_index(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
        lock_wait: Option<std::time::Duration>,
    ) -> DriverResult<Vec<Row>> {
        let _ = lock_wait;
        self.begin_and_query(connection, sql, params).await
    }

    /// Runs a DDL script (several statements). Where the dialect's scripts look names up in the
    /// catalog as values (SQL Server), `names` are bound in order (`@P1` the schema, `@P2` the
    /// table, `@P3` an index); other dialects ignore them.
    async fn run_script(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        names: &[&str],
    ) -> DriverResult<()>;

    /// Runs SQL text an operator gave (`admin::Database::execute`) on a connection in no
    /// transaction, as the server runs a text of several statements. PostgreSQL runs such a
    /// text as one transaction; its driver keeps that while sending the statements one at a
    /// time, because Citus refuses a `CREATE INDEX` in a text of several.
    async fn run_sql_alone(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
    ) -> DriverResult<()> {
        self.run_script(connection, sql, &[]).await
    }

    /// Runs one of the framework's creation scripts (`CREATE … IF NOT EXISTS`, upgrades), as
    /// [`Driver::run_script`] does, without the server's notices about what exists already
    /// (PostgreSQL sends one per existing table, which its client logs).
    async fn run_creation_script(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        names: &[&str],
    ) -> DriverResult<()> {
        self.run_script(connection, sql, names).await
    }
}

/// Cross-process wake-ups ([`Driver::wake_channel`]): payloads sent on `announce` reach every
/// process listening on the database (this one included) through `heard`.
pub(crate) struct WakeChannel {
    pub announce: tokio::sync::mpsc::UnboundedSender<Announcement>,
    pub heard: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// What a [`WakeChannel`] is asked to do.
#[derive(Debug)]
// Only PostgreSQL's channel reads the payload; without it the channel never exists.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum Announcement {
    /// Tell other processes about this payload (a queue that got messages).
    Queue(String),
    /// Answer once everything announced before has been sent (a bus that stops).
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// How long a connection that keeps failing in the background (a LISTEN connection, the watch
/// of idle queues) waits before it tries again after `failures` failures in a row: 500 ms,
/// doubling, at most 30 s.
pub(crate) fn background_retry_wait(failures: u32) -> std::time::Duration {
    std::time::Duration::from_millis(250)
        .saturating_mul(2u32.saturating_pow(failures.min(8)))
        .min(std::time::Duration::from_secs(30))
}

/// How long one database statement (or commit) may take before its connection is dropped as
/// frozen, unless configured (ADO.NET's default command timeout). Here, below every layer that
/// needs it.
pub const DEFAULT_DATABASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long database calls may take before the connection is dropped as frozen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadlines {
    /// Taking a connection from the pool, opening it if needed (TCP, TLS, login).
    pub connect: Duration,
    /// One statement, a commit, a begin.
    pub statement: Duration,
}

/// A pooled connection, possibly with a transaction open. Dropped without [`Held::release`] or
/// [`Held::commit`], it is discarded ([`Driver::discard`]); so is one whose call ran past its
/// deadline, whatever happens next.
pub(crate) struct Held<D: Driver> {
    driver: Arc<D>,
    connection: Option<D::Connection>,
    deadlines: Deadlines,
    /// A call ran past its deadline: the connection may be mid-reply, never reuse it.
    frozen: bool,
    /// It moved a value larger than [`LARGE_VALUE`] on a driver whose connections keep their
    /// buffers: closed when given back, so its memory is given back too.
    retire: bool,
    /// It moved a value larger than [`LARGE_VALUE`] (on any driver): the process's freed
    /// memory is given back to the system soon after the connection is ([`heap`]).
    moved_large: bool,
}

/// The size from which a value a connection moved makes it close when given back (where the
/// driver [keeps large buffers](Driver::keeps_large_buffers)).
pub(crate) const LARGE_VALUE: usize = 4 * 1024 * 1024;

/// Runs `call` within `deadline`.
async fn bounded<T>(
    deadline: Duration,
    what: &str,
    call: impl std::future::Future<Output = DriverResult<T>>,
) -> DriverResult<T> {
    match tokio::time::timeout(deadline, call).await {
        Ok(result) => result,
        Err(_) => Err(DriverError::timed_out(what, deadline)),
    }
}

impl<D: Driver> Held<D> {
    /// Takes a connection from `driver`'s pool within the connect deadline.
    pub async fn take(driver: &Arc<D>, deadlines: Deadlines) -> DriverResult<Self> {
        Self::take_within_connect(driver, deadlines, driver.connection()).await
    }

    /// As [`take`](Self::take), for a receive ([`Driver::connection_for_receive`]).
    pub async fn take_for_receive(driver: &Arc<D>, deadlines: Deadlines) -> DriverResult<Self> {
        Self::take_within_connect(driver, deadlines, driver.connection_for_receive()).await
    }

    /// The connection `connecting` gives, within the connect deadline.
    async fn take_within_connect(
        driver: &Arc<D>,
        deadlines: Deadlines,
        connecting: impl std::future::Future<Output = DriverResult<D::Connection>>,
    ) -> DriverResult<Self> {
        driver.wait_for_room().await;
        let connection = bounded(
            deadlines.connect,
            "opening a database connection",
            connecting,
        )
        .await?;
        Ok(Held {
            driver: driver.clone(),
            connection: Some(connection),
            deadlines,
            frozen: false,
            retire: false,
            moved_large: false,
        })
    }

    /// Runs `statement`, a write that commits on its own, sharing the commit of the transaction
    /// that holds `driver`'s connection where it can ([`Driver::execute_sharing_commit`]),
    /// within the connect and statement deadlines together.
    pub async fn execute_sharing_commit(
        driver: &Arc<D>,
        deadlines: Deadlines,
        statement: &Statement,
    ) -> DriverResult<u64> {
        bounded(
            deadlines.connect.saturating_add(deadlines.statement),
            "a write sharing another transaction's commit",
            driver.execute_sharing_commit(statement),
        )
        .await
    }

    /// The driver the connection belongs to.
    pub fn driver_of(&self) -> &D {
        &self.driver
    }

    /// The connection itself, for statements the framework does not write (a handler's own).
    /// `None` once it was given back or lost.
    pub fn connection_mut(&mut self) -> Option<&mut D::Connection> {
        self.connection.as_mut()
    }

    /// Gives the connection back to the pool: call only when no transaction is open.
    pub fn release(mut self) {
        self.give_back_large();
        if let Some(connection) = self.connection.take() {
            if self.frozen || self.retire {
                self.driver.discard(connection);
            } else {
                self.driver.release(connection);
            }
        }
    }

    /// Commits the open transaction and gives the connection back; on failure the connection
    /// is discarded (the server rolls back).
    pub async fn commit(mut self) -> DriverResult<()> {
        self.give_back_large();
        let driver = self.driver.clone();
        let mut connection = self.connection.take().ok_or_else(|| {
            DriverError::other(
                FailureKind::Permanent,
                "the connection was already given back",
            )
        })?;
        let committed = bounded(
            self.deadlines.statement,
            "a commit",
            driver.commit(&mut connection),
        )
        .await;
        match committed {
            Ok(()) if !self.frozen && !self.retire => {
                driver.release(connection);
                Ok(())
            }
            Ok(()) => {
                driver.discard(connection);
                Ok(())
            }
            Err(e) => {
                driver.discard(connection);
                Err(e)
            }
        }
    }
}

impl<D: Driver> Held<D> {
    /// After a large value, asks for the freed memory to go back to the system soon.
    fn give_back_large(&mut self) {
        if std::mem::take(&mut self.moved_large) {
            heap::give_back_soon();
        }
    }
}

impl<D: Driver> Drop for Held<D> {
    fn drop(&mut self) {
        self.give_back_large();
        if let Some(connection) = self.connection.take() {
            self.driver.discard(connection);
        }
    }
}
