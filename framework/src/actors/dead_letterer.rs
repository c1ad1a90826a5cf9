//! The dead-letter actor: moves messages whose retries are exhausted (or that cannot be handled
//! at all) to `NimbusDeadLetters`, inside the transaction that received them, so the move is
//! atomic: the message is in its queue or in the dead letters, never both, never neither.

use std::sync::Arc;

use actix::prelude::*;

use crate::backend::ReceiveTransaction;
use crate::dead_letter::DeadLetter;
use crate::error::Result;
use crate::metrics::Counters;
use crate::names::QueueName;

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

/// Write `letter` in `tx` and commit.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub(crate) struct MoveToDeadLetters {
    pub tx: Box<dyn ReceiveTransaction>,
    pub letter: DeadLetter,
    pub queue: QueueName,
    pub reason: String,
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
