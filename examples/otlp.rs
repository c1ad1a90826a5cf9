//! Traces to an OpenTelemetry collector over OTLP: an order placed inside a web-request-like span
//! goes Sales → Billing, and every send and every processing attempt becomes a span of one trace,
//! carried between the endpoints in the messages' `traceparent` header.
//!
//! Start a collector (for instance Jaeger, whose UI then shows the trace at
//! http://localhost:16686):
//!
//! ```sh
//! docker run --rm -p 4318:4318 -p 16686:16686 jaegertracing/all-in-one
//! cargo run --example otlp --features otlp       # SQLite file otlp.db, collector at localhost:4318
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 cargo run --example otlp --features otlp,postgres -- postgres://postgres@127.0.0.1/postgres
//! ```
//!
//! What it needs from the application: the `opentelemetry` feature of `nimbus-bus`, and
//! `tracing-opentelemetry`'s layer in the `tracing` subscriber.

use std::time::Duration;

use nimbus::{Bus, Command, Event, Handler, HandlerContext, HandlerError};
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.Messages.PlaceOrder")]
struct PlaceOrder {
    order_id: u32,
}

#[derive(Debug, Serialize, Deserialize, Event)]
#[nimbus(type_name = "Shop.Messages.OrderPlaced")]
struct OrderPlaced {
    order_id: u32,
}

struct PlaceOrderHandler;

impl Handler<PlaceOrder> for PlaceOrderHandler {
    async fn handle(&self, m: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        // Logged inside the `process Sales` span; the publish gets a `publish` span of its own.
        tracing::info!(order_id = m.order_id, "placing the order");
        ctx.publish(OrderPlaced {
            order_id: m.order_id,
        })?;
        Ok(())
    }
}

struct OrderPlacedHandler {
    billed: mpsc::UnboundedSender<u32>,
}

impl Handler<OrderPlaced> for OrderPlacedHandler {
    async fn handle(&self, m: OrderPlaced, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        tracing::info!(order_id = m.order_id, "billing the order");
        self.billed.send(m.order_id)?;
        Ok(())
    }
}

/// An OTLP/HTTP exporter (endpoint from `OTEL_EXPORTER_OTLP_ENDPOINT`, default
/// `http://localhost:4318`) behind a batch processor, and a subscriber that prints logs and
/// turns spans into OpenTelemetry spans.
fn install_tracing() -> Result<SdkTracerProvider, Box<dyn std::error::Error>> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_resource(
            Resource::builder()
                .with_service_name("nimbus-otlp-example")
                .build(),
        )
        .with_batch_exporter(exporter)
        .build();
    let tracer = provider.tracer("nimbus-otlp-example");
    // RUST_LOG filters what is printed only: every span still reaches OpenTelemetry.
    let printed =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_filter(printed))
        .with(tracing_opentelemetry::layer().with_tracer(tracer))
        .try_init()?;
    Ok(provider)
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = install_tracing()?;
    let database = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sqlite://otlp.db".to_string());
    let (billed_tx, mut billed_rx) = mpsc::unbounded_channel();
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

    // Stands for the HTTP request (or job) that starts the work; its trace is the one to look for.
    let request = tracing::info_span!("POST /orders");
    let trace_id = request.context().span().span_context().trace_id();
    sales
        .send(PlaceOrder { order_id: 42 })
        .instrument(request)
        .await?;
    let billed = tokio::time::timeout(Duration::from_secs(20), billed_rx.recv()).await;
    sales.stop().await?;
    billing.stop().await?;
    // Sends what is still batched; without it the last spans would be lost at exit.
    provider.shutdown()?;
    match billed {
        Ok(Some(order_id)) => {
            println!("order #{order_id} billed; trace {trace_id:032x} exported over OTLP");
            Ok(())
        }
        _ => Err("Billing did not receive OrderPlaced within 20 s".into()),
    }
}
