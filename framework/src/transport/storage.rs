//! The storage layouts, as strategies chosen once when a transport starts: one table per queue
//! (seed 000's shape or NServiceBus's PostgreSQL shape, [`TablePerQueue`]) or every queue in
//! `NimbusMessages` (seed 003, [`SharedTable`]). Everything that differs between them is here;
//! everything else is in [`super::sql_transport`].
//!
//! This file is over 1,000 lines because the two layouts are kept side by side, so that what
//! differs between them is read in one place; what they share is written once, in [`Storage`]'s
//! provided methods and [`QueueStatements`].

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::catalog::{Catalog, HeadsLook, QueueEntry};
use super::index_check::ProblemKind;
use crate::driver::statements::{
    delayed_row_statement, grouped_row_statement, priority_row_statement, queue_row_statement,
    shared_grouped_row_statement, shared_priority_row_statement, shared_row_statement, DelayedRow,
    MessageRow, QueueRow, SharedRow,
};
use crate::driver::{Driver, DriverError, Held, Param, Statement};
use crate::envelope::{Delivery, Destination, MessageIds, OutgoingMessage};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::sql::{IndexSql, SchemaSql};

/// What both layouts and the transport share: names, rendered statements, settings.
#[derive(Debug)]
pub(crate) struct Context {
    /// The database's name for messages.
    pub name: &'static str,
    /// The folder of `schema/` with the database's scripts, for messages.
    pub folder: &'static str,
    /// Where the database is, for messages.
    pub target: String,
    pub schema: SchemaName,
    /// How queues are stored.
    pub layout: super::StorageLayout,
    pub sql: SchemaSql,
    pub catalog: Catalog,
    pub auto_create: bool,
    /// Sends may create the queue they name when it does not exist (otherwise they fail).
    pub create_on_send: bool,
    /// Queue names compare without regard to case ([`crate::sql::Dialect::names_ignore_case`]).
    pub names_ignore_case: bool,
    pub body_string: Option<crate::BodyStringColumn>,
    pub message_ids: MessageIds,
    pub idle_seconds: i64,
    /// How long connecting and each statement may take.
    pub deadlines: crate::driver::Deadlines,
    /// Some messages are handled under a lease: `NimbusLeases` belongs to the schema.
    pub leases: bool,
    /// The endpoint declares schedules: `NimbusSchedules` is required.
    pub schedules: bool,
    /// The endpoint keeps an inbox: `NimbusDeduplication` is required.
    pub inbox: bool,
    /// The endpoint has limits: `NimbusLimits` is required.
    pub limits: bool,
    /// The endpoint stores bodies apart (the claim check): `NimbusBodies` is required.
    pub bodies: bool,
    /// The object stores bodies stored apart are written to and read from.
    pub stores: crate::claim_check::Stores,
    /// `NimbusSagas` is made and checked too.
    pub sagas: bool,
    /// NServiceBus's subscription table, when subscriptions are shared with it.
    pub nservicebus: Option<crate::sql::NServiceBusSubscriptionSql>,
    /// How this database writes the addresses of its queues.
    pub address_form: crate::names::AddressForm,
}

/// What the framework was doing when a statement failed, for its error: a fixed text, or a
/// closure that writes it (`|| format!(…)`), called only when the statement failed.
pub trait Operation {
    /// The operation in words.
    fn describe(self) -> String;
}

impl Operation for &str {
    fn describe(self) -> String {
        self.to_string()
    }
}

impl<F: FnOnce() -> String> Operation for F {
    fn describe(self) -> String {
        self()
    }
}

impl Context {
    /// Turns a driver error met while doing `operation` into the framework's error. The
    /// operation is put into words only when there is an error: statements that succeed (every
    /// message's receive and commit) pay nothing for it.
    pub fn db(&self, operation: impl Operation) -> impl FnOnce(DriverError) -> NimbusError {
        let name = self.name;
        move |e| NimbusError::database(name, operation.describe(), e)
    }

    /// Takes the lock that serializes schema creation in this schema across instances, for the
    /// rest of the transaction (nothing to do where the transaction itself holds the database's
    /// only write lock, as on SQLite). It waits at most three quarters of the statement deadline,
    /// so that a waiter fails with an error that names the lock, not with a timeout.
    pub async fn lock_schema<D: Driver>(&self, c: &mut Held<D>) -> Result<()> {
        let Some(lock) = &self.sql.schema_lock else {
            return Ok(());
        };
        let wait = self.deadlines.statement.mul_f64(0.75);
        let wait_ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        c.execute(
            lock,
            &[Param::Text(Some(self.schema.as_str())), Param::Int(wait_ms)],
        )
        .await
        .map_err(self.db(|| {
            format!(
                "taking the schema creation lock of schema {:?} (waited up to {:.0} s: another \
             instance holds it while it creates or upgrades the schema, which takes long when it \
             adds an index to a large queue table; start again once it is done, or raise \
             database_timeout)",
                self.schema.as_str(),
                wait.as_secs_f64()
            )
        }))?;
        Ok(())
    }

    /// Runs a creation script; the error says what the user can do when the login may not
    /// create tables.
    pub async fn create<D: Driver>(
        &self,
        c: &mut Held<D>,
        what: &str,
        script: &str,
        names: &[&str],
    ) -> Result<()> {
        match c.run_creation_script(script, names).await {
            Ok(()) => Ok(()),
            Err(e) => {
                let advice = if c.driver_of().permission_denied(&e) {
                    format!(
                        " (the login may not create it: grant it the right, or turn \
                         auto_create_schema off and have a DBA run the script that \
                         nimbus::admin::creation_script prints, from schema/{})",
                        self.folder
                    )
                } else {
                    String::new()
                };
                Err(self.db(|| {
                    format!(
                        "creating {what} in schema {:?} of {}{advice}",
                        self.schema.as_str(),
                        self.target,
                    )
                })(e))
            }
        }
    }

    /// Creates `entry`'s table and indexes (and `BodyString` when asked for) where missing.
    /// On a table that exists, only the indexes the catalog lacks are created: on PostgreSQL
    /// even `CREATE INDEX IF NOT EXISTS` waits for every open receive of the table, and every
    /// send waits behind it.
    pub async fn create_queue<D: Driver>(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        entry: &QueueEntry,
    ) -> Result<()> {
        let (schema, table) = (self.schema.as_str(), queue.as_str());
        let what = format!("queue table {table:?}");
        let indexes = entry.sql.indexes();
        let missing = if self.table_exists(c, table).await? {
            self.missing_indexes(c, table, &indexes).await?
        } else {
            self.create(c, &what, &entry.sql.create_table, &[schema, table])
                .await?;
            indexes.to_vec()
        };
        for index in missing {
            self.create(
                c,
                &format!("index {} of {what}", index.name),
                &index.create_if_missing,
                &index.guard_names(schema, table),
            )
            .await?;
        }
        if let Some(form) = self.body_string {
            let script = match form {
                crate::BodyStringColumn::Text => &entry.sql.body_string_text,
                crate::BodyStringColumn::NServiceBus => &entry.sql.body_string,
            };
            if let Some(body_string) = script {
                self.create(
                    c,
                    &format!("BodyString of {what}"),
                    body_string,
                    &[schema, table],
                )
                .await?;
            }
        }
        Ok(())
    }

