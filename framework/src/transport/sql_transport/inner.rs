//! What the transport's operations share: connections with their errors, commits that wake the
//! queues they wrote to, writes and their planning, and the catalog checks; and the one look of
//! the process's watch of idle queues (see [`crate::transport::watcher`]).

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::{received_message, Inner, Written};
use crate::dead_letter::DeadLetter;
use crate::driver::statements::{DeadLetterRow, MessageRow};
use crate::driver::{Announcement, Driver, FailureKind, Held, Param};
use crate::envelope::{Delivery, Destination, OutgoingMessage};
use crate::error::{NimbusError, Result};
use crate::names::QueueName;
use crate::transport::catalog::QueueEntry;
use crate::transport::storage::{self, Creation};
use crate::transport::{ServerWait, StopSignal};

#[async_trait]
impl<D: Driver> crate::transport::watcher::Looker for Inner<D> {
    async fn look(&self, sql: &str, wait: ServerWait, destinations: &[String]) -> Result<Vec<i64>> {
        // The statement lasts as long as its wait, plus what any statement may take.
        let deadlines = crate::driver::Deadlines {
            statement: self.cx.deadlines.statement.saturating_add(wait.longest()),
            ..self.cx.deadlines
        };
        let mut c = self
            .connection_within(deadlines, "watching idle queues")
            .await?;
        let every = wait.every_text();
        let mut params = vec![Param::BigInt(Some(wait.looks)), Param::Text(Some(&every))];
        params.extend(destinations.iter().map(|d| Param::Text(Some(d.as_str()))));
        match c.query(sql, &params).await {
            Ok(rows) => {
                c.release();
                Ok(rows
                    .iter()
                    .filter_map(|row| match row.0.first() {
                        Some(crate::driver::Value::Int(place)) => Some(*place),
                        _ => None,
                    })
                    .collect())
            }
            Err(e) => {
                if e.kind() == FailureKind::Permanent {
                    // The server refused the statement and no transaction is open: the
                    // connection is as good as before (a new one costs a login).
                    c.release();
                }
                Err(self.cx.db("watching idle queues for messages")(e))
            }
        }
    }
}

impl<D: Driver> Inner<D> {
    /// The database and schema, as the reads every bus of the process makes alike are shared
    /// (see [`crate::transport::shared_reads`]).
    pub(in crate::transport) fn shared_reads_key(&self) -> String {
        format!(
            "{}\u{1f}{}",
            self.driver.share_key(),
            self.cx.schema.as_str()
        )
    }

    /// A connection from the pool; the error says what to check.
    pub(in crate::transport) async fn connection(&self, purpose: &str) -> Result<Held<D>> {
        self.connection_within(self.cx.deadlines, purpose).await
    }

    /// A connection whose calls have `deadlines` rather than the transport's.
    pub(in crate::transport) async fn connection_within(
        &self,
        deadlines: crate::driver::Deadlines,
        purpose: &str,
    ) -> Result<Held<D>> {
        Held::take(&self.driver, deadlines)
            .await
            .map_err(|e| self.connect_error(purpose, e))
    }

    /// A connection that could not be had, with what to check.
    pub(super) fn connect_error(
        &self,
        purpose: &str,
        e: crate::driver::DriverError,
    ) -> NimbusError {
        let fix = self.driver.connect_advice(&e);
        NimbusError::connect(
            self.cx.name,
            &self.cx.target,
            format!("{fix} (while {purpose})"),
            e,
        )
    }

    /// A connection for a receive, or `None` when the endpoint stops before one is free (on
    /// SQLite a receive waits here for the one writer, for as long as a handler runs). Waiting
    /// for a pooled connection is safe to abandon: nothing has been asked of the database yet.
    pub(super) async fn connection_unless_stopped(
        &self,
        purpose: &str,
        stop: &StopSignal,
    ) -> Result<Option<Held<D>>> {
        let c = tokio::select! {
            biased;
            () = stop.set() => return Ok(None),
            c = Held::take_for_receive(&self.driver, self.cx.deadlines) => {
                c.map_err(|e| self.connect_error(purpose, e))?
            }
        };
        if stop.is_set() {
            c.release();
            return Ok(None);
        }
        Ok(Some(c))
    }

