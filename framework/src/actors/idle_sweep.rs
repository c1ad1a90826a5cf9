//! The idle sweep: every instance runs it; it deletes subscriptions whose heartbeat has lapsed
//! and drops the per-instance queues left without subscriptions. Concurrent sweeps are safe:
//! each lapsed row is deleted, and its queue dropped, by exactly one of them. It also deletes
//! the dead letters older than the endpoint's retention period, in batches, until a batch comes
//! back short, the monitoring reports older than `monitoring_retention`, and, on endpoints with
//! sagas, the saga instances completed longer ago than `completed_sagas_kept`, and the bodies
//! stored apart whose message expired or whose dead letter's retention ended.

use std::sync::Arc;

use super::periodic::Periodic;
use crate::pipeline::EndpointState;
use crate::transport::AgedRows;

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
                // Bodies stored apart live in NimbusBodies wherever it is known to exist.
                let bodies = endpoint.config.auto_create_schema
                    || endpoint.config.identity.claim_check.threshold().is_some();
                if let Some(retention) = endpoint.config.dead_letter_retention {
                    let deleted =
                        delete_all_aged(&endpoint, AgedRows::DeadLetters, retention).await?;
                    if deleted > 0 {
                        crate::pipeline::metrics::count_dead_letters_expired(deleted);
                        tracing::info!(
                            deleted,
                            retention = ?retention,
                            "deleted dead letters past their retention period"
                        );
                    }
                    if bodies {
                        let kept = retention.saturating_add(BODIES_GRACE);
                        let deleted =
                            delete_all_aged(&endpoint, AgedRows::DeadLetteredBodies, kept).await?;
                        if deleted > 0 {
                            tracing::info!(
                                deleted,
                                "deleted the bodies stored apart of dead letters past their \
                                 retention period"
                            );
                        }
                    }
                }
                if bodies {
                    let deleted =
                        delete_all_aged(&endpoint, AgedRows::ExpiredBodies, BODIES_GRACE).await?;
                    if deleted > 0 {
                        tracing::info!(
                            deleted,
                            "deleted bodies stored apart whose messages expired"
                        );
                    }
                }
                let stores = endpoint.config.identity.claim_check.stores();
                if !stores.names().is_empty() {
                    let deleted = endpoint.transport.sweep_orphan_objects(stores).await?;
                    if deleted > 0 {
                        ::metrics::counter!("nimbus_bodies_orphans_deleted_total")
                            .increment(deleted);
                        tracing::info!(
                            deleted,
                            stores = ?stores.names(),
                            "deleted bodies from object stores that no message names any more \
                             (handled, or never sent)"
                        );
                    }
                }
                if endpoint.config.monitoring_interval.is_some() {
                    let kept = endpoint.config.monitoring_retention;
                    let deleted =
                        delete_all_aged(&endpoint, AgedRows::MonitoringReports, kept).await?;
                    if deleted > 0 {
                        tracing::debug!(
                            deleted,
                            kept = ?kept,
                            "deleted monitoring reports past their retention period"
                        );
                    }
                }
                // Every endpoint's expired keys, whoever claimed them: wherever the table is
                // known to exist (made by auto-create, or used by this endpoint).
                if endpoint.config.auto_create_schema
                    || endpoint
                        .deduplicates
                        .load(std::sync::atomic::Ordering::Relaxed)
                {
                    let deleted = delete_all_aged(
                        &endpoint,
                        AgedRows::DeduplicationKeys,
                        std::time::Duration::ZERO,
                    )
                    .await?;
                    if deleted > 0 {
                        tracing::debug!(deleted, "deleted deduplication keys whose window ended");
                    }
                }
                // The slots of limits nobody used for a day (most often the keys of a limit
                // per key no longer seen): where the table is known to exist.
                if endpoint.config.auto_create_schema || !endpoint.config.limits.is_empty() {
                    let deleted =
                        delete_all_aged(&endpoint, AgedRows::LimitSlots, LIMIT_SLOTS_KEPT).await?;
                    if deleted > 0 {
                        tracing::debug!(deleted, "deleted the slots of limits unused for a day");
                    }
                }
                if endpoint.config.sagas {
                    let kept = endpoint.config.completed_sagas_kept;
                    let deleted =
                        delete_all_aged(&endpoint, AgedRows::CompletedSagas, kept).await?;
                    if deleted > 0 {
                        tracing::debug!(
                            deleted,
                            kept = ?kept,
                            "deleted saga instances completed long ago"
                        );
                    }
                }
                Ok(())
            })
        }),
    )
}

/// How long after its message expired (or its dead letter's retention ended) a body stored
/// apart is deleted: past any receive that took the message just before.
const BODIES_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// How long the slots of a limit stay unused before the sweep deletes them (a limit adds them
/// again when it next needs them).
const LIMIT_SLOTS_KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Deletes every row of `rows` older than `older_than`, a batch (the endpoint's purge batch
/// size) at a time, until a batch comes back short; returns how many.
async fn delete_all_aged(
    endpoint: &EndpointState,
    rows: AgedRows,
    older_than: std::time::Duration,
) -> crate::error::Result<u64> {
    let batch = endpoint.config.purge_batch_size;
    let mut deleted = 0u64;
    loop {
        let n = endpoint
            .transport
            .delete_aged(rows, older_than, batch)
            .await?;
        deleted += n;
        if n < batch.unsigned_abs() {
            return Ok(deleted);
        }
    }
}
