//! The Monitoring page: per endpoint and per queue over 15 minutes, an hour or 6 hours, the
//! messages handled, failed and retried per second, processing and critical times (p50, p95)
//! and queue length, from the reports every running bus writes into `NimbusMonitoring`. One
//! read per window serves every page for a refresh interval.

use std::sync::Arc;
use std::time::{Duration, Instant};

use maud::{html, Markup};
use nimbus::monitoring::{MonitoringView, Point, Series};

use super::charts::{self, Chart, Line};
use super::pages::{encode, layout};
use super::state::{Console, MonitoringRead as Read};

/// The windows an operator can choose, as (query value, label, length).
pub const WINDOWS: [(&str, &str, Duration); 3] = [
    ("15m", "15 minutes", Duration::from_secs(15 * 60)),
    ("1h", "1 hour", Duration::from_secs(3600)),
    ("6h", "6 hours", Duration::from_secs(6 * 3600)),
];

/// What the page shows.
pub struct Selection<'a> {
    pub window: &'a str,
    pub queue: Option<&'a str>,
    pub endpoint: Option<&'a str>,
}

/// The reports of `window`, read at most once per refresh interval, and per step of the
/// window's charts (6 minutes over 6 hours): a longer window's points change only that often,
/// and each read of it moves many rows.
async fn read(console: &Console, window: &'static str, length: Duration) -> Read {
    let step = length / nimbus::monitoring::POINTS_PER_WINDOW;
    let fresh = |at: &Instant| at.elapsed() < console.settings.refresh.max(step);
    if let Some((at, view)) = console
        .monitoring
        .reads
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(window)
    {
        if fresh(at) {
            return view.clone();
        }
    }
    let view = Arc::new(
        console
            .db
            .monitoring(length)
            .await
            .map_err(|e| e.to_string()),
    );
    console
        .monitoring
        .reads
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(window, (Instant::now(), view.clone()));
    view
}

/// The page.
pub async fn page(console: &Console, selection: Selection<'_>) -> Markup {
    let (window, label, length) = WINDOWS
        .iter()
        .find(|(value, _, _)| *value == selection.window)
        .copied()
        .unwrap_or(WINDOWS[0]);
    let view = read(console, window, length).await;
    let link = |w: &str| {
        let mut l = format!("/monitoring?window={w}");
        if let Some(q) = selection.queue {
            l.push_str(&format!("&queue={}", encode(q)));
        } else if let Some(e) = selection.endpoint {
            l.push_str(&format!("&endpoint={}", encode(e)));
        }
        l
    };
    let content = html! {
        p.windows {
            "Over the last "
            @for (value, text, _) in WINDOWS {
                @if value == window { strong { (text) } } @else { a href=(link(value)) { (text) } }
                " "
            }
        }
        @match view.as_ref() {
            Err(e) => p.error { "Reading the monitoring reports failed: " (e) },
            Ok(None) => p #monitoring-missing {
                "This database has no NimbusMonitoring table, where running buses write what they handle. Buses of this version create it when they start (with auto-create), or run "
                code { "nimbus schema apply" } "."
            },
            Ok(Some(view)) => (charts_and_tables(view, window, label, &selection)),
        }
        p.hint {
            "Every receiving bus writes, every 10 s by default (" code { "monitoring_interval" } "), what it handled per queue; reports are kept 6 hours (" code { "monitoring_retention" } "). Rates add up the instances; percentiles are over every message of every instance in the step. Critical time runs from the sender's clock (" code { "TimeSent" } ") to handled; queue length is the latest any instance saw. A gap: no instance reported."
        }
    };
    layout(console, "Monitoring", None, content)
}

