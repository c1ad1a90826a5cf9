//! The shop's back office, one of two programs: the **Billing** and **Shipping** endpoints in one
//! process, each subscribed to `OrderPlaced`. Billing bills every order and answers `GetInvoice`
//! requests; Shipping ships it, except that with `--warehouse-closed` it refuses order 13, which
//! ends in the dead letters after its retries.
//!
//! ```sh
//! cargo run --example shop-billing -- --warehouse-closed     # terminal 1 (SQLite: shop.db)
//! cargo run --example shop-sales                             # terminal 2
//! cargo run -p nimbus-bus-cli -- dead-letters list --database sqlite://shop.db
//! # stop billing (Ctrl-C), start it again without --warehouse-closed, then:
//! cargo run -p nimbus-bus-cli -- dead-letters replay --database sqlite://shop.db <id>
//! ```
//!
//! PostgreSQL: pass the same URL to both programs (`--features postgres -- postgres://…`).

#[path = "contracts.rs"]
mod contracts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use contracts::{GetInvoice, Invoice, OrderPlaced};
use nimbus::{Bus, Handler, HandlerContext, HandlerError};

/// The invoices billed so far, by order (kept in memory: this is a demo).
type Invoices = Arc<Mutex<HashMap<u32, u64>>>;

struct Billing {
    invoices: Invoices,
}

impl Handler<OrderPlaced> for Billing {
    async fn handle(&self, e: OrderPlaced, _: &mut HandlerContext) -> Result<(), HandlerError> {
        self.invoices
            .lock()
            .map_err(|_| "the invoice book is poisoned")?
            .insert(e.order_id, e.amount_cents);
        println!(
            "Billing: billed order {} ({} cents)",
            e.order_id, e.amount_cents
        );
        Ok(())
    }
}

impl Handler<GetInvoice> for Billing {
    async fn handle(&self, r: GetInvoice, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let amount_cents = self
            .invoices
            .lock()
            .map_err(|_| "the invoice book is poisoned")?
            .get(&r.order_id)
            .copied();
        println!("Billing: answering for the invoice of order {}", r.order_id);
        ctx.reply(Invoice {
            order_id: r.order_id,
            amount_cents,
        })?;
        Ok(())
    }
}

struct Shipping {
    warehouse_closed: bool,
}

impl Handler<OrderPlaced> for Shipping {
    async fn handle(&self, e: OrderPlaced, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.warehouse_closed && e.order_id == 13 {
            println!(
                "Shipping: order 13 refused (attempt {}): the warehouse is closed",
                ctx.attempt()
            );
            return Err("the warehouse is closed for order 13".into());
        }
        println!("Shipping: shipped order {}", e.order_id);
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), nimbus::NimbusError> {
    let url = contracts::database_url();
    let warehouse_closed = std::env::args().any(|a| a == "--warehouse-closed");
    let invoices = Invoices::default();
    let billing = Bus::builder()
        .names("Billing", "billing-1")
        .database_url(&url)
        .handler::<OrderPlaced, _>(Billing {
            invoices: invoices.clone(),
        })
        .handler::<GetInvoice, _>(Billing { invoices })
        .build()?
        .start()
        .await?;
    let shipping = Bus::builder()
        .names("Shipping", "shipping-1")
        .database_url(&url)
        .handler(Shipping { warehouse_closed })
        // Fail fast for the demo: one retry at once, one 2 s later, then the dead letters.
        .immediate_retries(1)
        .delayed_retries(1, Duration::from_secs(2))
        .build()?
        .start()
        .await?;
    println!(
        "Billing and Shipping run on {url}{}; Ctrl-C stops them",
        if warehouse_closed {
            " (the warehouse is closed for order 13)"
        } else {
            ""
        }
    );
    // Ctrl-C: in-flight handlers finish, nothing is lost.
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| nimbus::NimbusError::NotRunning(format!("waiting for Ctrl-C: {e}")))?;
    shipping.stop().await?;
    billing.stop().await
}
