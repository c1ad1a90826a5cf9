//! Operations for operators and tools, beside the ones endpoints use: exact depths, browsing
//! without receiving, listing dead letters and subscriptions, catalog checks, and raw rows for
//! tests of bad input. Written once over the driver, like the rest of the transport.

use async_trait::async_trait;

use super::{SqlTransport, Transport};
use crate::driver::statements::{
    DeadLetterPage, ListedDeadLetter, ListedSaga, MessageRow, QueueRow, SagaRow, SubscriptionRow,
};
use crate::driver::{Driver, Param};
use crate::error::{NimbusError, Result};
use crate::names::QueueName;

/// A message row written exactly as given, bypassing serialization: for operators moving rows by
/// hand and for tests of what a receiver does with bad input.
#[derive(Debug, Clone)]
pub(crate) struct RawRow {
    pub id: uuid::Uuid,
    pub headers: String,
    pub body: Vec<u8>,
    /// Milliseconds until it expires (negative: already expired); `None` never expires.
    pub time_to_be_received_ms: Option<i64>,
}

/// The operations of [`crate::admin::Database`].
#[async_trait]
pub(crate) trait Admin: Transport {
    /// The address of `queue` (in this database's schema) as another database's message names
    /// it to reach this one: with the schema, on databases that have schemas.
    fn address_of(&self, queue: &QueueName) -> String;
    /// The number of messages in `queue`, counted exactly.
    async fn count(&self, queue: &QueueName) -> Result<i64>;
    /// Up to `limit` messages of `queue` in receive order, left where they are.
    async fn browse(&self, queue: &QueueName, limit: i64) -> Result<Vec<MessageRow>>;
    /// One page of dead letters, oldest first, filtered in the statement.
    async fn dead_letters(&self, page: &DeadLetterPage<'_>) -> Result<Vec<ListedDeadLetter>>;
    /// Every subscription.
    async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>>;
    /// Deletes the subscription of `queue` to `topic`; `false` when there was none.
    async fn unsubscribe(&self, topic: &str, queue: &str) -> Result<bool>;
    /// The queues that exist (tables of the table-per-queue layout; recorded queues of the
    /// shared table).
    async fn queues(&self) -> Result<Vec<String>>;
    /// Deletes the dead letter `id`; `false` when there is none.
    async fn purge_dead_letter(&self, id: uuid::Uuid) -> Result<bool>;
    /// Whether `table` exists in the schema.
    async fn table_exists(&self, table: &str) -> Result<bool>;
    /// The index names of `table`.
    async fn index_names(&self, table: &str) -> Result<Vec<String>>;
    /// Runs SQL text (several statements allowed, no parameters).
    async fn run_sql(&self, sql: &str) -> Result<()>;
    /// Runs a query and returns its first column of its first row as an integer (0 for no
    /// row); an SQL error is an error, never 0.
    async fn scalar(&self, sql: &str, text_params: &[&str]) -> Result<i64>;
    /// Writes `row` into `queue` as it is (table-per-queue: the queue's table; shared table:
    /// `NimbusMessages`, headers wrapped into the body's envelope).
    async fn insert_raw(&self, queue: &QueueName, row: &RawRow) -> Result<()>;
    /// The dead letter `id`, left in place; `None` when there is none.
    async fn dead_letter(&self, id: uuid::Uuid) -> Result<Option<ListedDeadLetter>>;
    /// Up to `limit` saga instances of `saga_type` (or of every type), oldest first; none where
    /// `NimbusSagas` does not exist.
    async fn sagas(&self, saga_type: Option<&str>, limit: i64) -> Result<Vec<ListedSaga>>;
    /// The keys held in `NimbusDeduplication` within their window, per scope: (scope, keys,
    /// soonest end of a window); none where the table does not exist.
    async fn deduplication_scopes(
        &self,
    ) -> Result<Vec<(String, i64, Option<chrono::NaiveDateTime>)>>;
    /// Every limit's scope in `NimbusLimits`, with its slots and held messages; none where
    /// the table does not exist.
    async fn limits(&self) -> Result<Vec<crate::transport::LimitSummary>>;
    /// What `NimbusBodies` holds per queue; none where the table does not exist.
    async fn bodies(&self) -> Result<Vec<crate::transport::BodySummary>>;
    /// Forgets `key` of `scope` in `NimbusDeduplication`: `true` when it was held.
    async fn forget_key(&self, scope: &str, key: &str) -> Result<bool>;
    /// Claims `key` of `scope` in `NimbusDeduplication` for `window_ms`, in a transaction of its
    /// own (the table must exist): `true` when it was not held.
    async fn remember_key(&self, scope: &str, key: &str, window_ms: i64) -> Result<bool>;
    /// The keys of `scope` still within their window; none where `NimbusDeduplication` does not
    /// exist.
    async fn keys_of(&self, scope: &str) -> Result<Vec<String>>;
    /// The instance of `saga_type` for `correlation`; `None` when there is none.
    async fn saga(&self, saga_type: &str, correlation: &str) -> Result<Option<SagaRow>>;
    /// Ends the saga instance of `saga_type` for `correlation`: marks it completed (`delete`
    /// false; messages that come later are ignored) or deletes it (`delete` true; a later
    /// starting message starts it anew). `false` when there is none (or it completed already,
    /// for a completion).
    async fn end_saga(&self, saga_type: &str, correlation: &str, delete: bool) -> Result<bool>;
    /// Every registered instance; `None` where `NimbusInstances` does not exist.
    async fn instances(
        &self,
    ) -> Result<Option<Vec<crate::driver::instance_statements::ListedInstance>>>;
    /// The monitoring reports of the last `window`, oldest first; `None` where
    /// `NimbusMonitoring` does not exist.
    async fn monitoring_reports(
        &self,
        window: std::time::Duration,
    ) -> Result<Option<Vec<crate::driver::monitoring_statements::ListedReport>>>;
    /// Pauses `queue` (`by`: who, for operators); `true` when it was not paused before. The
    /// error names `nimbus schema apply` where `NimbusPausedQueues` is missing.
    async fn pause(&self, queue: &str, by: &str) -> Result<bool>;
    /// Resumes `queue`; `true` when it was paused.
    async fn resume(&self, queue: &str) -> Result<bool>;
    /// The quoted, schema-qualified name of `table`, for SQL text.
    fn qualified(&self, table: &str) -> String;
    /// The database's quoting of `identifier`.
    fn quote(&self, identifier: &str) -> String;
}

impl<D: Driver> SqlTransport<D> {
    /// An error naming the statement to run when `NimbusPausedQueues` is missing.
    async fn require_pause_table(&self) -> Result<()> {
        if self.pause_table_exists().await? {
            return Ok(());
        }
        let cx = &self.inner().cx;
        Err(NimbusError::MissingSchema {
            backend: cx.name,
            object: format!(
                "table NimbusPausedQueues in schema {:?} of {} (where paused queues are kept)",
                cx.schema.as_str(),
                cx.target
            ),
            statement: cx.sql.paused_queues.clone(),
        })
    }
}

#[async_trait]
impl<D: Driver> Admin for SqlTransport<D> {
    fn address_of(&self, queue: &QueueName) -> String {
        let cx = &self.inner().cx;
        cx.address_form.address_of(&cx.schema, queue)
    }