fn charts_and_tables(view: &MonitoringView, window: &str, label: &str, s: &Selection) -> Markup {
    let chosen = match (s.queue, s.endpoint) {
        (Some(q), _) => view
            .queues
            .iter()
            .find(|x| x.name == q)
            .map(|x| ("Queue", x)),
        (None, Some(e)) => view
            .endpoints
            .iter()
            .find(|x| x.name == e)
            .map(|x| ("Endpoint", x)),
        (None, None) => view.endpoints.first().map(|x| ("Endpoint", x)),
    };
    html! {
        @if view.queues.is_empty() {
            p #no-reports { "No reports in the last " (label) ": no receiving bus ran, or they run with monitoring off." }
        }
        @if let Some((kind, series)) = chosen {
            section #charts data-kind=(kind) data-name=(series.name) data-total-handled=(series.totals.handled) {
                h2 { (kind) " " (series.name) }
                p.muted {
                    (series.instances.len()) " instance(s): " (series.instances.join(", "))
                    @if kind == "Queue" { " · received by " } @else { " · queues " }
                    (series.related.join(", "))
                    " · a point every " (humantime::format_duration(view.step))
                }
                div.charts { (four_charts(view, series)) }
            }
        } @else if let Some(name) = s.queue.or(s.endpoint) {
            p #no-series { "No reports of " (name) " in the last " (label) "." }
        }
        @if !view.endpoints.is_empty() {
            h2 { "Endpoints" }
            (summary_table("endpoints", &view.endpoints, window, "endpoint"))
            h2 { "Queues" }
            (summary_table("monitored-queues", &view.queues, window, "queue"))
        }
    }
}

fn four_charts(view: &MonitoringView, series: &Series) -> Markup {
    let start = view.now - chrono::Duration::from_std(view.window).unwrap_or_default();
    let step = chrono::Duration::from_std(view.step).unwrap_or_default();
    let values = |f: &dyn Fn(&Point) -> Option<f64>| -> Vec<Option<f64>> {
        series
            .points
            .iter()
            .map(|p| p.as_ref().and_then(f))
            .collect()
    };
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    let chart = |id, title, unit, lines| {
        charts::draw(&Chart {
            id,
            title,
            unit,
            start,
            step,
            lines,
        })
    };
    html! {
        (chart("throughput", "Messages per second", "msg/s", vec![
            Line { name: "handled", colour: "#2e6fb7", values: values(&|p| Some(p.handled_per_second)) },
            Line { name: "failed", colour: "#c0392b", values: values(&|p| Some(p.failed_per_second)) },
            Line { name: "retried", colour: "#d68910", values: values(&|p| Some(p.retried_per_second)) },
        ]))
        (chart("processing", "Processing time (handlers)", "ms", vec![
            Line { name: "p50", colour: "#2e6fb7", values: values(&|p| ms(p.processing_p50)) },
            Line { name: "p95", colour: "#7d3c98", values: values(&|p| ms(p.processing_p95)) },
        ]))
        (chart("critical", "Critical time (sent to handled)", "ms", vec![
            Line { name: "p50", colour: "#2e6fb7", values: values(&|p| ms(p.critical_p50)) },
            Line { name: "p95", colour: "#7d3c98", values: values(&|p| ms(p.critical_p95)) },
        ]))
        (chart("length", "Queue length", "messages", vec![
            Line { name: "length", colour: "#117a65", values: values(&|p| p.queue_length.map(|n| n as f64)) },
        ]))
    }
}

fn summary_table(id: &str, all: &[Series], window: &str, param: &str) -> Markup {
    let ms = |d: Option<Duration>| {
        d.map(|d| format!("{} ms", charts::label(round3(d.as_secs_f64() * 1000.0))))
            .unwrap_or_else(|| "-".into())
    };
    let rate = |r: f64| charts::label(round3(r));
    html! {
        table id=(id) {
            thead { tr {
                th { "Name" } th.num { "Instances" } th.num { "Handled" } th.num { "Handled/s" }
                th.num { "Failed/s" } th.num { "Retried/s" } th.num { "Processing p95" }
                th.num { "Critical p95" } th.num { "Length" }
            } }
            tbody {
                @for s in all {
                    tr data-name=(s.name) {
                        td { a href={"/monitoring?window=" (window) "&" (param) "=" (encode(&s.name))} { (s.name) } }
                        td.num { (s.instances.len()) }
                        td.num.handled { (s.totals.handled) }
                        td.num { (rate(s.totals.handled_per_second)) }
                        td.num { (rate(s.totals.failed_per_second)) }
                        td.num { (rate(s.totals.retried_per_second)) }
                        td.num { (ms(s.totals.processing_p95)) }
                        td.num { (ms(s.totals.critical_p95)) }
                        td.num { (s.totals.queue_length.map(|n| n.to_string()).unwrap_or_else(|| "-".into())) }
                    }
                }
            }
        }
    }
}

/// `value` to three significant digits.
fn round3(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powf(2.0 - value.abs().log10().floor());
    (value * scale).round() / scale
}
