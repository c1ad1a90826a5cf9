//! The queue supervisor: owns the peek and receive modes of one queue.
//!
//! It keeps every free slot busy: a receive is handed out whenever a receiver of the queue is
//! idle, the endpoint has a free slot (its concurrency limit spans all of its queues) and the
//! last estimate says messages wait; it peeks again as soon as the estimate runs out and a
//! receive has taken its message (not when its handler ends: slow handlers may still be
//! running), and at once when a send wakes the queue. A receive that used up the estimate with
//! nothing else of its queue running is followed by another receive instead of a peek.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::expiry_purger::expiry_purger;
use super::lease_reclaimer::lease_reclaimer;
use super::peeker::{Peek, Peeker};
use super::periodic::Periodic;
use super::receiver::{ReceiveRun, Receiver, Run};
use super::Shutdown;
use crate::error::NimbusError;
use crate::names::QueueName;
use crate::pipeline::batch_size::BatchSizer;
use crate::pipeline::{EndpointState, Outcome};
use crate::recoverability::Recovery;

/// The most receives one run of a receiver makes before it reports back (see [`ReceiveRun`]):
/// enough that the hop between the bus's thread and a handler thread is paid once per many
/// messages under load, few enough that the endpoint's other queues get their turn at its slots.
const MAX_RUN: i64 = 32;

/// The longest wait between attempts while the database is failing.
const MAX_ERROR_BACKOFF: Duration = Duration::from_secs(30);

/// The longest wait between two looks of an idle queue that polls (see
/// [`QueueSupervisor::idle_delay`]).
const MAX_IDLE_POLL: Duration = Duration::from_secs(1);

/// `wait` give or take a quarter, at random, so that the receivers of many instances that
/// failed together do not all come back to the database at the same moment.
fn jittered(wait: Duration) -> Duration {
    wait.mul_f64(0.75 + crate::pipeline::random_fraction() / 2.0)
}

/// Supervises the peeker and receivers of one queue and decides, after every peek, every
/// receive and every wake-up, what happens next.
pub(crate) struct QueueSupervisor {
    endpoint: Arc<EndpointState>,
    queue: QueueName,
    peeker: Option<Addr<Peeker>>,
    purger: Option<Addr<Periodic>>,
    /// Takes back the queue's expired leases, when the endpoint has leases.
    reclaimer: Option<Addr<Periodic>>,
    receivers: Vec<Addr<Receiver>>,
    idle: Vec<usize>,
    in_flight: usize,
    /// Receives still to hand out from the last peek's estimate.
    remaining: i64,
    /// How many messages the queue's receivers take in their next receives.
    sizer: BatchSizer,
    /// A peek waits for its timer.
    peek_timer: Option<SpawnHandle>,
    /// A peek is running.
    peeking: bool,
    /// When the last peek started: idle looks keep their cadence from one start to the next.
    peek_started: Instant,
    /// A wake-up came while a peek was running: that peek may have missed the message.
    woken_while_peeking: bool,
    /// Looks in a row that found the queue empty, where idle queues poll: each doubles the
    /// wait before the next (see [`QueueSupervisor::idle_delay`]).
    empty_looks: u32,
    /// A wake-up came while every receiver was busy or receives were still to hand out: the
    /// next receive that ends looks again at once, whatever it found.
    woken_while_busy: bool,
    /// Waiting for one of the endpoint's slots to free up.
    waiting_for_slot: bool,
    consecutive_errors: u32,
    /// When `consecutive_errors` last grew: receives failing together count once.
    last_counted_failure: Option<Instant>,
    /// When the database started failing, for the critical-error callback.
    failing_since: Option<Instant>,
    critical_raised: bool,
    /// Where `Bus::health` reads what this supervisor last saw of the database.
    health: Arc<crate::pipeline::health::QueueHealthCell>,
    stopping: bool,
    drained: Vec<oneshot::Sender<()>>,
}

