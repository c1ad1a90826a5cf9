//! Recurring messages: when a schedule's ticks fall (a cron expression or a fixed interval, in
//! UTC by the database's clock), what a round does with the ticks that came due, and the
//! schedules as operators see them. The rows live in `NimbusSchedules`; which instance sends a
//! tick is settled there (see `schedule_fire.sql`), never in one process's memory.

use std::time::Duration;

use chrono::{NaiveDateTime, TimeZone, Timelike, Utc};

use crate::driver::schedule_statements::ScheduleRow;

/// The shortest interval of a schedule: ticks are kept to the database's clock in whole
/// milliseconds, and each tick is a transaction.
pub const MIN_SCHEDULE_INTERVAL: Duration = Duration::from_secs(1);

/// How late a tick may be and still be sent as its own message. A round that finds its oldest
/// due tick later than this treats every due tick as missed (the endpoint was down, or paused
/// by the machine): they are sent once or skipped, as the schedule's [`Missed`] says, never one
/// message each.
pub const CATCH_UP_WITHIN: Duration = Duration::from_secs(10);

/// What a schedule does with ticks that came due while no instance of its endpoint ran (later
/// than [`CATCH_UP_WITHIN`] when an instance got to them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missed {
    /// One message for all of them, at once, stamped with the latest missed tick; then the
    /// schedule goes on at its times. The default.
    #[default]
    FireOnce,
    /// No message for them: the schedule goes on at its next tick.
    Skip,
}

impl Missed {
    /// The name kept in `NimbusSchedules` and shown to operators.
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::FireOnce => "fire-once",
            Missed::Skip => "skip",
        }
    }

    /// Reads a name [`Missed::as_str`] wrote; an unknown one is the default.
    pub(crate) fn parse(name: &str) -> Missed {
        if name == Missed::Skip.as_str() {
            Missed::Skip
        } else {
            Missed::FireOnce
        }
    }
}

/// When a schedule's ticks fall.
#[derive(Clone, Debug)]
pub(crate) enum Recurrence {
    /// The times a cron expression matches, in UTC: five fields (minute granularity) or six
    /// (seconds first).
    Cron {
        expression: String,
        cron: Box<croner::Cron>,
    },
    /// Every interval, from the first start that declared the schedule.
    Every(Duration),
}

impl PartialEq for Recurrence {
    fn eq(&self, other: &Self) -> bool {
        self.columns() == other.columns()
    }
}

impl Recurrence {
    /// Parses a cron expression, or says what is wrong with it.
    pub fn cron(expression: &str) -> Result<Recurrence, String> {
        let cron = croner::parser::CronParser::new()
            .parse(expression)
            .map_err(|e| e.to_string())?;
        let recurrence = Recurrence::Cron {
            expression: expression.trim().to_string(),
            cron: Box::new(cron),
        };
        // An expression that never matches again (the 31st of February, a year gone by) is
        // refused now, not at its first tick.
        let probe = Utc::now().naive_utc();
        if recurrence.next_after(probe).is_none() {
            return Err("it matches no time".into());
        }
        Ok(recurrence)
    }

    /// A fixed interval of at least [`MIN_SCHEDULE_INTERVAL`].
    pub fn every(interval: Duration) -> Result<Recurrence, String> {
        if interval < MIN_SCHEDULE_INTERVAL {
            return Err(format!(
                "an interval of {interval:?} is below the minimum of 1 s"
            ));
        }
        Ok(Recurrence::Every(interval))
    }

    /// Reads the `Cron` and `EveryMs` columns back.
    pub fn from_columns(cron: Option<&str>, every_ms: Option<i64>) -> Result<Recurrence, String> {
        match (cron, every_ms) {
            (Some(expression), _) => Recurrence::cron(expression),
            (None, Some(ms)) => Recurrence::every(Duration::from_millis(ms.max(0) as u64)),
            (None, None) => Err("a schedule row with neither Cron nor EveryMs".into()),
        }
    }

