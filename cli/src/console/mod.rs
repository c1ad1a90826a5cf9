//! `nimbus console`: a web console over `nimbus::admin` for operators — every queue with its
//! depth, chart and pause state, the failed messages grouped by queue, type and reason with
//! replay and delete, the subscriptions, the live instances, and charts of what every instance
//! handled (from `NimbusMonitoring`). Built on axum (the HTTP server)
//! and maud (HTML escaped by construction); the pages render from what background readers
//! last read, so a database with many queues and dead letters does not slow them down.

mod actions;
mod bodies;
mod bridges;
mod charts;
mod deduplication;
mod delayed;
mod limits;
mod monitoring;
mod pages;
mod sagas;
mod schedules;
mod security;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::Markup;
use nimbus::admin::Database;
use serde::Deserialize;

pub use security::TOKEN_VARIABLE;
use state::Console;

/// How `nimbus console` serves.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Where to listen. An address other than loopback needs the NIMBUS_CONSOLE_TOKEN
    /// environment variable (operators then log in with it as the password); port 0 picks a
    /// free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Serve the pages without any action (no pause, replay, delete or sweep).
    #[arg(long)]
    pub read_only: bool,
    /// Never show message bodies (for databases holding personal data).
    #[arg(long)]
    pub hide_bodies: bool,
    /// How often the numbers are read again and open pages update, e.g. "5s".
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub refresh: Duration,
}

/// Serves the console until the process is stopped.
pub async fn run(db: Database, settings: Settings) -> Result<(), Box<dyn std::error::Error>> {
    crate::logging::to_stderr("info");
    let token = std::env::var(TOKEN_VARIABLE)
        .ok()
        .filter(|t| !t.trim().is_empty());
    if !settings.bind.ip().is_loopback() && token.is_none() {
        return Err(format!(
            "refusing to serve the console on {} without authentication. Fix: set \
             {TOKEN_VARIABLE} in the environment (operators log in with it as the password), or \
             bind to 127.0.0.1 and reach it through an SSH tunnel or a reverse proxy",
            settings.bind
        )
        .into());
    }
    if settings.refresh.is_zero() {
        return Err("--refresh must be longer than 0. Fix: e.g. --refresh 5s".into());
    }
    let listener = tokio::net::TcpListener::bind(settings.bind)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", settings.bind))?;
    let address = listener.local_addr()?;
    let console = Arc::new(Console::new(db, settings, token));
    console.read_snapshot().await;
    console.start();
    let mode = match (&console.token, console.settings.read_only) {
        (Some(_), true) => "token required, read-only",
        (Some(_), false) => "token required",
        (None, true) => "read-only",
        (None, false) => "loopback only",
    };
    println!("nimbus console on http://{address}/ ({mode})");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    tracing::info!(%address, mode, "console serving");
    axum::serve(
        listener,
        router(console).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/queues/{queue}", get(queue))
        .route("/queues/{queue}/{action}", post(actions::queue_action))
        .route("/failed", get(failed))
        .route("/failed/{group}", get(group))
        .route("/failed/{group}/{action}", post(actions::group_action))
        .route("/letters/{id}", get(letter))
        .route("/letters/{id}/{action}", post(actions::letter_action))
        .route("/subscriptions", get(subscriptions))
        .route("/subscriptions/sweep", post(actions::sweep))
        .route("/instances", get(instances))
        .route("/monitoring", get(monitoring_page))
        .route("/sagas", get(sagas::page))
        .route("/sagas/{saga}/{correlation}/{action}", post(sagas::act))
        .route("/delayed", get(delayed::page))
        .route("/delayed/{id}/{action}", post(delayed::act))
        .route("/schedules", get(schedules::page))
        .route("/deduplication", get(deduplication::page))
        .route("/limits", get(limits::page))
        .route("/bodies", get(bodies::page))
        .route("/bridges", get(bridges::page))
        .route(
            "/schedules/{endpoint}/{name}/{action}",
            post(schedules::act),
        )
        .route("/console.js", get(script))
        .route("/console.css", get(style))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            security::guard,
        ))
        // After the guard: probes carry no token, and these say nothing but up or down.
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .with_state(console)
}

/// The console's liveness: it serves.
async fn live() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        serde_json::json!({ "live": true }),
    )
}

