//! What happens to one message: receive it, dispatch it to its handlers, then commit, retry,
//! dead-letter or roll back. Receiver actors run this; it never panics outward (handler panics are
//! caught here) and never loses a message: every path ends in a commit that moved the message
//! somewhere, or a rollback that left it where it was.
//!
//! This file is over 1,000 lines because handling one message is one path (receive, dispatch,
//! commit, retry, dead-letter, leases) that is read whole to see that no branch loses a message;
//! the parts that stand alone are the submodules.

pub(crate) mod batch_size;
pub(crate) mod config;
pub(crate) mod dispatch;
pub(crate) mod handler;
pub(crate) mod handler_connections;
pub(crate) mod health;
pub(crate) mod lease;
pub(crate) mod limits;
pub(crate) mod metrics;
pub(crate) mod monitor;
pub(crate) mod panic_output;
pub(crate) mod requests;
pub(crate) mod schedule;

use std::sync::Arc;

use actix::Recipient;
use tracing::Instrument;
use uuid::Uuid;

use crate::dead_letter::dead_letter;
use crate::envelope::{
    DecodeError, Delivery, Destination, Incoming, OutgoingMessage, ReceivedMessage,
};
use crate::error::{NimbusError, Unrecoverable};
use crate::headers::Headers;
use crate::names::QueueName;
use crate::pipeline::config::EndpointConfig;
use crate::pipeline::dispatch::{Dispatcher, Invoked};
use crate::pipeline::handler::{HandlerContext, InvokeError};
use crate::pipeline::metrics::Counters;
use crate::pipeline::requests::{PendingRequests, Reply};
use crate::recoverability::{failures_so_far, Recovery, DELAYED_RETRIES, FAILED_ATTEMPTS};
use crate::telemetry;
use crate::transport::StopSignal;
use crate::transport::{
    CommitFailure, LimitSlots, LimitTaken, NextReceive, ReceiveTransaction, ReceivedBatch,
    Transport,
};

/// What an endpoint's actors share.
pub(crate) struct EndpointState {
    pub config: EndpointConfig,
    pub transport: Arc<dyn Transport>,
    pub counters: Arc<Counters>,
    /// What each queue's supervisor last saw of the database, for `Bus::health`.
    pub health: health::HealthBoard,
    pub dead_letterer: Recipient<MoveToDeadLetters>,
    pub pending_requests: PendingRequests,
    /// The database the endpoint's receives hold open (its target), marked on handler code.
    pub database_target: Arc<str>,
    /// The endpoint's concurrency limit, across all of its queues: one slot per receive.
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The handler actors (on the handler threads) and the blocking pool.
    pub dispatcher: Dispatcher,
    /// Set when the endpoint stops: receives still waiting for a connection take nothing.
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// The other end of `stopping`, for the receives.
    pub stop_signal: crate::transport::StopSignal,
    /// The queues whose handlers ran statements of their own in the receive's transaction.
    pub own_statements: batch_size::OwnStatements,
    /// The endpoint keeps deduplication keys (an inbox, or a deduplicated send was made): its
    /// maintenance deletes those whose window ended.
    pub deduplicates: std::sync::atomic::AtomicBool,
    /// When the messages its limits held back come due (see [`limits::HoldsDue`]).
    pub holds_due: limits::HoldsDue,
}

tokio::task_local! {
    /// The database (its target) whose receive is open while a handler runs, so that sends
    /// which would wait for that receive's lock can be refused.
    pub(crate) static IN_HANDLER: Arc<str>;
}

/// Whether the calling code runs inside a handler whose receive is open on `target`.
pub(crate) fn inside_handler_on(target: &str) -> bool {
    IN_HANDLER.try_with(|t| &**t == target).unwrap_or(false)
}

/// A count or a log line that says what a commit made true.
type Effect = Box<dyn FnOnce() + Send>;

tokio::task_local! {
    /// Inside a batch: the effects of its messages, held back until the batch commits.
    static IN_BATCH: Arc<std::sync::Mutex<Vec<Effect>>>;
}

/// Whether the message being handled is part of a batch.
fn in_batch() -> bool {
    IN_BATCH.try_with(|_| ()).is_ok()
}

/// Runs `effect` (counting a handled, retried or dead-lettered message, logging it) once what
/// it reports is committed: at once after a receive's own commit, and for a message of a batch
/// (whose "commit" only hands the transaction back to the batch) after the batch has committed;
/// never if the batch rolls back.
fn after_commit(effect: impl FnOnce() + Send + 'static) {
    let span = tracing::Span::current();
    let mut effect = Some(move || {
        let _in = span.enter();
        effect();
    });
    let _ = IN_BATCH.try_with(|pending| {
        if let Some(effect) = effect.take() {
            pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Box::new(effect));
        }
    });
    if let Some(effect) = effect {
        effect();
    }
}

/// Asks the endpoint's dead-letter actor to write `letter` in `tx` and commit: the message
/// leaves its queue and becomes a dead letter atomically.
#[derive(actix::Message)]
#[rtype(result = "crate::error::Result<()>")]
pub(crate) struct MoveToDeadLetters {
    pub tx: Box<dyn ReceiveTransaction>,
    pub letter: crate::dead_letter::DeadLetter,
}

/// The result of one receive.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing to receive: go back to peeking.
    Empty,
    /// Handled and committed, together with everything the handlers sent.
    Handled,
    /// Past its `Expires`: deleted without being handled.
    Expired,
    /// Over one of its limits: put back to wait, no attempt counted.
    Held,
    /// The handler failed (error, panic or timeout) or the message cannot be handled; the
    /// message was retried or dead-lettered in the receive's transaction.
    Failed {
        reason: String,
        recovery: Recovery,
        /// The handler panicked: the receiver actor restarts.
        panicked: bool,
        /// For the span: `bad_input`, `handler_error`, `panic`, `timeout` or `refused_send`.
        error_type: &'static str,
    },
    /// The database failed (connection lost, commit failed); whatever was open is rolled back,
    /// the message is where it was and no attempt was counted.
    Infrastructure(NimbusError),
    /// The message was handled under a lease that ran out and was taken back before the
    /// handler finished: nothing the handler sent was committed; the message is someone
    /// else's to handle (or was retried or dead-lettered when the lease was taken back).
    LeaseLost,
    /// The endpoint stopped while the message's handlers ran under a lease: the message was
    /// put back in its queue as it came, no attempt counted.
    HandedBack,
    /// The transaction gave way to another (a deadlock victim, a serialization failure, a saga
    /// started or changed by another message at the same moment): it was rolled back, its
    /// messages are in their queue again and no attempt was counted. Not an outage: they are
    /// received again at once, without a back-off.
    Conflict(NimbusError),
}

impl Outcome {
    /// What a database failure means for the receive: a conflict when the transaction gave way
    /// to another, an outage otherwise.
    fn of_database(error: NimbusError) -> Outcome {
        if crate::driver::access::is_conflict_in(&error) {
            Outcome::Conflict(error)
        } else {
            Outcome::Infrastructure(error)
        }
    }
}