impl QueueSupervisor {
    pub fn new(endpoint: Arc<EndpointState>, queue: QueueName) -> Self {
        let mut sizer = BatchSizer::new(endpoint.config.receive_batch);
        // Where transactions run side by side; a single writer (SQLite) runs one batch at a
        // time, which may as well take as many groups as it finds.
        let transport = &endpoint.transport;
        if transport.keeps_groups(&queue) && !transport.single_writer() {
            sizer = sizer.for_ordered_groups();
        }
        let health = endpoint.health.cell(queue.as_str());
        QueueSupervisor {
            health,
            endpoint,
            queue,
            peeker: None,
            purger: None,
            reclaimer: None,
            receivers: Vec::new(),
            idle: Vec::new(),
            in_flight: 0,
            remaining: 0,
            sizer,
            peek_timer: None,
            peeking: false,
            peek_started: Instant::now(),
            woken_while_peeking: false,
            empty_looks: 0,
            woken_while_busy: false,
            waiting_for_slot: false,
            consecutive_errors: 0,
            last_counted_failure: None,
            failing_since: None,
            critical_raised: false,
            stopping: false,
            drained: Vec::new(),
        }
    }

    /// Peeks now, unless a peek is already running; a pending timer is cancelled.
    fn peek(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.peek_timer.take() {
            ctx.cancel_future(timer);
        }
        if self.stopping || self.peeking {
            return;
        }
        let Some(peeker) = self.peeker.clone() else {
            return;
        };
        self.peeking = true;
        self.peek_started = Instant::now();
        // This peek sees every message committed before it: earlier wake-ups are answered.
        self.woken_while_busy = false;
        ctx.spawn(
            peeker
                .send(Peek)
                .into_actor(self)
                .map(|result, act, ctx| act.on_peek(result, ctx)),
        );
    }

    /// Peeks after `delay`, unless a peek is already running or due sooner.
    fn peek_later(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        if self.stopping || self.peeking || self.peek_timer.is_some() {
            return;
        }
        self.peek_timer = Some(ctx.run_later(delay, |act, ctx| {
            act.peek_timer = None;
            act.peek(ctx);
        }));
    }

    /// A message for this queue committed (in this process, or announced by the database).
    /// While receives are still to hand out, or every receiver is busy, a peek would tell the
    /// supervisor nothing it can act on (and under a steady stream of sends from this process
    /// it peeked once per send): the next receive that ends looks again instead.
    fn on_wake(&mut self, ctx: &mut Context<Self>) {
        // A paused queue's peeks keep their timer: sends into it wake nobody.
        if self.stopping || self.paused() {
            return;
        }
        self.empty_looks = 0;
        if self.peeking {
            self.woken_while_peeking = true;
        } else if self.remaining > 0 || self.idle.is_empty() {
            self.woken_while_busy = true;
        } else {
            self.peek(ctx);
        }
    }

