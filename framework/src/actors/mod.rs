//! The actors of an endpoint.
//!
//! Per received queue: a [`QueueSupervisor`] that starts one peeker, up to the concurrency limit
//! of receivers (restarted by actix `Supervisor` when they fail) and an expiry purger. Per
//! endpoint: a [`DeadLetterer`], and timer-driven actors (`periodic::Periodic`) for delayed
//! delivery, the heartbeat of its subscriptions and the idle sweep of lapsed ones. The peek and receive modes follow
//! seed 000:
//!
//! * **peek**: the peeker estimates the depth as `max(RowVersion) - min(RowVersion) + 1`; if it is
//!   0 the supervisor waits the peek delay and peeks again;
//! * **receive**: otherwise the supervisor hands out that many receives to idle receivers, never
//!   more at once than the concurrency limit; when a receive finds nothing (another instance got
//!   there first) it stops handing out, and when all are done it peeks again at once.

mod dead_letterer;
mod delayed_delivery;
mod expiry_purger;
mod heartbeat;
mod idle_sweep;
mod peeker;
mod periodic;
mod receiver;
mod supervisor;

pub(crate) use dead_letterer::DeadLetterer;
pub(crate) use delayed_delivery::delayed_delivery;
pub(crate) use heartbeat::beat;
pub(crate) use heartbeat::heartbeat;
pub(crate) use idle_sweep::idle_sweep;
pub(crate) use supervisor::{Drain, QueueSupervisor};

/// Stops an actor that runs on a timer.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub(crate) struct Shutdown;
