//! How many messages a receiver takes in its next transaction.
//!
//! An endpoint left at its default takes one message per transaction while its queue is
//! shallow or its handlers are slow, and more at once when a backlog of fast messages builds
//! up: one receive statement and one commit then serve several messages, which is what lifts
//! a busy queue's throughput (the database's work per statement, not per row, is what bounds
//! it). The size grows only while a whole transaction stays within [`ADAPTIVE_BUDGET`], so a
//! message taken ahead of others waits about that long for them at most.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most messages one adaptive receive takes.
pub const ADAPTIVE_MAX: usize = 32;

/// The most messages one adaptive receive takes from a queue that keeps ordered groups. A
/// batch holds one message of each group it took until it commits, and no other receiver can
/// take the next of those groups meanwhile: smaller batches leave more groups to the other
/// receivers (measured with `nimbus bench --groups`, 100 groups and 16 receivers on
/// PostgreSQL: 4 gave about twice the rate of 32). Not on a database with one writer
/// (SQLite), whose batches run one at a time anyway.
pub const GROUPED_ADAPTIVE_MAX: usize = 4;

/// How long one adaptive batch's transaction may take: the size grows only after one that took
/// less, and shrinks to what fits after one that took more.
pub const ADAPTIVE_BUDGET: Duration = Duration::from_millis(10);

/// How long a statement of an adaptive batch (a handler's own included) may wait for a row
/// lock before the batch gives way (PostgreSQL's `lock_timeout`, for the batch's transaction
/// alone): handlers that update the same few rows lock them in different orders within
/// batches, which deadlock, and PostgreSQL looks for deadlocks only after `deadlock_timeout`
/// (1 s). One message per transaction waits as long as it takes.
pub const BATCH_LOCK_WAIT: Duration = Duration::from_millis(5);

/// How long a queue's receives take one message per transaction after a batch of them gave
/// way to another transaction (a deadlock, a serialization failure): handlers that update the
/// same few rows lock them in different orders within a batch, and one at a time they cannot.
pub const CONFLICT_HOLD: Duration = Duration::from_secs(10);

/// The longest such hold: each batch conflict soon after a hold ended doubles it up to this.
pub const MAX_CONFLICT_HOLD: Duration = Duration::from_secs(320);

/// The queues whose handlers ran statements of their own (or a saga's) in the receive's
/// transaction on SQL Server. Their adaptive receives take one message per transaction: such
/// handlers take row locks there, and several messages in one transaction take them in orders
/// that deadlock with other receivers' (a few hot rows made batches 2–6 times slower than one
/// at a time), which SQL Server's lock monitor finds only every few seconds, and a batch's wait
/// for a lock cannot be bounded for its transaction alone. PostgreSQL's batches bound it
/// instead ([`BATCH_LOCK_WAIT`]); SQLite's never wait on rows. A fixed
/// [`receive_batch`](crate::BusBuilder::receive_batch) batches them anyway.
#[derive(Debug, Default)]
pub(crate) struct OwnStatements(Mutex<std::collections::BTreeSet<String>>);

impl OwnStatements {
    /// Notes that a handler of `queue` ran statements of its own; said once per queue.
    pub fn mark(&self, queue: &str) {
        let mut queues = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !queues.contains(queue) {
            queues.insert(queue.to_string());
            tracing::debug!(
                queue,
                "handlers of this queue run statements in the receive's transaction: its receives take one message per transaction (receive_batch(n) batches them anyway)"
            );
        }
    }

    /// Whether a handler of `queue` ran statements of its own.
    pub fn seen(&self, queue: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(queue)
    }
}

/// How an endpoint's receivers size their transactions (see
/// [`BusBuilder::receive_batch`](crate::BusBuilder::receive_batch)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReceiveBatching {
    /// Always up to this many messages per transaction (1: one at a time).
    Fixed(usize),
    /// One at a time, growing to [`ADAPTIVE_MAX`] under a backlog of fast messages.
    Adaptive,
}

