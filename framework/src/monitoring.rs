//! What the console's Monitoring page charts, read from `NimbusMonitoring`: per queue and per
//! endpoint (application), over a window cut into equal steps, the messages handled, failed and
//! retried per second, the processing time (the handlers' run) and critical time (from the
//! sender's `TimeSent` to handled) at the 50th and 95th percentiles, and the queue length.
//!
//! Every receiving bus writes a report per queue every
//! [`monitoring_interval`](crate::BusBuilder::monitoring_interval); [`Database::monitoring`]
//! reads the reports of a window and combines them:
//!
//! - a rate is, for each instance, its messages over the time its reports in the step cover,
//!   summed over the instances (so a step that holds one report of an instance or two gives
//!   the same rate for the same flow);
//! - a percentile comes from the histograms of every report in the step, merged (a true
//!   percentile over all instances, not an average of theirs);
//! - a queue's length is the latest any instance saw in the step; an endpoint's, the sum over
//!   its queues.
//!
//! A step without any report has no point (a gap in the chart): no instance was running.
//!
//! ```no_run
//! # async fn show() -> nimbus::Result<()> {
//! use std::time::Duration;
//! let db = nimbus::admin::Database::connect("sqlite://shop.db").await?;
//! if let Some(view) = db.monitoring(Duration::from_secs(3600)).await? {
//!     for queue in &view.queues {
//!         println!("{}: {} handled, {:.1}/s", queue.name, queue.totals.handled, queue.totals.handled_per_second);
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! [`Database::monitoring`]: crate::admin::Database::monitoring

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::NaiveDateTime;

use crate::driver::monitoring_statements::ListedReport;
pub use crate::transport::monitoring::Timings;

/// How many steps a window is cut into, unless it is shorter than that many seconds.
pub const POINTS_PER_WINDOW: u32 = 60;

/// The combined reports of a window.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MonitoringView {
    /// How far back it reaches.
    pub window: Duration,
    /// How long each step (each point of a series) is.
    pub step: Duration,
    /// The database's time when it was read (UTC): the end of the last step.
    pub now: NaiveDateTime,
    /// One series per queue, by name.
    pub queues: Vec<Series>,
    /// One series per endpoint (application), by name: its queues together.
    pub endpoints: Vec<Series>,
}

/// One queue's or endpoint's points over the window, oldest first.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Series {
    /// The queue's or the endpoint's name.
    pub name: String,
    /// The instances that reported in the window.
    pub instances: Vec<String>,
    /// For a queue, the endpoints that receive from it; for an endpoint, its queues.
    pub related: Vec<String>,
    /// One per step; `None` where no instance reported in it.
    pub points: Vec<Option<Point>>,
    /// The whole window at once.
    pub totals: Point,
}

/// One step of a series (or a whole window).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Point {
    /// When the step starts (database time, UTC).
    pub start: Option<NaiveDateTime>,
    /// Messages handled and committed.
    pub handled: u64,
    /// Failed attempts.
    pub failed: u64,
    /// Messages put back for another attempt.
    pub retried: u64,
    /// Messages moved to the dead letters.
    pub dead_lettered: u64,
    /// Messages handled per second.
    pub handled_per_second: f64,
    /// Failed attempts per second.
    pub failed_per_second: f64,
    /// Retries per second.
    pub retried_per_second: f64,
    /// The median processing time (the handlers' run).
    pub processing_p50: Option<Duration>,
    /// The 95th percentile of processing times.
    pub processing_p95: Option<Duration>,
    /// The median critical time (from `TimeSent` to handled, across clocks).
    pub critical_p50: Option<Duration>,
    /// The 95th percentile of critical times.
    pub critical_p95: Option<Duration>,
    /// The queue length last seen (for an endpoint: over its queues).
    pub queue_length: Option<u64>,
}

/// The reports falling into one step (or a window) of one series.
#[derive(Default)]
struct Bucket {
    /// Per instance run: its messages and the periods (by report time) its reports covered.
    runs: HashMap<String, RunTotals>,
    processing: Timings,
    critical: Timings,
    /// Per queue, per run: the latest report's time and queue length.
    lengths: HashMap<String, HashMap<String, (NaiveDateTime, i64)>>,
}

/// One series being gathered: a bucket per step, one for the whole window, its instances and
/// related names.
type Gathered = (Vec<Bucket>, Bucket, Vec<String>, Vec<String>);

#[derive(Default)]
struct RunTotals {
    handled: u64,
    failed: u64,
    retried: u64,
    dead_lettered: u64,
    /// A report's period counts once, however many queues it covered.
    periods_ms: BTreeMap<NaiveDateTime, i64>,
}

