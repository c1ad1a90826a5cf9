//! Recurring messages: at start, the endpoint's declared schedules are written to
//! `NimbusSchedules` (added, changed, or deleted when the code no longer declares them); then
//! one actor per bus reads the endpoint's rows, fires each due tick in a transaction of its own
//! that moves the row on and sends the tick's message, and sleeps until the next tick (at most
//! [`MAX_WAIT`], so that pauses, resumes and other instances' changes are seen).
//!
//! Every instance of the endpoint runs one. Which of them sends a tick is settled by the row:
//! the fire is an update that compares the row's `Version`, so the first transaction to commit
//! sends the tick and every other one finds the row moved on and sends nothing.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::Shutdown;
use crate::error::{NimbusError, Result};
use crate::pipeline::schedule::DeclaredSchedule;
use crate::pipeline::EndpointState;
use crate::transport::schedules::{plan_round, Recurrence};
use crate::transport::{Missed, ScheduleDefinition, ScheduleFiring, ScheduleRow};

/// The longest the actor sleeps between two reads of its rows.
const MAX_WAIT: Duration = Duration::from_secs(5);

/// The longest it waits before it tries again after a failed round.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The most ticks of one schedule a round fires before it reads the rows again.
const MAX_TICKS_PER_ROUND: usize = 20;

