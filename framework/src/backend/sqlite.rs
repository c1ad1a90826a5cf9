//! SQLite driver: rusqlite, bundled, so no system library is needed.
//!
//! SQLite allows one writer per database file. All endpoints of a process that use the same file
//! share one connection behind an async mutex: a receive takes it, runs `BEGIN IMMEDIATE` and the
//! dialect's `DELETE … RETURNING`, and holds it while the handler runs, so handlers on one file
//! run one at a time and no two receivers can ever take the same row. Other processes on the same
//! file wait on SQLite's busy timeout. Blocking calls run on tokio's blocking threads.
//!
//! The database runs in WAL mode with `synchronous = FULL`: a committed message survives a crash
//! of the process and of the machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use uuid::Uuid;

use super::catalog::QueueEntry;
use super::{
    instance_queues, Backend, Catalog, CatalogSettings, RebuildDeadLetter, ReceiveTransaction,
    SweepReport,
};
use crate::dead_letter::DeadLetter;
use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::sql::sqlite::{Sqlite, MAIN_SCHEMA};
use crate::sql::{Dialect, IndexStatement};

const NAME: &str = Sqlite::NAME;
/// How long a statement waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

type SharedConnection = Arc<AsyncMutex<Connection>>;
type Guard = OwnedMutexGuard<Connection>;

/// How SQLite stores UTC times: `strftime('%Y-%m-%d %H:%M:%f')`, so text order is time order.
const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f";

fn to_text(time: Option<chrono::NaiveDateTime>) -> Option<String> {
    time.map(|t| t.format(TIME_FORMAT).to_string())
}

fn from_text(text: Option<String>) -> Option<chrono::NaiveDateTime> {
    text.and_then(|t| chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%d %H:%M:%S%.f").ok())
}

fn db_err(operation: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> NimbusError {
    let operation = operation.into();
    move |e| NimbusError::database(NAME, operation, e)
}

/// The connections this process has open, by canonical file path.
fn open_files() -> &'static Mutex<HashMap<PathBuf, Weak<AsyncMutex<Connection>>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<AsyncMutex<Connection>>>>> = OnceLock::new();
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

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
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

/// Rolls back a transaction a cancelled or panicked operation left open on the shared connection.
fn reset(conn: &Connection) {
    if !conn.is_autocommit() {
        if let Err(e) = conn.execute_batch("ROLLBACK") {
            tracing::warn!(error = %e, "could not roll back a transaction left open on SQLite");
        }
    }
}

/// Runs `f` on a blocking thread with the connection, and gives the guard back. Unless `f`
/// continues a receive's transaction (`continues_transaction`), a transaction left open by a
/// cancelled operation is rolled back first.
async fn blocking<T, F>(
    guard: Guard,
    continues_transaction: bool,
    f: F,
) -> Result<(Guard, rusqlite::Result<T>)>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut guard = guard;
        if !continues_transaction {
            reset(&guard);
        }
        let result = f(&mut guard);
        (guard, result)
    })
    .await
    .map_err(|e| {
        NimbusError::database(
            NAME,
            "running a statement on a blocking thread",
            std::io::Error::other(e.to_string()),
        )
    })
}

/// An SQLite database file holding queues.
pub(crate) struct SqliteBackend {
    shared: Arc<Shared>,
}

struct Shared {
    conn: SharedConnection,
    catalog: Catalog<Sqlite>,
}

impl SqliteBackend {
    /// Opens (or creates) the database file, sharing the connection with every other endpoint of
    /// this process that uses the same file.
    pub async fn open(path: &Path, settings: CatalogSettings) -> Result<Self> {
        let open_path = path.to_path_buf();
        let conn = tokio::task::spawn_blocking(move || shared_connection(&open_path))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r.map_err(std::io::Error::other))
            .map_err(|e| {
                NimbusError::connect(
                    NAME,
                    path.display().to_string(),
                    "check that the directory exists and is writable, and that the file is an \
                     SQLite database",
                    e,
                )
            })?;
        let schema = SchemaName::new(MAIN_SCHEMA)?;
        Ok(SqliteBackend {
            shared: Arc::new(Shared {
                conn,
                catalog: Catalog::new(&settings, schema),
            }),
        })
    }
}

impl Shared {
    async fn lock(&self) -> Guard {
        self.conn.clone().lock_owned().await
    }