impl Bucket {
    fn add(&mut self, r: &ListedReport) {
        let run = self.runs.entry(r.run_id.clone()).or_default();
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        run.handled += n(r.handled);
        run.failed += n(r.failed);
        run.retried += n(r.retried);
        run.dead_lettered += n(r.dead_lettered);
        run.periods_ms.insert(r.reported_at, r.period_ms.max(0));
        for (text, into) in [
            (&r.processing_times, &mut self.processing),
            (&r.critical_times, &mut self.critical),
        ] {
            if let Some(timings) = text.as_deref().and_then(Timings::decode) {
                into.merge(&timings);
            }
        }
        if let Some(length) = r.queue_length {
            let latest = self
                .lengths
                .entry(r.queue.clone())
                .or_default()
                .entry(r.run_id.clone())
                .or_insert((r.reported_at, length));
            if r.reported_at >= latest.0 {
                *latest = (r.reported_at, length);
            }
        }
    }

    /// Adds everything `other` gathered: a window's totals from its steps, without reading
    /// every report twice.
    fn absorb(&mut self, other: &Bucket) {
        for (id, theirs) in &other.runs {
            let run = self.runs.entry(id.clone()).or_default();
            run.handled += theirs.handled;
            run.failed += theirs.failed;
            run.retried += theirs.retried;
            run.dead_lettered += theirs.dead_lettered;
            run.periods_ms
                .extend(theirs.periods_ms.iter().map(|(k, v)| (*k, *v)));
        }
        self.processing.merge(&other.processing);
        self.critical.merge(&other.critical);
        for (queue, runs) in &other.lengths {
            let mine = self.lengths.entry(queue.clone()).or_default();
            for (run, &(at, length)) in runs {
                let latest = mine.entry(run.clone()).or_insert((at, length));
                if at >= latest.0 {
                    *latest = (at, length);
                }
            }
        }
    }

    fn point(&self, start: Option<NaiveDateTime>) -> Point {
        let mut p = Point {
            start,
            ..Point::default()
        };
        for run in self.runs.values() {
            p.handled += run.handled;
            p.failed += run.failed;
            p.retried += run.retried;
            p.dead_lettered += run.dead_lettered;
            let seconds = run.periods_ms.values().sum::<i64>() as f64 / 1000.0;
            if seconds > 0.0 {
                p.handled_per_second += run.handled as f64 / seconds;
                p.failed_per_second += run.failed as f64 / seconds;
                p.retried_per_second += run.retried as f64 / seconds;
            }
        }
        p.processing_p50 = self.processing.percentile(50.0);
        p.processing_p95 = self.processing.percentile(95.0);
        p.critical_p50 = self.critical.percentile(50.0);
        p.critical_p95 = self.critical.percentile(95.0);
        let lengths: Vec<u64> = self
            .lengths
            .values()
            .filter_map(|runs| {
                // The latest of the queue, whoever saw it.
                runs.values()
                    .max_by_key(|(at, _)| *at)
                    .map(|&(_, n)| u64::try_from(n).unwrap_or(0))
            })
            .collect();
        p.queue_length = (!lengths.is_empty()).then(|| lengths.iter().sum());
        p
    }
}

