//! Monitoring reports: every running bus writes, every `monitoring_interval`, one row per queue
//! it receives from into `NimbusMonitoring` (what it handled, failed and retried in the period,
//! its processing and critical times, the queue's length), so that one console draws the charts
//! of all instances from the database, with no scraping. Times travel as mergeable histograms
//! ([`Timings`]), so a percentile over several instances and periods is a true one, not an
//! average of percentiles. Written once over the driver.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::sql_transport::Inner;
use crate::driver::monitoring_statements::{ListedReport, ReportRow, REPORT_PARAMS};
use crate::driver::Driver;
use crate::error::Result;

/// The longest time a [`Timings`] tells apart (a day); longer ones count as a day.
const LONGEST_US: u64 = 24 * 3600 * 1_000_000;

/// How many queues' rows go into one INSERT (SQL Server takes at most 2,100 parameters).
const ROWS_PER_STATEMENT: usize = 100;

/// hdrhistogram's buckets of two significant digits from a microsecond to a day: what a time
/// is rounded to before it is counted. `None` only if hdrhistogram refused these constant
/// bounds, which it documents as valid: times are then counted to the microsecond.
fn buckets() -> Option<&'static Histogram<u64>> {
    static BUCKETS: OnceLock<Option<Histogram<u64>>> = OnceLock::new();
    BUCKETS
        .get_or_init(|| Histogram::new_with_bounds(1, LONGEST_US, 2).ok())
        .as_ref()
}

/// A histogram of durations (processing or critical times), each rounded to two significant
/// digits (within 1%) from a microsecond to a day: what a bus reports per queue and period,
/// and what the console merges over instances and periods before it reads a percentile. Kept
/// sparse (a count per distinct rounded time), so merging thousands of reports costs what they
/// hold, not a full table each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// Rounded time in microseconds → how many.
    counts: BTreeMap<u64, u64>,
}

impl Timings {
    /// No times yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one duration.
    pub fn record(&mut self, time: Duration) {
        let us = u64::try_from(time.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, LONGEST_US);
        let rounded = buckets().map_or(us, |b| b.median_equivalent(us));
        *self.counts.entry(rounded).or_default() += 1;
    }

    /// Adds every time of `other`.
    pub fn merge(&mut self, other: &Timings) {
        for (&us, &n) in &other.counts {
            *self.counts.entry(us).or_default() += n;
        }
    }

    /// How many times were counted.
    pub fn count(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The duration below which `percent` of the times fall (50.0: the median); `None` without
    /// any time.
    pub fn percentile(&self, percent: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        // The rank of the time asked for, 1-based: at least the first, at most the last.
        let rank = ((percent.clamp(0.0, 100.0) / 100.0) * total as f64).ceil() as u64;
        let rank = rank.clamp(1, total);
        let mut seen = 0u64;
        self.counts.iter().find_map(|(&us, &n)| {
            seen += n;
            (seen >= rank).then(|| Duration::from_micros(us))
        })
    }

    /// The text stored in `NimbusMonitoring`: `microseconds:count` pairs, space-separated, in
    /// increasing time (`"2500:14 3100:2"`); `None` without any time.
    pub fn encode(&self) -> Option<String> {
        if self.counts.is_empty() {
            return None;
        }
        let pairs: Vec<String> = self
            .counts
            .iter()
            .map(|(us, n)| format!("{us}:{n}"))
            .collect();
        Some(pairs.join(" "))
    }

    /// Reads what [`Timings::encode`] wrote; `None` for text that is not such pairs.
    pub fn decode(text: &str) -> Option<Timings> {
        let mut timings = Timings::new();
        for pair in text.split_whitespace() {
            let (us, n) = pair.split_once(':')?;
            let (us, n): (u64, u64) = (us.parse().ok()?, n.parse().ok()?);
            *timings.counts.entry(us.min(LONGEST_US)).or_default() += n;
        }
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
        assert!(text.len() < 20, "one rounded time: {text}");
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
        assert!(Timings::new().encode().is_none());
        assert!(Timings::decode("not a histogram").is_none());
        assert!(Timings::decode("12:x").is_none());
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
