//! The transport over any [`Driver`]: fan-out of publishes, auto-create and the known-queue
//! cache, schema creation and verification, index checks, receive, dead letters, delayed
//! delivery, subscriptions, the idle sweep and replay — each written once.
//!
//! This file is over 1,000 lines because it is the one implementation of the `Transport` trait,
//! whose methods each delegate to the storage layout or to the helpers in [`inner`]; the receive
//! transactions are in [`receive`].

use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

mod bodies;
mod deduplication;
mod inner;
mod receive;
mod schedules;

pub(super) use deduplication::window_ms;

use receive::{BatchState, SqlBatch, SqlReceiveTransaction};

use super::catalog::{Catalog, QueueEntry};
use super::index_check::ProblemKind;
use super::instances::{InstanceHolder, InstanceRegistration, Registered};
use super::storage::{self, Context, Creation, Storage};
use super::{
    AgedRows, IndexProblem, PlannedSends, RebuildDeadLetter, ReceiveTransaction, ReceivedBatch,
    StopSignal, SweepReport, TableHealth, TableStats, Transport, TransportSettings,
};
use crate::driver::schedule_statements::{ScheduleDefinition, ScheduleFiring, ScheduleList};
use crate::driver::statements::{MessageRow, PausedRow};
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
    /// The process's watch of the database's idle queues, once a bus started wake-ups where
    /// the database cannot announce sends (SQL Server).
    pub watcher: std::sync::OnceLock<Arc<super::watcher::Watcher>>,
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
            schedules: settings.schedules,
            inbox: settings.inbox,
            limits: settings.limits,
            bodies: settings.bodies,
            stores: settings.stores,
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
            watcher: std::sync::OnceLock::new(),
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
        // The same for the instance registry and the monitoring reports (an endpoint runs
        // without them, unregistered and unmonitored), the schedules and the deduplication
        // keys (which only endpoints that declare schedules or keep an inbox need;
        // verify_schema requires them of those).
        let mut c = self.inner.connection("checking the schema").await?;
        for table in [
            "NimbusInstances",
            "NimbusMonitoring",
            "NimbusSchedules",
            "NimbusDeduplication",
        ] {
            if !self.inner.cx.table_exists(&mut c, table).await? {
                c.release();
                return Ok(false);
            }
        }
        // And for the index that finds a delayed message by its id (cancel, reschedule): a
        // table made before it existed gains it at start.
        if self.inner.storage.moves_delayed() {
            let cx = &self.inner.cx;
            let index = &cx.sql.delayed_messages_index_id;
            if !cx
                .missing_indexes(&mut c, "NimbusDelayedMessages", &[index])
                .await?
                .is_empty()
            {
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
        group: row
            .group
            .map(|(key, position)| crate::envelope::GroupPlace {
                key,
                position: Some(position),
            }),
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
        self.inner.announce.get().is_some() || self.inner.watcher.get().is_some()
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

    fn start_wakeups(&self, idle_poll: std::time::Duration) {
        let s = &self.inner;
        if let Some(template) = s.cx.sql.watch_wait.as_deref() {
            if !idle_poll.is_zero() && s.watcher.get().is_none() {
                let looker: std::sync::Weak<dyn super::watcher::Looker> =
                    Arc::downgrade(&(self.inner.clone() as Arc<dyn super::watcher::Looker>));
                let _ = s.watcher.set(super::watcher::join(
                    s.driver.share_key(),
                    template,
                    s.driver.dialect().placeholder,
                    idle_poll,
                    looker,
                ));
            }
            return;
        }
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
        // taken (SQLite's transaction holds the file's one write lock instead), and only where a
        // connection can be had at once: instances of this process waiting for the lock hold
        // connections of its budget, and waiting for one of theirs would wait for them until the
        // lock's timeout (seen on Citus, whose DDL is slow enough for them to queue up). Without
        // the look, the scripts run: they create only what is missing.
        if cx.sql.schema_lock.is_some()
            && s.driver.can_connect_now()
            && self.schema_is_complete(queues).await?
        {
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
        cx.create(&mut c, "NimbusSchedules", &cx.sql.schedules, &[schema])
            .await?;
        cx.create(
            &mut c,
            "NimbusDeduplication",
            &cx.sql.deduplication,
            &[schema],
        )
        .await?;
        cx.create(&mut c, "NimbusLimits", &cx.sql.limits, &[schema])
            .await?;
        cx.create(&mut c, "NimbusBodies", &cx.sql.bodies, &[schema])
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
        if cx.schedules {
            tables.push(("NimbusSchedules", &cx.sql.schedules));
        }
        if cx.inbox {
            tables.push(("NimbusDeduplication", &cx.sql.deduplication));
        }
        if cx.limits {
            tables.push(("NimbusLimits", &cx.sql.limits));
        }
        if cx.bodies {
            tables.push(("NimbusBodies", &cx.sql.bodies));
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

    async fn stays_on_citus_coordinator(&self) -> Result<bool> {
        let s = &self.inner;
        let cx = &s.cx;
        let (Some(installed), Some(undistributed)) = (
            cx.sql.catalog_citus_installed.as_deref(),
            cx.sql.catalog_citus_undistributed.as_deref(),
        ) else {
            return Ok(false);
        };
        let mut c = s
            .connection("checking where the schema's tables are placed")
            .await?;
        let citus = c
            .exists(installed, &[])
            .await
            .map_err(cx.db(|| "looking for the Citus extension".to_string()))?;
        let stays = citus
            && c.exists(undistributed, &[Param::Text(Some(cx.schema.as_str()))])
                .await
                .map_err(cx.db(|| {
                    format!(
                        "reading Citus's catalog for the placement of schema {:?}",
                        cx.schema.as_str()
                    )
                }))?;
        c.release();
        Ok(stays)
    }

    async fn peek(&self, queue: &QueueName) -> Result<i64> {
        let s = &self.inner;
        let mut c = s.connection("peeking").await?;
        let estimate = s.storage.peek(&mut c, queue).await?;
        c.release();
        Ok(estimate)
    }

    fn watch(&self, queue: &QueueName) {
        let s = &self.inner;
        if let (Some(watcher), Some(watched)) = (s.watcher.get(), s.storage.ready(queue)) {
            watcher.watch(&s.wake_key(queue), watched);
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
        let mut rows = 0;
        let mut announced = Vec::new();
        for message in messages {
            let creation = match message.destination {
                Destination::Topic(_) => Creation::IfMissing,
                Destination::Queue(_) => Creation::Required,
            };
            let queues = s.destinations(&mut c, &message.destination).await?;
            for (nth, queue) in queues.into_iter().enumerate() {
                let row_message = bodies::for_row(message, nth);
                let message = &*row_message;
                let row_id = s.storage.row_id(message);
                statements.extend(s.body_statement(&queue, message).await?);
                let planned = s
                    .storage
                    .plan_insert(&mut c, &queue, message, row_id, creation, &mut created)
                    .await?;
                statements.push(planned.statement);
                rows += 1;
                if message.delivery == Delivery::Immediate && !announced.contains(&queue) {
                    announced.push(queue);
                }
            }
        }
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
        // Only where it costs no other pool a connection: with the budget spent, the first
        // receive waits for one, as any would, and an idle endpoint holds none of its own.
        if !self.inner.driver.has_room() {
            return Ok(());
        }
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
            Some(row) => Ok(Some(SqlReceiveTransaction::alone(s.clone(), c, row))),
        }
    }

    async fn receive_batch(
        &self,
        queue: &QueueName,
        limit: i64,
        stop: &StopSignal,
        lock_wait: Option<std::time::Duration>,
    ) -> Result<Option<Box<dyn ReceivedBatch>>> {
        let s = &self.inner;
        let Some(mut c) = s
            .connection_unless_stopped("receiving a batch", stop)
            .await?
        else {
            return Ok(None);
        };
        // On an error `c` is dropped: the connection is discarded and the server rolls back.
        let rows = s
            .storage
            .receive_batch(&mut c, queue, limit, lock_wait)
            .await?;
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
                limit_slots: Default::default(),
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
            Some(row) => Ok(Some(SqlReceiveTransaction::alone(s.clone(), c, row))),
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

    async fn ordered_groups(
        &self,
        queue: &QueueName,
        wanted: crate::transport::Wanted,
    ) -> Result<bool> {
        let s = &self.inner;
        let mut c = s
            .transaction("preparing the ordered groups of a queue")
            .await?;
        let kept = s.storage.ordered_groups(&mut c, queue, wanted).await?;
        s.commit(c, &[], "preparing the ordered groups of a queue")
            .await?;
        Ok(kept)
    }

    async fn priorities(
        &self,
        queue: &QueueName,
        wanted: crate::transport::Wanted,
    ) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.transaction("preparing the priorities of a queue").await?;
        let kept = s.storage.priorities(&mut c, queue, wanted).await?;
        s.commit(c, &[], "preparing the priorities of a queue")
            .await?;
        Ok(kept)
    }

    async fn priority_counts(
        &self,
        queue: &QueueName,
    ) -> Result<Vec<crate::transport::PriorityCount>> {
        let s = &self.inner;
        let mut c = s.connection("counting the priorities of a queue").await?;
        let priorities = crate::transport::storage::QueueFeature::Priorities;
        if !s.cx.has_feature(&mut c, queue, priorities).await? {
            c.release();
            return Ok(Vec::new());
        }
        let at = s.storage.statements(queue);
        let counts = c
            .priority_counts(at.priority_list(), &at.params(&[]))
            .await
            .map_err(s.cx.db(|| format!("counting the priorities of queue {queue:?}")))?;
        c.release();
        Ok(counts)
    }

    fn keeps_groups(&self, queue: &QueueName) -> bool {
        self.inner.cx.catalog.queue(queue).keeps_groups() == Some(true)
    }

    async fn groups(
        &self,
        queue: &QueueName,
        limit: i64,
    ) -> Result<Vec<crate::transport::GroupSummary>> {
        let s = &self.inner;
        let mut c = s.connection("listing the groups of a queue").await?;
        let groups = crate::transport::storage::QueueFeature::Groups;
        if !s.cx.has_feature(&mut c, queue, groups).await? {
            c.release();
            return Ok(Vec::new());
        }
        let at = s.storage.statements(queue);
        let limit = [crate::driver::Param::BigInt(Some(limit))];
        let groups = c
            .groups(at.group_list(), &at.params(&limit))
            .await
            .map_err(s.cx.db(|| format!("listing the groups of queue {queue:?}")))?;
        c.release();
        Ok(groups)
    }

    async fn add_limit_slots(&self, scope: &str, slots: u32) -> Result<()> {
        let s = &self.inner;
        let what = || format!("adding the slots of the limit {scope:?}");
        let mut c = s.connection(&what()).await?;
        c.add_limit_slots(&s.cx.sql.limit_slots, scope, i64::from(slots))
            .await
            .map_err(s.cx.db(what))?;
        c.release();
        Ok(())
    }

    async fn count_limit_held(&self, scope: &str) -> Result<()> {
        let s = &self.inner;
        let what = || format!("counting a message the limit {scope:?} held back");
        let mut c = s.connection(&what()).await?;
        c.count_limit_held(&s.cx.sql.limit_held, scope)
            .await
            .map_err(s.cx.db(what))?;
        c.release();
        Ok(())
    }

    async fn sweep_orphan_objects(&self, stores: &crate::claim_check::Stores) -> Result<u64> {
        self.inner.sweep_objects(stores).await
    }

    async fn drop_queue(&self, queue: &QueueName) -> Result<()> {
        let s = &self.inner;
        let mut c = s.connection("dropping a queue").await?;
        s.storage.drop_queue(&mut c, queue).await?;
        // The bodies its messages stored apart go with them (not its dead letters').
        c.execute(
            &s.cx.sql.bodies_drop_queue,
            &[Param::Text(Some(queue.as_str()))],
        )
        .await
        .map_err(s.cx.db(|| format!("deleting the bodies stored apart for {queue:?}")))?;
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
            AgedRows::DeduplicationKeys => (
                &s.cx.sql.deduplication_cleanup,
                "deleting deduplication keys whose window ended",
            ),
            AgedRows::ExpiredBodies => (
                &s.cx.sql.bodies_expire,
                "deleting bodies stored apart whose message expired",
            ),
            AgedRows::DeadLetteredBodies => (
                &s.cx.sql.bodies_dead_letter_expire,
                "deleting the bodies of dead letters past their retention period",
            ),
            AgedRows::LimitSlots => (
                &s.cx.sql.limits_cleanup,
                "deleting the slots of limits untouched for a day",
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
        let shared = s.shared_reads_key();
        if !s.storage.moves_delayed() || super::shared_reads::delivered_recently(&shared) {
            return Ok(0);
        }
        let mut c = s.transaction("delivering delayed messages").await?;
        let rows = s.storage.take_due(&mut c, batch).await?;
        if rows.is_empty() {
            s.commit(c, &[], "an empty delivery").await?;
            super::shared_reads::delivered_all(&shared);
            return Ok(0);
        }
        let count = rows.len() as u64;
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            match s.delayed_to_outgoing(row) {
                Ok(message) => messages.push(message),
                Err(letter) => {
                    s.insert_dead_letter(&mut c, &letter).await?;
                    let stored = crate::dead_letter::stored_body_of(&letter.body);
                    s.keep_body_for_dead_letter(&mut c, stored).await?;
                }
            }
        }
        let written = s.write(&mut c, &messages, Creation::IfMissing).await?;
        s.commit_written(c, &written, "delayed deliveries").await?;
        if count < batch.unsigned_abs() {
            super::shared_reads::delivered_all(&shared);
        }
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
        let shared = s.shared_reads_key();
        if let Some(rows) = super::shared_reads::recent_pauses(&shared) {
            return Ok(Some(rows));
        }
        let mut c = s.connection("reading the paused queues").await?;
        let rows = c
            .paused_queues(&s.cx.sql.paused_list)
            .await
            .map_err(s.cx.db("reading the paused queues"))?;
        c.release();
        super::shared_reads::remember_pauses(&shared, &rows);
        Ok(Some(rows))
    }

    async fn cancel_delayed(&self, id: Uuid) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.connection("cancelling a delayed message").await?;
        let cancelled = s.storage.cancel_delayed(&mut c, id).await?;
        c.release();
        super::delayed::record_change("cancel", id, cancelled);
        Ok(cancelled)
    }

    async fn reschedule_delayed(&self, id: Uuid, due: super::Due) -> Result<bool> {
        let s = &self.inner;
        let mut c = s.connection("rescheduling a delayed message").await?;
        let moved = s.storage.reschedule_delayed(&mut c, id, due).await?;
        c.release();
        super::delayed::record_change("reschedule", id, moved);
        Ok(moved)
    }

    async fn delayed_messages(&self, limit: i64) -> Result<Vec<super::DelayedMessage>> {
        let s = &self.inner;
        let mut c = s.connection("listing delayed messages").await?;
        let listed = s.storage.delayed_messages(&mut c, limit).await?;
        c.release();
        Ok(listed)
    }

    async fn schedules(&self, endpoint: Option<&str>) -> Result<ScheduleList> {
        self.inner.schedules(endpoint).await
    }

    async fn declare_schedule(&self, definition: &ScheduleDefinition<'_>) -> Result<bool> {
        self.inner.declare_schedule(definition).await
    }

    async fn redefine_schedule(
        &self,
        definition: &ScheduleDefinition<'_>,
        version: i64,
    ) -> Result<bool> {
        self.inner.redefine_schedule(definition, version).await
    }

    async fn retire_schedule(&self, endpoint: &str, name: &str) -> Result<bool> {
        self.inner.retire_schedule(endpoint, name).await
    }

    async fn fire_schedule(
        &self,
        firing: &ScheduleFiring<'_>,
        message: Option<OutgoingMessage>,
    ) -> Result<bool> {
        self.inner.fire_schedule(firing, message).await
    }

    async fn send_deduplicated(
        &self,
        scope: &str,
        key: &str,
        window: std::time::Duration,
        messages: &[OutgoingMessage],
    ) -> Result<bool> {
        self.inner
            .send_deduplicated(scope, key, window, messages)
            .await
    }

    async fn send_each_deduplicated(
        &self,
        scope: &str,
        window: std::time::Duration,
        items: Vec<(String, OutgoingMessage)>,
    ) -> Result<Vec<bool>> {
        self.inner
            .send_each_deduplicated(scope, window, items)
            .await
    }

    async fn pause_schedule(&self, endpoint: &str, name: &str, by: &str) -> Result<bool> {
        self.inner.pause_schedule(endpoint, name, by).await
    }

    async fn resume_schedule(
        &self,
        endpoint: &str,
        name: &str,
        next_due: chrono::NaiveDateTime,
    ) -> Result<bool> {
        self.inner.resume_schedule(endpoint, name, next_due).await
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
        let written = s
            .write(&mut c, std::slice::from_ref(&message), Creation::IfMissing)
            .await?;
        s.give_body_back(&mut c, &message).await?;
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
