//! Two endpoints in one process on the embedded SQLite default: Sales handles the `PlaceOrder`
//! command and publishes `OrderPlaced`; Billing, subscribed to it, handles the event. Every step is
//! printed and the program ends by itself.
//!
//! Run it with `cargo run --example quickstart` (it writes `quickstart.db` in the working
//! directory; no server needed; it compiles SQLite only). To run the same program on another
//! database, compile it in and pass its URL or connection string:
//! `cargo run --example quickstart --features postgres -- postgres://postgres@127.0.0.1/postgres`,
//! or `--features sqlserver -- "Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;Password=…;TrustServerCertificate=true"`.

use std::time::Duration;

use nimbus::{Bus, Command, Event, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// A command: place an order. Sent to the Sales queue.
#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.Messages.PlaceOrder")]
struct PlaceOrder {
    order_id: u32,
    product: String,
}

/// An event: an order was placed. Published to every subscriber.
#[derive(Debug, Serialize, Deserialize, Event)]
#[nimbus(type_name = "Shop.Messages.OrderPlaced")]
struct OrderPlaced {
    order_id: u32,
}

/// Sales: takes orders and announces them.
struct PlaceOrderHandler;

#[nimbus::handler]
impl Handler<PlaceOrder> for PlaceOrderHandler {
    async fn handle(
        &self,
        order: PlaceOrder,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        println!(
            "2. Sales handles PlaceOrder #{} ({}) and publishes OrderPlaced",
            order.order_id, order.product
        );
        // Written in the same transaction that removes PlaceOrder from the Sales queue.
        ctx.publish(OrderPlaced {
            order_id: order.order_id,
        })?;
        Ok(())
    }
}

/// Billing: bills placed orders.
struct OrderPlacedHandler {
    billed: mpsc::UnboundedSender<u32>,
}

#[nimbus::handler]
impl Handler<OrderPlaced> for OrderPlacedHandler {
    async fn handle(
        &self,
        event: OrderPlaced,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        println!(
            "3. Billing handles OrderPlaced #{}: bill sent",
            event.order_id
        );
        self.billed.send(event.order_id)?;
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let database = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sqlite://quickstart.db".to_string());
    let (billed_tx, mut billed_rx) = mpsc::unbounded_channel();

    // Billing starts first so that its subscription to OrderPlaced exists before Sales publishes.
    let billing = Bus::builder()
        .names("Billing", "billing-1")
        .database_url(&database)
        .peek_delay(Duration::from_millis(100))
        .handler(OrderPlacedHandler { billed: billed_tx })
        .build()?
        .start()
        .await?;
    let sales = Bus::builder()
        .names("Sales", "sales-1")
        .database_url(&database)
        .peek_delay(Duration::from_millis(100))
        .route::<PlaceOrder>("Sales")
        .handler(PlaceOrderHandler)
        .build()?
        .start()
        .await?;

    println!("1. sending PlaceOrder #42 to the Sales queue");
    sales
        .send(PlaceOrder {
            order_id: 42,
            product: "rubber duck".into(),
        })
        .await?;

    let billed = tokio::time::timeout(Duration::from_secs(20), billed_rx.recv()).await;
    sales.stop().await?;
    billing.stop().await?;
    match billed {
        Ok(Some(order_id)) => {
            // Server URLs may hold passwords: only the embedded file is shown.
            let shown = if database.starts_with("sqlite:") {
                database.as_str()
            } else {
                "the database server"
            };
            println!("4. done: order #{order_id} went Sales -> Billing through {shown}");
            Ok(())
        }
        _ => Err("Billing did not receive OrderPlaced within 20 s".into()),
    }
}