/// Why an attempt failed.
enum Failure {
    /// The handler's own failure: counts against the retry budget.
    Handler {
        reason: String,
        panicked: bool,
        /// For the span: `handler_error`, `panic`, `timeout` or `refused_send`.
        error_type: &'static str,
    },
    /// The message cannot be handled by any attempt: dead letters at once.
    BadInput(String),
}

/// Told as soon as a receive's `DELETE` has taken its message(s), before any handler runs: the
/// supervisor may look for more work then instead of waiting for the handlers. Dropped unsent
/// when the receive took nothing or failed.
pub(crate) type Taken = tokio::sync::oneshot::Sender<()>;

/// Receives one message from `queue` — or takes `carried`, what the previous message's commit
/// already received — and handles it in the receive's transaction, inside a `process` span
/// that continues the sender's trace; `taken` is told once the message is taken. With
/// `take_next`, a handled message's commit also takes the next message where the database can
/// do both in one round trip: that comes back for the next call (see
/// [`ReceiveTransaction::commit_handled_and_receive`]).
pub(crate) async fn receive_and_handle(
    endpoint: &EndpointState,
    queue: &QueueName,
    stop: &StopSignal,
    taken: Option<Taken>,
    carried: NextReceive,
    take_next: bool,
) -> (Outcome, NextReceive) {
    let (row, tx) = match carried {
        NextReceive::Taken(row, tx) => (row, tx),
        NextReceive::Empty => return (Outcome::Empty, NextReceive::NotTried),
        // A receive chosen as a deadlock victim gave way like any transaction: received again
        // at once, not after a back-off.
        NextReceive::Failed(e) => return (Outcome::of_database(e), NextReceive::NotTried),
        NextReceive::NotTried => match endpoint.transport.receive(queue, stop).await {
            Ok(None) => return (Outcome::Empty, NextReceive::NotTried),
            Ok(Some(received)) => received,
            Err(e) => return (Outcome::of_database(e), NextReceive::NotTried),
        },
    };
    metrics::count_receive(&endpoint.counters, queue.as_str());
    // The supervisor is gone only when the endpoint stops: nobody to tell then.
    if let Some(taken) = taken {
        let _ = taken.send(());
    }
    let mut next = NextReceive::NotTried;
    let take = take_next.then_some(TakeNext {
        stop,
        next: &mut next,
    });
    let outcome = process(endpoint, queue, row, tx, take).await;
    (outcome, next)
}

/// Where a handled message's commit may take the next message of its queue: unless `stop` is
/// set by then, into `next`.
struct TakeNext<'a> {
    stop: &'a StopSignal,
    next: &'a mut NextReceive,
}

/// Receives up to `limit` messages of `queue` in one transaction and handles each in turn under
/// its own savepoint (see [`crate::transport::ReceivedBatch`]): each message's handling, sends,
/// retry or dead letter stay with it, and the batch commits once. Any failure of the database
/// rolls the whole batch back: its messages are in their queue again, unhandled.
///
/// The receive, the handlers and the commit run here: on the receiver's handler thread, whose
/// connections and handler actors live there too. `taken` is told once the batch is taken.
pub(crate) async fn receive_and_handle_batch(
    endpoint: &Arc<EndpointState>,
    queue: &QueueName,
    limit: usize,
    lock_wait: Option<std::time::Duration>,
    stop: &StopSignal,
    taken: Option<Taken>,
) -> BatchRun {
    let asked = i64::try_from(limit).unwrap_or(i64::MAX);
    let received = endpoint
        .transport
        .receive_batch(queue, asked, stop, lock_wait)
        .await;
    let batch = match received {
        Ok(None) => return BatchRun::nothing(Outcome::Empty),
        Ok(Some(batch)) => batch,
        Err(e) => return BatchRun::nothing(Outcome::of_database(e)),
    };
    metrics::count_receive(&endpoint.counters, queue.as_str());
    if let Some(taken) = taken {
        let _ = taken.send(());
    }
    let size = batch.len();
    let effects: Arc<std::sync::Mutex<Vec<Effect>>> = Arc::default();
    let handled = IN_BATCH
        .scope(
            effects.clone(),
            handle_batch(endpoint.clone(), queue.clone(), batch),
        )
        .await;
    let (batch, failures) = match handled {
        Ok(handled) => handled,
        Err(e) => {
            return BatchRun {
                outcome: batch_rolled_back(queue, size, e),
                taken: size,
                failures: 0,
            }
        }
    };
    let outcome = match batch.commit().await {
        Ok(()) => {
            let effects = std::mem::take(&mut *effects.lock().unwrap_or_else(|p| p.into_inner()));
            effects.into_iter().for_each(|effect| effect());
            Outcome::Handled
        }
        Err(e) => batch_rolled_back(queue, size, e),
    };
    BatchRun {
        outcome,
        taken: size,
        failures,
    }
}

/// What one batched receive did.
pub(crate) struct BatchRun {
    /// `Handled` once the batch committed, whatever its messages' own outcomes.
    pub outcome: Outcome,
    /// How many messages it took.
    pub taken: usize,
    /// How many of them failed an attempt (retried or dead-lettered in the batch).
    pub failures: usize,
}

impl BatchRun {
    /// Whether the receive went as it should, for sizing the next one: it committed with no
    /// failed attempt, or found the queue empty (most often other receivers took the rows; a
    /// receive that found nothing says nothing about the handlers or the database). A database
    /// failure or a failed attempt is not.
    pub(crate) fn healthy(&self) -> bool {
        matches!(self.outcome, Outcome::Handled | Outcome::Empty) && self.failures == 0
    }

    /// A receive that took nothing.
    fn nothing(outcome: Outcome) -> Self {
        BatchRun {
            outcome,
            taken: 0,
            failures: 0,
        }
    }
}

/// Handles every message of `batch` in turn; the batch comes back to be committed, with how
/// many of its messages failed an attempt, or the database's failure that rolled it back.
async fn handle_batch(
    endpoint: Arc<EndpointState>,
    queue: QueueName,
    mut batch: Box<dyn ReceivedBatch>,
) -> Result<(Box<dyn ReceivedBatch>, usize), NimbusError> {
    let mut failures = 0;
    loop {
        let (row, tx) = match batch.next().await? {
            Some(next) => next,
            None => return Ok((batch, failures)),
        };
        match process(&endpoint, &queue, row, tx, None).await {
            Outcome::Infrastructure(e) | Outcome::Conflict(e) => return Err(e),
            Outcome::Failed { .. } => failures += 1,
            _ => {}
        }
    }
}

