//! The Deduplication page: the keys held within their window, per scope (deduplicated sends
//! per queue, inbox ids per queue), as `nimbus deduplication list` shows them.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::pages::{layout, plural};
use super::state::Console;

/// The page.
pub async fn page(State(console): State<Arc<Console>>) -> Response {
    let content = match console.db.deduplication_scopes().await {
        Err(e) => html! { p.error { "Reading the deduplication keys failed: " (e) } },
        Ok(scopes) => html! {
            p.summary { (plural(scopes.len(), "scope")) " with keys held." }
            @if !scopes.is_empty() {
                table #deduplication {
                    thead { tr { th { "Scope" } th.num { "Keys held" } th { "First forgotten at (UTC)" } } }
                    tbody {
                        @for s in &scopes {
                            tr data-scope=(s.scope) {
                                td { code { (s.scope) } }
                                td.num { (s.keys) }
                                td.time { (s.soonest_expiry.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_else(|| "-".into())) }
                            }
                        }
                    }
                }
            }
            p.hint {
                code { "send:<queue>" } " holds the keys of " code { "Bus::send_deduplicated" } " to a queue; "
                code { "inbox:<queue>" } " the ids of the messages an endpoint's inbox handled from it. "
                "To let one through again: " code { "nimbus deduplication forget <scope> <key>" } "."
            }
        },
    };
    super::page(layout(&console, "Deduplication", None, content))
}
