//! The receiver actor: receives and handles one message per request.

use std::sync::Arc;

use actix::prelude::*;

use crate::names::QueueName;
use crate::pipeline::{
    receive_and_handle, receive_and_handle_batch, EndpointState, Outcome, Taken,
};

/// Receives one message at a time from one queue. A handler panic is caught in the pipeline; the
/// actor then stops so that its supervisor restarts it with fresh state.
pub(crate) struct Receiver {
    endpoint: Arc<EndpointState>,
    queue: QueueName,
    index: usize,
}

impl Receiver {
    pub fn new(endpoint: Arc<EndpointState>, queue: QueueName, index: usize) -> Self {
        Receiver {
            endpoint,
            queue,
            index,
        }
    }
}

impl Actor for Receiver {
    type Context = Context<Self>;
}

impl Supervised for Receiver {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        tracing::warn!(queue = %self.queue, receiver = self.index, "receiver restarted after a handler panic");
    }
}

/// Receive and handle one message (or one batch); `taken` is told as soon as the receive has
/// taken its message(s), before the handlers run.
#[derive(Message)]
#[rtype(result = "Outcome")]
pub(crate) struct ReceiveOne {
    pub taken: Taken,
}

impl Handler<ReceiveOne> for Receiver {
    type Result = ResponseActFuture<Self, Outcome>;

    fn handle(&mut self, msg: ReceiveOne, _ctx: &mut Self::Context) -> Self::Result {
        let endpoint = self.endpoint.clone();
        let queue = self.queue.clone();
        Box::pin(
            async move {
                match endpoint.config.receive_batch {
                    0 | 1 => receive_and_handle(&endpoint, &queue, msg.taken).await,
                    limit => receive_and_handle_batch(&endpoint, &queue, limit, msg.taken).await,
                }
            }
            .into_actor(self)
            .map(|outcome, _act, ctx| {
                if matches!(outcome, Outcome::Failed { panicked: true, .. }) {
                    ctx.stop();
                }
                outcome
            }),
        )
    }
}
