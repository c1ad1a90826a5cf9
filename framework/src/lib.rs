//! # Nimbus for Rust
//!
//! Messaging between services with queues kept as tables in the database you already run:
//! SQL Server's transport design (one table per queue, FIFO by an identity `RowVersion`, receive by
//! deleting the oldest unlocked row), on SQL Server, on PostgreSQL and on an embedded SQLite file
//! that needs no server at all.
//!
//! * Define messages with `#[derive(Command)]`, `#[derive(Event)]` or `#[derive(Message)]` (serde
//!   JSON bodies; the type name is the Rust path unless `#[nimbus(type_name = "...")]` says
//!   otherwise, for interop with .NET endpoints).
//! * Write handlers as structs implementing [`Handler<M>`] with an `async fn handle`, or
//!   [`BlockingHandler<M>`] for blocking work; test them with [`testing`].
//! * Build a bus with [`Bus::builder`]; start it in an actix `System` ([`Endpoint::start`]) or in
//!   the background of any tokio program ([`Endpoint::start_in_background`]); `send`, `publish`,
//!   `stop`.
//!
//! What a handler sends or publishes commits in the same transaction as the receive of the message
//! it handles: both happen or neither does. The user guide (the repository's `docs/` folder)
//! has a chapter per topic.
//!
//! ```no_run
//! use nimbus::{Bus, Command, Event, Handler, HandlerContext, HandlerError};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Command)]
//! struct PlaceOrder { order_id: u32 }
//!
//! #[derive(Serialize, Deserialize, Event)]
//! struct OrderPlaced { order_id: u32 }
//!
//! struct Sales;
//!
//! impl Handler<PlaceOrder> for Sales {
//!     async fn handle(&self, m: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
//!         ctx.publish(OrderPlaced { order_id: m.order_id })?;
//!         Ok(())
//!     }
//! }
//!
//! #[actix_rt::main]
//! async fn main() -> Result<(), nimbus::NimbusError> {
//!     let bus = Bus::builder()
//!         .names("Sales", "sales-1")
//!         .database_url("sqlite://shop.db")
//!         .route::<PlaceOrder>("Sales")
//!         .handler(Sales)
//!         .build()?
//!         .start()
//!         .await?;
//!     bus.send(PlaceOrder { order_id: 7 }).await?;
//!     bus.stop().await
//! }
//! ```

#![warn(missing_docs)]
// On docs.rs, every item shows the cargo feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "sqlserver")))]
compile_error!(
    "nimbus needs at least one database: enable the `sqlite` (default), `postgres` or `sqlserver` feature"
);

mod actors;
pub mod admin;
#[cfg(feature = "bench")]
pub mod bench;
mod body_codecs;
pub mod bridge;
mod claim_check;
mod dead_letter;
mod driver;
mod endpoint;
mod envelope;
mod error;
pub mod headers;
mod incoming_headers;
mod message;
pub mod monitoring;
mod names;
mod pipeline;
pub mod recoverability;
pub mod saga;
pub mod shared_envelope;
mod sql;
pub mod subscriptions;
pub mod telemetry;
pub mod testing;
mod transport;