    /// Inserts `messages` inside the connection's open transaction; topics are resolved to their
    /// subscribers in the same transaction. Returns the queues it created.
    fn write(
        &self,
        conn: &Connection,
        messages: Vec<OutgoingMessage>,
    ) -> rusqlite::Result<Vec<Arc<QueueEntry>>> {
        let mut created = Vec::new();
        for message in messages {
            let queues: Vec<String> = match &message.destination {
                Destination::Queue(queue) => vec![queue.as_str().to_string()],
                Destination::Topic(topic) => {
                    let mut stmt = conn.prepare_cached(&self.catalog.shared.subscribers)?;
                    let rows = stmt
                        .query_map(rusqlite::params![topic, self.catalog.idle_seconds], |r| {
                            r.get::<_, String>(0)
                        })?;
                    rows.collect::<rusqlite::Result<_>>()?
                }
            };
            for queue in queues {
                let Ok(queue) = QueueName::new(queue) else {
                    // A subscription row with a name no endpoint could have written; skip it.
                    continue;
                };
                let (delay_ms, due_at) = message.delivery.delay_and_due();
                if self.catalog.shared_table() {
                    // Each copy of a published message is its own row, with its own key.
                    let row_id = match message.destination {
                        Destination::Topic(_) => self.catalog.message_ids.next(),
                        Destination::Queue(_) => message.id,
                    };
                    conn.prepare_cached(&self.catalog.shared.messages.insert)?
                        .execute(rusqlite::params![
                            row_id.to_string(),
                            queue.as_str(),
                            crate::shared_envelope::wrap(&message.headers_json, &message.body),
                            message.time_to_be_received_ms,
                            to_text(message.expires_at),
                            delay_ms,
                            to_text(due_at),
                        ])?;
                    continue;
                }
                if message.delivery != Delivery::Immediate {
                    conn.prepare_cached(&self.catalog.shared.insert_delayed)?
                        .execute(rusqlite::params![
                            message.id.to_string(),
                            queue.as_str(),
                            message.correlation_id,
                            message.reply_to_address,
                            message.time_to_be_received_ms,
                            message.headers_json,
                            message.body,
                            to_text(message.expires_at),
                            delay_ms,
                            to_text(due_at),
                        ])?;
                    continue;
                }
                let entry = self.catalog.queue(&queue);
                if !entry.is_known_to_exist() {
                    if self.catalog.auto_create {
                        create_queue(conn, &entry)?;
                    }
                    // Known to exist once this transaction commits its insert.
                    created.push(entry.clone());
                }
                let mut stmt = conn
                    .prepare_cached(&entry.statements.insert)
                    .inspect_err(|_| entry.forget_exists())?;
                stmt.execute(rusqlite::params![
                    message.id.to_string(),
                    message.correlation_id,
                    message.reply_to_address,
                    message.time_to_be_received_ms,
                    message.headers_json,
                    message.body,
                    to_text(message.expires_at),
                ])
                .inspect_err(|_| entry.forget_exists())?;
            }
        }
        Ok(created)
    }
}

/// Inserts `letter`, under a fresh id if its id is taken.
fn insert_dead_letter(conn: &Connection, sql: &str, letter: &DeadLetter) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    for id in [letter.message_id, Uuid::new_v4()] {
        let inserted = stmt.execute(rusqlite::params![
            id.to_string(),
            letter.original_destination,
            letter.body,
            letter.delivery_attempts,
        ])?;
        if inserted == 1 {
            return Ok(());
        }
    }
    Err(rusqlite::Error::StatementChangedRows(0))
}

/// Drops a queue's table, or in the shared-table layout deletes its rows.
fn drop_queue_in(
    conn: &Connection,
    catalog: &Catalog<Sqlite>,
    queue: &QueueName,
) -> rusqlite::Result<()> {
    if catalog.shared_table() {
        conn.prepare_cached(&catalog.shared.messages.delete_destination)?
            .execute([queue.as_str()])?;
        return Ok(());
    }
    conn.execute_batch(&catalog.queue(queue).statements.drop_queue)
}

fn create_queue(conn: &Connection, entry: &QueueEntry) -> rusqlite::Result<()> {
    conn.execute_batch(&entry.statements.create_queue)
}

fn has_last_seen_at(conn: &Connection, sql: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .query_row(sql, [MAIN_SCHEMA], |_| Ok(()))
        .optional()?
        .is_some())
}

