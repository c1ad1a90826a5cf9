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

    /// `deduplication_claim_many.sql`: claims the distinct `keys` of `scope` for `window_ms`
    /// in one statement, after `expire` (`deduplication_expire_many.sql`, where the dialect has
    /// one) deleted those whose window ended; returns those claimed (the others were seen within
    /// their window).
    pub async fn claim_keys(
        &mut self,
        (expire, sql): (Option<&str>, &str),
        scope: &str,
        keys: &[&str],
        window_ms: i64,
    ) -> DriverResult<std::collections::HashSet<String>> {
        let listed = serde_json::to_string(keys)
            .map_err(|e| DriverError::other(FailureKind::Permanent, e.to_string()))?;
        if let Some(expire) = expire {
            self.execute(
                expire,
                &[Param::Text(Some(scope)), Param::Text(Some(&listed))],
            )
            .await?;
        }
        let params = [
            Param::Text(Some(scope)),
            Param::Text(Some(&listed)),
            Param::BigInt(Some(window_ms)),
        ];
        let rows = self.query(sql, &params).await?;
        let mut claimed = std::collections::HashSet::with_capacity(rows.len());
        for row in rows {
            let key = row
                .text(0)
                .map_err(|e| DriverError::other(FailureKind::Permanent, e))?
                .unwrap_or_default();
            claimed.insert(key);
        }
        Ok(claimed)
    }

    /// `deduplication_release.sql`: gives back (forgets) `key` of `scope`; `true` when it was
    /// held.
    pub async fn release_key(&mut self, sql: &str, scope: &str, key: &str) -> DriverResult<bool> {
        let params = [Param::Text(Some(scope)), Param::Text(Some(key))];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `deduplication_keys.sql`: the keys of `scope` still within their window, in key order.
    pub async fn keys_of(&mut self, sql: &str, scope: &str) -> DriverResult<Vec<String>> {
        let rows = self.query(sql, &[Param::Text(Some(scope))]).await?;
        rows.iter()
            .map(|row| {
                row.text(0)
                    .map(Option::unwrap_or_default)
                    .map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
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
