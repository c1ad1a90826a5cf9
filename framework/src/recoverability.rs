//! What happens to a message whose handler failed: immediate retries, then delayed retries with a
//! growing delay, then the dead letters. The count of failed attempts travels in the message's
//! headers, so it survives a restart of the endpoint: a poison message cannot loop forever.

use std::time::Duration;

pub use crate::headers::FAILED_ATTEMPTS;
/// Delayed retries so far (NServiceBus's header name).
pub const DELAYED_RETRIES: &str = "NServiceBus.Retries";
/// Why the message went to the dead letters.
pub const EXCEPTION_MESSAGE: &str = "NServiceBus.ExceptionInfo.Message";
/// The queue the message failed in.
pub const FAILED_QUEUE: &str = "NServiceBus.FailedQ";
/// When it was dead-lettered.
pub const TIME_OF_FAILURE: &str = "NServiceBus.TimeOfFailure";

/// Retry counts and delays. NServiceBus's defaults: 5 immediate retries, 3 delayed retries 10 s
/// apart, growing (10 s, 20 s, 30 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    pub immediate: u32,
    pub delayed: u32,
    pub delayed_increment: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            immediate: 5,
            delayed: 3,
            delayed_increment: Duration::from_secs(10),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// Put the message back in its queue at once.
    Immediate,
    /// Put it back after this delay (the n-th delayed retry waits n × the increment).
    Delayed { retry: u32, delay: Duration },
    /// Move it to the dead letters.
    DeadLetter,
}

impl RetryPolicy {
    /// The recovery after the `failures`-th failed attempt (1 for the first): attempts run
    /// 1 + immediate + delayed times in all before the message is dead-lettered.
    pub fn decide(&self, failures: u32) -> Recovery {
        if failures <= self.immediate {
            Recovery::Immediate
        } else if failures <= self.immediate.saturating_add(self.delayed) {
            let retry = failures - self.immediate;
            Recovery::Delayed {
                retry,
                delay: self.delayed_increment.saturating_mul(retry),
            }
        } else {
            Recovery::DeadLetter
        }
    }
}

/// Failed attempts recorded in a message's headers (0 when absent or unreadable).
pub(crate) fn failures_so_far(headers: &crate::incoming_headers::IncomingHeaders) -> u32 {
    headers
        .get(FAILED_ATTEMPTS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_one_plus_immediate_plus_delayed() {
        let policy = RetryPolicy {
            immediate: 2,
            delayed: 2,
            delayed_increment: Duration::from_secs(10),
        };
        let decisions: Vec<_> = (1..=5).map(|f| policy.decide(f)).collect();
        assert_eq!(
            decisions,
            vec![
                Recovery::Immediate,
                Recovery::Immediate,
                Recovery::Delayed {
                    retry: 1,
                    delay: Duration::from_secs(10)
                },
                Recovery::Delayed {
                    retry: 2,
                    delay: Duration::from_secs(20)
                },
                Recovery::DeadLetter,
            ]
        );
    }

    #[test]
    fn zero_retries_dead_letter_at_the_first_failure() {
        let policy = RetryPolicy {
            immediate: 0,
            delayed: 0,
            delayed_increment: Duration::from_secs(1),
        };
        assert_eq!(policy.decide(1), Recovery::DeadLetter);
    }

    #[test]
    fn unreadable_counts_start_from_zero() {
        use crate::headers::Headers;
        use crate::incoming_headers::IncomingHeaders;
        let mut h = Headers::new();
        assert_eq!(failures_so_far(&IncomingHeaders::from_map(h.clone())), 0);
        h.insert(FAILED_ATTEMPTS.into(), "x".into());
        assert_eq!(failures_so_far(&IncomingHeaders::from_map(h.clone())), 0);
        h.insert(FAILED_ATTEMPTS.into(), "3".into());
        assert_eq!(failures_so_far(&IncomingHeaders::from_map(h)), 3);
    }
}
