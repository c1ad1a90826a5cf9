//! Liveness and readiness routes for an axum application (the `axum` feature): see
//! [`Bus::health_routes`].

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::endpoint::bus::Bus;

impl Bus {
    /// An axum router with two routes for probes, to merge into the application's own:
    /// `GET /health/live` answers 200 while the bus runs and 503 once it was stopped;
    /// `GET /health/ready` answers 200 when it is ready and 503 when not (the database does not
    /// answer, a queue has failed longer than `critical_error_after`, or it was stopped). Both
    /// answer [`Bus::health`] as JSON, with `reasons` saying why it is not ready.
    ///
    /// ```no_run
    /// # fn demo(bus: nimbus::Bus) {
    /// let app: axum::Router = axum::Router::new()
    ///     // .route("/orders", post(place_order)) ...
    ///     .merge(bus.health_routes());
    /// // axum::serve(listener, app) as usual
    /// # }
    /// ```
    pub fn health_routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        let (live, ready) = (self.clone(), self.clone());
        Router::new()
            .route(
                "/health/live",
                get(move || async move { answer(&live, |h| h.live).await }),
            )
            .route(
                "/health/ready",
                get(move || async move { answer(&ready, |h| h.ready).await }),
            )
    }
}

/// The bus's health as JSON, 200 when `good` says so, 503 otherwise.
async fn answer(bus: &Bus, good: fn(&crate::Health) -> bool) -> Response {
    let health = bus.health().await;
    let status = if good(&health) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::to_string(&health).unwrap_or_else(|e| {
        format!("{{\"error\":\"the health report could not be written as JSON: {e}\"}}")
    });
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