    /// The indexes of `expected` that `table` lacks, compared by definition as the index check
    /// compares them: an index of another name that serves counts, one of the right name that is
    /// defined otherwise is left for the check to report (creating it would clash).
    pub async fn missing_indexes<'a, D: Driver>(
        &self,
        c: &mut Held<D>,
        table: &str,
        expected: &[&'a IndexSql],
    ) -> Result<Vec<&'a IndexSql>> {
        let columns = c
            .index_columns(
                &self.sql.catalog_index_definitions,
                self.schema.as_str(),
                table,
            )
            .await
            .map_err(self.db(|| format!("reading the indexes of {table:?}")))?;
        let wanted: Vec<IndexSql> = expected.iter().map(|index| (*index).clone()).collect();
        let problems = super::index_check::check(
            &wanted,
            &super::index_check::group(columns),
            c.driver_of().dialect().index_type,
        );
        Ok(expected
            .iter()
            .copied()
            .filter(|index| {
                problems
                    .iter()
                    .any(|p| p.name == index.name && p.kind == ProblemKind::Missing)
            })
            .collect())
    }

    /// Whether `table` exists in the schema.
    pub async fn table_exists<D: Driver>(&self, c: &mut Held<D>, table: &str) -> Result<bool> {
        c.exists(
            &self.sql.catalog_table_exists,
            &[
                Param::Text(Some(self.schema.as_str())),
                Param::Text(Some(table)),
            ],
        )
        .await
        .map_err(self.db("checking the schema"))
    }

    /// Whether two queue names name one queue on this database.
    pub fn same_name(&self, a: &str, b: &str) -> bool {
        if self.names_ignore_case {
            a == b || a.to_lowercase() == b.to_lowercase()
        } else {
            a == b
        }
    }

    /// The tables of the schema that have a queue table's columns (business tables beside
    /// them are not queues), Nimbus's own tables included.
    pub async fn queue_tables<D: Driver>(&self, c: &mut Held<D>) -> Result<Vec<String>> {
        let rows = c
            .query(
                &self.sql.catalog_list_tables,
                &[Param::Text(Some(self.schema.as_str()))],
            )
            .await
            .map_err(self.db("listing the queue tables of the schema"))?;
        Ok(rows
            .iter()
            .filter_map(|row| row.text(0).ok().flatten())
            .collect())
    }

    /// When a table named `queue` exists in the bus's schema without a queue table's columns
    /// (a business table, a table of another tool or layout): the error that says so, naming
    /// the columns it lacks. `None` when there is no such table, or the layout keeps queues in
    /// one table (the shared layout).
    pub async fn misshapen<D: Driver>(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
    ) -> Result<Option<NimbusError>> {
        let needed: &[&str] = match self.layout {
            super::StorageLayout::TablePerQueue => &["Id", "Headers", "Body", "RowVersion"],
            super::StorageLayout::NServiceBusPostgreSql => &["id", "headers", "body", "seq"],
            _ => return Ok(None),
        };
        let columns = self.table_columns(c, &self.schema, queue.as_str()).await?;
        if columns.is_empty() {
            return Ok(None);
        }
        let missing: Vec<&str> = needed
            .iter()
            .copied()
            .filter(|n| !columns.iter().any(|c| self.same_name(c, n)))
            .collect();
        if missing.is_empty() {
            return Ok(None);
        }
        Ok(Some(NimbusError::config(
            format!(
                "queue {queue}: table {:?} in schema {:?} of {} exists but is not a queue table: \
                 it lacks the column(s) {} (it has {})",
                queue.as_str(),
                self.schema.as_str(),
                self.target,
                missing.join(", "),
                columns.join(", ")
            ),
            "send to another queue name, or rename that table (a queue table is made by the \
             endpoint that receives from it, or by `nimbus schema apply --queue <name>`)",
        )))
    }

    /// The columns of `table` in `schema` (none: no such table).
    pub async fn table_columns<D: Driver>(
        &self,
        c: &mut Held<D>,
        schema: &SchemaName,
        table: &str,
    ) -> Result<Vec<String>> {
        let rows = c
            .query(
                &self.sql.catalog_table_columns,
                &[Param::Text(Some(schema.as_str())), Param::Text(Some(table))],
            )
            .await
            .map_err(self.db(|| format!("reading the columns of table {table}")))?;
        Ok(rows
            .iter()
            .filter_map(|row| row.text(0).ok().flatten())
            .collect())
    }

    /// Whether `queue`'s table (NimbusMessages in the shared-table layout) has the column of
    /// `feature`, as the catalog says.
    pub async fn has_feature<D: Driver>(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        feature: QueueFeature,
    ) -> Result<bool> {
        let columns = match self.layout {
            super::StorageLayout::SharedTable => {
                self.table_columns(c, &self.schema, MESSAGES_TABLE).await?
            }
            _ => {
                let schema = queue.schema().unwrap_or(&self.schema);
                self.table_columns(c, schema, queue.as_str()).await?
            }
        };
        Ok(columns.iter().any(|c| self.same_name(c, feature.column())))
    }

    /// Makes sure `queue`'s table keeps `feature` (its optional `columns`) as `wanted` says: only
    /// find out, require them and their indexes (an error names the statements that add what is
    /// missing), or add what is missing (under the schema lock, logged). Returns whether the
    /// table keeps them, and records it for the queue: its receives follow from then on.
    pub async fn keep_feature<D: Driver>(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        feature: QueueFeature,
        wanted: Wanted,
        columns: OptionalColumns<'_>,
    ) -> Result<bool> {
        let found = self.has_feature(c, queue, feature).await?;
        let kept = self
            .optional_columns(c, queue, wanted, found, columns)
            .await?;
        feature.record(&self.catalog.queue(queue), kept);
        Ok(kept)
    }

    /// [`Self::keep_feature`]'s work on the table, which has the columns or not (`found`).
    async fn optional_columns<D: Driver>(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        wanted: Wanted,
        found: bool,
        columns: OptionalColumns<'_>,
    ) -> Result<bool> {
        let OptionalColumns {
            what,
            table,
            add,
            indexes,
        } = columns;
        if !found && wanted == Wanted::Detect {
            return Ok(false);
        }
        let schema = self.schema.as_str();
        let missing = match found {
            true => self.missing_indexes(c, table, indexes).await?,
            false => indexes.to_vec(),
        };
        if wanted == Wanted::Detect || (found && missing.is_empty()) {
            return Ok(true);
        }
        if wanted == Wanted::Require {
            let statement = (!found)
                .then_some(add)
                .into_iter()
                .chain(missing.iter().map(|i| i.create.as_str()))
                .collect::<Vec<_>>()
                .join("\n");
            return Err(self.missing(
                format!("{what} and their indexes in queue table {table:?}"),
                &statement,
            ));
        }
        self.lock_schema(c).await?;
        if !found {
            tracing::info!(queue = %queue, "adding {what} to the queue table");
            let object = format!("{what} of queue table {table:?}");
            self.create(c, &object, add, &[schema, table]).await?;
        }
        for index in missing {
            let object = format!("index {} of queue table {table:?}", index.name);
            let guard = index.guard_names(schema, table);
            self.create(c, &object, &index.create_if_missing, &guard)
                .await?;
        }
        Ok(true)
    }

    /// The error for a send to `queue`, which does not exist, with the closest of `known`.
    fn unknown_queue(queue: &QueueName, known: &[String]) -> NimbusError {
        NimbusError::UnknownQueue {
            queue: queue.as_str().to_string(),
            closest: crate::names::closest(queue.as_str(), known.iter().map(String::as_str)),
        }
    }

    pub fn missing(&self, object: String, statement: &str) -> NimbusError {
        NimbusError::MissingSchema {
            backend: self.name,
            object: format!(
                "{object} in schema {:?} of {}",
                self.schema.as_str(),
                self.target
            ),
            statement: statement.to_string(),
        }
    }
}

/// What a write does about a destination queue that does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Creation {
    /// A send: the queue must exist (some endpoint made it), unless senders may create queues.
    Required,
    /// A publish to a subscriber, a delayed delivery, a replay: the queue is known to belong to
    /// someone; make it again (with auto-create) if it is gone.
    IfMissing,
}

/// The queue registry of the shared-table layout, which has no table per queue: an endpoint
/// records its input queue as a subscription to this pseudo-topic, with an idle period that
/// never lapses (a queue exists until it is dropped, whether its endpoint runs or not).
pub(crate) const QUEUE_REGISTRY_TOPIC: &str = "nimbus:queue";
/// About 50 years: the idle period of a registry row (SQL Server's DATEADD takes an int).
const NEVER_LAPSES_SECONDS: i64 = 50 * 365 * 24 * 3600;

/// A write of one message copy, planned: its statement, and what to do when it fails.
#[derive(Debug)]
pub(crate) struct PlannedInsert {
    pub statement: Statement,
    /// The queue whose existence the write assumed: forgotten when it fails, so that the next
    /// write checks again (a table dropped under a running process).
    pub forget_on_failure: Option<Arc<QueueEntry>>,
    /// The database's name and what the write does, for errors.
    pub database: &'static str,
    pub operation: String,
}

impl PlannedInsert {
    /// Runs the write on `c`; on failure the queue it assumed is checked again next time.
    pub async fn run<D: Driver>(&self, c: &mut Held<D>) -> Result<()> {
        c.run(&self.statement).await.map_err(|e| self.failed(e))?;
        Ok(())
    }

    /// The error for a failed run; the queue it assumed is checked again next time.
    pub fn failed(&self, e: crate::driver::DriverError) -> NimbusError {
        if let Some(entry) = &self.forget_on_failure {
            entry.forget_exists();
        }
        NimbusError::database(self.database, self.operation.clone(), e)
    }
}