/// A batch whose transaction failed: every message of it is back in its queue (what was
/// counted as handled or failed in it did not happen). A statement of the batch that waited
/// for a row lock past the batch's bound is a conflict too: batches of this queue collide on
/// rows, and one message per transaction will not wait on them that way.
fn batch_rolled_back(queue: &QueueName, size: usize, error: NimbusError) -> Outcome {
    let outcome = if crate::driver::access::is_lock_timeout_in(&error) {
        Outcome::Conflict(error)
    } else {
        Outcome::of_database(error)
    };
    match outcome {
        Outcome::Conflict(error) => {
            tracing::debug!(queue = %queue, messages = size, error = %error, "a batch gave way to another transaction; its messages are received again");
            Outcome::Conflict(error)
        }
        outcome => {
            if let Outcome::Infrastructure(error) = &outcome {
                tracing::warn!(queue = %queue, messages = size, error = %error, "a batch was rolled back; its messages are in their queue again");
            }
            outcome
        }
    }
}

/// A number in `0.0 ..< 1.0` at random: enough randomness for spreading waits (of retries,
/// of held messages) so that many receivers do not come back at the same moment.
pub(crate) fn random_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    // A fresh RandomState is seeded at random.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (random % 1_000) as f64 / 1_000.0
}

/// Handles one received message in its transaction, inside a `process` span that continues
/// the sender's trace.
async fn process(
    endpoint: &EndpointState,
    queue: &QueueName,
    row: ReceivedMessage,
    tx: Box<dyn ReceiveTransaction>,
    take_next: Option<TakeNext<'_>>,
) -> Outcome {
    // Read before the span is made, so that the span continues the sender's trace.
    let decoded = (row.undecodable.is_none() && !row.expired).then(|| Incoming::decode(&row));
    let span = telemetry::process_span(queue.as_str(), &row.row_id);
    match &decoded {
        Some(Ok(incoming)) => telemetry::continue_trace(&span, &incoming.headers),
        Some(Err(DecodeError::NoType(incoming))) => {
            telemetry::continue_trace(&span, &incoming.headers)
        }
        Some(Err(DecodeError::Headers(_))) | None => {}
    }
    let outcome = match handle_received(endpoint, queue, row, tx, decoded, take_next)
        .instrument(span.clone())
        .await
    {
        Outcome::Infrastructure(e) => Outcome::of_database(e),
        outcome => outcome,
    };
    let (name, error_type) = match &outcome {
        Outcome::Empty => ("empty", None),
        Outcome::Handled => ("handled", None),
        Outcome::Expired => ("expired", None),
        Outcome::Held => ("held", None),
        Outcome::Failed {
            recovery,
            error_type,
            ..
        } => {
            let name = match recovery {
                Recovery::Immediate => "retried",
                Recovery::Delayed { .. } => "retried_later",
                Recovery::DeadLetter => "dead_lettered",
            };
            (name, Some(*error_type))
        }
        Outcome::Infrastructure(e) => ("database_error", Some(e.kind_name())),
        Outcome::LeaseLost => ("lease_lost", None),
        Outcome::HandedBack => ("handed_back", None),
        Outcome::Conflict(_) => ("conflict", None),
    };
    telemetry::record_outcome(&span, name, error_type);
    outcome
}

