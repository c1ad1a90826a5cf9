//! The Bodies page: what the claim check stores apart in `NimbusBodies`, per queue the bodies'
//! messages were written to, as `nimbus bodies` shows it.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::pages::{layout, plural};
use super::state::Console;

/// The page.
pub async fn page(State(console): State<Arc<Console>>) -> Response {
    let content = match console.db.bodies().await {
        Err(e) => html! { p.error { "Reading the bodies stored apart failed: " (e) } },
        Ok(bodies) => {
            let total: i64 = bodies.iter().map(|b| b.bodies).sum();
            html! {
                p.summary {
                    (plural(usize::try_from(total).unwrap_or_default(), "body")) " stored apart."
                }
                @if !bodies.is_empty() {
                    table #bodies {
                        thead { tr {
                            th { "Queue" }
                            th.num { "Bodies" }
                            th.num { "Bytes" }
                            th.num { "Of dead letters" }
                            th.num { "In an object store" }
                            th { "Oldest stored at (UTC)" }
                        } }
                        tbody {
                            @for b in &bodies {
                                tr data-queue=(b.queue) {
                                    td { code { (b.queue) } }
                                    td.num { (b.bodies) }
                                    td.num { (b.bytes) }
                                    td.num { (b.dead_lettered) }
                                    td.num { (b.in_object_store) }
                                    td.time {
                                        (b.oldest.map_or_else(
                                            || "-".into(),
                                            |t| t.format("%Y-%m-%d %H:%M:%S").to_string(),
                                        ))
                                    }
                                }
                            }
                        }
                    }
                }
                p.hint {
                    "Bodies larger than the claim check's threshold (1 MiB by default) are stored "
                    "apart from their queue rows and deleted with their message's last row. "
                    "Dead letters keep theirs until they are replayed or their retention ends."
                }
            }
        }
    };
    super::page(layout(&console, "Bodies stored apart", None, content))
}