/// A queue's size for its receivers' next receives, learned from their last ones. Clones share
/// it: every receiver of a queue learns into one size, so a backlog is found (and a slow
/// handler felt) by all of them at once.
#[derive(Clone, Debug)]
pub(crate) struct BatchSizer {
    batching: ReceiveBatching,
    next: Arc<AtomicUsize>,
    /// Set by batches that gave way to other transactions: one message per transaction until
    /// then.
    hold: Arc<Mutex<Hold>>,
    /// The queue's handlers run statements of their own: one message per transaction.
    single: Arc<std::sync::atomic::AtomicBool>,
    /// The most an adaptive size grows to.
    max: usize,
}

/// The current hold after batch conflicts, if any.
#[derive(Debug, Default)]
struct Hold {
    /// One message per transaction until this.
    until: Option<Instant>,
    /// The length of the last hold (doubling while conflicts come back).
    length: Duration,
}

impl BatchSizer {
    /// A queue's first size: the fixed one, or one message.
    pub fn new(batching: ReceiveBatching) -> Self {
        let next = match batching {
            ReceiveBatching::Fixed(n) => n.max(1),
            ReceiveBatching::Adaptive => 1,
        };
        BatchSizer {
            batching,
            next: Arc::new(AtomicUsize::new(next)),
            hold: Arc::default(),
            single: Arc::default(),
            max: ADAPTIVE_MAX,
        }
    }

    /// Caps an adaptive size at [`GROUPED_ADAPTIVE_MAX`]: the queue keeps ordered groups. A
    /// fixed size stays the application's choice.
    pub fn for_ordered_groups(mut self) -> Self {
        self.max = GROUPED_ADAPTIVE_MAX;
        self
    }

    /// The queue's handlers run statements of their own in the receive's transaction: an
    /// adaptive size stays at one message from now on (see [`OwnStatements`]).
    pub fn keep_single(&self) {
        if self.batching == ReceiveBatching::Adaptive {
            self.single.store(true, Ordering::Relaxed);
            self.next.store(1, Ordering::Relaxed);
        }
    }

    /// A receive that took `taken` messages gave way to another transaction. Where it took
    /// several, the queue's receives take one message per transaction for [`CONFLICT_HOLD`],
    /// doubled (up to [`MAX_CONFLICT_HOLD`]) when batches conflict again within ten holds of the
    /// last: batches grow back only where they stop colliding.
    pub fn gave_way(&self, taken: usize) {
        if self.batching != ReceiveBatching::Adaptive {
            return;
        }
        self.next.store(1, Ordering::Relaxed);
        if taken <= 1 {
            return;
        }
        let now = Instant::now();
        let mut hold = self.hold.lock().unwrap_or_else(|p| p.into_inner());
        let recent = hold
            .until
            .is_some_and(|until| now < until + hold.length * 10);
        hold.length = if recent {
            (hold.length * 2).clamp(CONFLICT_HOLD, MAX_CONFLICT_HOLD)
        } else {
            CONFLICT_HOLD
        };
        hold.until = Some(now + hold.length);
        tracing::debug!(
            messages = taken,
            hold = ?hold.length,
            "a batch gave way to another transaction: one message per transaction for a while"
        );
    }

    /// Whether a hold after batch conflicts keeps receives at one message.
    fn held(&self) -> bool {
        self.hold
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .until
            .is_some_and(|until| Instant::now() < until)
    }

    /// How many messages the next receive takes at most.
    pub fn next(&self) -> usize {
        self.next.load(Ordering::Relaxed).max(1)
    }

    /// Whether the next receive takes more than one message.
    pub fn batched(&self) -> bool {
        self.next() > 1
    }

    /// How long a batch's statements may wait for a row lock: [`BATCH_LOCK_WAIT`] for an
    /// adaptive size, which falls back to one message when its batches collide; a fixed size
    /// is the application's choice and waits as long as it takes.
    pub fn lock_wait(&self) -> Option<Duration> {
        match self.batching {
            ReceiveBatching::Adaptive => Some(BATCH_LOCK_WAIT),
            ReceiveBatching::Fixed(_) => None,
        }
    }

