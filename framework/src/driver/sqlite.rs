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
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::{ToSqlOutput, ValueRef};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::{Driver, DriverError, DriverResult, FailureKind, OwnedParam, Param, Row, Value};
use crate::sql::{Dialect, SQLITE};

/// How SQLite stores UTC times: text, so that text order is time order (what `strftime` in the
/// statement files writes).
const SQLITE_TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f";

/// How long a statement waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

type SharedConnection = Arc<AsyncMutex<rusqlite::Connection>>;

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
fn open_files() -> &'static Mutex<HashMap<PathBuf, Weak<AsyncMutex<rusqlite::Connection>>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<AsyncMutex<rusqlite::Connection>>>>> =
        OnceLock::new();
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
    let conn = Arc::new(AsyncMutex::new(open_connection(path)?));
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
        let guard = self.connection.clone().lock_owned().await;
        let mut connection = SqliteConnection(Some(guard));
        // A user that was cancelled mid-transaction may have left one open.
        if connection.0.as_ref().is_some_and(|c| !c.is_autocommit()) {
            blocking(&mut connection, |c| {
                reset(c);
                Ok(())
            })
            .await?;
        }
        Ok(connection)
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

    async fn commit(&self, connection: &mut SqliteConnection) -> DriverResult<()> {
        blocking(connection, |c| run_cached(c, "COMMIT")).await
    }

    async fn execute(
        &self,
        connection: &mut SqliteConnection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64> {
        let sql = sql.to_string();
        let params: Vec<OwnedParam> = params.iter().map(OwnedParam::of).collect();
        blocking(connection, move |c| {
            let bound: Vec<Param<'_>> = params.iter().map(OwnedParam::as_param).collect();
            let mut statement = c.prepare_cached(&sql)?;
            // A statement with RETURNING is run as a query; count its rows.
            if statement.readonly() || statement.column_count() > 0 {
                let mut rows = statement.query(rusqlite::params_from_iter(bound.iter()))?;
                let mut n = 0;
                while rows.next()?.is_some() {
                    n += 1;
                }
                return Ok(n);
            }
            Ok(statement.execute(rusqlite::params_from_iter(bound.iter()))? as u64)
        })
        .await
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
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}