/// Handles a received message (see [`receive_and_handle`]), whose headers `decoded` has read
/// unless it is undecodable or expired.
async fn handle_received(
    endpoint: &EndpointState,
    queue: &QueueName,
    mut row: ReceivedMessage,
    tx: Box<dyn ReceiveTransaction>,
    decoded: Option<Result<Incoming, DecodeError>>,
    take_next: Option<TakeNext<'_>>,
) -> Outcome {
    if let Some(problem) = &row.undecodable {
        let reason = format!("message {}: {problem}", row.row_id);
        return fail(endpoint, queue, tx, &row, None, Failure::BadInput(reason)).await;
    }
    if row.expired {
        return discard_expired(endpoint, queue, &row, tx).await;
    }
    let incoming = match decoded.unwrap_or_else(|| Incoming::decode(&row)) {
        Ok(incoming) => incoming,
        Err(DecodeError::NoType(parsed)) => {
            let reason = format!(
                "message {} has no {} header",
                parsed.message_id,
                crate::headers::ENCLOSED_MESSAGE_TYPES
            );
            return fail(
                endpoint,
                queue,
                tx,
                &row,
                Some(&parsed),
                Failure::BadInput(reason),
            )
            .await;
        }
        Err(e) => {
            let reason = format!("message {}: {e}", row.row_id);
            return fail(endpoint, queue, tx, &row, None, Failure::BadInput(reason)).await;
        }
    };
    // A body the claim check stored apart, read in the receive's transaction; the row keeps
    // its empty body and the header that names it, for a retry's copy or a dead letter.
    let mut tx = tx;
    let stored = match stored_body(queue, &incoming, &mut tx).await {
        Ok(stored) => stored,
        Err(StoredBodyProblem::Unusable(reason)) => {
            let failure = Failure::BadInput(reason);
            return fail(endpoint, queue, tx, &row, Some(&incoming), failure).await;
        }
        Err(StoredBodyProblem::Database(e)) => return Outcome::Infrastructure(e),
    };
    // The body as its handlers read it, where its sender compressed or encrypted it; the
    // received bytes stay as they came for a retry's copy or a dead letter.
    let identity = &endpoint.config.identity;
    let received_body = stored.as_deref().unwrap_or(&row.body);
    let decoded = match identity.codecs.decode(
        incoming.headers.all(),
        received_body,
        identity.max_body_size,
    ) {
        Ok(decoded) => decoded.or(stored),
        Err(unreadable) => {
            metrics::count_unreadable_body(queue.as_str(), unreadable.kind);
            let reason = format!(
                "message {} ({}): {}",
                incoming.message_id, incoming.type_name, unreadable.reason
            );
            let failure = Failure::BadInput(reason);
            return fail(endpoint, queue, tx, &row, Some(&incoming), failure).await;
        }
    };
    metrics::count(
        "nimbus_messages_received_total",
        queue.as_str(),
        &incoming.type_name,
    );
    if let Some(priority) = crate::envelope::priority_in(incoming.headers.all()) {
        metrics::count_prioritized(queue.as_str(), priority);
    }
    telemetry::record_incoming(
        &tracing::Span::current(),
        &incoming,
        &row.row_id,
        failures_so_far(&incoming.headers).saturating_add(1),
        row.body.len(),
    );
    let sent_at = incoming
        .headers
        .get(crate::headers::TIME_SENT)
        .and_then(crate::headers::parse_time);
    let on_instance_queue = endpoint.config.identity.instance_queue.as_ref() == Some(queue);
    let reply_to = on_instance_queue
        .then(|| reply_correlation(&incoming))
        .flatten();
    if let Some(waiter) = reply_to.and_then(|c| endpoint.pending_requests.take(c)) {
        let reply = Reply {
            type_name: incoming.type_name.clone(),
            body: decoded.clone().unwrap_or_else(|| row.body.clone()),
        };
        // Hand it over first: if the transaction then fails, the caller has its reply and the
        // redelivered copy, which nobody waits for, goes to the dead letters.
        if waiter.send(reply).is_ok() {
            return match tx.commit(Vec::new()).await {
                Ok(()) => {
                    let counters = endpoint.counters.clone();
                    after_commit(move || Counters::add(&counters.handled, 1));
                    Outcome::Handled
                }
                Err(e) => Outcome::Infrastructure(e),
            };
        }
    }
    let handlers = endpoint
        .config
        .handlers
        .get(&incoming.type_name)
        .map(|registered| registered.for_queue(on_instance_queue))
        .unwrap_or_default();
    if handlers.is_empty() {
        let reason = match reply_to {
            Some(correlation) => format!(
                "message {} is a reply to request {correlation}, which nobody waits for any more \
                 (it timed out, or the requesting process restarted)",
                incoming.message_id
            ),
            None => format!(
                "message {} has type {:?}, which this endpoint has no handler for",
                incoming.message_id, incoming.type_name
            ),
        };
        return fail(
            endpoint,
            queue,
            tx,
            &row,
            Some(&incoming),
            Failure::BadInput(reason),
        )
        .await;
    }
    // Limits first: a message over one goes back to wait before the inbox claims its id.
    let scoped = match endpoint.config.limits.scopes_for(
        queue,
        &incoming.type_name,
        decoded.as_deref().unwrap_or(&row.body),
    ) {
        Ok(scoped) => scoped,
        Err(problem) => {
            let reason = format!("message {}: {problem}", incoming.message_id);
            let failure = Failure::BadInput(reason);
            return fail(endpoint, queue, tx, &row, Some(&incoming), failure).await;
        }
    };
    for limited in &scoped {
        let slots = LimitSlots {
            scope: &limited.scope,
            slots: limited.limit.slots(),
            period: limited.limit.period(),
        };
        match tx.take_limit(&slots).await {
            Ok(LimitTaken::Taken) => {}
            Ok(LimitTaken::Full { ready_in }) => {
                return hold(endpoint, queue, tx, &row, &incoming, limited, ready_in).await
            }
            Ok(LimitTaken::Missing) => {
                let outcome = hold(endpoint, queue, tx, &row, &incoming, limited, None).await;
                if matches!(outcome, Outcome::Held) {
                    add_limit_slots(endpoint, limited);
                }
                return outcome;
            }
            Err(e) => return Outcome::Infrastructure(e),
        }
    }
    // The inbox: a message whose id was handled within the window runs no handler. A failed
    // attempt gives its claim back (`give_back`), so its retry runs.
    let mut inbox_claim = None;
    if let Some(window) = endpoint.config.inbox {
        let scope = crate::transport::deduplication_scope("inbox", queue);
        match tx.claim_key(&scope, &incoming.message_id, window).await {
            Ok(true) => inbox_claim = Some(scope),
            Ok(false) => return discard_duplicate(queue, &incoming, tx).await,
            Err(e) => return Outcome::Infrastructure(e),
        }
    }
    let causation = incoming.causation();
    let lease = endpoint.config.leases.get(&incoming.type_name);
    // Under a lease the message leaves its queue now, and the handlers run with nothing open.
    let (tx, leased) = match lease {
        None => (Some(tx), None),
        Some(lease) => match UnderLease::hold(endpoint, queue, &row, &incoming, tx, lease).await {
            Ok(leased) => (None, Some(leased)),
            Err(e) => return Outcome::Infrastructure(e),
        },
    };
    let Incoming {
        headers,
        type_name,
        message_id,
    } = incoming;
    let mut ctx = HandlerContext::new(
        endpoint.config.identity.clone(),
        endpoint.config.routes.clone(),
        headers,
        causation,
        tx,
        endpoint.config.database.kind(),
    );
    let timeout = lease.map_or(endpoint.config.handler_timeout, |l| l.timeout());
    // No receive is open under a lease: nothing a send from the handler could wait for.
    let database_target = match leased {
        Some(_) => Arc::from(""),
        None => endpoint.database_target.clone(),
    };
    let handling_started = std::time::Instant::now();
    // The body travels to the handlers' threads and comes back for a retry's copy (a decoded
    // one is the handlers' own: the row keeps the body as it came).
    let (body, decoded_apart) = match decoded {
        Some(decoded) => (Arc::new(decoded), true),
        None => (Arc::new(std::mem::take(&mut row.body)), false),
    };
    for handler in handlers {
        let invoke = endpoint
            .dispatcher
            .invoke(handler, &body, ctx, timeout, &database_target);
        let invoked = match &leased {
            // A handler under a lease may run for an hour: a stopping endpoint hands its
            // message back instead of waiting (it is handled at least once anyway).
            Some(_) => tokio::select! {
                biased;
                invoked = invoke => invoked,
                () = endpoint.stop_signal.set() => {
                    restore_body(&mut row, body, decoded_apart);
                    return hand_back(endpoint, queue, &row, &type_name, leased).await;
                }
            },
            None => invoke.await,
        };
        let invocation = match invoked {
            Ok(invocation) => invocation,
            Err(e) => return Outcome::Infrastructure(e),
        };
        ctx = invocation.ctx;
        if ctx.ran_own_statements() && own_statements_keep_single(ctx.database()) {
            endpoint.own_statements.mark(queue.as_str());
        }
        let what = |detail: String| format!("message {message_id} ({type_name}): {detail}");
        let failure = match invocation.invoked {
            Invoked::Done(Ok(())) => continue,
            Invoked::Done(Err(e @ InvokeError::Body { .. })) => {
                Failure::BadInput(what(e.to_string()))
            }
            Invoked::Done(Err(InvokeError::Handler(e))) if e.is::<Unrecoverable>() => {
                Failure::BadInput(what(format!(
                    "the handler declared it unrecoverable: {}",
                    crate::pipeline::handler::handler_error_text(e.as_ref())
                )))
            }
            Invoked::Done(Err(InvokeError::Handler(e)))
                if leased.is_none() && may_pass(e.as_ref()) =>
            {
                // As when the framework's own statements fail this way: the receive is rolled
                // back (its connection dropped), the message is where it was, nothing is
                // counted, and the supervisor backs off before receiving again.
                let text = format!(
                    "the handler of message {message_id} ({type_name}) failed on its own \
                     statements with an error that may pass when tried again, so the attempt \
                     is not counted: {}",
                    crate::pipeline::handler::handler_error_text(e.as_ref())
                );
                // A conflict stays one: received again at once, not after a back-off. So is a
                // lock wait past a batch's bound (see `batch_rolled_back`).
                let error = if crate::driver::access::is_conflict_in(e.as_ref())
                    || (in_batch() && crate::driver::access::is_lock_timeout_in(e.as_ref()))
                {
                    crate::driver::DriverError::conflict(text)
                } else {
                    crate::driver::DriverError::other(crate::FailureKind::Transient, text)
                };
                return Outcome::Infrastructure(NimbusError::database(
                    endpoint.transport.name(),
                    "running the handler's own statements",
                    error,
                ));
            }
            Invoked::Done(Err(e @ InvokeError::Handler(_))) => Failure::Handler {
                reason: what(e.to_string()),
                panicked: false,
                error_type: "handler_error",
            },
            Invoked::Panicked(message) => Failure::Handler {
                reason: what(format!("the handler panicked: {message}")),
                panicked: true,
                error_type: "panic",
            },
            Invoked::TimedOut => Failure::Handler {
                reason: what(format!("the handler did not finish within {timeout:?}")),
                panicked: false,
                error_type: "timeout",
            },
        };
        let (headers, _, tx) = ctx.into_parts();
        let mut tx = match finishing_transaction(endpoint, queue, &type_name, tx, leased).await {
            Ok(tx) => tx,
            Err(outcome) => return outcome,
        };
        if let Err(e) = give_back(&mut tx, &inbox_claim, &message_id).await {
            return Outcome::Infrastructure(e);
        }
        let incoming = Incoming {
            headers,
            type_name,
            message_id,
        };
        restore_body(&mut row, body, decoded_apart);
        return fail(endpoint, queue, tx, &row, Some(&incoming), failure).await;
    }
    restore_body(&mut row, body, decoded_apart);
    let committed_effects = ctx.take_on_commit();
    let (headers, outgoing, tx) = ctx.into_parts();
    let tx = match finishing_transaction(endpoint, queue, &type_name, tx, leased).await {
        Ok(tx) => tx,
        Err(outcome) => return outcome,
    };
    let committed = match take_next.filter(|take| !take.stop.is_set()) {
        Some(take) => tx
            .commit_handled_and_receive(outgoing, queue)
            .await
            .map(|next| *take.next = next),
        None => tx.commit_handled(outgoing).await,
    };
    match committed {
        Ok(()) => {
            let (counters, queue, handling) = (
                endpoint.counters.clone(),
                queue.clone(),
                handling_started.elapsed(),
            );
            after_commit(move || {
                Counters::add(&counters.handled, 1);
                metrics::count("nimbus_messages_handled_total", queue.as_str(), &type_name);
                let critical =
                    metrics::record_handled(queue.as_str(), &type_name, handling, sent_at);
                counters.monitor.handled(queue.as_str(), handling, critical);
                committed_effects.into_iter().for_each(|effect| effect());
            });
            Outcome::Handled
        }
        Err(CommitFailure::Refused(error, mut tx)) => {
            // Not an outage: the same sends would be refused again. Count the attempt, so the
            // message ends in the dead letters with the database's reason instead of looping.
            if let Err(e) = give_back(&mut tx, &inbox_claim, &message_id).await {
                return Outcome::Infrastructure(e);
            }
            let incoming = Incoming {
                headers,
                type_name,
                message_id,
            };
            let reason = format!(
                "message {} ({}): the database refused what the handler sent: {error}",
                incoming.message_id, incoming.type_name
            );
            fail(
                endpoint,
                queue,
                tx,
                &row,
                Some(&incoming),
                Failure::Handler {
                    reason,
                    panicked: false,
                    error_type: "refused_send",
                },
            )
            .await
        }
        Err(CommitFailure::Failed(e)) => Outcome::Infrastructure(e),
    }
}

