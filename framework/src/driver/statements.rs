//! One method per statement, with typed parameters and rows, written once for every driver: each
//! binds its parameters in the order the statement file's header lists and decodes the rows the
//! file says it returns. The SQL text comes from the dialect's files (`crate::sql`).
//!
//! This file is over 1,000 lines because it has one short method per statement file (about sixty),
//! each binding and decoding exactly what its file's header says.

use chrono::NaiveDateTime;
use uuid::Uuid;

use std::time::Duration;

use super::{
    bounded, Driver, DriverError, DriverResult, FailureKind, Held, Param, Row, Statement, Value,
};

/// A row for a queue table (`queue_insert.sql`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueRow<'a> {
    pub id: Uuid,
    pub correlation_id: Option<&'a str>,
    pub reply_to_address: Option<&'a str>,
    /// Time to be received in milliseconds; the database adds it to its own clock.
    pub time_to_be_received_ms: Option<i64>,
    pub headers: &'a str,
    pub body: &'a [u8],
    /// An absolute `Expires` that wins over the time to be received.
    pub expires_at: Option<NaiveDateTime>,
}

/// A row for `NimbusMessages` (`messages_insert.sql`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedRow<'a> {
    pub message_id: Uuid,
    pub destination: &'a str,
    /// The body envelope: headers and body together.
    pub body: &'a [u8],
    pub time_to_be_received_ms: Option<i64>,
    pub expires_at: Option<NaiveDateTime>,
    pub delay_ms: Option<i64>,
    /// An absolute `VisibleAfter` that wins over the delay.
    pub visible_after: Option<NaiveDateTime>,
}

/// A row for `NimbusDelayedMessages` (`delayed_insert.sql`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DelayedRow<'a> {
    pub message: QueueRow<'a>,
    pub destination: &'a str,
    pub delay_ms: Option<i64>,
    /// An absolute due time that wins over the delay.
    pub due_at: Option<NaiveDateTime>,
}

/// A row for `NimbusLeases` (`lease_insert.sql`): a received message held under a lease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseRow<'a> {
    pub lease_id: Uuid,
    /// The queue the message was received from, where it goes back if the lease expires.
    pub queue: &'a str,
    /// How long from now (database time) the lease lasts.
    pub lease_ms: i64,
    /// The instance that holds it, for operators.
    pub leased_by: &'a str,
    pub id: &'a str,
    pub correlation_id: Option<&'a str>,
    pub reply_to_address: Option<&'a str>,
    pub expires: Option<NaiveDateTime>,
    pub headers: &'a str,
    pub body: &'a [u8],
}

/// A row for `NimbusDeadLetters` (`dead_letter_insert.sql`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeadLetterRow<'a> {
    pub message_id: Uuid,
    pub original_destination: &'a str,
    pub body: &'a [u8],
    pub delivery_attempts: i32,
}

/// A message as a receive (or a browse, or a due delayed message) returns it. Every column the
/// framework could not read is named in `undecodable` instead of failing the statement, so the
/// message can still be moved to the dead letters and the queue keeps flowing.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageRow {
    /// The `Id` (or `MessageId`) as text.
    pub id: String,
    pub correlation_id: Option<String>,
    pub reply_to_address: Option<String>,
    pub headers: String,
    pub body: Vec<u8>,
    /// Past its `Expires` by database time.
    pub expired: bool,
    pub expires: Option<NaiveDateTime>,
    /// The destination (due delayed messages only).
    pub destination: Option<String>,
    /// What could not be read, when something could not.
    pub undecodable: Option<String>,
    /// Its ordered group's key and its place there, where a grouped receive returned them
    /// (`queue_receive_grouped.sql`: columns 7 and 8) and it has a group.
    pub group: Option<(String, i64)>,
}

/// Collects the columns of one row that cannot be read.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn take<T: Default>(&mut self, what: &str, value: Result<T, String>) -> T {
        value.unwrap_or_else(|e| {
            self.0.push(format!("{what}: {e}"));
            T::default()
        })
    }

    fn into_reason(self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            format!(
                "the row cannot be read as a message ({})",
                self.0.join("; ")
            )
        })
    }
}

/// Where each field of a [`MessageRow`] is in a statement's result (`None`: not returned).
#[derive(Clone, Copy)]
struct Columns {
    id: usize,
    destination: Option<usize>,
    correlation_id: Option<usize>,
    reply_to_address: Option<usize>,
    headers: Option<usize>,
    body: usize,
    expired: Option<usize>,
    expires: Option<usize>,
}

/// `queue_receive.sql`, `messages_receive.sql`, `lease_take_expired.sql`: Id, CorrelationId,
/// ReplyToAddress, Headers, Body, Expired, Expires.
const RECEIVED: Columns = Columns {
    id: 0,
    destination: None,
    correlation_id: Some(1),
    reply_to_address: Some(2),
    headers: Some(3),
    body: 4,
    expired: Some(5),
    expires: Some(6),
};

/// Where a grouped receive returns GroupKey (the place in the group follows it).
const GROUP_KEY_COLUMN: usize = 7;

/// `delayed_take_due.sql`: Id, Destination, CorrelationId, ReplyToAddress, Expires, Headers, Body.
const DUE: Columns = Columns {
    id: 0,
    destination: Some(1),
    correlation_id: Some(2),
    reply_to_address: Some(3),
    headers: Some(5),
    body: 6,
    expired: None,
    expires: Some(4),
};

