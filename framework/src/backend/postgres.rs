//! PostgreSQL driver: tokio-postgres with a deadpool pool.
//!
//! A receive runs `BEGIN`, then the dialect's `DELETE … FOR UPDATE SKIP LOCKED … RETURNING`, and
//! keeps the connection until the handler is done; the handler's sends are inserted on the same
//! connection before `COMMIT`. A connection whose transaction did not finish cleanly is never put
//! back into the pool: it is closed, which makes the server roll back.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::NoTls;
use uuid::Uuid;

use super::catalog::QueueEntry;
use super::{
    instance_queues, single_plain_insert, Backend, Catalog, CatalogSettings, RebuildDeadLetter,
    ReceiveTransaction, SweepReport, TxGuard,
};
use crate::dead_letter::DeadLetter;
use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::sql::postgres::{Postgres, SCHEMA_LOCK, SCHEMA_LOCK_KEY};
use crate::sql::{Dialect, IndexStatement};

const NAME: &str = Postgres::NAME;

fn db_err(operation: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> NimbusError {
    let operation = operation.into();
    move |e| NimbusError::database(NAME, operation, e)
}

/// A PostgreSQL database holding queues in one schema.
pub(crate) struct PostgresBackend {
    shared: Arc<Shared>,
}

struct Shared {
    pool: Pool,
    target: String,
    catalog: Catalog<Postgres>,
}

impl PostgresBackend {
    /// Builds the pool and opens one connection, so that an unreachable server or a refused login
    /// fails here with the server's name rather than at the first message.
    pub async fn connect(
        config: Box<tokio_postgres::Config>,
        target: String,
        schema: SchemaName,
        settings: CatalogSettings,
        pool_size: usize,
    ) -> Result<Self> {
        let manager = Manager::from_config(
            *config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .build()
            .map_err(|e| NimbusError::connect(NAME, &target, "check the PostgreSQL URL", e))?;
        let probe = pool.get().await.map_err(|e| {
            NimbusError::connect(
                NAME,
                &target,
                "check that the server runs and accepts TCP connections, and that the user, \
                 password and database in the URL are right",
                e,
            )
        })?;
        drop(probe);
        Ok(PostgresBackend {
            shared: Arc::new(Shared {
                pool,
                target,
                catalog: Catalog::new(&settings, schema),
            }),
        })
    }
}

impl Shared {
    async fn connection(&self, operation: &str) -> Result<Object> {
        self.pool.get().await.map_err(|e| {
            NimbusError::connect(
                NAME,
                &self.target,
                format!("the database is unreachable while {operation}; it is retried"),
                e,
            )
        })
    }

    /// Creates a queue table and its indexes inside the caller's transaction, under the schema
    /// lock. The caller marks the queue as existing once the transaction commits.
    async fn create_queue_in_tx(&self, client: &Object, entry: &QueueEntry) -> Result<()> {
        let q = &entry.statements;
        client
            .execute(SCHEMA_LOCK, &[&SCHEMA_LOCK_KEY])
            .await
            .map_err(db_err("taking the schema lock"))?;
        client
            .batch_execute(&q.create_queue)
            .await
            .map_err(db_err("creating a queue table"))
    }

    /// Inserts `messages` on `client`, inside its open transaction. Topics are resolved to their
    /// subscribers in the same transaction. Returns the queues this call created.
    async fn write(
        &self,
        client: &Object,
        messages: Vec<OutgoingMessage>,
    ) -> Result<Vec<Arc<QueueEntry>>> {
        let mut created = Vec::new();
        for message in messages {
            let queues = match &message.destination {
                Destination::Queue(queue) => vec![queue.clone()],
                Destination::Topic(topic) => {
                    let stmt = client
                        .prepare_cached(&self.catalog.shared.subscribers)
                        .await
                        .map_err(db_err("reading subscriptions"))?;
                    let rows = client
                        .query(&stmt, &[topic, &self.catalog.idle_seconds])
                        .await
                        .map_err(db_err(format!("reading the subscribers of {topic}")))?;
                    let mut queues = Vec::with_capacity(rows.len());
                    for row in rows {
                        let name: String = row.get(0);
                        queues.push(QueueName::new(name)?);
                    }
                    queues
                }
            };
            for queue in queues {
                if self.catalog.shared_table() {
                    // Each copy of a published message is its own row, with its own key.
                    let row_id = match message.destination {
                        Destination::Topic(_) => self.catalog.message_ids.next(),
                        Destination::Queue(_) => message.id,
                    };
                    self.insert_shared(client, &queue, &message, row_id).await?;
                    continue;
                }
                if message.delivery != Delivery::Immediate {
                    self.insert_delayed(client, &queue, &message).await?;
                    continue;
                }
                let entry = self.catalog.queue(&queue);
                if !entry.is_known_to_exist() {
                    // Usually another endpoint made it: look before taking the schema lock,
                    // whose DDL would wait for every transaction using the table.
                    if self.catalog.auto_create
                        && !self.table_exists(client, queue.as_str()).await?
                    {
                        self.create_queue_in_tx(client, &entry).await?;
                    }
                    // Known to exist once this transaction commits its insert.
                    created.push(entry.clone());
                }
                let stmt = client
                    .prepare_cached(&entry.statements.insert)
                    .await
                    .map_err(|e| {
                        entry.forget_exists();
                        NimbusError::database(
                            NAME,
                            format!("preparing the send to queue {queue:?}"),
                            e,
                        )
                    })?;
                client
                    .execute(
                        &stmt,
                        &[
                            &message.id,
                            &message.correlation_id,
                            &message.reply_to_address,
                            &message.time_to_be_received_ms,
                            &message.headers_json,
                            &message.body,
                            &message.expires_at,
                        ],
                    )
                    .await
                    .map_err(|e| {
                        entry.forget_exists();
                        NimbusError::database(NAME, format!("sending to queue {queue:?}"), e)
                    })?;
            }
        }
        Ok(created)
    }

    /// Inserts `message` for `queue` into `NimbusMessages` (shared-table layout), its headers
    /// in the body's envelope, visible after its delay.
    async fn insert_shared(
        &self,
        client: &Object,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> Result<()> {
        let (delay_ms, due_at) = message.delivery.delay_and_due();
        let stmt = client
            .prepare_cached(&self.catalog.shared.messages.insert)
            .await
            .map_err(db_err("preparing a send"))?;
        client
            .execute(
                &stmt,
                &[
                    &row_id,
                    &queue.as_str(),
                    &crate::shared_envelope::wrap(&message.headers_json, &message.body),
                    &message.time_to_be_received_ms,
                    &message.expires_at,
                    &delay_ms,
                    &due_at,
                ],
            )
            .await
            .map_err(db_err(format!("sending to queue {queue:?}")))?;
        Ok(())
    }

    /// Inserts `message` for `queue` into `NimbusDelayedMessages`, due after its delay.
    async fn insert_delayed(
        &self,
        client: &Object,
        queue: &QueueName,
        message: &OutgoingMessage,
    ) -> Result<()> {
        let (delay_ms, due_at) = message.delivery.delay_and_due();
        let stmt = client
            .prepare_cached(&self.catalog.shared.insert_delayed)
            .await
            .map_err(db_err("preparing a delayed send"))?;
        client
            .execute(
                &stmt,
                &[
                    &message.id,
                    &queue.as_str(),
                    &message.correlation_id,
                    &message.reply_to_address,
                    &message.time_to_be_received_ms,
                    &message.headers_json,
                    &message.body,
                    &message.expires_at,
                    &delay_ms,
                    &due_at,
                ],
            )
            .await
            .map_err(db_err(format!("sending a delayed message to {queue:?}")))?;
        Ok(())
    }

    /// Inserts `letter`, under a fresh id if its id is taken.
    async fn insert_dead_letter(&self, client: &Object, letter: &DeadLetter) -> Result<()> {
        let stmt = client
            .prepare_cached(&self.catalog.shared.insert_dead_letter)
            .await
            .map_err(db_err("preparing a dead letter"))?;
        for id in [letter.message_id, Uuid::new_v4()] {
            let inserted = client
                .execute(
                    &stmt,
                    &[
                        &id,
                        &letter.original_destination,
                        &letter.body,
                        &letter.delivery_attempts,
                    ],
                )
                .await
                .map_err(db_err("writing a dead letter"))?;
            if inserted == 1 {
                return Ok(());
            }
        }
        Err(NimbusError::NotRunning(
            "a dead letter could not be written under two different ids".into(),
        ))
    }

    /// Drops a queue's table, or in the shared-table layout deletes its rows.
    async fn drop_queue_in(&self, client: &Object, queue: &QueueName) -> Result<()> {
        let operation = format!("dropping queue {queue:?}");
        if self.catalog.shared_table() {
            client
                .execute(
                    &self.catalog.shared.messages.delete_destination,
                    &[&queue.as_str()],
                )
                .await
                .map_err(db_err(operation))?;
            return Ok(());
        }
        let entry = self.catalog.queue(queue);
        client
            .batch_execute(&entry.statements.drop_queue)
            .await
            .map_err(db_err(operation))
    }

    async fn has_last_seen_at(&self, client: &Object) -> Result<bool> {
        let row = client
            .query_opt(
                &self.catalog.shared.has_last_seen_at,
                &[&self.catalog.schema.as_str()],
            )
            .await
            .map_err(db_err("checking NimbusSubscriptions for LastSeenAt"))?;
        Ok(row.is_some())
    }

    async fn table_exists(&self, client: &Object, table: &str) -> Result<bool> {
        let row = client
            .query_opt(
                &self.catalog.shared.table_exists,
                &[&self.catalog.schema.as_str(), &table],
            )
            .await
            .map_err(db_err("checking the schema"))?;
        Ok(row.is_some())
    }
}

/// Takes a connection out of the pool and closes it: the server rolls back whatever it had open.
fn detach(connection: Object) {
    let _ = Object::take(connection);
}

/// Commits `client`'s transaction, or closes the connection so the server rolls it back.
async fn finish(client: Object, statement: &str, operation: &str) -> Result<()> {
    match client.batch_execute(statement).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = Object::take(client);
            Err(NimbusError::database(NAME, operation.to_string(), e))
        }
    }
}

#[async_trait]
impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn create_schema(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.shared;
        let client = TxGuard::new(s.connection("creating the schema").await?, detach);
        client
            .batch_execute("BEGIN")
            .await
            .map_err(db_err("creating the schema"))?;
        let result = async {
            client
                .execute(SCHEMA_LOCK, &[&SCHEMA_LOCK_KEY])
                .await
                .map_err(db_err("taking the schema lock"))?;
            let shared = &s.catalog.shared;
            let mut ddl = shared.create_schema.clone().unwrap_or_default();
            ddl.push_str(&shared.create_subscriptions);
            ddl.push_str(&shared.create_dead_letters);
            if s.catalog.shared_table() {
                ddl.push_str(&shared.messages.create);
            } else {
                ddl.push_str(&shared.create_delayed);
            }
            let upgrade = async {
                if !s.has_last_seen_at(&client).await? {
                    tracing::warn!(schema = %s.catalog.schema, "upgrading NimbusSubscriptions: adding LastSeenAt");
                    client
                        .batch_execute(&shared.upgrade_last_seen_at)
                        .await
                        .map_err(db_err("adding LastSeenAt to NimbusSubscriptions"))?;
                }
                Ok::<_, NimbusError>(())
            };
            client.batch_execute(&ddl).await.map_err(|e| {
                NimbusError::database(
                    NAME,
                    format!(
                        "creating the shared tables in schema {:?} (does the user have the right to create tables? \
                         If not, turn auto_create_schema off and run the scripts in schema/postgres)",
                        s.catalog.schema.as_str()
                    ),
                    e,
                )
            })?;
            upgrade.await?;
            let mut entries = Vec::new();
            for queue in queues {
                let entry = s.catalog.queue(queue);
                if !s.catalog.shared_table() {
                    s.create_queue_in_tx(&client, &entry).await?;
                }
                entries.push(entry);
            }
            Ok::<_, NimbusError>(entries)
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let entries = result?;
        finish(client.into_inner(), "COMMIT", "committing the schema").await?;
        entries.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.shared;
        let client = s.connection("checking the schema").await?;
        let shared = &s.catalog.shared;
        let storage = if s.catalog.shared_table() {
            ("NimbusMessages", &shared.messages.create)
        } else {
            ("NimbusDelayedMessages", &shared.create_delayed)
        };
        for (table, statement) in [
            ("NimbusSubscriptions", &shared.create_subscriptions),
            ("NimbusDeadLetters", &shared.create_dead_letters),
            storage,
        ] {
            if !s.table_exists(&client, table).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: format!("table {table} in schema {:?}", s.catalog.schema.as_str()),
                    statement: statement.clone(),
                });
            }
            if table == "NimbusSubscriptions" && !s.has_last_seen_at(&client).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: "column LastSeenAt of NimbusSubscriptions (added for heartbeats)"
                        .into(),
                    statement: shared.upgrade_last_seen_at.clone(),
                });
            }
        }
        for queue in queues {
            let entry = s.catalog.queue(queue);
            if !s.catalog.shared_table() && !s.table_exists(&client, queue.as_str()).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: format!(
                        "queue table {:?} in schema {:?}",
                        queue.as_str(),
                        s.catalog.schema.as_str()
                    ),
                    statement: entry.statements.create_queue.clone(),
                });
            }
            entry.mark_exists();
        }
        Ok(())
    }

    async fn missing_indexes(&self, queue: &QueueName) -> Result<Vec<IndexStatement>> {
        let s = &self.shared;
        let client = s.connection("checking indexes").await?;
        let (table, expected) = if s.catalog.shared_table() {
            (
                "NimbusMessages",
                vec![s.catalog.shared.messages.index.clone()],
            )
        } else {
            (
                queue.as_str(),
                s.catalog.queue(queue).statements.indexes.clone(),
            )
        };
        let rows = client
            .query(
                &s.catalog.shared.list_indexes,
                &[&s.catalog.schema.as_str(), &table],
            )
            .await
            .map_err(db_err("listing indexes"))?;
        let present: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        Ok(expected
            .into_iter()
            .filter(|i| !present.contains(&i.name))
            .collect())
    }

    async fn peek(&self, queue: &QueueName) -> Result<i64> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let client = s.connection("peeking").await?;
        let shared_table = s.catalog.shared_table();
        let sql = if shared_table {
            &s.catalog.shared.messages.peek
        } else {
            &entry.statements.peek
        };
        let stmt = client
            .prepare_cached(sql)
            .await
            .map_err(db_err(format!("peeking at queue {queue:?}")))?;
        let destination = queue.as_str();
        let params: &[&(dyn tokio_postgres::types::ToSql + Sync)] =
            if shared_table { &[&destination] } else { &[] };
        let row = client
            .query_one(&stmt, params)
            .await
            .map_err(db_err(format!("peeking at queue {queue:?}")))?;
        Ok(row.get(0))
    }

    async fn receive(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let client = TxGuard::new(s.connection("receiving").await?, detach);
        let operation = format!("receiving from queue {queue:?}");
        let shared_table = s.catalog.shared_table();
        let destination = queue.as_str();
        let row = async {
            let sql = if shared_table {
                &s.catalog.shared.messages.receive
            } else {
                &entry.statements.receive
            };
            let stmt = client
                .prepare_cached(sql)
                .await
                .map_err(db_err(operation.clone()))?;
            let params: &[&(dyn tokio_postgres::types::ToSql + Sync)] =
                if shared_table { &[&destination] } else { &[] };
            // Pipelined: tokio-postgres sends requests in the order they are first polled, so
            // BEGIN goes first and both travel in one round trip.
            let (begun, row) = futures::join!(
                client.batch_execute("BEGIN"),
                client.query_opt(&stmt, params)
            );
            begun.map_err(db_err(operation.clone()))?;
            row.map_err(db_err(operation.clone()))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        match row? {
            None => {
                finish(client.into_inner(), "COMMIT", &operation).await?;
                Ok(None)
            }
            Some(row) => {
                let message = ReceivedMessage {
                    row_id: row.get(0),
                    correlation_id: row.get(1),
                    reply_to_address: row.get(2),
                    headers_json: row.get::<_, Option<String>>(3).unwrap_or_default(),
                    body: row.get::<_, Option<Vec<u8>>>(4).unwrap_or_default(),
                    expired: row.get(5),
                    expires: row.get(6),
                }
                .unwrap_envelope(shared_table);
                let tx = PostgresTransaction {
                    client,
                    shared: s.clone(),
                };
                Ok(Some((message, Box::new(tx))))
            }
        }
    }

    async fn send(&self, messages: Vec<OutgoingMessage>) -> Result<()> {
        let s = &self.shared;
        let client = TxGuard::new(s.connection("sending").await?, detach);
        if let ([message], true) = (messages.as_slice(), s.catalog.shared_table()) {
            if let Destination::Queue(queue) = &message.destination {
                // One row of NimbusMessages: one autocommitted INSERT, no transaction needed.
                s.insert_shared(&client, queue, message, message.id).await?;
                drop(client.into_inner());
                return Ok(());
            }
        }
        if let Some(message) =
            single_plain_insert(&s.catalog, &messages).filter(|_| !s.catalog.shared_table())
        {
            // One row into a queue known to exist: one autocommitted statement is as atomic as
            // a transaction around it, at a third of the round trips.
            let (queue, entry) = message;
            let stmt = client
                .prepare_cached(&entry.statements.insert)
                .await
                .map_err(|e| {
                    entry.forget_exists();
                    NimbusError::database(NAME, format!("preparing the send to queue {queue:?}"), e)
                })?;
            let m = &messages[0];
            client
                .execute(
                    &stmt,
                    &[
                        &m.id,
                        &m.correlation_id,
                        &m.reply_to_address,
                        &m.time_to_be_received_ms,
                        &m.headers_json,
                        &m.body,
                        &m.expires_at,
                    ],
                )
                .await
                .map_err(|e| {
                    entry.forget_exists();
                    NimbusError::database(NAME, format!("sending to queue {queue:?}"), e)
                })?;
            // No transaction was opened: the connection goes back to the pool.
            drop(client.into_inner());
            return Ok(());
        }
        let written = async {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(db_err("sending"))?;
            s.write(&client, messages).await
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let created = written?;
        finish(client.into_inner(), "COMMIT", "committing a send").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()> {
        let s = &self.shared;
        let client = s.connection("subscribing").await?;
        client
            .execute(&s.catalog.shared.subscribe, &[&topic, &queue.as_str()])
            .await
            .map_err(db_err(format!("subscribing queue {queue:?} to {topic}")))?;
        Ok(())
    }

    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>> {
        let s = &self.shared;
        let client = s.connection("heartbeating").await?;
        let stmt = client
            .prepare_cached(&s.catalog.shared.refresh_subscription)
            .await
            .map_err(db_err("heartbeating subscriptions"))?;
        let mut missing = Vec::new();
        for (i, (topic, queue)) in subscriptions.iter().enumerate() {
            let refreshed = client
                .execute(&stmt, &[topic, &queue.as_str()])
                .await
                .map_err(db_err("heartbeating subscriptions"))?;
            if refreshed == 0 {
                missing.push(i);
            }
        }
        Ok(missing)
    }

    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport> {
        let s = &self.shared;
        let client = TxGuard::new(s.connection("sweeping idle subscriptions").await?, detach);
        let swept = async {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(db_err("sweeping idle subscriptions"))?;
            let rows = client
                .query(&s.catalog.shared.sweep_subscriptions, &[&idle_seconds])
                .await
                .map_err(db_err("sweeping idle subscriptions"))?;
            let mut report = SweepReport::default();
            for row in rows {
                report.subscriptions.push((row.get(0), row.get(1)));
            }
            for queue in instance_queues(&report) {
                let left: i64 = client
                    .query_one(&s.catalog.shared.queue_subscriptions, &[&queue.as_str()])
                    .await
                    .map_err(db_err("counting subscriptions"))?
                    .get(0);
                if left == 0 {
                    s.drop_queue_in(&client, &queue).await?;
                    report.queues_dropped.push(queue.as_str().to_string());
                }
            }
            Ok::<_, NimbusError>(report)
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let report = swept?;
        finish(client.into_inner(), "COMMIT", "committing a sweep").await?;
        Ok(report)
    }

    async fn drop_queue(&self, queue: &QueueName) -> Result<()> {
        let s = &self.shared;
        let client = s.connection("dropping a queue").await?;
        s.drop_queue_in(&client, queue).await
    }

    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let client = s.connection("purging expired messages").await?;
        let operation = format!("purging expired messages of {queue:?}");
        if s.catalog.shared_table() {
            let stmt = client
                .prepare_cached(&s.catalog.shared.messages.purge_expired)
                .await
                .map_err(db_err(operation.clone()))?;
            return client
                .execute(&stmt, &[&queue.as_str(), &batch])
                .await
                .map_err(db_err(operation));
        }
        let stmt = client
            .prepare_cached(&entry.statements.purge_expired)
            .await
            .map_err(db_err(operation.clone()))?;
        client
            .execute(&stmt, &[&batch])
            .await
            .map_err(db_err(operation))
    }

    async fn deliver_due(&self, batch: i64) -> Result<u64> {
        let s = &self.shared;
        if s.catalog.shared_table() {
            // Delayed messages wait in NimbusMessages until their VisibleAfter: nothing to move.
            return Ok(0);
        }
        let client = TxGuard::new(s.connection("delivering delayed messages").await?, detach);
        let moved = async {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(db_err("delivering delayed messages"))?;
            let stmt = client
                .prepare_cached(&s.catalog.shared.take_due_delayed)
                .await
                .map_err(db_err("taking due delayed messages"))?;
            let rows = client
                .query(&stmt, &[&batch])
                .await
                .map_err(db_err("taking due delayed messages"))?;
            let mut messages = Vec::with_capacity(rows.len());
            for row in &rows {
                let id: String = row.get(0);
                let destination: String = row.get(1);
                messages.push(OutgoingMessage {
                    destination: Destination::Queue(QueueName::new(destination)?),
                    id: Uuid::parse_str(&id).unwrap_or_else(|_| Uuid::new_v4()),
                    correlation_id: row.get(2),
                    reply_to_address: row.get(3),
                    expires_at: row.get(4),
                    headers_json: row.get(5),
                    body: row.get::<_, Option<Vec<u8>>>(6).unwrap_or_default(),
                    time_to_be_received_ms: None,
                    delivery: Delivery::Immediate,
                });
            }
            let count = messages.len() as u64;
            let created = s.write(&client, messages).await?;
            Ok::<_, NimbusError>((count, created))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let (count, created) = moved?;
        finish(
            client.into_inner(),
            "COMMIT",
            "committing delayed deliveries",
        )
        .await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(count)
    }

    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool> {
        let s = &self.shared;
        let client = TxGuard::new(s.connection("replaying a dead letter").await?, detach);
        let replayed = async {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(db_err("replaying a dead letter"))?;
            let row = client
                .query_opt(&s.catalog.shared.take_dead_letter, &[&id])
                .await
                .map_err(db_err(format!("taking dead letter {id}")))?;
            let Some(row) = row else {
                return Ok((false, Vec::new()));
            };
            let destination: Option<String> = row.get(0);
            let body: Vec<u8> = row.get(1);
            let message = rebuild(destination.as_deref().unwrap_or_default(), &body)?;
            let created = s.write(&client, vec![message]).await?;
            Ok::<_, NimbusError>((true, created))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let (found, created) = replayed?;
        finish(client.into_inner(), "COMMIT", "committing a replay").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(found)
    }
}

/// The open transaction of a message received from PostgreSQL. Dropped unfinished (a cancelled
/// future), its guard closes the connection so the server rolls back.
struct PostgresTransaction {
    client: TxGuard<Object>,
    shared: Arc<Shared>,
}

#[async_trait]
impl ReceiveTransaction for PostgresTransaction {
    async fn commit(self: Box<Self>, outgoing: Vec<OutgoingMessage>) -> Result<()> {
        let PostgresTransaction { client, shared } = *self;
        // On an error the guard closes the connection: the server rolls back.
        let created = shared.write(&client, outgoing).await?;
        finish(
            client.into_inner(),
            "COMMIT",
            "committing a handled message",
        )
        .await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn dead_letter(self: Box<Self>, letter: DeadLetter) -> Result<()> {
        let PostgresTransaction { client, shared } = *self;
        shared.insert_dead_letter(&client, &letter).await?;
        finish(client.into_inner(), "COMMIT", "committing a dead letter").await
    }
}
