//! The statements of `NimbusMonitoring`, where every running bus writes what it handled per
//! queue in each report period: typed parameters in, typed rows out, as in [`super::statements`].

use chrono::NaiveDateTime;
use uuid::Uuid;

use super::{Driver, DriverError, DriverResult, FailureKind, Held, Param, Row};

/// How many parameters one queue's row of `monitoring_report.sql` takes.
pub(crate) const REPORT_PARAMS: usize = 16;

/// One queue's row for `monitoring_report.sql`.
#[derive(Debug, Clone)]
pub(crate) struct ReportRow {
    pub run_id: Uuid,
    pub queue: String,
    pub application: String,
    pub instance: String,
    pub period_ms: i64,
    pub handled: i64,
    pub failed: i64,
    pub retried: i64,
    pub dead_lettered: i64,
    pub queue_length: Option<i64>,
    pub processing_p50_us: Option<i64>,
    pub processing_p95_us: Option<i64>,
    pub critical_p50_us: Option<i64>,
    pub critical_p95_us: Option<i64>,
    /// The encoded histogram of processing times (see `transport::monitoring::Timings`).
    pub processing_times: Option<String>,
    /// The encoded histogram of critical times.
    pub critical_times: Option<String>,
}

impl ReportRow {
    /// The row's parameters, in `monitoring_report.sql`'s order.
    fn params(&self) -> [Param<'_>; REPORT_PARAMS] {
        [
            Param::Uuid(self.run_id),
            Param::Text(Some(&self.queue)),
            Param::Text(Some(&self.application)),
            Param::Text(Some(&self.instance)),
            Param::BigInt(Some(self.period_ms)),
            Param::BigInt(Some(self.handled)),
            Param::BigInt(Some(self.failed)),
            Param::BigInt(Some(self.retried)),
            Param::BigInt(Some(self.dead_lettered)),
            Param::BigInt(self.queue_length),
            Param::BigInt(self.processing_p50_us),
            Param::BigInt(self.processing_p95_us),
            Param::BigInt(self.critical_p50_us),
            Param::BigInt(self.critical_p95_us),
            Param::Text(self.processing_times.as_deref()),
            Param::Text(self.critical_times.as_deref()),
        ]
    }
}

/// A row of `monitoring_read.sql`: a [`ReportRow`] as written, with when (database time) and
/// how long ago.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedReport {
    pub reported_at: NaiveDateTime,
    pub age_ms: i64,
    pub run_id: String,
    pub queue: String,
    pub application: String,
    pub instance: String,
    pub period_ms: i64,
    pub handled: i64,
    pub failed: i64,
    pub retried: i64,
    pub dead_lettered: i64,
    pub queue_length: Option<i64>,
    pub processing_p50_us: Option<i64>,
    pub processing_p95_us: Option<i64>,
    pub critical_p50_us: Option<i64>,
    pub critical_p95_us: Option<i64>,
    pub processing_times: Option<String>,
    pub critical_times: Option<String>,
}

impl<D: Driver> Held<D> {
    /// `monitoring_report.sql` made into one INSERT of `rows` (by `multi_row`, rendered for
    /// `rows.len()` tuples): writes a bus's report of all its queues in one statement.
    pub async fn write_reports(&mut self, sql: &str, rows: &[ReportRow]) -> DriverResult<()> {
        let params: Vec<Param<'_>> = rows.iter().flat_map(ReportRow::params).collect();
        self.execute(sql, &params).await.map(|_| ())
    }

    /// `monitoring_read.sql`: the reports of the last `seconds`, oldest first.
    pub async fn read_reports(
        &mut self,
        sql: &str,
        seconds: i64,
    ) -> DriverResult<Vec<ListedReport>> {
        let rows = self.query(sql, &[Param::BigInt(Some(seconds))]).await?;
        rows.iter().map(listed_report).collect()
    }
}

fn listed_report(row: &Row) -> DriverResult<ListedReport> {
    let read = || -> Result<ListedReport, String> {
        let count = |i| row.int(i).map(Option::unwrap_or_default);
        Ok(ListedReport {
            reported_at: row
                .time(0)?
                .ok_or_else(|| "a report without ReportedAt".to_string())?,
            age_ms: count(1)?,
            run_id: row.text(2)?.unwrap_or_default(),
            queue: row.text(3)?.unwrap_or_default(),
            application: row.text(4)?.unwrap_or_default(),
            instance: row.text(5)?.unwrap_or_default(),
            period_ms: count(6)?,
            handled: count(7)?,
            failed: count(8)?,
            retried: count(9)?,
            dead_lettered: count(10)?,
            queue_length: row.int(11)?,
            processing_p50_us: row.int(12)?,
            processing_p95_us: row.int(13)?,
            critical_p50_us: row.int(14)?,
            critical_p95_us: row.int(15)?,
            processing_times: row.text(16)?,
            critical_times: row.text(17)?,
        })
    };
    read().map_err(|e| {
        DriverError::other(
            FailureKind::Permanent,
            format!("a row of NimbusMonitoring: {e}"),
        )
    })
}
