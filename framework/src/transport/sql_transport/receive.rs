//! A received message's open transaction, a batch's, and a message held under a lease: what
//! handling a message does inside the receive's transaction, and how it ends.

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::{received_message, window_ms, Inner, Written};
use crate::dead_letter::DeadLetter;
use crate::driver::statements::{LeaseRow, MessageRow, SagaRow};
use crate::driver::{Driver, DriverError, Held, Param};
use crate::envelope::{OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::QueueName;
use crate::transport::storage::Creation;
use crate::transport::{
    CommitFailure, HeldLease, LeaseTerms, LimitSlots, LimitTaken, NextReceive, ReceiveTransaction,
    ReceivedBatch, SagaChange,
};

/// The open transaction of a received message. Dropped unfinished (a cancelled future), its
/// connection is discarded, so the server rolls back and the message stays in its queue.
pub(super) struct SqlReceiveTransaction<D: Driver> {
    pub(super) connection: Held<D>,
    pub(super) inner: Arc<Inner<D>>,
    /// A handler took the connection for its own statements: a savepoint marks where they began.
    pub(super) handler_savepoint: bool,
    /// Part of a batch: finishing gives the connection back to the batch instead of committing.
    pub(super) member_of: Option<SharedBatch<D>>,
    /// The id of its message's body stored apart (the claim check), if it has one: deleted
    /// when the message is done with, kept for a retry or a dead letter.
    pub(super) stored_body: Option<Uuid>,
}

/// What the messages of a batch share: its open transaction, and what their handling wrote.
pub(super) type SharedBatch<D> = Arc<std::sync::Mutex<BatchState<D>>>;

pub(super) struct BatchState<D: Driver> {
    /// The batch's connection, while no message holds it.
    pub(super) connection: Option<Held<D>>,
    pub(super) written: Written,
    /// The limits of handlers at once whose slot the batch holds: its later messages of the
    /// same limit run under that slot (one after another) instead of taking more.
    pub(super) limit_slots: std::collections::HashSet<String>,
}

/// A batch of received messages over one transaction (see [`ReceivedBatch`]).
pub(super) struct SqlBatch<D: Driver> {
    pub(super) rows: std::collections::VecDeque<ReceivedMessage>,
    pub(super) size: usize,
    pub(super) shared: SharedBatch<D>,
    pub(super) inner: Arc<Inner<D>>,
}

impl<D: Driver> SqlBatch<D> {
    /// The batch's connection, back from the message that held it last.
    fn take_connection(&self) -> Result<Held<D>> {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .connection
            .take()
            .ok_or_else(|| {
                NimbusError::NotRunning(
                    "the batch's transaction was lost while a message was handled; it was rolled \
                     back and every message of the batch is in its queue again"
                        .into(),
                )
            })
    }
}

#[async_trait]
impl<D: Driver> ReceivedBatch for SqlBatch<D> {
    fn len(&self) -> usize {
        self.size
    }

    async fn next(&mut self) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let Some(row) = self.rows.pop_front() else {
            return Ok(None);
        };
        let connection = self.take_connection()?;
        let stored_body = crate::claim_check::claim_in_json(&row.headers_json);
        // No savepoint yet: a message whose handling writes nothing needs none. One is marked
        // before its handler's own statements or before its sends, whichever comes first, so
        // that its part can be undone alone.
        Ok(Some((
            row,
            Box::new(SqlReceiveTransaction {
                connection,
                inner: self.inner.clone(),
                handler_savepoint: false,
                member_of: Some(self.shared.clone()),
                stored_body,
            }),
        )))
    }

    async fn commit(self: Box<Self>) -> Result<()> {
        let connection = self.take_connection()?;
        let written = std::mem::take(
            &mut self
                .shared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .written,
        );
        self.inner
            .commit_written(connection, &written, "a batch")
            .await
    }
}

