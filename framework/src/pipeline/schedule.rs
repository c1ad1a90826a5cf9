//! Recurring messages an endpoint declares ([`BusBuilder::schedule`](crate::BusBuilder::schedule)):
//! a cron expression or a fixed interval, and the message each tick sends or publishes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::NaiveDateTime;
use uuid::Uuid;

use crate::envelope::{build_scheduled, Destination, EndpointIdentity, Intent, OutgoingMessage};
use crate::error::{NimbusError, Result};
use crate::message::{Command, Event, Message};
use crate::names::QueueName;
use crate::pipeline::handler::Routes;
use crate::transport::schedules::Recurrence;
use crate::transport::Missed;

/// Where a tick's message goes.
#[derive(Clone, Debug)]
enum Target {
    /// The queue routed for its type (`route::<M>(..)`), looked up by `build()`.
    Routed,
    /// A queue named by the schedule.
    Queue(String),
    /// Every queue subscribed to its type.
    Publish,
}

/// Makes a tick's message: (origin, destination, message id, schedule name, tick).
type MakeMessage = Arc<
    dyn Fn(
            &Arc<EndpointIdentity>,
            Destination,
            Uuid,
            &str,
            NaiveDateTime,
        ) -> Result<OutgoingMessage>
        + Send
        + Sync,
>;

/// The message of a schedule, kept to be serialized again at every tick.
#[derive(Clone)]
struct TickMessage {
    type_name: &'static str,
    target: Target,
    make: MakeMessage,
}

/// A recurring message: a name, when it fires (a cron expression or a fixed interval, in UTC by
/// the database's clock), what it does with ticks missed while no instance ran, and the message
/// each tick sends or publishes. Declared on the builder with
/// [`BusBuilder::schedule`](crate::BusBuilder::schedule).
///
/// **Each tick fires once, however many instances of the endpoint run.** Every instance keeps
/// the schedule's next tick in `NimbusSchedules`; the one whose update of the due row commits
/// sends the tick's message in that same transaction, and the others find the row moved on.
/// An instance killed in the middle sends nothing (its transaction rolls back) and another
/// fires the tick. Each tick's message carries the headers `Nimbus.Schedule` (the schedule's
/// name) and `Nimbus.ScheduledFor` (the tick), and a message id made from the endpoint, the
/// schedule and the tick, so the same tick always has the same id.
///
/// ```
/// use std::time::Duration;
/// use nimbus::{Missed, Schedule};
/// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
/// # struct BuildReport { full: bool }
/// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Event)]
/// # struct Heartbeat;
///
/// // Six fields: seconds first. Five fields: minutes first (a tick on the minute).
/// let nightly = Schedule::cron("nightly-report", "0 0 2 * * *").send(BuildReport { full: true });
/// let pulse = Schedule::every("pulse", Duration::from_secs(30))
///     .missed(Missed::Skip)
///     .publish(Heartbeat);
/// assert_eq!(nightly.name(), "nightly-report");
/// # let _ = pulse;
/// ```
#[derive(Clone)]
pub struct Schedule {
    name: String,
    recurrence: std::result::Result<Recurrence, String>,
    missed: Missed,
    message: Option<TickMessage>,
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule")
            .field("name", &self.name)
            .field(
                "recurrence",
                &self.recurrence.as_ref().map(Recurrence::describe),
            )
            .field("missed", &self.missed)
            .field("message", &self.message.as_ref().map(|m| m.type_name))
            .finish()
    }
}

impl Schedule {
    /// Fires at the times a cron expression matches, in UTC: five fields (minute, hour, day of
    /// month, month, day of week) or six (seconds first); names (`MON`, `JAN`), ranges, steps,
    /// lists, `L`, `W` and `#` as [croner](https://docs.rs/croner) reads them. A bad expression
    /// is reported by `build()`.
    pub fn cron(name: impl Into<String>, expression: &str) -> Schedule {
        Schedule {
            name: name.into(),
            recurrence: Recurrence::cron(expression)
                .map_err(|e| format!("the cron expression {expression:?} is not valid: {e}")),
            missed: Missed::default(),
            message: None,
        }
    }

