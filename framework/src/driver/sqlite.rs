//! SQLite: rusqlite, bundled, so no system library is needed. Connect, bind, decode; nothing
//! else.
//!
//! SQLite allows one writer per database file. All endpoints of a process that use the same file
//! share one connection behind an async mutex; "taking a connection from the pool" takes that
//! mutex, and a receive holds it (with `BEGIN IMMEDIATE`, the file's write lock) while its
//! handler runs, so no two receivers can take the same row. Other processes on the same file wait
//! on SQLite's busy timeout. Statements run on tokio's blocking threads.
//!
//! The database runs in WAL mode with `synchronous = FULL`: a committed message survives a crash
//! of the process and of the machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::types::{ToSqlOutput, ValueRef};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::sqlite_riders::{self, Board, Boarded};
use super::{
    Driver, DriverError, DriverResult, FailureKind, OwnedParam, Param, Row, Statement, Value,
};
use crate::sql::{Dialect, SQLITE};

/// How SQLite stores UTC times: text, so that text order is time order (what `strftime` in the
/// statement files writes).
const SQLITE_TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f";

/// How long a statement waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a receiver may keep the file's connection from one message to the next while other
/// receivers wait for it (when nothing else waits): long enough to save most trips to a blocking
/// thread under load, short enough that another queue's receiver waits about one message longer.
const KEEP_WHILE_RECEIVERS_WAIT: Duration = Duration::from_millis(10);

/// How long after another process last committed to the file a receiver lets the connection go
/// at every commit again: another process's writer waits on SQLite's busy handler, which looks
/// now and then, and must find the file's lock free between two of this process's messages.
const OTHERS_WROTE_WITHIN: Duration = Duration::from_secs(10);

/// The one connection of this process to a file, and who waits for it.
struct SharedFile {
    connection: Arc<AsyncMutex<rusqlite::Connection>>,
    /// Users other than receives waiting to take the connection (sends, peeks, maintenance):
    /// while any does, a commit lets the connection go instead of keeping it for the next
    /// receive (see [`SqliteDriver::pipelines_commit`]).
    waiting: AtomicUsize,
    /// Receives waiting to take the connection: a receiver keeps it for the next message for at
    /// most [`KEEP_WHILE_RECEIVERS_WAIT`] while any does.
    receives_waiting: AtomicUsize,
    /// When the connection's holder first kept it for a next receive while receives waited;
    /// `None` when it has not (reset each time the connection changes hands).
    kept_since: Mutex<Option<Instant>>,
    /// `PRAGMA data_version` as the connection last read it (`i64::MIN` before the first read):
    /// it changes when another connection (another process) committed to the file.
    data_version: std::sync::atomic::AtomicI64,
    /// When the connection last saw that another connection had committed to the file.
    others_wrote_at: Mutex<Option<Instant>>,
    /// Writes waiting to share the next commit (see [`super::sqlite_riders`]).
    riders: Arc<Mutex<Board>>,
}

impl SharedFile {
    /// Takes the connection, counted in `waiting` (when given) until it has it.
    async fn take(&self, waiting: Option<&AtomicUsize>) -> OwnedMutexGuard<rusqlite::Connection> {
        let guard = {
            let _waiting = waiting.map(Waiting::start);
            self.connection.clone().lock_owned().await
        };
        *self.kept_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
        guard
    }

    /// Whether the holder keeps the connection for its next receive now (see
    /// [`SqliteDriver::pipelines_commit`]).
    fn keep_for_next_receive(&self) -> bool {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            return false;
        }
        let others_wrote_at = *self
            .others_wrote_at
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if others_wrote_at.is_some_and(|at| at.elapsed() < OTHERS_WROTE_WITHIN) {
            return false;
        }
        if self.receives_waiting.load(Ordering::SeqCst) == 0 {
            return true;
        }
        let mut kept_since = self.kept_since.lock().unwrap_or_else(|p| p.into_inner());
        let since = *kept_since.get_or_insert_with(Instant::now);
        since.elapsed() < KEEP_WHILE_RECEIVERS_WAIT
    }

    /// Reads whether another connection committed to the file since the last look (shared
    /// memory, no disk I/O) and notes when it did. A failed read is taken as a write, so that
    /// the connection is let go at every commit rather than kept.
    fn note_other_writers(&self, conn: &rusqlite::Connection) {
        let read = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get::<_, i64>(0)));
        let others_wrote = match read {
            Ok(version) => {
                let before = self.data_version.swap(version, Ordering::SeqCst);
                before != i64::MIN && before != version
            }
            Err(e) => {
                tracing::debug!(error = %e, "could not read the SQLite file's data_version");
                true
            }
        };
        if others_wrote {
            *self
                .others_wrote_at
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }

    /// Runs the writes waiting to share a commit in `conn`'s open transaction, commits, and
    /// tells each how it went.
    fn commit_with_riders(&self, conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        let riders = sqlite_riders::take_all(&self.riders);
        let aboard = sqlite_riders::run_aboard(conn, riders, execute_statement);
        let committed = run_cached(conn, "COMMIT");
        sqlite_riders::tell(aboard, &committed);
        committed
    }
}

