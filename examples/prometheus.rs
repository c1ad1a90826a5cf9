//! Nimbus's metrics in Prometheus: install the Prometheus recorder of the `metrics` facade, run an
//! endpoint, and read back what Prometheus would scrape. The program ends by itself.
//!
//! Run it with `cargo run --example prometheus --features prometheus` (SQLite, `prometheus.db` in the working
//! directory). In a service, serve the same text on an address Prometheus scrapes:
//! `PrometheusBuilder::new().with_http_listener(([0, 0, 0, 0], 9000)).install()` (the
//! `http-listener` feature of `metrics-exporter-prometheus`).

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use nimbus::{Bus, Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.Messages.ShipOrder")]
struct ShipOrder {
    order_id: u32,
}

struct Shipping;

impl Handler<ShipOrder> for Shipping {
    async fn handle(
        &self,
        _order: ShipOrder,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every counter, gauge and histogram nimbus records now goes to this recorder.
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    let bus = Bus::builder()
        .names("Shipping", "shipping-1")
        .database_url("sqlite://prometheus.db")
        .peek_delay(Duration::from_millis(100))
        .route::<ShipOrder>("Shipping")
        .handler(Shipping)
        .build()?
        .start()
        .await?;
    for order_id in 0..5 {
        bus.send(ShipOrder { order_id }).await?;
    }
    while bus.metrics().handled < 5 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bus.stop().await?;
    // What GET /metrics would return.
    for line in prometheus.render().lines() {
        if line.starts_with("nimbus_") {
            println!("{line}");
        }
    }
    Ok(())
}