/// Writes the endpoint's schedules to `NimbusSchedules`: adds the new ones, gives changed ones
/// their new definition (from their next tick after now), and deletes those the code no longer
/// declares. Each change is logged.
///
/// An endpoint that declares none only deletes what an earlier version declared; where it
/// cannot read `NimbusSchedules` (a schema made before schedules, with auto-create off) there
/// is nothing of its own to delete.
pub(crate) async fn declare(endpoint: &EndpointState) -> Result<()> {
    let transport = &endpoint.transport;
    let application = endpoint.config.identity.application.as_str();
    let declared = &endpoint.config.schedules;
    let listed = match transport.schedules(Some(application)).await {
        Ok(listed) => listed,
        Err(e) if declared.is_empty() => {
            tracing::debug!(error = %e, "no schedules to look for: NimbusSchedules cannot be read");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for schedule in declared {
        let (cron, every_ms) = schedule.recurrence.columns();
        let existing = listed.rows.iter().find(|row| row.name == schedule.name);
        let same_times = existing.is_some_and(|row| {
            Recurrence::from_columns(row.cron.as_deref(), row.every_ms)
                .ok()
                .as_ref()
                == Some(&schedule.recurrence)
        });
        let next_due = match existing {
            // Same times: its next tick stays where it is.
            Some(row) if same_times => row.next_due,
            _ => schedule.recurrence.first_after(listed.now).ok_or_else(|| {
                NimbusError::config(
                    format!("schedule {:?} has no tick after now", schedule.name),
                    "use a cron expression that matches a time to come",
                )
            })?,
        };
        let definition = ScheduleDefinition {
            endpoint: application,
            name: &schedule.name,
            cron,
            every_ms,
            target: &schedule.target,
            missed: schedule.missed.as_str(),
            next_due,
        };
        match existing {
            None => {
                if transport.declare_schedule(&definition).await? {
                    tracing::info!(
                        schedule = %schedule.name,
                        recurrence = %schedule.recurrence.describe(),
                        target = %schedule.target,
                        next_due = %next_due,
                        "schedule added: its first tick is at next_due (UTC)"
                    );
                }
            }
            Some(row)
                if same_times
                    && row.target == schedule.target
                    && row.missed == schedule.missed.as_str() => {}
            Some(row) => {
                if transport
                    .redefine_schedule(&definition, row.version)
                    .await?
                {
                    tracing::info!(
                        schedule = %schedule.name,
                        recurrence = %schedule.recurrence.describe(),
                        target = %schedule.target,
                        missed = schedule.missed.as_str(),
                        next_due = %next_due,
                        "schedule changed by this version of the endpoint"
                    );
                }
            }
        }
    }
    for row in &listed.rows {
        if declared.iter().all(|schedule| schedule.name != row.name)
            && transport.retire_schedule(application, &row.name).await?
        {
            tracing::info!(
                schedule = %row.name,
                fired = row.fired,
                "schedule removed: this version of the endpoint no longer declares it, so no instance fires it again"
            );
        }
    }
    Ok(())
}

/// What the actor remembers between rounds, to log a change once rather than every round.
#[derive(Default)]
struct Seen {
    /// Schedules whose rows were missing at the last round.
    gone: HashSet<String>,
    /// Schedules that were paused at the last round.
    paused: HashSet<String>,
    /// Schedules due but without a tick to move on to, reported once.
    ended: HashSet<String>,
}

/// Fires the endpoint's due ticks.
pub(crate) struct Scheduler {
    endpoint: Arc<EndpointState>,
    seen: Arc<Mutex<Seen>>,
    failures: u32,
}

impl Scheduler {
    pub(crate) fn new(endpoint: Arc<EndpointState>) -> Scheduler {
        Scheduler {
            endpoint,
            seen: Arc::default(),
            failures: 0,
        }
    }

    fn start_round(&mut self, ctx: &mut Context<Self>) {
        let (endpoint, seen) = (self.endpoint.clone(), self.seen.clone());
        ctx.spawn(
            async move { round(&endpoint, &seen).await }
                .into_actor(self)
                .map(|result, act, ctx| {
                    let wait = act.finished(result);
                    ctx.run_later(wait, |act, ctx| act.start_round(ctx));
                }),
        );
    }

    /// How long to wait before the next round.
    fn finished(&mut self, result: Result<Duration>) -> Duration {
        match result {
            Ok(wait) => {
                if self.failures > 0 {
                    tracing::info!(job = "schedules", failures = self.failures, "recovered");
                }
                self.failures = 0;
                wait
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let backoff = Duration::from_secs(1)
                    .saturating_mul(1 << self.failures.saturating_sub(1).min(16))
                    .min(MAX_BACKOFF);
                if self.failures.is_power_of_two() {
                    tracing::warn!(
                        job = "schedules",
                        failures = self.failures,
                        retry_in = ?backoff,
                        error = %e,
                        "failed; backing off: due ticks wait"
                    );
                }
                backoff
            }
        }
    }
}

/// One round: reads the endpoint's rows and fires what is due. Returns how long to sleep.
async fn round(endpoint: &EndpointState, seen: &Mutex<Seen>) -> Result<Duration> {
    let identity = &endpoint.config.identity;
    let listed = endpoint
        .transport
        .schedules(Some(&identity.application))
        .await?;
    let read_at = Instant::now();
    // The database's time now: its time at the read, and what has passed here since.
    let database_now = || {
        chrono::Duration::from_std(read_at.elapsed())
            .ok()
            .and_then(|passed| listed.now.checked_add_signed(passed))
            .unwrap_or(listed.now)
    };
    let mut wait = MAX_WAIT;
    for schedule in &endpoint.config.schedules {
        let row = listed.rows.iter().find(|row| row.name == schedule.name);
        let Some(row) = noted(&identity.application, seen, schedule, row) else {
            continue;
        };
        // The row's times, which every instance reads alike (another version of the endpoint
        // may have changed them); the message is this code's.
        let recurrence = Recurrence::from_columns(row.cron.as_deref(), row.every_ms)
            .map_err(|e| unreadable(&schedule.name, &e))?;
        let missed = Missed::parse(&row.missed);
        let mut next_due = row.next_due;
        for version in (row.version..).take(MAX_TICKS_PER_ROUND) {
            let now = database_now();
            let Some(plan) = plan_round(&recurrence, missed, next_due, now) else {
                if next_due <= now {
                    ended(seen, schedule, next_due);
                }
                break;
            };
            let message = match plan.send_for {
                Some(tick) => Some(schedule.message(identity, tick)?),
                None => None,
            };
            let firing = ScheduleFiring {
                endpoint: &identity.application,
                name: &schedule.name,
                version,
                next_due: plan.next_due,
                sent: i64::from(message.is_some()),
                missed: plan.missed,
                last_due: plan.send_for,
                fired_by: &identity.instance,
            };
            if !endpoint.transport.fire_schedule(&firing, message).await? {
                // Another instance moved it first (or it was paused): read it again at once.
                tracing::debug!(schedule = %schedule.name, "another instance fired the tick");
                return Ok(Duration::ZERO);
            }
            record(schedule, &firing, now);
            next_due = plan.next_due;
        }
        let until = (next_due - database_now()).to_std().unwrap_or_default();
        wait = wait.min(until);
    }
    Ok(wait)
}

/// The schedule's row if it is there and running; logs, once per change, a row that is gone
/// (another version of the endpoint removed it) or paused.
fn noted<'r>(
    endpoint: &str,
    seen: &Mutex<Seen>,
    schedule: &DeclaredSchedule,
    row: Option<&'r ScheduleRow>,
) -> Option<&'r ScheduleRow> {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    let name = &schedule.name;
    let Some(row) = row else {
        if seen.gone.insert(name.clone()) {
            tracing::warn!(
                schedule = %name,
                "schedule is gone from NimbusSchedules (removed by the start of a version of the endpoint that no longer declares it, or by hand): this instance does not fire it; a restart declares it again"
            );
        }
        return None;
    };
    if seen.gone.remove(name) {
        tracing::info!(schedule = %name, "schedule is back in NimbusSchedules: firing again");
    }
    let paused = row.paused_at.is_some();
    metrics::gauge!(
        "nimbus_schedule_paused",
        "endpoint" => endpoint.to_string(),
        "schedule" => name.clone()
    )
    .set(if paused { 1.0 } else { 0.0 });
    if paused {
        if seen.paused.insert(name.clone()) {
            tracing::info!(
                schedule = %name,
                paused_by = row.paused_by.as_deref().unwrap_or(""),
                "schedule is paused: no tick fires until it is resumed"
            );
        }
        return None;
    }
    if seen.paused.remove(name) {
        tracing::info!(schedule = %name, next_due = %row.next_due, "schedule resumed");
    }
    Some(row)
}

