//! Deduplicated sends: a send's key claimed in `NimbusDeduplication` in the transaction that
//! writes its messages, so a second send of the key within the window writes nothing.

use super::Inner;
use crate::driver::Driver;
use crate::envelope::OutgoingMessage;
use crate::error::Result;
use crate::transport::storage::Creation;

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
        let purpose = "a deduplicated send";
        let mut c = self.transaction(purpose).await?;
        let sql = &self.cx.sql.deduplication_claim;
        let claimed = match c.claim_key(sql, scope, key, window_ms(window)).await {
            Ok(claimed) => claimed,
            // A server that ignores the claim's lock hints (Babelfish) refuses the second of
            // two racing claims with the key instead of making it wait: the key is taken.
            // Dropping `c` discards the connection and the server rolls back.
            Err(e) if e.is_unique_violation() => return Ok(false),
            Err(e) => {
                return Err(self
                    .cx
                    .db(|| format!("claiming the deduplication key {key:?}"))(
                    e
                ))
            }
        };
        if !claimed {
            // Nothing written: the commit only ends the transaction.
            self.commit(c, &[], purpose).await?;
            return Ok(false);
        }
        // On an error `c` is dropped and the server rolls back: the key is not kept either.
        let written = self.write(&mut c, messages, Creation::Required).await?;
        self.commit_written(c, &written, purpose).await?;
        Ok(true)
    }
}
