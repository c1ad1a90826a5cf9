//! Monitoring reports: every running bus writes, every `monitoring_interval`, one row per queue
//! it receives from into `NimbusMonitoring` (what it handled, failed and retried in the period,
//! its processing and critical times, the queue's length), so that one console draws the charts
//! of all instances from the database, with no scraping. Times travel as mergeable histograms
//! ([`Timings`]), so a percentile over several instances and periods is a true one, not an
//! average of percentiles. Written once over the driver.

use std::time::Duration;

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

use super::sql_transport::Inner;
use crate::driver::monitoring_statements::{ListedReport, ReportRow, REPORT_PARAMS};
use crate::driver::Driver;
use crate::error::Result;

/// The longest time a [`Timings`] tells apart (a day); longer ones count as a day.
const LONGEST_US: u64 = 24 * 3600 * 1_000_000;

/// How many queues' rows go into one INSERT (SQL Server takes at most 2,100 parameters).
const ROWS_PER_STATEMENT: usize = 100;

/// A histogram of durations (processing or critical times), to two significant digits from a
/// microsecond to a day: what a bus reports per queue and period, and what the console merges
/// over instances and periods before it reads a percentile.
#[derive(Clone, Debug)]
pub struct Timings {
    /// `None` only if hdrhistogram refused the constant bounds below, which it documents as
    /// valid: then nothing is counted, and the reports carry no times.
    histogram: Option<Histogram<u64>>,
}

impl Default for Timings {
    fn default() -> Self {
        Self::new()
    }
}

impl Timings {
    /// No times yet.
    pub fn new() -> Self {
        Timings {
            histogram: Histogram::new_with_bounds(1, LONGEST_US, 2).ok(),
        }
    }

    /// Counts one duration.
    pub fn record(&mut self, time: Duration) {
        let us = u64::try_from(time.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, LONGEST_US);
        if let Some(h) = &mut self.histogram {
            h.saturating_record(us);
        }
    }

    /// Adds every time of `other`.
    pub fn merge(&mut self, other: &Timings) {
        if let (Some(mine), Some(theirs)) = (&mut self.histogram, &other.histogram) {
            // Both have the same bounds, and a refusal (times beyond them) keeps what is here.
            let _ = mine.add(theirs);
        }
    }

    /// How many times were counted.
    pub fn count(&self) -> u64 {
        self.histogram.as_ref().map_or(0, Histogram::len)
    }

    /// The duration below which `percent` of the times fall (50.0: the median); `None` without
    /// any time.
    pub fn percentile(&self, percent: f64) -> Option<Duration> {
        let h = self.histogram.as_ref().filter(|h| !h.is_empty())?;
        Some(Duration::from_micros(
            h.value_at_percentile(percent.clamp(0.0, 100.0)),
        ))
    }

    /// The text stored in `NimbusMonitoring` (hdrhistogram's V2 encoding, base64); `None`
    /// without any time.
    pub fn encode(&self) -> Option<String> {
        let h = self.histogram.as_ref().filter(|h| !h.is_empty())?;
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(h, &mut bytes).ok()?;
        Some(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Reads what [`Timings::encode`] wrote; `None` for text that is not such a histogram.
    pub fn decode(text: &str) -> Option<Timings> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()?;
        let read: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .ok()?;
        let mut timings = Timings::new();
        timings.histogram.as_mut()?.add(&read).ok()?;
        Some(timings)
    }
}

impl<D: Driver> Inner<D> {
    /// Writes `rows` (one report of a bus, a row per queue); `Ok(false)` when
    /// `NimbusMonitoring` does not exist (a schema made before it, with auto-create off).
    pub(super) async fn write_monitoring(&self, rows: &[ReportRow]) -> Result<bool> {
        let cx = &self.cx;
        let purpose = "writing this instance's monitoring report";
        let mut c = self.connection(purpose).await?;
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let sql = crate::sql::multi_row_insert(
                self.driver.dialect(),
                &cx.sql.monitoring_report,
                REPORT_PARAMS,
                chunk.len(),
            )
            .unwrap_or_else(|| cx.sql.monitoring_report.clone());
            if let Err(e) = c.write_reports(&sql, chunk).await {
                if !cx.table_exists(&mut c, "NimbusMonitoring").await? {
                    c.release();
                    return Ok(false);
                }
                return Err(cx.db(purpose)(e));
            }
        }
        c.release();
        Ok(true)
    }

    /// The reports of the last `window`, oldest first; `None` when `NimbusMonitoring` does not
    /// exist.
    pub(super) async fn monitoring_reports(
        &self,
        window: Duration,
    ) -> Result<Option<Vec<ListedReport>>> {
        let cx = &self.cx;
        let purpose = "reading the monitoring reports";
        let mut c = self.connection(purpose).await?;
        if !cx.table_exists(&mut c, "NimbusMonitoring").await? {
            c.release();
            return Ok(None);
        }
        let seconds = i64::try_from(window.as_secs()).unwrap_or(i64::MAX);
        let rows = c
            .read_reports(&cx.sql.monitoring_read, seconds)
            .await
            .map_err(cx.db(purpose))?;
        c.release();
        Ok(Some(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_survive_their_text_and_merge_into_true_percentiles() {
        let mut fast = Timings::new();
        for ms in 1..=90 {
            fast.record(Duration::from_millis(ms));
        }
        let mut slow = Timings::new();
        for _ in 0..10 {
            slow.record(Duration::from_secs(2));
        }
        let text = slow.encode().expect("an encoding");
        assert!(text.len() < 200, "{} characters", text.len());
        let mut merged = Timings::decode(&fast.encode().expect("an encoding")).expect("decoded");
        merged.merge(&Timings::decode(&text).expect("decoded"));
        assert_eq!(merged.count(), 100);
        let p50 = merged.percentile(50.0).expect("a median");
        assert!(
            (Duration::from_millis(49)..=Duration::from_millis(51)).contains(&p50),
            "{p50:?}"
        );
        // The 95th of 100 is one of the ten slow ones: an average of the two p95s would not be.
        let p95 = merged.percentile(95.0).expect("a p95");
        assert!(
            (Duration::from_millis(1980)..=Duration::from_millis(2020)).contains(&p95),
            "{p95:?}"
        );
        assert!(Timings::new().percentile(50.0).is_none());
        assert!(Timings::decode("not a histogram").is_none());
    }

    #[test]
    fn times_past_a_day_count_as_a_day() {
        let mut t = Timings::new();
        t.record(Duration::from_secs(3 * 24 * 3600));
        t.record(Duration::ZERO);
        assert_eq!(t.count(), 2);
        let top = t.percentile(100.0).expect("a maximum");
        assert!(top <= Duration::from_secs(24 * 3600 + 900), "{top:?}");
    }
}
