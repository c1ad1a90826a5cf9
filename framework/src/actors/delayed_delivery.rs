//! Delayed delivery: every peek delay, moves the delayed messages that are due (by database time)
//! from `NimbusDelayedMessages` into their queues, a batch per transaction. Every instance of
//! every endpoint may run it: movers skip rows another mover holds. (The shared-table layout
//! needs no moving: its backend reports nothing to do.)

use std::sync::Arc;

use super::periodic::Periodic;
use crate::pipeline::metrics::Counters;
use crate::pipeline::EndpointState;

/// How many due messages one transaction moves.
pub(crate) const DELIVERY_BATCH: i64 = 100;

/// The delayed-delivery actor of an endpoint.
pub(crate) fn delayed_delivery(endpoint: Arc<EndpointState>) -> Periodic {
    let interval = endpoint.config.peek_delay;
    Periodic::new(
        "delayed delivery",
        interval,
        true,
        Arc::new(move || {
            let endpoint = endpoint.clone();
            Box::pin(async move {
                let mut moved = 0u64;
                loop {
                    match endpoint.transport.deliver_due(DELIVERY_BATCH).await {
                        Ok(n) => {
                            moved += n;
                            if n < DELIVERY_BATCH as u64 {
                                break;
                            }
                        }
                        Err(e) => {
                            Counters::add(&endpoint.counters.delayed_delivered, moved);
                            return Err(e);
                        }
                    }
                }
                if moved > 0 {
                    metrics::counter!("nimbus_delayed_messages_delivered_total").increment(moved);
                    Counters::add(&endpoint.counters.delayed_delivered, moved);
                    tracing::debug!(moved, "delivered due delayed messages");
                }
                Ok(())
            })
        }),
    )
}
