//! Heartbeats: while its instance runs, refreshes `LastSeenAt` (database time) of every
//! subscription the instance holds, so publishers keep writing to it and sweeps keep it. A
//! subscription found swept (the instance was thought gone) is written again, and its queue
//! created again when auto-create is on.

use std::sync::Arc;

use super::periodic::Periodic;
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
            Box::pin(async move {
                let missing = endpoint.transport.heartbeat(&subscriptions).await?;
                for i in missing {
                    let (topic, queue) = &subscriptions[i];
                    tracing::warn!(%topic, %queue, "subscription was swept while this instance ran; writing it again");
                    if endpoint.config.auto_create_schema {
                        if let Err(e) = endpoint
                            .transport
                            .create_schema(std::slice::from_ref(queue))
                            .await
                        {
                            tracing::warn!(%queue, error = %e, "could not create the queue again");
                        }
                    }
                    if let Err(e) = endpoint.transport.subscribe(topic, queue).await {
                        tracing::warn!(%topic, %queue, error = %e, "could not subscribe again");
                    }
                }
                Ok(())
            })
        }),
    )
}
