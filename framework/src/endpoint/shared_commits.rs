//! Shared commits for concurrent senders. With one message per transaction, an application
//! whose tasks send at the same time is bound by the database's commit flush (each commit waits
//! for its own `fsync`). Here the sends of a bus that arrive while one of its writes is under
//! way wait for it to end, then go to the database together: one transaction, one multi-row
//! statement per queue, one flush. A lone sender waits for nothing: its write starts at once.
//! Where the database takes writers in parallel, a statement's worth of waiting messages (sends
//! of batches) starts a second write beside the first instead of waiting for it.
//!
//! What each caller is promised does not change: its `send` returns `Ok` only once its rows
//! have committed, and an error otherwise. A shared write that fails for good (an unknown queue,
//! a value the database refuses) committed nothing, so each caller's messages are then written
//! again on their own and only the caller at fault gets the error. A write that fails in a way
//! that may pass (a lost connection, a timeout) fails every caller in it, each with the error:
//! the commit's outcome may be unknown, as for a single send.

use std::sync::{Arc, Mutex};

use crate::driver::{DriverError, FailureKind};
use crate::envelope::OutgoingMessage;
use crate::error::{error_chain, NimbusError, Result};
use crate::pipeline::metrics::{count_send_commit, Counters};
use crate::transport::Transport;

/// The most messages one shared write takes; what is left waits for the next.
pub(crate) const MAX_SHARED_MESSAGES: usize = 500;

/// Shared writes under way at once where the database takes writers in parallel (PostgreSQL,
/// SQL Server): while this many are, arrivals wait for one to end. SQLite, which has one
/// writer, has one.
pub(crate) const WRITERS: usize = 2;

/// While a shared write is under way, this many messages waiting start a second one: enough to
/// fill a multi-row statement of their own (batches). With fewer, one writer makes the largest
/// groups (two measured no faster with 16 tasks sending one message each); with batches, two
/// writers do not line them up behind one (measured on PostgreSQL with 16 tasks each sending
/// batches of 100 beside 16 batched receivers: 121–125% of pgmq end to end, against 111–112%
/// when each batch committed alone and 57–58% of the bare loop's sends with one writer).
pub(crate) const SECOND_WRITER_FROM: usize = 32;

/// One caller waiting for its messages to commit.
struct Waiting {
    messages: Vec<OutgoingMessage>,
    done: tokio::sync::oneshot::Sender<Result<()>>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Writes under way; at [`WRITERS`], arrivals wait for one to end.
    writing: usize,
}

impl Queue {
    /// Whether an arrival starts a writer: when none writes, or a second one when a statement's
    /// worth of messages waits and the database takes writers in parallel.
    fn starts_writer(&self, single_writer: bool) -> bool {
        let most = if single_writer { 1 } else { WRITERS };
        self.writing == 0 || (self.writing < most && self.waiting_messages() >= SECOND_WRITER_FROM)
    }

    /// The messages of the callers waiting.
    fn waiting_messages(&self) -> usize {
        self.waiting.iter().map(|w| w.messages.len()).sum()
    }
}

/// The sends of one bus, written together when they arrive together.
pub(crate) struct SharedCommits {
    transport: Arc<dyn Transport>,
    counters: Arc<Counters>,
    queue: Arc<Mutex<Queue>>,
}

impl SharedCommits {
    pub(crate) fn new(transport: Arc<dyn Transport>, counters: Arc<Counters>) -> Self {
        SharedCommits {
            transport,
            counters,
            queue: Arc::default(),
        }
    }