/// `queue_browse.sql`: Id, CorrelationId, ReplyToAddress, Headers, Body, Expires, RowVersion.
const BROWSED: Columns = Columns {
    id: 0,
    destination: None,
    correlation_id: Some(1),
    reply_to_address: Some(2),
    headers: Some(3),
    body: 4,
    expired: None,
    expires: Some(5),
};

/// `messages_browse.sql`: MessageId, Body (the envelope), VisibleAfter, ExpiresAt.
const BROWSED_SHARED: Columns = Columns {
    id: 0,
    destination: None,
    correlation_id: None,
    reply_to_address: None,
    headers: None,
    body: 1,
    expired: None,
    expires: Some(3),
};

/// Reads a message row; every column that cannot be read is named in `undecodable`.
fn message_row(row: &Row, c: Columns) -> MessageRow {
    let mut p = Problems::default();
    let mut text = |what: &str, index: Option<usize>| match index {
        Some(i) => p.take(what, row.text(i)),
        None => None,
    };
    let id = text("Id", Some(c.id)).unwrap_or_default();
    let destination = text("Destination", c.destination);
    let correlation_id = text("CorrelationId", c.correlation_id);
    let reply_to_address = text("ReplyToAddress", c.reply_to_address);
    let headers = text("Headers", c.headers).unwrap_or_default();
    let mut message = MessageRow {
        id,
        destination,
        correlation_id,
        reply_to_address,
        headers,
        body: p.take("Body", row.bytes(c.body)).unwrap_or_default(),
        expired: c
            .expired
            .and_then(|i| p.take("Expired", row.bool(i)))
            .unwrap_or(false),
        expires: c.expires.and_then(|i| p.take("Expires", row.time(i))),
        undecodable: None,
        group: None,
    };
    // A grouped receive returns GroupKey and the message's place after the received columns.
    if c.expired.is_some() && row.0.len() > GROUP_KEY_COLUMN + 1 {
        let key = p.take("GroupKey", row.text(GROUP_KEY_COLUMN));
        let place = p.take("the place in its group", row.int(GROUP_KEY_COLUMN + 1));
        message.group = key.zip(place);
    }
    message.undecodable = p.into_reason();
    message
}

/// One column of one index, as `catalog_index_definitions.sql` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexColumn {
    /// The index's name.
    pub index: String,
    /// Its type as the database names it (`NONCLUSTERED`, `CLUSTERED`, `btree`, `hash`, …).
    pub kind: String,
    /// A filtered (partial) index.
    pub filtered: bool,
    /// The column; `None` for an expression.
    pub column: Option<String>,
    /// 1, 2, … for key columns; 0 for any other.
    pub key_ordinal: i64,
    /// An `INCLUDE` column.
    pub included: bool,
}

/// A row of `NimbusSubscriptions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscriptionRow {
    pub topic: String,
    pub queue: String,
    pub last_seen_at: Option<NaiveDateTime>,
    /// The idle period its subscriber promised, in seconds (`None` for rows from before it).
    pub idle_seconds: Option<i64>,
}

/// A row of `dead_letter_list.sql` or `dead_letter_get.sql`.
fn listed_dead_letter(row: &Row) -> Result<ListedDeadLetter, String> {
    Ok(ListedDeadLetter {
        message_id: row.text(0)?.unwrap_or_default(),
        original_destination: row.text(1)?,
        body: row.bytes(2)?.unwrap_or_default(),
        delivery_attempts: row.int(3)?.unwrap_or(0),
        failed_at: row.time(4)?,
    })
}

/// A saga instance as `saga_get.sql` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SagaRow {
    pub id: Uuid,
    pub state: String,
    pub version: i64,
    /// It completed (it stays a while, so that late messages find it completed).
    pub completed: bool,
}

/// A saga instance as `saga_list.sql` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedSaga {
    pub saga_type: String,
    pub correlation: String,
    pub state: String,
    pub version: i64,
    pub started_at: Option<NaiveDateTime>,
    pub updated_at: Option<NaiveDateTime>,
    pub id: String,
}

/// One row of `paused_list.sql`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PausedRow {
    pub queue: String,
    pub paused_at: Option<NaiveDateTime>,
    pub paused_by: String,
}

/// One row of `delayed_list.sql` or `messages_list_delayed.sql`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DelayedListRow {
    pub id: String,
    pub destination: String,
    /// When it is due (database time, UTC).
    pub due: Option<NaiveDateTime>,
    /// The `Headers` column (table per queue), or the `Body` envelope that holds them (shared
    /// table).
    pub headers_or_envelope: Vec<u8>,
}

/// Which page of dead letters `dead_letter_list.sql` returns: the filters, and where the page
/// starts (after the (FailedAt, MessageId) of the previous page's last row).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeadLetterPage<'a> {
    pub queue: Option<&'a str>,
    pub failed_at_or_before: Option<NaiveDateTime>,
    pub failed_at_or_after: Option<NaiveDateTime>,
    pub after: Option<(NaiveDateTime, uuid::Uuid)>,
    pub limit: i64,
}

/// A row of `NimbusDeadLetters`, as listed.
#[derive(Debug, Clone)]
pub(crate) struct ListedDeadLetter {
    pub message_id: String,
    pub original_destination: Option<String>,
    pub body: Vec<u8>,
    pub delivery_attempts: i64,
    pub failed_at: Option<NaiveDateTime>,
}

