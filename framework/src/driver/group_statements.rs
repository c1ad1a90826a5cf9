//! The statements of ordered groups and priorities that are not part of sending and receiving:
//! the list of a queue's groups (`queue_groups.sql`) and its counts per priority
//! (`queue_priorities.sql`), for the CLI and the console.

use chrono::NaiveDateTime;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param};

/// One ordered group of a queue with messages waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    /// The group's key, as senders name it.
    pub key: String,
    /// Its messages in the queue table, the one being handled (if any) included.
    pub waiting: i64,
    /// Its first message failed and waits for a delayed retry until then (UTC, database time):
    /// the group is held. `None` when it is not held.
    pub held_until: Option<NaiveDateTime>,
}

/// How many messages of a queue wait at one priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityCount {
    /// The priority: higher is received first, 0 is normal.
    pub priority: i64,
    /// Its messages in the queue table, those being handled included.
    pub waiting: i64,
}

impl<D: Driver> Held<D> {
    /// `queue_priorities.sql` (`messages_priorities.sql` with the destination in `params`): the
    /// messages per priority, the highest first.
    pub async fn priority_counts(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<PriorityCount>> {
        let rows = self.query(sql, params).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<_, String> {
                    Ok(PriorityCount {
                        priority: row.int(0)?.unwrap_or_default(),
                        waiting: row.int(1)?.unwrap_or_default(),
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }

    /// `queue_groups.sql` (`messages_groups.sql` with the destination first in `params`): at
    /// most `limit` (the last of `params`) groups with messages waiting, the longest first.
    pub async fn groups(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<GroupSummary>> {
        let rows = self.query(sql, params).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<_, String> {
                    Ok(GroupSummary {
                        key: row.text(0)?.unwrap_or_default(),
                        waiting: row.int(1)?.unwrap_or_default(),
                        held_until: row.time(2)?,
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }
}
