//! Health: what each queue's supervisor last saw of the database (its last good answer, since
//! when it fails, whether the outage went critical), kept where [`crate::Bus::health`] reads it
//! for a liveness or readiness probe.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// "Never" in the millisecond fields below.
const NEVER: u64 = u64::MAX;

/// One queue's state as its supervisor last saw it. Written with atomics on every peek and
/// receive result; read by `Bus::health`.
#[derive(Debug)]
pub(crate) struct QueueHealthCell {
    queue: String,
    /// The moment the millisecond fields count from.
    origin: Instant,
    /// When the database last answered a peek or receive of this queue.
    last_ok_ms: AtomicU64,
    /// When the current run of failures began.
    failing_since_ms: AtomicU64,
    /// The outage lasted longer than `critical_error_after`.
    critical: AtomicBool,
    last_error: Mutex<Option<String>>,
}

impl QueueHealthCell {
    fn since_origin(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// The database answered.
    pub fn ok(&self) {
        self.last_ok_ms
            .store(self.since_origin(), Ordering::Relaxed);
        if self.failing_since_ms.load(Ordering::Relaxed) != NEVER {
            self.failing_since_ms.store(NEVER, Ordering::Relaxed);
            self.critical.store(false, Ordering::Relaxed);
            *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// The database failed with `error`, failing since `since`; `critical` once the outage
    /// outlasted `critical_error_after`.
    pub fn failed(&self, error: &str, critical: bool, since: std::time::Instant) {
        if self.failing_since_ms.load(Ordering::Relaxed) == NEVER {
            let ago = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.failing_since_ms
                .store(self.since_origin().saturating_sub(ago), Ordering::Relaxed);
        }
        self.critical.store(critical, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }

    fn ago(&self, ms: u64) -> Option<Duration> {
        (ms != NEVER).then(|| {
            self.origin
                .elapsed()
                .saturating_sub(Duration::from_millis(ms))
        })
    }
}

/// Every queue's cell, for one endpoint.
#[derive(Debug, Default)]
pub(crate) struct HealthBoard {
    cells: Mutex<Vec<Arc<QueueHealthCell>>>,
}

impl HealthBoard {
    /// The cell of `queue`, made on first use.
    pub fn cell(&self, queue: &str) -> Arc<QueueHealthCell> {
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cell) = cells.iter().find(|c| c.queue == queue) {
            return cell.clone();
        }
        let cell = Arc::new(QueueHealthCell {
            queue: queue.to_string(),
            origin: Instant::now(),
            last_ok_ms: AtomicU64::new(NEVER),
            failing_since_ms: AtomicU64::new(NEVER),
            critical: AtomicBool::new(false),
            last_error: Mutex::new(None),
        });
        cells.push(cell.clone());
        cell
    }

    /// What each queue's cell says, with whether an operator paused it.
    pub fn queues(&self, paused: &std::collections::BTreeSet<String>) -> Vec<QueueHealth> {
        let cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        cells
            .iter()
            .map(|c| QueueHealth {
                queue: c.queue.clone(),
                receiving: true,
                paused: paused.contains(&c.queue),
                seconds_since_database_answered: c
                    .ago(c.last_ok_ms.load(Ordering::Relaxed))
                    .map(|d| d.as_secs_f64()),
                failing_for_seconds: c
                    .ago(c.failing_since_ms.load(Ordering::Relaxed))
                    .map(|d| d.as_secs_f64()),
                critical: c.critical.load(Ordering::Relaxed),
                last_error: c
                    .last_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            })
            .collect()
    }
}

/// What a liveness or readiness probe needs to know about a bus: see [`crate::Bus::health`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Health {
    /// The bus runs: it was started and not stopped. A probe that finds it `false` should
    /// restart the process (Kubernetes' liveness).
    pub live: bool,
    /// The bus can do its work now: it is live, the database answered this check, and no queue
    /// has been failing longer than `critical_error_after`. A probe that finds it `false`
    /// should send no traffic to the process for now (Kubernetes' readiness); it usually comes
    /// back by itself.
    pub ready: bool,
    /// The application and instance names.
    pub application: String,
    /// This instance's name.
    pub instance: String,
    /// The database answered this check (a catalog read through the bus's pool, bounded by
    /// `database_timeout` and at most 5 s).
    pub database_reachable: bool,
    /// Why the database check failed, when it did (never a password).
    pub database_error: Option<String>,
    /// Each queue the bus receives from (none for a send-only bus).
    pub queues: Vec<QueueHealth>,
    /// Why the bus is not ready, in words, when it is not.
    pub reasons: Vec<String>,
}

/// One received queue's part of [`Health`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct QueueHealth {
    /// The queue.
    pub queue: String,
    /// Its receivers run (while the bus runs, they do: they restart after failures).
    pub receiving: bool,
    /// An operator paused it (`nimbus pause`): its messages wait. Not a reason to be unready.
    pub paused: bool,
    /// How long ago the database last answered one of its peeks or receives; `None` before
    /// the first.
    pub seconds_since_database_answered: Option<f64>,
    /// How long its peeks and receives have been failing, when they are.
    pub failing_for_seconds: Option<f64>,
    /// The failures have lasted longer than `critical_error_after` (the critical-error
    /// callback fired).
    pub critical: bool,
    /// The last failure, while it fails.
    pub last_error: Option<String>,
}
