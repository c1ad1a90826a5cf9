//! The transport over any [`Driver`]: fan-out of publishes, auto-create and the known-queue
//! cache, schema creation and verification, index checks, receive, dead letters, delayed
//! delivery, subscriptions, the idle sweep and replay — each written once.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::catalog::{Catalog, QueueEntry};
use super::index_check::ProblemKind;
use super::instances::{InstanceHolder, InstanceRegistration, Registered};
use super::storage::{self, Context, Creation, Storage};
use super::{
    AgedRows, CommitFailure, HeldLease, IndexProblem, LeaseTerms, NextReceive, PlannedSends,
    RebuildDeadLetter, ReceiveTransaction, ReceivedBatch, SagaChange, ServerWait, StopSignal,
    SweepReport, TableHealth, TableStats, Transport, TransportSettings,
};
use crate::dead_letter::DeadLetter;
use crate::driver::statements::{DeadLetterRow, LeaseRow, MessageRow, PausedRow, SagaRow};
use crate::driver::{Announcement, Driver, DriverError, FailureKind, Held, Param, Statement};
use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::QueueName;

/// What a write did: the queues it created (known to exist once it commits) and the queues it
/// wrote messages to that are visible at once (woken when it commits).
#[derive(Default)]
struct Written {
    created: Vec<Arc<QueueEntry>>,
    queues: Vec<QueueName>,
}

/// Queues and topics over the database of driver `D`.
pub(crate) struct SqlTransport<D: Driver> {
    inner: Arc<Inner<D>>,
}

pub(super) struct Inner<D: Driver> {
    pub driver: Arc<D>,
    pub cx: Arc<Context>,
    pub storage: Box<dyn Storage<D>>,
    /// Where to announce written queues to other processes, once a bus started wake-ups.
    pub announce: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Announcement>>,
    /// `NimbusPausedQueues` was seen to exist: its catalog check is not repeated.
    pub pause_table_seen: std::sync::atomic::AtomicBool,
    /// The server refused a waiting peek (Babelfish for PostgreSQL has no `WAITFOR`): idle
    /// queues look again after a delay instead, for as long as the transport lives.
    pub server_wait_refused: std::sync::atomic::AtomicBool,
}

impl<D: Driver> SqlTransport<D> {
    /// Builds the transport over `driver` and opens one connection, so that an unreachable
    /// server or a refused login fails here, naming the server.
    pub async fn start(driver: D, settings: TransportSettings) -> Result<Arc<Self>> {
        let dialect = driver.dialect();
        let nservicebus = settings
            .nservicebus_subscriptions
            .as_ref()
            .map(|table| dialect.nservicebus_subscription_sql(&settings.schema, table));
        let cx = Arc::new(Context {
            name: dialect.name,
            folder: dialect.folder,
            target: driver.target().to_string(),
            sql: dialect.schema_sql_for(settings.layout, &settings.schema),
            catalog: Catalog::new(
                dialect,
                settings.schema.clone(),
                driver.target().to_string(),
                settings.layout,
            ),
            schema: settings.schema,
            layout: settings.layout,
            auto_create: settings.auto_create,
            create_on_send: settings.create_on_send,
            names_ignore_case: dialect.names_ignore_case,
            body_string: settings.body_string,
            message_ids: settings.message_ids,
            idle_seconds: settings.idle_seconds,
            deadlines: settings.deadlines,
            leases: settings.leases,
            sagas: settings.sagas,
            nservicebus,
            address_form: dialect.address_form,
        });
        let inner = Arc::new(Inner {
            driver: Arc::new(driver),
            storage: storage::for_layout(settings.layout, cx.clone()),
            cx,
            announce: std::sync::OnceLock::new(),
            pause_table_seen: std::sync::atomic::AtomicBool::new(false),
            server_wait_refused: std::sync::atomic::AtomicBool::new(false),
        });
        inner.connection("connecting").await?.release();
        Ok(Arc::new(SqlTransport { inner }))
    }

    pub(super) fn inner(&self) -> &Arc<Inner<D>> {
        &self.inner
    }

    /// Whether `NimbusPausedQueues` exists; once it was seen, without asking the catalog again.
    pub(super) async fn pause_table_exists(&self) -> Result<bool> {
        let s = &self.inner;
        if s.pause_table_seen.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let mut c = s.connection("checking the schema").await?;
        let exists = s.cx.table_exists(&mut c, "NimbusPausedQueues").await?;
        c.release();
        if exists {
            s.pause_table_seen.store(true, Ordering::Relaxed);
        }
        Ok(exists)
    }

