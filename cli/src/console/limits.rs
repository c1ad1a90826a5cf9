//! The Limits page: every limit the endpoints keep in `NimbusLimits`, with its slots and the
//! messages it held back because it was full, as `nimbus limits` shows them.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::pages::{layout, plural};
use super::state::Console;

/// A time as the page shows it (UTC), `-` when none.
fn when(time: Option<chrono::NaiveDateTime>) -> String {
    time.map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

/// The page.
pub async fn page(State(console): State<Arc<Console>>) -> Response {
    let content = match console.db.limits().await {
        Err(e) => html! { p.error { "Reading the limits failed: " (e) } },
        Ok(limits) => html! {
            p.summary { (plural(limits.len(), "limit")) " in use." }
            @if !limits.is_empty() {
                table #limits {
                    thead { tr {
                        th { "Scope (queue|kind|message type|key)" }
                        th.num { "Slots" }
                        th.num { "Taken this period" }
                        th.num { "Messages held" }
                        th { "Last held at (UTC)" }
                    } }
                    tbody {
                        @for l in &limits {
                            tr data-scope=(l.scope) {
                                td { code { (l.scope) } }
                                td.num { (l.slots) }
                                td.num { (l.taken) }
                                td.num { (l.held) }
                                td.time { (when(l.last_held)) }
                            }
                        }
                    }
                }
            }
            p.hint {
                "A limit of handlers at once (" code { "concurrency" } ") has one slot per handler; "
                "a rate (" code { "rate" } ") one per message of its period, taken until the period ends. "
                "A message over a full limit waits in its queue and comes back a little later: "
                "it is neither failed nor dead-lettered, and each time counts in "
                code { "nimbus_messages_held_total" } "."
            }
        },
    };
    super::page(layout(&console, "Limits", None, content))
}
