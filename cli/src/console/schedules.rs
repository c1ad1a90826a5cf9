//! The Schedules page: the recurring messages endpoints declare, with their next and last
//! ticks, and what `nimbus schedules pause|resume` do, per schedule.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use super::actions::{back_with, checked, failed, ActionForm};
use super::pages::{action, encode, layout, plural};
use super::security::Operator;
use super::state::Console;

/// The page's query: a note after an action.
#[derive(Debug, Default, Deserialize)]
pub struct SchedulesQuery {
    note: Option<String>,
}

fn time(t: Option<chrono::NaiveDateTime>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| "-".into())
}

/// The path of a schedule's action: its endpoint and name, each as one path segment.
fn path_of(endpoint: &str, name: &str, action: &str) -> String {
    format!("/schedules/{}/{}/{action}", encode(endpoint), encode(name))
}

/// The page.
pub async fn page(
    State(console): State<Arc<Console>>,
    Query(q): Query<SchedulesQuery>,
) -> Response {
    let content = match console.db.schedules(None).await {
        Err(e) => html! { p.error { "Reading the schedules failed: " (e) } },
        Ok(schedules) => html! {
            p.summary { (plural(schedules.len(), "schedule")) "." }
            @if !schedules.is_empty() {
                table #schedules {
                    thead { tr {
                        th { "Endpoint" } th { "Schedule" } th { "When" } th { "Sends" }
                        th { "Next (UTC)" } th { "Last tick (UTC)" } th { "Fired by" }
                        th.num { "Fired" } th.num { "Missed" } th { "State" } th {}
                    } }
                    tbody {
                        @for s in &schedules {
                            tr data-name=(s.name) {
                                td { (s.endpoint) }
                                td { (s.name) }
                                td { code { (s.recurrence) } }
                                td { (s.target) }
                                td.time { (time(Some(s.next_due))) }
                                td.time { (time(s.last_due)) }
                                td { (s.last_fired_by.as_deref().unwrap_or("-")) }
                                td.num { (s.fired) }
                                td.num { (s.missed_ticks) }
                                td.state {
                                    @if s.paused_at.is_some() {
                                        "paused by " (s.paused_by.as_deref().unwrap_or("someone"))
                                    } @else { "running" }
                                }
                                td {
                                    @if s.paused_at.is_some() {
                                        (action(&console, &path_of(&s.endpoint, &s.name, "resume"), "Resume",
                                            &format!("Resume {} of {} from its next tick?", s.name, s.endpoint), "/schedules"))
                                    } @else {
                                        (action(&console, &path_of(&s.endpoint, &s.name, "pause"), "Pause",
                                            &format!("Pause {} of {}? No tick fires until it is resumed.", s.name, s.endpoint), "/schedules"))
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p.hint {
                "Times are the database's. Ticks that come due while a schedule is paused do not fire. The same from a terminal: " code { "nimbus schedules list|pause|resume" } "."
            }
        },
    };
    super::page(layout(&console, "Schedules", q.note.as_deref(), content))
}

/// What an action does to a schedule: the last segment of its path.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleAction {
    Pause,
    Resume,
}

/// Pauses or resumes one schedule.
pub async fn act(
    State(console): State<Arc<Console>>,
    Extension(who): Extension<Operator>,
    Path((endpoint, name, what)): Path<(String, String, ScheduleAction)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let back = match checked(&console, &form) {
        Ok(back) => back,
        Err(refused) => return refused.into_response(),
    };
    let (verb, result) = match what {
        ScheduleAction::Pause => (
            "paused",
            console
                .db
                .pause_schedule(&endpoint, &name, &format!("{} (console)", who.0))
                .await,
        ),
        ScheduleAction::Resume => (
            "resumed",
            console.db.resume_schedule(&endpoint, &name).await,
        ),
    };
    match result {
        Ok(true) => {
            tracing::info!(operator = %who.0, endpoint = %endpoint, schedule = %name, "console: {verb} a schedule");
            back_with(&back, &format!("{verb} {name} of {endpoint}."))
        }
        Ok(false) => back_with(&back, &format!("{name} of {endpoint} was {verb} already.")),
        Err(e) => failed(&back, verb, e),
    }
}