/// How messages are stored: everything that differs between the layouts.
#[async_trait]
pub(crate) trait Storage<D: Driver>: Send + Sync {
    /// Creates what the layout needs beside the common tables, and the tables of `queues`; returns
    /// the queues it made sure exist.
    async fn create(&self, c: &mut Held<D>, queues: &[QueueName]) -> Result<Vec<Arc<QueueEntry>>>;

    /// Checks that what the layout needs exists; the error quotes the statement that creates it.
    async fn verify(&self, c: &mut Held<D>, queues: &[QueueName]) -> Result<()>;

    /// The table whose indexes serve `queue`, and the indexes the seed requires on it.
    fn indexes(&self, queue: &QueueName) -> (String, Vec<IndexSql>);

    /// Whether one message for `queue` can be written by one autocommitted statement, with no
    /// transaction around it (a queue known to exist, or a row of the shared table).
    fn writes_in_one_statement(&self, queue: &QueueName, message: &OutgoingMessage) -> bool;

    /// The row id of the copy of `message` for one of its queues.
    fn row_id(&self, message: &OutgoingMessage) -> Uuid;

    /// The statement that writes the copy of `message` for `queue` (whose catalog entry is
    /// `entry`) under `row_id`.
    fn planned(
        &self,
        entry: Arc<QueueEntry>,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> PlannedInsert;

    /// Makes sure `queue` exists (as `creation` allows, through `c`), and returns the statement
    /// that writes the copy of `message` for it under `row_id`, to run on `c` or on a
    /// connection the framework does not hold (the application's own transaction). Pushes onto
    /// `created` the queues that will exist once `c`'s transaction commits.
    async fn plan_insert(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
        creation: Creation,
        created: &mut Vec<Arc<QueueEntry>>,
    ) -> Result<PlannedInsert> {
        let entry = ensure_exists(self, self.context(), c, queue, creation, created).await?;
        let needed = [
            (message.group.is_some(), QueueFeature::Groups),
            (message.priority.is_some(), QueueFeature::Priorities),
        ];
        for (_, feature) in needed.into_iter().filter(|(needs, _)| *needs) {
            if feature.kept(&entry) != Some(true) {
                self.check_kept(c, queue, &entry, feature).await?;
            }
        }
        Ok(self.planned(entry, queue, message, row_id))
    }

    /// The statement that writes the copy of `message` for `queue` under `row_id`, planned
    /// without a connection: `None` unless [`Storage::writes_in_one_statement`] says one
    /// autocommitted statement writes it.
    fn plan_known_insert(
        &self,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> Option<PlannedInsert> {
        self.writes_in_one_statement(queue, message)
            .then(|| self.planned(self.context().catalog.queue(queue), queue, message, row_id))
    }

    /// Writes the copy of `message` for `queue`, under `row_id`, inside the caller's
    /// transaction (or alone, when [`Storage::writes_in_one_statement`] said so). Pushes onto
    /// `created` the queues that will exist once the transaction commits.
    async fn insert(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
        creation: Creation,
        created: &mut Vec<Arc<QueueEntry>>,
    ) -> Result<()> {
        self.plan_insert(c, queue, message, row_id, creation, created)
            .await?
            .run(c)
            .await
    }

    /// Records that `queue` exists, where the layout has no table to say so.
    async fn register(&self, c: &mut Held<D>, queue: &QueueName) -> Result<()>;

    /// Makes `queue`, found missing by a write that may make it: its table (when the settings
    /// allow creating tables) or its record.
    async fn make(&self, c: &mut Held<D>, queue: &QueueName, entry: &QueueEntry) -> Result<()>;

    /// Makes sure `queue`'s table (`entry`) can take a message that needs `feature` (a group,
    /// a priority): it has the feature's column.
    async fn check_kept(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        entry: &QueueEntry,
        feature: QueueFeature,
    ) -> Result<()>;

    /// Finds whether `queue`'s table keeps priorities, and makes sure it does as `wanted` says.
    /// Returns whether it keeps them; its receives follow from then on.
    async fn priorities(&self, c: &mut Held<D>, queue: &QueueName, wanted: Wanted) -> Result<bool>;

    /// Finds whether `queue`'s table keeps ordered groups, and makes sure it does as `wanted`
    /// says. Returns whether it keeps them; its receives follow from then on.
    async fn ordered_groups(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        wanted: Wanted,
    ) -> Result<bool>;

    /// The names of the queues that exist.
    async fn known_queues(&self, c: &mut Held<D>) -> Result<Vec<String>>;

    /// Where `queue`'s messages are and the statements that reach them: what the layouts
    /// differ in for the operations below, which are written once on top of it.
    fn statements<'a>(&'a self, queue: &'a QueueName) -> QueueStatements<'a>;

    /// The context the statements run in (names and errors).
    fn context(&self) -> &Context;

    /// Opens a transaction and takes the oldest visible message of `queue` no other transaction
    /// holds, with its headers and body as the sender wrote them.
    async fn receive(&self, c: &mut Held<D>, queue: &QueueName) -> Result<Option<MessageRow>> {
        let at = self.statements(queue);
        let what = || format!("receiving from queue {queue:?}");
        if let Some((bounded, look)) = at.bounded_receive() {
            // One message, by the bounded batch statement, its plan made by index.
            let params = at.params(&[Param::BigInt(Some(1)), heads_param(&look)]);
            let rows = c
                .begin_and_receive_many(bounded, &params, None)
                .await
                .map_err(self.context().db(what))?;
            at.note_taken(rows.len(), 1);
            if let Some(look) = look {
                look.took(rows.len());
            }
            return Ok(rows.into_iter().next().map(|row| at.as_sent(row)));
        }
        let row = c
            .begin_and_receive(at.receive(), &at.params(&[]))
            .await
            .map_err(self.context().db(what))?;
        at.note_taken(usize::from(row.is_some()), 1);
        Ok(row.map(|row| at.as_sent(row)))
    }

    /// Whether a receive from `queue` may ride on the previous message's commit
    /// ([`commit_and_receive`](Self::commit_and_receive)): not while it takes the bounded
    /// statement of ordered groups, whose plan is made by index
    /// ([`Held::begin_and_receive_many`]), which the receive alone does.
    fn receives_after_commit(&self, queue: &QueueName) -> bool {
        self.statements(queue).bounded_receive().is_none()
    }

    /// Commits `c`'s open transaction and takes the oldest visible message of `queue` in a new
    /// one, as [`receive`](Self::receive) does, in one round trip where the driver pipelines
    /// them ([`Held::pipelines_commit`]). `Err`: the commit failed (the connection is gone).
    /// `Ok`: committed, with the receive's result.
    async fn commit_and_receive(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
    ) -> Result<Result<Option<MessageRow>>> {
        let (at, cx) = (self.statements(queue), self.context());
        let received = c
            .commit_and_receive(at.receive(), &at.params(&[]))
            .await
            .map_err(cx.db("committing a handled message"))?;
        if let Ok(row) = &received {
            at.note_taken(usize::from(row.is_some()), 1);
        }
        Ok(received
            .map(|row| row.map(|row| at.as_sent(row)))
            .map_err(cx.db(|| format!("receiving from queue {queue:?}"))))
    }

    /// Opens a transaction and takes up to `limit` of the oldest visible messages of `queue`
    /// no other transaction holds (a batched receive); its statements wait at most `lock_wait`
    /// for a row lock where the driver can bound that.
    async fn receive_batch(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        limit: i64,
        lock_wait: Option<std::time::Duration>,
    ) -> Result<Vec<MessageRow>> {
        let (at, cx) = (self.statements(queue), self.context());
        let (sql, look, params) = match at.bounded_receive() {
            Some((bounded, look)) => {
                let params = at.params(&[Param::BigInt(Some(limit)), heads_param(&look)]);
                (bounded, look, params)
            }
            None => {
                let sql = at.receive_batch().ok_or_else(|| batch_unsupported(cx))?;
                (sql, None, at.params(&[Param::BigInt(Some(limit))]))
            }
        };
        let rows = c
            .begin_and_receive_many(sql, &params, lock_wait)
            .await
            .map_err(cx.db(|| format!("receiving a batch from queue {queue:?}")))?;
        at.note_taken(rows.len(), usize::try_from(limit).unwrap_or(usize::MAX));
        if let Some(look) = look {
            look.took(rows.len());
        }
        Ok(rows.into_iter().map(|row| at.as_sent(row)).collect())
    }

    /// Estimates how many messages wait in `queue`.
    async fn peek(&self, c: &mut Held<D>, queue: &QueueName) -> Result<i64> {
        let at = self.statements(queue);
        c.count(at.peek(), &at.params(&[]))
            .await
            .map_err(self.context().db(|| format!("peeking at queue {queue:?}")))
    }

    /// `queue`'s part of the statement that watches the process's idle queues (SQL Server),
    /// `None` where the database needs none.
    fn ready(&self, queue: &QueueName) -> Option<super::watcher::Watched> {
        self.statements(queue).ready()
    }

    /// Deletes at most `batch` expired messages of `queue`.
    async fn purge_expired(&self, c: &mut Held<D>, queue: &QueueName, batch: i64) -> Result<u64> {
        let at = self.statements(queue);
        c.execute(
            at.purge_expired(),
            &at.params(&[Param::BigInt(Some(batch))]),
        )
        .await
        .map_err(
            self.context()
                .db(|| format!("purging expired messages of {queue:?}")),
        )
    }

    /// The exact number of messages in `queue`.
    async fn count(&self, c: &mut Held<D>, queue: &QueueName) -> Result<i64> {
        let at = self.statements(queue);
        c.count(at.count(), &at.params(&[])).await.map_err(
            self.context()
                .db(|| format!("counting the messages of {queue:?}")),
        )
    }

    /// Whether `queue` has its storage.
    async fn exists(&self, c: &mut Held<D>, queue: &QueueName) -> Result<bool>;

    /// Removes `queue` and every message in it.
    async fn drop_queue(&self, c: &mut Held<D>, queue: &QueueName) -> Result<()>;

    /// Whether delayed messages wait outside their queue, to be moved when due
    /// ([`take_due`](Self::take_due)); where they wait in it (the shared table), nothing moves.
    fn moves_delayed(&self) -> bool;

    /// Takes up to `batch` due delayed messages out of their waiting place, inside the caller's
    /// transaction; empty where delayed messages wait in their queue.
    async fn take_due(&self, c: &mut Held<D>, batch: i64) -> Result<Vec<MessageRow>>;

    /// The statements on delayed messages where this layout keeps them until due.
    fn delayed_sql(&self) -> DelayedSql<'_> {
        let sql = &self.context().sql;
        if self.moves_delayed() {
            DelayedSql {
                cancel: &sql.delayed_cancel,
                reschedule: &sql.delayed_reschedule,
                list: &sql.delayed_list,
                headers_in_envelope: false,
            }
        } else {
            DelayedSql {
                cancel: &sql.messages_cancel_delayed,
                reschedule: &sql.messages_reschedule_delayed,
                list: &sql.messages_list_delayed,
                headers_in_envelope: true,
            }
        }
    }

    /// Deletes the delayed message `id` while it is pending: `true` when it was (it will never
    /// be delivered), `false` when it was delivered already or no pending delayed message has
    /// that id. A delivery holding its row is waited for, so the two never both happen.
    async fn cancel_delayed(&self, c: &mut Held<D>, id: Uuid) -> Result<bool> {
        c.cancel_delayed(self.delayed_sql().cancel, id)
            .await
            .map_err(
                self.context()
                    .db(|| format!("cancelling delayed message {id}")),
            )
    }

    /// Moves the due time of the delayed message `id` while it is pending; `false` when it was
    /// delivered already or no pending delayed message has that id.
    async fn reschedule_delayed(
        &self,
        c: &mut Held<D>,
        id: Uuid,
        due: super::delayed::Due,
    ) -> Result<bool> {
        let (delay_ms, at) = due.params();
        c.reschedule_delayed(self.delayed_sql().reschedule, id, delay_ms, at)
            .await
            .map_err(
                self.context()
                    .db(|| format!("rescheduling delayed message {id}")),
            )
    }

    /// Up to `limit` pending delayed messages, soonest due first.
    async fn delayed_messages(
        &self,
        c: &mut Held<D>,
        limit: i64,
    ) -> Result<Vec<super::delayed::DelayedMessage>> {
        let sql = self.delayed_sql();
        let rows = c
            .list_delayed(sql.list, limit)
            .await
            .map_err(self.context().db("listing delayed messages"))?;
        Ok(rows
            .into_iter()
            .map(|row| super::delayed::DelayedMessage::from_row(row, sql.headers_in_envelope))
            .collect())
    }

    /// Up to `limit` messages of `queue` in receive order, left where they are.
    async fn browse(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        limit: i64,
    ) -> Result<Vec<MessageRow>>;

    /// The table holding `queue`'s messages (schema-qualified and quoted) and the statement
    /// that reclaims its dead rows, where the database needs one.
    fn vacuum(&self, queue: &QueueName) -> Option<(String, String)>;

    /// Writes `row` into `queue` as it is (the queue must exist).
    async fn insert_raw(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        row: &QueueRow<'_>,
    ) -> Result<()>;
}

/// Whether `entry`'s table keeps both ordered groups and priorities, as this process found.
fn keeps_both(entry: &QueueEntry) -> bool {
    entry.keeps_groups() == Some(true) && entry.keeps_priorities() == Some(true)
}

/// A shared-table row with its headers and body taken out of the body's envelope.
fn unwrap_envelope(mut row: MessageRow) -> MessageRow {
    let (headers, body) = crate::shared_envelope::unwrap(&row.body);
    row.headers = headers;
    row.body = body;
    row
}

/// Where one queue's messages are and the statements that reach them: all that the layouts
/// differ in for receiving, peeking, counting and purging one queue.
pub(crate) enum QueueStatements<'a> {
    /// A table of its own (seed 000's or NServiceBus's shape): its statements name the table and
    /// take no queue name; headers and body are columns of their own.
    Table(Arc<QueueEntry>),
    /// `NimbusMessages` (seed 003): every statement takes the queue's name as its first
    /// parameter; headers travel inside the body.
    Shared {
        /// The schema's statements.
        sql: &'a SchemaSql,
        /// The queue's name, the `Destination` of its rows.
        queue: &'a str,
        /// What this process knows of the queue: whether the table keeps groups or priorities.
        entry: Arc<QueueEntry>,
    },
}

