//! The statements of `NimbusSchedules`, where the recurring messages of every endpoint are kept:
//! typed parameters in, typed rows out, as in [`super::statements`].

use chrono::NaiveDateTime;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param, Row};

/// What an endpoint's code declares for one schedule, as `schedule_declare.sql` and
/// `schedule_redefine.sql` write it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScheduleDefinition<'a> {
    pub endpoint: &'a str,
    pub name: &'a str,
    /// The cron expression, or `None` for a fixed interval.
    pub cron: Option<&'a str>,
    /// The fixed interval in milliseconds, or `None` for a cron expression.
    pub every_ms: Option<i64>,
    /// What a tick sends, for operators: `send <queue>` or `publish <type>`.
    pub target: &'a str,
    /// The missed-tick policy's name.
    pub missed: &'a str,
    /// The first tick (UTC, database time).
    pub next_due: NaiveDateTime,
}

/// A row of `schedule_list.sql`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleRow {
    pub endpoint: String,
    pub name: String,
    pub cron: Option<String>,
    pub every_ms: Option<i64>,
    pub target: String,
    pub missed: String,
    pub next_due: NaiveDateTime,
    /// Bumped by every change: what `schedule_fire.sql` and `schedule_redefine.sql` compare.
    pub version: i64,
    pub fired: i64,
    pub missed_ticks: i64,
    pub last_due: Option<NaiveDateTime>,
    pub last_fired_at: Option<NaiveDateTime>,
    pub last_fired_by: Option<String>,
    pub paused_at: Option<NaiveDateTime>,
    pub paused_by: Option<String>,
}

/// What `schedule_list.sql` read: the schedules, and the database's time of the read (there
/// even when there are no schedules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleList {
    pub now: NaiveDateTime,
    pub rows: Vec<ScheduleRow>,
}

/// What `schedule_fire.sql` writes: the schedule moves on from `version` to `next_due`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScheduleFiring<'a> {
    pub endpoint: &'a str,
    pub name: &'a str,
    pub version: i64,
    pub next_due: NaiveDateTime,
    /// Messages sent in this transaction: 0 or 1.
    pub sent: i64,
    /// Ticks that came due and were not sent for.
    pub missed: i64,
    /// The tick a message was sent for.
    pub last_due: Option<NaiveDateTime>,
    pub fired_by: &'a str,
}

/// Reads a listed row: `None` for the row of the database's time alone.
fn read_row(row: &Row) -> Result<Option<ScheduleRow>, String> {
    let Some(endpoint) = row.text(0)? else {
        return Ok(None);
    };
    Ok(Some(ScheduleRow {
        endpoint,
        name: row.text(1)?.ok_or("a schedule without a name")?,
        cron: row.text(2)?,
        every_ms: row.int(3)?,
        target: row.text(4)?.unwrap_or_default(),
        missed: row.text(5)?.unwrap_or_default(),
        next_due: row.time(6)?.ok_or("a schedule without a next due time")?,
        version: row.int(7)?.unwrap_or_default(),
        fired: row.int(8)?.unwrap_or_default(),
        missed_ticks: row.int(9)?.unwrap_or_default(),
        last_due: row.time(10)?,
        last_fired_at: row.time(11)?,
        last_fired_by: row.text(12)?,
        paused_at: row.time(13)?,
        paused_by: row.text(14)?,
    }))
}

impl<D: Driver> Held<D> {
    /// `schedule_declare.sql`: `true` when the schedule was added, `false` when its endpoint
    /// had one of that name already.
    pub async fn declare_schedule(
        &mut self,
        sql: &str,
        d: &ScheduleDefinition<'_>,
    ) -> DriverResult<bool> {
        let params = definition_params(d);
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `schedule_redefine.sql`: `true` when the row still had `version` and now has `d`.
    pub async fn redefine_schedule(
        &mut self,
        sql: &str,
        d: &ScheduleDefinition<'_>,
        version: i64,
    ) -> DriverResult<bool> {
        let mut params = definition_params(d).to_vec();
        params.push(Param::BigInt(Some(version)));
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `schedule_retire.sql`: `true` when there was a row to delete.
    pub async fn retire_schedule(
        &mut self,
        sql: &str,
        endpoint: &str,
        name: &str,
    ) -> DriverResult<bool> {
        let params = [Param::Text(Some(endpoint)), Param::Text(Some(name))];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `schedule_list.sql`: the schedules of `endpoint`, or of every endpoint, and the
    /// database's time. A row that
    /// cannot be read is an error: skipping it would stop a schedule without a word.
    pub async fn list_schedules(
        &mut self,
        sql: &str,
        endpoint: Option<&str>,
    ) -> DriverResult<ScheduleList> {
        let rows = self.query(sql, &[Param::Text(endpoint)]).await?;
        let unreadable = |e: String| DriverError::other(FailureKind::Permanent, e);
        let now = match rows.first() {
            Some(row) => row.time(15).map_err(unreadable)?,
            None => None,
        };
        let now = now.ok_or_else(|| {
            unreadable("the schedules were listed without the database's time".into())
        })?;
        let mut listed = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(schedule) = read_row(row).map_err(unreadable)? {
                listed.push(schedule);
            }
        }
        Ok(ScheduleList { now, rows: listed })
    }

    /// `schedule_fire.sql`: `true` when this transaction moved the schedule on (and so sends
    /// its tick), `false` when another instance did first or it was paused.
    pub async fn fire_schedule(&mut self, sql: &str, f: &ScheduleFiring<'_>) -> DriverResult<bool> {
        let params = [
            Param::Text(Some(f.endpoint)),
            Param::Text(Some(f.name)),
            Param::BigInt(Some(f.version)),
            Param::Time(Some(f.next_due)),
            Param::BigInt(Some(f.sent)),
            Param::BigInt(Some(f.missed)),
            Param::Time(f.last_due),
            Param::Text(Some(f.fired_by)),
        ];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `schedule_pause.sql`: `true` when the schedule was running and is paused now.
    pub async fn pause_schedule(
        &mut self,
        sql: &str,
        endpoint: &str,
        name: &str,
        by: &str,
    ) -> DriverResult<bool> {
        let params = [
            Param::Text(Some(endpoint)),
            Param::Text(Some(name)),
            Param::Text(Some(by)),
        ];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `schedule_resume.sql`: `true` when the schedule was paused and runs again from
    /// `next_due`.
    pub async fn resume_schedule(
        &mut self,
        sql: &str,
        endpoint: &str,
        name: &str,
        next_due: NaiveDateTime,
    ) -> DriverResult<bool> {
        let params = [
            Param::Text(Some(endpoint)),
            Param::Text(Some(name)),
            Param::Time(Some(next_due)),
        ];
        Ok(self.execute(sql, &params).await? > 0)
    }
}

/// The seven parameters of a definition, in the order both statements take them.
fn definition_params<'a>(d: &ScheduleDefinition<'a>) -> [Param<'a>; 7] {
    [
        Param::Text(Some(d.endpoint)),
        Param::Text(Some(d.name)),
        Param::Text(d.cron),
        Param::BigInt(d.every_ms),
        Param::Text(Some(d.target)),
        Param::Text(Some(d.missed)),
        Param::Time(Some(d.next_due)),
    ]
}
