//! Backends: a database driver plus a SQL [`Dialect`](crate::sql::Dialect).
//!
//! Everything above this module (actors, bus, handlers) talks to a `dyn Backend` and never sees
//! SQL or a driver type. To add a database: write its dialect in `sql/`, its DDL in `schema/`, and
//! a driver here implementing [`Backend`] and [`ReceiveTransaction`]; then make
//! [`crate::config::DatabaseUrl`] parse its URLs and [`connect`] build it. The conformance suite in
//! `tests/` then runs unchanged against it.

mod catalog;
pub(crate) mod postgres;
pub(crate) mod sqlite;
pub(crate) mod sqlserver;

use async_trait::async_trait;
use uuid::Uuid;

pub(crate) use catalog::{Catalog, CatalogSettings};

use crate::config::{DatabaseUrl, EndpointConfig};
use crate::dead_letter::DeadLetter;
use crate::envelope::{OutgoingMessage, ReceivedMessage};
use crate::error::Result;
use crate::names::QueueName;
use crate::sql::IndexStatement;

/// A database that holds queues.
#[async_trait]
pub(crate) trait Backend: Send + Sync + 'static {
    /// The database's name for messages.
    fn name(&self) -> &'static str;

    /// Creates the shared tables and the tables of `queues` if they do not exist. Idempotent and
    /// safe when several instances run it at once.
    async fn create_schema(&self, queues: &[QueueName]) -> Result<()>;

    /// Checks that the shared tables and the tables of `queues` exist; the error names the
    /// statement that creates what is missing.
    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()>;

    /// The seed-000 indexes of `queue` that are missing, with the statements that create them.
    async fn missing_indexes(&self, queue: &QueueName) -> Result<Vec<IndexStatement>>;

    /// Estimates how many messages wait in `queue`: `max(RowVersion) - min(RowVersion) + 1`.
    async fn peek(&self, queue: &QueueName) -> Result<i64>;

    /// Takes the oldest message no other receiver holds, inside a transaction that stays open
    /// until the returned handle commits or rolls back. `None` when there is nothing to take.
    async fn receive(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>>;

    /// Writes `messages` in one transaction: all of them or none.
    async fn send(&self, messages: Vec<OutgoingMessage>) -> Result<()>;

    /// Writes (or refreshes) the subscription of `queue` to `topic`.
    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()>;

    /// Refreshes `LastSeenAt` of each (topic, queue) subscription; returns the positions of
    /// those that were gone (swept), which the caller writes again.
    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>>;

    /// In one transaction: deletes the subscriptions not seen for `idle_seconds` (database
    /// time), and drops the per-instance queues (those subscribed to
    /// [`crate::subscriptions::INSTANCE_QUEUE_TOPIC`]) that no subscription is left for. Safe
    /// when several instances sweep at once.
    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport>;

    /// Drops the table of `queue` with everything in it (maintenance and benchmarks).
    async fn drop_queue(&self, queue: &QueueName) -> Result<()>;

    /// Deletes at most `batch` messages of `queue` whose `Expires` has passed (by database
    /// time), skipping rows other transactions hold. Returns how many it deleted.
    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64>;

    /// Moves at most `batch` due delayed messages into their queues, in one transaction, skipping
    /// rows another mover holds. Returns how many it moved.
    async fn deliver_due(&self, batch: i64) -> Result<u64>;

    /// Moves the dead letter `id` back to its queue in one transaction, rebuilt by `rebuild`
    /// from its original destination and body. `false` when there is no such dead letter.
    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool>;
}

/// What one idle sweep removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// The lapsed subscriptions deleted, as (topic, subscriber queue).
    pub subscriptions: Vec<(String, String)>,
    /// The per-instance queue tables dropped with the messages still in them.
    pub queues_dropped: Vec<String>,
}

/// A pooled connection while a transaction may be open on it. Dropped without
/// [`TxGuard::into_inner`] (an error path, or a cancelled future), it hands the connection to
/// `detach`, which takes it out of the pool and closes it, so the server rolls back and no later
/// user of the pool finds a transaction left open.
pub(crate) struct TxGuard<T> {
    connection: Option<T>,
    detach: fn(T),
}

impl<T> TxGuard<T> {
    pub fn new(connection: T, detach: fn(T)) -> Self {
        TxGuard {
            connection: Some(connection),
            detach,
        }
    }

    /// The connection, to commit or to hand on; the guard is disarmed.
    pub fn into_inner(mut self) -> T {
        match self.connection.take() {
            Some(connection) => connection,
            None => unreachable!("a TxGuard holds its connection until into_inner"),
        }
    }
}

impl<T> std::ops::Deref for TxGuard<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.connection {
            Some(connection) => connection,
            None => unreachable!("a TxGuard holds its connection until into_inner"),
        }
    }
}

impl<T> std::ops::DerefMut for TxGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.connection {
            Some(connection) => connection,
            None => unreachable!("a TxGuard holds its connection until into_inner"),
        }
    }
}

impl<T> Drop for TxGuard<T> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            (self.detach)(connection);
        }
    }
}

/// The per-instance queues among the swept subscriptions: those registered under
/// [`crate::subscriptions::INSTANCE_QUEUE_TOPIC`].
pub(crate) fn instance_queues(report: &SweepReport) -> Vec<QueueName> {
    let mut queues: Vec<QueueName> = report
        .subscriptions
        .iter()
        .filter(|(topic, _)| topic == crate::subscriptions::INSTANCE_QUEUE_TOPIC)
        .filter_map(|(_, queue)| QueueName::new(queue.clone()).ok())
        .collect();
    queues.sort();
    queues.dedup();
    queues
}

/// When `messages` is one message for a queue this process knows exists, to be visible at once:
/// that queue and its statements. Such a send needs no explicit transaction (one autocommitted
/// `INSERT` is atomic), which saves two round trips.
pub(crate) fn single_plain_insert<'a, D: crate::sql::Dialect>(
    catalog: &Catalog<D>,
    messages: &'a [OutgoingMessage],
) -> Option<(&'a QueueName, std::sync::Arc<catalog::QueueEntry>)> {
    let [message] = messages else {
        return None;
    };
    let crate::envelope::Destination::Queue(queue) = &message.destination else {
        return None;
    };
    if message.delivery != crate::envelope::Delivery::Immediate {
        return None;
    }
    let entry = catalog.queue(queue);
    entry.is_known_to_exist().then_some((queue, entry))
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
}

/// Connects to the database of `config` and returns its backend.
pub(crate) async fn connect(config: &EndpointConfig) -> Result<std::sync::Arc<dyn Backend>> {
    let settings = CatalogSettings {
        auto_create: config.auto_create_schema,
        idle_seconds: config.idle_seconds(),
        layout: config.layout,
        message_ids: config.identity.message_ids,
    };
    Ok(match &config.database {
        DatabaseUrl::Sqlite { path } => {
            std::sync::Arc::new(sqlite::SqliteBackend::open(path, settings).await?)
        }
        DatabaseUrl::Postgres { config: pg, target } => std::sync::Arc::new(
            postgres::PostgresBackend::connect(
                pg.clone(),
                target.clone(),
                config.schema.clone(),
                settings,
                config.pool_size(),
            )
            .await?,
        ),
        DatabaseUrl::SqlServer {
            settings: connection,
        } => std::sync::Arc::new(
            sqlserver::SqlServerBackend::connect(
                (**connection).clone(),
                config.schema.clone(),
                settings,
                config.body_string_column,
                config.pool_size(),
            )
            .await?,
        ),
    })
}
