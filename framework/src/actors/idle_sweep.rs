//! The idle sweep: every instance runs it; it deletes subscriptions whose heartbeat has lapsed
//! and drops the per-instance queues left without subscriptions. Concurrent sweeps are safe:
//! each lapsed row is deleted, and its queue dropped, by exactly one of them.

use std::sync::Arc;

use super::periodic::Periodic;
use crate::pipeline::EndpointState;

/// The idle-sweep actor of an endpoint.
pub(crate) fn idle_sweep(endpoint: Arc<EndpointState>) -> Periodic {
    let interval = crate::subscriptions::sweep_interval(endpoint.config.auto_delete_on_idle);
    Periodic::new(
        "idle sweep",
        interval,
        true,
        Arc::new(move || {
            let endpoint = endpoint.clone();
            Box::pin(async move {
                let report = endpoint
                    .transport
                    .sweep_idle(endpoint.config.idle_seconds())
                    .await?;
                if !report.subscriptions.is_empty() {
                    tracing::info!(
                        subscriptions = report.subscriptions.len(),
                        queues_dropped = ?report.queues_dropped,
                        "swept idle subscriptions"
                    );
                }
                Ok(())
            })
        }),
    )
}
