//! Heartbeats: while its instance runs, refreshes `LastSeenAt` (database time) of every
//! subscription the instance holds, so publishers keep writing to it and sweeps keep it. A
//! subscription found swept (the instance was thought gone) is written again, and its queue
//! created again when auto-create is on.

use std::sync::Arc;

use super::periodic::Periodic;
use crate::error::NimbusError;
use crate::names::QueueName;
use crate::pipeline::EndpointState;

/// The heartbeat actor of one instance's subscriptions.
pub(crate) fn heartbeat(
    endpoint: Arc<EndpointState>,
    subscriptions: Vec<(String, QueueName)>,
) -> Periodic {
    let interval = crate::subscriptions::heartbeat_interval(endpoint.config.auto_delete_on_idle);
    let subscriptions = Arc::new(subscriptions);
    Periodic::new(
        "subscription heartbeat",
        interval,
        false,
        Arc::new(move || {
            let (endpoint, subscriptions) = (endpoint.clone(), subscriptions.clone());
            Box::pin(async move { beat(&endpoint, &subscriptions).await })
        }),
    )
}

/// One heartbeat: refreshes every subscription, writes again those an idle sweep removed, and
/// makes again the queue of a subscription whose table is gone (a sweep of this instance's old
/// rows that raced with its restart drops the table after the restart made it).
pub(crate) async fn beat(
    endpoint: &EndpointState,
    subscriptions: &[(String, QueueName)],
) -> Result<(), NimbusError> {
    let transport = &endpoint.transport;
    let missing = transport.heartbeat(subscriptions).await?;
    for i in missing {
        let (topic, queue) = &subscriptions[i];
        tracing::warn!(%topic, %queue, "subscription was swept while this instance ran; writing it again");
        transport.subscribe(topic, queue).await?;
    }
    let mut queues: Vec<&QueueName> = subscriptions.iter().map(|(_, q)| q).collect();
    queues.sort();
    queues.dedup();
    for queue in queues {
        if transport.queue_exists(queue).await? {
            continue;
        }
        if endpoint.config.auto_create_schema {
            tracing::warn!(%queue, "the queue of a live subscription was gone (dropped by an idle sweep that raced with a restart?); making it again");
            transport.create_schema(std::slice::from_ref(queue)).await?;
        } else {
            tracing::error!(%queue, "the queue of a live subscription does not exist and auto-create is off: publishers cannot deliver to it; create it (nimbus::admin::creation_script prints the statement)");
        }
    }
    Ok(())
}