impl<D: Driver> SqlReceiveTransaction<D> {
    /// `row`, received alone on `connection`, and its open transaction (which knows the id of
    /// its body stored apart, if any).
    pub(super) fn alone(
        inner: Arc<Inner<D>>,
        connection: Held<D>,
        row: MessageRow,
    ) -> (ReceivedMessage, Box<dyn ReceiveTransaction>) {
        let received = received_message(row);
        let stored_body = crate::claim_check::claim_in_json(&received.headers_json);
        let tx = SqlReceiveTransaction {
            connection,
            inner,
            handler_savepoint: false,
            member_of: None,
            stored_body,
        };
        (received, Box::new(tx))
    }

    /// Ends this message's part: commits (alone), or (in a batch) releases its savepoint if
    /// one is open and gives the connection back to the batch with what it wrote.
    async fn finish(
        inner: Arc<Inner<D>>,
        mut connection: Held<D>,
        member_of: Option<SharedBatch<D>>,
        written: Written,
        savepoint_open: bool,
        purpose: &str,
    ) -> Result<()> {
        let Some(batch) = member_of else {
            return inner.commit_written(connection, &written, purpose).await;
        };
        if savepoint_open {
            let cx = &inner.cx;
            connection
                .execute(&cx.sql.savepoint_release, &[])
                .await
                .map_err(cx.db(|| format!("ending the savepoint of {purpose} in a batch")))?;
        }
        let mut state = batch.lock().unwrap_or_else(|p| p.into_inner());
        state.written.created.extend(written.created);
        for queue in written.queues {
            if !state.written.queues.contains(&queue) {
                state.written.queues.push(queue);
            }
        }
        state.connection = Some(connection);
        Ok(())
    }
}

impl<D: Driver> SqlReceiveTransaction<D> {
    /// Takes a free slot of `limit` (see [`ReceiveTransaction::take_limit`]), adding the
    /// slots it lacks first where needed.
    async fn take_free_slot(&mut self, limit: &LimitSlots<'_>) -> Result<LimitTaken> {
        let cx = self.inner.cx.clone();
        let slots = i64::from(limit.slots);
        let period_ms = i64::try_from(limit.period.as_millis()).unwrap_or(i64::MAX);
        let what = || format!("taking a slot of the limit {:?}", limit.scope);
        if self
            .connection
            .take_limit_slot(&cx.sql.limit_take, limit.scope, slots, period_ms)
            .await
            .map_err(cx.db(what))?
        {
            return Ok(LimitTaken::Taken);
        }
        let (present, ready_in_ms) = self
            .connection
            .limit_state(&cx.sql.limit_state, limit.scope, slots)
            .await
            .map_err(cx.db(what))?;
        if present < slots {
            // A limit used for the first time here, grown, or whose slots were cleaned up.
            // Added in this transaction, the slots would stay locked until this message's
            // handler is done, and every other receive of the limit would wait for them; added
            // in another while this one is open, every receiver could hold a connection and
            // wait for a second one. So the message waits and its slots are added once its
            // transaction has ended (`Transport::add_limit_slots`). A single writer's file
            // takes them in this one: nobody else writes meanwhile.
            if !self.inner.driver.single_writer() {
                return Ok(LimitTaken::Missing);
            }
            self.connection
                .add_limit_slots(&cx.sql.limit_slots, limit.scope, slots)
                .await
                .map_err(cx.db(|| format!("adding the slots of the limit {:?}", limit.scope)))?;
            if self
                .connection
                .take_limit_slot(&cx.sql.limit_take, limit.scope, slots, period_ms)
                .await
                .map_err(cx.db(what))?
            {
                return Ok(LimitTaken::Taken);
            }
        }
        let ready_in = ready_in_ms
            .filter(|ms| *ms > 0)
            .map(|ms| std::time::Duration::from_millis(ms.unsigned_abs()));
        Ok(LimitTaken::Full { ready_in })
    }
}