    async fn count(&self, queue: &QueueName) -> Result<i64> {
        let s = self.inner();
        let mut c = s.connection("counting messages").await?;
        let n = s.storage.count(&mut c, queue).await?;
        c.release();
        Ok(n)
    }

    async fn browse(&self, queue: &QueueName, limit: i64) -> Result<Vec<MessageRow>> {
        let s = self.inner();
        let mut c = s.connection("browsing messages").await?;
        let rows = s.storage.browse(&mut c, queue, limit).await?;
        c.release();
        Ok(rows)
    }

    async fn dead_letters(&self, page: &DeadLetterPage<'_>) -> Result<Vec<ListedDeadLetter>> {
        let s = self.inner();
        let mut c = s.connection("listing dead letters").await?;
        let rows = c
            .list_dead_letters(&s.cx.sql.dead_letter_list, page)
            .await
            .map_err(s.cx.db("listing dead letters"))?;
        c.release();
        Ok(rows)
    }

    async fn unsubscribe(&self, topic: &str, queue: &str) -> Result<bool> {
        let s = self.inner();
        let mut c = s.connection("removing a subscription").await?;
        let removed = c
            .on_subscription(&s.cx.sql.subscription_delete, topic, queue)
            .await
            .map_err(s.cx.db(|| format!("removing the subscription of {queue:?} to {topic}")))?;
        c.release();
        Ok(removed)
    }

