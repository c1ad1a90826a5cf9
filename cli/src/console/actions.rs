//! What the console's forms do: pause and resume a queue, replay or delete one failed message
//! or a whole group (in the background, with progress), sweep subscriptions. Every action
//! checks the form's token, is logged at INFO with who did it and how many it touched, and
//! sends the browser back to a page of the console with a note.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;

use super::pages::encode;
use super::security::{form_token_ok, Operator};
use super::state::Console;

/// The fields every action form posts.
#[derive(Debug, Deserialize)]
pub struct ActionForm {
    csrf: String,
    /// The console page to go back to.
    #[serde(default)]
    back: String,
    /// Sweep only: the idle period, e.g. "4days".
    #[serde(default)]
    idle: Option<String>,
}

/// A form without the console's token: refused with 403.
pub struct Refused;

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        (
            StatusCode::FORBIDDEN,
            "this form does not carry the console's token: reload the page and try again",
        )
            .into_response()
    }
}

/// Refuses a form without this console's token; otherwise the page to go back to.
pub fn checked(console: &Console, form: &ActionForm) -> Result<String, Refused> {
    if !form_token_ok(console, &form.csrf) {
        tracing::warn!("refused a form without the console's token (a forged post, or a page from before a restart)");
        return Err(Refused);
    }
    // Only a path of this console: never another site.
    let back = if form.back.starts_with('/') && !form.back.starts_with("//") {
        form.back.clone()
    } else {
        "/".to_string()
    };
    Ok(back)
}

/// Back to `back` with `note` shown at the top.
pub fn back_with(back: &str, note: &str) -> Response {
    let separator = if back.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{back}{separator}note={}", encode(note))).into_response()
}

pub fn failed(back: &str, what: &str, error: impl std::fmt::Display) -> Response {
    tracing::warn!(what, %error, "a console action failed");
    back_with(back, &format!("{what} failed: {error}"))
}

/// What an action does to a queue: the last segment of its path.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueAction {
    Pause,
    Resume,
}

/// Pauses or resumes a queue.
pub async fn queue_action(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((queue, action)): Path<(String, QueueAction)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let (verb, result) = match action {
        QueueAction::Pause => (
            "paused",
            console
                .db
                .pause_queue(&queue, &format!("{} (nimbus console)", who.0))
                .await,
        ),
        QueueAction::Resume => ("resumed", console.db.resume_queue(&queue).await),
    };
    match result {
        Ok(changed) => {
            tracing::info!(operator = %who.0, %queue, changed, "console: {verb} a queue");
            console.read_snapshot().await;
            let note = match (action, changed) {
                (QueueAction::Pause, true) => format!(
                    "Paused {queue}: its endpoints stop taking messages within one peek delay."
                ),
                (QueueAction::Pause, false) => format!("{queue} was paused already."),
                (QueueAction::Resume, true) => {
                    format!("Resumed {queue}: its endpoints receive again within one peek delay.")
                }
                (QueueAction::Resume, false) => format!("{queue} was not paused."),
            };
            back_with(&back, &note)
        }
        Err(e) => failed(&back, verb, e),
    }
}

/// What an action does to failed messages: the last segment of its path.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bulk {
    Replay,
    Delete,
}

/// Replays or deletes every message of a failed-message group, in the background.
pub async fn group_action(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((group, bulk)): Path<(String, Bulk)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let found = {
        let index = console.failed.read().unwrap_or_else(|p| p.into_inner());
        index.group(&group).map(|(key, g)| {
            (
                key.clone(),
                g.letters.iter().map(|l| l.id.clone()).collect::<Vec<_>>(),
            )
        })
    };
    let Some((key, ids)) = found else {
        return back_with(&back, "That group is gone (replayed or deleted meanwhile).");
    };
    let verb = match bulk {
        Bulk::Replay => "replay",
        Bulk::Delete => "delete",
    };
    let what = format!(
        "{verb} {} of {} / {}",
        ids.len(),
        key.queue,
        key.message_type
    );
    tracing::info!(operator = %who.0, queue = %key.queue, message_type = %key.message_type, reason = %key.reason, count = ids.len(), "console: {verb} a failed-message group");
    let job = match bulk {
        Bulk::Replay => console.run_job(what, ids, |db, id| async move {
            db.replay_dead_letter(id).await
        }),
        Bulk::Delete => {
            console.run_job(
                what,
                ids,
                |db, id| async move { db.purge_dead_letter(id).await },
            )
        }
    };
    back_with(
        &back,
        &format!(
            "Started: {} ({} messages); progress below.",
            job.what, job.total
        ),
    )
}

/// Replays or deletes one failed message.
pub async fn letter_action(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((id, bulk)): Path<(String, Bulk)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let Ok(uuid) = uuid::Uuid::parse_str(&id) else {
        return back_with(&back, "That is not a dead letter's id.");
    };
    let (verb, result) = match bulk {
        Bulk::Replay => ("replayed", console.db.replay_dead_letter(uuid).await),
        Bulk::Delete => ("deleted", console.db.purge_dead_letter(uuid).await),
    };
    match result {
        Ok(found) => {
            tracing::info!(operator = %who.0, letter = %id, found, "console: {verb} a failed message");
            console
                .failed
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .forget(&id);
            console.rescan.notify_one();
            back_with(
                &back,
                &if found {
                    format!("The message was {verb}.")
                } else {
                    "That message is gone (replayed or deleted meanwhile).".to_string()
                },
            )
        }
        Err(e) => failed(&back, verb, e),
    }
}

pub async fn sweep(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let idle_text = form.idle.as_deref().unwrap_or("4days");
    let idle = match humantime::parse_duration(idle_text) {
        Ok(idle) => idle,
        Err(e) => {
            return back_with(
                &back,
                &format!("{idle_text:?} is not a duration ({e}); write e.g. 4days or 2h."),
            )
        }
    };
    match console.db.sweep_subscriptions(idle).await {
        Ok(report) => {
            tracing::info!(operator = %who.0, idle = idle_text, swept = report.subscriptions.len(), queues_dropped = report.queues_dropped.len(), "console: swept subscriptions");
            console.read_snapshot().await;
            back_with(
                &back,
                &format!(
                    "Swept {} subscriptions and dropped {} instance queues.",
                    report.subscriptions.len(),
                    report.queues_dropped.len()
                ),
            )
        }
        Err(e) => failed(&back, "Sweeping", e),
    }
}
