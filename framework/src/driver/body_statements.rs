//! The statements of `NimbusBodies`: bodies the claim check stores apart from their queue rows,
//! written in the transaction that writes the row and deleted in the one that removes the
//! message's last row.

use chrono::NaiveDateTime;
use uuid::Uuid;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param, Statement};

/// One body to store apart, as `body_insert.sql` takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyRow<'a> {
    /// The id its message's `Nimbus.ClaimCheck` header names.
    pub id: Uuid,
    /// The queue its message is written to.
    pub queue: &'a str,
    /// The bytes, or `None` when they are in an object store (`store` then says where).
    pub body: Option<&'a [u8]>,
    /// The object store holding the bytes, when not this table.
    pub store: Option<&'a str>,
    /// The body's size in bytes.
    pub size: i64,
    /// Its message's time to be received, in ms.
    pub time_to_be_received_ms: Option<i64>,
    /// Its message's absolute expiry (wins over the time to be received).
    pub expires_at: Option<NaiveDateTime>,
}

impl BodyRow<'_> {
    /// `body_insert.sql`'s parameters.
    fn params(&self) -> [Param<'_>; 7] {
        [
            Param::Uuid(self.id),
            Param::Text(Some(self.queue)),
            Param::Bytes(self.body),
            Param::Text(self.store),
            Param::BigInt(Some(self.size)),
            Param::BigInt(self.time_to_be_received_ms),
            Param::Time(self.expires_at),
        ]
    }

    /// The insert as a statement for a transaction the framework does not hold.
    pub fn statement(&self, sql: &str) -> Statement {
        Statement::new(sql, &self.params())
    }
}

/// A body stored apart, as `body_fetch.sql` reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FetchedBody {
    /// The bytes were in the table.
    Here(Vec<u8>),
    /// The bytes are in the object store named so.
    Elsewhere(String),
}

/// What `NimbusBodies` holds for one queue (`nimbus bodies`, the console).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodySummary {
    /// The queue the bodies' messages were written to.
    pub queue: String,
    /// Bodies stored apart.
    pub bodies: i64,
    /// Their bytes.
    pub bytes: i64,
    /// Of them, dead letters' (kept for a replay).
    pub dead_lettered: i64,
    /// Of them, in an object store (the table holds where).
    pub in_object_store: i64,
    /// When the oldest was stored (UTC, database time).
    pub oldest: Option<NaiveDateTime>,
}

impl<D: Driver> Held<D> {
    /// `body_insert.sql`: stores `row` in this connection's transaction.
    pub async fn insert_body(&mut self, sql: &str, row: &BodyRow<'_>) -> DriverResult<()> {
        self.execute(sql, &row.params()).await.map(|_| ())
    }

    /// `body_fetch.sql`: the body stored apart under `id`, `None` when there is none.
    pub async fn fetch_body(&mut self, sql: &str, id: Uuid) -> DriverResult<Option<FetchedBody>> {
        let mut rows = self.query(sql, &[Param::Uuid(id)]).await?;
        let Some(mut row) = rows.pop() else {
            return Ok(None);
        };
        let unreadable = |e: String| DriverError::other(FailureKind::Permanent, e);
        if let Some(bytes) = row.take_bytes(0).map_err(unreadable)? {
            return Ok(Some(FetchedBody::Here(bytes)));
        }
        match row.text(1).map_err(unreadable)? {
            Some(store) => Ok(Some(FetchedBody::Elsewhere(store))),
            None => Err(unreadable(format!(
                "the body stored apart under {id} has neither bytes nor a store"
            ))),
        }
    }

    /// `bodies_present.sql`: which of `ids` have a row in `NimbusBodies`.
    pub async fn bodies_present(
        &mut self,
        sql: &str,
        ids: &[Uuid],
    ) -> DriverResult<std::collections::HashSet<Uuid>> {
        let listed = serde_json::to_string(&ids.iter().map(Uuid::to_string).collect::<Vec<_>>())
            .map_err(|e| DriverError::other(FailureKind::Permanent, e.to_string()))?;
        let rows = self.query(sql, &[Param::Text(Some(&listed))]).await?;
        let mut present = std::collections::HashSet::with_capacity(rows.len());
        for row in rows {
            let unreadable = |e: String| DriverError::other(FailureKind::Permanent, e);
            let text = row.text(0).map_err(unreadable)?.unwrap_or_default();
            let id = Uuid::parse_str(text.trim()).map_err(|e| {
                unreadable(format!(
                    "NimbusBodies returned the id {text:?}, not a UUID: {e}"
                ))
            })?;
            present.insert(id);
        }
        Ok(present)
    }

    /// `body_delete.sql` (`body_dead_lettered.sql`: one `id` parameter): `true` when a row
    /// was there.
    pub async fn body_by_id(&mut self, sql: &str, id: Uuid) -> DriverResult<bool> {
        Ok(self.execute(sql, &[Param::Uuid(id)]).await? > 0)
    }

    /// `body_replayed.sql`: gives the body `id` back to its message, replayed to `queue`.
    pub async fn replay_body(&mut self, sql: &str, id: Uuid, queue: &str) -> DriverResult<bool> {
        let params = [Param::Uuid(id), Param::Text(Some(queue))];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `bodies_summary.sql`: what the table holds, per queue.
    pub async fn bodies_summary(&mut self, sql: &str) -> DriverResult<Vec<BodySummary>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<_, String> {
                    Ok(BodySummary {
                        queue: row.text(0)?.unwrap_or_default(),
                        bodies: row.int(1)?.unwrap_or_default(),
                        bytes: row.int(2)?.unwrap_or_default(),
                        dead_lettered: row.int(3)?.unwrap_or_default(),
                        in_object_store: row.int(4)?.unwrap_or_default(),
                        oldest: row.time(5)?,
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }
}
