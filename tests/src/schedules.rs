//! Recurring messages (`Schedule`): each tick fired once across instances, pauses and resumes,
//! schedules changed or removed by a new version of the code, missed ticks after downtime.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, Missed, Schedule, ScheduleState};

use crate::suite::Numbered;
use crate::{eventually, Kind, Setup, TestDatabase};

/// Where the scheduled messages go.
const TICKS: &str = "Ticks";
/// The endpoint that declares the schedules.
const CLOCK: &str = "Clock";

/// One handled scheduled message: its schedule, its tick and its message id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tick {
    pub schedule: String,
    pub scheduled_for: String,
    pub message_id: String,
}

/// Records the headers of every scheduled message it handles.
#[derive(Clone, Default)]
pub struct TickRecorder {
    pub seen: Arc<Mutex<Vec<Tick>>>,
}

impl TickRecorder {
    pub fn ticks(&self) -> Vec<Tick> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self, schedule: &str) -> usize {
        self.ticks()
            .iter()
            .filter(|t| t.schedule == schedule)
            .count()
    }
}

#[nimbus::handler]
impl Handler<Numbered> for TickRecorder {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let header = |name: &str| ctx.headers().get(name).cloned().unwrap_or_default();
        self.seen.lock().unwrap().push(Tick {
            schedule: header("Nimbus.Schedule"),
            scheduled_for: header("Nimbus.ScheduledFor"),
            message_id: header("NServiceBus.MessageId"),
        });
        Ok(())
    }
}

/// The endpoint that handles the scheduled messages.
pub async fn tick_receiver(db: &TestDatabase) -> (nimbus::Bus, TickRecorder) {
    let recorder = TickRecorder::default();
    let bus = db
        .builder(TICKS, "ticks-1")
        .handler::<Numbered, _>(recorder.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    (bus, recorder)
}

async fn clock(db: &TestDatabase, instance: &str, schedules: Vec<Schedule>) -> nimbus::Bus {
    let mut builder = db.builder(CLOCK, instance);
    for schedule in schedules {
        builder = builder.schedule(schedule);
    }
    builder.build().unwrap().start().await.unwrap()
}

fn every_second(name: &str) -> Schedule {
    Schedule::every(name, Duration::from_secs(1)).send_to(TICKS, Numbered { n: 0 })
}

/// The ticks of `schedule` as times, in order.
fn tick_times(ticks: &[Tick], schedule: &str) -> Vec<chrono::NaiveDateTime> {
    let mut times: Vec<_> = ticks
        .iter()
        .filter(|t| t.schedule == schedule)
        .map(|t| {
            chrono::NaiveDateTime::parse_from_str(&t.scheduled_for, "%Y-%m-%d %H:%M:%S:%6f Z")
                .unwrap_or_else(|e| panic!("{:?}: {e}", t.scheduled_for))
        })
        .collect();
    times.sort();
    times
}

/// Every tick handled once, one second after the one before: no double, no gap.
pub fn assert_each_tick_once(ticks: &[Tick], schedule: &str) {
    let times = tick_times(ticks, schedule);
    let distinct: BTreeSet<_> = times.iter().collect();
    assert_eq!(
        distinct.len(),
        times.len(),
        "a tick handled twice: {times:?}"
    );
    let ids: BTreeSet<_> = ticks.iter().map(|t| &t.message_id).collect();
    assert_eq!(ids.len(), ticks.len(), "two messages with one id");
    for pair in times.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            chrono::Duration::seconds(1),
            "a gap or a double between two ticks: {times:?}"
        );
    }
}

async fn schedule_state(db: &TestDatabase, name: &str) -> Option<ScheduleState> {
    db.admin()
        .schedules(Some(CLOCK))
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.name == name)
}

/// Once the clocks stopped: waits until every tick of `pulse` its row says was sent is
/// handled, stops the receiver and checks each tick was handled once, with no gap; returns the
/// row and the ticks.
async fn every_sent_tick_handled_once(
    db: &TestDatabase,
    receiver: nimbus::Bus,
    recorder: &TickRecorder,
) -> (ScheduleState, Vec<Tick>) {
    let state = schedule_state(db, "pulse")
        .await
        .expect("the schedule's row");
    eventually("every tick sent is handled", async || {
        recorder.count("pulse") as i64 >= state.fired
    })
    .await;
    receiver.stop().await.unwrap();
    let ticks = recorder.ticks();
    assert_each_tick_once(&ticks, "pulse");
    assert_eq!(ticks.len() as i64, state.fired, "{state:?}");
    (state, ticks)
}