    /// The `Cron` and `EveryMs` columns.
    pub fn columns(&self) -> (Option<&str>, Option<i64>) {
        match self {
            Recurrence::Cron { expression, .. } => (Some(expression), None),
            Recurrence::Every(interval) => (
                None,
                Some(i64::try_from(interval.as_millis()).unwrap_or(i64::MAX)),
            ),
        }
    }

    /// The first tick strictly after `t` (UTC); `None` when there is none (a cron expression
    /// past its last year).
    pub fn next_after(&self, t: NaiveDateTime) -> Option<NaiveDateTime> {
        match self {
            Recurrence::Cron { cron, .. } => {
                // Cron times are whole seconds: the search starts from the second `t` is in.
                let second = t.with_nanosecond(0).unwrap_or(t);
                cron.find_next_occurrence(&Utc.from_utc_datetime(&second), false)
                    .ok()
                    .map(|next| next.naive_utc())
            }
            Recurrence::Every(interval) => {
                let step = chrono::Duration::from_std(*interval).ok()?;
                // None past the last time chrono holds (a row edited by hand), not a panic.
                t.checked_add_signed(step).map(truncate_to_ms)
            }
        }
    }

    /// The first tick after `now` of the ticks that follow `tick`: for an interval, in step with
    /// `tick` (`tick` plus a whole number of intervals).
    pub fn next_in_step_after(
        &self,
        tick: NaiveDateTime,
        now: NaiveDateTime,
    ) -> Option<NaiveDateTime> {
        match self {
            Recurrence::Cron { .. } => self.next_after(now),
            Recurrence::Every(interval) => {
                let step = i64::try_from(interval.as_millis()).ok()?.max(1);
                let behind = (now - tick).num_milliseconds().max(0);
                let steps = behind / step + 1;
                tick.checked_add_signed(chrono::Duration::milliseconds(steps.checked_mul(step)?))
            }
        }
    }

    /// The first tick of a schedule declared at `now`: the cron expression's next match, or
    /// one interval from now.
    pub fn first_after(&self, now: NaiveDateTime) -> Option<NaiveDateTime> {
        self.next_after(truncate_to_ms(now))
    }

    /// How operators read it: `cron 0 2 * * *` or `every 30s`.
    pub fn describe(&self) -> String {
        match self {
            Recurrence::Cron { expression, .. } => format!("cron {expression}"),
            Recurrence::Every(interval) => format!(
                "every {}",
                humantime_serde::re::humantime::format_duration(*interval)
            ),
        }
    }
}

/// `t` to whole milliseconds, which every database keeps exactly.
fn truncate_to_ms(t: NaiveDateTime) -> NaiveDateTime {
    let ms = t.and_utc().timestamp_millis();
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.naive_utc())
        .unwrap_or(t)
}

/// What one round does with a schedule whose next tick is `next_due`, at `now` (both database
/// time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickPlan {
    /// The tick a message is sent for, if any.
    pub send_for: Option<NaiveDateTime>,
    /// Ticks that came due and get no message of their own.
    pub missed: i64,
    /// Where the schedule moves on to.
    pub next_due: NaiveDateTime,
}

/// The most ticks a round counts one by one before it jumps to the first tick after `now`.
const MAX_COUNTED_TICKS: i64 = 100_000;

