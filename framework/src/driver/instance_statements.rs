//! The statements of `NimbusInstances`, where every running bus registers itself and
//! heartbeats: typed parameters in, typed rows out, as in [`super::statements`].

use chrono::NaiveDateTime;
use uuid::Uuid;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param, Row};

/// A row for `instance_register.sql`: one start of a bus.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstanceRow<'a> {
    pub run_id: Uuid,
    pub application: &'a str,
    pub instance: &'a str,
    pub host: &'a str,
    pub process_id: i64,
    pub version: &'a str,
    /// The queues it receives from, comma-separated.
    pub queues: &'a str,
    /// The message types it handles, comma-separated.
    pub handlers: &'a str,
    pub shares_name: bool,
    pub heartbeat_seconds: i32,
}

/// A row of `instance_holders.sql`: another live start holding the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HolderRow {
    pub run_id: String,
    pub host: String,
    pub process_id: i64,
    pub shares_name: bool,
    pub last_seen_at: Option<NaiveDateTime>,
    pub seconds_since_seen: i64,
}

/// A row of `instance_list.sql`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedInstance {
    pub run_id: String,
    pub application: String,
    pub instance: String,
    pub host: String,
    pub process_id: i64,
    pub version: String,
    pub queues: String,
    pub handlers: String,
    pub shares_name: bool,
    pub heartbeat_seconds: i64,
    pub started_at: Option<NaiveDateTime>,
    pub last_seen_at: Option<NaiveDateTime>,
    pub stopped_at: Option<NaiveDateTime>,
    pub seconds_since_seen: i64,
}

/// Reads a row with `read`; a row that cannot be read is an error naming what was wrong.
fn decode<T>(row: &Row, read: impl Fn(&Row) -> Result<T, String>) -> DriverResult<T> {
    read(row).map_err(|e| DriverError::other(FailureKind::Permanent, e))
}

impl<D: Driver> Held<D> {
    /// `instance_lock.sql`: serializes the starts of buses named `name` until the transaction
    /// ends, waiting at most `wait_ms`.
    pub async fn lock_instance_name(
        &mut self,
        sql: &str,
        name: &str,
        wait_ms: i32,
    ) -> DriverResult<()> {
        self.execute(sql, &[Param::Text(Some(name)), Param::Int(wait_ms)])
            .await
            .map(|_| ())
    }

    /// `instance_holders.sql`: the other live starts named (`application`, `instance`).
    pub async fn instance_holders(
        &mut self,
        sql: &str,
        application: &str,
        instance: &str,
        run_id: Uuid,
        missed_heartbeats: i32,
    ) -> DriverResult<Vec<HolderRow>> {
        let rows = self
            .query(
                sql,
                &[
                    Param::Text(Some(application)),
                    Param::Text(Some(instance)),
                    Param::Uuid(run_id),
                    Param::Int(missed_heartbeats),
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                decode(row, |row| {
                    Ok(HolderRow {
                        run_id: row.text(0)?.unwrap_or_default(),
                        host: row.text(1)?.unwrap_or_default(),
                        process_id: row.int(2)?.unwrap_or_default(),
                        shares_name: row.bool(3)?.unwrap_or_default(),
                        last_seen_at: row.time(4)?,
                        seconds_since_seen: row.int(5)?.unwrap_or_default(),
                    })
                })
            })
            .collect()
    }

    /// `instance_register.sql`.
    pub async fn register_instance(
        &mut self,
        sql: &str,
        row: &InstanceRow<'_>,
    ) -> DriverResult<()> {
        self.execute(
            sql,
            &[
                Param::Uuid(row.run_id),
                Param::Text(Some(row.application)),
                Param::Text(Some(row.instance)),
                Param::Text(Some(row.host)),
                Param::BigInt(Some(row.process_id)),
                Param::Text(Some(row.version)),
                Param::Text(Some(row.queues)),
                Param::Text(Some(row.handlers)),
                Param::Int(i32::from(row.shares_name)),
                Param::Int(row.heartbeat_seconds),
            ],
        )
        .await
        .map(|_| ())
    }

    /// `instance_heartbeat.sql` or `instance_stop.sql`: `true` when the start's row was there.
    pub async fn touch_instance(&mut self, sql: &str, run_id: Uuid) -> DriverResult<bool> {
        Ok(self.execute(sql, &[Param::Uuid(run_id)]).await? > 0)
    }

    /// `instance_cleanup.sql`: how many rows of long-gone starts it deleted.
    pub async fn cleanup_instances(
        &mut self,
        sql: &str,
        older_than_seconds: i64,
    ) -> DriverResult<u64> {
        self.execute(sql, &[Param::BigInt(Some(older_than_seconds))])
            .await
    }

    /// `instance_list.sql`.
    pub async fn instances(&mut self, sql: &str) -> DriverResult<Vec<ListedInstance>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter()
            .map(|row| {
                decode(row, |row| {
                    Ok(ListedInstance {
                        run_id: row.text(0)?.unwrap_or_default(),
                        application: row.text(1)?.unwrap_or_default(),
                        instance: row.text(2)?.unwrap_or_default(),
                        host: row.text(3)?.unwrap_or_default(),
                        process_id: row.int(4)?.unwrap_or_default(),
                        version: row.text(5)?.unwrap_or_default(),
                        queues: row.text(6)?.unwrap_or_default(),
                        handlers: row.text(7)?.unwrap_or_default(),
                        shares_name: row.bool(8)?.unwrap_or_default(),
                        heartbeat_seconds: row.int(9)?.unwrap_or_default(),
                        started_at: row.time(10)?,
                        last_seen_at: row.time(11)?,
                        stopped_at: row.time(12)?,
                        seconds_since_seen: row.int(13)?.unwrap_or_default(),
                    })
                })
            })
            .collect()
    }
}
