//! Handlers: ordinary structs with async handling code, registered on the bus builder.
//!
//! Implement [`Handler`] with the [`handler`](crate::handler) attribute macro:
//!
//! ```
//! use nimbus::{Command, Handler, HandlerContext, HandlerError};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Command)]
//! struct PlaceOrder { order_id: u32 }
//!
//! struct PlaceOrderHandler;
//!
//! #[nimbus::handler]
//! impl Handler<PlaceOrder> for PlaceOrderHandler {
//!     async fn handle(&self, message: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
//!         println!("order {} in message {}", message.order_id, ctx.message_id());
//!         Ok(())
//!     }
//! }
//! ```

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

use crate::envelope::{
    build_outgoing, build_outgoing_with, Causation, Destination, EndpointIdentity, Intent,
    OutgoingMessage, SendOptions,
};
use crate::error::{HandlerError, NimbusError, Result};
use crate::headers::Headers;
use crate::incoming_headers::IncomingHeaders;
use crate::message::{Command, Event, Message, MessageKind};
use crate::names::QueueName;
use crate::pipeline::dispatch::{HandlerKind, RegisteredHandler};
use crate::telemetry;
use crate::transport::ReceiveTransaction;

/// Handles messages of type `M`. Implement it with an ordinary `async fn handle` (native async
/// functions in traits; no extra crate). `#[nimbus::handler]` on the impl block is optional: it
/// checks the signature and gives clearer errors.
///
/// Everything the handler sends or publishes through `ctx` is written in the transaction that
/// received the message: if the handler returns an error (or panics), none of it is written and the
/// message goes back to its queue.
///
/// The future must be `Send` (handlers may run on any thread): hold no `Rc` or `RefCell` borrow
/// across an `.await`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not handle `{M}`: it implements no `nimbus::Handler<{M}>`",
    note = "a `BlockingHandler` is registered with `.blocking_handler(..)`, not `.handler(..)`",
    note = "with `use actix::prelude::*` in scope, write `impl nimbus::Handler<M> for …`: actix has a `Handler` trait too"
)]
pub trait Handler<M: Message>: Send + Sync + 'static {
    /// Handles one message.
    fn handle(
        &self,
        message: M,
        ctx: &mut HandlerContext,
    ) -> impl std::future::Future<Output = Result<(), HandlerError>> + Send;
}

/// Handles messages of type `M` with blocking code: a plain `fn handle`, run on a thread of the
/// endpoint's blocking pool ([`BusBuilder::blocking_threads`](crate::BusBuilder::blocking_threads))
/// so that it never holds up the threads async handlers share. Use it for CPU-heavy work or
/// libraries that block (file I/O, a synchronous HTTP client, image processing); register it
/// with [`BusBuilder::blocking_handler`](crate::BusBuilder::blocking_handler).
///
/// What it sends or publishes through `ctx` is written in the receive's transaction, as with
/// [`Handler`]; an error, a panic or running past the handler timeout fails the attempt. The
/// receive's own connection is async and stays with the receiver, so `ctx.postgres()`,
/// `ctx.sqlite(..)` and `ctx.sql_server()` return an error here: write data that must commit
/// with the message from an async [`Handler`].
///
/// ```
/// use nimbus::{BlockingHandler, Command, HandlerContext, HandlerError};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Command)]
/// struct ResizeImage { path: String }
///
/// #[derive(Serialize, Deserialize, Command)]
/// struct ImageResized { path: String }
///
/// struct Resizer;
///
/// #[nimbus::handler]
/// impl BlockingHandler<ResizeImage> for Resizer {
///     fn handle(&self, message: ResizeImage, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
///         std::thread::sleep(std::time::Duration::from_millis(5)); // the blocking work
///         ctx.send_to("Gallery", ImageResized { path: message.path })?;
///         Ok(())
///     }
/// }
/// ```
pub trait BlockingHandler<M: Message>: Send + Sync + 'static {
    /// Handles one message on a thread of the blocking pool.
    fn handle(&self, message: M, ctx: &mut HandlerContext) -> Result<(), HandlerError>;
}

