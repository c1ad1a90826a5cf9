//! The statements of `NimbusLimits`: the slots of the endpoints' limits, taken in the receive's
//! transaction before a limited message's handlers run (`limit_take.sql`), added where a limit
//! lacks them (`limit_slots.sql`), and listed for operators (`limits_list.sql`).

use chrono::NaiveDateTime;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param};

/// One limit's scope as the database keeps it: its slots and the messages it held back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSummary {
    /// The limit's scope: `<queue>|<kind>|<message type>`, and `|<key>` for a limit per key
    /// (`kind` is `concurrency` or `rate`).
    pub scope: String,
    /// Its slots (N for at most N handlers at once, or N messages per period).
    pub slots: i64,
    /// For a rate: the slots taken within the current period (0 for a concurrency limit, whose
    /// slots are free again when their handler's transaction ends).
    pub taken: i64,
    /// When a slot was last taken (for a rate: when that slot is ready again), UTC.
    pub last_taken: Option<NaiveDateTime>,
    /// How many times a message of it waited because the limit was full.
    pub held: i64,
    /// When a message last waited because of it, UTC.
    pub last_held: Option<NaiveDateTime>,
}

impl<D: Driver> Held<D> {
    /// `limit_take.sql`: takes a free slot of `scope` (of `slots`) for `period_ms` (0: until
    /// the transaction ends); `true` when one was free.
    pub async fn take_limit_slot(
        &mut self,
        sql: &str,
        scope: &str,
        slots: i64,
        period_ms: i64,
    ) -> DriverResult<bool> {
        let params = [
            Param::Text(Some(scope)),
            Param::BigInt(Some(slots)),
            Param::BigInt(Some(period_ms)),
        ];
        Ok(!self.query(sql, &params).await?.is_empty())
    }

    /// `limit_state.sql`: how many of the `slots` of `scope` exist, and in how many ms the
    /// soonest is ready again (`None` when none exists).
    pub async fn limit_state(
        &mut self,
        sql: &str,
        scope: &str,
        slots: i64,
    ) -> DriverResult<(i64, Option<i64>)> {
        let params = [Param::Text(Some(scope)), Param::BigInt(Some(slots))];
        let rows = self.query(sql, &params).await?;
        let Some(row) = rows.first() else {
            return Ok((0, None));
        };
        let read = || -> Result<_, String> { Ok((row.int(0)?.unwrap_or_default(), row.int(1)?)) };
        read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
    }

    /// `limit_slots.sql`: adds the slots `scope` lacks. Another transaction adding them at the
    /// same moment is no error: they are there.
    pub async fn add_limit_slots(
        &mut self,
        sql: &str,
        scope: &str,
        slots: i64,
    ) -> DriverResult<()> {
        let params = [Param::Text(Some(scope)), Param::BigInt(Some(slots))];
        match self.execute(sql, &params).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_unique_violation() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `limit_held.sql`: counts a message `scope` held back.
    pub async fn count_limit_held(&mut self, sql: &str, scope: &str) -> DriverResult<()> {
        self.execute(sql, &[Param::Text(Some(scope))])
            .await
            .map(|_| ())
    }

    /// `limits_list.sql`: every limit's scope, in order.
    pub async fn limits(&mut self, sql: &str) -> DriverResult<Vec<LimitSummary>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<_, String> {
                    Ok(LimitSummary {
                        scope: row.text(0)?.unwrap_or_default(),
                        slots: row.int(1)?.unwrap_or_default(),
                        taken: row.int(2)?.unwrap_or_default(),
                        last_taken: row.time(3)?,
                        held: row.int(4)?.unwrap_or_default(),
                        last_held: row.time(5)?,
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }
}
