//! The delayed-delivery actor: every peek delay, moves the delayed messages that are due (by
//! database time) from `NimbusDelayedMessages` into their queues, a batch per transaction.
//! Every instance of every endpoint may run one: movers skip rows another mover holds.

use std::sync::Arc;

use actix::prelude::*;

use super::Shutdown;
use crate::pipeline::EndpointShared;

/// How many due messages one transaction moves.
pub(crate) const DELIVERY_BATCH: i64 = 100;

/// Moves due delayed messages for the whole schema.
pub(crate) struct DelayedDelivery {
    shared: Arc<EndpointShared>,
    busy: bool,
}

impl DelayedDelivery {
    pub fn new(shared: Arc<EndpointShared>) -> Self {
        DelayedDelivery {
            shared,
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let shared = self.shared.clone();
        ctx.spawn(
            async move {
                let mut moved = 0u64;
                loop {
                    match shared.backend.deliver_due(DELIVERY_BATCH).await {
                        Ok(n) => {
                            moved += n;
                            if n < DELIVERY_BATCH as u64 {
                                break;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "delivering delayed messages failed; retrying at the next tick");
                            break;
                        }
                    }
                }
                moved
            }
            .into_actor(self)
            .map(|moved, act, _ctx| {
                act.busy = false;
                if moved > 0 {
                    crate::metrics::Counters::add(&act.shared.counters.delayed_delivered, moved);
                    tracing::debug!(moved, "delivered due delayed messages");
                }
            }),
        );
    }
}

impl Actor for DelayedDelivery {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.tick(ctx);
        ctx.run_interval(self.shared.config.peek_delay, |act, ctx| act.tick(ctx));
    }
}

impl Handler<Shutdown> for DelayedDelivery {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