impl QueueStatements<'_> {
    /// The parameters of one of the statements: the queue's name first where the statements
    /// take it, then `rest`.
    pub fn params<'p>(&'p self, rest: &[Param<'p>]) -> Vec<Param<'p>> {
        let destination = match self {
            QueueStatements::Table(_) => None,
            QueueStatements::Shared { queue, .. } => Some(Param::Text(Some(*queue))),
        };
        destination
            .into_iter()
            .chain(rest.iter().cloned())
            .collect()
    }

    fn receive(&self) -> &str {
        match self {
            QueueStatements::Table(entry) if keeps_both(entry) => {
                &entry.sql.groups.prioritized.receive
            }
            QueueStatements::Table(entry) if entry.keeps_groups() == Some(true) => {
                &entry.sql.groups.receive
            }
            QueueStatements::Table(entry) if entry.keeps_priorities() == Some(true) => {
                &entry.sql.priorities.receive
            }
            QueueStatements::Table(entry) => &entry.sql.receive,
            QueueStatements::Shared { sql, entry, .. } if keeps_both(entry) => {
                &sql.shared_groups.prioritized.receive
            }
            QueueStatements::Shared { sql, entry, .. } if entry.keeps_groups() == Some(true) => {
                &sql.shared_groups.receive
            }
            QueueStatements::Shared { sql, entry, .. }
                if entry.keeps_priorities() == Some(true) =>
            {
                &sql.shared_priorities.receive
            }
            QueueStatements::Shared { sql, .. } => &sql.messages_receive,
        }
    }

    /// The queue's entry when it keeps ordered groups without priorities: the queues whose
    /// receives switch to the bounded statement while their first messages are all held.
    fn grouped_entry(&self) -> Option<&QueueEntry> {
        let entry = match self {
            QueueStatements::Table(entry) | QueueStatements::Shared { entry, .. } => entry,
        };
        (entry.keeps_groups() == Some(true) && entry.keeps_priorities() != Some(true))
            .then_some(&**entry)
    }

    /// The bounded receive of ordered groups (`*_receive_batch_grouped_bounded.sql`), for a
    /// while after one of the queue's receives came back short
    /// ([`QueueEntry::heads_held`]): its first messages are then likely all held by other
    /// receives, and the usual statement, reading on until it has what it asked for, would read
    /// the whole queue. `None` on a database without one (SQLite, SQL Server): the usual
    /// statement serves, and may ride on a commit. With it, this receive's turn to look at the
    /// heads of the groups when the front gives nothing ([`QueueEntry::heads_look`]): `None`
    /// looks at the front alone.
    fn bounded_receive(&self) -> Option<(&str, Option<HeadsLook<'_>>)> {
        let entry = self.grouped_entry().filter(|entry| entry.heads_held())?;
        let sql = match self {
            QueueStatements::Table(entry) => entry.sql.groups.receive_batch_bounded.as_deref(),
            QueueStatements::Shared { sql, .. } => {
                sql.shared_groups.receive_batch_bounded.as_deref()
            }
        }?;
        Some((sql, entry.heads_look()))
    }

    /// Records a receive of ordered groups that took fewer messages than it `asked` for, which
    /// chooses the next receives' statement ([`bounded_receive`](Self::bounded_receive)).
    fn note_taken(&self, taken: usize, asked: usize) {
        if let Some(entry) = self.grouped_entry().filter(|_| taken < asked) {
            entry.note_short_receive();
        }
    }

    fn receive_batch(&self) -> Option<&str> {
        match self {
            QueueStatements::Table(entry) if keeps_both(entry) => {
                entry.sql.groups.prioritized.receive_batch.as_deref()
            }
            QueueStatements::Table(entry) if entry.keeps_groups() == Some(true) => {
                entry.sql.groups.receive_batch.as_deref()
            }
            QueueStatements::Table(entry) if entry.keeps_priorities() == Some(true) => {
                entry.sql.priorities.receive_batch.as_deref()
            }
            QueueStatements::Table(entry) => entry.sql.receive_batch.as_deref(),
            QueueStatements::Shared { sql, entry, .. } if keeps_both(entry) => {
                sql.shared_groups.prioritized.receive_batch.as_deref()
            }
            QueueStatements::Shared { sql, entry, .. } if entry.keeps_groups() == Some(true) => {
                sql.shared_groups.receive_batch.as_deref()
            }
            QueueStatements::Shared { sql, entry, .. }
                if entry.keeps_priorities() == Some(true) =>
            {
                sql.shared_priorities.receive_batch.as_deref()
            }
            QueueStatements::Shared { sql, .. } => sql.messages_receive_batch.as_deref(),
        }
    }

    /// The statement that counts the queue's messages per priority (takes [`Self::params`]).
    pub fn priority_list(&self) -> &str {
        match self {
            QueueStatements::Table(entry) => &entry.sql.priorities.list,
            QueueStatements::Shared { sql, .. } => &sql.shared_priorities.list,
        }
    }

    /// The statement that lists the queue's groups (takes [`Self::params`] with the limit).
    pub fn group_list(&self) -> &str {
        match self {
            QueueStatements::Table(entry) => &entry.sql.groups.list,
            QueueStatements::Shared { sql, .. } => &sql.shared_groups.list,
        }
    }

    fn peek(&self) -> &str {
        match self {
            QueueStatements::Table(entry) => &entry.sql.peek,
            QueueStatements::Shared { sql, .. } => &sql.messages_peek,
        }
    }

    fn purge_expired(&self) -> &str {
        match self {
            QueueStatements::Table(entry) => &entry.sql.purge_expired,
            QueueStatements::Shared { sql, .. } => &sql.messages_purge_expired,
        }
    }

    fn count(&self) -> &str {
        match self {
            QueueStatements::Table(entry) => &entry.sql.count,
            QueueStatements::Shared { sql, .. } => &sql.messages_count,
        }
    }

    /// The queue's part of the watch of idle queues, where the database has one.
    fn ready(&self) -> Option<super::watcher::Watched> {
        let (part, destination) = match self {
            QueueStatements::Table(entry) => (entry.sql.ready.clone()?, String::new()),
            QueueStatements::Shared { sql, queue, .. } => {
                (sql.messages_ready.clone()?, (*queue).to_string())
            }
        };
        Some(super::watcher::Watched { part, destination })
    }

    /// A received row with its headers and body as the sender wrote them.
    fn as_sent(&self, row: MessageRow) -> MessageRow {
        match self {
            QueueStatements::Table(_) => row,
            QueueStatements::Shared { .. } => unwrap_envelope(row),
        }
    }
}

