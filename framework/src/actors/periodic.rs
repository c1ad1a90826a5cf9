//! The actor behind every timer-driven job of an endpoint: delayed delivery, expiry purging,
//! heartbeats, the idle sweep. It runs its job every interval (and at start, if asked), never
//! two runs at once, until it is shut down. A run in flight when it stops is cancelled; every job
//! is one transaction at a time, which a cancelled run rolls back.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures::future::BoxFuture;

use super::Shutdown;

/// A job: makes the future of one run.
pub(crate) type Job = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// Runs a job on a timer.
pub(crate) struct Periodic {
    interval: Duration,
    run_at_start: bool,
    job: Job,
    busy: bool,
}

impl Periodic {
    pub fn new(interval: Duration, run_at_start: bool, job: Job) -> Self {
        Periodic {
            interval,
            run_at_start,
            job,
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        ctx.spawn(
            (self.job)()
                .into_actor(self)
                .map(|(), act, _ctx| act.busy = false),
        );
    }
}

impl Actor for Periodic {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
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
