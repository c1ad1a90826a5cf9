//! The dead-letter actor: moves messages whose retries are exhausted (or that cannot be handled
//! at all) to `NimbusDeadLetters`, inside the transaction that received them, so the move is
//! atomic: the message is in its queue or in the dead letters, never both, never neither.

use std::sync::Arc;

use actix::prelude::*;

use crate::error::Result;
use crate::pipeline::metrics::Counters;
use crate::pipeline::MoveToDeadLetters;

/// Moves messages to the dead letters for one endpoint and counts them.
pub(crate) struct DeadLetterer {
    counters: Arc<Counters>,
}

impl DeadLetterer {
    pub fn new(counters: Arc<Counters>) -> Self {
        DeadLetterer { counters }
    }
}

impl Actor for DeadLetterer {
    type Context = Context<Self>;
}

impl Handler<MoveToDeadLetters> for DeadLetterer {
    type Result = ResponseFuture<Result<()>>;

    fn handle(&mut self, msg: MoveToDeadLetters, _ctx: &mut Self::Context) -> Self::Result {
        let counters = self.counters.clone();
        Box::pin(async move {
            let MoveToDeadLetters {
                tx,
                letter,
                queue,
                reason,
            } = msg;
            let (id, attempts) = (letter.message_id, letter.delivery_attempts);
            tx.dead_letter(letter).await?;
            Counters::add(&counters.dead_lettered, 1);
            tracing::error!(queue = %queue, %id, attempts, %reason, "moved a message to NimbusDeadLetters");
            Ok(())
        })
    }
}
