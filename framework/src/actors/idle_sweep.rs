//! The idle sweep: every instance runs it; it deletes subscriptions whose heartbeat has lapsed
//! and drops the per-instance queues left without subscriptions. Concurrent sweeps are safe:
//! each lapsed row is deleted, and its queue dropped, by exactly one of them. It also deletes
//! the dead letters older than the endpoint's retention period, in batches, until a batch comes
//! back short, and, on endpoints with sagas, the saga instances completed longer ago than
//! `completed_sagas_kept`.

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
                if let Some(retention) = endpoint.config.dead_letter_retention {
                    expire_dead_letters(&endpoint, retention).await?;
                }
                if endpoint.config.sagas {
                    cleanup_sagas(&endpoint).await?;
                }
                Ok(())
            })
        }),
    )
}

/// Deletes the saga instances completed longer than `completed_sagas_kept` ago, a batch at a
/// time.
async fn cleanup_sagas(endpoint: &EndpointState) -> crate::error::Result<()> {
    let (kept, batch) = (
        endpoint.config.completed_sagas_kept,
        endpoint.config.purge_batch_size,
    );
    let mut deleted = 0u64;
    loop {
        let n = endpoint.transport.cleanup_sagas(kept, batch).await?;
        deleted += n;
        if n < batch.unsigned_abs() {
            break;
        }
    }
    if deleted > 0 {
        tracing::debug!(deleted, kept = ?kept, "deleted saga instances completed long ago");
    }
    Ok(())
}

/// Deletes the dead letters that failed longer than `retention` ago, a batch at a time.
async fn expire_dead_letters(
    endpoint: &EndpointState,
    retention: std::time::Duration,
) -> crate::error::Result<()> {
    let batch = endpoint.config.purge_batch_size;
    let mut deleted = 0u64;
    loop {
        let n = endpoint
            .transport
            .expire_dead_letters(retention, batch)
            .await?;
        deleted += n;
        if n < batch.unsigned_abs() {
            break;
        }
    }
    if deleted > 0 {
        crate::pipeline::metrics::count_dead_letters_expired(deleted);
        tracing::info!(
            deleted,
            retention = ?retention,
            "deleted dead letters past their retention period"
        );
    }
    Ok(())
}