/// Plans a round for a due schedule (`next_due <= now`); `None` when it is not due, or has no
/// tick after `now` any more.
///
/// A tick at most [`CATCH_UP_WITHIN`] late is sent as its own message, and the schedule moves
/// to the tick after it (which the next round sends at once if it is due too): a loaded
/// machine catches up without a gap. A due tick later than that means nobody ran the schedule
/// for a while: every due tick counts as missed, `missed` says what they become, and the
/// schedule moves to its first tick after `now`.
pub(crate) fn plan_round(
    recurrence: &Recurrence,
    missed: Missed,
    next_due: NaiveDateTime,
    now: NaiveDateTime,
) -> Option<TickPlan> {
    if next_due > now {
        return None;
    }
    let late = (now - next_due).to_std().unwrap_or_default();
    if late <= CATCH_UP_WITHIN {
        return Some(TickPlan {
            send_for: Some(next_due),
            missed: 0,
            next_due: recurrence.next_after(next_due)?,
        });
    }
    let mut due = 1_i64;
    let mut latest = next_due;
    let mut next = recurrence.next_after(next_due)?;
    while next <= now && due < MAX_COUNTED_TICKS {
        due += 1;
        latest = next;
        next = recurrence.next_after(next)?;
    }
    if next <= now {
        // Too many to count: the schedule jumps to its first tick after `now`.
        next = recurrence.next_in_step_after(next, now)?;
    }
    Some(match missed {
        Missed::FireOnce => TickPlan {
            send_for: Some(latest),
            missed: due - 1,
            next_due: next,
        },
        Missed::Skip => TickPlan {
            send_for: None,
            missed: due,
            next_due: next,
        },
    })
}

/// A schedule as operators see it: from [`Database::schedules`](crate::admin::Database::schedules),
/// `nimbus schedules list` and the console.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleState {
    /// The endpoint (application) that declares it.
    pub endpoint: String,
    /// Its name, unique in its endpoint.
    pub name: String,
    /// When it fires: `cron <expression>` or `every <interval>`.
    pub recurrence: String,
    /// What a tick sends: `send <queue>` or `publish <message type>`.
    pub target: String,
    /// What it does with missed ticks: `fire-once` or `skip`.
    pub missed: String,
    /// Its next tick (UTC, database time).
    pub next_due: NaiveDateTime,
    /// The tick its last message was sent for.
    pub last_due: Option<NaiveDateTime>,
    /// When its last message was sent (database time).
    pub last_fired_at: Option<NaiveDateTime>,
    /// The instance that sent it.
    pub last_fired_by: Option<String>,
    /// Messages sent since it was declared.
    pub fired: i64,
    /// Ticks that came due and got no message of their own.
    pub missed_ticks: i64,
    /// When an operator paused it; `None` while it runs.
    pub paused_at: Option<NaiveDateTime>,
    /// Who paused it.
    pub paused_by: Option<String>,
}

impl ScheduleState {
    pub(crate) fn from_row(row: ScheduleRow) -> ScheduleState {
        let recurrence = match Recurrence::from_columns(row.cron.as_deref(), row.every_ms) {
            Ok(recurrence) => recurrence.describe(),
            Err(e) => format!("unreadable: {e}"),
        };
        ScheduleState {
            endpoint: row.endpoint,
            name: row.name,
            recurrence,
            target: row.target,
            missed: row.missed,
            next_due: row.next_due,
            last_due: row.last_due,
            last_fired_at: row.last_fired_at,
            last_fired_by: row.last_fired_by,
            fired: row.fired,
            missed_ticks: row.missed_ticks,
            paused_at: row.paused_at,
            paused_by: row.paused_by,
        }
    }
}

