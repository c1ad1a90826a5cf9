//! Bodies the claim check stores apart (see [`crate::claim_check`]): written in the transaction
//! that writes their queue row, read by the receive's transaction, deleted in the one that
//! removes their message's last row, kept for a dead letter and given back to its replay.

use std::borrow::Cow;

use uuid::Uuid;

use super::Inner;
use crate::driver::body_statements::{BodyRow, FetchedBody};
use crate::driver::{Driver, Held, Statement};
use crate::envelope::OutgoingMessage;
use crate::error::{NimbusError, Result};
use crate::names::QueueName;

/// How many listed objects the object-store sweep checks against `NimbusBodies` in one
/// statement.
const SWEEP_CHECKED_AT_ONCE: usize = 500;

/// `message` as the `nth` row it becomes (`0` the first, a publish's later subscribers after
/// it): a later row's body stored apart gets an id of its own.
pub(super) fn for_row(message: &OutgoingMessage, nth: usize) -> Cow<'_, OutgoingMessage> {
    match nth {
        0 => Cow::Borrowed(message),
        _ => message
            .for_another_row()
            .map_or(Cow::Borrowed(message), Cow::Owned),
    }
}

/// The row of `NimbusBodies` for `message`'s body stored apart, written to `queue`: with the
/// bytes, or naming the object store `store` that holds them.
fn body_row<'a>(
    message: &'a OutgoingMessage,
    queue: &'a QueueName,
    store: Option<&'a str>,
) -> Option<BodyRow<'a>> {
    let stored = message.stored_apart.as_ref()?;
    Some(BodyRow {
        id: stored.id,
        queue: queue.as_str(),
        body: store.is_none().then_some(stored.body.as_slice()),
        store,
        size: i64::try_from(stored.body.len()).unwrap_or(i64::MAX),
        time_to_be_received_ms: message.time_to_be_received_ms,
        expires_at: message.expires_at,
    })
}

impl<D: Driver> Inner<D> {
    /// Stores `message`'s body apart for its row in `queue`, on `c` (in the transaction that
    /// writes the row); nothing when its body is in its row.
    pub(super) async fn store_body(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        message: &OutgoingMessage,
    ) -> Result<()> {
        let store = self.upload(message).await?;
        let Some(row) = body_row(message, queue, store) else {
            return Ok(());
        };
        c.insert_body(&self.cx.sql.body_insert, &row)
            .await
            .map_err(self.cx.db(|| {
                format!(
                    "storing a body of {} bytes apart for a message to {queue:?}",
                    row.size
                )
            }))?;
        metrics::counter!("nimbus_bodies_stored_total", "queue" => queue.to_string()).increment(1);
        metrics::counter!("nimbus_body_bytes_stored_total", "queue" => queue.to_string())
            .increment(row.size.unsigned_abs());
        Ok(())
    }

    /// [`Inner::store_body`] as a statement for a transaction the framework does not hold
    /// (an object store's upload is done now).
    pub(super) async fn body_statement(
        &self,
        queue: &QueueName,
        message: &OutgoingMessage,
    ) -> Result<Option<Statement>> {
        let store = self.upload(message).await?;
        Ok(body_row(message, queue, store).map(|row| row.statement(&self.cx.sql.body_insert)))
    }

    /// Uploads `message`'s body stored apart to the object store bodies are written to, if
    /// any: its name, for the row. Before the row's transaction commits: an upload whose row
    /// never commits is an orphan, for the sweep.
    async fn upload(&self, message: &OutgoingMessage) -> Result<Option<&str>> {
        let (Some(stored), Some(store)) = (&message.stored_apart, self.cx.stores.write_to()) else {
            return Ok(None);
        };
        self.cx
            .stores
            .put(self.cx.schema.as_str(), stored.id, &stored.body)
            .await
            .map_err(|e| store_failure("storing a body apart", e))?;
        Ok(Some(store))
    }

    /// The body stored apart under `id`, read on the receive's connection `c`; an error that
    /// says so when it is missing.
    pub(super) async fn fetch_body(&self, c: &mut Held<D>, id: Uuid) -> Result<Vec<u8>> {
        let fetched = c.fetch_body(&self.cx.sql.body_fetch, id).await.map_err(
            self.cx
                .db(|| format!("reading the body stored apart under {id}")),
        )?;
        match fetched {
            Some(FetchedBody::Here(bytes)) => Ok(bytes),
            Some(FetchedBody::Elsewhere(store)) => self
                .cx
                .stores
                .get(&store, self.cx.schema.as_str(), id)
                .await
                .map_err(|e| store_failure("reading a body stored apart", e)),
            None => Err(NimbusError::config(
                format!(
                    "the body stored apart under {id} is missing from NimbusBodies (deleted by \
                     hand, or by the expiry of its message)"
                ),
                "the message cannot be handled without it; its headers are kept in the dead \
                 letters",
            )),
        }
    }