impl<D: Driver> SqlReceiveTransaction<D> {
    /// [`ReceiveTransaction::commit_handled`], and with `next` the next message of that queue
    /// taken in the commit's round trip where the connection pipelines (not in a batch, whose
    /// commit is the batch's).
    async fn commit_handled_then(
        self: Box<Self>,
        outgoing: Vec<OutgoingMessage>,
        next: Option<&QueueName>,
    ) -> std::result::Result<NextReceive, CommitFailure> {
        let SqlReceiveTransaction {
            mut connection,
            inner,
            handler_savepoint,
            member_of,
            stored_body,
        } = *self;
        let next = next.filter(|queue| {
            member_of.is_none()
                && connection.pipelines_commit()
                && inner.storage.receives_after_commit(queue)
        });
        let cx = &inner.cx;
        if outgoing.is_empty() && !handler_savepoint {
            // Nothing to write and nothing to undo: no savepoint needed.
            inner
                .release_body(&mut connection, stored_body, &outgoing)
                .await
                .map_err(CommitFailure::Failed)?;
            let written = Written::default();
            return Self::finish_then(inner, connection, member_of, written, false, next)
                .await
                .map_err(CommitFailure::Failed);
        }
        // After a handler's own statements, their savepoint serves: a refusal undoes them too.
        if !handler_savepoint {
            connection
                .execute(&cx.sql.savepoint, &[])
                .await
                .map_err(|e| CommitFailure::Failed(cx.db("marking a savepoint")(e)))?;
        }
        let written = match inner
            .write(&mut connection, &outgoing, Creation::Required)
            .await
        {
            Ok(written) if handler_savepoint => connection
                .execute(&cx.sql.savepoint_release, &[])
                .await
                .map(|_| written)
                .map_err(|e| {
                    NimbusError::database(
                        cx.name,
                        "committing what the handler's own statements did",
                        e,
                    )
                }),
            other => other,
        };
        // Handled: its body stored apart goes with its row (a refused send keeps both).
        let written = match written {
            Ok(written) => inner
                .release_body(&mut connection, stored_body, &outgoing)
                .await
                .map(|()| written),
            Err(e) => Err(e),
        };
        match written {
            // The handler's savepoint was released above; the one marked for the sends is open.
            Ok(written) => Self::finish_then(
                inner,
                connection,
                member_of,
                written,
                !handler_savepoint,
                next,
            )
            .await
            .map_err(CommitFailure::Failed),
            Err(e) if e.is_permanent() => {
                // Undo the sends alone; if even that fails, the connection is dropped and the
                // server rolls everything back.
                connection
                    .execute(&cx.sql.savepoint_rollback, &[])
                    .await
                    .map_err(|rollback| {
                        CommitFailure::Failed(cx
                            .db(|| format!("undoing refused sends ({e}) to a savepoint"))(
                            rollback
                        ))
                    })?;
                Err(CommitFailure::Refused(
                    e,
                    Box::new(SqlReceiveTransaction {
                        connection,
                        inner,
                        handler_savepoint,
                        member_of,
                        stored_body,
                    }),
                ))
            }
            Err(e) => Err(CommitFailure::Failed(e)),
        }
    }

    /// [`SqlReceiveTransaction::finish`] for a handled message, or with `next` (never in a
    /// batch) its commit and the next receive of that queue in one round trip.
    async fn finish_then(
        inner: Arc<Inner<D>>,
        mut connection: Held<D>,
        member_of: Option<SharedBatch<D>>,
        written: Written,
        savepoint_open: bool,
        next: Option<&QueueName>,
    ) -> Result<NextReceive> {
        let Some(queue) = next else {
            return Self::finish(
                inner,
                connection,
                member_of,
                written,
                savepoint_open,
                "a handled message",
            )
            .await
            .map(|()| NextReceive::NotTried);
        };
        // On an error `connection` is dropped: discarded, and the server rolls back.
        let received = inner
            .storage
            .commit_and_receive(&mut connection, queue)
            .await?;
        written.created.iter().for_each(|e| e.mark_exists());
        inner.wake(&written.queues);
        Ok(match received {
            Ok(Some(row)) => {
                let (received, tx) = Self::alone(inner, connection, row);
                NextReceive::Taken(received, tx)
            }
            Ok(None) => match inner.commit(connection, &[], "an empty receive").await {
                Ok(()) => NextReceive::Empty,
                Err(e) => NextReceive::Failed(e),
            },
            Err(e) => NextReceive::Failed(e),
        })
    }
}

