//! pgmq as a third side of the benchmark: its own SQL functions, called the way its
//! documentation and its pgbench scripts call them, on connections of their own.
//!
//! The side runs only where the `pgmq` extension is already created in the benchmark's database
//! (`CREATE EXTENSION pgmq`); the benchmark never installs it. Its messages carry the same body
//! and the same headers as the framework's rows (pgmq keeps them as `jsonb`), so every side
//! writes the same information:
//! * send 1/tx: `pgmq.send(queue, msg, headers)`, one call per transaction;
//! * send batch: `pgmq.send_batch(queue, msgs, headers)`;
//! * receive+handle and end to end: `pgmq.pop(queue)`, one message per transaction, or with
//!   `--receive-batch N` `pgmq.read(queue, vt, N)` and `pgmq.delete(queue, ids)` in one
//!   transaction (pgmq's way of taking N at once and deleting them when done).

use std::sync::Mutex;

use std::collections::HashMap;

use nimbus::tokio_postgres::{Client, Statement};
use tokio::sync::Semaphore;

use crate::Failure;

/// How long a message `pgmq.read` takes stays invisible to other readers, in seconds: far
/// longer than handling and deleting a batch takes here.
const VISIBILITY_SECONDS: i32 = 30;

/// One connection and the statements prepared on it (as pgbench's `-M prepared` runs pgmq's
/// calls: parsed once per connection, not once per call).
struct Connection {
    client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Connection {
    /// `sql`, prepared on this connection at its first use.
    async fn statement(&mut self, sql: &'static str) -> Result<Statement, Failure> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// Connections to a database that has pgmq, lent one at a time.
pub struct Pgmq {
    idle: Mutex<Vec<Connection>>,
    available: Semaphore,
    /// The headers every pgmq message carries: what the framework writes for the same message.
    headers_json: String,
    /// The installed extension's version, for the report.
    pub version: String,
}

impl std::fmt::Debug for Pgmq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pgmq")
            .field("version", &self.version)
            .finish()
    }
}

/// A pgmq queue's name for one of the benchmark's queues: pgmq folds names to lower case and
/// makes tables `pgmq.q_<name>`.
pub fn queue_name(queue: &str) -> String {
    format!("pgmq_{}", queue.to_lowercase())
}

impl Pgmq {
    /// `connections` connections to `url`, when its database has the pgmq extension; `None`
    /// (and a notice on stderr) when it has not.
    pub async fn connect(
        url: &str,
        connections: usize,
        headers_json: &str,
    ) -> Result<Option<Pgmq>, Failure> {
        let first = nimbus::connect_postgres(url).await?;
        let installed = first
            .query_opt(
                "SELECT extversion FROM pg_extension WHERE extname = 'pgmq'",
                &[],
            )
            .await?;
        let Some(row) = installed else {
            eprintln!(
                "pgmq is not installed in this database: its side is skipped (to compare with \
                 it, install the extension on the server and run CREATE EXTENSION pgmq)"
            );
            return Ok(None);
        };
        let version: String = row.try_get(0)?;
        let mut clients = vec![first];
        for _ in 1..connections.max(1) {
            clients.push(nimbus::connect_postgres(url).await?);
        }
        let idle: Vec<Connection> = clients
            .into_iter()
            .map(|client| Connection {
                client,
                prepared: HashMap::new(),
            })
            .collect();
        Ok(Some(Pgmq {
            available: Semaphore::new(idle.len()),
            idle: Mutex::new(idle),
            headers_json: headers_json.to_string(),
            version,
        }))
    }

    /// Runs `work` with a connection of its own (waiting for one to be free), then lends the
    /// connection again.
    async fn with_client<T, F>(&self, work: F) -> Result<T, Failure>
    where
        F: for<'c> AsyncFnOnce(&'c mut Connection) -> Result<T, Failure>,
    {
        let _permit = self
            .available
            .acquire()
            .await
            .map_err(|e| format!("pgmq's connections are gone: {e}"))?;
        let mut connection = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .ok_or("pgmq's connections are all lent although one was free")?;
        let result = work(&mut connection).await;
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(connection);
        result
    }