/// The routes of commands to queues.
#[derive(Debug, Default)]
pub(crate) struct Routes(HashMap<&'static str, QueueName>);

impl Routes {
    pub fn new(map: HashMap<&'static str, QueueName>) -> Self {
        Routes(map)
    }

    pub fn queue_for<M: Command>(&self) -> Result<QueueName> {
        self.queue_for_name(M::TYPE_NAME)
    }

    pub fn queue_for_name(&self, type_name: &'static str) -> Result<QueueName> {
        self.0
            .get(type_name)
            .cloned()
            .ok_or(NimbusError::NoRoute { type_name })
    }
}

/// What a handler can do besides handling: read the incoming message's headers, send or
/// publish messages that commit with the receive, and run its own SQL in the receive's
/// transaction (`postgres`, `sqlite`,
/// `sql_server`), so that the data it changes commits together with the
/// message's removal and its sends, or not at all.
pub struct HandlerContext {
    origin: Arc<EndpointIdentity>,
    routes: Arc<Routes>,
    headers: IncomingHeaders,
    causation: Causation,
    outgoing: Vec<OutgoingMessage>,
    /// The receive's open transaction, lent to the handler for its own statements.
    transaction: Option<Box<dyn ReceiveTransaction>>,
    /// Why there is no receive transaction, where there is none by design.
    without_receive: Option<WithoutReceive>,
    /// The endpoint's database (`None` in a test context unless set).
    database: Option<crate::DatabaseKind>,
    /// What to do once the message's transaction has committed (a saga's counts).
    on_commit: Vec<Box<dyn FnOnce() + Send>>,
    /// The handler ran statements of its own (or a saga's) in the receive's transaction: it
    /// takes row locks there, which several messages in one transaction may take in different
    /// orders.
    own_statements: bool,
}

/// Why a context has no receive transaction at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WithoutReceive {
    /// The message is handled under a lease.
    Lease,
    /// A [`crate::testing::TestContext`]: no database.
    Test,
}

impl std::fmt::Debug for HandlerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerContext")
            .field("message_id", &self.causation.message_id)
            .field("headers", &self.headers)
            .field("outgoing", &self.outgoing.len())
            .finish_non_exhaustive()
    }
}

impl HandlerContext {
    pub(crate) fn new(
        origin: Arc<EndpointIdentity>,
        routes: Arc<Routes>,
        headers: IncomingHeaders,
        causation: Causation,
        transaction: Option<Box<dyn ReceiveTransaction>>,
        database: crate::DatabaseKind,
    ) -> Self {
        HandlerContext {
            origin,
            routes,
            headers,
            causation,
            outgoing: Vec::new(),
            on_commit: Vec::new(),
            own_statements: false,
            without_receive: transaction.is_none().then_some(WithoutReceive::Lease),
            transaction,
            database: Some(database),
        }
    }

    /// A context with no database, for testing a handler ([`crate::testing::TestContext`]).
    pub(crate) fn for_test(
        origin: Arc<EndpointIdentity>,
        routes: Arc<Routes>,
        headers: Headers,
        causation: Causation,
        database: Option<crate::DatabaseKind>,
    ) -> Self {
        HandlerContext {
            origin,
            routes,
            headers: IncomingHeaders::from_map(headers),
            causation,
            outgoing: Vec::new(),
            on_commit: Vec::new(),
            own_statements: false,
            transaction: None,
            without_receive: Some(WithoutReceive::Test),
            database,
        }
    }

    /// Whether the handler ran statements of its own (or a saga's) in the receive's
    /// transaction.
    pub(crate) fn ran_own_statements(&self) -> bool {
        self.own_statements
    }

    /// What the handler sent, published and replied so far.
    pub(crate) fn outgoing(&self) -> &[OutgoingMessage] {
        &self.outgoing
    }

    /// The receive's open transaction, for a saga's state; the error says why there is none.
    pub(crate) fn saga_transaction(&mut self) -> Result<&mut Box<dyn ReceiveTransaction>> {
        self.own_statements = true;
        match self.transaction.as_mut() {
            Some(transaction) => Ok(transaction),
            None if self.without_receive == Some(WithoutReceive::Test) => Err(NimbusError::config(
                "a TestContext has no database, so a saga's state cannot be read or stored",
                "test a saga end to end with nimbus::testing::TestBus (a temporary SQLite \
                 database), or call its handler directly with a SagaInstance of your own",
            )),
            None if self.without_receive == Some(WithoutReceive::Lease) => {
                Err(NimbusError::config(
                    "a saga's message is handled under a lease: its state cannot commit with \
                     the message, because no transaction is open while the handler runs",
                    "handle the saga's message types without a lease (sagas under leases are \
                     not supported yet)",
                ))
            }
            None => Err(NimbusError::config(
                "a saga's state is read and written in the receive's transaction, which a \
                 BlockingHandler has no access to",
                "register the saga with BusBuilder::saga_handler (it runs as an async handler)",
            )),
        }
    }