/// The console's readiness: its last read of the database worked, and was recent (within
/// three refresh intervals, and at most a minute ago). 503 otherwise, with why in words that
/// name no host or secret (the console's log has the error).
async fn ready(State(console): State<Arc<Console>>) -> Response {
    let why = {
        let snapshot = console.snapshot.read().unwrap_or_else(|p| p.into_inner());
        let limit = (console.settings.refresh * 3).max(Duration::from_secs(60));
        let age = snapshot
            .read_at
            .and_then(|at| (chrono::Utc::now() - at).to_std().ok());
        if snapshot.error.is_some() {
            Some("the last read of the database failed (see the console's log)".to_string())
        } else {
            match age {
                None => Some("the database has not been read yet".to_string()),
                Some(age) if age > limit => {
                    Some(format!("the database was last read {}s ago", age.as_secs()))
                }
                Some(_) => None,
            }
        }
    };
    let status = if why.is_none() {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(
        status,
        serde_json::json!({ "ready": why.is_none(), "reason": why }),
    )
}

/// A JSON response.
fn json_response(status: axum::http::StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The query every page takes: a note to show (after an action), and how many messages a
/// queue page lists.
#[derive(Debug, Default, Deserialize)]
struct PageQuery {
    note: Option<String>,
    limit: Option<i64>,
    /// `1`: also what a page hides by default (stopped instances).
    all: Option<String>,
}

/// An HTML response.
pub fn page(markup: Markup) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

async fn overview(State(console): State<Arc<Console>>, Query(q): Query<PageQuery>) -> Response {
    page(pages::overview(
        &console,
        q.note.as_deref(),
        q.all.as_deref() == Some("1"),
    ))
}

async fn queue(
    State(console): State<Arc<Console>>,
    Path(name): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let limit = q.limit.unwrap_or(20).clamp(1, 1000);
    match console.db.peek(&name, limit).await {
        Ok(messages) => {
            // The ordered groups with messages waiting (none where the queue keeps none); a
            // failed read is said on the page, the messages are still shown.
            let groups = console.db.groups(&name, GROUPS_SHOWN).await;
            let priorities = console.db.priorities(&name).await;
            page(pages::queue(
                &console,
                &name,
                &messages,
                &pages::Kept { groups, priorities },
                limit,
                q.note.as_deref(),
            ))
        }
        Err(e) => page(pages::not_found(&console, &e.to_string())),
    }
}

/// The ordered groups a queue's page lists at most, the longest first.
const GROUPS_SHOWN: i64 = 50;

async fn failed(State(console): State<Arc<Console>>, Query(q): Query<PageQuery>) -> Response {
    page(pages::failed(&console, q.note.as_deref()))
}

async fn group(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let found = {
        let index = console.failed.read().unwrap_or_else(|p| p.into_inner());
        index.group(&id).map(|(k, g)| (k.clone(), g.clone()))
    };
    match found {
        Some((key, group)) => page(pages::group(&console, &key, &group, q.note.as_deref())),
        None => page(pages::not_found(
            &console,
            "No such group: its messages were replayed or deleted.",
        )),
    }
}

async fn letter(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let Ok(uuid) = uuid::Uuid::parse_str(&id) else {
        return page(pages::not_found(
            &console,
            "That is not a dead letter's id.",
        ));
    };
    match console.db.dead_letter(uuid).await {
        Ok(Some(letter)) => page(pages::letter(&console, &letter, q.note.as_deref())),
        Ok(None) => page(pages::not_found(
            &console,
            "No such failed message: it was replayed or deleted.",
        )),
        Err(e) => page(pages::not_found(&console, &e.to_string())),
    }
}

async fn subscriptions(
    State(console): State<Arc<Console>>,
    Query(q): Query<PageQuery>,
) -> Response {
    page(pages::subscriptions(&console, q.note.as_deref()))
}

async fn instances(State(console): State<Arc<Console>>, Query(q): Query<PageQuery>) -> Response {
    page(pages::instances(
        &console,
        q.note.as_deref(),
        q.all.as_deref() == Some("1"),
    ))
}

/// The Monitoring page's query: the window (`15m`, `1h`, `6h`) and what to chart.
#[derive(Debug, Default, Deserialize)]
struct MonitoringQuery {
    window: Option<String>,
    queue: Option<String>,
    endpoint: Option<String>,
}

async fn monitoring_page(
    State(console): State<Arc<Console>>,
    Query(q): Query<MonitoringQuery>,
) -> Response {
    page(
        monitoring::page(
            &console,
            monitoring::Selection {
                window: q.window.as_deref().unwrap_or("15m"),
                queue: q.queue.as_deref(),
                endpoint: q.endpoint.as_deref(),
            },
        )
        .await,
    )
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        pages::SCRIPT,
    )
        .into_response()
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        pages::STYLE,
    )
        .into_response()
}
