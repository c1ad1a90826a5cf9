//! Closes the pooled connections nobody took for `connection_idle_timeout`, so that an endpoint
//! that went quiet gives back what a busy spell opened instead of holding a full pool.

use std::sync::Arc;
use std::time::Duration;

use super::periodic::Periodic;
use crate::pipeline::EndpointState;

/// The actor that closes an endpoint's unused connections, every half timeout (at most every
/// 30 s).
pub(crate) fn idle_connections(endpoint: Arc<EndpointState>) -> Periodic {
    let timeout = endpoint.config.connection_idle_timeout;
    let every = (timeout / 2).clamp(Duration::from_millis(500), Duration::from_secs(30));
    Periodic::new(
        "closing idle connections",
        every,
        false,
        Arc::new(move || {
            let endpoint = endpoint.clone();
            Box::pin(async move {
                let closed = endpoint.transport.close_unused_connections(timeout);
                if closed > 0 {
                    metrics::counter!("nimbus_connections_closed_idle_total")
                        .increment(closed as u64);
                    tracing::debug!(closed, ?timeout, "closed pooled connections nobody took");
                }
                Ok(())
            })
        }),
    )
}