    /// Learns from a receive that took `taken` messages, whose transaction (receive, handlers,
    /// commit) took `elapsed`; `backlog` says whether more were waiting after it (a full batch,
    /// or the next message taken with the commit). `healthy` is false when a handler failed or
    /// the database did: the next receive takes one message.
    ///
    /// The size doubles (up to [`ADAPTIVE_MAX`]) after a transaction that found a backlog and
    /// took less than [`ADAPTIVE_BUDGET`]; after one that took longer, the next takes as many
    /// as would have fit in the budget at its pace (at least one). A receive that found one
    /// message alone halves it: a batch that finds the queue shallow costs no more than a
    /// single receive, so the size falls back to one only as the backlog stays away. A receive
    /// that found nothing changes nothing: other receivers took what it came for.
    pub fn learn(&self, taken: usize, elapsed: Duration, backlog: bool, healthy: bool) {
        if self.batching != ReceiveBatching::Adaptive {
            return;
        }
        // Receivers learning at the same time may overwrite each other's lesson: each is about
        // the same queue, and the next receive learns again.
        let size = self.next();
        let next = if !healthy || self.held() || self.single.load(Ordering::Relaxed) {
            1
        } else if taken == 0 {
            // Most often other receivers took what this one was sent for: no news of the
            // backlog.
            size
        } else if taken == 1 && !backlog {
            (size / 2).max(1)
        } else if elapsed > ADAPTIVE_BUDGET {
            let per_message = elapsed / u32::try_from(taken).unwrap_or(u32::MAX);
            let fit = ADAPTIVE_BUDGET.as_nanos() / per_message.as_nanos().max(1);
            usize::try_from(fit).unwrap_or(1).clamp(1, size)
        } else if backlog {
            (size * 2).min(self.max)
        } else {
            size
        };
        self.next.store(next, Ordering::Relaxed);
        tracing::trace!(
            taken,
            elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            backlog,
            next,
            "receive batch size"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_micros(100);

    fn grown() -> BatchSizer {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive);
        // Doubling from one reaches the cap in at most this many fast, full receives.
        for _ in 0..ADAPTIVE_MAX.ilog2() + 1 {
            let taken = sizer.next();
            sizer.learn(taken, FAST * u32::try_from(taken).unwrap(), true, true);
        }
        sizer
    }

    #[test]
    fn a_backlog_of_fast_messages_grows_the_batch_to_its_cap() {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive);
        assert_eq!(sizer.next(), 1);
        sizer.learn(1, FAST, true, true);
        assert_eq!(sizer.next(), 2);
        assert_eq!(grown().next(), ADAPTIVE_MAX);
    }

