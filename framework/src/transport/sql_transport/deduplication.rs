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
    /// first claims every key (in one statement; a key given twice is sent once, the first
    /// time); says, for each, whether it was sent. Nothing is claimed or sent when the
    /// transaction fails.
    pub(super) async fn send_each_deduplicated(
        &self,
        scope: &str,
        window: std::time::Duration,
        items: Vec<(String, OutgoingMessage)>,
    ) -> Result<Vec<bool>> {
        let purpose = "deduplicated sends";
        let mut c = self.transaction(purpose).await?;
        let keys: Vec<&str> = items.iter().map(|(key, _)| key.as_str()).collect();
        let claimed = self.claim_each(&mut c, scope, &keys, window).await?;
        let mut sent = Vec::with_capacity(items.len());
        let mut messages = Vec::with_capacity(items.len());
        let mut seen = std::collections::HashSet::with_capacity(items.len());
        for (key, message) in items {
            let first = seen.insert(key.clone());
            let send = first && claimed.contains(&key);
            if send {
                messages.push(message);
            }
            sent.push(send);
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

    /// Claims the distinct ones of `keys` in `scope` in one statement, in `c`'s transaction;
    /// returns those claimed. On a server that ignores the statement's lock hints (Babelfish),
    /// a claim racing another of one of the keys refuses the whole statement with a unique-key
    /// error (which ends that statement alone there): the keys are then claimed one at a time.
    async fn claim_each(
        &self,
        c: &mut Held<D>,
        scope: &str,
        keys: &[&str],
        window: std::time::Duration,
    ) -> Result<std::collections::HashSet<String>> {
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        let distinct: Vec<&str> = keys.iter().copied().filter(|k| seen.insert(*k)).collect();
        let failed = |e| {
            self.cx.db(|| {
                format!(
                    "claiming {} deduplication keys in scope {scope:?}",
                    distinct.len()
                )
            })(e)
        };
        match c
            .claim_keys(
                (
                    self.cx.sql.deduplication_expire_many.as_deref(),
                    &self.cx.sql.deduplication_claim_many,
                ),
                scope,
                &distinct,
                window_ms(window),
            )
            .await
        {
            Ok(claimed) => return Ok(claimed),
            Err(e) if e.is_unique_violation() => {
                tracing::debug!(
                    scope,
                    keys = distinct.len(),
                    "a claim of several deduplication keys raced another; claiming them one at \
                     a time"
                );
            }
            Err(e) => return Err(failed(e)),
        }
        let mut claimed = std::collections::HashSet::with_capacity(distinct.len());
        for key in distinct {
            let taken = match c
                .claim_key(
                    &self.cx.sql.deduplication_claim,
                    scope,
                    key,
                    window_ms(window),
                )
                .await
            {
                Ok(taken) => taken,
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
            if taken {
                claimed.insert(key.to_string());
            }
        }
        Ok(claimed)
    }
}
