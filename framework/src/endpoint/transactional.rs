//! Sends and publishes inside a transaction the application opened on its own connection, so
//! that a saved order and its `OrderPlaced` commit together or not at all: no outbox table, no
//! two-phase commit. Routing, headers, fan-out to subscribers and the rules for queues that do
//! not exist are those of [`Bus::send`] and [`Bus::publish`].

use crate::endpoint::bus::Bus;
use crate::envelope::{build_outgoing, build_outgoing_with, Destination, Intent, OutgoingMessage};
use crate::error::{NimbusError, Result};
use crate::message::{Command, Event, Message};
use crate::names::QueueName;
use crate::pipeline::EndpointState;
use crate::telemetry;
use crate::transport::Statement;
use crate::SendOptions;

/// Messages to write in the application's own transaction, collected from
/// [`Bus::in_transaction`]. Nothing is written until one of the `write_*` methods runs in the
/// transaction; what it writes commits or rolls back with that transaction.
///
/// ```no_run
/// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct PlaceOrder { id: i64 }
/// # async fn demo(bus: nimbus::Bus, client: &mut nimbus::tokio_postgres::Client)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// let tx = client.transaction().await?;
/// tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&7_i64]).await?;
/// let mut sends = bus.in_transaction();
/// sends.send(PlaceOrder { id: 7 })?;
/// sends.write_postgres(&tx).await?;
/// tx.commit().await?; // the order and PlaceOrder, or neither
/// # Ok(()) }
/// ```
///
/// On SQLite, whose writes are synchronous and whose file has one writer, prepare first and
/// write inside the transaction: [`TransactionalSends::prepare`], then
/// `PreparedSends::write_sqlite`.
pub struct TransactionalSends<'b> {
    endpoint: &'b EndpointState,
    bus: &'b Bus,
    messages: Vec<OutgoingMessage>,
}

impl std::fmt::Debug for TransactionalSends<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionalSends")
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

impl<'b> TransactionalSends<'b> {
    pub(crate) fn new(endpoint: &'b EndpointState, bus: &'b Bus) -> Self {
        TransactionalSends {
            endpoint,
            bus,
            messages: Vec::new(),
        }
    }

    /// Adds a command for the queue routed for its type.
    pub fn send<M: Command>(&mut self, message: M) -> Result<&mut Self> {
        let queue = self.endpoint.config.routes.queue_for::<M>()?;
        self.push(&message, Intent::Send, Destination::Queue(queue))
    }

    /// Adds a message for `queue`.
    pub fn send_to<M: Message>(&mut self, queue: &str, message: M) -> Result<&mut Self> {
        let queue = QueueName::parse(queue)?;
        self.push(&message, Intent::Send, Destination::Queue(queue))
    }

    /// Adds a message with options (a delay or due time, a time to be received, a destination).
    pub fn send_with<M: Message>(&mut self, message: M, options: SendOptions) -> Result<&mut Self> {
        let queue = match options.destination() {
            Some(queue) => QueueName::parse(queue)?,
            None => self.endpoint.config.routes.queue_for_name(M::TYPE_NAME)?,
        };
        let out = telemetry::build_traced(
            Intent::Send,
            Destination::Queue(queue),
            M::TYPE_NAME,
            |destination| {
                build_outgoing_with(
                    &message,
                    Intent::Send,
                    destination,
                    &self.endpoint.config.identity,
                    None,
                    &options,
                )
            },
        )?;
        self.messages.push(out);
        Ok(self)
    }

    /// Adds an event for every queue subscribed to its type (read when the sends are prepared).
    pub fn publish<M: Event>(&mut self, message: M) -> Result<&mut Self> {
        self.push(&message, Intent::Publish, Destination::Topic(M::TYPE_NAME))
    }

    fn push<M: Message>(
        &mut self,
        message: &M,
        intent: Intent,
        destination: Destination,
    ) -> Result<&mut Self> {
        let out = telemetry::build_traced(intent, destination, M::TYPE_NAME, |destination| {
            build_outgoing(
                message,
                intent,
                destination,
                &self.endpoint.config.identity,
                None,
            )
        })?;
        self.messages.push(out);
        Ok(self)
    }

