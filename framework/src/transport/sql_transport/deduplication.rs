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

    /// Sends each message whose key is not claimed in `scope` yet, all in one transaction that
    /// first claims every key (in order); says, for each, whether it was sent. Nothing is
    /// claimed or sent when the transaction fails.
    pub(super) async fn send_each_deduplicated(
        &self,
        scope: &str,
        window: std::time::Duration,
        items: Vec<(String, OutgoingMessage)>,
    ) -> Result<Vec<bool>> {
        let purpose = "deduplicated sends";
        let sql = &self.cx.sql.deduplication_claim;
        let mut c = self.transaction(purpose).await?;
        let mut sent = Vec::with_capacity(items.len());
        let mut messages = Vec::with_capacity(items.len());
        for (key, message) in items {
            let claimed = match c.claim_key(sql, scope, &key, window_ms(window)).await {
                Ok(claimed) => claimed,
                // As in `send_deduplicated`: Babelfish refuses the second of two racing claims.
                Err(e) if e.is_unique_violation() => false,
                Err(e) => {
                    return Err(self
                        .cx
                        .db(|| format!("claiming the deduplication key {key:?}"))(
                        e
                    ))
                }
            };
            if claimed {
                messages.push(message);
            }
            sent.push(claimed);
        }
        if messages.is_empty() {
            self.commit(c, &[], purpose).await?;
            return Ok(sent);
        }
        let written = self
            .write(
                &mut c,
                &messages,
                crate::transport::storage::Creation::Required,
            )
            .await?;
        self.commit_written(c, &written, purpose).await?;
        Ok(sent)
    }
}
