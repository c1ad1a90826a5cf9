//! Subscription lifecycle: who subscribes where, how often they heartbeat, when they lapse.
//!
//! * A **competing** event handler subscribes the application's input queue: one instance of the
//!   application handles each event. Every running instance heartbeats that row.
//! * A **multicast** event handler subscribes the instance's own queue (`Application.instance`):
//!   every running instance handles each event.
//! * The instance queue also receives replies to `Bus::request`; it is registered under
//!   [`INSTANCE_QUEUE_TOPIC`] so that the sweep knows it belongs to one instance.
//!
//! Every subscription heartbeats (`LastSeenAt`, database time) every
//! [`heartbeat_interval`]; publishers skip rows not seen within `auto_delete_on_idle`; the sweep,
//! which every instance runs every [`sweep_interval`], deletes them, and drops an instance queue
//! (with the messages still in it) once no subscription is left for it. An application queue is
//! never dropped: it also holds commands, which must wait for the application to come back.

use std::time::Duration;

/// The pseudo-topic under which an instance registers its own queue, so the idle sweep can drop
/// it when the instance is gone. No event type can have this name (it is not a Rust path).
pub const INSTANCE_QUEUE_TOPIC: &str = "nimbus:instance-queue";

/// The default of `auto_delete_on_idle`: 4 days.
pub const DEFAULT_AUTO_DELETE_ON_IDLE: Duration = Duration::from_secs(4 * 24 * 3600);
/// The shortest `auto_delete_on_idle` accepted: 5 minutes.
pub const MIN_AUTO_DELETE_ON_IDLE: Duration = Duration::from_secs(5 * 60);

/// How often a running instance refreshes its subscriptions: a quarter of the idle period, so
/// three beats can be missed before it lapses, but at most hourly (75 s at the 5-minute minimum,
/// 1 hour at the 4-day default).
pub fn heartbeat_interval(idle: Duration) -> Duration {
    (idle / 4).min(Duration::from_secs(3600))
}

/// How often every instance sweeps lapsed subscriptions: half the idle period, at most hourly
/// (150 s at the minimum, 1 hour at the default). A lapsed subscription is gone within
/// `idle + sweep_interval`.
pub fn sweep_interval(idle: Duration) -> Duration {
    (idle / 2).min(Duration::from_secs(3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_follow_the_idle_period() {
        assert_eq!(
            heartbeat_interval(MIN_AUTO_DELETE_ON_IDLE),
            Duration::from_secs(75)
        );
        assert_eq!(
            sweep_interval(MIN_AUTO_DELETE_ON_IDLE),
            Duration::from_secs(150)
        );
        assert_eq!(
            heartbeat_interval(DEFAULT_AUTO_DELETE_ON_IDLE),
            Duration::from_secs(3600)
        );
        assert_eq!(
            sweep_interval(DEFAULT_AUTO_DELETE_ON_IDLE),
            Duration::from_secs(3600)
        );
    }
}