    /// Resolves what the messages need before they can be written: the live subscribers of
    /// each event, and the queues (checked, or made where sends may make them), through the
    /// bus's own connections. Call it before opening the transaction on SQLite, whose file has
    /// one writer.
    pub async fn prepare(self) -> Result<PreparedSends> {
        self.bus.ensure_running()?;
        let planned = self.endpoint.transport.plan_sends(&self.messages).await?;
        Ok(PreparedSends {
            statements: planned.statements,
            rows: planned.rows,
            database: self.endpoint.transport.name(),
            messages: self.messages.len(),
        })
    }

    /// Prepares the messages and writes them in `transaction`, the application's own
    /// PostgreSQL transaction: they commit or roll back with it.
    #[cfg(feature = "postgres")]
    pub async fn write_postgres(self, transaction: &tokio_postgres::Transaction<'_>) -> Result<()> {
        self.prepare().await?.write_postgres(transaction).await
    }

    /// Prepares the messages and writes them on `client`, the application's own SQL Server
    /// connection, inside the transaction it opened there (`BEGIN TRANSACTION`): they commit or
    /// roll back with it.
    #[cfg(feature = "sqlserver")]
    pub async fn write_sql_server<S>(self, client: &mut tiberius::Client<S>) -> Result<()>
    where
        S: futures::AsyncRead + futures::AsyncWrite + Unpin + Send,
    {
        self.prepare().await?.write_sql_server(client).await
    }
}

/// Messages ready to be written in the application's transaction: subscribers resolved, queues
/// made to exist. Write them once, inside the transaction, with the method for the bus's
/// database.
#[derive(Debug)]
pub struct PreparedSends {
    statements: Vec<Statement>,
    rows: usize,
    database: &'static str,
    messages: usize,
}

impl PreparedSends {
    /// How many rows writing them inserts (a publish counts once per subscriber).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// How many messages were added.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// The bus's database must be `expected`.
    #[allow(dead_code)] // Used by each database's write method, behind its feature.
    fn check_database(&self, expected: &'static str, method: &str) -> Result<()> {
        if self.database == expected {
            return Ok(());
        }
        Err(NimbusError::config(
            format!(
                "{method} writes to {expected}, but this bus's database is {}",
                self.database
            ),
            "write with the method of the bus's database (write_postgres, write_sqlite or \
             write_sql_server), on a transaction of that database",
        ))
    }

    /// Writes the messages in the application's own PostgreSQL transaction.
    #[cfg(feature = "postgres")]
    pub async fn write_postgres(
        &self,
        transaction: &tokio_postgres::Transaction<'_>,
    ) -> Result<()> {
        self.check_database(crate::sql::POSTGRES.name, "write_postgres")?;
        crate::driver::access::run_in_postgres(transaction, &self.statements)
            .await
            .map_err(|e| {
                NimbusError::database(self.database, "sending in the application's transaction", e)
            })
    }

    /// Writes the messages in the application's own SQLite transaction (blocking, like every
    /// rusqlite call).
    #[cfg(feature = "sqlite")]
    pub fn write_sqlite(&self, transaction: &rusqlite::Transaction<'_>) -> Result<()> {
        self.check_database(crate::sql::SQLITE.name, "write_sqlite")?;
        crate::driver::access::run_in_sqlite(transaction, &self.statements).map_err(|e| {
            NimbusError::database(self.database, "sending in the application's transaction", e)
        })
    }

    /// Writes the messages on the application's own SQL Server connection, inside the
    /// transaction it opened there.
    #[cfg(feature = "sqlserver")]
    pub async fn write_sql_server<S>(&self, client: &mut tiberius::Client<S>) -> Result<()>
    where
        S: futures::AsyncRead + futures::AsyncWrite + Unpin + Send,
    {
        self.check_database(crate::sql::SQLSERVER.name, "write_sql_server")?;
        crate::driver::access::run_in_sql_server(client, &self.statements)
            .await
            .map_err(|e| {
                NimbusError::database(self.database, "sending in the application's transaction", e)
            })
    }
}