type SharedConnection = Arc<SharedFile>;

/// Counts one user among a file's waiting ones for as long as it lives (also when its wait is
/// cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn start(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The file's connection, held by one user at a time. `None` only while a statement runs on a
/// blocking thread, or after that thread was lost.
pub(crate) struct SqliteConnection(Option<OwnedMutexGuard<rusqlite::Connection>>);

/// An SQLite database file.
pub(crate) struct SqliteDriver {
    connection: SharedConnection,
    target: String,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDriver")
            .field("target", &self.target)
            .finish()
    }
}

pub(crate) fn error(e: rusqlite::Error) -> DriverError {
    let (code, kind) = match &e {
        rusqlite::Error::SqliteFailure(failure, _) => (
            Some(failure.extended_code.to_string()),
            classify(failure.code),
        ),
        _ => (None, FailureKind::Permanent),
    };
    DriverError::new(code, kind, e)
}

/// Another process holding the file (busy, locked), a full disk, an I/O error or a file that
/// cannot be opened may pass; anything else (no such table, a constraint, a value too big) will
/// not.
fn classify(code: rusqlite::ErrorCode) -> FailureKind {
    use rusqlite::ErrorCode::*;
    match code {
        DatabaseBusy | DatabaseLocked | SystemIoFailure | DiskFull | CannotOpen | OutOfMemory => {
            FailureKind::Transient
        }
        _ => FailureKind::Permanent,
    }
}

/// The connections this process has open, by canonical file path.
fn open_files() -> &'static Mutex<HashMap<PathBuf, Weak<SharedFile>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<SharedFile>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

fn canonical(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match (parent.canonicalize(), path.file_name()) {
        (Ok(dir), Some(file)) => dir.join(file),
        _ => path.to_path_buf(),
    }
}

/// The connection of this process to the file at `path`, opened on first use. Blocks: call it on
/// a blocking thread. The registry stays locked while a file is opened, so a process never has two
/// connections to one file.
fn shared_connection(path: &Path) -> rusqlite::Result<SharedConnection> {
    let key = canonical(path);
    let mut files = open_files().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(conn) = files.get(&key).and_then(Weak::upgrade) {
        return Ok(conn);
    }
    let conn = Arc::new(SharedFile {
        connection: Arc::new(AsyncMutex::new(open_connection(path)?)),
        waiting: AtomicUsize::new(0),
        receives_waiting: AtomicUsize::new(0),
        kept_since: Mutex::new(None),
        data_version: std::sync::atomic::AtomicI64::new(i64::MIN),
        others_wrote_at: Mutex::new(None),
        riders: Arc::default(),
    });
    files.insert(key, Arc::downgrade(&conn));
    Ok(conn)
}

fn open_connection(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Switching to WAL needs a moment alone with the file, and SQLite does not wait for it on its
    // own: retry while another process holds the file, up to the busy timeout.
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => break,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
    conn.execute_batch("PRAGMA synchronous = FULL;")?;
    conn.set_prepared_statement_cache_capacity(128);
    Ok(conn)
}

/// Rolls back a transaction left open on the connection (by a cancelled or failed user).
fn reset(conn: &rusqlite::Connection) {
    if !conn.is_autocommit() {
        if let Err(e) = conn.execute_batch("ROLLBACK") {
            tracing::warn!(error = %e, "could not roll back a transaction left open on SQLite");
        }
    }
}

