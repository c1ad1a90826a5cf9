//! The expiry purger: at start and then every purge interval, deletes the messages of one queue
//! whose `Expires` has passed, in batches (through `Index_Expires`), until a batch comes back
//! short. Receivers never handle an expired message either way; the purger keeps them from piling
//! up in a queue nobody drains quickly.

use std::sync::Arc;

use actix::prelude::*;

use super::Shutdown;
use crate::metrics::Counters;
use crate::names::QueueName;
use crate::pipeline::EndpointShared;

/// Purges expired messages from one queue.
pub(crate) struct ExpiryPurger {
    shared: Arc<EndpointShared>,
    queue: QueueName,
    busy: bool,
}

impl ExpiryPurger {
    pub fn new(shared: Arc<EndpointShared>, queue: QueueName) -> Self {
        ExpiryPurger {
            shared,
            queue,
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let (shared, queue) = (self.shared.clone(), self.queue.clone());
        let batch = shared.config.purge_batch_size;
        ctx.spawn(
            async move {
                let mut purged = 0u64;
                loop {
                    match shared.backend.purge_expired(&queue, batch).await {
                        Ok(n) => {
                            purged += n;
                            Counters::add(&shared.counters.expired_purged, n);
                            if n < batch as u64 {
                                break;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(queue = %queue, error = %e, "purging expired messages failed; retrying at the next interval");
                            break;
                        }
                    }
                }
                if purged > 0 {
                    tracing::info!(queue = %queue, purged, "purged expired messages");
                }
            }
            .into_actor(self)
            .map(|(), act, _ctx| act.busy = false),
        );
    }
}

impl Actor for ExpiryPurger {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.tick(ctx);
        ctx.run_interval(self.shared.config.purge_interval, |act, ctx| act.tick(ctx));
    }
}

impl Handler<Shutdown> for ExpiryPurger {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