    /// Whether every table, column and index auto-create would make for `queues` exists,
    /// judged from the catalog as [`Transport::verify_schema`] and the index check judge it.
    /// An index check that cannot run counts as incomplete: the locked path then makes sure.
    async fn schema_is_complete(&self, queues: &[QueueName]) -> Result<bool> {
        let cx = &self.inner.cx;
        // The opt-in BodyString column has no catalog check of its own; its script checks.
        if cx.body_string.is_some()
            && queues
                .iter()
                .any(|q| cx.catalog.queue(q).sql.body_string.is_some())
        {
            return Ok(false);
        }
        // Not required by verify_schema (an endpoint runs without it, unpausable), but made by
        // auto-create, also in a schema made before it existed.
        if !self.pause_table_exists().await? {
            return Ok(false);
        }
        // The same for the instance registry and the monitoring reports: an endpoint runs
        // without them, unregistered and unmonitored.
        let mut c = self.inner.connection("checking the schema").await?;
        for table in ["NimbusInstances", "NimbusMonitoring"] {
            if !self.inner.cx.table_exists(&mut c, table).await? {
                c.release();
                return Ok(false);
            }
        }
        c.release();
        match self.verify_schema(queues).await {
            Ok(()) => {}
            Err(NimbusError::MissingSchema { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
        for queue in queues {
            match self.index_problems(queue).await {
                Ok(problems) if problems.iter().all(|p| p.kind != ProblemKind::Missing) => {}
                Ok(_) | Err(_) => return Ok(false),
            }
        }
        Ok(true)
    }
}

impl<D: Driver> Inner<D> {
    /// A connection from the pool; the error says what to check.
    pub(super) async fn connection(&self, purpose: &str) -> Result<Held<D>> {
        self.connection_within(self.cx.deadlines, purpose).await
    }

    /// A connection whose calls have `deadlines` rather than the transport's.
    pub(super) async fn connection_within(
        &self,
        deadlines: crate::driver::Deadlines,
        purpose: &str,
    ) -> Result<Held<D>> {
        Held::take(&self.driver, deadlines)
            .await
            .map_err(|e| self.connect_error(purpose, e))
    }

    /// A connection that could not be had, with what to check.
    fn connect_error(&self, purpose: &str, e: crate::driver::DriverError) -> NimbusError {
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
    async fn connection_unless_stopped(
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
    pub(super) async fn transaction(&self, purpose: &str) -> Result<Held<D>> {
        let mut c = self.connection(purpose).await?;
        c.begin().await.map_err(self.cx.db(purpose))?;
        Ok(c)
    }

    /// Commits `c`'s transaction with what [`Inner::write`] wrote, marks the queues it created
    /// as existing, and wakes the receivers of the queues it wrote to.
    async fn commit_written(&self, c: Held<D>, written: &Written, purpose: &str) -> Result<()> {
        self.commit(c, &written.created, purpose).await?;
        self.wake(&written.queues);
        Ok(())
    }

    /// Wakes this process's receivers of `queues`, and announces them to other processes
    /// where the database can.
    fn wake(&self, queues: &[QueueName]) {
        for queue in queues {
            if queue.catalog().is_some() {
                // Another database's receivers listen elsewhere: they find it when they look.
                continue;
            }
            // The queue's key and announcement are made once, with its statements.
            let entry = self.cx.catalog.queue(queue);
            super::wakeups::wake(&entry.wake_key);
            if let Some(announce) = self.announce.get() {
                // The announcer is gone only when the transport is: nothing to wake then.
                let _ = announce.send(Announcement::Queue(entry.announcement.clone()));
            }
        }
    }

    fn wake_key(&self, queue: &QueueName) -> String {
        self.cx.catalog.queue(queue).wake_key.clone()
    }

    /// Commits `c`'s transaction, then marks the queues it created as existing.
    pub(super) async fn commit(
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
    async fn destinations(
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
                let queue =
                    super::resolve_address(dialect, &self.cx.schema, self.cx.layout, queue)?;
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
                    super::published_to_nobody(topic);
                    tracing::debug!(topic, "no live subscription: the event reaches no queue (no subscriber has started yet, or subscribers know the type under another name: compare #[nimbus(type_name = ..)] on both sides)");
                }
                let dialect = self.driver.dialect();
                let own = names
                    .into_iter()
                    .map(|name| (QueueName::new(name.clone()), name));
                // NServiceBus's rows hold addresses (`Billing@[dbo]@[Sales]`, `"public"."Billing"`).
                let theirs = nservicebus.into_iter().map(|address| {
                    let queue = QueueName::parse(&address).and_then(|queue| {
                        super::resolve_address(dialect, &self.cx.schema, self.cx.layout, &queue)
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
    async fn write(
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
            for queue in self.destinations(c, &message.destination).await? {
                let row_id = self.storage.row_id(message);
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
    async fn plan_writes(
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
            for queue in self.destinations(c, &message.destination).await? {
                let row_id = self.storage.row_id(message);
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
        let inserts = super::batching::combine(planned, self.driver.dialect());
        Ok((inserts, written))
    }

    /// The one autocommitted statement that writes `messages`, planned without a connection
    /// (queues that exist, no subscribers to read: planning writes nothing), and the queues it
    /// wakes: `None` unless every message goes to a queue known to exist, in a row one
    /// statement writes ([`storage::Storage::writes_in_one_statement`]), and the rows fit one
    /// multi-row statement.
    fn plan_one_known_insert(
        &self,
        messages: &[OutgoingMessage],
    ) -> Option<(storage::PlannedInsert, Vec<QueueName>)> {
        let mut planned = Vec::with_capacity(messages.len());
        let mut queues: Vec<QueueName> = Vec::new();
        for message in messages {
            let Destination::Queue(queue) = &message.destination else {
                return None;
            };
            let row_id = self.storage.row_id(message);
            planned.push(self.storage.plan_known_insert(queue, message, row_id)?);
            if message.delivery == Delivery::Immediate && !queues.contains(queue) {
                queues.push(queue.clone());
            }
        }
        let mut inserts = super::batching::combine(planned, self.driver.dialect());
        match inserts.len() {
            1 => inserts.pop().map(|insert| (insert, queues)),
            _ => None,
        }
    }

    /// Writes `letter`, under a fresh id if its id is taken.
    async fn insert_dead_letter(&self, c: &mut Held<D>, letter: &DeadLetter) -> Result<()> {
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

    async fn has_idle_seconds(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_has_idle_seconds,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSubscriptions for IdleSeconds"))
    }

    async fn sagas_have_completed_at(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_sagas_has_completed_at,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSagas for CompletedAt"))
    }

    async fn has_last_seen_at(&self, c: &mut Held<D>) -> Result<bool> {
        c.exists(
            &self.cx.sql.catalog_has_last_seen_at,
            &[Param::Text(Some(self.cx.schema.as_str()))],
        )
        .await
        .map_err(self.cx.db("checking NimbusSubscriptions for LastSeenAt"))
    }

    /// Turns a due delayed message back into one to write to its queue; a row that cannot be
    /// read becomes a dead letter with the reason instead of vanishing.
    fn delayed_to_outgoing(
        &self,
        row: MessageRow,
    ) -> std::result::Result<OutgoingMessage, DeadLetter> {
        let destination = row.destination.clone().unwrap_or_default();
        let problem = match (&row.undecodable, QueueName::parse(&destination)) {
            (Some(why), _) => why.clone(),
            (None, Err(e)) => format!("its destination cannot be used: {e}"),
            (None, Ok(queue)) => {
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
                })
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

/// The message a receive hands to the pipeline.
fn received_message(row: MessageRow) -> ReceivedMessage {
    ReceivedMessage {
        row_id: row.id,
        headers_json: row.headers,
        body: row.body,
        correlation_id: row.correlation_id,
        reply_to_address: row.reply_to_address,
        expired: row.expired,
        expires: row.expires,
        undecodable: row.undecodable,
    }
}

#[async_trait]
impl<D: Driver> Transport for SqlTransport<D> {
    fn name(&self) -> &'static str {
        self.inner.cx.name
    }

    fn same_queue_name(&self, a: &str, b: &str) -> bool {
        self.inner.cx.same_name(a, b)
    }

    fn single_writer(&self) -> bool {
        self.inner.driver.single_writer()
    }

    fn hears_other_processes(&self) -> bool {
        self.inner.announce.get().is_some()
    }

    fn peek_counts_held_rows(&self) -> bool {
        !self.inner.driver.dialect().peek_skips_held_rows
    }

    fn target(&self) -> &str {
        &self.inner.cx.target
    }

    fn wake_key(&self, queue: &QueueName) -> String {
        self.inner.wake_key(queue)
    }

    async fn flush_wakeups(&self) {
        let Some(announce) = self.inner.announce.get() else {
            return;
        };
        let (done, flushed) = tokio::sync::oneshot::channel();
        if announce.send(Announcement::Flush(done)).is_err() {
            return;
        }
        // Bounded: a connection that is down must not hold up a stopping bus.
        let _ = tokio::time::timeout(self.inner.cx.deadlines.statement, flushed).await;
    }

    fn start_wakeups(&self) {
        let s = &self.inner;
        if s.announce.get().is_some() {
            return;
        }
        let channel = match (
            s.cx.sql.wake_listen.as_deref(),
            s.cx.sql.wake_announce.as_deref(),
        ) {
            (Some(listen), Some(announce)) => {
                s.driver.wake_channel(listen, announce, s.cx.deadlines)
            }
            _ => s.driver.watch_changes(),
        };
        let Some(channel) = channel else {
            return;
        };
        if s.announce.set(channel.announce).is_err() {
            return;
        }
        let target = s.cx.target.clone();
        let mut heard = channel.heard;
        tokio::spawn(async move {
            while let Some(payload) = heard.recv().await {
                if payload.is_empty() {
                    // Something changed, no queue named (SQLite): wake every queue of it.
                    super::wakeups::wake_every_queue_of(&target);
                    continue;
                }
                match super::wakeups::parse_payload(&payload) {
                    Some((schema, queue)) => {
                        super::wakeups::wake(&super::wakeups::key(&target, schema, queue))
                    }
                    None => tracing::debug!(%payload, "ignoring a wake-up for no queue"),
                }
            }
        });
    }

    async fn create_schema(&self, queues: &[QueueName]) -> Result<()> {
        // The usual start of an instance finds everything in place: read from the catalog with
        // no lock and no DDL, so it neither waits for running receives nor holds up sends and
        // other starts. The lock and the scripts are only for what is missing.
        if self.schema_is_complete(queues).await? {
            return Ok(());
        }
        let s = &self.inner;
        let cx = &s.cx;
        let schema = cx.schema.as_str();
        let mut c = s.transaction("creating the schema").await?;
        cx.lock_schema(&mut c).await?;
        // Another instance may have made everything while this one waited for the lock (several
        // instances of a new endpoint starting at once): then there is nothing left to do, and
        // the next waiter is not held up by this one's scripts. Looked up on another
        // connection, which sees what the other instance committed; only where a lock was
        // taken (SQLite's transaction holds the file's one write lock instead).
        if cx.sql.schema_lock.is_some() && self.schema_is_complete(queues).await? {
            return s.commit(c, &[], "creating the schema").await;
        }
        if let Some(create_schema) = &cx.sql.schema {
            cx.create(&mut c, "the schema", create_schema, &[schema])
                .await?;
        }
        let upgrading = cx.table_exists(&mut c, "NimbusSubscriptions").await?;
        cx.create(
            &mut c,
            "NimbusSubscriptions",
            &cx.sql.subscriptions,
            &[schema],
        )
        .await?;
        cx.create(&mut c, "NimbusDeadLetters", &cx.sql.dead_letters, &[schema])
            .await?;
        if cx.leases {
            cx.create(&mut c, "NimbusLeases", &cx.sql.leases, &[schema])
                .await?;
        }
        if cx.sagas {
            let upgrading = cx.table_exists(&mut c, "NimbusSagas").await?;
            cx.create(&mut c, "NimbusSagas", &cx.sql.sagas, &[schema])
                .await?;
            if upgrading && !s.sagas_have_completed_at(&mut c).await? {
                tracing::warn!(schema = %cx.schema, "upgrading NimbusSagas: adding CompletedAt");
                cx.create(
                    &mut c,
                    "CompletedAt of NimbusSagas",
                    &cx.sql.upgrade_sagas_completed_at,
                    &[schema],
                )
                .await?;
            }
        }
        cx.create(
            &mut c,
            "NimbusPausedQueues",
            &cx.sql.paused_queues,
            &[schema],
        )
        .await?;
        cx.create(&mut c, "NimbusInstances", &cx.sql.instances, &[schema])
            .await?;
        cx.create(&mut c, "NimbusMonitoring", &cx.sql.monitoring, &[schema])
            .await?;
        if !s.has_last_seen_at(&mut c).await? {
            tracing::warn!(schema = %cx.schema, "upgrading NimbusSubscriptions: adding LastSeenAt");
            cx.create(
                &mut c,
                "LastSeenAt of NimbusSubscriptions",
                &cx.sql.upgrade_subscriptions_last_seen_at,
                &[schema],
            )
            .await?;
        }
        if !s.has_idle_seconds(&mut c).await? {
            // Seed 003's table has no IdleSeconds: a new one gets it at once, an old one is
            // upgraded (and that is worth a line in the log).
            if upgrading {
                tracing::warn!(schema = %cx.schema, "upgrading NimbusSubscriptions: adding IdleSeconds");
            }
            cx.create(
                &mut c,
                "IdleSeconds of NimbusSubscriptions",
                &cx.sql.upgrade_subscriptions_idle_seconds,
                &[schema],
            )
            .await?;
        }
        let created = s.storage.create(&mut c, queues).await?;
        s.commit(c, &created, "creating the schema").await
    }

    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.inner;
        let cx = &s.cx;
        let mut c = s.connection("checking the schema").await?;
        let mut tables = vec![
            ("NimbusSubscriptions", &cx.sql.subscriptions),
            ("NimbusDeadLetters", &cx.sql.dead_letters),
        ];
        if cx.leases {
            tables.push(("NimbusLeases", &cx.sql.leases));
        }
        if cx.sagas {
            tables.push(("NimbusSagas", &cx.sql.sagas));
        }
        for (table, statement) in tables {
            if !cx.table_exists(&mut c, table).await? {
                return Err(NimbusError::MissingSchema {
                    backend: cx.name,
                    object: format!(
                        "table {table} in schema {:?} of {}",
                        cx.schema.as_str(),
                        cx.target
                    ),
                    statement: statement.clone(),
                });
            }
            // A NimbusSubscriptions from before heartbeats is named before anything else.
            if table == "NimbusSubscriptions" && !s.has_last_seen_at(&mut c).await? {
                return Err(NimbusError::MissingSchema {
                    backend: cx.name,
                    object: "column LastSeenAt of NimbusSubscriptions (added for heartbeats)"
                        .into(),
                    statement: cx.sql.upgrade_subscriptions_last_seen_at.clone(),
                });
            }
            if table == "NimbusSagas" && !s.sagas_have_completed_at(&mut c).await? {
                return Err(NimbusError::MissingSchema {
                    backend: cx.name,
                    object: "column CompletedAt of NimbusSagas (completed instances kept for \
                             late messages)"
                        .into(),
                    statement: cx.sql.upgrade_sagas_completed_at.clone(),
                });
            }
            if table == "NimbusSubscriptions" && !s.has_idle_seconds(&mut c).await? {
                return Err(NimbusError::MissingSchema {
                    backend: cx.name,
                    object: "column IdleSeconds of NimbusSubscriptions (each subscriber's idle \
                             period)"
                        .into(),
                    statement: cx.sql.upgrade_subscriptions_idle_seconds.clone(),
                });
            }
        }
        s.storage.verify(&mut c, queues).await?;
        c.release();
        Ok(())
    }

    async fn index_problems(&self, queue: &QueueName) -> Result<Vec<IndexProblem>> {
        let s = &self.inner;
        let cx = &s.cx;
        let (table, expected) = s.storage.indexes(queue);
        let mut c = s.connection("checking indexes").await?;
        let columns = c
            .index_columns(
                &cx.sql.catalog_index_definitions,
                cx.schema.as_str(),
                &table,
            )
            .await
            .map_err(cx.db(|| format!("reading the indexes of {table:?}")))?;
        c.release();
        Ok(super::index_check::check(
            &expected,
            &super::index_check::group(columns),
            s.driver.dialect().index_type,
        ))
    }

    async fn peek(&self, queue: &QueueName) -> Result<i64> {
        let s = &self.inner;
        let mut c = s.connection("peeking").await?;
        let estimate = s.storage.peek(&mut c, queue).await?;
        c.release();
        Ok(estimate)
    }

    fn waits_on_server(&self) -> bool {
        self.inner.cx.sql.messages_peek_wait.is_some()
            && !self.inner.server_wait_refused.load(Ordering::Relaxed)
    }

    async fn peek_waiting(&self, queue: &QueueName, wait: ServerWait) -> Result<i64> {
        let s = &self.inner;
        // The statement lasts as long as its wait, plus what any statement may take.
        let deadlines = crate::driver::Deadlines {
            statement: s.cx.deadlines.statement.saturating_add(wait.longest()),
            ..s.cx.deadlines
        };
        let mut c = s
            .connection_within(deadlines, "waiting for a message")
            .await?;
        match s.storage.peek_waiting(&mut c, queue, wait).await {
            Ok(estimate) => {
                c.release();
                Ok(estimate)
            }
            Err(e) if e.is_permanent() => {
                // The server refused the statement and no transaction is open: the connection
                // is as good as before and goes back to the pool. (Discarding it cost the next
                // statement a new login: a quarter of a second on Babelfish, and the messages
                // waiting behind it as long.)
                c.release();
                // Where the plain peek works, the server does not run the waiting one
                // (Babelfish for PostgreSQL has no WAITFOR) and never will: said once, then
                // idle queues poll. Where it fails too (the queue's table was dropped), that is
                // the error.
                let estimate = self.peek(queue).await?;
                if !s.server_wait_refused.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        error = %e,
                        "this server does not run the waiting peek (WAITFOR DELAY; Babelfish for \
                         PostgreSQL lacks it): idle queues look for other processes' messages \
                         by polling instead, one round trip per look, every idle_poll at first \
                         and up to 1 s apart while they stay empty"
                    );
                }
                Ok(estimate)
            }
            Err(e) => Err(e),
        }
    }

    async fn plan_sends(&self, messages: &[OutgoingMessage]) -> Result<PlannedSends> {
        let s = &self.inner;
        // On a single-writer database a transaction here would wait for the application's,
        // which may already hold the write lock: read (and, rarely, create) without one.
        let single_writer = s.driver.single_writer();
        let mut c = if single_writer {
            s.connection("preparing sends for the application's transaction")
                .await?
        } else {
            s.transaction("preparing sends for the application's transaction")
                .await?
        };
        let mut created = Vec::new();
        let mut statements = Vec::new();
        let mut announced = Vec::new();
        for message in messages {
            let creation = match message.destination {
                Destination::Topic(_) => Creation::IfMissing,
                Destination::Queue(_) => Creation::Required,
            };
            for queue in s.destinations(&mut c, &message.destination).await? {
                let row_id = s.storage.row_id(message);
                let planned = s
                    .storage
                    .plan_insert(&mut c, &queue, message, row_id, creation, &mut created)
                    .await?;
                statements.push(planned.statement);
                if message.delivery == Delivery::Immediate && !announced.contains(&queue) {
                    announced.push(queue);
                }
            }
        }
        let rows = statements.len();
        // Where the database can carry it, the announcement rides in the application's own
        // transaction: delivered if it commits, dropped if it rolls back.
        if let Some(announce) = s.cx.sql.wake_announce_one.as_deref() {
            for queue in announced {
                let payload = super::wakeups::payload(s.cx.schema.as_str(), queue.as_str());
                statements.push(Statement::new(announce, &[Param::Text(Some(&payload))]));
            }
        }
        if single_writer {
            c.release();
            created.iter().for_each(|e| e.mark_exists());
        } else {
            s.commit(c, &created, "preparing sends").await?;
        }
        Ok(PlannedSends { statements, rows })
    }

    async fn maintain(
        &self,
        queue: &QueueName,
        vacuum: &(dyn for<'s> Fn(&'s TableStats) -> bool + Send + Sync),
    ) -> Result<Option<TableHealth>> {
        let s = &self.inner;
        let (Some(read), Some((table, vacuum_sql))) =
            (s.cx.sql.table_dead_rows.as_deref(), s.storage.vacuum(queue))
        else {
            return Ok(None);
        };
        let mut c = s.connection("checking a queue table's dead rows").await?;
        let rows = c
            .query(read, &[Param::Text(Some(&table))])
            .await
            .map_err(s.cx.db(|| format!("counting the dead rows of {table}")))?;
        let Some(row) = rows.first() else {
            // No statistics yet: a table nothing has been written to since the server started.
            c.release();
            return Ok(None);
        };
        let unreadable = |e: String| {
            s.cx.db(|| format!("reading the dead rows of {table}"))(DriverError::other(
                FailureKind::Permanent,
                e,
            ))
        };
        let stats = TableStats {
            dead_rows: row.int(0).map_err(unreadable)?.unwrap_or(0),
            autovacuum_at: row.int(1).map_err(unreadable)?,
            autovacuum_naptime: std::time::Duration::from_secs(
                row.int(2)
                    .map_err(unreadable)?
                    .and_then(|n| u64::try_from(n).ok())
                    .unwrap_or(60),
            ),
        };
        let vacuumed = vacuum(&stats);
        if vacuumed {
            c.execute(&vacuum_sql, &[])
                .await
                .map_err(s.cx.db(|| format!("vacuuming {table}")))?;
        }
        c.release();
        Ok(Some(TableHealth {
            table,
            stats,
            vacuumed,
        }))
    }

    async fn first_headers(&self, queue: &QueueName) -> Result<Option<String>> {
        let s = &self.inner;
        let mut c = s.connection("reading the oldest message").await?;
        let rows = s.storage.browse(&mut c, queue, 1).await?;
        c.release();
        Ok(rows.into_iter().next().map(|row| row.headers))
    }

    async fn warm_up(&self) -> Result<()> {
        self.inner
            .connection("opening a receiver's connection")
            .await?
            .release();
        Ok(())
    }

    async fn receive(
        &self,
        queue: &QueueName,
        stop: &StopSignal,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let s = &self.inner;
        let Some(mut c) = s.connection_unless_stopped("receiving", stop).await? else {
            return Ok(None);
        };
        // On an error `c` is dropped: the connection is discarded and the server rolls back.
        match s.storage.receive(&mut c, queue).await? {
            None => {
                s.commit(c, &[], "an empty receive").await?;
                Ok(None)
            }
            Some(row) => Ok(Some((
                received_message(row),
                Box::new(SqlReceiveTransaction {
                    connection: c,
                    inner: s.clone(),
                    handler_savepoint: false,
                    member_of: None,
                }),
            ))),
        }
    }

    async fn receive_batch(
        &self,
        queue: &QueueName,
        limit: i64,
        stop: &StopSignal,
    ) -> Result<Option<Box<dyn ReceivedBatch>>> {
        let s = &self.inner;
        let Some(mut c) = s
            .connection_unless_stopped("receiving a batch", stop)
            .await?
        else {
            return Ok(None);
        };
        // On an error `c` is dropped: the connection is discarded and the server rolls back.
        let rows = s.storage.receive_batch(&mut c, queue, limit).await?;
        if rows.is_empty() {
            s.commit(c, &[], "an empty receive").await?;
            return Ok(None);
        }
        Ok(Some(Box::new(SqlBatch {
            size: rows.len(),
            rows: rows.into_iter().map(received_message).collect(),
            shared: Arc::new(std::sync::Mutex::new(BatchState {
                connection: Some(c),
                written: Written::default(),
            })),
            inner: s.clone(),
        })))
    }

    async fn take_expired_lease(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let s = &self.inner;
        let mut c = s.connection("taking back an expired lease").await?;
        // On an error `c` is dropped: the connection is discarded and the server rolls back.
        let taken = c
            .begin_and_take_expired_lease(&s.cx.sql.lease_take_expired, queue.as_str())
            .await
            .map_err(s.cx.db(|| format!("taking back an expired lease of {queue:?}")))?;
        match taken {
            None => {
                s.commit(c, &[], "looking for expired leases").await?;
                Ok(None)
            }
            Some(row) => Ok(Some((
                received_message(row),
                Box::new(SqlReceiveTransaction {
                    connection: c,
                    inner: s.clone(),
                    handler_savepoint: false,
                    member_of: None,
                }),
            ))),
        }
    }

    async fn send(&self, messages: &[OutgoingMessage]) -> Result<()> {
        let s = &self.inner;
        if let Some((insert, queues)) = s.plan_one_known_insert(messages) {
            // One autocommitted INSERT (a message, or the rows of a shared commit or a
            // `send_batch` to queues that exist) is as atomic as a transaction around it, at a
            // third of the round trips.
            let mut c = s.connection("sending").await?;
            insert.run(&mut c).await?;
            c.release();
            s.wake(&queues);
            return Ok(());
        }
        let mut c = s.transaction("sending").await?;
        let written = s.write(&mut c, messages, Creation::Required).await?;
        s.commit_written(c, &written, "a send").await
    }

    async fn send_shared(&self, messages: &[OutgoingMessage]) -> Result<()> {
        let s = &self.inner;
        if s.driver.shares_commits() {
            if let Some((insert, queues)) = s.plan_one_known_insert(messages) {
                Held::execute_sharing_commit(&s.driver, s.cx.deadlines, &insert.statement)
                    .await
                    .map_err(|e| match e.is_timeout() {
                        // Neither a commit to share nor the connection came in time: the
                        // connection's holder kept it, which the advice explains.
                        true => s.connect_error("sending", e),
                        false => insert.failed(e),
                    })?;
                s.wake(&queues);
                return Ok(());
            }
        }
        self.send(messages).await
    }

    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()> {
        let s = &self.inner;
        let mut c = s.connection("subscribing").await?;
        c.subscribe(
            &s.cx.sql.subscription_upsert,
            topic,
            queue.as_str(),
            s.cx.idle_seconds,
        )
        .await
        .map_err(s.cx.db(|| format!("subscribing queue {queue:?} to {topic}")))?;
        c.release();
        Ok(())
    }

    async fn prepare_nservicebus_subscriptions(&self) -> Result<()> {
        let s = &self.inner;
        let Some(nsb) = &s.cx.nservicebus else {
            return Ok(());
        };
        let mut c = s
            .connection("checking NServiceBus's subscription table")
            .await?;
        let exists = c
            .exists(
                &s.cx.sql.catalog_table_exists,
                &[
                    Param::Text(Some(nsb.schema.as_str())),
                    Param::Text(Some(&nsb.table)),
                ],
            )
            .await
            .map_err(s.cx.db("checking NServiceBus's subscription table"))?;
        if !exists {
            if !s.cx.auto_create {
                return Err(s.cx.missing(
                    format!("NServiceBus's subscription table {:?}", nsb.table),
                    &nsb.create,
                ));
            }
            s.cx.create(
                &mut c,
                &format!("NServiceBus's subscription table {:?}", nsb.table),
                &nsb.create,
                &[nsb.schema.as_str(), &nsb.table],
            )
            .await?;
        }
        c.release();
        Ok(())
    }

    async fn subscribe_nservicebus(
        &self,
        topic: &str,
        endpoint: &str,
        queue: &QueueName,
    ) -> Result<()> {
        let s = &self.inner;
        let Some(nsb) = &s.cx.nservicebus else {
            return Ok(());
        };
        let address = s.cx.address_form.address_of(&s.cx.schema, queue);
        let mut c = s.connection("subscribing in NServiceBus's table").await?;
        c.nservicebus_subscribe(&nsb.subscribe, &address, endpoint, topic)
            .await
            .map_err(s.cx.db(|| {
                format!(
                    "subscribing {endpoint} ({address}) to {topic} in NServiceBus's table {:?}",
                    nsb.table
                )
            }))?;
        c.release();
        Ok(())
    }

    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>> {
        let s = &self.inner;
        let mut c = s.connection("heartbeating").await?;
        let mut missing = Vec::new();
        for (i, (topic, queue)) in subscriptions.iter().enumerate() {
            let refreshed = c
                .on_subscription(&s.cx.sql.subscription_refresh, topic, queue.as_str())
                .await
                .map_err(s.cx.db("heartbeating subscriptions"))?;
            if !refreshed {
                missing.push(i);
            }
        }
        c.release();
        Ok(missing)
    }

    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport> {
        let s = &self.inner;
        let cx = &s.cx;
        let mut c = s.transaction("sweeping idle subscriptions").await?;
        let mut report = SweepReport {
            subscriptions: c
                .sweep_subscriptions(&cx.sql.subscription_sweep, idle_seconds)
                .await
                .map_err(cx.db("sweeping idle subscriptions"))?,
            queues_dropped: Vec::new(),
        };
        for queue in instance_queues(&report) {
            let left = c
                .count(
                    &cx.sql.subscription_count_for_queue,
                    &[Param::Text(Some(queue.as_str()))],
                )
                .await
                .map_err(cx.db("counting subscriptions"))?;
            if left == 0 {
                s.storage.drop_queue(&mut c, &queue).await?;
                report.queues_dropped.push(queue.as_str().to_string());
            }
        }
        s.commit(c, &[], "a sweep").await?;
        Ok(report)
    }

    async fn register_queues(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.inner;
        let mut c = s.connection("recording queues").await?;
        for queue in queues {
            s.storage.register(&mut c, queue).await?;
            s.cx.catalog.queue(queue).mark_exists();
        }
        c.release();
        Ok(())
    }

    async fn queue_exists(&self, queue: &QueueName) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.connection("checking a queue").await?;
        let exists = s.storage.exists(&mut c, queue).await?;
        c.release();
        Ok(exists)
    }

    async fn drop_queue(&self, queue: &QueueName) -> Result<()> {
        let s = &self.inner;
        let mut c = s.connection("dropping a queue").await?;
        s.storage.drop_queue(&mut c, queue).await?;
        c.release();
        Ok(())
    }

    async fn delete_aged(
        &self,
        rows: AgedRows,
        older_than: std::time::Duration,
        batch: i64,
    ) -> Result<u64> {
        let s = &self.inner;
        let (sql, purpose) = match rows {
            AgedRows::DeadLetters => (
                &s.cx.sql.dead_letter_expire,
                "deleting dead letters past their retention period",
            ),
            AgedRows::CompletedSagas => (
                &s.cx.sql.saga_cleanup,
                "deleting saga instances completed long ago",
            ),
            AgedRows::MonitoringReports => (
                &s.cx.sql.monitoring_cleanup,
                "deleting monitoring reports past their retention period",
            ),
        };
        let mut c = s.connection(purpose).await?;
        let seconds = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
        let mut deleted = 0u64;
        for size in s.driver.dialect().statement_sizes(batch) {
            let n = c
                .delete_older_than(sql, seconds, size)
                .await
                .map_err(s.cx.db(purpose))?;
            deleted += n;
            if n < size.unsigned_abs() {
                break;
            }
        }
        c.release();
        Ok(deleted)
    }

    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64> {
        let s = &self.inner;
        let mut c = s.connection("purging expired messages").await?;
        let mut purged = 0u64;
        // Each statement commits on its own, so none holds more row locks than the dialect
        // allows; together they purge up to `batch`.
        for size in s.driver.dialect().statement_sizes(batch) {
            let n = s.storage.purge_expired(&mut c, queue, size).await?;
            purged += n;
            if n < size.unsigned_abs() {
                break;
            }
        }
        c.release();
        Ok(purged)
    }

    async fn deliver_due(&self, batch: i64) -> Result<u64> {
        let s = &self.inner;
        let mut c = s.transaction("delivering delayed messages").await?;
        let rows = s.storage.take_due(&mut c, batch).await?;
        if rows.is_empty() {
            s.commit(c, &[], "an empty delivery").await?;
            return Ok(0);
        }
        let count = rows.len() as u64;
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            match s.delayed_to_outgoing(row) {
                Ok(message) => messages.push(message),
                Err(letter) => s.insert_dead_letter(&mut c, &letter).await?,
            }
        }
        let written = s.write(&mut c, &messages, Creation::IfMissing).await?;
        s.commit_written(c, &written, "delayed deliveries").await?;
        Ok(count)
    }

    async fn register_instance(
        &self,
        registration: &InstanceRegistration,
        blocks: &(dyn for<'h> Fn(&'h InstanceHolder) -> bool + Send + Sync),
    ) -> Result<Registered> {
        self.inner.register_instance(registration, blocks).await
    }

    async fn touch_instance(&self, run_id: Uuid, stopped: bool) -> Result<bool> {
        self.inner.touch_instance(run_id, stopped).await
    }

    async fn write_monitoring(
        &self,
        rows: &[crate::driver::monitoring_statements::ReportRow],
    ) -> Result<bool> {
        self.inner.write_monitoring(rows).await
    }

    fn close_unused_connections(&self, unused_for: std::time::Duration) -> usize {
        self.inner.driver.close_unused(unused_for)
    }

    async fn ping(&self, within: std::time::Duration) -> Result<()> {
        let s = &self.inner;
        let deadlines = crate::driver::Deadlines {
            connect: within,
            statement: within,
        };
        let mut c = s
            .connection_within(deadlines, "checking the database's health")
            .await?;
        s.cx.table_exists(&mut c, "NimbusDeadLetters").await?;
        c.release();
        Ok(())
    }

    async fn cleanup_instances(&self, older_than: std::time::Duration) -> Result<u64> {
        self.inner.cleanup_instances(older_than).await
    }

    async fn paused_queues(&self) -> Result<Option<Vec<PausedRow>>> {
        if !self.pause_table_exists().await? {
            return Ok(None);
        }
        let s = &self.inner;
        let mut c = s.connection("reading the paused queues").await?;
        let rows = c
            .paused_queues(&s.cx.sql.paused_list)
            .await
            .map_err(s.cx.db("reading the paused queues"))?;
        c.release();
        Ok(Some(rows))
    }

    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.transaction("replaying a dead letter").await?;
        let taken = c
            .take_dead_letter(&s.cx.sql.dead_letter_take, id)
            .await
            .map_err(s.cx.db(|| format!("taking dead letter {id}")))?;
        let Some((destination, body)) = taken else {
            s.commit(c, &[], "a replay of nothing").await?;
            return Ok(false);
        };
        // On an error `c` is dropped and the server rolls back: the dead letter stays.
        let message = rebuild(destination.as_deref().unwrap_or_default(), &body)?;
        let written = s.write(&mut c, &[message], Creation::IfMissing).await?;
        s.commit_written(c, &written, "a replay").await?;
        Ok(true)
    }
}

/// The per-instance queues among the swept subscriptions: those registered under
/// [`crate::subscriptions::INSTANCE_QUEUE_TOPIC`].
fn instance_queues(report: &SweepReport) -> Vec<QueueName> {
    let mut queues: Vec<QueueName> = report
        .subscriptions
        .iter()
        .filter(|(topic, _)| topic == crate::subscriptions::INSTANCE_QUEUE_TOPIC)
        .filter_map(|(_, queue)| QueueName::new(queue.clone()).ok())
        .collect();
    queues.sort();
    queues.dedup();
    queues
}

/// The open transaction of a received message. Dropped unfinished (a cancelled future), its
/// connection is discarded, so the server rolls back and the message stays in its queue.
struct SqlReceiveTransaction<D: Driver> {
    connection: Held<D>,
    inner: Arc<Inner<D>>,
    /// A handler took the connection for its own statements: a savepoint marks where they began.
    handler_savepoint: bool,
    /// Part of a batch: finishing gives the connection back to the batch instead of committing.
    member_of: Option<SharedBatch<D>>,
}

/// What the messages of a batch share: its open transaction, and what their handling wrote.
type SharedBatch<D> = Arc<std::sync::Mutex<BatchState<D>>>;

struct BatchState<D: Driver> {
    /// The batch's connection, while no message holds it.
    connection: Option<Held<D>>,
    written: Written,
}

/// A batch of received messages over one transaction (see [`ReceivedBatch`]).
struct SqlBatch<D: Driver> {
    rows: std::collections::VecDeque<ReceivedMessage>,
    size: usize,
    shared: SharedBatch<D>,
    inner: Arc<Inner<D>>,
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
        } = *self;
        let next = next.filter(|_| member_of.is_none() && connection.pipelines_commit());
        let cx = &inner.cx;
        if outgoing.is_empty() && !handler_savepoint {
            // Nothing to write and nothing to undo: no savepoint needed.
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
            Ok(Some(row)) => NextReceive::Taken(
                received_message(row),
                Box::new(SqlReceiveTransaction {
                    connection,
                    inner,
                    handler_savepoint: false,
                    member_of: None,
                }),
            ),
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
        } = *self;
        let written = inner
            .write(&mut connection, &outgoing, Creation::Required)
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
        } = *self;
        inner.insert_dead_letter(&mut connection, &letter).await?;
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
        })))
    }
}
