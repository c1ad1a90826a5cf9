//! The Sagas page: the running saga instances, oldest first, with their state, and what
//! `nimbus sagas complete|delete` do, per instance: *Complete* marks it completed (messages of
//! it that come later are ignored), *Delete* removes it (a later starting message starts it
//! anew).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::actions::{back_with, checked, failed, ActionForm};
use super::pages::{action, ago, encode, layout, plural};
use super::security::Operator;
use super::state::Console;

/// The most instances the page lists (the oldest).
const SHOWN: i64 = 500;

/// The most of an instance's state the page shows.
const STATE_CHARS: usize = 300;

/// The page's query: a note after an action, and one saga type only.
#[derive(Debug, Default, Deserialize)]
pub struct SagaQuery {
    note: Option<String>,
    #[serde(rename = "type")]
    saga_type: Option<String>,
}

/// The page.
pub async fn page(State(console): State<Arc<Console>>, Query(q): Query<SagaQuery>) -> Response {
    let listed = console.db.sagas(q.saga_type.as_deref(), SHOWN).await;
    let now = chrono::Utc::now().naive_utc();
    let since = |t: Option<chrono::NaiveDateTime>| {
        t.and_then(|t| (now - t).to_std().ok())
            .map(|d| format!("{} ago", ago(Duration::from_secs(d.as_secs()))))
            .unwrap_or_else(|| "-".into())
    };
    let content = match listed {
        Err(e) => html! { p.error { "Reading the saga instances failed: " (e) } },
        Ok(sagas) => html! {
            p.summary {
                (plural(sagas.len(), "running saga instance"))
                @if sagas.len() as i64 == SHOWN { " (the oldest " (SHOWN) ")" }
                @if let Some(t) = &q.saga_type { " of " (t) " · " a href="/sagas" { "all types" } }
                "."
            }
            @if !sagas.is_empty() {
                table #sagas {
                    thead { tr {
                        th { "Saga" } th { "Correlation" } th { "Started" } th { "Last change" }
                        th.num { "Version" } th { "State" } th {}
                    } }
                    tbody {
                        @for s in &sagas {
                            @let path = format!("/sagas/{}/{}", encode(&s.saga_type), encode(&s.correlation));
                            tr data-saga=(s.saga_type) data-correlation=(s.correlation) {
                                td { a href={"/sagas?type=" (encode(&s.saga_type))} { (s.saga_type) } }
                                td { (s.correlation) }
                                td.time { (since(s.started_at)) }
                                td.time { (since(s.updated_at)) }
                                td.num { (s.version) }
                                td.reason { code { (cut(&s.state)) } }
                                td {
                                    (action(&console, &format!("{path}/complete"), "Complete",
                                        &format!("Complete {} {}? Messages of it that come later are ignored.", s.saga_type, s.correlation), "/sagas"))
                                    (action(&console, &format!("{path}/delete"), "Delete",
                                        &format!("Delete {} {}? A message that starts it later starts it anew.", s.saga_type, s.correlation), "/sagas"))
                                }
                            }
                        }
                    }
                }
            }
            p.hint {
                "Running instances only: completed ones are kept " code { "completed_sagas_kept" } " (7 days) so that their late messages are ignored. An instance that waits long past its timeout usually lost a message: look in Failed messages first. The same from a terminal: " code { "nimbus sagas complete|delete <type> <correlation>" } "."
            }
        },
    };
    super::page(layout(&console, "Sagas", q.note.as_deref(), content))
}

/// What an action does to an instance: the last segment of its path.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SagaAction {
    Complete,
    Delete,
}

/// Completes or deletes one instance.
pub async fn act(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((saga_type, correlation, what)): Path<(String, String, SagaAction)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let (verb, result) = match what {
        SagaAction::Complete => (
            "completed",
            console.db.complete_saga(&saga_type, &correlation).await,
        ),
        SagaAction::Delete => (
            "deleted",
            console.db.delete_saga(&saga_type, &correlation).await,
        ),
    };
    match result {
        Ok(true) => {
            tracing::info!(operator = %who.0, saga = %saga_type, %correlation, "console: {verb} a saga instance");
            back_with(&back, &format!("{verb} {saga_type} {correlation}."))
        }
        Ok(false) => back_with(
            &back,
            &format!("No running instance of {saga_type} for {correlation}: it completed or was deleted already."),
        ),
        Err(e) => failed(&back, verb, e),
    }
}

/// `state` cut to what a table cell shows.
fn cut(state: &str) -> String {
    match state.char_indices().nth(STATE_CHARS) {
        Some((at, _)) => format!("{}…", &state[..at]),
        None => state.to_string(),
    }
}
