//! The actors of an endpoint. Per received queue: a [`QueueSupervisor`] that starts one
//! [`Peeker`] and up to the concurrency limit of [`Receiver`]s, and restarts them when they fail
//! (actix `Supervisor`). The peek and receive modes follow seed 000:
//!
//! * **peek**: the peeker estimates the depth as `max(RowVersion) - min(RowVersion) + 1`; if it is
//!   0 the supervisor waits the peek delay and peeks again;
//! * **receive**: otherwise the supervisor hands out that many receives to idle receivers, never
//!   more at once than the concurrency limit; when a receive finds nothing (another instance got
//!   there first) it stops handing out, and when all are done it peeks again at once.

mod peeker;
mod receiver;
mod supervisor;

pub(crate) use supervisor::{Drain, QueueSupervisor};
