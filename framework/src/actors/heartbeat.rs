//! The heartbeat actor: while its instance runs, refreshes `LastSeenAt` (database time) of every
//! subscription the instance holds, so publishers keep writing to it and sweeps keep it. A
//! subscription found swept (the instance was thought gone) is written again, and its queue
//! created again when auto-create is on.

use std::sync::Arc;

use actix::prelude::*;

use super::Shutdown;
use crate::names::QueueName;
use crate::pipeline::EndpointShared;

/// Heartbeats one instance's subscriptions.
pub(crate) struct Heartbeat {
    shared: Arc<EndpointShared>,
    subscriptions: Arc<Vec<(String, QueueName)>>,
    busy: bool,
}

impl Heartbeat {
    pub fn new(shared: Arc<EndpointShared>, subscriptions: Vec<(String, QueueName)>) -> Self {
        Heartbeat {
            shared,
            subscriptions: Arc::new(subscriptions),
            busy: false,
        }
    }

    fn beat(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let (shared, subscriptions) = (self.shared.clone(), self.subscriptions.clone());
        ctx.spawn(
            async move {
                let missing = match shared.backend.heartbeat(&subscriptions).await {
                    Ok(missing) => missing,
                    Err(e) => {
                        tracing::warn!(error = %e, "heartbeat failed; retrying at the next beat");
                        return;
                    }
                };
                for i in missing {
                    let (topic, queue) = &subscriptions[i];
                    tracing::warn!(%topic, %queue, "subscription was swept while this instance ran; writing it again");
                    if shared.config.auto_create_schema {
                        if let Err(e) = shared.backend.create_schema(std::slice::from_ref(queue)).await {
                            tracing::warn!(%queue, error = %e, "could not create the queue again");
                        }
                    }
                    if let Err(e) = shared.backend.subscribe(topic, queue).await {
                        tracing::warn!(%topic, %queue, error = %e, "could not subscribe again");
                    }
                }
            }
            .into_actor(self)
            .map(|(), act, _ctx| act.busy = false),
        );
    }
}

impl Actor for Heartbeat {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let interval =
            crate::subscriptions::heartbeat_interval(self.shared.config.auto_delete_on_idle);
        ctx.run_interval(interval, |act, ctx| act.beat(ctx));
    }
}

impl Handler<Shutdown> for Heartbeat {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