impl SqliteDriver {
    /// Opens (or creates) the database file, sharing the connection with every other endpoint of
    /// this process that uses the same file.
    pub async fn open(path: &Path) -> DriverResult<Self> {
        let open_path = path.to_path_buf();
        let connection = tokio::task::spawn_blocking(move || shared_connection(&open_path))
            .await
            .map_err(|e| {
                DriverError::other(
                    FailureKind::Transient,
                    format!("opening the file failed: {e}"),
                )
            })?
            .map_err(error)?;
        Ok(SqliteDriver {
            connection,
            target: path.display().to_string(),
            path: path.to_path_buf(),
        })
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Uuid(id) => ToSqlOutput::from(id.to_string()),
            Param::Text(Some(text)) => ToSqlOutput::from(*text),
            Param::Bytes(Some(bytes)) => ToSqlOutput::from(*bytes),
            Param::BigInt(Some(n)) => ToSqlOutput::from(*n),
            Param::Int(n) => ToSqlOutput::from(*n),
            Param::Time(Some(t)) => ToSqlOutput::from(t.format(SQLITE_TIME_FORMAT).to_string()),
            Param::Text(None) | Param::Bytes(None) | Param::BigInt(None) | Param::Time(None) => {
                ToSqlOutput::from(rusqlite::types::Null)
            }
        })
    }
}

fn cell(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Int(n),
        ValueRef::Real(f) => Value::Float(f),
        ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => Value::Text(text.to_string()),
            Err(_) => Value::Bytes(bytes.to_vec()),
        },
        ValueRef::Blob(bytes) => Value::Bytes(bytes.to_vec()),
    }
}

/// A connection just taken, without the transaction a cancelled user may have left open on it.
async fn ready(mut connection: SqliteConnection) -> DriverResult<SqliteConnection> {
    if connection.0.as_ref().is_some_and(|c| !c.is_autocommit()) {
        blocking(&mut connection, |c| {
            reset(c);
            Ok(())
        })
        .await?;
    }
    Ok(connection)
}

/// Runs `f` with the connection on a blocking thread and puts the connection back.
pub(crate) async fn blocking<T, F>(connection: &mut SqliteConnection, f: F) -> DriverResult<T>
where
    T: Send + 'static,
    F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
{
    let mut guard = connection.0.take().ok_or_else(|| {
        DriverError::other(
            FailureKind::Transient,
            "the SQLite connection was lost by a failed statement",
        )
    })?;
    let (guard, result) = tokio::task::spawn_blocking(move || {
        let result = f(&mut guard);
        (guard, result)
    })
    .await
    .map_err(|e| {
        DriverError::other(
            FailureKind::Transient,
            format!("a statement's thread failed: {e}"),
        )
    })?;
    connection.0 = Some(guard);
    result.map_err(error)
}

/// Runs a handler's `f` on a blocking thread with `connection`, interrupting its statements
/// once `deadline` has passed (`sqlite3_interrupt`): they then fail, and the call is reported as
/// a timeout (transient). Work that is not a statement cannot be interrupted; it is waited for.
pub(crate) async fn blocking_within<T, F>(
    connection: &mut SqliteConnection,
    deadline: Duration,
    what: &str,
    f: F,
) -> DriverResult<T>
where
    T: Send + 'static,
    F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
{
    let mut guard = connection.0.take().ok_or_else(|| {
        DriverError::other(
            FailureKind::Transient,
            "the SQLite connection was lost by a failed statement",
        )
    })?;
    let interrupt = guard.get_interrupt_handle();
    let work = tokio::task::spawn_blocking(move || {
        let result = f(&mut guard);
        (guard, result)
    });
    tokio::pin!(work);
    let (finished, timed_out) = match tokio::time::timeout(deadline, &mut work).await {
        Ok(finished) => (finished, false),
        Err(_) => {
            interrupt.interrupt();
            ((&mut work).await, true)
        }
    };
    let (guard, result) = finished.map_err(|e| {
        DriverError::other(
            FailureKind::Transient,
            format!("a statement's thread failed: {e}"),
        )
    })?;
    connection.0 = Some(guard);
    match result {
        Err(_) if timed_out => Err(DriverError::timed_out(what, deadline)),
        other => other.map_err(error),
    }
}

/// Whether `e` may pass when tried again.
pub(crate) fn kind_of(e: &rusqlite::Error) -> FailureKind {
    match e {
        rusqlite::Error::SqliteFailure(failure, _) => classify(failure.code),
        _ => FailureKind::Permanent,
    }
}