#[async_trait]
impl<D: Driver> ReceiveTransaction for SqlReceiveTransaction<D> {
    async fn commit(self: Box<Self>, outgoing: Vec<OutgoingMessage>) -> Result<()> {
        let SqlReceiveTransaction {
            mut connection,
            inner,
            member_of,
            handler_savepoint,
            stored_body,
        } = *self;
        let written = inner
            .write(&mut connection, &outgoing, Creation::Required)
            .await?;
        inner
            .release_body(&mut connection, stored_body, &outgoing)
            .await?;
        Self::finish(
            inner,
            connection,
            member_of,
            written,
            handler_savepoint,
            "a handled message",
        )
        .await
    }

    async fn dead_letter(self: Box<Self>, letter: DeadLetter) -> Result<()> {
        let SqlReceiveTransaction {
            mut connection,
            inner,
            member_of,
            handler_savepoint,
            stored_body,
        } = *self;
        inner.insert_dead_letter(&mut connection, &letter).await?;
        inner
            .keep_body_for_dead_letter(&mut connection, stored_body)
            .await?;
        Self::finish(
            inner,
            connection,
            member_of,
            Written::default(),
            handler_savepoint,
            "a dead letter",
        )
        .await
    }

    async fn commit_handled(
        self: Box<Self>,
        outgoing: Vec<OutgoingMessage>,
    ) -> std::result::Result<(), CommitFailure> {
        self.commit_handled_then(outgoing, None).await.map(|_| ())
    }

    async fn commit_handled_and_receive(
        self: Box<Self>,
        outgoing: Vec<OutgoingMessage>,
        queue: &QueueName,
    ) -> std::result::Result<NextReceive, CommitFailure> {
        self.commit_handled_then(outgoing, Some(queue)).await
    }

    async fn stored_body(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(id) = self.stored_body else {
            return Ok(None);
        };
        let inner = self.inner.clone();
        inner.fetch_body(&mut self.connection, id).await.map(Some)
    }

    async fn handler_connection(&mut self) -> Result<&mut (dyn std::any::Any + Send)> {
        let cx = &self.inner.cx;
        if !self.handler_savepoint {
            self.connection
                .execute(&cx.sql.savepoint, &[])
                .await
                .map_err(cx.db("marking a savepoint before the handler's own statements"))?;
            self.handler_savepoint = true;
            if let Some(bound) = &cx.sql.handler_statement_timeout {
                let ms = cx.deadlines.statement.as_millis().to_string();
                self.connection
                    .execute(bound, &[Param::Text(Some(&ms))])
                    .await
                    .map_err(cx.db("bounding the handler's own statements"))?;
            }
        }
        match self.connection.connection_mut() {
            Some(connection) => Ok(connection),
            None => Err(NimbusError::NotRunning(
                "the receive's connection was already given back".into(),
            )),
        }
    }

    async fn saga_get(&mut self, saga_type: &str, correlation: &str) -> Result<Option<SagaRow>> {
        // The savepoint first: what the saga writes is undone with a failed attempt.
        self.handler_connection().await?;
        let cx = &self.inner.cx;
        self.connection
            .saga_get(&cx.sql.saga_get, saga_type, correlation)
            .await
            .map_err(cx.db(|| format!("reading saga {saga_type} {correlation:?}")))
    }