impl<D: Driver> Held<D> {
    fn parts(&mut self) -> DriverResult<(&D, &mut D::Connection, Duration)> {
        let driver: &D = &self.driver;
        let deadline = self.deadlines.statement;
        let connection = self.connection.as_mut().ok_or_else(|| {
            DriverError::other(
                FailureKind::Permanent,
                "the connection was already given back",
            )
        })?;
        Ok((driver, connection, deadline))
    }

    /// Notes large values among `params`: the connection then closes when given back (see
    /// [`Driver::keeps_large_buffers`]).
    fn weigh_params(&mut self, params: &[Param<'_>]) {
        if !self.moved_large {
            self.moved_large = params.iter().any(|p| match p {
                Param::Bytes(Some(b)) => b.len() > super::LARGE_VALUE,
                Param::Text(Some(t)) => t.len() > super::LARGE_VALUE,
                _ => false,
            });
            self.retire |= self.moved_large && self.driver.keeps_large_buffers();
            if self.moved_large {
                super::heap::large_value_seen();
            }
        }
    }

    /// Notes large values among `rows`, as [`Held::weigh_params`] does.
    fn weigh_rows(&mut self, rows: &[Row]) {
        if !self.moved_large {
            self.moved_large = rows.iter().any(|row| {
                row.0.iter().any(|v| match v {
                    Value::Bytes(b) => b.len() > super::LARGE_VALUE,
                    Value::Text(t) => t.len() > super::LARGE_VALUE,
                    _ => false,
                })
            });
            self.retire |= self.moved_large && self.driver.keeps_large_buffers();
            if self.moved_large {
                super::heap::large_value_seen();
            }
        }
    }

    /// Notes a call that ran past its deadline: the connection is never reused.
    fn note<T>(&mut self, result: DriverResult<T>) -> DriverResult<T> {
        if matches!(&result, Err(e) if e.is_timeout()) && !self.frozen {
            self.frozen = true;
            // The idle connections beside it may be frozen as well: new ones, not a deadline
            // spent on each.
            self.driver.forget_idle();
            tracing::debug!(
                "a database call ran past its deadline: its connection and the idle pooled ones are closed"
            );
        }
        result
    }

    /// Runs a statement; returns the rows it affected.
    pub async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> DriverResult<u64> {
        self.weigh_params(params);
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(
            deadline,
            "a statement",
            driver.execute(connection, sql, params),
        )
        .await;
        self.note(result)
    }

    /// Runs a statement and returns its rows.
    pub async fn query(&mut self, sql: &str, params: &[Param<'_>]) -> DriverResult<Vec<Row>> {
        self.weigh_params(params);
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(deadline, "a query", driver.query(connection, sql, params)).await;
        let rows = self.note(result)?;
        self.weigh_rows(&rows);
        Ok(rows)
    }

    /// Runs a DDL script; `names` are the schema, table and index names SQL Server's scripts
    /// take as values.
    pub async fn run_script(&mut self, sql: &str, names: &[&str]) -> DriverResult<()> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(
            deadline,
            "a script",
            driver.run_script(connection, sql, names),
        )
        .await;
        self.note(result)
    }

    /// Runs SQL text an operator gave, outside any transaction (see [`Driver::run_sql_alone`]).
    pub async fn run_sql_alone(&mut self, sql: &str) -> DriverResult<()> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(deadline, "a script", driver.run_sql_alone(connection, sql)).await;
        self.note(result)
    }