/// Runs a statement without parameters or rows (`BEGIN`, `COMMIT`) from the connection's cache
/// of prepared statements: every transaction runs two, and parsing them anew each time was a
/// fair part of what a message cost.
fn run_cached(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// Runs one statement; returns how many rows it changed (or returned, with `RETURNING`).
fn execute_statement(conn: &rusqlite::Connection, statement: &Statement) -> rusqlite::Result<u64> {
    let bound = statement.params();
    let mut prepared = conn.prepare_cached(&statement.sql)?;
    // A statement with RETURNING is run as a query; count its rows.
    if prepared.readonly() || prepared.column_count() > 0 {
        let mut rows = prepared.query(rusqlite::params_from_iter(bound.iter()))?;
        let mut n = 0;
        while rows.next()?.is_some() {
            n += 1;
        }
        return Ok(n);
    }
    Ok(prepared.execute(rusqlite::params_from_iter(bound.iter()))? as u64)
}

fn run_query(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[OwnedParam],
) -> rusqlite::Result<Vec<Row>> {
    let mut statement = conn.prepare_cached(sql)?;
    let columns = statement.column_count();
    let bound: Vec<Param<'_>> = params.iter().map(OwnedParam::as_param).collect();
    let mut rows = statement.query(rusqlite::params_from_iter(bound.iter()))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut cells = Vec::with_capacity(columns);
        for i in 0..columns {
            cells.push(match row.get_ref(i) {
                Ok(value) => cell(value),
                Err(e) => Value::Undecodable(e.to_string()),
            });
        }
        out.push(Row(cells));
    }
    Ok(out)
}

#[async_trait]
impl Driver for SqliteDriver {
    type Connection = SqliteConnection;

