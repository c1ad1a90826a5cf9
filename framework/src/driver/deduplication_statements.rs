//! The statements of `NimbusDeduplication`: keys claimed for a window in the transaction of the
//! send or the receive they guard (the expired ones are deleted by `delete_older_than`).

use chrono::NaiveDateTime;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param};

impl<D: Driver> Held<D> {
    /// `deduplication_claim.sql`: `true` when `key` was not seen in `scope` within its window
    /// (claimed now for `window_ms`), `false` when it was (a duplicate).
    pub async fn claim_key(
        &mut self,
        sql: &str,
        scope: &str,
        key: &str,
        window_ms: i64,
    ) -> DriverResult<bool> {
        let params = [
            Param::Text(Some(scope)),
            Param::Text(Some(key)),
            Param::BigInt(Some(window_ms)),
        ];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `deduplication_release.sql`: gives back (forgets) `key` of `scope`; `true` when it was
    /// held.
    pub async fn release_key(&mut self, sql: &str, scope: &str, key: &str) -> DriverResult<bool> {
        let params = [Param::Text(Some(scope)), Param::Text(Some(key))];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `deduplication_scopes.sql`: (scope, keys held, soonest end of a window), by scope.
    pub async fn deduplication_scopes(
        &mut self,
        sql: &str,
    ) -> DriverResult<Vec<(String, i64, Option<NaiveDateTime>)>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<_, String> {
                    Ok((
                        row.text(0)?.unwrap_or_default(),
                        row.int(1)?.unwrap_or_default(),
                        row.time(2)?,
                    ))
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }
}
