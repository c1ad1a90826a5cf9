//! The Delayed page: the delayed messages not delivered yet, soonest due first, and what
//! `nimbus delayed cancel|reschedule` do, per message: *Cancel* deletes it (it is never
//! delivered), *Deliver now* makes it due at once.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::actions::{back_with, checked, failed, ActionForm};
use super::pages::{action, layout, plural};
use super::security::Operator;
use super::state::Console;

/// The most delayed messages the page lists (the soonest due).
const SHOWN: i64 = 500;

/// The page's query: a note after an action.
#[derive(Debug, Default, Deserialize)]
pub struct DelayedQuery {
    note: Option<String>,
}

/// The page.
pub async fn page(State(console): State<Arc<Console>>, Query(q): Query<DelayedQuery>) -> Response {
    let listed = console.db.delayed_messages(SHOWN).await;
    let content = match listed {
        Err(e) => html! { p.error { "Reading the delayed messages failed: " (e) } },
        Ok(delayed) => html! {
            p.summary {
                (plural(delayed.len(), "delayed message"))
                " not delivered yet"
                @if delayed.len() as i64 == SHOWN { " (the soonest " (SHOWN) ")" }
                "."
            }
            @if !delayed.is_empty() {
                table #delayed {
                    thead { tr {
                        th { "Message id" } th { "Destination" } th { "Type" } th { "Due (UTC)" } th {}
                    } }
                    tbody {
                        @for m in &delayed {
                            @let path = format!("/delayed/{}", m.id.to_lowercase());
                            tr data-id=(m.id.to_lowercase()) {
                                td { code { (m.id.to_lowercase()) } }
                                td { (m.destination) }
                                td { (m.message_type.as_deref().unwrap_or("-")) }
                                td.time { (m.due.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_else(|| "-".into())) }
                                td {
                                    (action(&console, &format!("{path}/cancel"), "Cancel",
                                        &format!("Cancel {}? It will never be delivered.", m.id), "/delayed"))
                                    (action(&console, &format!("{path}/now"), "Deliver now",
                                        &format!("Deliver {} now instead of when it is due?", m.id), "/delayed"))
                                }
                            }
                        }
                    }
                }
            }
            p.hint {
                "A cancel or a move finds the message only while it waits: one delivered meanwhile is said to be. The same from a terminal: " code { "nimbus delayed list|cancel|reschedule" } "."
            }
        },
    };
    super::page(layout(
        &console,
        "Delayed messages",
        q.note.as_deref(),
        content,
    ))
}

/// What an action does to a delayed message: the last segment of its path.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayedAction {
    Cancel,
    Now,
}

/// Cancels one delayed message, or makes it due at once.
pub async fn act(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((id, what)): Path<(nimbus::uuid::Uuid, DelayedAction)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let (verb, result) = match what {
        DelayedAction::Cancel => ("cancelled", console.db.cancel_delayed(id).await),
        DelayedAction::Now => (
            "made due now",
            console
                .db
                .reschedule_delayed(id, nimbus::Due::In(std::time::Duration::ZERO))
                .await,
        ),
    };
    match result {
        Ok(true) => {
            tracing::info!(operator = %who.0, message_id = %id, "console: {verb} a delayed message");
            back_with(&back, &format!("{verb} {id}."))
        }
        Ok(false) => back_with(
            &back,
            &format!("{id} was not waiting any more: it was delivered already."),
        ),
        Err(e) => failed(&back, verb, e),
    }
}