    /// Runs one of the framework's creation scripts (see [`Driver::run_creation_script`]).
    pub async fn run_creation_script(&mut self, sql: &str, names: &[&str]) -> DriverResult<()> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(
            deadline,
            "a script",
            driver.run_creation_script(connection, sql, names),
        )
        .await;
        self.note(result)
    }

    /// Opens a transaction.
    pub async fn begin(&mut self) -> DriverResult<()> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(deadline, "opening a transaction", driver.begin(connection)).await;
        self.note(result)
    }

    /// Reads a single count (`queue_peek.sql`, `queue_count.sql`, …): 0 when no row comes back.
    pub async fn count(&mut self, sql: &str, params: &[Param<'_>]) -> DriverResult<i64> {
        let rows = self.query(sql, params).await?;
        match rows.first() {
            None => Ok(0),
            Some(row) => row
                .int(0)
                .map(|n| n.unwrap_or(0))
                .map_err(|e| DriverError::other(FailureKind::Permanent, e)),
        }
    }

    /// Whether a catalog query (`catalog_table_exists.sql`, …) returns a row.
    pub async fn exists(&mut self, sql: &str, params: &[Param<'_>]) -> DriverResult<bool> {
        Ok(!self.query(sql, params).await?.is_empty())
    }

    /// `queue_insert.sql` of a seed 000 table (the contract tests' raw rows).
    #[cfg(test)]
    pub async fn insert_queue_row(&mut self, sql: &str, row: &QueueRow<'_>) -> DriverResult<u64> {
        self.execute(sql, &queue_row_params(row)).await
    }

    /// `messages_insert.sql`.
    pub async fn insert_shared_row(&mut self, sql: &str, row: &SharedRow<'_>) -> DriverResult<u64> {
        self.execute(sql, &shared_row_params(row)).await
    }

    /// `delayed_insert.sql`.
    #[cfg(test)]
    pub async fn insert_delayed_row(
        &mut self,
        sql: &str,
        row: &DelayedRow<'_>,
    ) -> DriverResult<u64> {
        self.execute(sql, &delayed_row_params(row)).await
    }

    /// Runs a statement planned earlier ([`queue_row_statement`] and its twins).
    pub async fn run(&mut self, statement: &Statement) -> DriverResult<u64> {
        self.execute(&statement.sql, &statement.params()).await
    }

    /// `queue_receive.sql` or `messages_receive.sql`, after opening the transaction the receive
    /// keeps until the message is handled.
    pub async fn begin_and_receive(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Option<MessageRow>> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(
            deadline,
            "a receive",
            driver.begin_and_query(connection, sql, params),
        )
        .await;
        let rows = self.note(result)?;
        self.weigh_rows(&rows);
        Ok(rows.first().map(|row| message_row(row, RECEIVED)))
    }

    /// Whether [`commit_and_receive`](Self::commit_and_receive) saves a round trip here: not
    /// after a large value, whose connection (and the buffers it grew) must be given back
    /// rather than kept for the next receive.
    pub fn pipelines_commit(&self) -> bool {
        self.driver.pipelines_commit() && !self.moved_large
    }

    /// Commits the open transaction and runs `queue_receive.sql` or `messages_receive.sql` in a
    /// new one, in one round trip where the driver pipelines them. `Err`: the commit failed or
    /// ran past the deadline (whether it took effect is then unknown) and the connection is
    /// discarded, which rolls back whatever the receive took. `Ok`: committed, with the
    /// receive's result.
    pub async fn commit_and_receive(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<DriverResult<Option<MessageRow>>> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(deadline, "a commit and the next receive", async {
            Ok(driver
                .commit_then_begin_and_query(connection, sql, params)
                .await)
        })
        .await;
        let (committed, received) = match result {
            Ok(both) => both,
            Err(timed_out) => (Err(timed_out), None),
        };
        if let Err(e) = committed {
            if let Some(connection) = self.connection.take() {
                self.driver.discard(connection);
            }
            return Err(e);
        }
        let rows = match received {
            Some(rows) => self.note(rows).inspect(|rows| self.weigh_rows(rows)),
            None => Err(DriverError::other(
                FailureKind::Permanent,
                "the driver committed but did not run the receive after it",
            )),
        };
        Ok(rows.map(|rows| rows.first().map(|row| message_row(row, RECEIVED))))
    }

    /// `queue_receive_batch.sql` or `messages_receive_batch.sql`, after opening the transaction
    /// the batch keeps until all of its messages are handled; with `lock_wait`, its statements
    /// wait at most that long for a row lock where the driver can bound it (see
    /// [`Driver::begin_and_query_by_index`]).
    pub async fn begin_and_receive_many(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        lock_wait: Option<std::time::Duration>,
    ) -> DriverResult<Vec<MessageRow>> {
        let (driver, connection, deadline) = self.parts()?;
        let result = bounded(
            deadline,
            "a batched receive",
            driver.begin_and_query_by_index(connection, sql, params, lock_wait),
        )
        .await;
        let rows = self.note(result)?;
        self.weigh_rows(&rows);
        Ok(rows.iter().map(|row| message_row(row, RECEIVED)).collect())
    }

    /// `lease_insert.sql`.
    pub async fn insert_lease(&mut self, sql: &str, row: &LeaseRow<'_>) -> DriverResult<u64> {
        self.execute(
            sql,
            &[
                Param::Uuid(row.lease_id),
                Param::Text(Some(row.queue)),
                Param::BigInt(Some(row.lease_ms)),
                Param::Text(Some(row.leased_by)),
                Param::Text(Some(row.id)),
                Param::Text(row.correlation_id),
                Param::Text(row.reply_to_address),
                Param::Time(row.expires),
                Param::Text(Some(row.headers)),
                Param::Bytes(Some(row.body)),
            ],
        )
        .await
    }

    /// `lease_renew.sql`: `false` when the lease is gone.
    pub async fn renew_lease(
        &mut self,
        sql: &str,
        lease: Uuid,
        lease_ms: i64,
    ) -> DriverResult<bool> {
        let renewed = self
            .execute(sql, &[Param::Uuid(lease), Param::BigInt(Some(lease_ms))])
            .await?;
        Ok(renewed > 0)
    }

    /// `lease_end.sql`, inside the caller's transaction: `false` when the lease is gone.
    pub async fn end_lease(&mut self, sql: &str, lease: Uuid) -> DriverResult<bool> {
        Ok(self.execute(sql, &[Param::Uuid(lease)]).await? > 0)
    }

    /// `lease_take_expired.sql`, after opening the transaction that keeps the message until it
    /// is retried or dead-lettered.
    pub async fn begin_and_take_expired_lease(
        &mut self,
        sql: &str,
        queue: &str,
    ) -> DriverResult<Option<MessageRow>> {
        self.begin_and_receive(sql, &[Param::Text(Some(queue))])
            .await
    }

    /// `delayed_take_due.sql`: deletes and returns up to `batch` due delayed messages.
    pub async fn take_due_delayed(
        &mut self,
        sql: &str,
        batch: i64,
    ) -> DriverResult<Vec<MessageRow>> {
        let rows = self.query(sql, &[Param::BigInt(Some(batch))]).await?;
        Ok(rows.iter().map(|row| message_row(row, DUE)).collect())
    }

    /// `dead_letter_insert.sql`: `false` when a dead letter with that id exists already.
    pub async fn insert_dead_letter(
        &mut self,
        sql: &str,
        row: &DeadLetterRow<'_>,
    ) -> DriverResult<bool> {
        let inserted = self
            .execute(
                sql,
                &[
                    Param::Uuid(row.message_id),
                    Param::Text(Some(row.original_destination)),
                    Param::Bytes(Some(row.body)),
                    Param::Int(row.delivery_attempts),
                ],
            )
            .await?;
        Ok(inserted > 0)
    }

    /// `saga_cleanup.sql` or `dead_letter_expire.sql`: deletes at most `batch` rows older than
    /// `seconds` (by database time); returns how many.
    pub async fn delete_older_than(
        &mut self,
        sql: &str,
        seconds: i64,
        batch: i64,
    ) -> DriverResult<u64> {
        self.execute(
            sql,
            &[Param::BigInt(Some(seconds)), Param::BigInt(Some(batch))],
        )
        .await
    }

    /// `dead_letter_take.sql`: deletes the dead letter `id` and returns its original destination
    /// and body.
    pub async fn take_dead_letter(
        &mut self,
        sql: &str,
        id: Uuid,
    ) -> DriverResult<Option<(Option<String>, Vec<u8>)>> {
        let rows = self.query(sql, &[Param::Uuid(id)]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let destination = row
            .text(0)
            .map_err(|e| DriverError::other(FailureKind::Permanent, e))?;
        let body = row
            .bytes(1)
            .map_err(|e| DriverError::other(FailureKind::Permanent, e))?;
        Ok(Some((destination, body.unwrap_or_default())))
    }

    /// `dead_letter_list.sql`: one page of dead letters, oldest first. Rows that cannot be
    /// read are skipped with a warning.
    pub async fn list_dead_letters(
        &mut self,
        sql: &str,
        page: &DeadLetterPage<'_>,
    ) -> DriverResult<Vec<ListedDeadLetter>> {
        let (after_time, after_id) = match page.after {
            Some((time, id)) => (Some(time), id),
            None => (None, uuid::Uuid::nil()),
        };
        let params = [
            Param::Text(page.queue),
            Param::Time(page.failed_at_or_before),
            Param::Time(page.failed_at_or_after),
            Param::Time(after_time),
            Param::Uuid(after_id),
            Param::BigInt(Some(page.limit)),
        ];
        let rows = self.query(sql, &params).await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                listed_dead_letter(row)
                    .inspect_err(
                        |e| tracing::warn!(problem = %e, "skipping an unreadable dead letter"),
                    )
                    .ok()
            })
            .collect())
    }

    /// `dead_letter_get.sql`: the dead letter `id`, left in place; `None` when there is none.
    pub async fn dead_letter(
        &mut self,
        sql: &str,
        id: Uuid,
    ) -> DriverResult<Option<ListedDeadLetter>> {
        let rows = self.query(sql, &[Param::Uuid(id)]).await?;
        rows.first()
            .map(|row| {
                listed_dead_letter(row).map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .transpose()
    }

    /// `saga_get.sql`: the instance of `saga_type` for `correlation`, locked until the
    /// transaction ends; `None` when there is none.
    pub async fn saga_get(
        &mut self,
        sql: &str,
        saga_type: &str,
        correlation: &str,
    ) -> DriverResult<Option<SagaRow>> {
        let rows = self
            .query(
                sql,
                &[Param::Text(Some(saga_type)), Param::Text(Some(correlation))],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let read = || -> Result<SagaRow, String> {
            let id = row.text(0)?.ok_or("a saga without an id")?;
            Ok(SagaRow {
                id: Uuid::parse_str(&id).map_err(|e| format!("saga id {id:?}: {e}"))?,
                state: row.text(1)?.ok_or("a saga without a state")?,
                version: row.int(2)?.ok_or("a saga without a version")?,
                completed: row.time(3)?.is_some(),
            })
        };
        read()
            .map(Some)
            .map_err(|e| DriverError::other(FailureKind::Permanent, e))
    }

    /// `saga_list.sql`: up to `limit` instances of `saga_type` (or of every type), oldest
    /// first. Rows that cannot be read are skipped with a warning.
    pub async fn saga_list(
        &mut self,
        sql: &str,
        saga_type: Option<&str>,
        limit: i64,
    ) -> DriverResult<Vec<ListedSaga>> {
        let rows = self
            .query(sql, &[Param::Text(saga_type), Param::BigInt(Some(limit))])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let read = || -> Result<ListedSaga, String> {
                    Ok(ListedSaga {
                        saga_type: row.text(0)?.unwrap_or_default(),
                        correlation: row.text(1)?.unwrap_or_default(),
                        state: row.text(2)?.unwrap_or_default(),
                        version: row.int(3)?.unwrap_or(0),
                        started_at: row.time(4)?,
                        updated_at: row.time(5)?,
                        id: row.text(6)?.unwrap_or_default(),
                    })
                };
                read()
                    .inspect_err(|e| tracing::warn!(problem = %e, "skipping an unreadable saga"))
                    .ok()
            })
            .collect())
    }

    /// `saga_insert.sql`: stores a new instance at version 1.
    pub async fn saga_insert(
        &mut self,
        sql: &str,
        id: Uuid,
        saga_type: &str,
        correlation: &str,
        state: &str,
    ) -> DriverResult<()> {
        self.execute(
            sql,
            &[
                Param::Uuid(id),
                Param::Text(Some(saga_type)),
                Param::Text(Some(correlation)),
                Param::Text(Some(state)),
            ],
        )
        .await
        .map(|_| ())
    }

    /// `saga_update.sql` (with `state`) or `saga_delete.sql` (without): `true` when the
    /// instance was still at `version`.
    pub async fn saga_write(
        &mut self,
        sql: &str,
        id: Uuid,
        version: i64,
        state: Option<&str>,
    ) -> DriverResult<bool> {
        let affected = match state {
            Some(state) => {
                self.execute(
                    sql,
                    &[
                        Param::Uuid(id),
                        Param::BigInt(Some(version)),
                        Param::Text(Some(state)),
                    ],
                )
                .await?
            }
            None => {
                self.execute(sql, &[Param::Uuid(id), Param::BigInt(Some(version))])
                    .await?
            }
        };
        Ok(affected > 0)
    }

    /// `queue_pause.sql`: pauses `queue`; `true` when it was not paused before.
    pub async fn pause_queue(&mut self, sql: &str, queue: &str, by: &str) -> DriverResult<bool> {
        let affected = self
            .execute(sql, &[Param::Text(Some(queue)), Param::Text(Some(by))])
            .await?;
        Ok(affected > 0)
    }

    /// `queue_resume.sql`: resumes `queue`; `true` when it was paused.
    pub async fn resume_queue(&mut self, sql: &str, queue: &str) -> DriverResult<bool> {
        let affected = self.execute(sql, &[Param::Text(Some(queue))]).await?;
        Ok(affected > 0)
    }

    /// `paused_list.sql`: the paused queues. A row that cannot be read is an error: skipping it
    /// would resume a queue an operator paused.
    pub async fn paused_queues(&mut self, sql: &str) -> DriverResult<Vec<PausedRow>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<PausedRow, String> {
                    Ok(PausedRow {
                        queue: row.text(0)?.ok_or("a paused queue without a name")?,
                        paused_at: row.time(1)?,
                        paused_by: row.text(2)?.unwrap_or_default(),
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }

    /// `delayed_cancel.sql` or `messages_cancel_delayed.sql`: whether a pending delayed message
    /// `id` was there to delete.
    pub async fn cancel_delayed(&mut self, sql: &str, id: Uuid) -> DriverResult<bool> {
        Ok(self.execute(sql, &[Param::Uuid(id)]).await? > 0)
    }

    /// `delayed_reschedule.sql` or `messages_reschedule_delayed.sql`: whether a pending delayed
    /// message `id` was there to move, to `at` or else `delay_ms` from now.
    pub async fn reschedule_delayed(
        &mut self,
        sql: &str,
        id: Uuid,
        delay_ms: Option<i64>,
        at: Option<NaiveDateTime>,
    ) -> DriverResult<bool> {
        let params = [Param::Uuid(id), Param::BigInt(delay_ms), Param::Time(at)];
        Ok(self.execute(sql, &params).await? > 0)
    }

    /// `delayed_list.sql` or `messages_list_delayed.sql`: up to `limit` pending delayed
    /// messages, soonest due first.
    pub async fn list_delayed(
        &mut self,
        sql: &str,
        limit: i64,
    ) -> DriverResult<Vec<DelayedListRow>> {
        let rows = self.query(sql, &[Param::BigInt(Some(limit))]).await?;
        rows.iter()
            .map(|row| {
                let read = || -> Result<DelayedListRow, String> {
                    Ok(DelayedListRow {
                        id: row.text(0)?.ok_or("a delayed message without an id")?,
                        destination: row.text(1)?.unwrap_or_default(),
                        due: row.time(2)?,
                        headers_or_envelope: row.bytes(3)?.unwrap_or_default(),
                    })
                };
                read().map_err(|e| DriverError::other(FailureKind::Permanent, e))
            })
            .collect()
    }

    /// `queue_browse.sql`: up to `limit` rows in receive order, left in place.
    pub async fn browse_queue(&mut self, sql: &str, limit: i64) -> DriverResult<Vec<MessageRow>> {
        let rows = self.query(sql, &[Param::BigInt(Some(limit))]).await?;
        Ok(rows.iter().map(|row| message_row(row, BROWSED)).collect())
    }

    /// `messages_browse.sql`: up to `limit` rows of `destination` in receive order, left in
    /// place; the body is still the envelope (headers inside).
    pub async fn browse_shared(
        &mut self,
        sql: &str,
        destination: &str,
        limit: i64,
    ) -> DriverResult<Vec<MessageRow>> {
        let rows = self
            .query(
                sql,
                &[Param::Text(Some(destination)), Param::BigInt(Some(limit))],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| MessageRow {
                destination: Some(destination.to_string()),
                ..message_row(row, BROWSED_SHARED)
            })
            .collect())
    }

    /// `subscription_upsert.sql`: `idle_seconds` is the subscriber's own `auto_delete_on_idle`.
    pub async fn subscribe(
        &mut self,
        sql: &str,
        topic: &str,
        queue: &str,
        idle_seconds: i64,
    ) -> DriverResult<()> {
        self.execute(
            sql,
            &[
                Param::Text(Some(topic)),
                Param::Text(Some(queue)),
                Param::BigInt(Some(idle_seconds)),
            ],
        )
        .await
        .map(drop)
    }

    /// `nservicebus_subscribe.sql`: `endpoint`'s subscription to `topic`, delivered to
    /// `address`.
    pub async fn nservicebus_subscribe(
        &mut self,
        sql: &str,
        address: &str,
        endpoint: &str,
        topic: &str,
    ) -> DriverResult<()> {
        self.execute(
            sql,
            &[
                Param::Text(Some(address)),
                Param::Text(Some(endpoint)),
                Param::Text(Some(topic)),
            ],
        )
        .await
        .map(drop)
    }

    /// `nservicebus_subscribers.sql`: the addresses subscribed to `topic`. Values that cannot
    /// be read are skipped with a warning.
    pub async fn nservicebus_subscribers(
        &mut self,
        sql: &str,
        topic: &str,
    ) -> DriverResult<Vec<String>> {
        let rows = self.query(sql, &[Param::Text(Some(topic))]).await?;
        Ok(rows
            .iter()
            .filter_map(|row| match row.text(0) {
                Ok(address) => address,
                Err(e) => {
                    tracing::warn!(topic, problem = %e, "skipping an unreadable NServiceBus subscription");
                    None
                }
            })
            .collect())
    }

    /// A statement on the one subscription of `queue` to `topic` (`subscription_refresh.sql`,
    /// `subscription_delete.sql`): `false` when it affected no row, the subscription being gone.
    pub async fn on_subscription(
        &mut self,
        sql: &str,
        topic: &str,
        queue: &str,
    ) -> DriverResult<bool> {
        let affected = self
            .execute(sql, &[Param::Text(Some(topic)), Param::Text(Some(queue))])
            .await?;
        Ok(affected > 0)
    }

    /// `subscription_list.sql`: the queues subscribed to `topic` seen within `idle_seconds`.
    /// Names that cannot be read are skipped with a warning.
    pub async fn subscribers(
        &mut self,
        sql: &str,
        topic: &str,
        idle_seconds: i64,
    ) -> DriverResult<Vec<String>> {
        let rows = self
            .query(
                sql,
                &[Param::Text(Some(topic)), Param::BigInt(Some(idle_seconds))],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| match row.text(0) {
                Ok(Some(name)) => Some(name),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(topic, problem = %e, "skipping an unreadable subscription");
                    None
                }
            })
            .collect())
    }

    /// `subscription_sweep.sql`: deletes the subscriptions not seen for `idle_seconds` and
    /// returns them as (topic, queue).
    pub async fn sweep_subscriptions(
        &mut self,
        sql: &str,
        idle_seconds: i64,
    ) -> DriverResult<Vec<(String, String)>> {
        let rows = self
            .query(sql, &[Param::BigInt(Some(idle_seconds))])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| match (row.text(0), row.text(1)) {
                (Ok(Some(topic)), Ok(Some(queue))) => Some((topic, queue)),
                _ => {
                    tracing::warn!(?row, "swept a subscription whose names cannot be read");
                    None
                }
            })
            .collect())
    }

    /// `subscription_all.sql`.
    pub async fn all_subscriptions(&mut self, sql: &str) -> DriverResult<Vec<SubscriptionRow>> {
        let rows = self.query(sql, &[]).await?;
        Ok(rows
            .iter()
            .filter_map(
                |row| match (row.text(0), row.text(1), row.time(2), row.int(3)) {
                    (Ok(Some(topic)), Ok(Some(queue)), Ok(last_seen_at), Ok(idle_seconds)) => {
                        Some(SubscriptionRow {
                            topic,
                            queue,
                            last_seen_at,
                            idle_seconds,
                        })
                    }
                    _ => {
                        tracing::warn!(?row, "skipping a subscription that cannot be read");
                        None
                    }
                },
            )
            .collect())
    }

    /// `catalog_index_definitions.sql`: every column of every index of `table` in `schema`.
    /// A row that cannot be read is skipped with a warning (the check then reports the index
    /// as it sees it), never an error that would stop an endpoint from starting.
    pub async fn index_columns(
        &mut self,
        sql: &str,
        schema: &str,
        table: &str,
    ) -> DriverResult<Vec<IndexColumn>> {
        let rows = self
            .query(sql, &[Param::Text(Some(schema)), Param::Text(Some(table))])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                match (
                    row.text(0),
                    row.text(1),
                    row.bool(2),
                    row.text(3),
                    row.int(4),
                    row.bool(5),
                ) {
                    (
                        Ok(Some(index)),
                        Ok(kind),
                        Ok(filtered),
                        Ok(column),
                        Ok(key_ordinal),
                        Ok(included),
                    ) => Some(IndexColumn {
                        index: super::catalog_names::index_name_as_created(index, table),
                        kind: kind.unwrap_or_default(),
                        filtered: filtered.unwrap_or(false),
                        column,
                        key_ordinal: key_ordinal.unwrap_or(0),
                        included: included.unwrap_or(false),
                    }),
                    _ => {
                        tracing::warn!(?row, "skipping an index column that cannot be read");
                        None
                    }
                }
            })
            .collect())
    }

    /// `catalog_list_indexes.sql`: the index names of `table` in `schema`.
    pub async fn index_names(
        &mut self,
        sql: &str,
        schema: &str,
        table: &str,
    ) -> DriverResult<Vec<String>> {
        let rows = self
            .query(sql, &[Param::Text(Some(schema)), Param::Text(Some(table))])
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| row.text(0).ok().flatten())
            .map(|name| super::catalog_names::index_name_as_created(name, table))
            .collect())
    }
}