#[cfg(feature = "zstd")]
pub use body_codecs::DEFAULT_ZSTD_LEVEL;
pub use body_codecs::{BodyCompression, BodyEncryption, DEFAULT_GZIP_LEVEL};
pub use claim_check::{ClaimCheck, DEFAULT_CLAIM_CHECK_THRESHOLD, DEFAULT_ORPHANS_AFTER};
#[cfg(feature = "sqlserver")]
pub use driver::sqlserver::SqlServerToken;
pub use driver::{DriverError, FailureKind};
pub use endpoint::background::{stop_signal, BackgroundBus};
pub use endpoint::builder::{
    BusBuilder, DEFAULT_COMPLETED_SAGAS_KEPT, DEFAULT_CONNECTION_IDLE_TIMEOUT,
    DEFAULT_DATABASE_TIMEOUT, DEFAULT_DATABASE_URL, DEFAULT_DEAD_LETTER_RETENTION,
    DEFAULT_DEDUPLICATION_WINDOW, DEFAULT_IDLE_POLL, DEFAULT_INSTANCE_HEARTBEAT,
    DEFAULT_MONITORING_INTERVAL, DEFAULT_MONITORING_RETENTION, DEFAULT_PEEK_DELAY,
    MAX_RECOMMENDED_PEEK_DELAY, MIN_DEAD_LETTER_RETENTION, MIN_DEDUPLICATION_WINDOW,
    MIN_INSTANCE_HEARTBEAT, MIN_PEEK_DELAY,
};
pub use endpoint::bus::{Bus, Endpoint};
pub use endpoint::settings::{BusSettings, Retention};
pub use endpoint::transactional::{PreparedSends, TransactionalSends};
pub use envelope::{SendOptions, MAX_GROUP_KEY_LEN};
pub use error::{HandlerError, NimbusError, Result, Unrecoverable};
pub use headers::Headers;
pub use message::{Command, Event, Message, MessageKind};
pub use names::{QueueName, SchemaName, MAX_NAME_LEN};
pub use nimbus_macros::{handler, Command, Event, Message};
pub use pipeline::handler::{BlockingHandler, Handler, HandlerContext};
#[cfg(feature = "postgres")]
pub use pipeline::handler_connections::HandlerPostgres;
#[cfg(feature = "sqlserver")]
pub use pipeline::handler_connections::HandlerSqlServer;
pub use pipeline::health::{Health, QueueHealth};
pub use pipeline::lease::{Lease, DEFAULT_LEASE_HANDLER_TIMEOUT, MAX_LEASE, MIN_LEASE};
pub use pipeline::limits::{Limit, MAX_LIMIT_KEY_LEN, MAX_LIMIT_PERIOD, MAX_LIMIT_SLOTS};
pub use pipeline::metrics::Metrics;
pub use pipeline::schedule::Schedule;
pub use transport::instances::host_name;
pub use transport::{
    BodyStringColumn, DatabaseKind, DelayedMessage, Due, GroupSummary, Missed, PriorityCount,
    ScheduleState, StorageLayout, SweepReport, CATCH_UP_WITHIN, DEFAULT_CONNECT_TIMEOUT,
    MIN_SCHEDULE_INTERVAL,
};

/// The `uuid` crate, whose [`uuid::Uuid`] public signatures use (message ids, dead letter ids in
/// [`admin`]), re-exported so that applications need not depend on it to call them.
///
/// ```
/// let id: nimbus::uuid::Uuid = "01a2347b-a486-7158-97f9-98cda5ec6a1a".parse().unwrap();
/// assert_eq!(id.get_version_num(), 7);
/// ```
pub use uuid;

/// The `chrono` crate, whose UTC times public signatures use ([`SendOptions::deliver_at`]),
/// re-exported so that applications need not depend on it to call them.
pub use chrono;

/// The PostgreSQL driver whose client [`HandlerContext::postgres`] lends, re-exported so that
/// applications use the same version.
#[cfg(feature = "postgres")]
pub use tokio_postgres;

/// The SQLite driver whose connection [`HandlerContext::sqlite`] lends, re-exported so that
/// applications use the same version.
#[cfg(feature = "sqlite")]
pub use rusqlite;

/// The SQL Server driver whose client [`HandlerContext::sql_server`] lends, re-exported so that
/// applications use the same version.
#[cfg(feature = "sqlserver")]
pub use tiberius;

/// The SQL Server client [`HandlerContext::sql_server`] lends: tiberius over tokio's TCP.
#[cfg(feature = "sqlserver")]
pub type SqlServerClient = tiberius::Client<tokio_util::compat::Compat<tokio::net::TcpStream>>;

/// Opens a SQL Server connection of the application's own from the same ADO.NET connection
/// string the bus uses (`Server=tcp:host,1433;Database=…;User Id=…;Password=…`), logged in as the
/// bus logs in: for the application's own statements and transactions, such as writing business
/// data and [`PreparedSends::write_sql_server`] in one transaction. SQL logins and Kerberos work
/// here; an Entra ID token login (which needs the bus's token provider) is refused with a
/// [`NimbusError::Connect`] that says so.
///
/// ```no_run
/// # async fn example(bus: &nimbus::Bus) -> Result<(), Box<dyn std::error::Error>> {
/// let mut client = nimbus::connect_sql_server(
///     "Server=tcp:127.0.0.1,1433;Database=shop;User Id=app;Password=secret;TrustServerCertificate=true",
/// )
/// .await?;
/// client.simple_query("BEGIN TRANSACTION").await?.into_results().await?;
/// client.execute("INSERT INTO orders (order_id) VALUES (@P1)", &[&1001_i64]).await?;
/// let sends = bus.in_transaction(); // add the messages to send with the order here
/// sends.write_sql_server(&mut client).await?;
/// client.simple_query("COMMIT").await?.into_results().await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "sqlserver")]
pub async fn connect_sql_server(connection_string: &str) -> Result<SqlServerClient> {
    driver::sqlserver::connect_client(connection_string).await
}

