//! Pauses: reads which queues an operator paused (`NimbusPausedQueues`, written by
//! `nimbus pause` and `nimbus::admin`) once per peek delay (the buses of one process share one
//! read every 250 ms), so every instance of every process stops taking a paused queue's messages
//! within a peek delay and a quarter second, and wakes a queue's receivers the moment it is read
//! resumed. Sends to a paused queue go in as usual.

use std::sync::Arc;

use super::periodic::Periodic;
use crate::error::NimbusError;
use crate::names::QueueName;
use crate::pipeline::EndpointState;

/// The actor that keeps the endpoint's view of its paused queues current.
pub(crate) fn pause_watch(endpoint: Arc<EndpointState>, queues: Vec<QueueName>) -> Periodic {
    let interval = endpoint.config.peek_delay;
    let queues = Arc::new(queues);
    Periodic::new(
        "pause check",
        interval,
        false,
        Arc::new(move || {
            let (endpoint, queues) = (endpoint.clone(), queues.clone());
            Box::pin(async move { read_pauses(&endpoint, &queues).await.map(|_| ()) })
        }),
    )
}

/// Reads the paused queues once and applies what changed for `queues` (the endpoint's
/// received queues): a pause is logged and stops new receives; a resume is logged and wakes the
/// queue's receivers. Returns `false` when the database has no `NimbusPausedQueues` (a schema
/// made before pausing existed, with auto-create off): nothing can be paused there.
pub(crate) async fn read_pauses(
    endpoint: &EndpointState,
    queues: &[QueueName],
) -> Result<bool, NimbusError> {
    let transport = &endpoint.transport;
    let Some(rows) = transport.paused_queues().await? else {
        return Ok(false);
    };
    for queue in queues {
        let row = rows
            .iter()
            .find(|row| transport.same_queue_name(&row.queue, queue.as_str()));
        if !endpoint.counters.set_paused(queue.as_str(), row.is_some()) {
            continue;
        }
        match row {
            Some(row) => tracing::info!(
                %queue,
                paused_by = %row.paused_by,
                paused_at = ?row.paused_at,
                "queue paused by an operator: no new receives until it is resumed (sends still go in)"
            ),
            None => {
                tracing::info!(%queue, "queue resumed: receiving again");
                crate::transport::wakeups::wake(&transport.wake_key(queue));
            }
        }
    }
    Ok(true)
}