/// Reports, once, a schedule that is due but has no tick after it (a cron expression whose
/// last matching time has passed, a row edited by hand): it fires no more.
fn ended(seen: &Mutex<Seen>, schedule: &DeclaredSchedule, next_due: chrono::NaiveDateTime) {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    if seen.ended.insert(schedule.name.clone()) {
        tracing::warn!(
            schedule = %schedule.name,
            next_due = %next_due,
            "schedule is due but has no tick after this one: it fires no more; change its times in the code"
        );
    }
}

/// Counts and logs a fired round.
fn record(schedule: &DeclaredSchedule, firing: &ScheduleFiring<'_>, now: chrono::NaiveDateTime) {
    let name = schedule.name.clone();
    if let Some(tick) = firing.last_due {
        metrics::counter!(
            "nimbus_schedule_ticks_fired_total",
            "endpoint" => firing.endpoint.to_string(),
            "schedule" => name.clone()
        )
        .increment(1);
        let late = (now - tick).to_std().unwrap_or_default();
        metrics::histogram!(
            "nimbus_schedule_lateness_seconds",
            "endpoint" => firing.endpoint.to_string(),
            "schedule" => name.clone()
        )
        .record(late.as_secs_f64());
        tracing::debug!(schedule = %name, tick = %tick, late = ?late, "schedule fired");
    }
    if firing.missed > 0 {
        let outcome = if firing.sent > 0 {
            "fired_once"
        } else {
            "skipped"
        };
        metrics::counter!(
            "nimbus_schedule_ticks_missed_total",
            "endpoint" => firing.endpoint.to_string(),
            "schedule" => name.clone(),
            "outcome" => outcome
        )
        .increment(u64::try_from(firing.missed).unwrap_or_default());
        tracing::info!(
            schedule = %name,
            missed = firing.missed,
            policy = schedule.missed.as_str(),
            next_due = %firing.next_due,
            "{} ticks came due while no instance fired them: {}",
            firing.missed,
            if firing.sent > 0 {
                "one message sent for them all"
            } else {
                "skipped"
            }
        );
    }
}

fn unreadable(name: &str, e: &str) -> NimbusError {
    NimbusError::config(
        format!("the row of schedule {name:?} in NimbusSchedules cannot be read: {e}"),
        "restart the endpoint, which writes the schedule's definition again, or delete the row",
    )
}

impl Actor for Scheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if super::started_without_a_runtime() {
            ctx.stop();
            return;
        }
        self.start_round(ctx);
    }
}

impl Handler<Shutdown> for Scheduler {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