    async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>> {
        let s = self.inner();
        let mut c = s.connection("listing subscriptions").await?;
        let rows = c
            .all_subscriptions(&s.cx.sql.subscription_all)
            .await
            .map_err(s.cx.db("listing subscriptions"))?;
        c.release();
        Ok(rows)
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let s = self.inner();
        let mut c = s.connection("listing queues").await?;
        let queues = s.storage.known_queues(&mut c).await?;
        c.release();
        Ok(queues)
    }

    async fn instances(
        &self,
    ) -> Result<Option<Vec<crate::driver::instance_statements::ListedInstance>>> {
        self.inner().list_instances().await
    }

    async fn monitoring_reports(
        &self,
        window: std::time::Duration,
    ) -> Result<Option<Vec<crate::driver::monitoring_statements::ListedReport>>> {
        self.inner().monitoring_reports(window).await
    }

    async fn end_saga(&self, saga_type: &str, correlation: &str, delete: bool) -> Result<bool> {
        let s = self.inner();
        let purpose = if delete {
            "deleting a saga instance"
        } else {
            "completing a saga instance"
        };
        if !self.table_exists("NimbusSagas").await? {
            return Ok(false);
        }
        let mut c = s.transaction(purpose).await?;
        let found = c
            .saga_get(&s.cx.sql.saga_get, saga_type, correlation)
            .await
            .map_err(s.cx.db(purpose))?;
        let ended = match found {
            Some(row) if delete => c
                .saga_write(&s.cx.sql.saga_delete, row.id, row.version, None)
                .await
                .map_err(s.cx.db(purpose))?,
            Some(row) if !row.completed => c
                .saga_write(
                    &s.cx.sql.saga_complete,
                    row.id,
                    row.version,
                    Some(&row.state),
                )
                .await
                .map_err(s.cx.db(purpose))?,
            _ => false,
        };
        s.commit(c, &[], purpose).await?;
        Ok(ended)
    }

    async fn purge_dead_letter(&self, id: uuid::Uuid) -> Result<bool> {
        let s = self.inner();
        let mut c = s.transaction("purging a dead letter").await?;
        let taken = c
            .take_dead_letter(&s.cx.sql.dead_letter_take, id)
            .await
            .map_err(s.cx.db(|| format!("purging dead letter {id}")))?;
        // Its body stored apart goes with it.
        let stored = taken
            .as_ref()
            .and_then(|(_, letter)| crate::dead_letter::stored_body_of(letter));
        if let Some(body) = stored {
            c.body_by_id(&s.cx.sql.body_delete, body)
                .await
                .map_err(s.cx.db(|| format!("deleting the body of dead letter {id}")))?;
        }
        s.commit(c, &[], "purging a dead letter").await?;
        Ok(taken.is_some())
    }

