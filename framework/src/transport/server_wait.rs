//! How long the watch of idle queues may wait on the server for a message, where the database
//! cannot tell this process that another one sent (SQL Server, see `watcher`): one statement
//! looks at the queues every few milliseconds and returns as soon as one holds a message, so the
//! idle queues cost one round trip per wait instead of one per look, and a message waits for the
//! next look, not for the next round trip.

use std::time::Duration;

/// The longest any one waiting statement may last: its own deadline is the database timeout
/// plus this.
pub(crate) const LONGEST_SERVER_WAIT: Duration = Duration::from_secs(1);

/// The shortest time between two looks: `WAITFOR DELAY` counts in milliseconds.
const SHORTEST_LOOK: Duration = Duration::from_millis(1);

/// A waiting statement's looks: one every `every`, at most `looks` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerWait {
    /// How many times the statement looks before it gives up and estimates anyway.
    pub looks: i64,
    /// The time between two looks.
    pub every: Duration,
}

impl ServerWait {
    /// Looks every `every` (at least a millisecond) for about `up_to` (at most
    /// [`LONGEST_SERVER_WAIT`]); at least one look.
    pub fn new(every: Duration, up_to: Duration) -> Self {
        let every = every.max(SHORTEST_LOOK);
        let up_to = up_to.min(LONGEST_SERVER_WAIT);
        let looks = (up_to.as_millis() / every.as_millis()).max(1);
        ServerWait {
            looks: i64::try_from(looks).unwrap_or(1),
            every,
        }
    }

    /// How long the statement waits at most when nothing comes.
    pub fn longest(&self) -> Duration {
        self.every
            .saturating_mul(u32::try_from(self.looks).unwrap_or(u32::MAX))
    }

    /// `every` as `WAITFOR DELAY` takes it: `hh:mm:ss.fff` (whole milliseconds; a delay of a
    /// day or more is written as 23:59:59.999, the most `WAITFOR` accepts).
    pub fn every_text(&self) -> String {
        let millis = self.every.as_millis().min(24 * 3_600_000 - 1);
        let (hours, rest) = (millis / 3_600_000, millis % 3_600_000);
        let (minutes, rest) = (rest / 60_000, rest % 60_000);
        let (seconds, millis) = (rest / 1_000, rest % 1_000);
        format!("{hours:02}:{minutes:02}:{seconds:02}.{millis:03}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_is_written_as_waitfor_takes_it() {
        let text =
            |ms| ServerWait::new(Duration::from_millis(ms), LONGEST_SERVER_WAIT).every_text();
        assert_eq!(text(10), "00:00:00.010");
        assert_eq!(text(1_234), "00:00:01.234");
        assert_eq!(text(3_723_004), "01:02:03.004");
        assert_eq!(
            text(0),
            "00:00:00.001",
            "at least a millisecond between looks"
        );
    }

    #[test]
    fn a_wait_looks_for_about_its_length_and_at_least_once() {
        let wait = ServerWait::new(Duration::from_millis(10), Duration::from_millis(500));
        assert_eq!(wait.looks, 50);
        assert_eq!(wait.longest(), Duration::from_millis(500));
        let capped = ServerWait::new(Duration::from_millis(10), Duration::from_secs(60));
        assert_eq!(capped.longest(), LONGEST_SERVER_WAIT);
        let once = ServerWait::new(Duration::from_secs(2), Duration::from_millis(500));
        assert_eq!(once.looks, 1);
    }
}
