//! The receiver actor: receives and handles messages, a run of them per request.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;

use crate::names::QueueName;
use crate::pipeline::batch_size::BatchSizer;
use crate::pipeline::{
    receive_and_handle, receive_and_handle_batch, EndpointState, Outcome, Taken,
};
use crate::transport::{NextReceive, StopSignal};

/// Receives one message (or batch) at a time from one queue, on a handler thread (the bus's with
/// one handler thread). A handler panic is caught in the pipeline; the
/// actor then stops so that its supervisor restarts it with fresh state.
pub(crate) struct Receiver {
    endpoint: Arc<EndpointState>,
    queue: QueueName,
    index: usize,
    /// Set when the endpoint stops or the queue is paused: a receive that waited for its
    /// connection meanwhile takes nothing.
    stop: StopSignal,
    /// How many messages the next receive takes, learned from the queue's last ones.
    sizer: BatchSizer,
}

impl Receiver {
    pub fn new(
        endpoint: Arc<EndpointState>,
        queue: QueueName,
        index: usize,
        sizer: BatchSizer,
    ) -> Self {
        let (counters, name) = (endpoint.counters.clone(), queue.as_str().to_string());
        let stop = endpoint
            .stop_signal
            .or_when(move || counters.is_paused(&name));
        Receiver {
            endpoint,
            queue,
            index,
            stop,
            sizer,
        }
    }
}

impl Actor for Receiver {
    type Context = Context<Self>;

    /// Opens this thread's connection before the first receive (which waits for it): a login
    /// can take a second on a loaded server, and a receive that waited that long could start
    /// its statement after its queue was paused. A failure here is the first receive's to report.
    fn started(&mut self, ctx: &mut Self::Context) {
        let transport = self.endpoint.transport.clone();
        ctx.wait(
            async move {
                if let Err(e) = transport.warm_up().await {
                    tracing::debug!(error = %e, "a receiver could not open its connection yet");
                }
            }
            .into_actor(self),
        );
    }
}

impl Supervised for Receiver {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        tracing::debug!(queue = %self.queue, receiver = self.index, "receiver restarted after a handler panic");
    }
}

/// Receive and handle up to `credit` messages (or batches) one after the other, as long as each
/// is handled and the queue is neither empty nor paused nor the endpoint stopping: a run, so
/// that a receiver on a handler thread hears from its supervisor (on the bus's thread) once per
/// run instead of once per message. `taken` is told as soon as the first receive has taken its
/// message(s), before the handlers run.
#[derive(Message)]
#[rtype(result = "Run")]
pub(crate) struct ReceiveRun {
    pub taken: Taken,
    pub credit: usize,
}

/// How a run ended: the outcome of its last receive, and how many receives it made.
pub(crate) struct Run {
    pub last: Outcome,
    pub receives: usize,
}

impl Handler<ReceiveRun> for Receiver {
    type Result = ResponseActFuture<Self, Run>;

    fn handle(&mut self, msg: ReceiveRun, _ctx: &mut Self::Context) -> Self::Result {
        let endpoint = self.endpoint.clone();
        let queue = self.queue.clone();
        let stop = self.stop.clone();
        let sizer = self.sizer.clone();
        Box::pin(
            async move {
                let mut taken = Some(msg.taken);
                let mut receives = 0;
                // What the last commit received with it, for the next turn.
                let mut carried = NextReceive::NotTried;
                // Whether the run's last receive took a message.
                let mut took_before = false;
                loop {
                    if endpoint.own_statements.seen(queue.as_str()) {
                        sizer.keep_single();
                    }
                    let started = Instant::now();
                    let carrying = !matches!(carried, NextReceive::NotTried);
                    let last = if carrying || !sizer.batched() {
                        // Taking the next message with the commit only while receives take
                        // one at a time: a batch takes its messages with its own statement.
                        let take_next = receives + 1 < msg.credit && !sizer.batched();
                        let carry = std::mem::replace(&mut carried, NextReceive::NotTried);
                        let (last, next) = receive_and_handle(
                            &endpoint,
                            &queue,
                            &stop,
                            taken.take(),
                            carry,
                            take_next,
                        )
                        .await;
                        carried = next;
                        let took = !matches!(
                            last,
                            Outcome::Empty | Outcome::Infrastructure(_) | Outcome::Conflict(_)
                        );
                        // More waited: the commit took the next message with it (PostgreSQL),
                        // or this one came right after the run's last one.
                        let backlog =
                            matches!(carried, NextReceive::Taken(..)) || (took && took_before);
                        took_before = took;
                        let healthy =
                            matches!(last, Outcome::Handled | Outcome::Expired | Outcome::Held);
                        if !healthy && !matches!(last, Outcome::Empty) {
                            sizer.learn(1, started.elapsed(), false, false);
                        } else if backlog {
                            sizer.learn(1, started.elapsed(), true, true);
                        }
                        last
                    } else {
                        let asked = sizer.next();
                        let run = receive_and_handle_batch(
                            &endpoint,
                            &queue,
                            asked,
                            sizer.lock_wait(),
                            &stop,
                            taken.take(),
                        )
                        .await;
                        if matches!(run.outcome, Outcome::Conflict(_)) {
                            sizer.gave_way(run.taken);
                        } else {
                            sizer.learn(
                                run.taken,
                                started.elapsed(),
                                run.taken >= asked,
                                run.healthy(),
                            );
                        }
                        took_before = run.taken > 0;
                        run.outcome
                    };
                    receives += 1;
                    // A message the commit took is handled even if the endpoint now stops (it
                    // is taken), and a receive that failed with it is reported.
                    let go_on = !matches!(carried, NextReceive::NotTried)
                        || (matches!(last, Outcome::Handled | Outcome::Expired | Outcome::Held)
                            && receives < msg.credit
                            && !stop.is_set());
                    if !go_on {
                        return Run { last, receives };
                    }
                }
            }
            .into_actor(self)
            .map(|run, _act, ctx| {
                if matches!(run.last, Outcome::Failed { panicked: true, .. }) {
                    ctx.stop();
                }
                run
            }),
        )
    }
}
