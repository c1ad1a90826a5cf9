//! The peek actor: estimates how many messages wait in a queue.

use std::sync::Arc;

use actix::prelude::*;

use crate::error::Result;
use crate::names::QueueName;
use crate::pipeline::EndpointShared;

/// Estimates the depth of one queue on request.
pub(crate) struct Peeker {
    shared: Arc<EndpointShared>,
    queue: QueueName,
}

impl Peeker {
    pub fn new(shared: Arc<EndpointShared>, queue: QueueName) -> Self {
        Peeker { shared, queue }
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
        let shared = self.shared.clone();
        let queue = self.queue.clone();
        Box::pin(async move { shared.transport.peek(&queue).await })
    }
}