/// Counts a pause or a resume of a schedule by an operator (`operation`) and whether it changed
/// anything, in `nimbus_schedule_changes_total`, and logs it at INFO.
pub(crate) fn record_operator_change(
    operation: &'static str,
    endpoint: &str,
    name: &str,
    changed: bool,
) {
    metrics::counter!(
        "nimbus_schedule_changes_total",
        "operation" => operation,
        "changed" => if changed { "true" } else { "false" }
    )
    .increment(1);
    if changed {
        tracing::info!(
            endpoint,
            schedule = name,
            operation,
            "schedule {operation}d"
        );
    } else {
        tracing::info!(
            endpoint,
            schedule = name,
            operation,
            "schedule unchanged: it was {} already",
            if operation == "pause" {
                "paused"
            } else {
                "running"
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").expect("a time")
    }

    #[test]
    fn cron_expressions_with_and_without_seconds_fall_in_utc() {
        let nightly = Recurrence::cron("0 2 * * *").expect("five fields");
        assert_eq!(
            nightly.next_after(at("2026-12-06 01:59:59.5")),
            Some(at("2026-12-06 02:00:00"))
        );
        assert_eq!(
            nightly.next_after(at("2026-12-06 02:00:00")),
            Some(at("2026-12-07 02:00:00")),
            "strictly after"
        );
        let every_second = Recurrence::cron("* * * * * *").expect("six fields");
        assert_eq!(
            every_second.next_after(at("2026-12-06 10:00:00.250")),
            Some(at("2026-12-06 10:00:01"))
        );
        assert!(Recurrence::cron("0 2 * *").is_err(), "four fields");
        assert!(Recurrence::cron("0 0 31 2 *").is_err(), "never matches");
    }

    #[test]
    fn intervals_step_from_the_last_tick_in_whole_milliseconds() {
        let every = Recurrence::every(Duration::from_millis(1500)).expect("valid");
        assert_eq!(
            every.first_after(at("2026-12-06 10:00:00.000700")),
            Some(at("2026-12-06 10:00:01.500"))
        );
        assert!(Recurrence::every(Duration::from_millis(999)).is_err());
        assert_eq!(
            Recurrence::from_columns(None, Some(1500)).expect("read back"),
            every
        );
        assert_eq!(every.describe(), "every 1s 500ms");
    }

    #[test]
    fn a_late_tick_is_sent_on_its_own_and_the_next_follows() {
        let every = Recurrence::every(Duration::from_secs(1)).expect("valid");
        let due = at("2026-12-06 10:00:00");
        assert_eq!(
            plan_round(&every, Missed::FireOnce, due, at("2026-12-06 09:59:59.9")),
            None
        );
        // Three ticks due, the oldest 2.5 s late: a loaded machine, not downtime.
        let plan = plan_round(&every, Missed::Skip, due, at("2026-12-06 10:00:02.5")).expect("due");
        assert_eq!(
            plan,
            TickPlan {
                send_for: Some(due),
                missed: 0,
                next_due: at("2026-12-06 10:00:01")
            }
        );
    }

    #[test]
    fn ticks_missed_while_nobody_ran_fire_once_or_are_skipped() {
        let every = Recurrence::every(Duration::from_secs(1)).expect("valid");
        let due = at("2026-12-06 10:00:00");
        let now = at("2026-12-06 10:00:30.5");
        let once = plan_round(&every, Missed::FireOnce, due, now).expect("due");
        assert_eq!(
            once,
            TickPlan {
                send_for: Some(at("2026-12-06 10:00:30")),
                missed: 30,
                next_due: at("2026-12-06 10:00:31")
            }
        );
        let skipped = plan_round(&every, Missed::Skip, due, now).expect("due");
        assert_eq!(skipped.send_for, None);
        assert_eq!(skipped.missed, 31);
        assert_eq!(skipped.next_due, at("2026-12-06 10:00:31"));
    }

    #[test]
    fn a_very_long_outage_jumps_instead_of_counting_forever() {
        let every = Recurrence::every(Duration::from_secs(1)).expect("valid");
        let due = at("2026-01-01 00:00:00");
        let now = at("2026-12-06 10:00:00.5");
        let plan = plan_round(&every, Missed::FireOnce, due, now).expect("due");
        assert_eq!(plan.missed, MAX_COUNTED_TICKS - 1);
        assert_eq!(plan.next_due, at("2026-12-06 10:00:01"));
    }

    #[test]
    fn missed_policies_round_trip_through_their_names() {
        for missed in [Missed::FireOnce, Missed::Skip] {
            assert_eq!(Missed::parse(missed.as_str()), missed);
        }
    }
}