    async fn cancel_delayed(&mut self, id: Uuid) -> Result<bool> {
        // The savepoint first: a failed attempt undoes the cancel with the rest of its work.
        self.handler_connection().await?;
        self.inner
            .storage
            .cancel_delayed(&mut self.connection, id)
            .await
    }

    async fn claim_key(
        &mut self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
    ) -> Result<bool> {
        // No savepoint (three more round trips a message): a failed attempt gives the key back.
        let cx = &self.inner.cx;
        self.connection
            .claim_key(&cx.sql.deduplication_claim, scope, key, window_ms(window))
            .await
            .map_err(|e| {
                // A server that ignores the claim's lock hints (Babelfish) refuses the second
                // of two racing claims instead of making it wait: this receive gives way and
                // takes its message again, once the other's claim has committed or not.
                let e = if e.is_unique_violation() {
                    DriverError::conflict(format!(
                        "another receive claimed message id {key} at the same moment"
                    ))
                } else {
                    e
                };
                cx.db(|| format!("remembering {key:?} in {scope:?}"))(e)
            })
    }

    async fn take_limit(&mut self, limit: &LimitSlots<'_>) -> Result<LimitTaken> {
        let handlers_at_once = limit.period.is_zero();
        let batch_holds = |batch: &SharedBatch<D>| {
            let state = batch.lock().unwrap_or_else(|p| p.into_inner());
            state.limit_slots.contains(limit.scope)
        };
        if handlers_at_once && self.member_of.as_ref().is_some_and(batch_holds) {
            return Ok(LimitTaken::Taken);
        }
        let taken = self.take_free_slot(limit).await?;
        if let (LimitTaken::Taken, true, Some(batch)) = (taken, handlers_at_once, &self.member_of) {
            let mut state = batch.lock().unwrap_or_else(|p| p.into_inner());
            state.limit_slots.insert(limit.scope.to_string());
        }
        Ok(taken)
    }

    async fn release_key(&mut self, scope: &str, key: &str) -> Result<()> {
        let cx = self.inner.cx.clone();
        // The claim was made before the handler's savepoint: rolling back to that savepoint
        // after the key is given back would bring the claim back. So what the handler's own
        // statements did is undone first, and the savepoint released: the undo that follows
        // (`undo_handler_work`) has nothing left to do.
        if self.handler_savepoint {
            self.undo_handler_work().await?;
            self.connection
                .execute(&cx.sql.savepoint_release, &[])
                .await
                .map_err(cx.db("releasing the handler's savepoint"))?;
            self.handler_savepoint = false;
        }
        self.connection
            .release_key(&cx.sql.deduplication_release, scope, key)
            .await
            .map(|_| ())
            .map_err(cx.db(|| format!("giving back {key:?} of {scope:?}")))
    }

    async fn saga_save(&mut self, change: SagaChange<'_>) -> Result<()> {
        self.handler_connection().await?;
        let cx = &self.inner.cx;
        let conflict = |what: String| cx.db("saving a saga")(DriverError::conflict(what));
        match change {
            SagaChange::Insert {
                id,
                saga_type,
                correlation,
                state,
            } => match self
                .connection
                .saga_insert(&cx.sql.saga_insert, id, saga_type, correlation, state)
                .await
            {
                Ok(()) => Ok(()),
                Err(e) if e.is_unique_violation() => Err(conflict(format!(
                    "another message started saga {saga_type} {correlation:?} at the same moment; this one is received again and finds it"
                ))),
                Err(e) => Err(cx.db(|| format!("starting saga {saga_type} {correlation:?}"))(e)),
            },
            SagaChange::Update { id, version, state } => {
                let written = self
                    .connection
                    .saga_write(&cx.sql.saga_update, id, version, Some(state))
                    .await
                    .map_err(cx.db(|| format!("saving saga {id}")))?;
                match written {
                    true => Ok(()),
                    false => Err(conflict(format!(
                        "saga {id} changed (or completed) after this message read it at version {version}; this one is received again and reads it anew"
                    ))),
                }
            }
            SagaChange::Complete { id, version, state } => {
                let deleted = self
                    .connection
                    .saga_write(&cx.sql.saga_complete, id, version, Some(state))
                    .await
                    .map_err(cx.db(|| format!("completing saga {id}")))?;
                match deleted {
                    true => Ok(()),
                    false => Err(conflict(format!(
                        "saga {id} changed after this message read it at version {version}; this one is received again and reads it anew"
                    ))),
                }
            }
        }
    }