/// Combines `reports` (oldest first, each with its age at `now`) into the series of a window.
pub(crate) fn combine(reports: &[ListedReport], window: Duration) -> MonitoringView {
    let window = window.max(Duration::from_secs(1));
    let points = POINTS_PER_WINDOW
        .min(u32::try_from(window.as_secs()).unwrap_or(u32::MAX))
        .max(1);
    let step = (window / points).max(Duration::from_secs(1));
    // The database's time: the newest report's time plus its age (every row carries both).
    let now = reports
        .iter()
        .map(|r| r.reported_at + chrono::Duration::milliseconds(r.age_ms))
        .max()
        .unwrap_or_else(|| chrono::Utc::now().naive_utc());
    let window_ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let step_ms = i64::try_from(step.as_millis()).unwrap_or(i64::MAX).max(1);
    let start = now - chrono::Duration::milliseconds(window_ms);
    let index_of = |r: &ListedReport| -> Option<usize> {
        let since_start = (r.reported_at - start).num_milliseconds();
        if since_start < 0 {
            return None;
        }
        usize::try_from(since_start / step_ms)
            .ok()
            .map(|i| i.min(points as usize - 1))
    };
    let series = |key: &dyn Fn(&ListedReport) -> &str, related: &dyn Fn(&ListedReport) -> &str| {
        let mut by_name: BTreeMap<String, Gathered> = BTreeMap::new();
        for r in reports {
            let Some(index) = index_of(r) else { continue };
            let entry = by_name.entry(key(r).to_string()).or_insert_with(|| {
                let buckets = (0..points).map(|_| Bucket::default()).collect();
                (buckets, Bucket::default(), Vec::new(), Vec::new())
            });
            entry.0[index].add(r);
            if !entry.2.iter().any(|i| i == &r.instance) {
                entry.2.push(r.instance.clone());
            }
            let other = related(r);
            if !entry.3.iter().any(|o| o == other) {
                entry.3.push(other.to_string());
            }
        }
        by_name
            .into_iter()
            .map(|(name, (buckets, mut whole, mut instances, mut related))| {
                for bucket in &buckets {
                    whole.absorb(bucket);
                }
                instances.sort();
                related.sort();
                let points = buckets
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let at = start + chrono::Duration::milliseconds(step_ms * i as i64);
                        (!b.runs.is_empty()).then(|| b.point(Some(at)))
                    })
                    .collect();
                Series {
                    name,
                    instances,
                    related,
                    points,
                    totals: whole.point(Some(start)),
                }
            })
            .collect::<Vec<_>>()
    };
    MonitoringView {
        window,
        step,
        now,
        queues: series(&|r| &r.queue, &|r| &r.application),
        endpoints: series(&|r| &r.application, &|r| &r.queue),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_800_000_000 + seconds, 0)
            .expect("a time")
            .naive_utc()
    }

    fn report(run: &str, queue: &str, seconds: i64, now: i64, handled: i64) -> ListedReport {
        let mut times = Timings::new();
        for _ in 0..handled {
            times.record(Duration::from_millis(if run == "b" { 100 } else { 10 }));
        }
        ListedReport {
            reported_at: at(seconds),
            age_ms: (now - seconds) * 1000,
            run_id: run.into(),
            queue: queue.into(),
            application: "Shop".into(),
            instance: format!("host-{run}"),
            period_ms: 10_000,
            handled,
            failed: 1,
            retried: 1,
            dead_lettered: 0,
            queue_length: Some(seconds),
            processing_p50_us: None,
            processing_p95_us: None,
            critical_p50_us: None,
            critical_p95_us: None,
            processing_times: times.encode(),
            critical_times: None,
        }
    }

    #[test]
    fn rates_add_up_over_instances_whatever_the_reports_per_step() {
        // Two instances, each reporting every 10 s for a minute at 10 msg/s and 20 msg/s, into a
        // window of 60 s cut into 60 steps of 1 s: most steps hold no report of either.
        let now = 600;
        let mut reports = Vec::new();
        for k in 0..6 {
            reports.push(report("a", "Orders", now - 55 + k * 10, now, 100));
            reports.push(report("b", "Orders", now - 53 + k * 10, now, 200));
        }
        reports.sort_by_key(|r| r.reported_at);
        let view = combine(&reports, Duration::from_secs(60));
        assert_eq!(view.step, Duration::from_secs(1));
        assert_eq!(view.now, at(now));
        let orders = &view.queues[0];
        assert_eq!(orders.name, "Orders");
        assert_eq!(orders.instances, ["host-a", "host-b"]);
        assert_eq!(orders.related, ["Shop"]);
        assert_eq!(orders.totals.handled, 1800);
        assert!((orders.totals.handled_per_second - 30.0).abs() < 1e-9);
        let drawn: Vec<&Point> = orders.points.iter().flatten().collect();
        assert_eq!(drawn.len(), 12, "a point per report, gaps elsewhere");
        assert!((drawn[0].handled_per_second - 10.0).abs() < 1e-9);
        assert!((drawn[1].handled_per_second - 20.0).abs() < 1e-9);
        // 600 at 10 ms and 1,200 at 100 ms: the median is a slow one.
        let p50 = orders.totals.processing_p50.expect("a median");
        assert!(p50 >= Duration::from_millis(99), "{p50:?}");
        assert_eq!(orders.totals.queue_length, Some((now - 3) as u64));
        assert_eq!(view.endpoints[0].name, "Shop");
        assert_eq!(view.endpoints[0].related, ["Orders"]);
    }

    #[test]
    fn an_endpoint_counts_a_report_period_once_across_its_queues() {
        let now = 100;
        let reports = vec![
            report("a", "Orders", 95, now, 50),
            report("a", "Shop.host-a", 95, now, 50),
        ];
        let view = combine(&reports, Duration::from_secs(900));
        assert_eq!(view.step, Duration::from_secs(15));
        let shop = &view.endpoints[0];
        assert!((shop.totals.handled_per_second - 10.0).abs() < 1e-9);
        assert_eq!(shop.totals.queue_length, Some(190));
        assert_eq!(view.queues.len(), 2);
    }

    #[test]
    fn reports_older_than_the_window_are_left_out() {
        let now = 1000;
        let view = combine(
            &[report("a", "Orders", 100, now, 5)],
            Duration::from_secs(60),
        );
        assert!(view.queues.is_empty());
    }
}