/// A queue table's optional columns, as [`Context::keep_feature`] makes sure of them.
pub(crate) struct OptionalColumns<'a> {
    /// What they are, for the log and errors ("the Priority column").
    pub what: &'static str,
    /// The table they belong to: the queue's, or NimbusMessages in the shared-table layout.
    pub table: &'a str,
    /// The script that adds them (schema and table names as values on SQL Server).
    pub add: &'a str,
    /// Their indexes.
    pub indexes: &'a [&'a IndexSql],
}

/// What [`Storage::ordered_groups`] and [`Storage::priorities`] make sure of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Only find out whether the table keeps groups.
    Detect,
    /// The table must keep groups, with their indexes: an error names what is missing.
    Require,
    /// Give the table the group columns and indexes it lacks.
    Create,
}

/// What a queue table may keep beside the seed's columns, which a send that needs it checks
/// for: ordered groups, priorities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueFeature {
    /// `GroupKey`, `GroupPosition`, `NotBefore` ([`crate::BusBuilder::ordered_groups`]).
    Groups,
    /// `Priority` ([`crate::BusBuilder::priorities`]).
    Priorities,
}

impl QueueFeature {
    /// The column that says a table keeps it.
    fn column(self) -> &'static str {
        match self {
            QueueFeature::Groups => "GroupKey",
            QueueFeature::Priorities => "Priority",
        }
    }

    /// Its name in messages, and the builder call and send option that ask for it.
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            QueueFeature::Groups => ("ordered groups", ".ordered_groups()", "a group"),
            QueueFeature::Priorities => ("priorities", ".priorities()", "a priority"),
        }
    }

    /// Whether `entry`'s table keeps it, as this process last found.
    fn kept(self, entry: &QueueEntry) -> Option<bool> {
        match self {
            QueueFeature::Groups => entry.keeps_groups(),
            QueueFeature::Priorities => entry.keeps_priorities(),
        }
    }

    /// Records whether `entry`'s table keeps it.
    fn record(self, entry: &QueueEntry, kept: bool) {
        match self {
            QueueFeature::Groups => entry.set_keeps_groups(kept),
            QueueFeature::Priorities => entry.set_keeps_priorities(kept),
        }
    }

    /// The error of a message that needs it for `queue`, whose table lacks its column.
    fn not_kept(self, queue: &QueueName) -> NimbusError {
        let (name, call, option) = self.words();
        NimbusError::config(
            format!(
                "queue {queue} does not keep {name}: its table has no {} column",
                self.column()
            ),
            format!(
                "call {call} on the builder of the endpoint that receives from that queue and \
                 start it once (it adds the columns), or send without {option}"
            ),
        )
    }

    /// The error of a message that needs it for `queue` in a layout that cannot keep it yet
    /// (NServiceBus's PostgreSQL table shape).
    fn unsupported(self, cx: &Context, queue: &QueueName) -> NimbusError {
        let (name, _, option) = self.words();
        NimbusError::config(
            format!(
                "queue {queue}: {name} are not supported yet in the {:?} layout",
                cx.layout
            ),
            format!(
                "keep queues that receive messages with {option} in the table-per-queue or \
                 shared-table layout, or send without {option}"
            ),
        )
    }
}