    async fn dead_letter(&self, id: uuid::Uuid) -> Result<Option<ListedDeadLetter>> {
        let s = self.inner();
        let mut c = s.connection("reading a dead letter").await?;
        let letter = c
            .dead_letter(&s.cx.sql.dead_letter_get, id)
            .await
            .map_err(s.cx.db(|| format!("reading dead letter {id}")))?;
        c.release();
        Ok(letter)
    }

    async fn deduplication_scopes(
        &self,
    ) -> Result<Vec<(String, i64, Option<chrono::NaiveDateTime>)>> {
        let s = self.inner();
        let mut c = s.connection("listing deduplication keys").await?;
        if !s.cx.table_exists(&mut c, "NimbusDeduplication").await? {
            c.release();
            return Ok(Vec::new());
        }
        let rows = c
            .deduplication_scopes(&s.cx.sql.deduplication_scopes)
            .await
            .map_err(s.cx.db("listing deduplication keys"))?;
        c.release();
        Ok(rows)
    }

    async fn limits(&self) -> Result<Vec<crate::transport::LimitSummary>> {
        let s = self.inner();
        let mut c = s.connection("listing limits").await?;
        if !s.cx.table_exists(&mut c, "NimbusLimits").await? {
            c.release();
            return Ok(Vec::new());
        }
        let rows = c
            .limits(&s.cx.sql.limits_list)
            .await
            .map_err(s.cx.db("listing limits"))?;
        c.release();
        Ok(rows)
    }

    async fn bodies(&self) -> Result<Vec<crate::transport::BodySummary>> {
        let s = self.inner();
        let mut c = s.connection("listing bodies stored apart").await?;
        if !s.cx.table_exists(&mut c, "NimbusBodies").await? {
            c.release();
            return Ok(Vec::new());
        }
        let rows = c
            .bodies_summary(&s.cx.sql.bodies_summary)
            .await
            .map_err(s.cx.db("listing bodies stored apart"))?;
        c.release();
        Ok(rows)
    }

    async fn forget_key(&self, scope: &str, key: &str) -> Result<bool> {
        let s = self.inner();
        let mut c = s.connection("forgetting a deduplication key").await?;
        let forgotten = c
            .release_key(&s.cx.sql.deduplication_release, scope, key)
            .await
            .map_err(s.cx.db(|| format!("forgetting {key:?} of {scope:?}")))?;
        c.release();
        Ok(forgotten)
    }

    async fn remember_key(&self, scope: &str, key: &str, window_ms: i64) -> Result<bool> {
        let s = self.inner();
        let mut c = s.connection("keeping a deduplication key").await?;
        let claimed = c
            .claim_key(&s.cx.sql.deduplication_claim, scope, key, window_ms)
            .await
            .map_err(s.cx.db(|| format!("keeping {key:?} of {scope:?}")))?;
        c.release();
        Ok(claimed)
    }

    async fn keys_of(&self, scope: &str) -> Result<Vec<String>> {
        let s = self.inner();
        let mut c = s.connection("reading deduplication keys").await?;
        if !s.cx.table_exists(&mut c, "NimbusDeduplication").await? {
            c.release();
            return Ok(Vec::new());
        }
        let keys = c
            .keys_of(&s.cx.sql.deduplication_keys, scope)
            .await
            .map_err(s.cx.db(|| format!("reading the keys of {scope:?}")))?;
        c.release();
        Ok(keys)
    }

    async fn sagas(&self, saga_type: Option<&str>, limit: i64) -> Result<Vec<ListedSaga>> {
        let s = self.inner();
        let mut c = s.connection("listing sagas").await?;
        if !s.cx.table_exists(&mut c, "NimbusSagas").await? {
            c.release();
            return Ok(Vec::new());
        }
        let rows = c
            .saga_list(&s.cx.sql.saga_list, saga_type, limit)
            .await
            .map_err(s.cx.db("listing sagas"))?;
        c.release();
        Ok(rows)
    }

