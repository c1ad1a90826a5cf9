//! The statements of `NimbusDeduplication`: keys claimed for a window in the transaction of the
//! send or the receive they guard (the expired ones are deleted by `delete_older_than`).

use super::{Driver, DriverResult, Held, Param};

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

    /// `deduplication_release.sql`: gives back `key` of `scope`, claimed in this transaction.
    pub async fn release_key(&mut self, sql: &str, scope: &str, key: &str) -> DriverResult<()> {
        let params = [Param::Text(Some(scope)), Param::Text(Some(key))];
        self.execute(sql, &params).await.map(|_| ())
    }
}
