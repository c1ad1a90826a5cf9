#![allow(dead_code)] // Each program uses some of these.
//! The messages the shop's two programs exchange. Each program compiles this same file; the
//! type names on the wire are set explicitly, so they stay the same whatever crate or module
//! the types live in (a .NET endpoint could send them too).

use nimbus::{Command, Event, Message};
use serde::{Deserialize, Serialize};

/// The database both programs use, unless a URL is passed: a file in the working directory.
pub const DEFAULT_DATABASE: &str = "sqlite://shop.db";

/// Sales takes an order.
#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.PlaceOrder")]
pub struct PlaceOrder {
    pub order_id: u32,
    pub amount_cents: u64,
}

/// Sales took an order: Billing and Shipping both subscribe.
#[derive(Debug, Serialize, Deserialize, Event)]
#[nimbus(type_name = "Shop.OrderPlaced")]
pub struct OrderPlaced {
    pub order_id: u32,
    pub amount_cents: u64,
}

/// A request to Billing: the invoice of an order.
#[derive(Debug, Serialize, Deserialize, Message)]
#[nimbus(type_name = "Shop.GetInvoice")]
pub struct GetInvoice {
    pub order_id: u32,
}

/// Billing's reply to [`GetInvoice`].
#[derive(Debug, Serialize, Deserialize, Message)]
#[nimbus(type_name = "Shop.Invoice")]
pub struct Invoice {
    pub order_id: u32,
    /// `None` when Billing has not billed the order (yet).
    pub amount_cents: Option<u64>,
}

/// The database URL from the first argument that is not a flag, or the default.
pub fn database_url() -> String {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| DEFAULT_DATABASE.to_string())
}