    async fn saga(&self, saga_type: &str, correlation: &str) -> Result<Option<SagaRow>> {
        let s = self.inner();
        let mut c = s.connection("reading a saga").await?;
        if !s.cx.table_exists(&mut c, "NimbusSagas").await? {
            c.release();
            return Ok(None);
        }
        // On its own (autocommit): the row lock of saga_get.sql ends with the statement.
        let row = c
            .saga_get(&s.cx.sql.saga_get, saga_type, correlation)
            .await
            .map_err(s.cx.db(|| format!("reading saga {saga_type} {correlation:?}")))?;
        c.release();
        Ok(row)
    }

    async fn pause(&self, queue: &str, by: &str) -> Result<bool> {
        self.require_pause_table().await?;
        let s = self.inner();
        let mut c = s.connection("pausing a queue").await?;
        let paused = c
            .pause_queue(&s.cx.sql.queue_pause, queue, by)
            .await
            .map_err(s.cx.db(|| format!("pausing {queue:?}")))?;
        c.release();
        super::shared_reads::forget_pauses(&s.shared_reads_key());
        Ok(paused)
    }

    async fn resume(&self, queue: &str) -> Result<bool> {
        self.require_pause_table().await?;
        let s = self.inner();
        let mut c = s.connection("resuming a queue").await?;
        let resumed = c
            .resume_queue(&s.cx.sql.queue_resume, queue)
            .await
            .map_err(s.cx.db(|| format!("resuming {queue:?}")))?;
        c.release();
        super::shared_reads::forget_pauses(&s.shared_reads_key());
        Ok(resumed)
    }

    async fn table_exists(&self, table: &str) -> Result<bool> {
        let s = self.inner();
        let mut c = s.connection("checking the schema").await?;
        let exists = s.cx.table_exists(&mut c, table).await?;
        c.release();
        Ok(exists)
    }

    async fn index_names(&self, table: &str) -> Result<Vec<String>> {
        let s = self.inner();
        let mut c = s.connection("listing indexes").await?;
        let names = c
            .index_names(&s.cx.sql.catalog_list_indexes, s.cx.schema.as_str(), table)
            .await
            .map_err(s.cx.db("listing indexes"))?;
        c.release();
        Ok(names)
    }

    async fn run_sql(&self, sql: &str) -> Result<()> {
        let s = self.inner();
        let mut c = s.connection("running SQL").await?;
        c.run_sql_alone(sql)
            .await
            .map_err(s.cx.db(|| format!("running {sql}")))?;
        c.release();
        Ok(())
    }

    async fn scalar(&self, sql: &str, text_params: &[&str]) -> Result<i64> {
        let s = self.inner();
        let mut c = s.connection("running a query").await?;
        let params: Vec<Param<'_>> = text_params.iter().map(|p| Param::Text(Some(p))).collect();
        let n = c
            .count(sql, &params)
            .await
            .map_err(s.cx.db(|| format!("running {sql}")))?;
        c.release();
        Ok(n)
    }

    async fn insert_raw(&self, queue: &QueueName, row: &RawRow) -> Result<()> {
        let s = self.inner();
        let mut c = s.connection("writing a raw row").await?;
        s.storage
            .insert_raw(
                &mut c,
                queue,
                &QueueRow {
                    id: row.id,
                    correlation_id: None,
                    reply_to_address: None,
                    time_to_be_received_ms: row.time_to_be_received_ms,
                    headers: &row.headers,
                    body: &row.body,
                    expires_at: None,
                },
            )
            .await?;
        c.release();
        Ok(())
    }

    fn qualified(&self, table: &str) -> String {
        let s = self.inner();
        let dialect = s.driver.dialect();
        match QueueName::new(table) {
            Ok(name) => dialect.table(&s.cx.schema, &name),
            Err(_) => dialect.quote(table),
        }
    }

    fn quote(&self, identifier: &str) -> String {
        self.inner().driver.dialect().quote(identifier)
    }
}