    /// Writes `messages` in a transaction shared with the sends that wait with them; returns
    /// once they have committed. The writing runs in a task of its own, so a caller that stops
    /// waiting (a timeout of its own) does not cancel the others' write.
    pub(crate) async fn send(&self, messages: Vec<OutgoingMessage>) -> Result<()> {
        let (done, committed) = tokio::sync::oneshot::channel();
        let start_writer = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.waiting.push(Waiting { messages, done });
            let start = queue.starts_writer(self.transport.single_writer());
            if start {
                queue.writing += 1;
            }
            start
        };
        if start_writer {
            let writer = write_while_waiting(
                self.transport.clone(),
                self.counters.clone(),
                self.queue.clone(),
            );
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(writer);
                }
                // Polled outside a tokio runtime: this caller writes, in its own future.
                Err(_) => writer.await,
            }
        }
        committed.await.unwrap_or_else(|_| {
            Err(NimbusError::NotRunning(
                "the task writing this send ended before its commit (its runtime stopped)".into(),
            ))
        })
    }
}

/// Writes what waits, group by group, until nothing does.
async fn write_while_waiting(
    transport: Arc<dyn Transport>,
    counters: Arc<Counters>,
    queue: Arc<Mutex<Queue>>,
) {
    let mut slot = WriterSlot {
        queue: queue.clone(),
        held: true,
    };
    loop {
        let group = {
            let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.waiting.is_empty() {
                // Given back under the lock that saw nothing waiting, so that a send arriving
                // now starts a writer of its own.
                queue.writing -= 1;
                slot.held = false;
                return;
            }
            take_group(&mut queue.waiting)
        };
        write_group(transport.as_ref(), &counters, group).await;
    }
}

/// A writer's place among the [`WRITERS`]. A writer that ends without finishing (its runtime
/// shut down, a panic in the driver) gives its place back when dropped: the callers of its
/// group get an error (their reply is dropped), and the next send starts a writer that takes
/// whatever still waits, instead of every later send waiting for a writer that is gone.
struct WriterSlot {
    queue: Arc<Mutex<Queue>>,
    held: bool,
}

impl Drop for WriterSlot {
    fn drop(&mut self) {
        if self.held {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.writing = queue.writing.saturating_sub(1);
            tracing::warn!(
                waiting = queue.waiting.len(),
                "a shared-commit writer ended before its sends were written (its runtime stopped \
                 or it panicked): their callers get an error, and the next send writes what \
                 still waits"
            );
        }
    }
}

/// The oldest callers, up to [`MAX_SHARED_MESSAGES`] messages (always at least one caller).
fn take_group(waiting: &mut Vec<Waiting>) -> Vec<Waiting> {
    let mut messages = 0;
    let mut take = 0;
    for w in waiting.iter() {
        if take > 0 && messages + w.messages.len() > MAX_SHARED_MESSAGES {
            break;
        }
        messages += w.messages.len();
        take += 1;
    }
    waiting.drain(..take).collect()
}

/// Writes one group and tells each caller how it went.
async fn write_group(transport: &dyn Transport, counters: &Counters, group: Vec<Waiting>) {
    count_send_commit(counters);
    if let [_] = group.as_slice() {
        for w in group {
            let result = transport.send_shared(&w.messages).await;
            let _ = w.done.send(result);
        }
        return;
    }
    let callers = group.len();
    let mut all: Vec<OutgoingMessage> = Vec::new();
    let mut parts = Vec::with_capacity(callers);
    for w in group {
        parts.push((all.len()..all.len() + w.messages.len(), w.done));
        all.extend(w.messages);
    }
    match transport.send_shared(&all).await {
        Ok(()) => {
            tracing::trace!(callers, messages = all.len(), "shared commit");
            for (_, done) in parts {
                let _ = done.send(Ok(()));
            }
        }
        Err(e) if e.is_permanent() => {
            // Nothing committed: each caller's messages alone, so only the one at fault fails.
            tracing::debug!(
                callers,
                error = %e,
                "a shared commit was refused; writing its sends one by one"
            );
            for (range, done) in parts {
                count_send_commit(counters);
                let result = transport.send_shared(&all[range]).await;
                let _ = done.send(result);
            }
        }
        Err(e) => {
            let shared = shared_failure(&e, callers);
            let mut dones = parts.into_iter().map(|(_, done)| done);
            if let Some(first) = dones.next() {
                let _ = first.send(Err(e));
            }
            for done in dones {
                let _ = done.send(Err(shared.copy()));
            }
        }
    }
}