    fn dialect(&self) -> &'static Dialect {
        &SQLITE
    }

    fn watch_changes(&self) -> Option<super::WakeChannel> {
        Some(super::sqlite_watch::start(&self.path))
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn single_writer(&self) -> bool {
        true
    }

    fn permission_denied(&self, error: &DriverError) -> bool {
        // SQLITE_READONLY and its extended codes (the low byte is 8), SQLITE_AUTH (23).
        error
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == 8 || c == 23)
    }

    fn connect_advice(&self, error: &DriverError) -> String {
        if error.is_timeout() {
            // The file's one connection is shared by every bus of this process: a receive
            // holds it (with the write lock) for as long as its handler runs.
            return "this process's one connection to the file was busy all along: SQLite has \
                    one writer, and a running handler's receive holds it until the handler \
                    ends; give long handlers a shorter handler_timeout, run other buses of the \
                    same file in another process, or use PostgreSQL or SQL Server for work \
                    that must not wait"
                .into();
        }
        "check that the directory exists and is writable, and that the file is an SQLite database"
            .into()
    }

    async fn connection(&self) -> DriverResult<SqliteConnection> {
        let file = &self.connection;
        ready(SqliteConnection(Some(file.take(Some(&file.waiting)).await))).await
    }

    async fn connection_for_receive(&self) -> DriverResult<SqliteConnection> {
        let file = &self.connection;
        ready(SqliteConnection(Some(
            file.take(Some(&file.receives_waiting)).await,
        )))
        .await
    }

    fn shares_commits(&self) -> bool {
        true
    }

    /// Boards the write for the next commit on the file's connection and waits for the
    /// connection too: whichever comes first decides (see [`sqlite_riders`]). Waiting here does
    /// not count as a waiting send, so a receiver keeps the connection from one message to the
    /// next and takes the write along with each commit.
    async fn execute_sharing_commit(&self, statement: &Statement) -> DriverResult<u64> {
        let file = &self.connection;
        let mut boarded = Boarded::new(&file.riders, statement.clone());
        let guard = tokio::select! {
            biased;
            told = &mut boarded.outcome => {
                return told.unwrap_or_else(|_| Err(sqlite_riders::never_told()));
            }
            guard = file.take(None) => guard,
        };
        // The connection is ours: no commit can take the write any more. Run it alone, unless
        // the commit that just ended took it.
        let Some(rider) = boarded.alight() else {
            drop(guard);
            return (&mut boarded.outcome)
                .await
                .unwrap_or_else(|_| Err(sqlite_riders::never_told()));
        };
        let mut connection = ready(SqliteConnection(Some(guard))).await?;
        let statement = rider.statement;
        blocking(&mut connection, move |c| execute_statement(c, &statement)).await
    }

    fn release(&self, connection: SqliteConnection) {
        drop(connection);
    }

    fn discard(&self, mut connection: SqliteConnection) {
        // Roll back here, on this thread, before the lock is let go: a ROLLBACK never waits for
        // another lock, and deferring it could leave the file's write lock held for other
        // processes if the runtime is shutting down.
        if let Some(guard) = connection.0.take() {
            reset(&guard);
        }
    }

    async fn begin(&self, connection: &mut SqliteConnection) -> DriverResult<()> {
        blocking(connection, |c| run_cached(c, "BEGIN IMMEDIATE")).await
    }

    /// Commits, with the writes that wait to share this commit (see [`sqlite_riders`]).
    async fn commit(&self, connection: &mut SqliteConnection) -> DriverResult<()> {
        let file = self.connection.clone();
        blocking(connection, move |c| file.commit_with_riders(c)).await
    }

    async fn execute(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64> {
        let statement = Statement::new(sql, params);
        blocking(connection, move |c| execute_statement(c, &statement)).await
    }

    async fn query(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        let sql = sql.to_string();
        let params: Vec<OwnedParam> = params.iter().map(OwnedParam::of).collect();
        blocking(connection, move |c| run_query(c, &sql, &params)).await
    }

    /// A receiver that keeps the file's one connection from one message to the next saves a
    /// trip to a blocking thread per message. It does so while nothing but receives waits for
    /// the connection, and while receives wait only for [`KEEP_WHILE_RECEIVERS_WAIT`] in a row:
    /// a send or a peek gets the connection at the next commit, another queue's receiver about
    /// one message later than it would otherwise. Not for [`OTHERS_WROTE_WITHIN`] after another
    /// process committed to the file: its writers wait on SQLite's busy handler, which finds the
    /// lock free only between two of this process's transactions.
    fn pipelines_commit(&self) -> bool {
        self.connection.keep_for_next_receive()
    }

    /// COMMIT, then BEGIN IMMEDIATE and the query, in one trip to a blocking thread.
    async fn commit_then_begin_and_query(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        params: &[Param<'_>],
    ) -> (DriverResult<()>, Option<DriverResult<Vec<Row>>>) {
        let sql = sql.to_string();
        let params: Vec<OwnedParam> = params.iter().map(OwnedParam::of).collect();
        let file = self.connection.clone();
        let both = blocking(connection, move |c| {
            // A failed COMMIT is the outer error; the receive's own outcome is the inner one.
            file.commit_with_riders(c)?;
            file.note_other_writers(c);
            Ok(run_cached(c, "BEGIN IMMEDIATE").and_then(|()| run_query(c, &sql, &params)))
        })
        .await;
        match both {
            Ok(received) => (Ok(()), Some(received.map_err(error))),
            Err(e) => (Err(e), None),
        }
    }

    async fn begin_and_query(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        let sql = sql.to_string();
        let params: Vec<OwnedParam> = params.iter().map(OwnedParam::of).collect();
        // One trip to a blocking thread for both.
        blocking(connection, move |c| {
            run_cached(c, "BEGIN IMMEDIATE")?;
            run_query(c, &sql, &params)
        })
        .await
    }

    async fn run_script(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        _names: &[&str],
    ) -> DriverResult<()> {
        let sql = sql.to_string();
        blocking(connection, move |c| c.execute_batch(&sql)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waiting past the deadline for the file's one connection is a busy writer in this
    /// process, not a missing directory: the advice says so.
    #[tokio::test]
    async fn a_connection_wait_past_its_deadline_is_explained_as_the_one_writer() {
        let path = std::env::temp_dir().join(format!("nimbus-advice-{}.db", uuid::Uuid::new_v4()));
        let driver = SqliteDriver::open(&path).await.unwrap();
        let timeout = DriverError::timed_out(
            "opening a database connection",
            std::time::Duration::from_secs(1),
        );
        let advice = driver.connect_advice(&timeout);
        assert!(
            advice.contains("one writer") && advice.contains("handler"),
            "{advice}"
        );
        let other = DriverError::other(FailureKind::Permanent, "unable to open database file");
        assert!(driver.connect_advice(&other).contains("directory exists"));
        drop(driver);
        remove_database(&path);
    }

    fn remove_database(path: &Path) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }

    /// A commit keeps the connection for the next receive (one trip to a blocking thread for
    /// both) only while nothing but receives waits for it, and while receives wait only for
    /// the keep window: a waiting send gets the connection at the next commit.
    #[tokio::test]
    async fn a_commit_keeps_the_connection_for_the_next_receive_while_only_receives_wait_briefly() {
        let path = std::env::temp_dir().join(format!("nimbus-keep-{}.db", uuid::Uuid::new_v4()));
        let driver = Arc::new(SqliteDriver::open(&path).await.unwrap());
        let held = driver.connection().await.unwrap();
        assert!(driver.pipelines_commit(), "nobody else waits yet");
        let other = driver.clone();
        let waiter = tokio::spawn(async move {
            let connection = other.connection().await?;
            other.release(connection);
            DriverResult::Ok(())
        });
        while driver.connection.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        assert!(
            !driver.pipelines_commit(),
            "another task waits for the connection: the commit must let it go"
        );
        driver.release(held);
        waiter.await.unwrap().unwrap();
        assert!(driver.pipelines_commit(), "the waiter has had its turn");

        // Only other receives wait: kept for a few messages more, then let go.
        let held = driver.connection_for_receive().await.unwrap();
        let other = driver.clone();
        let receiver = tokio::spawn(async move {
            let connection = other.connection_for_receive().await?;
            other.release(connection);
            DriverResult::Ok(())
        });
        while driver.connection.receives_waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let kept_from = Instant::now();
        assert!(
            driver.pipelines_commit(),
            "only a receive waits: kept for the next message"
        );
        while driver.pipelines_commit() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(
            kept_from.elapsed() >= KEEP_WHILE_RECEIVERS_WAIT,
            "let go only after the keep window"
        );
        driver.release(held);
        receiver.await.unwrap().unwrap();
        assert!(
            driver.pipelines_commit(),
            "a new holder's window starts afresh"
        );
        drop(driver);
        remove_database(&path);
    }

    /// Once another process has committed to the file, a commit lets the connection go again
    /// (that process's writers find the lock free only between two transactions of this one).
    #[tokio::test]
    async fn a_commit_lets_the_connection_go_once_another_process_writes_to_the_file() {
        let path = std::env::temp_dir().join(format!("nimbus-others-{}.db", uuid::Uuid::new_v4()));
        let driver = SqliteDriver::open(&path).await.unwrap();
        let mut held = driver.connection_for_receive().await.unwrap();
        driver
            .execute(&mut held, "CREATE TABLE t (x INTEGER)", &[])
            .await
            .unwrap();
        driver.begin(&mut held).await.unwrap();
        let (committed, rows) = driver
            .commit_then_begin_and_query(&mut held, "SELECT count(*) FROM t", &[])
            .await;
        committed.unwrap();
        rows.unwrap().unwrap();
        driver.commit(&mut held).await.unwrap();
        driver.release(held);
        assert!(driver.pipelines_commit(), "nobody else has written yet");

        // Another process's connection to the same file commits a row.
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute("INSERT INTO t VALUES (1)", []).unwrap();

        let mut held = driver.connection_for_receive().await.unwrap();
        driver.begin(&mut held).await.unwrap();
        let (committed, rows) = driver
            .commit_then_begin_and_query(&mut held, "SELECT count(*) FROM t", &[])
            .await;
        committed.unwrap();
        assert_eq!(rows.unwrap().unwrap().len(), 1);
        driver.commit(&mut held).await.unwrap();
        driver.release(held);
        assert!(
            !driver.pipelines_commit(),
            "another process writes to the file: let the connection go at every commit"
        );
        drop((driver, other));
        remove_database(&path);
    }

    /// The rows of `t`, counted on `held`.
    async fn rows_in_t(driver: &SqliteDriver, held: &mut SqliteConnection) -> i64 {
        let rows = driver
            .query(held, "SELECT count(*) FROM t", &[])
            .await
            .unwrap();
        match rows[0].0[0] {
            Value::Int(n) => n,
            ref other => panic!("count(*) gave {other:?}"),
        }
    }

    /// A driver on a new file with an empty table `t`, its connection held in a transaction
    /// that wrote one row.
    async fn holding_a_transaction(name: &str) -> (Arc<SqliteDriver>, SqliteConnection, PathBuf) {
        let path = std::env::temp_dir().join(format!("nimbus-{name}-{}.db", uuid::Uuid::new_v4()));
        let driver = Arc::new(SqliteDriver::open(&path).await.unwrap());
        let mut held = driver.connection().await.unwrap();
        driver
            .execute(&mut held, "CREATE TABLE t (x INTEGER)", &[])
            .await
            .unwrap();
        driver.begin(&mut held).await.unwrap();
        driver
            .execute(&mut held, "INSERT INTO t VALUES (1)", &[])
            .await
            .unwrap();
        (driver, held, path)
    }

    /// Starts a write that shares a commit, and waits until it is on the board.
    async fn board(
        driver: &Arc<SqliteDriver>,
        sql: &str,
    ) -> tokio::task::JoinHandle<DriverResult<u64>> {
        let before = driver.connection.riders.lock().unwrap().len();
        let (other, statement) = (driver.clone(), Statement::new(sql, &[]));
        let writer = tokio::spawn(async move { other.execute_sharing_commit(&statement).await });
        while driver.connection.riders.lock().unwrap().len() == before {
            tokio::task::yield_now().await;
        }
        writer
    }

    /// A write that finds the connection held by a transaction commits with that transaction's
    /// commit, under one COMMIT, and hears so while the holder still has the connection.
    #[tokio::test]
    async fn a_write_shares_the_commit_of_the_transaction_holding_the_connection() {
        let (driver, mut held, path) = holding_a_transaction("ride").await;
        let writer = board(&driver, "INSERT INTO t VALUES (2)").await;
        assert!(!writer.is_finished(), "nothing committed yet");
        driver.commit(&mut held).await.unwrap();
        // Without sharing, the write would wait for the connection held here for ever.
        let written = tokio::time::timeout(Duration::from_secs(60), writer)
            .await
            .expect("the write must commit with the holder's commit")
            .unwrap();
        assert_eq!(written.unwrap(), 1, "its own statement's row count");
        // Still held here: the write never had the connection to itself.
        assert_eq!(rows_in_t(&driver, &mut held).await, 2);
        driver.release(held);
        drop(driver);
        remove_database(&path);
    }

    /// A write the database refuses fails its own writer only; the transaction it rode commits.
    #[tokio::test]
    async fn a_refused_write_fails_only_its_writer_and_the_commit_goes_through() {
        let (driver, mut held, path) = holding_a_transaction("refused").await;
        let refused = board(&driver, "INSERT INTO missing VALUES (1)").await;
        let accepted = board(&driver, "INSERT INTO t VALUES (3)").await;
        driver.commit(&mut held).await.unwrap();
        let error = tokio::time::timeout(Duration::from_secs(60), refused)
            .await
            .expect("the refused write must hear of it at the holder's commit")
            .unwrap()
            .unwrap_err();
        assert_eq!(error.kind(), FailureKind::Permanent);
        assert!(error.to_string().contains("missing"), "{error}");
        assert_eq!(accepted.await.unwrap().unwrap(), 1);
        assert_eq!(
            rows_in_t(&driver, &mut held).await,
            2,
            "the holder's row and row 3"
        );
        driver.release(held);
        drop(driver);
        remove_database(&path);
    }

    /// When the holder rolls back instead of committing, the write waits for the connection and
    /// runs alone: nothing of it is lost with the holder's transaction.
    #[tokio::test]
    async fn a_write_whose_holder_rolls_back_runs_on_its_own() {
        let (driver, held, path) = holding_a_transaction("rollback").await;
        let writer = board(&driver, "INSERT INTO t VALUES (2)").await;
        driver.discard(held);
        assert_eq!(writer.await.unwrap().unwrap(), 1);
        let mut held = driver.connection().await.unwrap();
        let rows = driver
            .query(&mut held, "SELECT x FROM t", &[])
            .await
            .unwrap();
        assert_eq!(
            rows,
            vec![Row(vec![Value::Int(2)])],
            "only the write's own row"
        );
        driver.release(held);
        drop(driver);
        remove_database(&path);
    }

    /// A writer that stops waiting (its deadline passed) takes its write off the board: the
    /// next commit does not run it.
    #[tokio::test]
    async fn a_writer_that_stops_waiting_is_not_committed_later() {
        let (driver, mut held, path) = holding_a_transaction("gave-up").await;
        let writer = board(&driver, "INSERT INTO t VALUES (2)").await;
        writer.abort();
        assert!(writer.await.unwrap_err().is_cancelled());
        assert_eq!(driver.connection.riders.lock().unwrap().len(), 0);
        driver.commit(&mut held).await.unwrap();
        assert_eq!(
            rows_in_t(&driver, &mut held).await,
            1,
            "only the holder's row"
        );
        driver.release(held);
        drop(driver);
        remove_database(&path);
    }
}
