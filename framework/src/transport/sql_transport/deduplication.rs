//! Deduplicated sends: a send's key claimed in `NimbusDeduplication` in the transaction that
//! writes its messages, so a second send of the key within the window writes nothing.

use super::Inner;
use crate::driver::{Driver, Held};
use crate::envelope::OutgoingMessage;
use crate::error::Result;

/// A window in whole milliseconds, as the claim statement takes it.
pub(in crate::transport) fn window_ms(window: std::time::Duration) -> i64 {
    i64::try_from(window.as_millis()).unwrap_or(i64::MAX)
}

impl<D: Driver> Inner<D> {
    pub(super) async fn send_deduplicated(
        &self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
        messages: &[OutgoingMessage],
    ) -> Result<bool> {
        let sql = &self.cx.sql.deduplication_claim;
        let claimed =
            async |c: &mut Held<D>| match c.claim_key(sql, scope, key, window_ms(window)).await {
                Ok(claimed) => Ok(claimed),
                // A server that ignores the claim's lock hints (Babelfish) refuses the second of
                // two racing claims with the key instead of making it wait: the key is taken. The
                // refusal ends that statement alone, as a unique key's does on SQL Server.
                Err(e) if e.is_unique_violation() => Ok(false),
                Err(e) => Err(self
                    .cx
                    .db(|| format!("claiming the deduplication key {key:?}"))(
                    e
                )),
            };
        // The key is not kept when the write fails: the whole transaction rolls back.
        self.write_when("a deduplicated send", claimed, messages)
            .await
    }
}
