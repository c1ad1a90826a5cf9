//! The transport's side of recurring messages: `NimbusSchedules` read and changed one statement
//! at a time, and a tick fired in one transaction with the message it sends.

use chrono::NaiveDateTime;

use super::Inner;
use crate::driver::schedule_statements::{ScheduleDefinition, ScheduleFiring, ScheduleList};
use crate::driver::{Driver, Held};
use crate::envelope::OutgoingMessage;
use crate::error::Result;

impl<D: Driver> Inner<D> {
    pub(super) async fn schedules(&self, endpoint: Option<&str>) -> Result<ScheduleList> {
        let mut c = self.connection("reading the schedules").await?;
        let rows = c
            .list_schedules(&self.cx.sql.schedule_list, endpoint)
            .await
            .map_err(self.cx.db("reading the schedules"))?;
        c.release();
        Ok(rows)
    }

    pub(super) async fn declare_schedule(&self, d: &ScheduleDefinition<'_>) -> Result<bool> {
        let mut c = self.connection("declaring a schedule").await?;
        let added = c
            .declare_schedule(&self.cx.sql.schedule_declare, d)
            .await
            .map_err(self.cx.db(|| format!("declaring schedule {:?}", d.name)))?;
        c.release();
        Ok(added)
    }

    pub(super) async fn redefine_schedule(
        &self,
        d: &ScheduleDefinition<'_>,
        version: i64,
    ) -> Result<bool> {
        let mut c = self.connection("changing a schedule").await?;
        let changed = c
            .redefine_schedule(&self.cx.sql.schedule_redefine, d, version)
            .await
            .map_err(self.cx.db(|| format!("changing schedule {:?}", d.name)))?;
        c.release();
        Ok(changed)
    }

    pub(super) async fn retire_schedule(&self, endpoint: &str, name: &str) -> Result<bool> {
        let mut c = self.connection("removing a schedule").await?;
        let removed = c
            .retire_schedule(&self.cx.sql.schedule_retire, endpoint, name)
            .await
            .map_err(self.cx.db(|| format!("removing schedule {name:?}")))?;
        c.release();
        Ok(removed)
    }

    /// Moves the schedule on and writes `message` in one transaction: `false` (and nothing
    /// written) when another instance moved it first or it was paused.
    pub(super) async fn fire_schedule(
        &self,
        f: &ScheduleFiring<'_>,
        message: Option<OutgoingMessage>,
    ) -> Result<bool> {
        let messages: Vec<OutgoingMessage> = message.into_iter().collect();
        let sql = &self.cx.sql.schedule_fire;
        let moved = async |c: &mut Held<D>| {
            c.fire_schedule(sql, f)
                .await
                .map_err(self.cx.db(|| format!("firing schedule {:?}", f.name)))
        };
        self.write_when("firing a schedule", moved, &messages).await
    }

    pub(super) async fn pause_schedule(
        &self,
        endpoint: &str,
        name: &str,
        by: &str,
    ) -> Result<bool> {
        let mut c = self.connection("pausing a schedule").await?;
        let paused = c
            .pause_schedule(&self.cx.sql.schedule_pause, endpoint, name, by)
            .await
            .map_err(self.cx.db(|| format!("pausing schedule {name:?}")))?;
        c.release();
        Ok(paused)
    }

    pub(super) async fn resume_schedule(
        &self,
        endpoint: &str,
        name: &str,
        next_due: NaiveDateTime,
    ) -> Result<bool> {
        let mut c = self.connection("resuming a schedule").await?;
        let resumed = c
            .resume_schedule(&self.cx.sql.schedule_resume, endpoint, name, next_due)
            .await
            .map_err(self.cx.db(|| format!("resuming schedule {name:?}")))?;
        c.release();
        Ok(resumed)
    }
}
