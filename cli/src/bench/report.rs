//! The benchmark's report: a table for people, or one JSON line with stable keys for scripts.

use serde_json::{json, Value};

use super::cpu::CpuPerMessage;
use super::message::ping_body;
use super::statements::{self, Breakdown, TOP};
use super::stats::{percentiles_ms, Round, Summary};
use super::workload::Rig;
use super::Results;
use crate::Failure;

/// Resident memory now and at its peak, from /proc (Linux; zeros elsewhere), in MiB.
pub fn memory_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
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

/// `value` to 1 decimal.
fn tenth(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// `value` to 3 decimals.
fn thousandth(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// CPU microseconds per message of both sides in the JSON report, as
/// (`process_cpu_us_per_msg`, `db_cpu_us_per_msg`, `process_switches_per_msg`), each
/// `{"nimbus": …, "bare": …}` with null where unknown.
fn cpu_json(nimbus: CpuPerMessage, bare: CpuPerMessage) -> (Value, Value, Value) {
    let us = |v: Option<f64>| v.map(tenth);
    let switches = |v: Option<f64>| v.map(|n| (n * 100.0).round() / 100.0);
    (
        json!({"nimbus": us(nimbus.process_us), "bare": us(bare.process_us)}),
        json!({"nimbus": us(nimbus.db_us), "bare": us(bare.db_us)}),
        json!({"nimbus": switches(nimbus.switches), "bare": switches(bare.switches)}),
    )
}

/// A workload's rounds in the JSON report.
fn rounds_json(rounds: &[Round]) -> Vec<Value> {
    rounds
        .iter()
        .map(|r| {
            let (process, db, switches) = cpu_json(r.nimbus_cpu, r.bare_cpu);
            json!({
                "first": if r.nimbus_first { "nimbus" } else { "bare" },
                "nimbus_per_s": r.nimbus.round(),
                "bare_per_s": r.bare.round(),
                "ratio": thousandth(r.ratio()),
                "pgmq_per_s": r.pgmq.map(|p| p.rate.round()),
                "process_cpu_us_per_msg": process,
                "db_cpu_us_per_msg": db,
                "process_switches_per_msg": switches,
            })
        })
        .collect()
}

/// One side's statements in the JSON report: totals per message over every statement it ran,
/// and the top [`TOP`] by execution time.
fn breakdown_json(b: &Breakdown) -> Value {
    let top: Vec<Value> = b
        .top(TOP)
        .into_iter()
        .map(|s| {
            json!({
                "query": s.query,
                "calls_per_msg": thousandth(s.calls_per_msg),
                "mean_ms": thousandth(s.mean_ms),
                "exec_us_per_msg": tenth(s.exec_us_per_msg),
                "rows_per_call": thousandth(s.rows_per_call),
            })
        })
        .collect();
    json!({
        "messages": b.messages,
        "calls_per_msg": thousandth(b.calls_per_msg()),
        "exec_us_per_msg": tenth(b.exec_us_per_msg()),
        "top": top,
    })
}

/// p50/p99/max latencies in the JSON report.
fn latency_json(latencies_us: &[u64]) -> Value {
    let [p50, p99, max] = percentiles_ms(latencies_us);
    json!({"p50": p50, "p99": p99, "max": max})
}

/// The report as `{"bench": {…}}`. Rates are messages per second (medians over the rounds),
/// ratios the framework's rate over the bare SQL's (the median of the rounds' ratios, and
/// their lowest and highest), CPU in microseconds per message (medians over the rounds; null
/// when unknown, `db_cpu` says why), latencies in milliseconds, memory in MiB.
fn to_json(rig: &Rig, results: &Results) -> Result<Value, Failure> {
    let s = &rig.settings;
    let workloads: Vec<Value> = results
        .rounds
        .iter()
        .map(|(workload, rounds)| {
            let sum = Summary::of(rounds);
            let (process, db, switches) = cpu_json(sum.nimbus_cpu, sum.bare_cpu);
            let statements = results
                .statements
                .iter()
                .find(|(w, ..)| w == workload)
                .filter(|_| s.statements)
                .map_or(Value::Null, |(_, nimbus, bare)| {
                    json!({"nimbus": breakdown_json(nimbus), "bare": breakdown_json(bare)})
                });
            let pgmq = sum.pgmq.map_or(Value::Null, |p| {
                let us = |v: Option<f64>| v.map(tenth);
                json!({
                    "per_s": p.rate.round(),
                    "ratio": thousandth(p.ratio),
                    "ratio_min": thousandth(p.ratio_min),
                    "ratio_max": thousandth(p.ratio_max),
                    "process_cpu_us_per_msg": us(p.cpu.process_us),
                    "db_cpu_us_per_msg": us(p.cpu.db_us),
                    "process_switches_per_msg": p.cpu.switches.map(|n| (n * 100.0).round() / 100.0),
                })
            });
            json!({
                "name": workload.key(),
                "nimbus_per_s": sum.nimbus.round(),
                "bare_per_s": sum.bare.round(),
                "ratio": thousandth(sum.ratio),
                "ratio_min": thousandth(sum.ratio_min),
                "ratio_max": thousandth(sum.ratio_max),
                "process_cpu_us_per_msg": process,
                "db_cpu_us_per_msg": db,
                "process_switches_per_msg": switches,
                "statements": statements,
                "pgmq": pgmq,
                "rounds": rounds_json(rounds),
            })
        })
        .collect();
    Ok(json!({
        "bench": {
            "backend": rig.target.backend,
            "layout": rig.target.layout.name(),
            "messages": s.messages,
            "rounds": s.rounds,
            "body_bytes": ping_body(s.body_size)?.len(),
            "concurrency": s.concurrency,
            "instances": s.instances,
            "batch": s.batch,
            "receive_batch": match s.receive_batch {
                Some(messages) => json!(messages),
                None => json!("adaptive"),
            },
            "pgmq_batch": s.pgmq_receive_batch(),
            "e2e_send_batch": s.e2e_send_batch,
            "statements": if s.statements { json!("pg_stat_statements") } else { Value::Null },
            "receivers": format!(
                "{} endpoint instance(s) competing on one queue, concurrency {} each",
                s.instances, s.concurrency
            ),
            "pgmq": rig.pgmq.as_ref().map(|p| p.version.clone()),
            "db_cpu": rig.cpu.db.key(),
            "db_cpu_note": rig.cpu.note(),
            "workloads": workloads,
            "latency_ms": {
                "nimbus": latency_json(&results.nimbus_latencies_us),
                "bare": latency_json(&results.bare_latencies_us),
                "pgmq": (!results.pgmq_latencies_us.is_empty())
                    .then(|| latency_json(&results.pgmq_latencies_us)),
            },
            "rss_mib_quarters": results.rss_quarters.iter().copied().map(tenth).collect::<Vec<_>>(),
            "rss_mib_rounds": results.rss_rounds.iter().copied().map(tenth).collect::<Vec<_>>(),
            "send_1_messages_per_commit": results.send_one_messages_per_commit().map(tenth),
            "peak_rss_mib": tenth(memory_mib().1),
        }
    }))
}

/// CPU microseconds per message, or `n/a`, right-aligned in `width`.
fn cpu_cell(value: Option<f64>, width: usize) -> String {
    match value {
        Some(us) => format!("{us:>width$.1}"),
        None => format!("{:>width$}", "n/a"),
    }
}

/// Context switches per message, right-aligned in `width`, or "n/a".
fn switches_cell(value: Option<f64>, width: usize) -> String {
    match value {
        Some(n) => format!("{n:>width$.2}"),
        None => format!("{:>width$}", "n/a"),
    }
}

/// The CPU per message of every workload, both sides, process and database.
fn print_cpu(rig: &Rig, results: &Results) {
    println!();
    println!(
        "{:<16} {:>14} {:>14} {:>14} {:>14} {:>15} {:>13}",
        "CPU us/msg",
        "process nimbus",
        "process bare",
        "db nimbus",
        "db bare",
        "switches nimbus",
        "switches bare"
    );
    for (workload, rounds) in &results.rounds {
        let sum = Summary::of(rounds);
        println!(
            "{:<16} {} {} {} {} {} {}",
            workload.label(),
            cpu_cell(sum.nimbus_cpu.process_us, 14),
            cpu_cell(sum.bare_cpu.process_us, 14),
            cpu_cell(sum.nimbus_cpu.db_us, 14),
            cpu_cell(sum.bare_cpu.db_us, 14),
            switches_cell(sum.nimbus_cpu.switches, 15),
            switches_cell(sum.bare_cpu.switches, 13),
        );
    }
    println!(
        "(medians over the rounds, each side's whole run including endpoint start and stop; \
         process = this benchmark process; switches = its context switches per message; {})",
        rig.cpu.note()
    );
}

/// The framework against pgmq, workload by workload.
fn print_pgmq(version: &str, results: &Results) {
    println!();
    println!(
        "{:<16} {:>14} {:>14} {:>8} {:>15} {:>12} {:>12}",
        format!("pgmq {version}"),
        "nimbus msg/s",
        "pgmq msg/s",
        "ratio",
        "ratio min-max",
        "process us",
        "db us"
    );
    for (workload, rounds) in &results.rounds {
        let sum = Summary::of(rounds);
        let Some(p) = sum.pgmq else { continue };
        println!(
            "{:<16} {:>14.0} {:>14.0} {:>7.0}% {:>14} {} {}",
            workload.label(),
            sum.nimbus,
            p.rate,
            100.0 * p.ratio,
            format!("{:.0}-{:.0}%", 100.0 * p.ratio_min, 100.0 * p.ratio_max),
            cpu_cell(p.cpu.process_us, 12),
            cpu_cell(p.cpu.db_us, 12),
        );
    }
    let [p50, p99, max] = percentiles_ms(&results.pgmq_latencies_us);
    println!(
        "(ratio = nimbus / pgmq; pgmq's CPU per message beside it; its end-to-end latency p50 \
         {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms)"
    );
}

/// The statements of every workload and side, compactly: totals, then the top ones.
fn print_statements(rig: &Rig, results: &Results) {
    println!();
    println!(
        "statements (pg_stat_statements, summed over the rounds; exec = the server's execution \
         time, wall clock; top {TOP} by exec per side):"
    );
    let schema = rig.target.schema.as_deref().or(Some("public"));
    for (workload, nimbus, bare) in &results.statements {
        for (side, b) in [("nimbus", nimbus), ("bare", bare)] {
            println!(
                "{} {side}: {:.1} us exec/msg, {:.2} calls/msg over {} messages",
                workload.label(),
                b.exec_us_per_msg(),
                b.calls_per_msg(),
                b.messages
            );
            println!(
                "  {:>9} {:>8} {:>10} {:>9}  statement",
                "calls/msg", "mean ms", "us/msg", "rows/call"
            );
            for st in b.top(TOP) {
                println!(
                    "  {:>9.3} {:>8.3} {:>10.1} {:>9.2}  {}",
                    st.calls_per_msg,
                    st.mean_ms,
                    st.exec_us_per_msg,
                    st.rows_per_call,
                    statements::shorten(&st.query, schema, &rig.queues.run, 90)
                );
            }
        }
    }
}

/// The report as a table, with the CPU, latency and memory below it.
fn print_table(rig: &Rig, results: &Results) -> Result<(), Failure> {
    let s = &rig.settings;
    println!(
        "{} ({} layout): {} rounds of {} messages of ~{} bytes per workload and side, \
         concurrency {}, batch {}, receive batch {} (pgmq: {}), end-to-end senders {} \
         message(s) per transaction",
        rig.target.backend,
        rig.target.layout.name(),
        s.rounds,
        s.messages,
        ping_body(s.body_size)?.len(),
        s.concurrency,
        s.batch,
        s.receive_batch
            .map_or_else(|| "adaptive".to_string(), |n| n.to_string()),
        s.pgmq_receive_batch(),
        s.e2e_send_batch
    );
    println!(
        "receive+handle and end to end: {} endpoint instance(s) competing on one queue, \
         concurrency {} each (bare SQL: {} receive loops)",
        s.instances,
        s.concurrency,
        s.instances * s.concurrency
    );
    println!(
        "interleaved: each round starts with the next side in turn (nimbus, bare{})",
        if rig.pgmq.is_some() { ", pgmq" } else { "" }
    );
    println!();
    println!(
        "{:<16} {:>14} {:>14} {:>8} {:>15}",
        "workload", "nimbus msg/s", "bare msg/s", "ratio", "ratio min-max"
    );
    for (workload, rounds) in &results.rounds {
        let sum = Summary::of(rounds);
        println!(
            "{:<16} {:>14.0} {:>14.0} {:>7.0}% {:>14}",
            workload.label(),
            sum.nimbus,
            sum.bare,
            100.0 * sum.ratio,
            format!("{:.0}-{:.0}%", 100.0 * sum.ratio_min, 100.0 * sum.ratio_max),
        );
    }
    println!("(medians over the rounds; ratio = nimbus / bare, the median of the rounds' ratios)");
    if let Some(per_commit) = results.send_one_messages_per_commit() {
        println!(
            "shared commits: the framework's send 1/tx took {per_commit:.1} messages per commit \
             (concurrent sends of a bus share one; the bare side commits each)"
        );
    }
    if let Some(pgmq) = &rig.pgmq {
        print_pgmq(&pgmq.version, results);
    }
    print_cpu(rig, results);
    if s.statements {
        print_statements(rig, results);
    }
    let [fw50, fw99, fwmax] = percentiles_ms(&results.nimbus_latencies_us);
    let [b50, b99, bmax] = percentiles_ms(&results.bare_latencies_us);
    println!(
        "latency send->handled (end to end, every round): nimbus p50 {fw50:.1} ms, p99 {fw99:.1} \
         ms, max {fwmax:.1} ms; bare p50 {b50:.1} ms, p99 {b99:.1} ms, max {bmax:.1} ms"
    );
    let tenths = |v: &[f64]| v.iter().copied().map(tenth).collect::<Vec<_>>();
    println!(
        "memory: RSS at 25/50/75/100% of the last round's end to end {:?} MiB; after each round \
         {:?} MiB; peak {:.1} MiB",
        tenths(&results.rss_quarters),
        tenths(&results.rss_rounds),
        memory_mib().1
    );
    Ok(())
}
