//! The shop's front office, one of two programs: the **Sales** endpoint takes four orders (each a
//! `PlaceOrder` command to itself, whose handler publishes `OrderPlaced` to Billing and Shipping,
//! which run in the other program, `shop-billing`), then asks Billing for an invoice
//! (request/response) and prints the reply. Start `shop-billing` first; see its header for the
//! whole walk-through, dead letters and the replay included.
//!
//! ```sh
//! cargo run --example shop-sales                    # SQLite: shop.db in the working directory
//! cargo run --example shop-sales --features postgres -- postgres://postgres@127.0.0.1/postgres
//! ```

#[path = "contracts.rs"]
mod contracts;

use std::time::Duration;

use contracts::{GetInvoice, Invoice, OrderPlaced, PlaceOrder};
use nimbus::{Bus, Handler, HandlerContext, HandlerError};

struct Sales;

impl Handler<PlaceOrder> for Sales {
    async fn handle(&self, m: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        // Committed with the removal of PlaceOrder: both happen, or neither.
        ctx.publish(OrderPlaced {
            order_id: m.order_id,
            amount_cents: m.amount_cents,
        })?;
        println!("Sales: order {} placed, OrderPlaced published", m.order_id);
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), nimbus::NimbusError> {
    let url = contracts::database_url();
    let sales = Bus::builder()
        .names("Sales", "sales-1")
        .database_url(&url)
        .route::<PlaceOrder>("Sales")
        .handler(Sales)
        // An instance queue for the replies to requests.
        .enable_requests()
        .build()?
        .start()
        .await?;
    for (order_id, amount_cents) in [(1, 2_500), (2, 990), (3, 12_000), (13, 4_200)] {
        sales
            .send(PlaceOrder {
                order_id,
                amount_cents,
            })
            .await?;
    }
    // Billing bills order 1 once its OrderPlaced arrives; ask until it has.
    for _ in 0..20 {
        let invoice: Invoice = sales
            .request_with(
                GetInvoice { order_id: 1 },
                nimbus::SendOptions::new().to("Billing"),
                Duration::from_secs(20),
            )
            .await?;
        if let Some(amount_cents) = invoice.amount_cents {
            println!(
                "Sales: Billing says order {} was billed {amount_cents} cents",
                invoice.order_id
            );
            return sales.stop().await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    sales.stop().await?;
    Err(nimbus::NimbusError::NotRunning(
        "Billing did not bill order 1: is shop-billing running on the same database?".into(),
    ))
}
