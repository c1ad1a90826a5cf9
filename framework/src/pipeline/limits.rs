//! Limits across instances (see [`Limit`]): at most N handlers at once, or at most N messages
//! per period, for a message type or for each key of it, held by every instance of the
//! endpoint through the slots of `NimbusLimits`.
//!
//! Before a limited message's handlers run, its receive's transaction takes a slot of each of
//! its limits (handlers at once first, rates last, so that a full limit of handlers never
//! spends a rate's slot). A limit of handlers at once keeps its slot's row locked until the
//! transaction ends — commit, rollback, or a process that dies — so a slot is never lost. A
//! rate's slot stays taken for the period. When a limit is full the message goes back to wait,
//! in the same transaction: it is written again under its id to be received after a short
//! wait (longer each time, with the headers `Nimbus.Limit.HeldBy` and `Nimbus.Limit.Holds`),
//! and no attempt is counted: it is neither failed nor dead-lettered.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{NimbusError, Result};
use crate::message::Message;
use crate::names::QueueName;

/// The most slots a limit has: at most this many handlers at once, or messages per period.
pub const MAX_LIMIT_SLOTS: u32 = 1_000;

/// The longest key of a limit per key, in bytes (see
/// [`BusBuilder::limit_per_key`](crate::BusBuilder::limit_per_key)).
pub const MAX_LIMIT_KEY_LEN: usize = 128;

/// The longest period of a rate limit.
pub const MAX_LIMIT_PERIOD: Duration = Duration::from_secs(24 * 3600);

/// How long a held message waits the first time; each hold after doubles it, up to
/// [`MAX_HOLD`].
const FIRST_HOLD: Duration = Duration::from_millis(100);

/// The longest a message held by a limit of handlers at once waits before it is tried again
/// (a rate's wait is at least until its next slot is ready).
const MAX_HOLD: Duration = Duration::from_secs(5);

/// How long the log stays quiet about a full limit after saying so at INFO.
const QUIET_FOR: Duration = Duration::from_secs(60);

/// A limit on the handlers of a message type, holding across every instance of the endpoint:
/// at most N at once ([`Limit::concurrency`]), or at most N messages per period
/// ([`Limit::rate`]). Set with [`BusBuilder::limit`](crate::BusBuilder::limit) for a whole
/// message type, or [`BusBuilder::limit_per_key`](crate::BusBuilder::limit_per_key) for each
/// key of it. A message over its limit waits in its queue and is neither failed nor
/// dead-lettered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    kind: LimitKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LimitKind {
    Concurrency(u32),
    Rate { messages: u32, per: Duration },
}

impl Limit {
    /// At most `handlers` messages handled at once, over every receiver and instance (1 to
    /// [`MAX_LIMIT_SLOTS`]). A handler counts from its message's receive to its commit.
    pub fn concurrency(handlers: u32) -> Self {
        Limit {
            kind: LimitKind::Concurrency(handlers),
        }
    }

    /// At most `messages` messages whose handling starts within any `per` (1 to
    /// [`MAX_LIMIT_SLOTS`] messages; a period from 1 ms to a day). Each handling counts,
    /// whether it succeeds or fails; one whose transaction rolled back (its process died) gives
    /// its slot back. A slot also stays held until its transaction ends, so handlers longer
    /// than the period are at most `messages` at once as well.
    pub fn rate(messages: u32, per: Duration) -> Self {
        Limit {
            kind: LimitKind::Rate { messages, per },
        }
    }

    /// At most `messages` messages per second: [`Limit::rate`] over one second.
    pub fn per_second(messages: u32) -> Self {
        Limit::rate(messages, Duration::from_secs(1))
    }