    async fn undo_handler_work(&mut self) -> Result<()> {
        if !self.handler_savepoint {
            return Ok(());
        }
        let cx = &self.inner.cx;
        self.connection
            .execute(&cx.sql.savepoint_rollback, &[])
            .await
            .map_err(cx.db("undoing the handler's own statements to their savepoint"))?;
        Ok(())
    }

    fn statement_deadline(&self) -> std::time::Duration {
        self.inner.cx.deadlines.statement
    }

    async fn hold_under_lease(
        self: Box<Self>,
        message: &ReceivedMessage,
        terms: &LeaseTerms,
    ) -> Result<Arc<dyn HeldLease>> {
        let SqlReceiveTransaction {
            mut connection,
            inner,
            member_of,
            stored_body,
            ..
        } = *self;
        if member_of.is_some() {
            return Err(NimbusError::config(
                "a message of a batched receive cannot be handled under a lease: the batch's \
                 transaction commits only once every message of it is handled",
                "use .receive_batch(1) on an endpoint with leases",
            ));
        }
        let lease = SqlLease {
            stored_body,
            id: Uuid::new_v4(),
            duration_ms: i64::try_from(terms.duration.as_millis()).unwrap_or(i64::MAX),
            inner: inner.clone(),
        };
        let cx = &inner.cx;
        connection
            .insert_lease(
                &cx.sql.lease_insert,
                &LeaseRow {
                    lease_id: lease.id,
                    queue: terms.queue.as_str(),
                    lease_ms: lease.duration_ms,
                    leased_by: &terms.leased_by,
                    id: &message.row_id,
                    correlation_id: message.correlation_id.as_deref(),
                    reply_to_address: message.reply_to_address.as_deref(),
                    expires: message.expires,
                    headers: &message.headers_json,
                    body: &message.body,
                },
            )
            .await
            .map_err(cx.db("holding a message under a lease"))?;
        inner
            .commit(connection, &[], "holding a message under a lease")
            .await?;
        Ok(Arc::new(lease))
    }
}

/// A message held in `NimbusLeases` (see [`HeldLease`]).
struct SqlLease<D: Driver> {
    /// Its message's body stored apart, if any.
    stored_body: Option<Uuid>,
    id: Uuid,
    duration_ms: i64,
    inner: Arc<Inner<D>>,
}

#[async_trait]
impl<D: Driver> HeldLease for SqlLease<D> {
    async fn renew(&self) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.connection("renewing a lease").await?;
        let renewed = c
            .renew_lease(&s.cx.sql.lease_renew, self.id, self.duration_ms)
            .await
            .map_err(s.cx.db(|| format!("renewing lease {}", self.id)))?;
        c.release();
        Ok(renewed)
    }

    async fn end(&self) -> Result<Option<Box<dyn ReceiveTransaction>>> {
        let s = &self.inner;
        let mut c = s.transaction("ending a lease").await?;
        // On an error `c` is dropped: the connection is discarded and the server rolls back.
        let ended = c
            .end_lease(&s.cx.sql.lease_end, self.id)
            .await
            .map_err(s.cx.db(|| format!("ending lease {}", self.id)))?;
        if !ended {
            s.commit(c, &[], "ending a lease that was gone").await?;
            return Ok(None);
        }
        Ok(Some(Box::new(SqlReceiveTransaction {
            connection: c,
            inner: s.clone(),
            handler_savepoint: false,
            member_of: None,
            stored_body: self.stored_body,
        })))
    }
}