    /// The receive's connection for the handler's own statements (a savepoint marks where they
    /// begin, the first time).
    async fn receive_connection(&mut self) -> Result<&mut (dyn std::any::Any + Send)> {
        self.own_statements = true;
        match self.transaction.as_mut() {
            Some(transaction) => transaction.handler_connection().await,
            None if self.without_receive == Some(WithoutReceive::Test) => Err(NimbusError::config(
                "a TestContext has no database, so there is no receive connection to lend",
                "test a handler's own SQL end to end with nimbus::testing::TestBus (a \
                     temporary SQLite database) or against a database of your own",
            )),
            None if self.without_receive == Some(WithoutReceive::Lease) => {
                Err(NimbusError::config(
                    "this message is handled under a lease: its handler runs with no transaction \
                 open, so there is no receive connection to lend",
                    "write the handler's data through a connection of the application's own, \
                 idempotently (a handler under a lease may run again after a crash), or handle \
                 the message type without a lease to write data that commits with the message",
                ))
            }
            None => Err(NimbusError::config(
                "a BlockingHandler has no access to the receive's connection: it stays with the \
                 receiver while the blocking code runs on a pool thread",
                "write data that must commit with the message from an async Handler \
                 (implement nimbus::Handler with an async fn)",
            )),
        }
    }

