//! The Bridges page: what bridges moved into this database within their window (the ids each
//! claimed here, scope `bridge:<name>`), and what waits in this database's bridge queues to
//! cross out (`Bridge.<name>.<topic digest>` for events, `Bridge.<name>.Replies` for replies).

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::pages::{encode, layout, plural};
use super::state::Console;

/// The prefix of a bridge's deduplication scope.
const SCOPE_PREFIX: &str = "bridge:";

/// The prefix of a bridge's own queues.
const QUEUE_PREFIX: &str = "Bridge.";

/// A bridge queue's bridge and what it holds, from its name `Bridge.<name>.<rest>`.
fn bridge_queue(queue: &str) -> Option<(&str, &'static str)> {
    let rest = queue.strip_prefix(QUEUE_PREFIX)?;
    let (bridge, what) = rest.rsplit_once('.')?;
    Some((
        bridge,
        if what == "Replies" {
            "replies going back"
        } else {
            "events to publish on the other side"
        },
    ))
}

/// The page.
pub async fn page(State(console): State<Arc<Console>>) -> Response {
    let crossed_in = console.db.deduplication_scopes().await.map(|scopes| {
        scopes
            .into_iter()
            .filter_map(|s| {
                let bridge = s.scope.strip_prefix(SCOPE_PREFIX)?.to_string();
                Some((bridge, s.keys, s.soonest_expiry))
            })
            .collect::<Vec<_>>()
    });
    let waiting = console.db.queues().await.map(|queues| {
        queues
            .into_iter()
            .filter_map(|q| {
                let (bridge, what) = bridge_queue(&q.name)?;
                Some((bridge.to_string(), q.name.clone(), what, q.depth))
            })
            .collect::<Vec<_>>()
    });
    let content = html! {
        h2 { "Crossed into this database" }
        @match &crossed_in {
            Err(e) => p.error { "Reading the bridges' message ids failed: " (e) },
            Ok(rows) => {
                p.summary { (plural(rows.len(), "bridge")) " moved messages here within its window." }
                @if !rows.is_empty() {
                    table #bridges-in {
                        thead { tr { th { "Bridge" } th.num { "Messages within the window" } th { "First forgotten at (UTC)" } } }
                        tbody {
                            @for (bridge, keys, expiry) in rows {
                                tr data-bridge=(bridge) {
                                    td { code { (bridge) } }
                                    td.num { (keys) }
                                    td.time { (expiry.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_else(|| "-".into())) }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Waiting to cross out" }
        @match &waiting {
            Err(e) => p.error { "Reading the queues failed: " (e) },
            Ok(rows) => {
                p.summary { (plural(rows.len(), "bridge queue")) " in this database." }
                @if !rows.is_empty() {
                    table #bridges-out {
                        thead { tr { th { "Bridge" } th { "Queue" } th { "Holds" } th.num { "Messages" } } }
                        tbody {
                            @for (bridge, queue, what, depth) in rows {
                                tr data-queue=(queue) {
                                    td { code { (bridge) } }
                                    td { a href=(format!("/queues/{}", encode(queue))) { (queue) } }
                                    td { (what) }
                                    td.num { (depth) }
                                }
                            }
                        }
                    }
                }
            }
        }
        p.hint {
            "A bridge claims each message's id here, in the scope " code { "bridge:<name>" } ", as it writes the message, "
            "so a copy written again after the bridge stopped between its two commits is dropped; "
            "the count is of messages moved here within the bridge's window (a day by default). "
            "The queues a bridge takes commands from are ordinary queues, listed under Queues. "
            "A message a bridge cannot carry goes to the dead letters of its side, its reason starting "
            code { "the bridge \"<name>\" cannot carry it" } "."
        }
    };
    super::page(layout(&console, "Bridges", None, content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bridge_queue_names_its_bridge_and_what_it_holds() {
        assert_eq!(
            bridge_queue("Bridge.eu-us.Replies"),
            Some(("eu-us", "replies going back"))
        );
        assert_eq!(
            bridge_queue("Bridge.eu-us.1a2b3c4d"),
            Some(("eu-us", "events to publish on the other side"))
        );
        assert_eq!(bridge_queue("Orders"), None);
        assert_eq!(bridge_queue("Bridge.nodot"), None);
    }
}