/// Opens a PostgreSQL connection of the application's own from the same URL the bus uses, with
/// the same TLS (`sslmode`, `sslrootcert`, the platform's roots): for the application's own
/// statements and transactions, such as business data and [`TransactionalSends::write_postgres`]
/// in one transaction. The connection runs on a task of the current tokio runtime; errors say
/// which server and what to check, never the password.
///
/// ```no_run
/// # async fn example(bus: &nimbus::Bus) -> Result<(), Box<dyn std::error::Error>> {
/// let mut client = nimbus::connect_postgres("postgres://app@db.example.com/shop?sslmode=verify-full").await?;
/// let tx = client.transaction().await?;
/// tx.execute("INSERT INTO orders (order_id) VALUES ($1)", &[&1001_i64]).await?;
/// bus.in_transaction().write_postgres(&tx).await?; // add the messages to send with the order
/// tx.commit().await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "postgres")]
pub async fn connect_postgres(url: &str) -> Result<tokio_postgres::Client> {
    transport::connect_postgres_client(url).await
}

/// The README's example, compiled as a doc test so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

/// The crate's own README (crates.io), compiled as a doc test too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod crate_readme {}

/// The guide's chapters (`docs/guide/`), their examples compiled as doc tests too.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../docs/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../../docs/sql-server.md")]
    mod sql_server {}
    #[doc = include_str!("../../docs/guide/connecting.md")]
    mod connecting {}
    #[doc = include_str!("../../docs/guide/high-availability.md")]
    mod high_availability {}
    #[doc = include_str!("../../docs/guide/configuration.md")]
    mod configuration {}
    #[doc = include_str!("../../docs/guide/how-it-works.md")]
    mod how_it_works {}
    #[doc = include_str!("../../docs/guide/failures.md")]
    mod failures {}
    #[doc = include_str!("../../docs/guide/delayed-messages.md")]
    mod delayed_messages {}
    #[doc = include_str!("../../docs/guide/schedules.md")]
    mod schedules {}
    #[doc = include_str!("../../docs/guide/deduplication.md")]
    mod deduplication {}
    #[doc = include_str!("../../docs/guide/ordered-groups.md")]
    mod ordered_groups {}
    #[doc = include_str!("../../docs/guide/priorities.md")]
    mod priorities {}
    #[doc = include_str!("../../docs/guide/limits.md")]
    mod limits {}
    #[doc = include_str!("../../docs/guide/payloads.md")]
    mod payloads {}
    #[doc = include_str!("../../docs/guide/testing.md")]
    mod testing {}
    #[doc = include_str!("../../docs/guide/operations.md")]
    mod operations {}
    #[doc = include_str!("../../docs/guide/nservicebus.md")]
    mod nservicebus {}
    #[doc = include_str!("../../docs/guide/benchmarks.md")]
    mod benchmarks {}
    #[doc = include_str!("../../docs/guide/contributing.md")]
    mod contributing {}
    #[doc = include_str!("../../docs/guide/getting-started.md")]
    mod getting_started {}
    #[doc = include_str!("../../docs/guide/messages-and-handlers.md")]
    mod messages_and_handlers {}
    #[doc = include_str!("../../docs/guide/events.md")]
    mod events {}
    #[doc = include_str!("../../docs/guide/request-response.md")]
    mod request_response {}
    #[doc = include_str!("../../docs/guide/business-data.md")]
    mod business_data {}
    #[doc = include_str!("../../docs/guide/long-handlers.md")]
    mod long_handlers {}
    #[doc = include_str!("../../docs/guide/sagas.md")]
    mod sagas {}
    #[doc = include_str!("../../docs/guide/batches.md")]
    mod batches {}
    #[doc = include_str!("../../docs/guide/in-a-service.md")]
    mod in_a_service {}
}