/// `queue_insert.sql` for `row`, owned.
pub(crate) fn queue_row_statement(
    sql: &str,
    columns: crate::sql::QueueColumns,
    row: &QueueRow<'_>,
) -> Statement {
    match columns {
        crate::sql::QueueColumns::Seed000 => Statement::new(sql, &queue_row_params(row)),
        crate::sql::QueueColumns::NServiceBusPostgreSql => {
            Statement::new(sql, &nservicebus_row_params(row))
        }
    }
}

/// `queue_insert_grouped.sql` for `row` of group `group_key`: keeping the place `position` (a
/// retry copy's; `None` for a first send), received no sooner than `not_before_ms` from now;
/// `queue_insert_grouped_priority.sql` when it has a `priority`.
pub(crate) fn grouped_row_statement(
    sql: &str,
    row: &QueueRow<'_>,
    group_key: &str,
    position: Option<i64>,
    not_before_ms: Option<i64>,
    priority: Option<i16>,
) -> Statement {
    let [a, b, c, d, e, f, g] = queue_row_params(row);
    let mut params = vec![
        a,
        b,
        c,
        d,
        e,
        f,
        g,
        Param::Text(Some(group_key)),
        Param::BigInt(position),
        Param::BigInt(not_before_ms),
    ];
    params.extend(priority.map(|p| Param::BigInt(Some(p.into()))));
    Statement::new(sql, &params)
}

