//! What operators do with recurring messages: list them with their next and last ticks, pause
//! one, resume it (from its next tick after now: the ticks that came due while it was paused
//! are not fired).

use super::Database;
use crate::error::{NimbusError, Result};
use crate::transport::schedules::{record_operator_change, Recurrence};
use crate::transport::{ScheduleRow, ScheduleState};

impl Database {
    /// The schedules of `endpoint` (of every endpoint when `None`), by endpoint and name; none
    /// where no endpoint with schedules has run yet.
    pub async fn schedules(&self, endpoint: Option<&str>) -> Result<Vec<ScheduleState>> {
        if !self.transport.table_exists("NimbusSchedules").await? {
            return Ok(Vec::new());
        }
        let listed = self.transport.schedules(endpoint).await?;
        Ok(listed
            .rows
            .into_iter()
            .map(ScheduleState::from_row)
            .collect())
    }

    /// Pauses the schedule `name` of `endpoint`: no instance fires it until
    /// [`Database::resume_schedule`]; the pause is kept in the database and survives restarts.
    /// `by` says who paused it, for other operators. `false` when it was paused already. A
    /// schedule that does not exist is an error naming those that do.
    pub async fn pause_schedule(&self, endpoint: &str, name: &str, by: &str) -> Result<bool> {
        self.known_schedule(endpoint, name).await?;
        let paused = self.transport.pause_schedule(endpoint, name, by).await?;
        record_operator_change("pause", endpoint, name, paused);
        Ok(paused)
    }

    /// Resumes the paused schedule `name` of `endpoint` from its next tick after now (database
    /// time): the ticks that came due while it was paused are not fired. `false` when it was
    /// not paused.
    pub async fn resume_schedule(&self, endpoint: &str, name: &str) -> Result<bool> {
        let (row, now) = self.known_schedule(endpoint, name).await?;
        let recurrence =
            Recurrence::from_columns(row.cron.as_deref(), row.every_ms).map_err(|e| {
                NimbusError::config(
                    format!("schedule {name:?} of {endpoint:?} cannot be read: {e}"),
                    "start the endpoint, which writes its definition again",
                )
            })?;
        let next_due = recurrence.first_after(now).ok_or_else(|| {
            NimbusError::config(
                format!("schedule {name:?} of {endpoint:?} has no tick after now"),
                "change its cron expression in the endpoint's code",
            )
        })?;
        let resumed = self
            .transport
            .resume_schedule(endpoint, name, next_due)
            .await?;
        record_operator_change("resume", endpoint, name, resumed);
        Ok(resumed)
    }

    /// The row of schedule `name` of `endpoint` and the database's time, or an error naming
    /// the schedules there are.
    async fn known_schedule(
        &self,
        endpoint: &str,
        name: &str,
    ) -> Result<(ScheduleRow, chrono::NaiveDateTime)> {
        let unknown = |known: Vec<String>| {
            NimbusError::config(
                format!("no schedule {name:?} of endpoint {endpoint:?} in this database"),
                if known.is_empty() {
                    "no endpoint here has declared a schedule yet (nimbus schedules list)"
                        .to_string()
                } else {
                    format!("the schedules are: {}", known.join(", "))
                },
            )
        };
        if !self.transport.table_exists("NimbusSchedules").await? {
            return Err(unknown(Vec::new()));
        }
        let listed = self.transport.schedules(None).await?;
        let now = listed.now;
        let mut known = Vec::new();
        for row in listed.rows {
            if row.endpoint == endpoint && row.name == name {
                return Ok((row, now));
            }
            known.push(format!("{} of {}", row.name, row.endpoint));
        }
        Err(unknown(known))
    }
}
