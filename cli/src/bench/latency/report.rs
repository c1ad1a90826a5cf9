//! The latency report: a table for people, or one JSON line `{"bench_latency":{…}}` with stable
//! keys for scripts.

use serde_json::{json, Value};

use super::{Results, Rig, Series};
use crate::bench::message::ping_body;
use crate::bench::stats::percentiles_ms;
use crate::Failure;

/// What wakes a receiver in another process on `backend`: its JSON name and its words.
fn cross_process_wakeup(backend: &str) -> (&'static str, &'static str) {
    match backend {
        "postgres" => ("listen_notify", "PostgreSQL's LISTEN/NOTIFY wakes it"),
        "sqlite" => (
            "data_version_watch",
            "a watcher of the file's data_version wakes it (looks every 10 ms)",
        ),
        _ => (
            "idle_poll",
            "nothing announces a send on this database: an idle receiver looks every idle_poll \
             (10 ms by default)",
        ),
    }
}

/// Prints `results`: one JSON line with `json`, a table otherwise.
pub fn print(rig: &Rig, results: &Results, json: bool) -> Result<(), Failure> {
    if json {
        println!("{}", to_json(rig, results)?);
    } else {
        print_table(rig, results)?;
    }
    Ok(())
}

/// A series in the JSON report: percentiles in milliseconds over every round, the count, each
/// round's median, and the slowest warm-up message (left out of the rest).
fn series_json(results: &Results, series: Series) -> Value {
    let [p50, p99, max] = percentiles_ms(&results.samples(series));
    let p50_rounds: Vec<f64> = results
        .rounds(series)
        .iter()
        .map(|round| percentiles_ms(&round.measured)[0])
        .collect();
    json!({
        "p50": p50,
        "p99": p99,
        "max": max,
        "samples": results.samples(series).len(),
        "p50_rounds": p50_rounds,
        "warm_up_max": percentiles_ms(&results.warm_up(series))[2],
    })
}

/// The report as `{"bench_latency": {…}}`; latencies in milliseconds under `latency_ms`, one
/// object per series (`same_process`, `cross_process`, `request_response`, `bare_round_trip`).
fn to_json(rig: &Rig, results: &Results) -> Result<Value, Failure> {
    let s = &rig.settings;
    let series: serde_json::Map<String, Value> = Series::ALL
        .iter()
        .map(|series| (series.key().to_string(), series_json(results, *series)))
        .collect();
    Ok(json!({
        "bench_latency": {
            "backend": rig.target.backend,
            "layout": rig.target.layout.name(),
            "rate_per_s": rig.rate,
            "messages": s.messages,
            "rounds": s.rounds,
            "body_bytes": ping_body(s.body_size)?.len(),
            "concurrency": s.concurrency,
            "peek_delay_ms": s.peek_delay.as_millis(),
            "warm_up": s.warm_up,
            "cross_process_wakeup": cross_process_wakeup(rig.target.backend).0,
            "latency_ms": series,
        }
    }))
}

/// The report as a table.
fn print_table(rig: &Rig, results: &Results) -> Result<(), Failure> {
    let s = &rig.settings;
    println!(
        "{} ({} layout): latency at {} msg/s, {} rounds of {} messages of ~{} bytes per series, \
         idle endpoints (peek delay {}), concurrency {}",
        rig.target.backend,
        rig.target.layout.name(),
        rig.rate,
        s.rounds,
        s.messages,
        ping_body(s.body_size)?.len(),
        humantime::format_duration(s.peek_delay),
        s.concurrency,
    );
    println!(
        "other process: {}",
        cross_process_wakeup(rig.target.backend).1
    );
    println!();
    println!(
        "{:<30} {:>9} {:>9} {:>9} {:>8} {:>14}",
        "series", "p50 ms", "p99 ms", "max ms", "samples", "warm-up max ms"
    );
    for series in Series::ALL {
        let samples = results.samples(series);
        let [p50, p99, max] = percentiles_ms(&samples);
        println!(
            "{:<30} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>14.1}",
            series.label(),
            p50,
            p99,
            max,
            samples.len(),
            percentiles_ms(&results.warm_up(series))[2],
        );
    }
    println!(
        "(percentiles over every round; rounds alternate the order of the series; each series \
         first sends {} message(s) to warm up, left out of the percentiles: their slowest is \
         the last column; the bare round trip is one INSERT and the skip-locked DELETE of that \
         row on the same pool)",
        s.warm_up
    );
    println!("targets: send->handled p50 < 20 ms and p99 < 100 ms; request/response p50 < 40 ms");
    Ok(())
}