/// `queue_insert_priority.sql` for `row` at `priority`.
pub(crate) fn priority_row_statement(sql: &str, row: &QueueRow<'_>, priority: i16) -> Statement {
    let [a, b, c, d, e, f, g] = queue_row_params(row);
    Statement::new(
        sql,
        &[a, b, c, d, e, f, g, Param::BigInt(Some(priority.into()))],
    )
}

/// `messages_insert.sql` for `row`, owned.
pub(crate) fn shared_row_statement(sql: &str, row: &SharedRow<'_>) -> Statement {
    Statement::new(sql, &shared_row_params(row))
}

/// `messages_insert_grouped.sql` for `row` of group `group_key`, keeping the place `place` (a
/// retry copy's; `None` for a first send, placed when it becomes visible);
/// `messages_insert_grouped_priority.sql` when it has a `priority`.
pub(crate) fn shared_grouped_row_statement(
    sql: &str,
    row: &SharedRow<'_>,
    group_key: &str,
    place: Option<i64>,
    priority: Option<i16>,
) -> Statement {
    let [a, b, c, d, e, f, g] = shared_row_params(row);
    let mut params = vec![
        a,
        b,
        c,
        d,
        e,
        f,
        g,
        Param::Text(Some(group_key)),
        Param::BigInt(place),
    ];
    params.extend(priority.map(|p| Param::BigInt(Some(p.into()))));
    Statement::new(sql, &params)
}