    /// The receive's PostgreSQL connection, inside the transaction that removes this message.
    /// What the handler writes through it commits together with the removal and the handler's
    /// sends, and is rolled back with them when the handler fails, panics or times out (to a
    /// savepoint taken at the first call, so the failed attempt is still counted). Do not
    /// commit or roll back through it.
    ///
    /// Its `execute`, `query`, `query_one`, `query_opt` and `batch_execute` are bounded by the
    /// endpoint's [`database_timeout`](crate::BusBuilder::database_timeout) (see
    /// [`HandlerPostgres`](crate::HandlerPostgres)). A handler that returns a database error
    /// that may pass (a statement past that deadline, a lost connection, a deadlock victim,
    /// a serialization failure) does not spend the message's retry budget: the receive is
    /// rolled back and tried again after a back-off, as when the framework's own statements
    /// fail that way. Other errors (a constraint, a missing table) are failed attempts.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct PlaceOrder { id: i64 }
    /// # struct Orders;
    /// impl nimbus::Handler<PlaceOrder> for Orders {
    ///     async fn handle(
    ///         &self,
    ///         order: PlaceOrder,
    ///         ctx: &mut nimbus::HandlerContext,
    ///     ) -> Result<(), nimbus::HandlerError> {
    ///         let client = ctx.postgres().await?;
    ///         client.execute("INSERT INTO orders (id) VALUES ($1)", &[&order.id]).await?;
    ///         Ok(())
    ///     }
    /// }
    /// ```
    #[cfg(feature = "postgres")]
    pub async fn postgres(&mut self) -> Result<crate::HandlerPostgres<'_>> {
        let deadline = self.statement_deadline();
        let connection = self.receive_connection().await?;
        crate::driver::access::postgres_client(connection)
            .map(|client| crate::HandlerPostgres::new(client, deadline))
            .ok_or_else(|| wrong_database("postgres", "PostgreSQL"))
    }

    /// Runs `statements` with the receive's SQLite connection, inside the transaction that
    /// removes this message, on a blocking thread (rusqlite blocks). What they write commits
    /// together with the removal and the handler's sends, and is rolled back with them when the
    /// handler fails, panics or times out. Do not commit or roll back in it. Its statements are
    /// interrupted once the endpoint's [`database_timeout`](crate::BusBuilder::database_timeout)
    /// has passed, which fails the call as a database timeout: the message goes back to its
    /// queue without spending its retry budget.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct PlaceOrder { id: i64 }
    /// # struct Orders;
    /// impl nimbus::Handler<PlaceOrder> for Orders {
    ///     async fn handle(
    ///         &self,
    ///         order: PlaceOrder,
    ///         ctx: &mut nimbus::HandlerContext,
    ///     ) -> Result<(), nimbus::HandlerError> {
    ///         ctx.sqlite(move |db| db.execute("INSERT INTO orders (id) VALUES (?1)", [order.id]))
    ///             .await?;
    ///         Ok(())
    ///     }
    /// }
    /// ```
    #[cfg(feature = "sqlite")]
    pub async fn sqlite<T, F>(&mut self, statements: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let deadline = self.statement_deadline();
        let connection = self.receive_connection().await?;
        match crate::driver::access::with_sqlite(connection, deadline, statements).await {
            Some(result) => result.map_err(|e| {
                NimbusError::database(crate::sql::SQLITE.name, "the handler's own statements", e)
            }),
            None => Err(wrong_database("sqlite", "SQLite")),
        }
    }

    /// The receive's SQL Server connection (a tiberius client), inside the transaction that
    /// removes this message. What the handler writes through it commits together with the
    /// removal and the handler's sends, and is rolled back with them (to a savepoint) when the
    /// handler fails, panics or times out. Do not commit, roll back or turn on `XACT_ABORT`
    /// through it: an error that makes the transaction uncommittable fails the attempt.
    /// `execute`, `query` and `simple_query` are bounded by the endpoint's
    /// [`database_timeout`](crate::BusBuilder::database_timeout) (see
    /// [`HandlerSqlServer`](crate::HandlerSqlServer)); a database error that may pass does not
    /// spend the message's retry budget, as with `postgres`.
    #[cfg(feature = "sqlserver")]
    pub async fn sql_server(&mut self) -> Result<crate::HandlerSqlServer<'_>> {
        let deadline = self.statement_deadline();
        let connection = self.receive_connection().await?;
        crate::driver::access::sql_server_client(connection)
            .map(|client| crate::HandlerSqlServer::new(client, deadline))
            .ok_or_else(|| wrong_database("sql_server", "SQL Server"))
    }

    /// How long one of the handler's own statements may take.
    fn statement_deadline(&self) -> std::time::Duration {
        self.transaction
            .as_ref()
            .map_or(crate::driver::DEFAULT_DATABASE_TIMEOUT, |t| {
                t.statement_deadline()
            })
    }

    /// The incoming message's id (`NServiceBus.MessageId`).
    pub fn message_id(&self) -> &str {
        &self.causation.message_id
    }

    /// The database the endpoint runs on, which decides the accessor for the handler's own SQL
    /// (`ctx.sqlite(..)`, `ctx.postgres()`, `ctx.sql_server()`); `None` in a
    /// [`TestContext`](crate::testing::TestContext) unless its `database` sets one.
    pub fn database(&self) -> Option<crate::DatabaseKind> {
        self.database
    }

    /// Which attempt at the message this is: 1 for the first, 2 after one failed attempt, and
    /// so on (counted in the message's `Nimbus.FailedAttempts` header, so it survives
    /// restarts).
    pub fn attempt(&self) -> u32 {
        crate::recoverability::failures_so_far(&self.headers).saturating_add(1)
    }

    /// The incoming message's headers.
    pub fn headers(&self) -> &Headers {
        self.headers.all()
    }

    /// Sends a command to the queue routed for its type; written when the handler succeeds.
    pub fn send<M: Command>(&mut self, message: M) -> Result<()> {
        let queue = self.routes.queue_for::<M>()?;
        self.push(&message, Intent::Send, Destination::Queue(queue))
    }

    /// Sends a message to `queue` (a queue of the bus's schema, or an address of a queue in
    /// another schema: see [`QueueName::parse`](crate::QueueName::parse)); written when the
    /// handler succeeds, in the same transaction as the receive.
    pub fn send_to<M: Message>(&mut self, queue: &str, message: M) -> Result<()> {
        let queue = QueueName::parse(queue)?;
        self.push(&message, Intent::Send, Destination::Queue(queue))
    }

    /// Sends a message with options (delay, due time, time to be received, destination);
    /// written when the handler succeeds.
    pub fn send_with<M: Message>(&mut self, message: M, options: SendOptions) -> Result<()> {
        let queue = match options.destination() {
            Some(queue) => QueueName::parse(queue)?,
            None => self.routes.queue_for_name(M::TYPE_NAME)?,
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
                    &self.origin,
                    Some(&self.causation),
                    &options,
                )
            },
        )?;
        self.outgoing.push(out);
        Ok(())
    }

    /// Replies to the incoming message: sends `message` to its `NServiceBus.ReplyToAddress` with
    /// its correlation id, so a waiting [`Bus::request`](crate::Bus::request) gets it; written when
    /// the handler succeeds.
    pub fn reply<M: Message>(&mut self, message: M) -> Result<()> {
        let address = self
            .headers
            .get(crate::headers::REPLY_TO_ADDRESS)
            .map(str::to_string)
            .ok_or_else(|| {
                NimbusError::config(
                    format!(
                        "message {} has no {} header to reply to",
                        self.causation.message_id,
                        crate::headers::REPLY_TO_ADDRESS
                    ),
                    "reply only to messages sent with a reply address (Bus::request does so)",
                )
            })?;
        let queue = QueueName::parse(&address)?;
        let at = self.outgoing.len();
        self.push(&message, Intent::Reply, Destination::Queue(queue))?;
        // A request that crossed a bridge names the way back in headers of its own: the reply
        // carries them, so the bridge that rewrote the reply address can take it back.
        let way_back: Vec<(String, String)> = self
            .headers
            .all()
            .iter()
            .filter(|(name, _)| name.starts_with(crate::headers::BRIDGE_RETURN_TO_PREFIX))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if !way_back.is_empty() {
            let pairs: Vec<(&str, &str)> = way_back
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            self.add_headers_from(at, &pairs)?;
        }
        Ok(())
    }

    /// Publishes an event to every subscribed queue; written when the handler succeeds.
    pub fn publish<M: Event>(&mut self, message: M) -> Result<()> {
        self.push(&message, Intent::Publish, Destination::Topic(M::TYPE_NAME))
    }

    fn push<M: Message>(
        &mut self,
        message: &M,
        intent: Intent,
        destination: Destination,
    ) -> Result<()> {
        let out = telemetry::build_traced(intent, destination, M::TYPE_NAME, |destination| {
            build_outgoing(
                message,
                intent,
                destination,
                &self.origin,
                Some(&self.causation),
            )
        })?;
        self.outgoing.push(out);
        Ok(())
    }

    /// Runs `effect` once the message's transaction has committed (never if it rolls back).
    pub(crate) fn on_commit(&mut self, effect: impl FnOnce() + Send + 'static) {
        self.on_commit.push(Box::new(effect));
    }

    /// What [`HandlerContext::on_commit`] collected, for the receive that commits.
    pub(crate) fn take_on_commit(&mut self) -> Vec<Box<dyn FnOnce() + Send>> {
        std::mem::take(&mut self.on_commit)
    }

    /// How many messages the handler has sent so far (to mark where a saga's begin).
    pub(crate) fn outgoing_len(&self) -> usize {
        self.outgoing.len()
    }

    /// Adds `headers` to every message sent since the first `from` (a saga's, which carry its
    /// id and type).
    pub(crate) fn add_headers_from(&mut self, from: usize, headers: &[(&str, &str)]) -> Result<()> {
        for out in self.outgoing.iter_mut().skip(from) {
            let mut parsed: Headers = serde_json::from_str(&out.headers_json).map_err(|e| {
                NimbusError::config(
                    format!("the headers of a message being sent do not read back: {e}"),
                    "report this: the framework wrote them",
                )
            })?;
            for (name, value) in headers {
                parsed.insert((*name).to_string(), (*value).to_string());
            }
            out.headers_json = serde_json::to_string(&parsed).map_err(|e| {
                NimbusError::config(
                    format!("headers do not serialize: {e}"),
                    "report this: headers are strings",
                )
            })?;
        }
        Ok(())
    }

    /// Sends `message` to this endpoint's own input queue after `delay` (a saga's timeout);
    /// returns its message id.
    pub(crate) fn send_to_self_after<M: Message>(
        &mut self,
        message: M,
        delay: std::time::Duration,
    ) -> Result<uuid::Uuid> {
        let queue = self.origin.input_queue.as_str().to_string();
        let id = self.origin.message_ids.next();
        self.send_with(
            message,
            SendOptions::new().to(queue).delay(delay).message_id(id),
        )?;
        Ok(id)
    }

    /// Cancels the delayed message `id` with this message: dropped if this handling sent it,
    /// deleted in the receive's transaction if it waits in the database (`true` either way),
    /// `false` when it was delivered already or no waiting delayed message has that id.
    pub(crate) async fn cancel_delayed(&mut self, id: uuid::Uuid) -> Result<bool> {
        let before = self.outgoing.len();
        self.outgoing.retain(|out| out.id != id);
        if self.outgoing.len() < before {
            return Ok(true);
        }
        self.saga_transaction()?.cancel_delayed(id).await
    }

    /// Takes the receive's transaction out, while a blocking handler runs without it.
    pub(crate) fn take_transaction(&mut self) -> Option<Box<dyn ReceiveTransaction>> {
        self.transaction.take()
    }

    /// Gives the receive's transaction back after a blocking handler ran.
    pub(crate) fn restore_transaction(&mut self, transaction: Option<Box<dyn ReceiveTransaction>>) {
        self.transaction = transaction;
    }

    /// A context for the same message with nothing sent and no transaction: what the receiver
    /// keeps while a blocking handler runs elsewhere, to fail the attempt with if it never
    /// comes back in time.
    pub(crate) fn spare(&self) -> HandlerContext {
        HandlerContext {
            origin: self.origin.clone(),
            routes: self.routes.clone(),
            headers: self.headers.clone(),
            causation: self.causation.clone(),
            outgoing: Vec::new(),
            on_commit: Vec::new(),
            own_statements: false,
            transaction: None,
            without_receive: self.without_receive,
            database: self.database,
        }
    }

    /// The incoming headers, what the handlers sent, and the receive's transaction back.
    pub(crate) fn into_parts(
        self,
    ) -> (
        IncomingHeaders,
        Vec<OutgoingMessage>,
        Option<Box<dyn ReceiveTransaction>>,
    ) {
        (self.headers, self.outgoing, self.transaction)
    }
}

