//! Leases: how messages whose handlers run for minutes are handled without an open transaction.
//!
//! By default a message is handled inside the transaction that received it: its removal, the
//! handler's sends and its own SQL commit together, and a crash rolls everything back. That
//! holds a transaction, a row lock and a pooled connection for as long as the handler runs. A
//! message type registered with [`crate::BusBuilder::lease`] is instead moved from its queue
//! into `NimbusLeases` in a short transaction; its handler then runs with nothing open, the lease
//! is renewed while it runs, and one more short transaction ends the lease and commits the
//! handler's sends (or its retry, or its dead letter). A lease that runs out because its holder
//! crashed or stalled is taken back by any instance of the endpoint and the message retried.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{NimbusError, Result};
use crate::pipeline::metrics::Counters;
use crate::transport::HeldLease;

/// How long a handler under a lease may run, unless [`Lease::handler_timeout`] says otherwise.
pub const DEFAULT_LEASE_HANDLER_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// The shortest lease accepted: it is renewed every third of its duration.
pub const MIN_LEASE: Duration = Duration::from_secs(1);

/// The longest lease accepted: a day. A longer one would keep a crashed holder's message out of
/// reach for longer still, and SQL Server's `DATEADD` takes the lease in whole seconds as an
/// `int`.
pub const MAX_LEASE: Duration = Duration::from_secs(24 * 60 * 60);

/// How messages of one type are handled under a lease, instead of inside the transaction that
/// received them ([`BusBuilder::lease`](crate::BusBuilder::lease)).
///
/// The trade: **at-least-once handling.** The handler holds no transaction, so its work is not
/// rolled back when the process dies: after a crash (or a stall longer than the lease) the
/// message is received again and the handler runs again. Handlers under a lease must be
/// idempotent. What they send through the context still commits exactly once, together with
/// the end of the lease; `ctx.postgres()`, `ctx.sqlite(..)` and `ctx.sql_server()` return an
/// error, because there is no receive transaction to lend.
///
/// ```
/// use std::time::Duration;
/// use nimbus::Lease;
///
/// // Held for 30 s at a time (renewed every 10 s while the handler runs); the handler may run
/// // for up to two hours before the attempt counts as failed.
/// let lease = Lease::of(Duration::from_secs(30)).handler_timeout(Duration::from_secs(2 * 3600));
/// assert_eq!(lease.duration(), Duration::from_secs(30));
/// assert_eq!(lease.timeout(), Duration::from_secs(7200));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    duration: Duration,
    handler_timeout: Duration,
}

impl Lease {
    /// A lease of `duration`: how long a message stays out of reach after its holder crashed
    /// (the lease is renewed every third of it while the handler runs). From [`MIN_LEASE`] to
    /// [`MAX_LEASE`]; the handler timeout is [`DEFAULT_LEASE_HANDLER_TIMEOUT`].
    pub fn of(duration: Duration) -> Lease {
        Lease {
            duration,
            handler_timeout: DEFAULT_LEASE_HANDLER_TIMEOUT,
        }
    }

    /// How long the handler may run before the attempt counts as failed (instead of the
    /// endpoint's [`handler_timeout`](crate::BusBuilder::handler_timeout)).
    pub fn handler_timeout(mut self, timeout: Duration) -> Lease {
        self.handler_timeout = timeout;
        self
    }

    /// The lease's duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// How long the handler may run.
    pub fn timeout(&self) -> Duration {
        self.handler_timeout
    }

    /// How often the lease is renewed while its handler runs.
    pub(crate) fn renew_every(&self) -> Duration {
        self.duration / 3
    }

    /// Checks the settings for message type `type_name`.
    pub(crate) fn check(&self, type_name: &str) -> Result<()> {
        if self.duration < MIN_LEASE {
            return Err(NimbusError::config(
                format!(
                    "the lease of {type_name} is {:?}, below the minimum of {MIN_LEASE:?}",
                    self.duration
                ),
                "use Lease::of(Duration::from_secs(1)) or longer (30 s to a few minutes is usual)",
            ));
        }
        if self.duration > MAX_LEASE {
            return Err(NimbusError::config(
                format!(
                    "the lease of {type_name} is {:?}, above the maximum of {MAX_LEASE:?}",
                    self.duration
                ),
                "a lease only needs to outlast a stall of its process: it is renewed while the \
                 handler runs, however long that is (Lease::handler_timeout bounds the handler)",
            ));
        }
        if self.handler_timeout.is_zero() {
            return Err(NimbusError::config(
                format!("the handler timeout of {type_name}'s lease is zero"),
                "give Lease::handler_timeout the longest time its handler may need",
            ));
        }
        Ok(())
    }
}

