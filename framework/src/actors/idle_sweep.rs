//! The idle-sweep actor: every instance runs one; it deletes subscriptions whose heartbeat has
//! lapsed and drops the per-instance queues left without subscriptions. Concurrent sweeps are
//! safe: each lapsed row is deleted, and its queue dropped, by exactly one of them.

use std::sync::Arc;

use actix::prelude::*;

use super::Shutdown;
use crate::pipeline::EndpointShared;

/// Sweeps lapsed subscriptions of the whole schema.
pub(crate) struct IdleSweep {
    shared: Arc<EndpointShared>,
    busy: bool,
}

impl IdleSweep {
    pub fn new(shared: Arc<EndpointShared>) -> Self {
        IdleSweep {
            shared,
            busy: false,
        }
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let shared = self.shared.clone();
        ctx.spawn(
            async move {
                match shared.backend.sweep_idle(shared.config.idle_seconds()).await {
                    Ok(report) if !report.subscriptions.is_empty() => {
                        tracing::info!(
                            subscriptions = report.subscriptions.len(),
                            queues_dropped = ?report.queues_dropped,
                            "swept idle subscriptions"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "idle sweep failed; retrying at the next interval"),
                }
            }
            .into_actor(self)
            .map(|(), act, _ctx| act.busy = false),
        );
    }
}

impl Actor for IdleSweep {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.sweep(ctx);
        let interval = crate::subscriptions::sweep_interval(self.shared.config.auto_delete_on_idle);
        ctx.run_interval(interval, |act, ctx| act.sweep(ctx));
    }
}

impl Handler<Shutdown> for IdleSweep {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
