//! The actors of an endpoint.
//!
//! Per received queue: a [`QueueSupervisor`] that starts one peeker, up to the concurrency limit
//! of receivers (restarted by actix `Supervisor` when they fail) and an expiry purger. Per
//! endpoint: a [`DeadLetterer`], and timer-driven actors (`periodic::Periodic`) for delayed
//! delivery, the heartbeat of its subscriptions, the idle sweep of lapsed ones, the check for
//! queues an operator paused and the maintenance of its queue tables (PostgreSQL's VACUUM); and
//! where it declares recurring messages, the `Scheduler` that fires their ticks. The peek and receive modes follow
//! seed 000:
//!
//! * **peek**: the peeker estimates the depth as `max(RowVersion) - min(RowVersion) + 1`; if it is
//!   0 the supervisor waits the peek delay and peeks again;
//! * **receive**: otherwise the supervisor hands out that many receives (less those it already
//!   has in flight, which the estimate counts) to idle receivers, each holding one of the
//!   endpoint's slots (its concurrency limit, shared by all of its queues); a freed slot goes to
//!   the next waiting message at once; when the estimate runs out it peeks again without waiting
//!   for slow handlers, and when a receive finds nothing (another instance got there first) it
//!   waits the peek delay;
//! * **wake-up**: a send committed in this process to the queue (any endpoint, any database)
//!   makes the supervisor peek at once instead of waiting out the delay.
//!
//! Every actor here runs on the bus's own thread, beside the database connections. Handler code
//! runs elsewhere: async handlers in handler actors on the endpoint's handler threads, blocking
//! handlers on a pool (see `crate::pipeline::dispatch`), each lent the receive's context.

mod dead_letterer;
mod delayed_delivery;
mod expiry_purger;
mod heartbeat;
mod idle_connections;
mod idle_sweep;
mod instance_registry;
mod lease_reclaimer;
mod monitoring_reporter;
mod pause_watch;
mod peeker;
mod periodic;
mod receiver;
mod scheduler;
mod supervisor;
mod table_maintenance;

pub(crate) use dead_letterer::DeadLetterer;
pub(crate) use delayed_delivery::delayed_delivery;
pub(crate) use heartbeat::beat;
pub(crate) use heartbeat::heartbeat;
pub(crate) use idle_connections::idle_connections;
pub(crate) use idle_sweep::idle_sweep;
pub(crate) use instance_registry::{instance_heartbeat, mark_stopped, register, registration};
pub(crate) use monitoring_reporter::monitoring_reporter;
pub(crate) use pause_watch::{pause_watch, read_pauses};
pub(crate) use scheduler::{declare as declare_schedules, Scheduler};
pub(crate) use supervisor::{Drain, QueueSupervisor};
pub(crate) use table_maintenance::table_maintenance;

/// Stops an actor that runs on a timer.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub(crate) struct Shutdown;

/// Whether the actor is being started with no runtime around it: actix polls an actor that
/// never ran once more as it drops it (its `System` stopping right after the bus started, or a
/// test failing there), outside any tokio runtime. Timers and spawns would panic then ("there
/// is no reactor running"); an actor that finds this stops instead of scheduling anything.
pub(crate) fn started_without_a_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}
