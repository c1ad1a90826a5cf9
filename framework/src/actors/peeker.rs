//! The peek actor: estimates how many messages wait in a queue.

use std::sync::Arc;

use actix::prelude::*;

use crate::error::Result;
use crate::names::QueueName;
use crate::pipeline::EndpointState;

/// Estimates the depth of one queue on request.
pub(crate) struct Peeker {
    endpoint: Arc<EndpointState>,
    queue: QueueName,
}

impl Peeker {
    pub fn new(endpoint: Arc<EndpointState>, queue: QueueName) -> Self {
        Peeker { endpoint, queue }
    }
}

impl Actor for Peeker {
    type Context = Context<Self>;
}

impl Supervised for Peeker {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        tracing::warn!(queue = %self.queue, "peek actor restarted");
    }
}

/// Asks for a depth estimate.
#[derive(Message)]
#[rtype(result = "Result<i64>")]
pub(crate) struct Peek;

impl Handler<Peek> for Peeker {
    type Result = ResponseFuture<Result<i64>>;

    fn handle(&mut self, _msg: Peek, _ctx: &mut Self::Context) -> Self::Result {
        let endpoint = self.endpoint.clone();
        let queue = self.queue.clone();
        Box::pin(async move { endpoint.transport.peek(&queue).await })
    }
}