    /// Waits for the queue's wake-ups for as long as the supervisor runs.
    fn listen(&self, ctx: &mut Context<Self>) {
        let signal =
            crate::transport::wakeups::subscribe(&self.endpoint.transport.wake_key(&self.queue));
        ctx.spawn(
            async move {
                signal.notified().await;
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.on_wake(ctx);
                act.listen(ctx);
            }),
        );
    }

    /// Starts receiver `index` under an actix supervisor (restarted when it stops itself) on
    /// its handler thread, where its connections and its handlers' actors live too (on this
    /// thread with one handler thread).
    fn start_receiver(&self, index: usize) -> Addr<Receiver> {
        let (endpoint, queue) = (self.endpoint.clone(), self.queue.clone());
        let sizer = self.sizer.clone();
        let make = move |_: &mut Context<Receiver>| Receiver::new(endpoint, queue, index, sizer);
        match self.endpoint.dispatcher.receiver_home(index) {
            Some((_, arbiter)) => Supervisor::start_in_arbiter(&arbiter, make),
            None => Supervisor::start(make),
        }
    }

    /// The database answered: the outage, if there was one, is over.
    fn database_ok(&mut self) {
        self.health.ok();
        self.consecutive_errors = 0;
        self.last_counted_failure = None;
        if self.critical_raised {
            tracing::info!(queue = %self.queue, "the database is reachable again");
        }
        self.failing_since = None;
        self.critical_raised = false;
    }

    /// The database failed: back off, and raise the critical error once the outage has lasted
    /// longer than configured.
    fn database_failed(&mut self, error: &NimbusError) {
        // The back-off doubles per retry, not per receive: the receives in flight when the
        // database went away all fail at about the same time, and counting each would jump
        // straight to the longest wait, delaying recovery by up to 30 s after it returns.
        let now = Instant::now();
        let half_a_wait = self.error_backoff() / 2;
        if self
            .last_counted_failure
            .is_none_or(|at| now.duration_since(at) >= half_a_wait)
        {
            self.consecutive_errors += 1;
            self.last_counted_failure = Some(now);
        }
        // A call that ran past its deadline waited that long for an answer that never came:
        // the outage began when it was sent, not when it gave up.
        let began = error
            .waited_for_database()
            .and_then(|waited| now.checked_sub(waited))
            .unwrap_or(now);
        let since = *self.failing_since.get_or_insert(began);
        let limit = self.endpoint.config.critical_error_after;
        if !self.critical_raised && since.elapsed() >= limit {
            self.critical_raised = true;
            tracing::error!(queue = %self.queue, error = %error, outage = ?since.elapsed(), "critical error: the database has been failing longer than {limit:?}");
            if let Some(callback) = &self.endpoint.config.on_critical_error {
                callback(error);
            }
        }
        self.health
            .failed(&error.to_string(), self.critical_raised, since);
    }

    /// The wait after `consecutive_errors` failures in a row: the peek delay, doubled each time,
    /// at most 30 s.
    fn error_backoff(&self) -> Duration {
        let base = self.endpoint.config.peek_delay;
        let factor = 2u32.saturating_pow(self.consecutive_errors.saturating_sub(1).min(16));
        jittered(base.saturating_mul(factor).min(MAX_ERROR_BACKOFF))
    }

    fn on_peek(
        &mut self,
        result: Result<crate::error::Result<i64>, MailboxError>,
        ctx: &mut Context<Self>,
    ) {
        self.peeking = false;
        let woken = std::mem::take(&mut self.woken_while_peeking);
        if self.stopping {
            return;
        }
        match result {
            Ok(Ok(estimate)) => {
                self.database_ok();
                self.set_depth(estimate);
                if self.paused() {
                    // Its depth stays current; its messages wait until it is resumed (which
                    // wakes this supervisor).
                    self.remaining = 0;
                    self.peek_later(self.endpoint.config.peek_delay, ctx);
                    return;
                }
                let waiting = self.waiting(estimate);
                if waiting > 0 || woken {
                    self.empty_looks = 0;
                }
                if waiting > 0 {
                    self.remaining = waiting;
                    self.dispatch(ctx);
                } else if woken && self.idle.is_empty() {
                    // The next receive that ends looks again.
                    self.woken_while_busy = true;
                } else if woken {
                    self.peek(ctx);
                } else {
                    // Nothing new: peek again after the delay; sooner when a receive ends or a
                    // send wakes the queue. Where the database cannot announce other
                    // processes' sends (SQL Server), the process's watch of its idle queues
                    // wakes it.
                    if !self.endpoint.config.idle_poll.is_zero() {
                        self.endpoint.transport.watch(&self.queue);
                    }
                    let next = self.until_next_look();
                    self.empty_looks = self.empty_looks.saturating_add(1);
                    self.peek_later(next, ctx);
                }
            }
            Ok(Err(e)) => {
                self.database_failed(&e);
                let wait = self.error_backoff();
                tracing::warn!(queue = %self.queue, error = %e, retry_in = ?wait, "peek failed");
                self.peek_later(wait, ctx);
            }
            Err(e) => {
                self.consecutive_errors += 1;
                tracing::warn!(queue = %self.queue, error = %e, "peek actor unavailable");
                self.peek_later(self.error_backoff(), ctx);
            }
        }
    }

    /// How many of the `estimate` a peek found wait for a receiver. Where the peek counts the
    /// rows that receives in progress hold (SQLite), this supervisor's are taken off; elsewhere
    /// the peek already skipped them (and every other instance's).
    fn waiting(&self, estimate: i64) -> i64 {
        if !self.endpoint.transport.peek_counts_held_rows() {
            return estimate;
        }
        let in_flight = i64::try_from(self.in_flight).unwrap_or(i64::MAX);
        estimate.saturating_sub(in_flight.saturating_mul(self.batch()))
    }

    /// How long an idle queue waits before it looks again: the peek delay where another
    /// process's send wakes it (PostgreSQL, SQLite, SQL Server), else the idle poll (a
    /// PostgreSQL pooler without LISTEN), so that other processes' messages wait milliseconds,
    /// not up to the peek delay.
    ///
    /// Where idle queues poll, each look that finds nothing doubles the wait before the next, from the idle
    /// poll up to [`MAX_IDLE_POLL`] (or the peek delay, if shorter): a queue idle for a while
    /// costs about one statement a second, as a waiting peek does on SQL Server, instead of one
    /// per idle poll, which saturated a small server with a few dozen idle queues. A message
    /// found, or a send from this process, starts it again from the idle poll.
    fn idle_delay(&self) -> Duration {
        let config = &self.endpoint.config;
        if config.idle_poll.is_zero() || self.endpoint.transport.hears_other_processes() {
            config.peek_delay
        } else {
            let longest = config.peek_delay.min(MAX_IDLE_POLL).max(config.idle_poll);
            config
                .idle_poll
                .saturating_mul(2u32.saturating_pow(self.empty_looks.min(16)))
                .min(longest)
                .min(config.peek_delay)
        }
    }

    /// How long an idle queue waits before it looks again, counted from the start of the last
    /// look rather than its end, so that looks every 10 ms are 10 ms apart and not 10 ms plus a
    /// round trip; at least half the delay, so that a slow server is not asked back to back.
    fn until_next_look(&self) -> Duration {
        let delay = self.idle_delay();
        delay
            .saturating_sub(self.peek_started.elapsed())
            .max(delay / 2)
    }

    /// Whether an operator paused this queue (as last read, at most a peek delay ago).
    fn paused(&self) -> bool {
        self.endpoint.counters.is_paused(self.queue.as_str())
    }

    /// How many messages one receive takes: the fixed batch size, or what the receivers learned.
    fn batch(&self) -> i64 {
        i64::try_from(self.sizer.next()).unwrap_or(1)
    }

    fn set_depth(&self, estimate: i64) {
        self.endpoint
            .counters
            .set_depth(self.queue.as_str(), u64::try_from(estimate).unwrap_or(0));
    }

    /// Hands out receives to idle receivers while the estimate lasts and the endpoint has free
    /// slots; when the slots run out, waits for one.
    fn dispatch(&mut self, ctx: &mut Context<Self>) {
        if self.paused() {
            self.remaining = 0;
            return;
        }
        while self.remaining > 0 && !self.stopping && !self.idle.is_empty() {
            match self.endpoint.slots.clone().try_acquire_owned() {
                Ok(slot) => self.hand_out(slot, ctx),
                Err(_) => {
                    self.wait_for_slot(ctx);
                    break;
                }
            }
        }
    }

    /// Takes the idle receiver to hand the next run to: one on the handler thread with the
    /// fewest runs in flight among those not held by blocking code (any, if all are held).
    fn take_idle(&mut self) -> Option<usize> {
        let dispatcher = &self.endpoint.dispatcher;
        let home = |index: usize| dispatcher.receiver_home_index(index);
        let position = self
            .idle
            .iter()
            .enumerate()
            .filter(|(_, &index)| home(index).is_none_or(|t| dispatcher.is_responsive(t)))
            .min_by_key(|(_, &index)| home(index).map_or(0, |t| dispatcher.load(t)))
            .map(|(position, _)| position)
            .or_else(|| (!self.idle.is_empty()).then_some(self.idle.len() - 1))?;
        Some(self.idle.swap_remove(position))
    }

    /// Hands a run of receives to an idle receiver; the slot is held until the run ends. The
    /// run takes its share of the estimate among the idle receivers, at most [`MAX_RUN`].
    fn hand_out(&mut self, slot: OwnedSemaphorePermit, ctx: &mut Context<Self>) {
        let sharing = i64::try_from(self.idle.len()).unwrap_or(i64::MAX).max(1);
        let Some(index) = self.take_idle() else {
            return;
        };
        let batch = self.batch();
        let receives = (self.remaining + batch - 1) / batch;
        let credit = ((receives + sharing - 1) / sharing).clamp(1, MAX_RUN);
        self.remaining = self.remaining.saturating_sub(credit.saturating_mul(batch));
        self.in_flight += 1;
        let (taken, on_taken) = oneshot::channel();
        ctx.spawn(on_taken.into_actor(self).map(|told, act, ctx| {
            if told.is_ok() {
                act.on_taken(ctx);
            }
        }));
        let run = self.receivers[index].send(ReceiveRun {
            taken,
            credit: usize::try_from(credit).unwrap_or(1),
        });
        let endpoint = self.endpoint.clone();
        let watched = async move {
            match endpoint.dispatcher.receiver_home_index(index) {
                Some(thread) => {
                    let timeout = endpoint.config.handler_timeout;
                    endpoint.dispatcher.watched(thread, timeout, run).await
                }
                None => run.await,
            }
        };
        ctx.spawn(watched.into_actor(self).map(move |result, act, ctx| {
            drop(slot);
            act.on_received(index, credit, result, ctx)
        }));
    }

    /// A receive has taken its message(s) and its handlers start. When the estimate is spent
    /// and receivers are idle, look again now rather than when the handlers end: a slow handler
    /// must not hide the messages other processes write meanwhile (they wake nobody here).
    fn on_taken(&mut self, ctx: &mut Context<Self>) {
        if self.remaining <= 0 && !self.idle.is_empty() && !self.stopping {
            self.peek(ctx);
        }
    }

    /// Waits (fairly, behind the endpoint's other queues) for a slot, then hands out with it.
    fn wait_for_slot(&mut self, ctx: &mut Context<Self>) {
        if self.waiting_for_slot {
            return;
        }
        self.waiting_for_slot = true;
        let slots = self.endpoint.slots.clone();
        ctx.spawn(
            async move { slots.acquire_owned().await }
                .into_actor(self)
                .map(|slot, act, ctx| {
                    act.waiting_for_slot = false;
                    match slot {
                        Ok(slot) if act.remaining > 0 && !act.stopping && !act.idle.is_empty() => {
                            act.hand_out(slot, ctx);
                            act.dispatch(ctx);
                        }
                        // Nothing to do with it any more: it goes back.
                        Ok(_) | Err(_) => {}
                    }
                }),
        );
    }

    fn on_received(
        &mut self,
        index: usize,
        credit: i64,
        result: Result<Run, MailboxError>,
        ctx: &mut Context<Self>,
    ) {
        self.in_flight -= 1;
        self.idle.push(index);
        // What the run did not use goes back to the estimate (an empty queue zeroes it below).
        let result = result.map(|run| {
            let receives = i64::try_from(run.receives).unwrap_or(i64::MAX);
            let unused = credit.saturating_sub(receives).max(0);
            self.remaining = self
                .remaining
                .saturating_add(unused.saturating_mul(self.batch()));
            run.last
        });
        let mut failed_infrastructure = false;
        let mut found_nothing = false;
        match result {
            Ok(Outcome::Handled)
            | Ok(Outcome::Expired)
            | Ok(Outcome::Held)
            | Ok(Outcome::LeaseLost)
            | Ok(Outcome::HandedBack) => self.database_ok(),
            Ok(Outcome::Empty) => {
                self.database_ok();
                if !self.stopping {
                    // (A receive that gave up because the endpoint stops found nothing too.)
                    crate::pipeline::metrics::count_empty_receive(
                        &self.endpoint.counters,
                        self.queue.as_str(),
                    );
                }
                self.remaining = 0;
                found_nothing = true;
            }
            Ok(Outcome::Failed {
                reason,
                recovery,
                panicked,
                ..
            }) => {
                self.database_ok();
                if panicked {
                    // The attempt's own WARN (retrying, or dead-lettered) says what panicked.
                    tracing::debug!(queue = %self.queue, receiver = index, %reason, "restarting the receiver of a panicked handler");
                }
                if recovery == Recovery::Immediate {
                    // It went back to the end of the queue: receive it again.
                    self.remaining += 1;
                }
            }
            Ok(Outcome::Conflict(e)) => {
                // Not an outage: the database chose this transaction to give way to another.
                // Its messages are in the queue again; receive them again at once.
                self.database_ok();
                crate::pipeline::metrics::count_conflict(
                    &self.endpoint.counters,
                    self.queue.as_str(),
                );
                tracing::debug!(queue = %self.queue, error = %e, "a receive gave way to another transaction; receiving again");
                self.remaining = self.remaining.max(1);
            }
            Ok(Outcome::Infrastructure(e)) => {
                self.database_failed(&e);
                self.remaining = 0;
                failed_infrastructure = true;
                tracing::warn!(queue = %self.queue, error = %e, "receive failed; backing off");
            }
            Err(e) => {
                // The receiver actor is gone (its task died outside the handler's guard): start
                // a new one in its place and back off, rather than dispatching to the dead one
                // again at once.
                self.remaining = 0;
                self.consecutive_errors = self.consecutive_errors.saturating_add(1);
                failed_infrastructure = true;
                self.receivers[index] = self.start_receiver(index);
                tracing::warn!(queue = %self.queue, receiver = index, error = %e, retry_in = ?self.error_backoff(), "receiver died; started a new one");
            }
        }
        if self.stopping {
            if self.in_flight == 0 {
                self.drained.drain(..).for_each(|tx| {
                    let _ = tx.send(());
                });
            }
            return;
        }
        if self.remaining > 0 {
            self.dispatch(ctx);
        } else if failed_infrastructure {
            self.peek_later(self.error_backoff(), ctx);
        } else if found_nothing && !self.woken_while_busy {
            // Another receiver (here or elsewhere) got there first: the queue may be empty.
            self.peek_later(self.idle_delay(), ctx);
        } else if self.receives_instead_of_peeking() {
            self.receive_without_peeking(ctx);
        } else {
            // The estimate ran out while messages kept coming: look again, without waiting
            // for the slow handlers still running.
            self.peek(ctx);
        }
    }

    /// Whether the receive that just ended, having found messages all the way, is followed by
    /// another receive rather than by a peek: when nothing else of this queue runs (no receive,
    /// no peek), the queue is not paused, and the last peek is less than a peek delay old (so
    /// that the depth estimate stays that fresh while messages keep coming). The peek would
    /// only say whether to receive; receiving at once saves that round trip per message when
    /// messages arrive one by one, and a receive that finds nothing falls back to peeking.
    fn receives_instead_of_peeking(&self) -> bool {
        self.in_flight == 0
            && !self.peeking
            && !self.paused()
            && self.peek_started.elapsed() < self.endpoint.config.peek_delay
    }

    /// Hands out one receive as if a peek had found a message. It sees every message committed
    /// before it starts, as a peek would: earlier wake-ups are answered.
    fn receive_without_peeking(&mut self, ctx: &mut Context<Self>) {
        self.woken_while_busy = false;
        self.remaining = self.batch();
        self.dispatch(ctx);
    }
}