/// The error of a shared write that may pass, for every caller but the first (who gets the
/// original): the same words, and still an error that may pass.
struct SharedFailure {
    backend: &'static str,
    text: String,
}

impl SharedFailure {
    fn copy(&self) -> NimbusError {
        NimbusError::database(
            self.backend,
            "a send's commit, shared with other sends of this bus",
            DriverError::other(FailureKind::Transient, self.text.clone()),
        )
    }
}

fn shared_failure(error: &NimbusError, callers: usize) -> SharedFailure {
    let backend = match error {
        NimbusError::Database { backend, .. } | NimbusError::Connect { backend, .. } => backend,
        _ => "the database",
    };
    SharedFailure {
        backend,
        text: format!(
            "{} (the commit this send shared with {} other sends failed, and may or may not \
             have happened)",
            error_chain(error),
            callers - 1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message() -> OutgoingMessage {
        OutgoingMessage {
            destination: crate::envelope::Destination::Queue(
                crate::names::QueueName::new("Sales").unwrap(),
            ),
            id: uuid::Uuid::nil(),
            headers_json: "{}".into(),
            body: b"{}".to_vec(),
            correlation_id: None,
            reply_to_address: None,
            time_to_be_received_ms: None,
            expires_at: None,
            delivery: crate::envelope::Delivery::Immediate,
            group: None,
            priority: None,
            stored_apart: None,
        }
    }

    fn waiting(n: usize) -> Waiting {
        let (done, _) = tokio::sync::oneshot::channel();
        Waiting {
            messages: (0..n).map(|_| message()).collect(),
            done,
        }
    }

    #[test]
    fn a_group_takes_callers_in_order_up_to_the_message_limit() {
        let mut queue: Vec<Waiting> = vec![waiting(300), waiting(150), waiting(100), waiting(1)];
        let first = take_group(&mut queue);
        assert_eq!(
            first.iter().map(|w| w.messages.len()).collect::<Vec<_>>(),
            [300, 150]
        );
        let second = take_group(&mut queue);
        assert_eq!(
            second.iter().map(|w| w.messages.len()).collect::<Vec<_>>(),
            [100, 1]
        );
        assert!(queue.is_empty());
    }

    #[test]
    fn a_writer_that_is_dropped_gives_its_place_back() {
        let queue: Arc<Mutex<Queue>> = Arc::default();
        queue.lock().unwrap().writing = 1;
        queue.lock().unwrap().waiting.push(waiting(1));
        drop(WriterSlot {
            queue: queue.clone(),
            held: true,
        });
        let after = queue.lock().unwrap();
        assert_eq!(after.writing, 0, "the next send starts a writer");
        assert_eq!(after.waiting.len(), 1, "what waits is left for it");
    }

    /// A second writer starts only where the database takes writers in parallel, and only
    /// once a statement's worth of messages waits behind the first.
    #[test]
    fn a_second_writer_starts_for_a_statements_worth_of_waiting_messages() {
        let mut queue = Queue::default();
        assert!(
            queue.starts_writer(false),
            "nobody writes: the first writer"
        );
        queue.writing = 1;
        queue.waiting = vec![waiting(SECOND_WRITER_FROM - 2), waiting(1)];
        assert!(
            !queue.starts_writer(false),
            "a few sends wait for the one writer"
        );
        queue.waiting.push(waiting(1));
        assert!(
            queue.starts_writer(false),
            "a batch's worth starts a second"
        );
        assert!(
            !queue.starts_writer(true),
            "never on a database with one writer"
        );
        queue.writing = WRITERS;
        assert!(!queue.starts_writer(false), "at most WRITERS at once");
    }

    #[test]
    fn a_caller_bigger_than_the_limit_is_written_alone() {
        let mut queue = vec![waiting(MAX_SHARED_MESSAGES + 1), waiting(1)];
        assert_eq!(take_group(&mut queue).len(), 1);
        assert_eq!(take_group(&mut queue).len(), 1);
    }
}
