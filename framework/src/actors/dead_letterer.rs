//! The dead-letter actor: moves messages whose retries are exhausted (or that cannot be handled
//! at all) to `NimbusDeadLetters`, inside the transaction that received them, so the move is
//! atomic: the message is in its queue or in the dead letters, never both, never neither.
//!
//! It only writes: the pipeline counts and logs the move once it has committed (for a message of
//! a batch, once the batch has).

use actix::prelude::*;

use crate::error::Result;
use crate::pipeline::MoveToDeadLetters;

/// Moves messages to the dead letters for one endpoint.
pub(crate) struct DeadLetterer;

impl Actor for DeadLetterer {
    type Context = Context<Self>;
}

impl Handler<MoveToDeadLetters> for DeadLetterer {
    type Result = ResponseFuture<Result<()>>;

    fn handle(&mut self, msg: MoveToDeadLetters, _ctx: &mut Self::Context) -> Self::Result {
        Box::pin(async move {
            let MoveToDeadLetters { tx, letter } = msg;
            tx.dead_letter(letter).await
        })
    }
}
