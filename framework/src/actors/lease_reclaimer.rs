//! The lease reclaimer: while an endpoint handles some message types under a lease, it looks
//! for leases of one queue that ran out (their holder, this instance or another, crashed or
//! stalled) twice per shortest lease, and takes each back: its message is retried or
//! dead-lettered as a failed attempt (see `crate::pipeline::reclaim_expired_leases`).

use std::sync::Arc;
use std::time::Duration;

use super::periodic::Periodic;
use crate::names::QueueName;
use crate::pipeline::EndpointState;

/// The lease reclaimer of one queue, or `None` when the endpoint has no leases.
pub(crate) fn lease_reclaimer(endpoint: Arc<EndpointState>, queue: QueueName) -> Option<Periodic> {
    let interval = endpoint.config.leases.reclaim_interval()?;
    Some(Periodic::new(
        "taking back expired leases",
        interval.max(Duration::from_millis(100)),
        true,
        Arc::new(move || {
            let (endpoint, queue) = (endpoint.clone(), queue.clone());
            Box::pin(async move {
                let reclaimed = crate::pipeline::reclaim_expired_leases(&endpoint, &queue).await?;
                if reclaimed > 0 {
                    tracing::info!(queue = %queue, reclaimed, "took back expired leases");
                }
                Ok(())
            })
        }),
    ))
}