    /// `concurrency` or `rate`, as scopes and metrics name the limit's kind.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            LimitKind::Concurrency(_) => "concurrency",
            LimitKind::Rate { .. } => "rate",
        }
    }

    /// How many slots the limit has (handlers at once, or messages per period).
    pub fn slots(&self) -> u32 {
        match self.kind {
            LimitKind::Concurrency(handlers) => handlers,
            LimitKind::Rate { messages, .. } => messages,
        }
    }

    /// How long a slot stays taken: zero for a limit of handlers at once (until its
    /// transaction ends), the period for a rate.
    pub fn period(&self) -> Duration {
        match self.kind {
            LimitKind::Concurrency(_) => Duration::ZERO,
            LimitKind::Rate { per, .. } => per,
        }
    }

    /// Refuses a limit the database cannot keep, naming `type_name`.
    fn check(&self, type_name: &str) -> Result<()> {
        if !(1..=MAX_LIMIT_SLOTS).contains(&self.slots()) {
            return Err(NimbusError::config(
                format!(
                    "the limit of {type_name} ({self}) is outside 1 to {MAX_LIMIT_SLOTS} slots"
                ),
                "use Limit::concurrency(n) or Limit::rate(n, period) with n from 1 to 1000 (a \
                 higher rate is the same rate over a shorter period: 5,000 a second is 50 per \
                 10 ms)",
            ));
        }
        if let LimitKind::Rate { per, .. } = self.kind {
            if per < Duration::from_millis(1) || per > MAX_LIMIT_PERIOD {
                return Err(NimbusError::config(
                    format!("the rate limit of {type_name} has a period of {per:?}"),
                    "give Limit::rate a period from 1 ms to a day",
                ));
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            LimitKind::Concurrency(handlers) => write!(f, "at most {handlers} at once"),
            LimitKind::Rate { messages, per } => write!(f, "at most {messages} per {per:?}"),
        }
    }
}

/// Reads a limit's key from a message's body: `None` when the body is not a message of the
/// type (its handler then fails on it as it would without the limit).
type KeyOf = Arc<dyn Fn(&[u8]) -> Option<String> + Send + Sync>;

/// One limit of a message type.
#[derive(Clone)]
struct TypeLimit {
    limit: Limit,
    /// For a limit per key: how to read the key.
    key_of: Option<KeyOf>,
}

/// The limits of an endpoint, per message type.
#[derive(Clone, Default)]
pub(crate) struct Limits {
    by_type: HashMap<&'static str, Vec<TypeLimit>>,
    /// When each scope last said at INFO that it is full.
    said_full: Arc<std::sync::Mutex<HashMap<String, Instant>>>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limits: Vec<_> = self
            .by_type
            .iter()
            .flat_map(|(t, limits)| {
                limits
                    .iter()
                    .map(move |l| format!("{t}: {} (per key: {})", l.limit, l.key_of.is_some()))
            })
            .collect();
        f.debug_struct("Limits").field("limits", &limits).finish()
    }
}

/// One limit a received message is under: its scope in `NimbusLimits` and its terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scoped {
    pub scope: String,
    pub limit: Limit,
}

impl Limits {
    /// Adds `limit` for messages of type `M`, for the whole type.
    pub fn add<M: Message>(&mut self, limit: Limit) {
        self.push(M::TYPE_NAME, limit, None);
    }

    /// Adds `limit` for messages of type `M`, for each key `key` reads from a message.
    pub fn add_per_key<M: Message>(
        &mut self,
        limit: Limit,
        key: impl Fn(&M) -> String + Send + Sync + 'static,
    ) {
        let key_of: KeyOf =
            Arc::new(move |body: &[u8]| serde_json::from_slice::<M>(body).ok().map(|m| key(&m)));
        self.push(M::TYPE_NAME, limit, Some(key_of));
    }

    fn push(&mut self, type_name: &'static str, limit: Limit, key_of: Option<KeyOf>) {
        self.by_type
            .entry(type_name)
            .or_default()
            .push(TypeLimit { limit, key_of });
    }