fn table_exists(conn: &Connection, sql: &str, table: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .query_row(sql, [MAIN_SCHEMA, table], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Runs `f` inside `BEGIN IMMEDIATE … COMMIT`, rolling back on error.
fn in_transaction<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match f(conn).and_then(|v| conn.execute_batch("COMMIT").map(|()| v)) {
        Ok(v) => Ok(v),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn create_schema(&self, queues: &[QueueName]) -> Result<()> {
        let shared = self.shared.clone();
        let entries: Vec<_> = queues.iter().map(|q| shared.catalog.queue(q)).collect();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            in_transaction(conn, |conn| {
                conn.execute_batch(&shared.catalog.shared.create_subscriptions)?;
                conn.execute_batch(&shared.catalog.shared.create_dead_letters)?;
                if shared.catalog.shared_table() {
                    conn.execute_batch(&shared.catalog.shared.messages.create)?;
                } else {
                    conn.execute_batch(&shared.catalog.shared.create_delayed)?;
                }
                if !has_last_seen_at(conn, &shared.catalog.shared.has_last_seen_at)? {
                    tracing::warn!("upgrading NimbusSubscriptions: adding LastSeenAt");
                    conn.execute_batch(&shared.catalog.shared.upgrade_last_seen_at)?;
                }
                if !shared.catalog.shared_table() {
                    for entry in &entries {
                        create_queue(conn, entry)?;
                    }
                }
                Ok(entries)
            })
        })
        .await?;
        result
            .map_err(db_err("creating the schema"))?
            .iter()
            .for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()> {
        let shared = self.shared.clone();
        let queues = queues.to_vec();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            let s = &shared.catalog.shared;
            let storage = if shared.catalog.shared_table() {
                ("NimbusMessages", &s.messages.create)
            } else {
                ("NimbusDelayedMessages", &s.create_delayed)
            };
            for (table, statement) in [
                ("NimbusSubscriptions", &s.create_subscriptions),
                ("NimbusDeadLetters", &s.create_dead_letters),
                storage,
            ] {
                if !table_exists(conn, &s.table_exists, table)? {
                    return Ok(Err(NimbusError::MissingSchema {
                        backend: NAME,
                        object: format!("table {table}"),
                        statement: statement.clone(),
                    }));
                }
                if table == "NimbusSubscriptions" && !has_last_seen_at(conn, &s.has_last_seen_at)? {
                    return Ok(Err(NimbusError::MissingSchema {
                        backend: NAME,
                        object: "column LastSeenAt of NimbusSubscriptions (added for heartbeats)"
                            .into(),
                        statement: s.upgrade_last_seen_at.clone(),
                    }));
                }
            }
            for queue in &queues {
                let entry = shared.catalog.queue(queue);
                if !shared.catalog.shared_table()
                    && !table_exists(conn, &s.table_exists, queue.as_str())?
                {
                    return Ok(Err(NimbusError::MissingSchema {
                        backend: NAME,
                        object: format!("queue table {:?}", queue.as_str()),
                        statement: entry.statements.create_queue.clone(),
                    }));
                }
                entry.mark_exists();
            }
            Ok(Ok(()))
        })
        .await?;
        result.map_err(db_err("checking the schema"))?
    }

    async fn missing_indexes(&self, queue: &QueueName) -> Result<Vec<IndexStatement>> {
        let shared = self.shared.clone();
        let (table, expected) = if shared.catalog.shared_table() {
            (
                "NimbusMessages".to_string(),
                vec![shared.catalog.shared.messages.index.clone()],
            )
        } else {
            (
                queue.as_str().to_string(),
                shared.catalog.queue(queue).statements.indexes.clone(),
            )
        };
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            let mut stmt = conn.prepare_cached(&shared.catalog.shared.list_indexes)?;
            let names = stmt
                .query_map([MAIN_SCHEMA, table.as_str()], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(expected
                .into_iter()
                .filter(|i| !names.contains(&i.name))
                .collect())
        })
        .await?;
        result.map_err(db_err("listing indexes"))
    }

    async fn peek(&self, queue: &QueueName) -> Result<i64> {
        let shared = self.shared.clone();
        let entry = shared.catalog.queue(queue);
        let destination = queue.as_str().to_string();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            if shared.catalog.shared_table() {
                conn.prepare_cached(&shared.catalog.shared.messages.peek)?
                    .query_row([destination], |r| r.get(0))
            } else {
                conn.prepare_cached(&entry.statements.peek)?
                    .query_row([], |r| r.get(0))
            }
        })
        .await?;
        result.map_err(db_err(format!("peeking at queue {queue:?}")))
    }

    async fn receive(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let shared = self.shared.clone();
        let entry = shared.catalog.queue(queue);
        let shared_table = shared.catalog.shared_table();
        let destination = queue.as_str().to_string();
        let guard = self.shared.lock().await;
        let (guard, result) = blocking(guard, false, move |conn| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let (sql, params): (&str, Vec<String>) = if shared_table {
                (&shared.catalog.shared.messages.receive, vec![destination])
            } else {
                (&entry.statements.receive, Vec::new())
            };
            let row = conn
                .prepare_cached(sql)?
                .query_row(rusqlite::params_from_iter(params), |r| {
                    Ok(ReceivedMessage {
                        row_id: r.get(0)?,
                        correlation_id: r.get(1)?,
                        reply_to_address: r.get(2)?,
                        headers_json: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        body: r.get::<_, Option<Vec<u8>>>(4)?.unwrap_or_default(),
                        expired: r.get(5)?,
                        expires: from_text(r.get(6)?),
                    }
                    .unwrap_envelope(shared_table))
                })
                .optional();
            match row {
                Ok(Some(message)) => Ok(Some(message)),
                Ok(None) => conn.execute_batch("COMMIT").map(|()| None),
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })
        .await?;
        match result.map_err(db_err(format!("receiving from queue {queue:?}")))? {
            None => Ok(None),
            Some(message) => Ok(Some((
                message,
                Box::new(SqliteTransaction {
                    guard: Some(guard),
                    shared: self.shared.clone(),
                }),
            ))),
        }
    }

    async fn send(&self, messages: Vec<OutgoingMessage>) -> Result<()> {
        let shared = self.shared.clone();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            in_transaction(conn, |conn| shared.write(conn, messages))
        })
        .await?;
        result
            .map_err(db_err("sending"))?
            .iter()
            .for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()> {
        let shared = self.shared.clone();
        let (topic, queue_name) = (topic.to_string(), queue.as_str().to_string());
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            conn.prepare_cached(&shared.catalog.shared.subscribe)?
                .execute([topic, queue_name])
        })
        .await?;
        result.map_err(db_err(format!("subscribing queue {queue:?}")))?;
        Ok(())
    }

    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>> {
        let shared = self.shared.clone();
        let subscriptions: Vec<(String, String)> = subscriptions
            .iter()
            .map(|(t, q)| (t.clone(), q.as_str().to_string()))
            .collect();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            let mut stmt = conn.prepare_cached(&shared.catalog.shared.refresh_subscription)?;
            let mut missing = Vec::new();
            for (i, (topic, queue)) in subscriptions.iter().enumerate() {
                if stmt.execute([topic, queue])? == 0 {
                    missing.push(i);
                }
            }
            Ok(missing)
        })
        .await?;
        result.map_err(db_err("heartbeating subscriptions"))
    }

    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport> {
        let shared = self.shared.clone();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            in_transaction(conn, |conn| {
                let s = &shared.catalog.shared;
                let mut report = SweepReport {
                    subscriptions: conn
                        .prepare_cached(&s.sweep_subscriptions)?
                        .query_map([idle_seconds], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<rusqlite::Result<_>>()?,
                    queues_dropped: Vec::new(),
                };
                for queue in instance_queues(&report) {
                    let left: i64 = conn
                        .prepare_cached(&s.queue_subscriptions)?
                        .query_row([queue.as_str()], |r| r.get(0))?;
                    if left == 0 {
                        drop_queue_in(conn, &shared.catalog, &queue)?;
                        report.queues_dropped.push(queue.as_str().to_string());
                    }
                }
                Ok(report)
            })
        })
        .await?;
        result.map_err(db_err("sweeping idle subscriptions"))
    }

    async fn drop_queue(&self, queue: &QueueName) -> Result<()> {
        let shared = self.shared.clone();
        let name = queue.clone();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            drop_queue_in(conn, &shared.catalog, &name)
        })
        .await?;
        result.map_err(db_err(format!("dropping queue {queue:?}")))
    }

    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64> {
        let shared = self.shared.clone();
        let entry = shared.catalog.queue(queue);
        let destination = queue.as_str().to_string();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            if shared.catalog.shared_table() {
                conn.prepare_cached(&shared.catalog.shared.messages.purge_expired)?
                    .execute(rusqlite::params![destination, batch])
            } else {
                conn.prepare_cached(&entry.statements.purge_expired)?
                    .execute([batch])
            }
        })
        .await?;
        Ok(result.map_err(db_err(format!("purging expired messages of {queue:?}")))? as u64)
    }

    async fn deliver_due(&self, batch: i64) -> Result<u64> {
        if self.shared.catalog.shared_table() {
            // Delayed messages wait in NimbusMessages until their VisibleAfter: nothing to move.
            return Ok(0);
        }
        let shared = self.shared.clone();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            in_transaction(conn, |conn| {
                let rows = conn
                    .prepare_cached(&shared.catalog.shared.take_due_delayed)?
                    .query_map([batch], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            r.get::<_, Option<String>>(3)?,
                            r.get::<_, Option<String>>(4)?,
                            r.get::<_, String>(5)?,
                            r.get::<_, Option<Vec<u8>>>(6)?,
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let mut messages = Vec::with_capacity(rows.len());
                for (id, destination, correlation_id, reply_to_address, expires, headers, body) in
                    rows
                {
                    let Ok(queue) = QueueName::new(destination) else {
                        continue;
                    };
                    messages.push(OutgoingMessage {
                        destination: Destination::Queue(queue),
                        id: Uuid::parse_str(&id).unwrap_or_else(|_| Uuid::new_v4()),
                        correlation_id,
                        reply_to_address,
                        expires_at: from_text(expires),
                        headers_json: headers,
                        body: body.unwrap_or_default(),
                        time_to_be_received_ms: None,
                        delivery: Delivery::Immediate,
                    });
                }
                let count = messages.len() as u64;
                let created = shared.write(conn, messages)?;
                Ok((count, created))
            })
        })
        .await?;
        let (count, created) = result.map_err(db_err("delivering delayed messages"))?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(count)
    }

    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool> {
        let shared = self.shared.clone();
        let guard = shared.lock().await;
        let (_, result) = blocking(guard, false, move |conn| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let outcome = (|| {
                let row = conn
                    .prepare_cached(&shared.catalog.shared.take_dead_letter)?
                    .query_row([id.to_string()], |r| {
                        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Vec<u8>>(1)?))
                    })
                    .optional()?;
                let Some((destination, body)) = row else {
                    return Ok(Ok((false, Vec::new())));
                };
                let message = match rebuild(destination.as_deref().unwrap_or_default(), &body) {
                    Ok(m) => m,
                    Err(e) => return Ok(Err(e)),
                };
                Ok(Ok((true, shared.write(conn, vec![message])?)))
            })();
            match &outcome {
                Ok(Ok(_)) => conn.execute_batch("COMMIT")?,
                _ => {
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
            outcome
        })
        .await?;
        let (found, created) = result.map_err(db_err(format!("replaying dead letter {id}")))??;
        created.iter().for_each(|e| e.mark_exists());
        Ok(found)
    }
}