impl Actor for QueueSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if super::started_without_a_runtime() {
            ctx.stop();
            return;
        }
        let (endpoint, queue) = (self.endpoint.clone(), self.queue.clone());
        self.peeker = Some(Supervisor::start(move |_| Peeker::new(endpoint, queue)));
        self.purger = Some(expiry_purger(self.endpoint.clone(), self.queue.clone()).start());
        self.reclaimer =
            lease_reclaimer(self.endpoint.clone(), self.queue.clone()).map(Actor::start);
        for index in 0..self.endpoint.config.concurrency {
            let receiver = self.start_receiver(index);
            self.receivers.push(receiver);
            self.idle.push(index);
        }
        tracing::info!(queue = %self.queue, receivers = self.receivers.len(), handler_threads = self.endpoint.dispatcher.threads(), "receiving");
        self.listen(ctx);
        self.peek(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        for timer in [self.purger.take(), self.reclaimer.take()]
            .into_iter()
            .flatten()
        {
            timer.do_send(Shutdown);
        }
    }
}

/// Stops handing out receives and resolves when every receive in flight has finished; then the
/// supervisor stops.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Drain;

impl Handler<Drain> for QueueSupervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Drain, ctx: &mut Self::Context) -> Self::Result {
        self.stopping = true;
        self.remaining = 0;
        if let Some(timer) = self.peek_timer.take() {
            ctx.cancel_future(timer);
        }
        let (tx, rx) = oneshot::channel();
        if self.in_flight == 0 {
            let _ = tx.send(());
        } else {
            self.drained.push(tx);
        }
        Box::pin(
            async move {
                let _ = rx.await;
            }
            .into_actor(self)
            .map(|(), _act, ctx| ctx.stop()),
        )
    }
}