    /// A connection with a transaction open.
    pub(in crate::transport) async fn transaction(&self, purpose: &str) -> Result<Held<D>> {
        let mut c = self.connection(purpose).await?;
        c.begin().await.map_err(self.cx.db(purpose))?;
        Ok(c)
    }

    /// Commits `c`'s transaction with what [`Inner::write`] wrote, marks the queues it created
    /// as existing, and wakes the receivers of the queues it wrote to.
    pub(super) async fn commit_written(
        &self,
        c: Held<D>,
        written: &Written,
        purpose: &str,
    ) -> Result<()> {
        self.commit(c, &written.created, purpose).await?;
        self.wake(&written.queues);
        Ok(())
    }

    /// Runs `guard` in a transaction of its own and, when it says yes, writes `messages` as sends
    /// (their queues must exist) and commits them with it: `false`, with nothing written, when
    /// it says no. On an error the connection is dropped and the server rolls back, the guard's
    /// work too. For a tick of a schedule (the guard moves its row on) and a deduplicated send
    /// (the guard claims its key).
    pub(super) async fn write_when(
        &self,
        purpose: &str,
        guard: impl AsyncFnOnce(&mut Held<D>) -> Result<bool>,
        messages: &[OutgoingMessage],
    ) -> Result<bool> {
        let mut c = self.transaction(purpose).await?;
        if !guard(&mut c).await? {
            // Nothing written: the commit only ends the transaction.
            self.commit(c, &[], purpose).await?;
            return Ok(false);
        }
        let written = self.write(&mut c, messages, Creation::Required).await?;
        self.commit_written(c, &written, purpose).await?;
        Ok(true)
    }

    /// Wakes this process's receivers of `queues`, and announces them to other processes
    /// where the database can.
    pub(super) fn wake(&self, queues: &[QueueName]) {
        for queue in queues {
            if queue.catalog().is_some() {
                // Another database's receivers listen elsewhere: they find it when they look.
                continue;
            }
            // The queue's key and announcement are made once, with its statements.
            let entry = self.cx.catalog.queue(queue);
            crate::transport::wakeups::wake(&entry.wake_key);
            if let Some(announce) = self.announce.get() {
                // The announcer is gone only when the transport is: nothing to wake then.
                let _ = announce.send(Announcement::Queue(entry.announcement.clone()));
            }
        }
    }

    pub(super) fn wake_key(&self, queue: &QueueName) -> String {
        self.cx.catalog.queue(queue).wake_key.clone()
    }