/// The error of a batched receive where the database has no batch statement yet.
/// The bounded receive's last parameter: whether it looks at the heads of the groups (1) or at
/// the front alone (0).
fn heads_param(look: &Option<HeadsLook<'_>>) -> Param<'static> {
    Param::Int(i32::from(look.is_some()))
}

fn batch_unsupported(cx: &Context) -> NimbusError {
    NimbusError::config(
        format!("batched receives are not supported yet on {}", cx.name),
        "leave receive_batch at 1 on this database",
    )
}

/// Makes sure `queue`'s table (`entry`) has the column of `feature`, as a send that needs it
/// checks; remembered once found. A table found without it is not remembered so: the endpoint
/// that receives from it may add it at its next start.
async fn check_feature_kept<D: Driver>(
    cx: &Context,
    c: &mut Held<D>,
    queue: &QueueName,
    entry: &QueueEntry,
    feature: QueueFeature,
) -> Result<()> {
    if cx.layout == super::StorageLayout::NServiceBusPostgreSql {
        return Err(feature.unsupported(cx, queue));
    }
    if !cx.has_feature(c, queue, feature).await? {
        return Err(feature.not_kept(queue));
    }
    feature.record(entry, true);
    Ok(())
}

/// Chooses the strategy for `layout`.
pub(crate) fn for_layout<D: Driver>(
    layout: super::StorageLayout,
    context: Arc<Context>,
) -> Box<dyn Storage<D>> {
    match layout {
        super::StorageLayout::TablePerQueue | super::StorageLayout::NServiceBusPostgreSql => {
            Box::new(TablePerQueue { context })
        }
        super::StorageLayout::SharedTable => Box::new(SharedTable { context }),
    }
}

/// Makes sure a write can go to `queue`: a queue this process has not seen yet is looked up
/// among the queues that exist (compared as the database compares names: exactly, or without
/// regard to case on SQL Server); a missing one fails a send with [`NimbusError::UnknownQueue`] unless
/// sends may make queues, and is otherwise made. A queue found is known to exist from then on; one
/// made is pushed onto `created`, to be known to exist once the transaction commits (a rollback
/// takes the table with it).
async fn ensure_exists<D: Driver, S: Storage<D> + ?Sized>(
    storage: &S,
    cx: &Context,
    c: &mut Held<D>,
    queue: &QueueName,
    creation: Creation,
    created: &mut Vec<Arc<QueueEntry>>,
) -> Result<Arc<QueueEntry>> {
    let entry = cx.catalog.queue(queue);
    if (queue.schema().is_some() || queue.catalog().is_some()) && !entry.is_known_to_exist() {
        check_elsewhere(cx, c, queue, &entry).await?;
        return Ok(entry);
    }
    let made_here = created.iter().any(|e| Arc::ptr_eq(e, &entry));
    if !entry.is_known_to_exist() && !made_here {
        let known = storage.known_queues(c).await?;
        if known.iter().any(|k| cx.same_name(k, queue.as_str())) {
            // It exists whatever this transaction does: the next writes need not look again.
            entry.mark_exists();
        } else {
            if let Some(misshapen) = cx.misshapen(c, queue).await? {
                return Err(misshapen);
            }
            if creation == Creation::Required && !cx.create_on_send {
                return Err(Context::unknown_queue(queue, &known));
            }
            storage.make(c, queue, &entry).await?;
            // Made in this transaction: known to exist once it commits.
            created.push(entry.clone());
        }
    }
    Ok(entry)
}

/// Makes sure a write can go to `queue` of another schema: its table must exist (sends never
/// create tables outside the bus's own schema; the endpoint that receives from it does). In
/// another database (SQL Server) the catalog is not read: the insert itself says when the table
/// is missing.
async fn check_elsewhere<D: Driver>(
    cx: &Context,
    c: &mut Held<D>,
    queue: &QueueName,
    entry: &QueueEntry,
) -> Result<()> {
    if queue.catalog().is_some() {
        return Ok(());
    }
    let schema = queue.schema().unwrap_or(&cx.schema);
    let exists = c
        .exists(
            &cx.sql.catalog_table_exists,
            &[
                Param::Text(Some(schema.as_str())),
                Param::Text(Some(queue.as_str())),
            ],
        )
        .await
        .map_err(cx.db(|| format!("looking for queue {queue}")))?;
    if !exists {
        return Err(NimbusError::config(
            format!(
                "queue {queue} does not exist: no table {:?} in schema {:?} of {}",
                queue.as_str(),
                schema.as_str(),
                cx.target
            ),
            "check the address, and start the endpoint that receives from that queue first \
             (sends never create queues in other schemas)",
        ));
    }
    entry.mark_exists();
    Ok(())
}

/// A layout's statements on delayed messages (see [`Storage::delayed_sql`]).
pub(crate) struct DelayedSql<'a> {
    pub cancel: &'a str,
    pub reschedule: &'a str,
    pub list: &'a str,
    /// Whether a listed row's headers are inside its body's envelope (the shared table).
    pub headers_in_envelope: bool,
}

/// Where the table-per-queue layouts keep delayed messages until they are due.
const DELAYED_TABLE: &str = "NimbusDelayedMessages";

/// The tables of the common schema and of the layouts, which are not queues.
const NIMBUS_TABLES: [&str; 4] = [
    "NimbusSubscriptions",
    "NimbusDeadLetters",
    DELAYED_TABLE,
    MESSAGES_TABLE,
];

/// A table per queue, in seed 000's shape or NServiceBus's PostgreSQL shape (the queue's
/// statements say which); delayed messages wait in `NimbusDelayedMessages`.
pub(crate) struct TablePerQueue {
    context: Arc<Context>,
}

#[async_trait]
impl<D: Driver> Storage<D> for TablePerQueue {
    fn moves_delayed(&self) -> bool {
        true
    }