    /// Creates `queue` (a no-op when it exists).
    pub async fn create(&self, queue: &str) -> Result<(), Failure> {
        self.queue_call("SELECT pgmq.create($1)", queue).await
    }

    /// Deletes every message of `queue`.
    pub async fn purge(&self, queue: &str) -> Result<(), Failure> {
        self.queue_call("SELECT pgmq.purge_queue($1)", queue).await
    }

    /// Drops `queue`.
    pub async fn drop_queue(&self, queue: &str) -> Result<(), Failure> {
        self.queue_call("SELECT pgmq.drop_queue($1)", queue).await
    }

    /// Runs `sql`, one of pgmq's functions of a queue name, for `queue`.
    async fn queue_call(&self, sql: &'static str, queue: &str) -> Result<(), Failure> {
        let name = queue_name(queue);
        self.with_client(async |c| {
            c.client.execute(sql, &[&name]).await?;
            Ok(())
        })
        .await
    }

    /// Sends `bodies` (JSON) to `queue` in one transaction: `pgmq.send` for one, `send_batch`
    /// for more.
    pub async fn send(&self, queue: &str, bodies: Vec<Vec<u8>>) -> Result<(), Failure> {
        let name = queue_name(queue);
        let texts = bodies
            .into_iter()
            .map(|b| String::from_utf8(b).map_err(|e| format!("a body is not UTF-8: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let headers = &self.headers_json;
        self.with_client(async |c| {
            match texts.as_slice() {
                [one] => {
                    let send = c
                        .statement("SELECT * FROM pgmq.send($1, $2::text::jsonb, $3::text::jsonb)")
                        .await?;
                    c.client.query(&send, &[&name, one, headers]).await?;
                }
                many => {
                    let headers = vec![headers.as_str(); many.len()];
                    let send = c
                        .statement(
                            "SELECT * FROM pgmq.send_batch($1, $2::text[]::jsonb[], \
                             $3::text[]::jsonb[])",
                        )
                        .await?;
                    c.client.query(&send, &[&name, &many, &headers]).await?;
                }
            }
            Ok(())
        })
        .await
    }

    /// Takes up to `limit` messages of `queue` and deletes them: `pgmq.pop` (one, one
    /// transaction) when `limit` is 1, else `pgmq.read` and `pgmq.delete` of what it read in one
    /// transaction. Returns their bodies (as `jsonb` gives them back), empty when the queue is.
    pub async fn receive(&self, queue: &str, limit: usize) -> Result<Vec<Vec<u8>>, Failure> {
        let name = queue_name(queue);
        self.with_client(async |c| {
            if limit <= 1 {
                let pop = c
                    .statement("SELECT message::text FROM pgmq.pop($1)")
                    .await?;
                let rows = c.client.query(&pop, &[&name]).await?;
                return rows
                    .iter()
                    .map(|r| Ok(r.try_get::<_, String>(0)?.into_bytes()))
                    .collect();
            }
            let limit = i32::try_from(limit).unwrap_or(i32::MAX);
            let read = c
                .statement("SELECT msg_id, message::text FROM pgmq.read($1, $2, $3)")
                .await?;
            let delete = c.statement("SELECT pgmq.delete($1, $2::bigint[])").await?;
            let c = &c.client;
            c.batch_execute("BEGIN").await?;
            let taken = async {
                let rows = c
                    .query(&read, &[&name, &VISIBILITY_SECONDS, &limit])
                    .await?;
                let ids = rows
                    .iter()
                    .map(|r| r.try_get::<_, i64>(0))
                    .collect::<Result<Vec<_>, _>>()?;
                if !ids.is_empty() {
                    c.query(&delete, &[&name, &ids]).await?;
                }
                rows.iter()
                    .map(|r| Ok(r.try_get::<_, String>(1)?.into_bytes()))
                    .collect::<Result<Vec<_>, Failure>>()
            }
            .await;
            match taken {
                Ok(bodies) => {
                    c.batch_execute("COMMIT").await?;
                    Ok(bodies)
                }
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK").await;
                    Err(e)
                }
            }
        })
        .await
    }
}