    /// Fires every `interval` (1 s or more), the first time one interval after the first start
    /// of the endpoint that declared it; the interval counts from each tick, not from when the
    /// previous message was handled.
    pub fn every(name: impl Into<String>, interval: Duration) -> Schedule {
        Schedule {
            name: name.into(),
            recurrence: Recurrence::every(interval),
            missed: Missed::default(),
            message: None,
        }
    }

    /// What to do with ticks that came due while no instance ran (the default:
    /// [`Missed::FireOnce`]).
    pub fn missed(mut self, missed: Missed) -> Schedule {
        self.missed = missed;
        self
    }

    /// Each tick sends `message` to the queue routed for its type (`route::<M>(..)` on the
    /// builder).
    pub fn send<M: Command>(self, message: M) -> Schedule {
        self.with_message(message, Intent::Send, Target::Routed)
    }

    /// Each tick sends `message` to `queue`.
    pub fn send_to<M: Message>(self, queue: impl Into<String>, message: M) -> Schedule {
        self.with_message(message, Intent::Send, Target::Queue(queue.into()))
    }

    /// Each tick publishes `message` to every queue subscribed to its type.
    pub fn publish<M: Event>(self, message: M) -> Schedule {
        self.with_message(message, Intent::Publish, Target::Publish)
    }

    /// The schedule's name: unique in its endpoint, what operators pause and resume it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn with_message<M: Message>(mut self, message: M, intent: Intent, target: Target) -> Schedule {
        // A Mutex so that a message type that is Send but not Sync can be kept too.
        let message = Mutex::new(message);
        let make: MakeMessage = Arc::new(move |origin, destination, id, schedule, tick| {
            let message = message.lock().unwrap_or_else(|p| p.into_inner());
            build_scheduled(&*message, intent, destination, origin, id, schedule, tick)
        });
        self.message = Some(TickMessage {
            type_name: M::TYPE_NAME,
            target,
            make,
        });
        self
    }

    /// Checks the schedule against the endpoint's routes; what `build()` reports.
    pub(crate) fn checked(
        self,
        routes: &Routes,
        resolve: &Resolve<'_>,
    ) -> Result<DeclaredSchedule> {
        let problem = |what: String, fix: &str| {
            NimbusError::config(format!("schedule {:?}: {what}", self.name), fix.to_string())
        };
        if self.name.trim().is_empty()
            || self.name.chars().any(char::is_control)
            || self.name.len() > 255
        {
            return Err(problem(
                "its name is empty, over 255 bytes or has control characters".into(),
                "name each schedule with a short, unique text such as \"nightly-report\"",
            ));
        }
        let recurrence = match &self.recurrence {
            Ok(recurrence) => recurrence.clone(),
            Err(e) => {
                return Err(problem(
                    e.clone(),
                    "use a cron expression of five fields (\"0 2 * * *\": 02:00 UTC daily) or \
                     six, seconds first (\"*/10 * * * * *\"), or Schedule::every with 1 s or more",
                ))
            }
        };
        let Some(message) = &self.message else {
            return Err(problem(
                "it has no message".into(),
                "say what each tick sends with .send(..), .send_to(queue, ..) or .publish(..)",
            ));
        };
        let destination = match &message.target {
            Target::Routed => {
                Destination::Queue(routes.queue_for_name(message.type_name).map_err(|_| {
                    problem(
                        format!("{} has no route", message.type_name),
                        "add .route::<M>(\"Queue\") to the builder, or use .send_to(\"Queue\", ..)",
                    )
                })?)
            }
            Target::Queue(queue) => Destination::Queue(resolve(queue)?),
            Target::Publish => Destination::Topic(message.type_name),
        };
        let target = match &destination {
            Destination::Queue(queue) => format!("send {}", queue.as_str()),
            Destination::Topic(topic) => format!("publish {topic}"),
        };
        Ok(DeclaredSchedule {
            name: self.name,
            recurrence,
            missed: self.missed,
            target,
            destination,
            make: message.make.clone(),
        })
    }
}

/// Parses and resolves a queue a schedule names, as the builder does its routes.
pub(crate) type Resolve<'a> = dyn Fn(&str) -> Result<QueueName> + 'a;