    /// A row of the queue's table, or of the delayed messages.
    fn planned(
        &self,
        entry: Arc<QueueEntry>,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> PlannedInsert {
        let cx = &self.context;
        let row = QueueRow {
            id: row_id,
            correlation_id: message.correlation_id.as_deref(),
            reply_to_address: message.reply_to_address.as_deref(),
            time_to_be_received_ms: message.time_to_be_received_ms,
            headers: &message.headers_json,
            body: &message.body,
            expires_at: message.expires_at,
        };
        // A message of a group goes to its queue at once; so does a retry of one (it has a
        // place), which waits there for its delay so that the messages after it in its group
        // wait for it. A first send with a delay waits among the delayed messages and joins the
        // end of its group when due.
        let into_group = message
            .group
            .as_ref()
            .filter(|g| message.delivery == Delivery::Immediate || g.position.is_some());
        if let Some(group) = into_group {
            let not_before_ms = match message.delivery {
                Delivery::Immediate => None,
                Delivery::AfterMs(ms) => Some(ms),
                Delivery::At(at) => Some(
                    (at - chrono::Utc::now().naive_utc())
                        .num_milliseconds()
                        .max(0),
                ),
            };
            // At its priority where it has one (the table keeps both, as the send checked).
            let insert = match message.priority {
                Some(_) => &entry.sql.groups.prioritized.insert,
                None => &entry.sql.groups.insert,
            };
            return PlannedInsert {
                statement: grouped_row_statement(
                    insert,
                    &row,
                    &group.key,
                    group.position,
                    not_before_ms,
                    message.priority,
                ),
                forget_on_failure: Some(entry),
                database: cx.name,
                operation: format!("sending a message of group {:?} to {queue:?}", group.key),
            };
        }
        if let (Some(priority), Delivery::Immediate) = (message.priority, message.delivery) {
            return PlannedInsert {
                statement: priority_row_statement(&entry.sql.priorities.insert, &row, priority),
                forget_on_failure: Some(entry),
                database: cx.name,
                operation: format!("sending a message at priority {priority} to {queue:?}"),
            };
        }
        // A delayed message waits among the delayed messages with its priority in its
        // headers, and is written at that priority when it is due.
        if message.delivery != Delivery::Immediate {
            let (delay_ms, due_at) = message.delivery.delay_and_due();
            // The address, so that the mover finds a queue of another schema again.
            let destination = queue.to_string();
            let statement = delayed_row_statement(
                &cx.sql.delayed_insert,
                &DelayedRow {
                    message: row,
                    destination: &destination,
                    delay_ms,
                    due_at,
                },
            );
            return PlannedInsert {
                statement,
                forget_on_failure: None,
                database: cx.name,
                operation: format!("sending a delayed message to {queue:?}"),
            };
        }
        PlannedInsert {
            statement: queue_row_statement(&entry.sql.insert, entry.sql.columns, &row),
            forget_on_failure: Some(entry),
            database: cx.name,
            operation: format!("sending to queue {queue:?}"),
        }
    }

    fn statements<'a>(&'a self, queue: &'a QueueName) -> QueueStatements<'a> {
        QueueStatements::Table(self.context.catalog.queue(queue))
    }

    fn context(&self) -> &Context {
        &self.context
    }

    async fn create(&self, c: &mut Held<D>, queues: &[QueueName]) -> Result<Vec<Arc<QueueEntry>>> {
        let cx = &self.context;
        let schema = cx.schema.as_str();
        cx.create(
            c,
            "NimbusDelayedMessages",
            &cx.sql.delayed_messages,
            &[schema],
        )
        .await?;
        // Tables made before the index existed gain it here, at start.
        let index = &cx.sql.delayed_messages_index_id;
        for index in cx.missing_indexes(c, DELAYED_TABLE, &[index]).await? {
            cx.create(
                c,
                &format!("index {}", index.name),
                &index.create_if_missing,
                &index.guard_names(schema, DELAYED_TABLE),
            )
            .await?;
        }
        let mut entries = Vec::with_capacity(queues.len());
        for queue in queues {
            let entry = cx.catalog.queue(queue);
            cx.create_queue(c, queue, &entry).await?;
            entries.push(entry);
        }
        Ok(entries)
    }

    async fn verify(&self, c: &mut Held<D>, queues: &[QueueName]) -> Result<()> {
        let cx = &self.context;
        if !cx.table_exists(c, DELAYED_TABLE).await? {
            let statement = format!(
                "{}\n{}",
                cx.sql.delayed_messages, cx.sql.delayed_messages_index_id.create
            );
            return Err(cx.missing(format!("table {DELAYED_TABLE}"), &statement));
        }
        for queue in queues {
            let entry = cx.catalog.queue(queue);
            if !cx.table_exists(c, queue.as_str()).await? {
                let statement = std::iter::once(entry.sql.create_table.as_str())
                    .chain(entry.sql.indexes().into_iter().map(|i| i.create.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(cx.missing(format!("queue table {:?}", queue.as_str()), &statement));
            }
            entry.mark_exists();
        }
        Ok(())
    }

    fn indexes(&self, queue: &QueueName) -> (String, Vec<IndexSql>) {
        let entry = self.context.catalog.queue(queue);
        let mut indexes: Vec<IndexSql> = entry.sql.indexes().into_iter().cloned().collect();
        if entry.keeps_groups() == Some(true) {
            let groups = &entry.sql.groups;
            indexes.extend([
                groups.index_group.clone(),
                groups.index_group_position.clone(),
            ]);
        }
        if entry.keeps_priorities() == Some(true) {
            indexes.push(entry.sql.priorities.index.clone());
        }
        (queue.as_str().to_string(), indexes)
    }

    fn row_id(&self, message: &OutgoingMessage) -> Uuid {
        message.id
    }

    fn writes_in_one_statement(&self, queue: &QueueName, message: &OutgoingMessage) -> bool {
        let entry = self.context.catalog.queue(queue);
        match &message.group {
            // A grouped row goes to its queue (at once, or a retry that waits there), once the
            // table is known to keep groups.
            Some(g) => {
                (message.delivery == Delivery::Immediate || g.position.is_some())
                    && entry.is_known_to_exist()
                    && entry.keeps_groups() == Some(true)
            }
            None => {
                message.delivery == Delivery::Immediate
                    && entry.is_known_to_exist()
                    && (message.priority.is_none() || entry.keeps_priorities() == Some(true))
            }
        }
    }

    async fn check_kept(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        entry: &QueueEntry,
        feature: QueueFeature,
    ) -> Result<()> {
        check_feature_kept(&self.context, c, queue, entry, feature).await
    }

    async fn priorities(&self, c: &mut Held<D>, queue: &QueueName, wanted: Wanted) -> Result<bool> {
        let cx = &self.context;
        if cx.layout == super::StorageLayout::NServiceBusPostgreSql && wanted != Wanted::Detect {
            return Err(QueueFeature::Priorities.unsupported(cx, queue));
        }
        let entry = cx.catalog.queue(queue);
        let sql = &entry.sql.priorities;
        let columns = OptionalColumns {
            what: "the Priority column",
            table: queue.as_str(),
            add: &sql.column,
            indexes: &[&sql.index],
        };
        cx.keep_feature(c, queue, QueueFeature::Priorities, wanted, columns)
            .await
    }

    async fn ordered_groups(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        wanted: Wanted,
    ) -> Result<bool> {
        let cx = &self.context;
        if cx.layout == super::StorageLayout::NServiceBusPostgreSql && wanted != Wanted::Detect {
            return Err(QueueFeature::Groups.unsupported(cx, queue));
        }
        let entry = cx.catalog.queue(queue);
        let sql = &entry.sql.groups;
        let columns = OptionalColumns {
            what: "the ordered-group columns (GroupKey, GroupPosition, NotBefore)",
            table: queue.as_str(),
            add: &sql.columns,
            indexes: &[&sql.index_group, &sql.index_group_position],
        };
        cx.keep_feature(c, queue, QueueFeature::Groups, wanted, columns)
            .await
    }

    async fn register(&self, _c: &mut Held<D>, _queue: &QueueName) -> Result<()> {
        // The queue's table is its record.
        Ok(())
    }

    async fn make(&self, c: &mut Held<D>, queue: &QueueName, entry: &QueueEntry) -> Result<()> {
        let cx = &self.context;
        if cx.auto_create || cx.create_on_send {
            cx.lock_schema(c).await?;
            cx.create_queue(c, queue, entry).await?;
        }
        // Otherwise the insert fails as a permanent error naming the missing table.
        Ok(())
    }

    async fn known_queues(&self, c: &mut Held<D>) -> Result<Vec<String>> {
        let cx = &self.context;
        let tables = cx.queue_tables(c).await?;
        Ok(tables
            .into_iter()
            .filter(|t| !NIMBUS_TABLES.iter().any(|n| cx.same_name(n, t)))
            .collect())
    }

    async fn exists(&self, c: &mut Held<D>, queue: &QueueName) -> Result<bool> {
        self.context.table_exists(c, queue.as_str()).await
    }

    async fn drop_queue(&self, c: &mut Held<D>, queue: &QueueName) -> Result<()> {
        let cx = &self.context;
        let entry = cx.catalog.queue(queue);
        entry.forget_exists();
        c.run_script(&entry.sql.drop, &[])
            .await
            .map_err(cx.db(|| format!("dropping queue {queue:?}")))
    }

    async fn take_due(&self, c: &mut Held<D>, batch: i64) -> Result<Vec<MessageRow>> {
        let cx = &self.context;
        c.take_due_delayed(&cx.sql.delayed_take_due, batch)
            .await
            .map_err(cx.db("taking due delayed messages"))
    }

    async fn browse(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        limit: i64,
    ) -> Result<Vec<MessageRow>> {
        let cx = &self.context;
        c.browse_queue(&cx.catalog.queue(queue).sql.browse, limit)
            .await
            .map_err(cx.db(|| format!("browsing queue {queue:?}")))
    }

    fn vacuum(&self, queue: &QueueName) -> Option<(String, String)> {
        let entry = self.context.catalog.queue(queue);
        let vacuum = entry.sql.vacuum.clone()?;
        Some((entry.sql.table.clone(), vacuum))
    }

    async fn insert_raw(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        row: &QueueRow<'_>,
    ) -> Result<()> {
        let cx = &self.context;
        let sql = &cx.catalog.queue(queue).sql;
        c.run(&queue_row_statement(&sql.insert, sql.columns, row))
            .await
            .map_err(cx.db(|| format!("writing a raw row to {queue:?}")))?;
        Ok(())
    }
}

/// Seed 003: every queue is a `Destination` in `NimbusMessages`; headers travel inside the body
/// ([`crate::shared_envelope`]); delays are `VisibleAfter`.
pub(crate) struct SharedTable {
    context: Arc<Context>,
}

/// The shared table's name.
const MESSAGES_TABLE: &str = "NimbusMessages";

#[async_trait]
impl<D: Driver> Storage<D> for SharedTable {
    fn moves_delayed(&self) -> bool {
        // Delayed messages wait in NimbusMessages until their VisibleAfter.
        false
    }

    /// The statement that writes the copy of `message` for `queue` under `row_id`: a row of the
    /// shared table.
    fn planned(
        &self,
        entry: Arc<QueueEntry>,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> PlannedInsert {
        let cx = &self.context;
        let (delay_ms, visible_after) = message.delivery.delay_and_due();
        let body = crate::shared_envelope::wrap(&message.headers_json, &message.body);
        let row = SharedRow {
            message_id: row_id,
            destination: queue.as_str(),
            body: &body,
            time_to_be_received_ms: message.time_to_be_received_ms,
            expires_at: message.expires_at,
            delay_ms,
            visible_after,
        };
        // Every message waits in the shared table until its VisibleAfter: a grouped one takes
        // its place in its group when it becomes visible (a retry copy keeps the place of the
        // message it stands in for), a prioritized one keeps its priority meanwhile. A failed
        // write forgets what this process knew of the table, so the next one checks again.
        let (statement, forget_on_failure, operation) = match (&message.group, message.priority) {
            (Some(group), priority) => (
                shared_grouped_row_statement(
                    match priority {
                        Some(_) => &cx.sql.shared_groups.prioritized.insert,
                        None => &cx.sql.shared_groups.insert,
                    },
                    &row,
                    &group.key,
                    group.position,
                    priority,
                ),
                Some(entry),
                format!("sending a message of group {:?} to {queue:?}", group.key),
            ),
            (None, Some(priority)) => (
                shared_priority_row_statement(&cx.sql.shared_priorities.insert, &row, priority),
                Some(entry),
                format!("sending a message at priority {priority} to {queue:?}"),
            ),
            (None, None) => (
                shared_row_statement(&cx.sql.messages_insert, &row),
                None,
                format!("sending to queue {queue:?}"),
            ),
        };
        PlannedInsert {
            statement,
            forget_on_failure,
            database: cx.name,
            operation,
        }
    }

    fn statements<'a>(&'a self, queue: &'a QueueName) -> QueueStatements<'a> {
        QueueStatements::Shared {
            sql: &self.context.sql,
            queue: queue.as_str(),
            entry: self.context.catalog.queue(queue),
        }
    }

    fn context(&self) -> &Context {
        &self.context
    }

    async fn create(&self, c: &mut Held<D>, queues: &[QueueName]) -> Result<Vec<Arc<QueueEntry>>> {
        let cx = &self.context;
        let schema = cx.schema.as_str();
        let index = &cx.sql.shared_messages_index_dequeue;
        let missing = if cx.table_exists(c, MESSAGES_TABLE).await? {
            cx.missing_indexes(c, MESSAGES_TABLE, &[index]).await?
        } else {
            cx.create(c, MESSAGES_TABLE, &cx.sql.shared_messages, &[schema])
                .await?;
            vec![index]
        };
        for index in missing {
            cx.create(
                c,
                &format!("index {}", index.name),
                &index.create_if_missing,
                &index.guard_names(schema, MESSAGES_TABLE),
            )
            .await?;
        }
        Ok(queues.iter().map(|q| cx.catalog.queue(q)).collect())
    }

    async fn verify(&self, c: &mut Held<D>, _queues: &[QueueName]) -> Result<()> {
        let cx = &self.context;
        if !cx.table_exists(c, MESSAGES_TABLE).await? {
            let statement = format!(
                "{}\n{}",
                cx.sql.shared_messages, cx.sql.shared_messages_index_dequeue.create
            );
            return Err(cx.missing(format!("table {MESSAGES_TABLE}"), &statement));
        }
        Ok(())
    }

    fn indexes(&self, queue: &QueueName) -> (String, Vec<IndexSql>) {
        let (sql, entry) = (&self.context.sql, self.context.catalog.queue(queue));
        let mut indexes = vec![sql.shared_messages_index_dequeue.clone()];
        if entry.keeps_groups() == Some(true) {
            indexes.push(sql.shared_groups.index.clone());
        }
        if entry.keeps_priorities() == Some(true) {
            indexes.push(sql.shared_priorities.index.clone());
        }
        (MESSAGES_TABLE.to_string(), indexes)
    }

    fn row_id(&self, message: &OutgoingMessage) -> Uuid {
        // Each copy of a published message is its own row, and MessageId is the primary key.
        match message.destination {
            Destination::Topic(_) => self.context.message_ids.next(),
            Destination::Queue(_) => message.id,
        }
    }

    fn writes_in_one_statement(&self, queue: &QueueName, message: &OutgoingMessage) -> bool {
        // A message of a group or with a priority goes the way that checks whether the table
        // keeps them until this process has found it does: never written without.
        let entry = self.context.catalog.queue(queue);
        entry.is_known_to_exist()
            && (message.group.is_none() || entry.keeps_groups() == Some(true))
            && (message.priority.is_none() || entry.keeps_priorities() == Some(true))
    }

    async fn check_kept(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        entry: &QueueEntry,
        feature: QueueFeature,
    ) -> Result<()> {
        check_feature_kept(&self.context, c, queue, entry, feature).await
    }

    async fn priorities(&self, c: &mut Held<D>, queue: &QueueName, wanted: Wanted) -> Result<bool> {
        let cx = &self.context;
        let sql = &cx.sql.shared_priorities;
        let columns = OptionalColumns {
            what: "the Priority column",
            table: MESSAGES_TABLE,
            add: &sql.column,
            indexes: &[&sql.index],
        };
        cx.keep_feature(c, queue, QueueFeature::Priorities, wanted, columns)
            .await
    }

    async fn ordered_groups(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        wanted: Wanted,
    ) -> Result<bool> {
        let cx = &self.context;
        let sql = &cx.sql.shared_groups;
        let columns = OptionalColumns {
            what: "the ordered-group columns (GroupKey, GroupPlace)",
            table: MESSAGES_TABLE,
            add: &sql.columns,
            indexes: &[&sql.index],
        };
        cx.keep_feature(c, queue, QueueFeature::Groups, wanted, columns)
            .await
    }

    async fn register(&self, c: &mut Held<D>, queue: &QueueName) -> Result<()> {
        let cx = &self.context;
        c.subscribe(
            &cx.sql.subscription_upsert,
            QUEUE_REGISTRY_TOPIC,
            queue.as_str(),
            NEVER_LAPSES_SECONDS,
        )
        .await
        .map_err(cx.db(|| format!("recording queue {queue:?}")))
    }

    async fn make(&self, c: &mut Held<D>, queue: &QueueName, _entry: &QueueEntry) -> Result<()> {
        self.register(c, queue).await
    }

    async fn known_queues(&self, c: &mut Held<D>) -> Result<Vec<String>> {
        // Every queue some endpoint receives from has a row: the registry's, an instance's, or
        // a subscriber's.
        let cx = &self.context;
        let mut queues: Vec<String> = c
            .all_subscriptions(&cx.sql.subscription_all)
            .await
            .map_err(cx.db("listing the known queues"))?
            .into_iter()
            .map(|s| s.queue)
            .collect();
        queues.sort();
        queues.dedup();
        Ok(queues)
    }

    async fn exists(&self, _c: &mut Held<D>, _queue: &QueueName) -> Result<bool> {
        // Every destination lives in NimbusMessages: nothing to lose.
        Ok(true)
    }

    async fn drop_queue(&self, c: &mut Held<D>, queue: &QueueName) -> Result<()> {
        let cx = &self.context;
        // In batches the dialect allows: the table is every queue's, and a statement holding
        // too many row locks would lock all of it (SQL Server's lock escalation).
        let batch = c.driver_of().dialect().max_rows_per_statement;
        loop {
            let deleted = c
                .execute(
                    &cx.sql.messages_delete_destination,
                    &[
                        Param::Text(Some(queue.as_str())),
                        Param::BigInt(Some(batch)),
                    ],
                )
                .await
                .map_err(cx.db(|| format!("dropping queue {queue:?}")))?;
            if deleted < batch.unsigned_abs() {
                return Ok(());
            }
        }
    }

    async fn take_due(&self, _c: &mut Held<D>, _batch: i64) -> Result<Vec<MessageRow>> {
        // Delayed messages wait in NimbusMessages until their VisibleAfter: nothing to move.
        Ok(Vec::new())
    }

    async fn browse(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        limit: i64,
    ) -> Result<Vec<MessageRow>> {
        let cx = &self.context;
        let rows = c
            .browse_shared(&cx.sql.messages_browse, queue.as_str(), limit)
            .await
            .map_err(cx.db(|| format!("browsing queue {queue:?}")))?;
        Ok(rows
            .into_iter()
            .map(|mut row| {
                let (headers, body) = crate::shared_envelope::unwrap(&row.body);
                row.headers = headers;
                row.body = body;
                row
            })
            .collect())
    }

    fn vacuum(&self, _queue: &QueueName) -> Option<(String, String)> {
        let sql = &self.context.sql;
        let vacuum = sql.messages_vacuum.clone()?;
        Some((sql.messages_table.clone(), vacuum))
    }

    async fn insert_raw(
        &self,
        c: &mut Held<D>,
        queue: &QueueName,
        row: &QueueRow<'_>,
    ) -> Result<()> {
        let cx = &self.context;
        let body = crate::shared_envelope::wrap(row.headers, row.body);
        c.insert_shared_row(
            &cx.sql.messages_insert,
            &SharedRow {
                message_id: row.id,
                destination: queue.as_str(),
                body: &body,
                time_to_be_received_ms: row.time_to_be_received_ms,
                expires_at: row.expires_at,
                delay_ms: None,
                visible_after: None,
            },
        )
        .await
        .map_err(cx.db(|| format!("writing a raw row to {queue:?}")))?;
        Ok(())
    }
}