/// The error of a typed connection accessor called on an endpoint of another database.
#[allow(dead_code)] // Each accessor exists with its database's feature only.
fn wrong_database(accessor: &str, database: &str) -> NimbusError {
    NimbusError::config(
        format!("ctx.{accessor}() was called, but this endpoint's database is not {database}"),
        "use the accessor of the endpoint's database: ctx.postgres(), ctx.sqlite(..) or \
         ctx.sql_server()",
    )
}

/// Why invoking a handler failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvokeError {
    /// The body is not JSON of the handler's message type.
    #[error("the body does not deserialize as {type_name}: {source}")]
    Body {
        type_name: &'static str,
        source: serde_json::Error,
    },
    /// The handler returned an error: shown with its causes (a database error's own text is in
    /// its source, not in its `Display`, which says only "db error" for PostgreSQL).
    #[error("the handler failed: {}", handler_error_text(.0.as_ref()))]
    Handler(HandlerError),
}

/// A handler's error with every cause, and the SQLSTATE of a PostgreSQL error among them, so
/// that a dead letter's reason says what the database refused.
pub(crate) fn handler_error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let text = crate::error::error_chain(error);
    match sqlstate(error) {
        Some(code) => format!("{text} (SQLSTATE {code})"),
        None => text,
    }
}