/// Why the body a message's headers say was stored apart cannot be had.
enum StoredBodyProblem {
    /// It is not there, or not readable here: the message goes to the dead letters with this
    /// reason (its headers keep the claim, so a replay tries again).
    Unusable(String),
    /// The database failed: the receive is rolled back and tried again.
    Database(NimbusError),
}

/// The body of `incoming` stored apart by the claim check, read in `tx`; `None` when its body
/// is in its row.
async fn stored_body(
    queue: &QueueName,
    incoming: &Incoming,
    tx: &mut Box<dyn ReceiveTransaction>,
) -> Result<Option<Vec<u8>>, StoredBodyProblem> {
    if let Some(problem) = crate::claim_check::unreadable_claim(incoming.headers.all()) {
        return Err(StoredBodyProblem::Unusable(format!(
            "message {} ({}): {problem}",
            incoming.message_id, incoming.type_name
        )));
    }
    match tx.stored_body().await {
        Ok(Some(body)) => {
            metrics::count_body_fetched(queue.as_str(), body.len());
            Ok(Some(body))
        }
        Ok(None) => Ok(None),
        Err(e @ NimbusError::Config { .. }) => {
            metrics::count_unreadable_body(queue.as_str(), "stored_body_missing");
            Err(StoredBodyProblem::Unusable(format!(
                "message {} ({}): {e}",
                incoming.message_id, incoming.type_name
            )))
        }
        Err(e) => Err(StoredBodyProblem::Database(e)),
    }
}

/// Whether a queue whose handlers run statements of their own takes one message per
/// transaction by default (see [`batch_size::OwnStatements`]): on SQL Server. On SQLite a
/// receive holds the file's one write lock from its `BEGIN IMMEDIATE` to its commit, so
/// transactions never wait on each other's rows; on PostgreSQL an adaptive batch waits at most
/// [`batch_size::BATCH_LOCK_WAIT`] for a row lock and then gives way.
fn own_statements_keep_single(database: Option<crate::DatabaseKind>) -> bool {
    matches!(database, Some(crate::DatabaseKind::SqlServer) | None)
}

