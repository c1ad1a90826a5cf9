//! What operators see of deduplication: the keys held per scope (`send:<queue>` for the keys of
//! deduplicated sends, `inbox:<queue>` for the ids an inbox handled), and forgetting one so that
//! its message goes through again.

use super::Database;
use crate::error::Result;

/// The keys of one scope held within their window, as
/// [`Database::deduplication_scopes`] lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeduplicationScope {
    /// `send:<queue>` or `inbox:<queue>`.
    pub scope: String,
    /// Keys held within their window.
    pub keys: i64,
    /// When the first of them is forgotten (database time, UTC).
    pub soonest_expiry: Option<chrono::NaiveDateTime>,
}

impl Database {
    /// The deduplication keys held within their window, per scope; none where no endpoint has
    /// deduplicated anything yet.
    pub async fn deduplication_scopes(&self) -> Result<Vec<DeduplicationScope>> {
        Ok(self
            .transport
            .deduplication_scopes()
            .await?
            .into_iter()
            .map(|(scope, keys, soonest_expiry)| DeduplicationScope {
                scope,
                keys,
                soonest_expiry,
            })
            .collect())
    }

    /// Forgets `key` of `scope` (`send:<queue>` or `inbox:<queue>`): the next send with that key,
    /// or the next copy of that message id, goes through. `true` when it was held. Logged at
    /// INFO.
    pub async fn forget_deduplication_key(&self, scope: &str, key: &str) -> Result<bool> {
        let forgotten = self.transport.forget_key(scope, key).await?;
        tracing::info!(
            scope,
            key,
            forgotten,
            "deduplication key forgotten by an operator"
        );
        Ok(forgotten)
    }

    /// Keeps `key` of `scope` for `window` (a bridge's way back of a reply, on the side the
    /// request reached); `NimbusDeduplication` must exist there.
    pub(crate) async fn remember_deduplication_key(
        &self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
    ) -> Result<bool> {
        let window_ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        self.transport.remember_key(scope, key, window_ms).await
    }

    /// The keys of `scope` still within their window, in key order.
    pub(crate) async fn deduplication_keys(&self, scope: &str) -> Result<Vec<String>> {
        self.transport.keys_of(scope).await
    }
}