/// The SQLSTATE of the first PostgreSQL error in `error`'s chain.
#[cfg(feature = "postgres")]
fn sqlstate(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(code) = e
            .downcast_ref::<tokio_postgres::Error>()
            .and_then(|pg| pg.code())
        {
            return Some(code.code().to_string());
        }
        cause = e.source();
    }
    None
}

#[cfg(not(feature = "postgres"))]
fn sqlstate(_error: &(dyn std::error::Error + 'static)) -> Option<String> {
    None
}

/// Which instances handle an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubscriptionMode {
    /// One instance of the application (the application queue is subscribed). Commands and
    /// plain messages are handled this way too.
    Competing,
    /// Every running instance (each instance queue is subscribed).
    Multicast,
}

/// The handlers of one message type.
pub(crate) struct Registered {
    type_id: TypeId,
    rust_name: &'static str,
    pub kind: MessageKind,
    handlers: Vec<(Arc<RegisteredHandler>, SubscriptionMode)>,
}

impl Registered {
    /// The handlers that run for a message received from the application queue, or from the
    /// instance queue (multicast handlers there, or — for replies and messages sent to the
    /// instance — the ordinary ones).
    pub fn for_queue(&self, instance_queue: bool) -> Vec<&Arc<RegisteredHandler>> {
        let of = |mode| {
            self.handlers
                .iter()
                .filter(move |(_, m)| *m == mode)
                .map(|(h, _)| h)
        };
        if instance_queue {
            let multicast: Vec<_> = of(SubscriptionMode::Multicast).collect();
            if !multicast.is_empty() {
                return multicast;
            }
        }
        of(SubscriptionMode::Competing).collect()
    }
}