/// Whether a handler's error is a database failure that may pass when tried again (a statement
/// past its deadline, a lost connection, a deadlock victim), classified as the framework's own.
fn may_pass(error: &(dyn std::error::Error + 'static)) -> bool {
    crate::driver::access::failure_kind_in(error) == Some(crate::FailureKind::Transient)
}

/// Deletes a message past its `Expires` without handling it (committing `tx`, which took it),
/// and counts it once that has committed.
async fn discard_expired(
    endpoint: &EndpointState,
    queue: &QueueName,
    row: &ReceivedMessage,
    tx: Box<dyn ReceiveTransaction>,
) -> Outcome {
    match tx.commit(Vec::new()).await {
        Ok(()) => {
            let message_type = serde_json::from_str::<Headers>(&row.headers_json)
                .ok()
                .and_then(|h| crate::headers::enclosed_type(&h).map(str::to_string))
                .unwrap_or_else(|| "unknown".into());
            let (counters, queue, id) =
                (endpoint.counters.clone(), queue.clone(), row.row_id.clone());
            after_commit(move || {
                Counters::add(&counters.expired_discarded, 1);
                metrics::count_expired(queue.as_str(), &message_type, "discarded", 1);
                tracing::info!(queue = %queue, %id, "discarded an expired message");
            });
            Outcome::Expired
        }
        Err(e) => Outcome::Infrastructure(e),
    }
}

/// Gives back the inbox's claim of `message_id` (`claim` names its scope) when an attempt
/// failed: its retry must run.
async fn give_back(
    tx: &mut Box<dyn ReceiveTransaction>,
    claim: &Option<String>,
    message_id: &str,
) -> Result<(), NimbusError> {
    match claim {
        Some(scope) => tx.release_key(scope, message_id).await,
        None => Ok(()),
    }
}

/// Removes a message the inbox had handled within its window, without running its handlers.
async fn discard_duplicate(
    queue: &QueueName,
    incoming: &Incoming,
    tx: Box<dyn ReceiveTransaction>,
) -> Outcome {
    match tx.commit(Vec::new()).await {
        Ok(()) => {
            let (queue, id, message_type) = (
                queue.clone(),
                incoming.message_id.clone(),
                incoming.type_name.clone(),
            );
            after_commit(move || {
                metrics::count_received_duplicate(queue.as_str(), &message_type);
                tracing::info!(
                    queue = %queue,
                    message_id = %id,
                    message_type = %message_type,
                    "removed a duplicate: the inbox had handled this message id within its window"
                );
            });
            Outcome::Handled
        }
        Err(e) => Outcome::Infrastructure(e),
    }
}

/// The body back from the handlers (copied only if a timed-out blocking handler still holds it).
/// Gives `row` its body back from the handlers, unless they read a decoded copy
/// (`decoded_apart`): the row then kept the body as it came.
fn restore_body(row: &mut ReceivedMessage, body: Arc<Vec<u8>>, decoded_apart: bool) {
    if !decoded_apart {
        row.body = take_back(body);
    }
}

fn take_back(body: Arc<Vec<u8>>) -> Vec<u8> {
    Arc::try_unwrap(body).unwrap_or_else(|shared| shared.as_ref().clone())
}

/// Takes back every expired lease of `queue` (their holders crashed or stalled past them) and
/// counts each as a failed attempt of its message: retried, or dead-lettered once the retries
/// are spent, so a message that crashes every process that handles it cannot loop forever. A
/// message whose `Expires` has passed meanwhile is discarded. Returns how many it took back.
pub(crate) async fn reclaim_expired_leases(
    endpoint: &EndpointState,
    queue: &QueueName,
) -> Result<u64, NimbusError> {
    let mut reclaimed = 0u64;
    while let Some((row, tx)) = endpoint.transport.take_expired_lease(queue).await? {
        reclaimed += 1;
        let span = telemetry::process_span(queue.as_str(), &row.row_id);
        let outcome = reclaim(endpoint, queue, row, tx).instrument(span).await;
        if let Outcome::Infrastructure(e) = outcome {
            return Err(e);
        }
    }
    Ok(reclaimed)
}

/// What becomes of the message of one expired lease, in the transaction that took it back.
async fn reclaim(
    endpoint: &EndpointState,
    queue: &QueueName,
    row: ReceivedMessage,
    tx: Box<dyn ReceiveTransaction>,
) -> Outcome {
    if let Some(problem) = &row.undecodable {
        let reason = format!("message {}: {problem}", row.row_id);
        return fail(endpoint, queue, tx, &row, None, Failure::BadInput(reason)).await;
    }
    if row.expired {
        return discard_expired(endpoint, queue, &row, tx).await;
    }
    let incoming = match Incoming::decode(&row) {
        Ok(incoming) => incoming,
        Err(e) => {
            let reason = format!("message {}: {e}", row.row_id);
            return fail(endpoint, queue, tx, &row, None, Failure::BadInput(reason)).await;
        }
    };
    let lease = endpoint.config.leases.get(&incoming.type_name);
    let reason = format!(
        "message {} ({}): its lease{} ran out before its handler finished: the instance \
         handling it stopped or stalled",
        incoming.message_id,
        incoming.type_name,
        lease.map_or_else(String::new, |l| format!(" of {:?}", l.duration())),
    );
    let failure = Failure::Handler {
        reason: reason.clone(),
        panicked: false,
        error_type: "lease_expired",
    };
    let outcome = fail(endpoint, queue, tx, &row, Some(&incoming), failure).await;
    if !matches!(outcome, Outcome::Infrastructure(_)) {
        // Taken back: the retry or dead letter it became has committed.
        Counters::add(&endpoint.counters.leases_expired, 1);
        ::metrics::counter!("nimbus_leases_expired_total", "queue" => queue.to_string())
            .increment(1);
        tracing::warn!(queue = %queue, id = %incoming.message_id, %reason, "took back an expired lease");
    }
    outcome
}

/// Puts a message whose handlers still run under a lease back at the end of its queue as it
/// came, in the transaction that ends its lease, because the endpoint stops: no attempt is
/// counted, and the next instance (or this one, restarted) handles it again. What the abandoned
/// handlers sent is discarded.
async fn hand_back(
    endpoint: &EndpointState,
    queue: &QueueName,
    row: &ReceivedMessage,
    type_name: &str,
    leased: Option<UnderLease>,
) -> Outcome {
    let tx = match finishing_transaction(endpoint, queue, type_name, None, leased).await {
        Ok(tx) => tx,
        Err(outcome) => return outcome,
    };
    let priority = crate::envelope::priority_in_json(&row.headers_json);
    let again = written_again(
        row,
        queue,
        row.headers_json.clone(),
        Delivery::Immediate,
        priority,
    );
    match tx.commit(vec![again]).await {
        Ok(()) => {
            tracing::info!(queue = %queue, id = %row.row_id, message_type = type_name, "stopping: handed a message under a lease back to its queue; its handler was still running and is abandoned");
            Outcome::HandedBack
        }
        Err(e) => Outcome::Infrastructure(e),
    }
}

/// A message taken out of its queue under a lease, and the renewal that keeps it while its
/// handlers run.
struct UnderLease {
    held: Arc<dyn crate::transport::HeldLease>,
    renewal: lease::Renewal,
}

impl UnderLease {
    /// Moves the received message into `NimbusLeases` in `tx` and commits, then starts
    /// renewing the lease.
    async fn hold(
        endpoint: &EndpointState,
        queue: &QueueName,
        row: &ReceivedMessage,
        incoming: &Incoming,
        tx: Box<dyn ReceiveTransaction>,
        lease: lease::Lease,
    ) -> Result<UnderLease, NimbusError> {
        let terms = crate::transport::LeaseTerms {
            queue: queue.clone(),
            duration: lease.duration(),
            leased_by: endpoint.config.identity.instance.clone(),
        };
        let held = tx.hold_under_lease(row, &terms).await?;
        Counters::add(&endpoint.counters.leases_taken, 1);
        ::metrics::counter!("nimbus_leases_taken_total", "queue" => queue.to_string(), "message_type" => incoming.type_name.clone()).increment(1);
        tracing::debug!(queue = %queue, id = %incoming.message_id, lease = ?lease.duration(), "handling a message under a lease");
        let renewal = lease::Renewal::start(
            held.clone(),
            lease,
            queue.to_string(),
            incoming.message_id.clone(),
            endpoint.counters.clone(),
        );
        Ok(UnderLease { held, renewal })
    }
}

/// The transaction in which what became of the message is committed: the receive's own, or,
/// under a lease, a new one that ends the lease. `Err` with the outcome when there is none: the
/// lease was taken back (what the handlers sent is discarded), or the database failed.
async fn finishing_transaction(
    endpoint: &EndpointState,
    queue: &QueueName,
    type_name: &str,
    tx: Option<Box<dyn ReceiveTransaction>>,
    leased: Option<UnderLease>,
) -> Result<Box<dyn ReceiveTransaction>, Outcome> {
    let Some(UnderLease { held, renewal }) = leased else {
        return tx.ok_or_else(transaction_lost);
    };
    // Renewed until the lease is ended: a slow end must not let it run out.
    let ended = held.end().await;
    let renewal_lost = renewal.lost();
    drop(renewal);
    match ended {
        Ok(Some(tx)) => Ok(tx),
        Ok(None) => {
            Counters::add(&endpoint.counters.leases_lost, 1);
            ::metrics::counter!("nimbus_leases_lost_total", "queue" => queue.to_string(), "message_type" => type_name.to_string()).increment(1);
            tracing::warn!(queue = %queue, message_type = type_name, seen_by_renewal = renewal_lost, "the handler finished after its lease had been taken back: what it sent was discarded, and the message is handled again (or was dead-lettered); make the lease longer than the longest stall of this process, or check why renewals failed");
            Err(Outcome::LeaseLost)
        }
        Err(e) => {
            tracing::warn!(queue = %queue, message_type = type_name, error = %e, "ending a lease failed: the message stays leased until the lease runs out, then it is retried");
            Err(Outcome::Infrastructure(e))
        }
    }
}

/// The handler context gave no transaction back. It never lets it go, so this cannot happen;
/// if it did, the dropped transaction has rolled back and the message waits in its queue.
fn transaction_lost() -> Outcome {
    Outcome::Infrastructure(NimbusError::NotRunning(
        "the receive's transaction was lost while the handler ran; it was rolled back and the \
         message stays in its queue"
            .into(),
    ))
}

/// The correlation id of a reply (`NServiceBus.MessageIntent` = `Reply`), which names the
/// request it answers.
fn reply_correlation(incoming: &Incoming) -> Option<&str> {
    let intent = incoming.headers.get(crate::headers::MESSAGE_INTENT)?;
    (intent == "Reply")
        .then(|| incoming.headers.get(crate::headers::CORRELATION_ID))
        .flatten()
}

/// Counts the failed attempt in the message's headers and, in the receive's transaction, puts it
/// back (at once or delayed) or moves it to the dead letters.
async fn fail(
    endpoint: &EndpointState,
    queue: &QueueName,
    tx: Box<dyn ReceiveTransaction>,
    row: &ReceivedMessage,
    incoming: Option<&Incoming>,
    failure: Failure,
) -> Outcome {
    let mut tx = tx;
    // What the handler's own statements did goes with the failed attempt.
    if let Err(e) = tx.undo_handler_work().await {
        return Outcome::Infrastructure(e);
    }
    let failures = incoming
        .map_or(0, |i| failures_so_far(&i.headers))
        .saturating_add(1);
    let (reason, recovery, panicked, error_type) = match failure {
        Failure::BadInput(reason) => (reason, Recovery::DeadLetter, false, "bad_input"),
        Failure::Handler {
            reason,
            panicked,
            error_type,
        } => (
            reason,
            endpoint.config.retry.decide(failures),
            panicked,
            error_type,
        ),
    };
    let message_type = incoming.map_or_else(|| "unknown".to_string(), |i| i.type_name.clone());
    // The attempt counts as failed once what it led to (a retry copy, a dead letter) commits.
    let count_failed = {
        let (counters, queue, message_type) = (
            endpoint.counters.clone(),
            queue.clone(),
            message_type.clone(),
        );
        move || {
            Counters::add(&counters.failed, 1);
            counters.monitor.failed(queue.as_str());
            metrics::count(
                "nimbus_messages_failed_total",
                queue.as_str(),
                &message_type,
            );
        }
    };
    let (counters, queue_name) = (endpoint.counters.clone(), queue.clone());
    let group = row.group.as_ref().map(|g| g.key.clone());
    // A failed message of a group keeps its place, so its group waits for it: said once per
    // failed attempt, in the log and a metric, as soon as the retry commits.
    let held = {
        let (queue, group) = (queue.clone(), group.clone());
        move |retry: &str| {
            if let Some(group) = &group {
                metrics::count_group_held(queue.as_str());
                tracing::warn!(queue = %queue, group = %group, retry, "the message's group waits for its retry: the messages after it in the group are not handled until it succeeds or is dead-lettered");
            }
        }
    };
    let result = match (recovery, incoming) {
        (Recovery::Immediate, Some(incoming)) => {
            let retry = retry_copy(row, incoming.headers.all(), queue, failures, None);
            let reason = reason.clone();
            tx.commit(vec![retry]).await.inspect(|()| {
                after_commit(move || {
                    count_failed();
                    held("immediate");
                    Counters::add(&counters.immediate_retries, 1);
                    metrics::count_retry(queue_name.as_str(), &message_type, "immediate");
                    counters.monitor.retried(queue_name.as_str());
                    tracing::warn!(queue = %queue_name, attempt = failures, %reason, "handler failed; retrying at once");
                })
            })
        }
        (Recovery::Delayed { retry, delay }, Some(incoming)) => {
            let copy = retry_copy(
                row,
                incoming.headers.all(),
                queue,
                failures,
                Some((retry, delay)),
            );
            let reason = reason.clone();
            tx.commit(vec![copy]).await.inspect(|()| {
                after_commit(move || {
                    count_failed();
                    held("delayed");
                    Counters::add(&counters.delayed_retries, 1);
                    metrics::count_retry(queue_name.as_str(), &message_type, "delayed");
                    counters.monitor.retried(queue_name.as_str());
                    tracing::warn!(queue = %queue_name, attempt = failures, ?delay, %reason, "handler failed; retrying later");
                })
            })
        }
        // Dead letter, or a retry of a message whose headers cannot be written back.
        _ => {
            let letter = dead_letter(
                row,
                incoming.map(|i| i.headers.all()),
                queue,
                &reason,
                failures,
            );
            let (id, attempts) = (letter.message_id, letter.delivery_attempts);
            match endpoint
                .dead_letterer
                .send(MoveToDeadLetters { tx, letter })
                .await
            {
                Ok(result) => result.inspect(|()| {
                    let reason = reason.clone();
                    after_commit(move || {
                        count_failed();
                        Counters::add(&counters.dead_lettered, 1);
                        counters.monitor.dead_lettered(queue_name.as_str());
                        metrics::count(
                            "nimbus_messages_dead_lettered_total",
                            queue_name.as_str(),
                            &message_type,
                        );
                        tracing::error!(queue = %queue_name, %id, attempts, %reason, "moved a message to NimbusDeadLetters");
                        if let Some(group) = &group {
                            tracing::warn!(queue = %queue_name, group = %group, %id, "the dead-lettered message's group goes on without it: the next message of the group is handled now (a replay puts it at the end of the group)");
                        }
                    })
                }),
                Err(e) => Err(NimbusError::NotRunning(format!(
                    "the dead-letter actor is gone ({e}); the message stays in its queue"
                ))),
            }
        }
    };
    match result {
        Ok(()) => Outcome::Failed {
            reason,
            recovery,
            panicked,
            error_type,
        },
        Err(e) => Outcome::Infrastructure(e),
    }
}

/// Puts a message over its limit `limited` back to wait (see [`limits`]), committing `tx`: the
/// message is written again under its id, to be received after [`limits::hold_for`], with the
/// limit and its holds so far in its headers; no attempt is counted.
async fn hold(
    endpoint: &EndpointState,
    queue: &QueueName,
    tx: Box<dyn ReceiveTransaction>,
    row: &ReceivedMessage,
    incoming: &Incoming,
    limited: &limits::Scoped,
    ready_in: Option<std::time::Duration>,
) -> Outcome {
    let holds = incoming
        .headers
        .get(crate::headers::LIMIT_HOLDS)
        .and_then(|h| h.parse::<u32>().ok())
        .unwrap_or(0)
        .saturating_add(1);
    let wait = limits::hold_for(holds, ready_in);
    let mut headers = incoming.headers.all().clone();
    headers.insert(crate::headers::LIMIT_HELD_BY.into(), limited.scope.clone());
    headers.insert(crate::headers::LIMIT_HOLDS.into(), holds.to_string());
    // A map of strings always serializes; the original text is the fallback.
    let headers_json = serde_json::to_string(&headers).unwrap_or_else(|_| row.headers_json.clone());
    let delivery = Delivery::AfterMs(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
    let priority = crate::envelope::priority_in(&headers);
    let copy = written_again(row, queue, headers_json, delivery, priority);
    match tx.commit(vec![copy]).await {
        Ok(()) => {
            let say_full = endpoint.config.limits.say_full(&limited.scope);
            let (queue, type_name, scope, limit, id) = (
                queue.clone(),
                incoming.type_name.clone(),
                limited.scope.clone(),
                limited.limit,
                incoming.message_id.clone(),
            );
            let transport = endpoint.transport.clone();
            endpoint.holds_due.note(std::time::Instant::now() + wait);
            after_commit(move || {
                metrics::count_limit_held(queue.as_str(), &type_name, limit.kind_name());
                let counted = scope.clone();
                tokio::spawn(async move {
                    // Only what operators see: the hold itself has committed.
                    if let Err(e) = transport.count_limit_held(&counted).await {
                        tracing::debug!(limit = %counted, error = %e, "a held message was not counted in NimbusLimits");
                    }
                });
                if say_full {
                    tracing::info!(queue = %queue, limit = %scope, terms = %limit, "a limit is full: its messages wait in the queue until a slot is free (counted in nimbus_messages_held_total; said again after a quiet minute)");
                }
                tracing::debug!(queue = %queue, limit = %scope, %id, holds, ?wait, "a message waits for its limit");
            });
            Outcome::Held
        }
        Err(e) => Outcome::Infrastructure(e),
    }
}

/// Adds the slots `limited` lacks, once the transaction that found them missing has ended (see
/// [`LimitTaken::Missing`]): the message it held back finds them when it comes back.
fn add_limit_slots(endpoint: &EndpointState, limited: &limits::Scoped) {
    let (transport, scope, slots) = (
        endpoint.transport.clone(),
        limited.scope.clone(),
        limited.limit.slots(),
    );
    after_commit(move || {
        tokio::spawn(async move {
            match transport.add_limit_slots(&scope, slots).await {
                Ok(()) => tracing::debug!(limit = %scope, slots, "added the slots of a limit"),
                // The held message finds them missing again, and the next try adds them.
                Err(e) => {
                    tracing::warn!(limit = %scope, error = %e, "adding the slots of a limit failed; its messages wait and the next of them tries again")
                }
            }
        });
    });
}

/// The message again, with its failed attempts (and delayed retries) counted in its headers, for
/// the same queue: at once, or after `delayed`'s delay.
fn retry_copy(
    row: &ReceivedMessage,
    headers: &Headers,
    queue: &QueueName,
    failures: u32,
    delayed: Option<(u32, std::time::Duration)>,
) -> OutgoingMessage {
    let mut headers = headers.clone();
    headers.insert(FAILED_ATTEMPTS.into(), failures.to_string());
    let delivery = match delayed {
        None => Delivery::Immediate,
        Some((retry, delay)) => {
            headers.insert(DELAYED_RETRIES.into(), retry.to_string());
            Delivery::AfterMs(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
        }
    };
    // A map of strings always serializes; the original text is the fallback.
    let headers_json = serde_json::to_string(&headers).unwrap_or_else(|_| row.headers_json.clone());
    let priority = crate::envelope::priority_in(&headers);
    written_again(row, queue, headers_json, delivery, priority)
}

/// A received message written again to `queue` (a retry, or a message handed back), under its
/// id, with `headers_json`, its body, columns and expiry, visible as `delivery` says, at
/// `priority` (its header's, for a prioritized message).
fn written_again(
    row: &ReceivedMessage,
    queue: &QueueName,
    headers_json: String,
    delivery: Delivery,
    priority: Option<i16>,
) -> OutgoingMessage {
    OutgoingMessage {
        destination: Destination::Queue(queue.clone()),
        id: Uuid::parse_str(&row.row_id).unwrap_or_else(|_| Uuid::new_v4()),
        headers_json,
        body: row.body.clone(),
        correlation_id: row.correlation_id.clone(),
        reply_to_address: row.reply_to_address.clone(),
        time_to_be_received_ms: None,
        expires_at: row.expires,
        delivery,
        // A copy written again keeps the place of the message it stands in for.
        group: row.group.clone(),
        priority,
        // A body stored apart stays where it is: the headers name it.
        stored_apart: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_batch_receive_is_healthy_and_a_failure_is_not() {
        assert!(BatchRun::nothing(Outcome::Empty).healthy());
        let handled = |failures| BatchRun {
            outcome: Outcome::Handled,
            taken: 3,
            failures,
        };
        assert!(handled(0).healthy());
        assert!(!handled(1).healthy(), "a failed attempt in the batch");
        let lost = NimbusError::Config {
            problem: "the connection dropped".into(),
            fix: "none".into(),
        };
        assert!(!BatchRun::nothing(Outcome::Infrastructure(lost)).healthy());
    }

    #[derive(Debug)]
    struct Server(&'static str);
    impl std::fmt::Display for Server {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Server {}

    fn failed_with(code: &str) -> NimbusError {
        let error = crate::driver::DriverError::new(
            Some(code.to_string()),
            crate::FailureKind::Transient,
            Server("the server's message"),
        );
        NimbusError::database("postgres", "handling a batch", error)
    }

    #[test]
    fn a_batch_that_waited_on_a_row_past_its_bound_gave_way_and_an_outage_did_not() {
        let queue = QueueName::new("Orders").expect("a valid name");
        for code in ["55P03", "1222", "40P01", "1205"] {
            assert!(
                matches!(
                    batch_rolled_back(&queue, 4, failed_with(code)),
                    Outcome::Conflict(_)
                ),
                "{code}"
            );
        }
        assert!(matches!(
            batch_rolled_back(&queue, 4, failed_with("08006")),
            Outcome::Infrastructure(_)
        ));
        // One message alone is not held to the bound: its lock timeout is a database failure.
        assert!(matches!(
            Outcome::of_database(failed_with("55P03")),
            Outcome::Infrastructure(_)
        ));
    }
}