/// How many ticks the schedule tests wait for with three instances (the proof runs
/// 120: `NIMBUS_SCHEDULE_TICKS=120`).
fn ticks_to_wait_for() -> usize {
    std::env::var("NIMBUS_SCHEDULE_TICKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

/// Three instances of one endpoint declare one schedule of a second: each tick is handled once,
/// a second after the one before, and the schedule's row counts what was sent.
pub async fn a_schedule_fires_each_tick_once_across_instances(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let (receiver, recorder) = tick_receiver(&db).await;
    let mut clocks = Vec::new();
    for i in 1..=3 {
        clocks.push(clock(&db, &format!("clock-{i}"), vec![every_second("pulse")]).await);
    }
    let wanted = ticks_to_wait_for();
    crate::eventually_within(
        "the ticks are handled",
        Duration::from_secs(60 + 2 * wanted as u64),
        async || recorder.count("pulse") >= wanted,
    )
    .await;
    for clock in &clocks {
        clock.stop().await.unwrap();
    }
    let (state, _) = every_sent_tick_handled_once(&db, receiver, &recorder).await;
    assert_eq!(state.missed_ticks, 0, "{state:?}");
    assert_eq!(state.recurrence, "every 1s");
    assert_eq!(state.target, format!("send {TICKS}"));
    assert!(state
        .last_fired_by
        .as_deref()
        .is_some_and(|by| by.starts_with("clock-")));
}

/// An operator pauses a schedule (no tick fires, in any instance) and resumes it from its next
/// tick after now; a second pause or resume says it changed nothing.
pub async fn a_paused_schedule_fires_nothing_until_resumed(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let (receiver, recorder) = tick_receiver(&db).await;
    let clock = clock(&db, "clock-1", vec![every_second("pulse")]).await;
    eventually("a first tick", async || recorder.count("pulse") >= 1).await;

    assert!(db
        .admin()
        .pause_schedule(CLOCK, "pulse", "the test")
        .await
        .unwrap());
    assert!(!db
        .admin()
        .pause_schedule(CLOCK, "pulse", "the test")
        .await
        .unwrap());
    let paused = schedule_state(&db, "pulse").await.expect("row");
    assert!(paused.paused_at.is_some());
    assert_eq!(paused.paused_by.as_deref(), Some("the test"));
    eventually("what was sent before the pause is handled", async || {
        recorder.count("pulse") as i64 >= paused.fired
    })
    .await;
    // Three ticks' time passes while paused (the condition is time itself).
    let paused_at = std::time::Instant::now();
    eventually("three seconds pass", async || {
        paused_at.elapsed() >= Duration::from_secs(3)
    })
    .await;
    let still = schedule_state(&db, "pulse").await.expect("row");
    assert_eq!(still.fired, paused.fired, "a tick fired while paused");

    assert!(db.admin().resume_schedule(CLOCK, "pulse").await.unwrap());
    assert!(!db.admin().resume_schedule(CLOCK, "pulse").await.unwrap());
    let resumed = schedule_state(&db, "pulse").await.expect("row");
    assert!(resumed.paused_at.is_none());
    assert!(resumed.next_due > paused.next_due, "{resumed:?} {paused:?}");
    eventually("ticks fire again", async || {
        recorder.count("pulse") as i64 > paused.fired
    })
    .await;
    let times = tick_times(&recorder.ticks(), "pulse");
    let last_before = paused.last_due.expect("a tick before the pause");
    assert!(
        times
            .iter()
            .all(|t| *t <= last_before || *t >= resumed.next_due),
        "a tick that came due while paused fired: {times:?}"
    );
    let unknown = db
        .admin()
        .pause_schedule(CLOCK, "no-such-schedule", "the test")
        .await
        .expect_err("an unknown schedule");
    assert!(unknown.to_string().contains("pulse of Clock"), "{unknown}");
    clock.stop().await.unwrap();
    receiver.stop().await.unwrap();
}

/// A new version of the endpoint's code changes one schedule's times and drops another: at its
/// start the changed one takes its new times and the dropped one is deleted; a version that
/// declares none deletes the rest.
pub async fn schedules_follow_the_code_that_declares_them(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let hourly = || Schedule::cron("hourly", "0 * * * *").send_to(TICKS, Numbered { n: 1 });
    let first = clock(&db, "clock-1", vec![every_second("pulse"), hourly()]).await;
    let names = |states: Vec<ScheduleState>| -> Vec<(String, String)> {
        states.into_iter().map(|s| (s.name, s.recurrence)).collect()
    };
    assert_eq!(
        names(db.admin().schedules(Some(CLOCK)).await.unwrap()),
        vec![
            ("hourly".to_string(), "cron 0 * * * *".to_string()),
            ("pulse".to_string(), "every 1s".to_string())
        ]
    );
    first.stop().await.unwrap();
    let slower = Schedule::every("pulse", Duration::from_secs(3600))
        .missed(Missed::Skip)
        .send_to(TICKS, Numbered { n: 0 });
    let second = clock(&db, "clock-1", vec![slower]).await;
    let states = db.admin().schedules(Some(CLOCK)).await.unwrap();
    assert_eq!(states.len(), 1, "{states:?}");
    assert_eq!(states[0].recurrence, "every 1h");
    assert_eq!(states[0].missed, "skip");
    second.stop().await.unwrap();
    let third = clock(&db, "clock-1", vec![]).await;
    assert!(db.admin().schedules(Some(CLOCK)).await.unwrap().is_empty());
    third.stop().await.unwrap();
}

/// Moves the next tick of `schedule` back by `seconds`, as if no instance had run since.
async fn pretend_downtime(db: &TestDatabase, schedule: &str, seconds: i64) {
    let table = db.table("NimbusSchedules");
    let sql = match db.kind {
        Kind::Sqlite => format!(
            "UPDATE {table} SET \"NextDue\" = strftime('%Y-%m-%d %H:%M:%f', \"NextDue\", '-{seconds} seconds') WHERE \"Name\" = '{schedule}'"
        ),
        Kind::Postgres => format!(
            "UPDATE {table} SET \"NextDue\" = \"NextDue\" - interval '{seconds} seconds' WHERE \"Name\" = '{schedule}'"
        ),
        Kind::SqlServer => format!(
            "UPDATE {table} SET [NextDue] = DATEADD(second, -{seconds}, [NextDue]) WHERE [Name] = '{schedule}'"
        ),
    };
    db.execute(&sql).await;
}

/// Ticks missed while no instance ran fire once on return (the default) or are skipped, and
/// the schedule goes on at its times.
pub async fn missed_ticks_fire_once_or_are_skipped(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let hour = Duration::from_secs(3600);
    let once = || Schedule::every("once", hour).send_to(TICKS, Numbered { n: 0 });
    let skip = || {
        Schedule::every("skip", hour)
            .missed(Missed::Skip)
            .send_to(TICKS, Numbered { n: 0 })
    };
    let (receiver, recorder) = tick_receiver(&db).await;
    let declaring = clock(&db, "clock-1", vec![once(), skip()]).await;
    declaring.stop().await.unwrap();
    // Each schedule's first tick is an hour from now: moved back five hours and a half, five
    // ticks are due (4.5 h, 3.5 h, 2.5 h, 1.5 h and 0.5 h ago) and the next is half an hour
    // ahead.
    pretend_downtime(&db, "once", 5 * 3600 + 1800).await;
    pretend_downtime(&db, "skip", 5 * 3600 + 1800).await;
    let back = clock(&db, "clock-1", vec![once(), skip()]).await;
    eventually("both schedules moved on", async || {
        let states = db.admin().schedules(Some(CLOCK)).await.unwrap();
        states.iter().all(|s| s.missed_ticks > 0)
    })
    .await;
    eventually("the catch-up message is handled", async || {
        recorder.count("once") >= 1
    })
    .await;
    back.stop().await.unwrap();
    receiver.stop().await.unwrap();
    let once_state = schedule_state(&db, "once").await.expect("row");
    let skip_state = schedule_state(&db, "skip").await.expect("row");
    assert_eq!(
        once_state.fired, 1,
        "one message for all missed ticks: {once_state:?}"
    );
    assert_eq!(once_state.missed_ticks, 4, "{once_state:?}");
    assert_eq!(skip_state.fired, 0, "{skip_state:?}");
    assert_eq!(skip_state.missed_ticks, 5, "{skip_state:?}");
    assert_eq!(recorder.count("once"), 1);
    assert_eq!(recorder.count("skip"), 0);
    // The one message is for the latest missed tick, and the schedule goes on at its times:
    // its next tick is an hour after that one.
    assert_eq!(
        once_state.last_due,
        Some(once_state.next_due - chrono::Duration::seconds(3600)),
        "{once_state:?}"
    );
    assert_eq!(once_state.next_due, skip_state.next_due);
}

/// Three processes of `Clock` (the `clock_worker` binary) with the one-second schedule: the
/// instance that fired last is killed (SIGKILL) and replaced, `kills` times; the next tick
/// fires from another instance, and every tick is handled once, with no gap.
pub fn sigkill_of_the_firing_instance_leaves_no_gap(kind: Setup, worker: &str) {
    let kills: usize = std::env::var("NIMBUS_SCHEDULE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let system = actix_rt::System::new();
    system.block_on(async {
        let db = TestDatabase::new(kind).await;
        let (receiver, recorder) = tick_receiver(&db).await;
        let spawn = |name: &str| crate::suite::start_worker(&db, worker, &[("NIMBUS_INSTANCE", name)]);
        let mut workers: Vec<(String, crate::suite::Worker)> = (1..=3)
            .map(|i| {
                let name = format!("clock-{i}");
                let worker = spawn(&name);
                (name, worker)
            })
            .collect();
        let fired = async || schedule_state(&db, "pulse").await.map(|s| s.fired).unwrap_or(0);
        let mut killed = Vec::new();
        for round in 0..kills {
            let before = fired().await;
            crate::eventually("two more ticks fire", async || fired().await >= before + 2).await;
            let state = schedule_state(&db, "pulse").await.expect("row");
            let last = state.last_fired_by.expect("fired by someone");
            let Some(at) = workers.iter().position(|(name, _)| *name == last) else {
                panic!("{last} fired, but it is not one of the running workers");
            };
            let (name, mut process) = workers.remove(at);
            process.kill(); // SIGKILL
            println!("round {round}: killed {name}, which fired tick {:?}", state.last_due);
            killed.push(name);
            // The next tick fires from another instance.
            let after_kill = fired().await;
            crate::eventually("another instance fires the next tick", async || {
                fired().await > after_kill
            })
            .await;
            let now_by = schedule_state(&db, "pulse").await.and_then(|s| s.last_fired_by);
            assert!(
                now_by.as_deref().is_some_and(|by| !killed.iter().any(|k| k == by)),
                "the tick after the kill came from {now_by:?}"
            );
            // A new process under a new name (the killed one's name is held until its
            // heartbeats lapse).
            let replacement = format!("clock-{}", 4 + round);
            workers.push((replacement.clone(), spawn(&replacement)));
        }
        for (_, mut process) in workers.drain(..) {
            process.kill();
        }
        let (_, ticks) = every_sent_tick_handled_once(&db, receiver, &recorder).await;
        println!(
            "{} ticks, each handled once, none missing, across {kills} kills of the instance that fired last",
            ticks.len()
        );
    });
}

/// A schema made before schedules existed (no `NimbusSchedules`): an endpoint that declares a
/// schedule with auto-create off is refused at start with the statement to run; with
/// auto-create on, its start makes the table.
pub async fn an_existing_schema_gains_the_schedules_table(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let (receiver, _recorder) = tick_receiver(&db).await;
    receiver.stop().await.unwrap();
    db.execute(&format!("DROP TABLE {}", db.table("NimbusSchedules")))
        .await;
    let refused = db
        .builder(CLOCK, "clock-1")
        .auto_create_schema(false)
        .schedule(every_second("pulse"))
        .build()
        .unwrap()
        .start()
        .await
        .expect_err("no NimbusSchedules, no auto-create");
    let text = refused.to_string();
    assert!(
        text.contains("NimbusSchedules") && text.contains("CREATE TABLE"),
        "{text}"
    );
    let clock = clock(&db, "clock-1", vec![every_second("pulse")]).await;
    assert!(schedule_state(&db, "pulse").await.is_some());
    clock.stop().await.unwrap();
}
