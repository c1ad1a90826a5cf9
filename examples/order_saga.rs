//! An order process as a saga, on the embedded SQLite default: an order waits for its payment
//! and its shipment, in whatever order they arrive, and is confirmed once both happened; an
//! order not paid within two seconds is cancelled by a timeout. The saga's state commits with
//! each message that changes it. Every step is printed and the program ends by itself.
//!
//! Run it with `cargo run --example order_saga` (it writes `order_saga.db` in the working
//! directory; no server needed).

use std::time::Duration;

use nimbus::saga::{Saga, SagaHandler, SagaInstance, SagaTimeout};
use nimbus::{Bus, Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.PlaceOrder")]
struct PlaceOrder {
    order_id: u32,
}

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.PaymentReceived")]
struct PaymentReceived {
    order_id: u32,
}

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.OrderShipped")]
struct OrderShipped {
    order_id: u32,
}

/// The saga's timeout: the order's payment is due.
#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.PaymentDue")]
struct PaymentDue {
    order_id: u32,
}

/// What the process ends with, for the customer.
#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.OrderOutcome")]
struct OrderOutcome {
    order_id: u32,
    confirmed: bool,
}

/// The order process: one instance per order id.
#[derive(Clone)]
struct OrderProcess;

#[derive(Default, Serialize, Deserialize)]
struct OrderState {
    order_id: u32,
    placed: bool,
    paid: bool,
    shipped: bool,
}

impl Saga for OrderProcess {
    type State = OrderState;
    const NAME: &'static str = "Shop.OrderProcess";
}

impl OrderProcess {
    fn confirm_when_done(
        saga: &mut SagaInstance<OrderState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        let s = &saga.state;
        if s.placed && s.paid && s.shipped {
            ctx.send(OrderOutcome {
                order_id: s.order_id,
                confirmed: true,
            })?;
            saga.mark_complete();
        }
        Ok(())
    }
}

impl SagaHandler<PlaceOrder> for OrderProcess {
    const STARTS: bool = true;
    fn correlation(m: &PlaceOrder) -> String {
        m.order_id.to_string()
    }
    async fn handle(
        &self,
        m: PlaceOrder,
        saga: &mut SagaInstance<OrderState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        println!("order {}: placed; payment due in 2 s", m.order_id);
        saga.state.order_id = m.order_id;
        saga.state.placed = true;
        saga.request_timeout(
            ctx,
            Duration::from_secs(2),
            PaymentDue {
                order_id: m.order_id,
            },
        )?;
        Self::confirm_when_done(saga, ctx)
    }
}

impl SagaHandler<PaymentReceived> for OrderProcess {
    const STARTS: bool = true; // a payment may arrive before its order
    fn correlation(m: &PaymentReceived) -> String {
        m.order_id.to_string()
    }
    async fn handle(
        &self,
        m: PaymentReceived,
        saga: &mut SagaInstance<OrderState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        println!("order {}: paid", m.order_id);
        saga.state.order_id = m.order_id;
        saga.state.paid = true;
        Self::confirm_when_done(saga, ctx)
    }
}

impl SagaHandler<OrderShipped> for OrderProcess {
    const STARTS: bool = true;
    fn correlation(m: &OrderShipped) -> String {
        m.order_id.to_string()
    }
    async fn handle(
        &self,
        m: OrderShipped,
        saga: &mut SagaInstance<OrderState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        println!("order {}: shipped", m.order_id);
        saga.state.order_id = m.order_id;
        saga.state.shipped = true;
        Self::confirm_when_done(saga, ctx)
    }
}

impl SagaTimeout<PaymentDue> for OrderProcess {
    async fn timeout(
        &self,
        due: PaymentDue,
        saga: &mut SagaInstance<OrderState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        if !saga.state.paid {
            println!("order {}: not paid in time", due.order_id);
            ctx.send(OrderOutcome {
                order_id: due.order_id,
                confirmed: false,
            })?;
            saga.mark_complete();
        }
        Ok(())
    }
}

/// The customer side: hears how each order ended.
struct Customers {
    outcomes: mpsc::UnboundedSender<OrderOutcome>,
}

impl Handler<OrderOutcome> for Customers {
    async fn handle(&self, m: OrderOutcome, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.outcomes.send(m)?;
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = std::fs::remove_file("order_saga.db");
    let url = "sqlite://order_saga.db";
    let orders = Bus::builder()
        .names("Orders", "orders-1")
        .database_url(url)
        .peek_delay(Duration::from_millis(100))
        .route::<PlaceOrder>("Orders")
        .route::<PaymentReceived>("Orders")
        .route::<OrderShipped>("Orders")
        .route::<OrderOutcome>("Customers")
        .create_queues_on_send(true)
        .saga_handler::<PlaceOrder, _>(OrderProcess)
        .saga_handler::<PaymentReceived, _>(OrderProcess)
        .saga_handler::<OrderShipped, _>(OrderProcess)
        .saga_timeout::<PaymentDue, _>(OrderProcess)
        .build()?
        .start()
        .await?;
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let customers = Bus::builder()
        .names("Customers", "customers-1")
        .database_url(url)
        .peek_delay(Duration::from_millis(100))
        .handler(Customers { outcomes: tx })
        .build()?
        .start()
        .await?;

    // Order 1 is paid and shipped; order 2 is placed and never paid.
    orders.send(PaymentReceived { order_id: 1 }).await?;
    orders.send(PlaceOrder { order_id: 1 }).await?;
    orders.send(OrderShipped { order_id: 1 }).await?;
    orders.send(PlaceOrder { order_id: 2 }).await?;
    for _ in 0..2 {
        let outcome = tokio::time::timeout(Duration::from_secs(30), outcomes.recv())
            .await?
            .ok_or("the customer side stopped")?;
        println!(
            "customer hears: order {} {}",
            outcome.order_id,
            if outcome.confirmed {
                "confirmed"
            } else {
                "cancelled"
            }
        );
    }
    customers.stop().await?;
    orders.stop().await?;
    Ok(())
}