    /// Commits `c`'s transaction, then marks the queues it created as existing.
    pub(in crate::transport) async fn commit(
        &self,
        c: Held<D>,
        created: &[Arc<QueueEntry>],
        purpose: &str,
    ) -> Result<()> {
        c.commit()
            .await
            .map_err(self.cx.db(|| format!("committing ({purpose})")))?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    /// The queues a message goes to: its queue, or every live subscriber of its topic (read in
    /// the caller's transaction). A subscription row with a name no endpoint could have written
    /// is skipped with a warning rather than failing every publish of the topic.
    pub(super) async fn destinations(
        &self,
        c: &mut Held<D>,
        destination: &Destination,
    ) -> Result<Vec<QueueName>> {
        match destination {
            Destination::Queue(queue) => {
                // Names chosen at run time (send_to, replies) meet the limit the builder holds
                // configured names to: past it PostgreSQL would truncate the name, and two
                // queues would share one table.
                let dialect = self.driver.dialect();
                queue.check_len(dialect.max_queue_name)?;
                let queue = crate::transport::resolve_address(
                    dialect,
                    &self.cx.schema,
                    self.cx.layout,
                    queue,
                )?;
                Ok(vec![queue])
            }
            Destination::Topic(topic) => {
                let names = c
                    .subscribers(&self.cx.sql.subscription_list, topic, self.cx.idle_seconds)
                    .await
                    .map_err(self.cx.db(|| format!("reading the subscribers of {topic}")))?;
                let nservicebus = match &self.cx.nservicebus {
                    Some(nsb) => c
                        .nservicebus_subscribers(&nsb.subscribers, topic)
                        .await
                        .map_err(self.cx.db(|| {
                            format!(
                                "reading the subscribers of {topic} in NServiceBus's table {:?}",
                                nsb.table
                            )
                        }))?,
                    None => Vec::new(),
                };
                if names.is_empty() && nservicebus.is_empty() {
                    crate::transport::published_to_nobody(topic);
                    tracing::debug!(topic, "no live subscription: the event reaches no queue (no subscriber has started yet, or subscribers know the type under another name: compare #[nimbus(type_name = ..)] on both sides)");
                }
                let dialect = self.driver.dialect();
                let own = names
                    .into_iter()
                    .map(|name| (QueueName::new(name.clone()), name));
                // NServiceBus's rows hold addresses (`Billing@[dbo]@[Sales]`, `"public"."Billing"`).
                let theirs = nservicebus.into_iter().map(|address| {
                    let queue = QueueName::parse(&address).and_then(|queue| {
                        crate::transport::resolve_address(
                            dialect,
                            &self.cx.schema,
                            self.cx.layout,
                            &queue,
                        )
                    });
                    (queue, address)
                });
                let mut queues: Vec<QueueName> = Vec::new();
                for (queue, name) in own.chain(theirs) {
                    match queue.and_then(|queue| {
                        queue.check_len(dialect.max_queue_name)?;
                        Ok(queue)
                    }) {
                        // A Nimbus subscriber sharing NServiceBus's table is in both.
                        Ok(queue) if queues.contains(&queue) => {}
                        Ok(queue) => queues.push(queue),
                        Err(e) => {
                            tracing::warn!(topic, subscriber = %name, error = %e, "skipping a subscription whose queue name cannot be used");
                        }
                    }
                }
                Ok(queues)
            }
        }
    }

    /// Writes `messages` on `c`, inside its open transaction. Returns the queues this created
    /// and those it wrote to.
    /// A send (`creation` = [`Creation::Required`]) fails on a queue no endpoint has made; a
    /// publish always makes a subscriber's missing queue (with auto-create).
    pub(super) async fn write(
        &self,
        c: &mut Held<D>,
        messages: &[OutgoingMessage],
        creation: Creation,
    ) -> Result<Written> {
        let mut written = Written::default();
        if let [message] = messages {
            // One message: write it as planned (the common case, and no batching to do).
            let creation = match message.destination {
                Destination::Topic(_) => Creation::IfMissing,
                Destination::Queue(_) => creation,
            };
            let queues = self.destinations(c, &message.destination).await?;
            for (nth, queue) in queues.into_iter().enumerate() {
                let row_message = super::bodies::for_row(message, nth);
                let message = &*row_message;
                let row_id = self.storage.row_id(message);
                self.store_body(c, &queue, message).await?;
                self.storage
                    .insert(c, &queue, message, row_id, creation, &mut written.created)
                    .await?;
                if message.delivery == Delivery::Immediate && !written.queues.contains(&queue) {
                    written.queues.push(queue);
                }
            }
            return Ok(written);
        }
        let (inserts, written) = self.plan_writes(c, messages, creation).await?;
        for insert in inserts {
            insert.run(c).await?;
        }
        Ok(written)
    }

    /// The statements that write `messages` (rows of one table combined into multi-row
    /// inserts), and what running them all will have created and written to; queues are made
    /// and subscribers read on `c` as [`Inner::write`] says.
    pub(super) async fn plan_writes(
        &self,
        c: &mut Held<D>,
        messages: &[OutgoingMessage],
        creation: Creation,
    ) -> Result<(Vec<storage::PlannedInsert>, Written)> {
        let mut written = Written::default();
        let mut planned = Vec::new();
        for message in messages {
            let creation = match message.destination {
                Destination::Topic(_) => Creation::IfMissing,
                Destination::Queue(_) => creation,
            };
            let queues = self.destinations(c, &message.destination).await?;
            for (nth, queue) in queues.into_iter().enumerate() {
                let row_message = super::bodies::for_row(message, nth);
                let message = &*row_message;
                let row_id = self.storage.row_id(message);
                // Bodies stored apart are written at once, in the transaction of the rows.
                self.store_body(c, &queue, message).await?;
                planned.push(
                    self.storage
                        .plan_insert(c, &queue, message, row_id, creation, &mut written.created)
                        .await?,
                );
                if message.delivery == Delivery::Immediate && !written.queues.contains(&queue) {
                    written.queues.push(queue);
                }
            }
        }
        let inserts = crate::transport::batching::combine(planned, self.driver.dialect());
        Ok((inserts, written))
    }

    /// The one autocommitted statement that writes `messages`, planned without a connection
    /// (queues that exist, no subscribers to read: planning writes nothing), and the queues it
    /// wakes: `None` unless every message goes to a queue known to exist, in a row one
    /// statement writes ([`storage::Storage::writes_in_one_statement`]), and the rows fit one
    /// multi-row statement.
    pub(super) fn plan_one_known_insert(
        &self,
        messages: &[OutgoingMessage],
    ) -> Option<(storage::PlannedInsert, Vec<QueueName>)> {
        let mut planned = Vec::with_capacity(messages.len());
        let mut queues: Vec<QueueName> = Vec::new();
        for message in messages {
            // A body stored apart is written with its row, in one transaction.
            if message.stored_apart.is_some() {
                return None;
            }
            let Destination::Queue(queue) = &message.destination else {
                return None;
            };
            let row_id = self.storage.row_id(message);
            planned.push(self.storage.plan_known_insert(queue, message, row_id)?);
            if message.delivery == Delivery::Immediate && !queues.contains(queue) {
                queues.push(queue.clone());
            }
        }
        let mut inserts = crate::transport::batching::combine(planned, self.driver.dialect());
        match inserts.len() {
            1 => inserts.pop().map(|insert| (insert, queues)),
            _ => None,
        }
    }

    /// Writes `letter`, under a fresh id if its id is taken.
    pub(super) async fn insert_dead_letter(
        &self,
        c: &mut Held<D>,
        letter: &DeadLetter,
    ) -> Result<()> {
        for id in [letter.message_id, Uuid::new_v4()] {
            let row = DeadLetterRow {
                message_id: id,
                original_destination: &letter.original_destination,
                body: &letter.body,
                delivery_attempts: letter.delivery_attempts,
            };
            let inserted = c
                .insert_dead_letter(&self.cx.sql.dead_letter_insert, &row)
                .await
                .map_err(self.cx.db("writing a dead letter"))?;
            if inserted {
                return Ok(());
            }
        }
        Err(NimbusError::NotRunning(
            "a dead letter could not be written under two different ids".into(),
        ))
    }

    pub(super) async fn has_idle_seconds(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_has_idle_seconds,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSubscriptions for IdleSeconds"))
    }

    pub(super) async fn sagas_have_completed_at(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_sagas_has_completed_at,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSagas for CompletedAt"))
    }

    pub(super) async fn has_last_seen_at(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_has_last_seen_at,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSubscriptions for LastSeenAt"))
    }

    /// Turns a due delayed message back into one to write to its queue; a row that cannot be
    /// read becomes a dead letter with the reason instead of vanishing.
    pub(super) fn delayed_to_outgoing(
        &self,
        row: MessageRow,
    ) -> std::result::Result<OutgoingMessage, DeadLetter> {
        let destination = row.destination.clone().unwrap_or_default();
        let problem = match (&row.undecodable, QueueName::parse(&destination)) {
            (Some(why), _) => why.clone(),
            (None, Err(e)) => format!("its destination cannot be used: {e}"),
            (None, Ok(queue)) => {
                // Its priority and group waited in its headers (the delayed table has no column
                // for them): a message of a group joins the end of its group now.
                let priority = crate::envelope::priority_in_json(&row.headers);
                let group = crate::envelope::group_in_json(&row.headers);
                return Ok(OutgoingMessage {
                    destination: Destination::Queue(queue),
                    id: Uuid::parse_str(&row.id).unwrap_or_else(|_| Uuid::new_v4()),
                    correlation_id: row.correlation_id,
                    reply_to_address: row.reply_to_address,
                    expires_at: row.expires,
                    headers_json: row.headers,
                    body: row.body,
                    time_to_be_received_ms: None,
                    delivery: Delivery::Immediate,
                    group,
                    priority,
                    stored_apart: None,
                });
            }
        };
        let reason = format!("a delayed message cannot be delivered: {problem}");
        tracing::warn!(id = %row.id, destination = %destination, %reason, "moving a delayed message to the dead letters");
        let received = received_message(row);
        Err(crate::dead_letter::dead_letter_raw(
            &received,
            &destination,
            &reason,
            0,
        ))
    }
}