/// The leases of an endpoint, by message type name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Leases(HashMap<&'static str, Lease>);

impl Leases {
    pub fn insert(&mut self, type_name: &'static str, lease: Lease) {
        self.0.insert(type_name, lease);
    }

    /// The lease messages of `type_name` are handled under, if any.
    pub fn get(&self, type_name: &str) -> Option<Lease> {
        self.0.get(type_name).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every type name with a lease.
    pub fn type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.keys().copied()
    }

    /// How often expired leases are looked for: half the shortest lease, at most a minute.
    pub fn reclaim_interval(&self) -> Option<Duration> {
        self.0
            .values()
            .map(|l| (l.duration / 2).min(Duration::from_secs(60)))
            .min()
    }
}

/// Renews a lease every third of its duration while its handler runs; stops when dropped.
pub(crate) struct Renewal {
    task: tokio::task::JoinHandle<()>,
    lost: Arc<AtomicBool>,
}

impl Renewal {
    /// Starts renewing `held`, on the calling thread's runtime. A failed renewal is logged and
    /// tried again at the next turn; a lease found gone is logged once and no longer renewed.
    pub fn start(
        held: Arc<dyn HeldLease>,
        lease: Lease,
        queue: String,
        message_id: String,
        counters: Arc<Counters>,
    ) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let flag = lost.clone();
        let every = lease.renew_every();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match held.renew().await {
                    Ok(true) => {
                        Counters::add(&counters.leases_renewed, 1);
                        ::metrics::counter!("nimbus_leases_renewed_total", "queue" => queue.clone())
                            .increment(1);
                        tracing::debug!(%queue, id = %message_id, "renewed a lease");
                    }
                    Ok(false) => {
                        flag.store(true, Ordering::Relaxed);
                        tracing::warn!(%queue, id = %message_id, lease = ?lease.duration(), "a lease expired while its handler ran and was taken back: the message will be handled again, and what this handler sends will be discarded");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(%queue, id = %message_id, error = %e, "renewing a lease failed; trying again in {every:?} (it expires {:?} after the last renewal)", lease.duration());
                    }
                }
            }
        });
        Renewal { task, lost }
    }

    /// Whether a renewal found the lease gone.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_below_the_minimum_is_refused_with_the_fix() {
        let e = Lease::of(Duration::from_millis(500))
            .check("Pdf")
            .unwrap_err()
            .to_string();
        assert!(e.contains("below the minimum"), "{e}");
        assert!(Lease::of(Duration::from_secs(1)).check("Pdf").is_ok());
        assert!(Lease::of(MAX_LEASE).check("Pdf").is_ok());
        let long = Lease::of(MAX_LEASE + Duration::from_secs(1))
            .check("Pdf")
            .unwrap_err()
            .to_string();
        assert!(long.contains("above the maximum"), "{long}");
        assert!(Lease::of(Duration::from_secs(5))
            .handler_timeout(Duration::ZERO)
            .check("Pdf")
            .is_err());
    }

    #[test]
    fn expired_leases_are_looked_for_twice_per_shortest_lease_at_most_every_minute() {
        let mut leases = Leases::default();
        assert_eq!(leases.reclaim_interval(), None);
        leases.insert("A", Lease::of(Duration::from_secs(600)));
        assert_eq!(leases.reclaim_interval(), Some(Duration::from_secs(60)));
        leases.insert("B", Lease::of(Duration::from_secs(4)));
        assert_eq!(leases.reclaim_interval(), Some(Duration::from_secs(2)));
        assert_eq!(
            Lease::of(Duration::from_secs(30)).renew_every(),
            Duration::from_secs(10)
        );
    }
}