/// A schedule `build()` checked: its destination resolved.
#[derive(Clone)]
pub(crate) struct DeclaredSchedule {
    pub name: String,
    pub recurrence: Recurrence,
    pub missed: Missed,
    /// `send <queue>` or `publish <type>`, as `NimbusSchedules` keeps it for operators.
    pub target: String,
    destination: Destination,
    make: MakeMessage,
}

impl std::fmt::Debug for DeclaredSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredSchedule")
            .field("name", &self.name)
            .field("recurrence", &self.recurrence.describe())
            .field("missed", &self.missed)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl DeclaredSchedule {
    /// The message of the tick at `tick`, with the tick's own id.
    pub fn message(
        &self,
        origin: &Arc<EndpointIdentity>,
        tick: NaiveDateTime,
    ) -> Result<OutgoingMessage> {
        let id = tick_message_id(&origin.application, &self.name, tick);
        (self.make)(origin, self.destination.clone(), id, &self.name, tick)
    }
}

/// The namespace of the ids of scheduled messages (a UUID version 5 of the endpoint, the
/// schedule and the tick).
const TICK_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6e1d_b3c2_5a4f_4c1e_9b8d_2f7a_0c3e_5d91);

/// The message id of a tick: the same for the same endpoint, schedule and tick, whoever sends
/// it.
pub(crate) fn tick_message_id(endpoint: &str, schedule: &str, tick: NaiveDateTime) -> Uuid {
    let key = format!(
        "{endpoint}\u{1f}{schedule}\u{1f}{}",
        tick.and_utc().timestamp_millis()
    );
    Uuid::new_v5(&TICK_ID_NAMESPACE, key.as_bytes())
}

/// The endpoint's schedules, checked: names unique.
pub(crate) fn check_all(
    schedules: Vec<Schedule>,
    routes: &Routes,
    resolve: &Resolve<'_>,
) -> Result<Vec<DeclaredSchedule>> {
    let mut declared: Vec<DeclaredSchedule> = Vec::with_capacity(schedules.len());
    for schedule in schedules {
        let checked = schedule.checked(routes, resolve)?;
        if declared.iter().any(|d| d.name == checked.name) {
            return Err(NimbusError::config(
                format!("two schedules are named {:?}", checked.name),
                "give each schedule of an endpoint a name of its own",
            ));
        }
        declared.push(checked);
    }
    Ok(declared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Tick;
    impl Message for Tick {
        const TYPE_NAME: &'static str = "Tests.Tick";
        const KIND: crate::message::MessageKind = crate::message::MessageKind::Command;
    }
    impl Command for Tick {}

    fn routes() -> Routes {
        Routes::default()
    }

    fn check(schedules: Vec<Schedule>) -> Result<Vec<DeclaredSchedule>> {
        check_all(schedules, &routes(), &|queue| QueueName::parse(queue))
    }

    #[test]
    fn build_names_what_is_wrong_with_a_schedule() {
        let error = |s: Schedule| match check(vec![s]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert!(
            error(Schedule::cron("bad", "61 * * * *").send_to("Q", Tick)).contains("not valid")
        );
        assert!(
            error(Schedule::every("fast", Duration::from_millis(10)).send_to("Q", Tick))
                .contains("minimum of 1 s")
        );
        assert!(error(Schedule::every("none", Duration::from_secs(1))).contains("no message"));
        assert!(
            error(Schedule::every("unrouted", Duration::from_secs(1)).send(Tick))
                .contains("has no route")
        );
        let twice = check(vec![
            Schedule::every("same", Duration::from_secs(1)).send_to("Q", Tick),
            Schedule::every("same", Duration::from_secs(2)).send_to("Q", Tick),
        ]);
        assert!(twice.is_err_and(|e| e.to_string().contains("two schedules")));
    }

    #[test]
    fn a_tick_has_the_same_id_whoever_sends_it_and_another_tick_another() {
        let tick = chrono::DateTime::from_timestamp(1_800_000_000, 0)
            .expect("a time")
            .naive_utc();
        let later = tick + chrono::Duration::seconds(1);
        assert_eq!(
            tick_message_id("A", "s", tick),
            tick_message_id("A", "s", tick)
        );
        assert_ne!(
            tick_message_id("A", "s", tick),
            tick_message_id("A", "s", later)
        );
        assert_ne!(
            tick_message_id("A", "s", tick),
            tick_message_id("B", "s", tick)
        );
    }
}