/// `messages_insert_priority.sql` for `row` at `priority`.
pub(crate) fn shared_priority_row_statement(
    sql: &str,
    row: &SharedRow<'_>,
    priority: i16,
) -> Statement {
    let [a, b, c, d, e, f, g] = shared_row_params(row);
    Statement::new(
        sql,
        &[a, b, c, d, e, f, g, Param::BigInt(Some(priority.into()))],
    )
}

/// `delayed_insert.sql` for `row`, owned.
pub(crate) fn delayed_row_statement(sql: &str, row: &DelayedRow<'_>) -> Statement {
    Statement::new(sql, &delayed_row_params(row))
}

fn shared_row_params<'a>(row: &SharedRow<'a>) -> [Param<'a>; 7] {
    [
        Param::Uuid(row.message_id),
        Param::Text(Some(row.destination)),
        Param::Bytes(Some(row.body)),
        Param::BigInt(row.time_to_be_received_ms),
        Param::Time(row.expires_at),
        Param::BigInt(row.delay_ms),
        Param::Time(row.visible_after),
    ]
}

fn delayed_row_params<'a>(row: &DelayedRow<'a>) -> [Param<'a>; 10] {
    let m = &row.message;
    [
        Param::Uuid(m.id),
        Param::Text(Some(row.destination)),
        Param::Text(m.correlation_id),
        Param::Text(m.reply_to_address),
        Param::BigInt(m.time_to_be_received_ms),
        Param::Text(Some(m.headers)),
        Param::Bytes(Some(m.body)),
        Param::Time(m.expires_at),
        Param::BigInt(row.delay_ms),
        Param::Time(row.due_at),
    ]
}

/// The parameters of NServiceBus's PostgreSQL insert (`nservicebus/queue_insert.sql`): the table
/// has no CorrelationId and ReplyToAddress columns (they travel in the headers).
fn nservicebus_row_params<'a>(row: &QueueRow<'a>) -> [Param<'a>; 5] {
    [
        Param::Uuid(row.id),
        Param::BigInt(row.time_to_be_received_ms),
        Param::Text(Some(row.headers)),
        Param::Bytes(Some(row.body)),
        Param::Time(row.expires_at),
    ]
}

fn queue_row_params<'a>(row: &QueueRow<'a>) -> [Param<'a>; 7] {
    [
        Param::Uuid(row.id),
        Param::Text(row.correlation_id),
        Param::Text(row.reply_to_address),
        Param::BigInt(row.time_to_be_received_ms),
        Param::Text(Some(row.headers)),
        Param::Bytes(Some(row.body)),
        Param::Time(row.expires_at),
    ]
}
