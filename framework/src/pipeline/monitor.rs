//! What an endpoint collects for its monitoring reports between two of them: per queue, the
//! messages handled, failed, retried and dead-lettered, and the histograms of processing time
//! (the handlers' run) and critical time (from the sender's `TimeSent` to handled). The reporter
//! takes it all every `monitoring_interval` and writes it to `NimbusMonitoring`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::transport::monitoring::Timings;

/// One queue's events since the last report.
#[derive(Debug, Default, Clone)]
pub(crate) struct QueuePeriod {
    pub handled: u64,
    pub failed: u64,
    pub retried: u64,
    pub dead_lettered: u64,
    pub processing: Timings,
    pub critical: Timings,
}

/// The events of every queue since the last report.
#[derive(Debug, Default)]
pub(crate) struct Monitor {
    periods: Mutex<BTreeMap<String, QueuePeriod>>,
}

impl Monitor {
    fn with(&self, queue: &str, change: impl FnOnce(&mut QueuePeriod)) {
        let mut periods = self.periods.lock().unwrap_or_else(|p| p.into_inner());
        match periods.get_mut(queue) {
            Some(period) => change(period),
            None => change(periods.entry(queue.to_string()).or_default()),
        }
    }

    /// A message of `queue` handled in `processing`, sent `critical` before it was handled
    /// (when its sender said when).
    pub fn handled(&self, queue: &str, processing: Duration, critical: Option<Duration>) {
        self.with(queue, |p| {
            p.handled += 1;
            p.processing.record(processing);
            if let Some(critical) = critical {
                p.critical.record(critical);
            }
        });
    }

    /// A failed attempt of a message of `queue`.
    pub fn failed(&self, queue: &str) {
        self.with(queue, |p| p.failed += 1);
    }

    /// A message of `queue` put back for another attempt.
    pub fn retried(&self, queue: &str) {
        self.with(queue, |p| p.retried += 1);
    }

    /// A message of `queue` moved to the dead letters.
    pub fn dead_lettered(&self, queue: &str) {
        self.with(queue, |p| p.dead_lettered += 1);
    }

    /// Everything since the last call, leaving nothing behind.
    pub fn take(&self) -> BTreeMap<String, QueuePeriod> {
        std::mem::take(&mut *self.periods.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Puts back what a report could not write, so the next one carries it.
    pub fn restore(&self, periods: BTreeMap<String, QueuePeriod>) {
        let mut current = self.periods.lock().unwrap_or_else(|p| p.into_inner());
        for (queue, old) in periods {
            let now = current.entry(queue).or_default();
            now.handled += old.handled;
            now.failed += old.failed;
            now.retried += old.retried;
            now.dead_lettered += old.dead_lettered;
            now.processing.merge(&old.processing);
            now.critical.merge(&old.critical);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_takes_every_event_once_and_a_failed_one_is_carried_over() {
        let m = Monitor::default();
        m.handled(
            "a",
            Duration::from_millis(3),
            Some(Duration::from_millis(40)),
        );
        m.handled("a", Duration::from_millis(5), None);
        m.failed("a");
        m.retried("a");
        m.failed("b");
        m.dead_lettered("b");
        let taken = m.take();
        assert_eq!(taken["a"].handled, 2);
        assert_eq!(taken["a"].processing.count(), 2);
        assert_eq!(taken["a"].critical.count(), 1);
        assert_eq!((taken["a"].failed, taken["a"].retried), (1, 1));
        assert_eq!((taken["b"].failed, taken["b"].dead_lettered), (1, 1));
        assert!(m.take().is_empty());
        m.handled("a", Duration::from_millis(1), None);
        m.restore(taken);
        let next = m.take();
        assert_eq!(next["a"].handled, 3);
        assert_eq!(next["a"].processing.count(), 3);
    }
}