    /// No message type has a limit.
    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    /// The message types with a limit.
    pub fn type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_type.keys().copied()
    }

    /// Refuses a limit the database cannot keep, and two limits of one kind on a type's
    /// scope.
    pub fn check(&self) -> Result<()> {
        for (type_name, limits) in &self.by_type {
            for (i, l) in limits.iter().enumerate() {
                l.limit.check(type_name)?;
                let same = limits[..i].iter().any(|other| {
                    other.limit.kind_name() == l.limit.kind_name()
                        && other.key_of.is_some() == l.key_of.is_some()
                });
                if same {
                    return Err(NimbusError::config(
                        format!(
                            "{type_name} has two {} limits {}",
                            l.limit.kind_name(),
                            if l.key_of.is_some() {
                                "per key"
                            } else {
                                "for the whole type"
                            }
                        ),
                        "keep one of them: the stricter one is the one that holds",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The scopes of the limits on whole message types (not per key) for messages received
    /// from `queue`, with their slots.
    pub fn type_scopes(&self, queue: &QueueName) -> Vec<(String, u32)> {
        self.by_type
            .iter()
            .flat_map(|(type_name, limits)| {
                limits
                    .iter()
                    .filter(|l| l.key_of.is_none())
                    .map(move |l| (scope_of(queue, type_name, &l.limit), l.limit.slots()))
            })
            .collect()
    }

    /// The limits a message of `type_name` with `body`, received from `queue`, is under,
    /// those of handlers at once first; an error (the message's reason for the dead letters)
    /// when its key is longer than [`MAX_LIMIT_KEY_LEN`].
    pub fn scopes_for(
        &self,
        queue: &QueueName,
        type_name: &str,
        body: &[u8],
    ) -> std::result::Result<Vec<Scoped>, String> {
        let Some(limits) = self.by_type.get(type_name) else {
            return Ok(Vec::new());
        };
        let mut scoped = Vec::with_capacity(limits.len());
        for l in limits {
            let mut scope = scope_of(queue, type_name, &l.limit);
            if let Some(key_of) = &l.key_of {
                // A body that is not a message of the type fails in its handler, as without
                // the limit.
                let Some(key) = key_of(body) else { continue };
                if key.len() > MAX_LIMIT_KEY_LEN {
                    return Err(format!(
                        "its limit key is {} bytes long; a limit key has at most \
                         {MAX_LIMIT_KEY_LEN} bytes (shorten what the key function of \
                         .limit_per_key::<{type_name}>(..) returns)",
                        key.len()
                    ));
                }
                scope.push('|');
                scope.push_str(&key);
            }
            scoped.push(Scoped {
                scope,
                limit: l.limit,
            });
        }
        // Handlers at once (no period) first: a full one then never spends a rate's slot.
        scoped.sort_by_key(|s| !s.limit.period().is_zero());
        Ok(scoped)
    }

    /// Whether the log should say at INFO that `scope` is full: the first time, and again
    /// after a quiet minute.
    pub fn say_full(&self, scope: &str) -> bool {
        let mut said = self.said_full.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match said.get(scope) {
            Some(at) if now.duration_since(*at) < QUIET_FOR => false,
            _ => {
                said.insert(scope.to_string(), now);
                true
            }
        }
    }
}

/// The scope of `limit` on the whole of `type_name` received from `queue`:
/// `<queue>|<kind>|<type>` (a limit per key adds `|<key>`).
fn scope_of(queue: &QueueName, type_name: &str, limit: &Limit) -> String {
    format!("{}|{}|{type_name}", queue.as_str(), limit.kind_name())
}

/// When the messages this process held back come due, so that its delayed delivery moves them
/// back to their queue then rather than at its next regular pass (a peek delay apart): a held
/// message waits 50 ms at first.
#[derive(Debug, Default)]
pub(crate) struct HoldsDue(std::sync::Mutex<std::collections::BTreeSet<Instant>>);

impl HoldsDue {
    /// A held message comes due at `at`.
    pub fn note(&self, at: Instant) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(at);
    }

    /// The soonest hold due by `deadline`, forgotten with every one due before it (a pass
    /// then moves them all); `None` when none is due by then.
    pub fn next_by(&self, deadline: Instant) -> Option<Instant> {
        let mut due = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let first = *due.first()?;
        if first > deadline {
            return None;
        }
        due.retain(|at| *at > first);
        Some(first)
    }
}

/// How long a message held for the `holds`-th time waits before it is received again: at least
/// until the limit's next slot is ready (`ready_in`, where known), plus a wait that doubles
/// with each hold from 100 ms up to 5 s, spread at random so that held messages come back one
/// by one rather than together.
pub(crate) fn hold_for(holds: u32, ready_in: Option<Duration>) -> Duration {
    let doubling = FIRST_HOLD.saturating_mul(1u32 << holds.saturating_sub(1).min(10));
    let spread = doubling.min(MAX_HOLD);
    let wait = spread.mul_f64(0.5 + crate::pipeline::random_fraction() / 2.0);
    ready_in.unwrap_or_default().saturating_add(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Charge {
        customer: String,
    }

    impl Message for Charge {
        const TYPE_NAME: &'static str = "Shop.Charge";
        const KIND: crate::message::MessageKind = crate::message::MessageKind::Command;
    }

    fn queue() -> QueueName {
        QueueName::new("Billing").unwrap()
    }

    #[test]
    fn a_message_is_under_its_types_limits_handlers_at_once_first() {
        let mut limits = Limits::default();
        limits.add::<Charge>(Limit::per_second(10));
        limits.add_per_key::<Charge>(Limit::concurrency(1), |c: &Charge| c.customer.clone());
        limits.check().unwrap();
        let body = br#"{"customer":"c-7"}"#;
        let scoped = limits.scopes_for(&queue(), "Shop.Charge", body).unwrap();
        let scopes: Vec<_> = scoped.iter().map(|s| s.scope.as_str()).collect();
        assert_eq!(
            scopes,
            [
                "Billing|concurrency|Shop.Charge|c-7",
                "Billing|rate|Shop.Charge"
            ]
        );
        assert!(limits
            .scopes_for(&queue(), "Shop.Other", body)
            .unwrap()
            .is_empty());
        // Made at start: the limits on the whole type, not those per key.
        assert_eq!(
            limits.type_scopes(&queue()),
            [("Billing|rate|Shop.Charge".to_string(), 10)]
        );
    }

    #[test]
    fn a_key_too_long_is_the_messages_error_and_a_body_of_another_shape_has_no_key() {
        let mut limits = Limits::default();
        limits.add_per_key::<Charge>(Limit::concurrency(1), |c: &Charge| c.customer.clone());
        let long = format!(r#"{{"customer":"{}"}}"#, "x".repeat(MAX_LIMIT_KEY_LEN + 1));
        let error = limits
            .scopes_for(&queue(), "Shop.Charge", long.as_bytes())
            .unwrap_err();
        assert!(error.contains("at most 128 bytes"), "{error}");
        let other = limits
            .scopes_for(&queue(), "Shop.Charge", b"not json")
            .unwrap();
        assert!(other.is_empty());
    }

    #[test]
    fn limits_the_database_cannot_keep_are_refused() {
        for bad in [
            Limit::concurrency(0),
            Limit::concurrency(MAX_LIMIT_SLOTS + 1),
            Limit::rate(5, Duration::ZERO),
            Limit::rate(5, MAX_LIMIT_PERIOD * 2),
        ] {
            let mut limits = Limits::default();
            limits.add::<Charge>(bad);
            assert!(limits.check().is_err(), "{bad} was accepted");
        }
        let mut twice = Limits::default();
        twice.add::<Charge>(Limit::concurrency(2));
        twice.add::<Charge>(Limit::concurrency(3));
        let error = twice.check().unwrap_err().to_string();
        assert!(error.contains("two concurrency limits"), "{error}");
    }

    #[test]
    fn holds_wait_longer_each_time_and_at_least_until_the_next_slot() {
        let first = hold_for(1, None);
        assert!((FIRST_HOLD / 2..=FIRST_HOLD).contains(&first), "{first:?}");
        let late = hold_for(30, None);
        assert!((MAX_HOLD / 2..=MAX_HOLD).contains(&late), "{late:?}");
        let rate = hold_for(1, Some(Duration::from_secs(2)));
        assert!(rate >= Duration::from_secs(2), "{rate:?}");
    }

    #[test]
    fn holds_come_due_soonest_first() {
        let due = HoldsDue::default();
        let now = Instant::now();
        let (soon, later) = (
            now + Duration::from_millis(50),
            now + Duration::from_secs(5),
        );
        due.note(later);
        due.note(soon);
        assert_eq!(due.next_by(now), None, "nothing due yet");
        assert_eq!(due.next_by(now + Duration::from_secs(1)), Some(soon));
        assert_eq!(due.next_by(now + Duration::from_secs(1)), None);
        assert_eq!(due.next_by(later), Some(later));
    }

    #[test]
    fn a_full_limit_is_said_once_a_minute() {
        let limits = Limits::default();
        assert!(limits.say_full("a"));
        assert!(!limits.say_full("a"));
        assert!(limits.say_full("b"));
    }
}