    /// Deletes the body stored apart under `stored` in the transaction that removes its
    /// message's row, unless one of `outgoing` (a retry's copy, a message written again) still
    /// names it.
    pub(super) async fn release_body(
        &self,
        c: &mut Held<D>,
        stored: Option<Uuid>,
        outgoing: &[OutgoingMessage],
    ) -> Result<()> {
        let Some(id) = stored else {
            return Ok(());
        };
        let text = id.to_string();
        if outgoing.iter().any(|m| m.headers_json.contains(&text)) {
            return Ok(());
        }
        c.body_by_id(&self.cx.sql.body_delete, id).await.map_err(
            self.cx
                .db(|| format!("deleting the body stored apart under {id}")),
        )?;
        Ok(())
    }

    /// Keeps the body stored apart under `stored` for its message's dead letter, in the
    /// transaction that writes the letter.
    pub(super) async fn keep_body_for_dead_letter(
        &self,
        c: &mut Held<D>,
        stored: Option<Uuid>,
    ) -> Result<()> {
        let Some(id) = stored else {
            return Ok(());
        };
        c.body_by_id(&self.cx.sql.body_dead_lettered, id)
            .await
            .map_err(
                self.cx
                    .db(|| format!("keeping the body stored apart under {id} for its dead letter")),
            )?;
        Ok(())
    }

    /// Gives the body stored apart that a replayed dead letter's `message` names back to it and
    /// its queue, in the replay's transaction.
    pub(super) async fn give_body_back(
        &self,
        c: &mut Held<D>,
        message: &OutgoingMessage,
    ) -> Result<()> {
        let (Some(id), crate::envelope::Destination::Queue(queue)) = (
            crate::claim_check::claim_in_json(&message.headers_json),
            &message.destination,
        ) else {
            return Ok(());
        };
        c.replay_body(&self.cx.sql.body_replayed, id, queue.as_str())
            .await
            .map_err(self.cx.db(|| {
                format!("giving the body stored apart under {id} back to its replayed message")
            }))?;
        Ok(())
    }

    /// Deletes, in each object store this endpoint knows, the bodies of this schema older
    /// than the claim check's `orphans_after` that have no row in `NimbusBodies` (their
    /// message was handled, or their send never committed); returns how many.
    pub(super) async fn sweep_objects(&self, stores: &crate::claim_check::Stores) -> Result<u64> {
        let schema = self.cx.schema.as_str();
        let mut deleted = 0u64;
        for name in stores.names() {
            let old = stores
                .old_objects(name, schema)
                .await
                .map_err(|e| store_failure("sweeping an object store", e))?;
            if old.is_empty() {
                continue;
            }
            for listed in old.chunks(SWEEP_CHECKED_AT_ONCE) {
                // A row means its message still waits (or is a dead letter's): kept.
                let mut c = self.connection("sweeping an object store").await?;
                let present = c
                    .bodies_present(&self.cx.sql.bodies_present, listed)
                    .await
                    .map_err(self.cx.db(|| {
                        format!(
                            "looking for the rows of {} bodies in the object store {name:?}",
                            listed.len()
                        )
                    }))?;
                c.release();
                for id in listed.iter().filter(|id| !present.contains(id)) {
                    stores
                        .delete(name, schema, *id)
                        .await
                        .map_err(|e| store_failure("sweeping an object store", e))?;
                    deleted += 1;
                }
            }
        }
        Ok(deleted)
    }
}

/// An object store's failure as the bus reports it: a lasting one (the body is not there, or
/// in a store this endpoint does not know) as a configuration error, which sends a message to
/// the dead letters; any other as one that may pass.
fn store_failure(doing: &str, e: crate::claim_check::StoreError) -> NimbusError {
    match e.lasting {
        true => NimbusError::config(e.text, "see the guide's chapter on the claim check"),
        false => NimbusError::database(
            "object store",
            doing,
            crate::driver::DriverError::other(crate::FailureKind::Transient, e.text),
        ),
    }
}