    #[test]
    fn a_queue_with_ordered_groups_grows_to_its_own_cap() {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive).for_ordered_groups();
        for _ in 0..ADAPTIVE_MAX.ilog2() + 1 {
            let taken = sizer.next();
            sizer.learn(taken, FAST * u32::try_from(taken).unwrap(), true, true);
        }
        assert_eq!(sizer.next(), GROUPED_ADAPTIVE_MAX);
        let fixed = BatchSizer::new(ReceiveBatching::Fixed(10)).for_ordered_groups();
        assert_eq!(fixed.next(), 10, "a fixed size is the application's choice");
    }

    #[test]
    fn a_slow_handler_brings_it_back_to_one() {
        let sizer = grown();
        sizer.learn(ADAPTIVE_MAX, Duration::from_millis(200), true, true);
        assert_eq!(sizer.next(), 1);
        // A message that alone takes longer than the budget never grows it.
        sizer.learn(1, Duration::from_millis(11), true, true);
        assert_eq!(sizer.next(), 1);
    }

    #[test]
    fn a_batch_over_the_budget_shrinks_to_what_fits() {
        let sizer = grown();
        // 2 ms a message: five fit in 10 ms.
        sizer.learn(10, Duration::from_millis(20), true, true);
        assert_eq!(sizer.next(), 5);
    }

    #[test]
    fn a_shallow_queue_keeps_the_size_a_lone_message_halves_it_and_a_failure_resets_it() {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive);
        sizer.learn(1, FAST, true, true);
        sizer.learn(2, FAST * 2, true, true);
        assert_eq!(sizer.next(), 4);
        sizer.learn(3, FAST * 3, false, true);
        assert_eq!(
            sizer.next(),
            4,
            "a partial batch costs no more than a full one"
        );
        sizer.learn(0, FAST, false, true);
        assert_eq!(sizer.next(), 4, "an empty receive tells nothing");
        sizer.learn(1, FAST, false, true);
        assert_eq!(sizer.next(), 2, "one message left: halved");
        sizer.learn(1, FAST, false, true);
        assert_eq!(sizer.next(), 1);
        sizer.learn(1, FAST, true, true);
        sizer.learn(2, FAST * 2, true, false);
        assert_eq!(sizer.next(), 1);
    }

    #[test]
    fn a_batch_that_gave_way_holds_one_message_per_transaction_for_a_while() {
        let sizer = grown();
        sizer.gave_way(ADAPTIVE_MAX);
        assert_eq!(sizer.next(), 1);
        // A backlog of fast messages does not grow it while the hold lasts.
        for _ in 0..10 {
            sizer.learn(1, FAST, true, true);
        }
        assert_eq!(sizer.next(), 1);
        assert_eq!(sizer.hold.lock().unwrap().length, CONFLICT_HOLD);
        // Another conflict soon after doubles the hold.
        sizer.gave_way(2);
        assert_eq!(sizer.hold.lock().unwrap().length, CONFLICT_HOLD * 2);
        // Once it is over, batches grow again.
        sizer.hold.lock().unwrap().until = Some(Instant::now() - Duration::from_millis(1));
        sizer.learn(1, FAST, true, true);
        assert_eq!(sizer.next(), 2);
        // A conflict of one message alone holds nothing: batches did not cause it.
        let single = BatchSizer::new(ReceiveBatching::Adaptive);
        single.gave_way(1);
        assert!(!single.held());
    }

    #[test]
    fn handlers_with_statements_of_their_own_keep_one_message_per_transaction() {
        let sizer = grown();
        sizer.keep_single();
        assert_eq!(sizer.next(), 1);
        for _ in 0..10 {
            sizer.learn(1, FAST, true, true);
        }
        assert_eq!(sizer.next(), 1);
        let fixed = BatchSizer::new(ReceiveBatching::Fixed(8));
        fixed.keep_single();
        assert_eq!(fixed.next(), 8, "a fixed size is the application's choice");
        let seen = OwnStatements::default();
        seen.mark("Orders");
        assert!(seen.seen("Orders") && !seen.seen("Billing"));
    }

    #[test]
    fn clones_learn_together() {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive);
        let other = sizer.clone();
        other.learn(1, FAST, true, true);
        assert_eq!(sizer.next(), 2);
    }

    #[test]
    fn no_backlog_never_grows_it() {
        let sizer = BatchSizer::new(ReceiveBatching::Adaptive);
        for _ in 0..10 {
            sizer.learn(1, FAST, false, true);
        }
        assert_eq!(sizer.next(), 1);
    }

    #[test]
    fn only_an_adaptive_size_bounds_its_lock_waits() {
        let adaptive = BatchSizer::new(ReceiveBatching::Adaptive);
        assert_eq!(adaptive.lock_wait(), Some(BATCH_LOCK_WAIT));
        let fixed = BatchSizer::new(ReceiveBatching::Fixed(10));
        assert_eq!(fixed.lock_wait(), None);
    }

    #[test]
    fn a_fixed_size_stays() {
        let sizer = BatchSizer::new(ReceiveBatching::Fixed(7));
        sizer.learn(0, Duration::from_secs(1), false, false);
        assert_eq!(sizer.next(), 7);
        let one = BatchSizer::new(ReceiveBatching::Fixed(1));
        one.learn(1, FAST, true, true);
        assert!(!one.batched());
    }
}
