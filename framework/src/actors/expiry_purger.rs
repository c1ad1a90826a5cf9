//! The expiry purger: at start and then every purge interval, deletes the messages of one queue
//! whose expiry has passed, in batches (through `Index_Expires`, or `IX_NimbusMessages_Dequeue`
//! in the shared table), until a batch comes back short. Receivers never handle an expired
//! message either way; the purger keeps them from piling up in a queue nobody drains quickly.

use std::sync::Arc;

use super::periodic::Periodic;
use crate::names::QueueName;
use crate::pipeline::metrics::Counters;
use crate::pipeline::EndpointState;

/// The expiry purger of one queue.
pub(crate) fn expiry_purger(endpoint: Arc<EndpointState>, queue: QueueName) -> Periodic {
    let interval = endpoint.config.purge_interval;
    Periodic::new(
        "expiry purge",
        interval,
        true,
        Arc::new(move || {
            let (endpoint, queue) = (endpoint.clone(), queue.clone());
            Box::pin(async move {
                let batch = endpoint.config.purge_batch_size;
                let mut purged = 0u64;
                loop {
                    match endpoint.transport.purge_expired(&queue, batch).await {
                        Ok(n) => {
                            purged += n;
                            Counters::add(&endpoint.counters.expired_purged, n);
                            if n > 0 {
                                crate::pipeline::metrics::count_expired(
                                    queue.as_str(),
                                    "",
                                    "purged",
                                    n,
                                );
                            }
                            if n < batch as u64 {
                                break;
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                if purged > 0 {
                    tracing::info!(queue = %queue, purged, "purged expired messages");
                }
                Ok(())
            })
        }),
    )
}
