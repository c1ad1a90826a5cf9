//! Counters of an endpoint, readable at any time with [`crate::Bus::metrics`].

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub handled: AtomicU64,
    pub failed: AtomicU64,
    pub immediate_retries: AtomicU64,
    pub delayed_retries: AtomicU64,
    pub dead_lettered: AtomicU64,
    pub expired_discarded: AtomicU64,
    pub expired_purged: AtomicU64,
    pub delayed_delivered: AtomicU64,
    pub queue_depth: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Metrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Metrics {
            handled: get(&self.handled),
            failed: get(&self.failed),
            immediate_retries: get(&self.immediate_retries),
            delayed_retries: get(&self.delayed_retries),
            dead_lettered: get(&self.dead_lettered),
            expired_discarded: get(&self.expired_discarded),
            expired_purged: get(&self.expired_purged),
            delayed_delivered: get(&self.delayed_delivered),
            queue_depth: get(&self.queue_depth),
        }
    }
}

/// A snapshot of an endpoint's counters since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Messages handled and committed.
    pub handled: u64,
    /// Failed attempts (handler errors, panics, timeouts, bad input).
    pub failed: u64,
    /// Messages put back in their queue after a failure.
    pub immediate_retries: u64,
    /// Messages put back with a delay after a failure.
    pub delayed_retries: u64,
    /// Messages moved to `NimbusDeadLetters`.
    pub dead_lettered: u64,
    /// Expired messages deleted when received, without being handled.
    pub expired_discarded: u64,
    /// Expired messages deleted by the purger.
    pub expired_purged: u64,
    /// Delayed messages this endpoint moved into their queues when due.
    pub delayed_delivered: u64,
    /// The input queue's depth estimate at the last peek.
    pub queue_depth: u64,
}