/// Every handler of an endpoint, by message type name.
#[derive(Default)]
pub(crate) struct HandlerRegistry {
    by_type: HashMap<&'static str, Registered>,
    /// Every handler, by its id (its index here).
    all: Vec<Arc<RegisteredHandler>>,
    conflicts: Vec<String>,
}

impl HandlerRegistry {
    /// Registers an async handler, run by handler actors on the endpoint's handler threads.
    pub fn add<M: Message, H: Handler<M>>(&mut self, handler: H, mode: SubscriptionMode) {
        self.add_kind::<M>(HandlerKind::of_async::<M, H>(handler), mode);
    }

    /// Registers a blocking handler, run on the endpoint's blocking pool.
    pub fn add_blocking<M: Message, H: BlockingHandler<M>>(
        &mut self,
        handler: H,
        mode: SubscriptionMode,
    ) {
        self.add_kind::<M>(HandlerKind::of_blocking::<M, H>(handler), mode);
    }

    /// Every registered handler, each once, in the order of their ids.
    pub fn all(&self) -> &[Arc<RegisteredHandler>] {
        &self.all
    }

    fn add_kind<M: Message>(&mut self, kind: HandlerKind, mode: SubscriptionMode) {
        let entry = self
            .by_type
            .entry(M::TYPE_NAME)
            .or_insert_with(|| Registered {
                type_id: TypeId::of::<M>(),
                rust_name: std::any::type_name::<M>(),
                kind: M::KIND,
                handlers: Vec::new(),
            });
        if entry.type_id != TypeId::of::<M>() {
            self.conflicts.push(format!(
                "{} and {} both use the type name {:?}",
                entry.rust_name,
                std::any::type_name::<M>(),
                M::TYPE_NAME
            ));
            return;
        }
        let handler = Arc::new(RegisteredHandler {
            id: self.all.len(),
            type_name: M::TYPE_NAME,
            kind,
        });
        self.all.push(handler.clone());
        entry.handlers.push((handler, mode));
    }

    /// Fails when two Rust types were registered under one type name.
    pub fn check(&self) -> Result<()> {
        match self.conflicts.first() {
            None => Ok(()),
            Some(conflict) => Err(NimbusError::config(
                format!("two message types share a type name: {conflict}"),
                "give one of them #[nimbus(type_name = \"...\")]",
            )),
        }
    }

    pub fn get(&self, type_name: &str) -> Option<&Registered> {
        self.by_type.get(type_name)
    }

    /// Some handler runs on every instance: the endpoint needs an instance queue.
    pub fn has_multicast(&self) -> bool {
        self.by_type.values().any(|r| {
            r.handlers
                .iter()
                .any(|(_, m)| *m == SubscriptionMode::Multicast)
        })
    }

    /// Some handler runs on one instance: the endpoint receives from its application queue.
    pub fn has_competing(&self) -> bool {
        self.by_type.values().any(|r| {
            r.handlers
                .iter()
                .any(|(_, m)| *m == SubscriptionMode::Competing)
        })
    }

    /// Every handled message type with the mode of its handlers: (type, mode), each once.
    pub fn handled_types(&self) -> Vec<(&'static str, SubscriptionMode)> {
        let mut handled: Vec<_> = self
            .by_type
            .iter()
            .flat_map(|(name, r)| r.handlers.iter().map(move |(_, mode)| (*name, *mode)))
            .collect();
        handled.sort_by_key(|(name, mode)| (*name, *mode == SubscriptionMode::Multicast));
        handled.dedup();
        handled
    }

    /// The event subscriptions this endpoint needs: (event type, mode), each once.
    pub fn subscriptions(&self) -> Vec<(&'static str, SubscriptionMode)> {
        let mut subscriptions: Vec<_> = self
            .by_type
            .iter()
            .filter(|(_, r)| r.kind == MessageKind::Event)
            .flat_map(|(name, r)| r.handlers.iter().map(move |(_, mode)| (*name, *mode)))
            .collect();
        subscriptions.sort_by_key(|(name, mode)| (*name, *mode == SubscriptionMode::Multicast));
        subscriptions.dedup();
        subscriptions
    }
}
