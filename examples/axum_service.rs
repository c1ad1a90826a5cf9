//! An axum web service that sends through the bus, and stops in the right order.
//!
//! `POST /orders/<id>` sends a `PlaceOrder` command to the Sales queue and answers once it is
//! committed; `GET /health/live` and `GET /health/ready` answer the bus's health for
//! Kubernetes probes (see "In a tokio or axum service" in the guide).
//!
//! On SIGTERM or Ctrl-C the service first stops accepting connections and answers every request
//! already in flight (axum's graceful shutdown), and only then stops the bus: stopped first, the
//! bus would fail the requests still sending through it.
//!
//! Run it with `cargo run --example axum_service --features axum` (SQLite, `axum-service.db`
//! in the working directory), then `curl -X POST localhost:8080/orders/7`. Arguments: the
//! database URL, the address to listen on (default `127.0.0.1:8080`), and how long each order
//! takes before it is sent, in milliseconds (default 0: a stand-in for real work).

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use nimbus::{Bus, Command};
use serde::{Deserialize, Serialize};

/// The command every order becomes.
#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.Messages.PlaceOrder")]
struct PlaceOrder {
    id: u32,
}

/// What a request handler needs: the bus, and how long an order's work takes.
#[derive(Clone)]
struct Service {
    bus: Bus,
    work: Duration,
}

/// `POST /orders/<id>`: 202 once the command is committed; 500 with the reason if it is not.
async fn place_order(
    State(service): State<Service>,
    Path(id): Path<u32>,
) -> Result<(StatusCode, String), (StatusCode, String)> {
    tracing::info!(id, "placing an order");
    tokio::time::sleep(service.work).await;
    service
        .bus
        .send(PlaceOrder { id })
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")))?;
    Ok((StatusCode::ACCEPTED, format!("order {id} accepted\n")))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "nimbus=info,axum_service=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let database = args
        .next()
        .unwrap_or_else(|| "sqlite://axum-service.db".into());
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let work = Duration::from_millis(args.next().map_or(Ok(0), |ms| ms.parse())?);

    // Listen for SIGTERM from the start: one that comes while the service starts up stops it
    // in order too.
    let stop = nimbus::stop_signal();
    let bus = Bus::builder()
        .application("Web") // the instance is named after the host: unique per pod
        .database_url(database)
        .route::<PlaceOrder>("Sales")
        .create_queues_on_send(true)
        .build()?
        .start_in_background()
        .await?;
    let app = Router::new()
        .route("/orders/{id}", post(place_order))
        .with_state(Service {
            bus: bus.clone(),
            work,
        })
        .merge(bus.health_routes());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("listening on http://{}", listener.local_addr()?);

    // 1. On the signal, stop accepting and answer every request in flight…
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            if let Err(e) = stop.await {
                eprintln!("{e}");
            }
        })
        .await?;
    // 2. …then stop the bus: handlers in flight finish, and its thread ends.
    bus.stop().await?;
    println!("stopped");
    Ok(())
}
