//! The actor behind every timer-driven job of an endpoint: delayed delivery, expiry purging,
//! heartbeats, the idle sweep. It runs its job every interval (and at start, if asked), never
//! two runs at once, until it is shut down. A run in flight when it stops is cancelled; every job
//! is one transaction at a time, which a cancelled run rolls back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures::future::BoxFuture;

use super::Shutdown;
use crate::error::NimbusError;

/// A job: makes the future of one run.
pub(crate) type Job = Arc<dyn Fn() -> BoxFuture<'static, Result<(), NimbusError>> + Send + Sync>;

/// The longest a failing job waits before it tries again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Runs a job on a timer. While the job fails (the database is down, say), it backs off
/// (doubling the wait up to a minute) and logs the 1st, 2nd, 4th, 8th… failure, not every tick.
pub(crate) struct Periodic {
    name: &'static str,
    interval: Duration,
    run_at_start: bool,
    job: Job,
    busy: bool,
    failures: u32,
    resume_at: Option<Instant>,
}

impl Periodic {
    pub fn new(name: &'static str, interval: Duration, run_at_start: bool, job: Job) -> Self {
        Periodic {
            name,
            interval,
            run_at_start,
            job,
            busy: false,
            failures: 0,
            resume_at: None,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy || self.resume_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        self.busy = true;
        ctx.spawn(
            (self.job)()
                .into_actor(self)
                .map(|result, act, _ctx| act.finished(result)),
        );
    }

    fn finished(&mut self, result: Result<(), NimbusError>) {
        self.busy = false;
        match result {
            Ok(()) => {
                if self.failures > 0 {
                    tracing::info!(job = self.name, failures = self.failures, "recovered");
                }
                self.failures = 0;
                self.resume_at = None;
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let backoff = backoff(self.interval, self.failures);
                self.resume_at = Some(Instant::now() + backoff);
                if self.failures.is_power_of_two() {
                    tracing::warn!(
                        job = self.name,
                        failures = self.failures,
                        retry_in = ?backoff,
                        error = %e,
                        "failed; backing off"
                    );
                }
            }
        }
    }
}

/// The wait after the `failures`-th failure in a row: the interval, doubled per failure, at most
/// a minute (never less than the interval).
fn backoff(interval: Duration, failures: u32) -> Duration {
    let doubled = interval.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(MAX_BACKOFF.max(interval))
}

impl Actor for Periodic {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if super::started_without_a_runtime() {
            ctx.stop();
            return;
        }
        if self.run_at_start {
            self.tick(ctx);
        }
        ctx.run_interval(self.interval, |act, ctx| act.tick(ctx));
    }
}

impl Handler<Shutdown> for Periodic {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let second = Duration::from_secs(1);
        assert_eq!(backoff(second, 1), second);
        assert_eq!(backoff(second, 2), 2 * second);
        assert_eq!(backoff(second, 4), 8 * second);
        assert_eq!(backoff(second, 30), MAX_BACKOFF);
        let long = Duration::from_secs(300);
        assert_eq!(backoff(long, 5), long, "never less than the interval");
    }
}
