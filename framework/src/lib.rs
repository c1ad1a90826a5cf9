//! # Nimbus for Rust
//!
//! Messaging between services with queues kept as tables in the database you already run:
//! SQL Server's transport design (one table per queue, FIFO by an identity `RowVersion`, receive by
//! deleting the oldest unlocked row), on PostgreSQL and on an embedded SQLite file that needs no
//! server at all.
//!
//! * Define messages with `#[derive(Command)]`, `#[derive(Event)]` or `#[derive(Message)]` (serde
//!   JSON bodies; the type name is the Rust path unless `#[nimbus(type_name = "...")]` says
//!   otherwise, for interop with .NET endpoints).
//! * Write handlers as structs with `#[nimbus::handler] impl Handler<M> for MyHandler`.
//! * Build a bus with [`Bus::builder`], start it inside an actix `System`, `send`, `publish`,
//!   `stop`.
//!
//! What a handler sends or publishes commits in the same transaction as the receive of the message
//! it handles: both happen or neither does.
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
//! #[nimbus::handler]
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

mod actors;
mod backend;
pub mod bench;
mod bus;
mod config;
mod dead_letter;
mod envelope;
mod error;
mod handler;
pub mod headers;
mod message;
mod metrics;
mod names;
mod pipeline;
pub mod recoverability;
mod requests;
pub mod shared_envelope;
mod sql;
pub mod subscriptions;

pub use backend::SweepReport;
pub use bus::{Bus, Endpoint};
pub use config::{
    BusBuilder, StorageLayout, DEFAULT_DATABASE_URL, DEFAULT_PEEK_DELAY,
    MAX_RECOMMENDED_PEEK_DELAY, MIN_PEEK_DELAY,
};
pub use envelope::SendOptions;
pub use error::{HandlerError, NimbusError, Result};
pub use handler::{Handler, HandlerContext};
pub use headers::Headers;
pub use message::{Command, Event, Message, MessageKind};
pub use metrics::Metrics;
pub use names::{QueueName, SchemaName, MAX_NAME_LEN};
pub use nimbus_macros::{handler, Command, Event, Message};

/// Re-exports used by the code the macros generate. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use async_trait::async_trait;
}

/// The README's example, compiled as a doc test so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