/// The open transaction of a message received from SQLite; it holds the file's connection.
/// Dropped without commit or rollback (a cancelled future), it rolls back.
struct SqliteTransaction {
    guard: Option<Guard>,
    shared: Arc<Shared>,
}

impl SqliteTransaction {
    fn take_guard(&mut self) -> Result<Guard> {
        self.guard.take().ok_or_else(|| {
            NimbusError::NotRunning("the receive transaction was already finished".into())
        })
    }
}

impl Drop for SqliteTransaction {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            reset(&guard);
        }
    }
}

#[async_trait]
impl ReceiveTransaction for SqliteTransaction {
    async fn commit(mut self: Box<Self>, outgoing: Vec<OutgoingMessage>) -> Result<()> {
        let guard = self.take_guard()?;
        let shared = self.shared.clone();
        let (_, result) = blocking(guard, true, move |conn| {
            match shared
                .write(conn, outgoing)
                .and_then(|created| conn.execute_batch("COMMIT").map(|()| created))
            {
                Ok(created) => Ok(created),
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })
        .await?;
        result
            .map_err(db_err("committing a handled message"))?
            .iter()
            .for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn dead_letter(mut self: Box<Self>, letter: DeadLetter) -> Result<()> {
        let guard = self.take_guard()?;
        let shared = self.shared.clone();
        let (_, result) = blocking(guard, true, move |conn| {
            match insert_dead_letter(conn, &shared.catalog.shared.insert_dead_letter, &letter)
                .and_then(|()| conn.execute_batch("COMMIT"))
            {
                Ok(()) => Ok(()),
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })
        .await?;
        result.map_err(db_err("committing a dead letter"))
    }
}
