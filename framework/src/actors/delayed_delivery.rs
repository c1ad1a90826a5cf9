//! Delayed delivery: every peek delay, moves the delayed messages that are due (by database time)
//! from `NimbusDelayedMessages` into their queues, a batch per transaction; and, in between,
//! when a message this process's limits held back comes due. Every instance of
//! every endpoint may run it: movers skip rows another mover holds. (The shared-table layout
//! needs no moving: its backend reports nothing to do.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::periodic::Periodic;
use crate::error::NimbusError;
use crate::pipeline::metrics::Counters;
use crate::pipeline::EndpointState;

/// How many due messages one transaction moves.
pub(crate) const DELIVERY_BATCH: i64 = 100;

/// How long after a held message's due time (by this process's clock) its pass runs, so that it
/// is due by the database's clock too.
const HOLD_SLACK: Duration = Duration::from_millis(10);

/// The least time between two passes for held messages: many holds coming due close together
/// share a pass.
const MIN_HOLD_PASS_GAP: Duration = Duration::from_millis(25);

/// Moves every due delayed message to its queue, a batch per transaction.
async fn deliver_all_due(endpoint: &EndpointState) -> Result<(), NimbusError> {
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
}

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
                deliver_all_due(&endpoint).await?;
                // Messages a limit held back come due within the interval: each is moved back
                // to its queue when due, not at the next regular pass.
                let mut last = Instant::now();
                while let Some(at) = endpoint.holds_due.next_by(Instant::now() + interval) {
                    let at = (at + HOLD_SLACK).max(last + MIN_HOLD_PASS_GAP);
                    tokio::time::sleep_until(at.into()).await;
                    last = Instant::now();
                    deliver_all_due(&endpoint).await?;
                }
                Ok(())
            })
        }),
    )
}
