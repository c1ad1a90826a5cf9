//! `nimbus bench --handler-shapes`: the default receive against one message per transaction
//! (`receive_batch(1)`), for handlers of several shapes, in interleaved rounds.
//!
//! Each round runs, per shape, the default and then `receive_batch(1)` (odd rounds) or the
//! other way round (even rounds). A run queues `--messages` messages first, then starts one
//! endpoint with `--concurrency` receivers and times it from its start until every message was
//! handled. A shape's ratio is the median of its rounds' default ÷ one-at-a-time rates, with the
//! lowest and highest.
//!
//! The shapes:
//! * `none`: no SQL;
//! * `disjoint`: `UPDATE … SET n = n + 1 WHERE id = ?` on a row of the message's own;
//! * `hot:N`: the same on one of N shared rows (a stock count, an account balance);
//! * `slow:DURATION`: no SQL, sleeps that long;
//! * `failing:P`: no SQL, P % of the messages fail their first attempt (retried at once).

use std::time::{Duration, Instant};

use nimbus::admin::Database;
use nimbus::{Bus, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::drive::wait_for;
use super::message::Tally;
use super::stats::median;
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// The most counter rows the SQL Server side makes (five digits).
const SQL_SERVER_MOST_ROWS: usize = 100_000;

/// A handler shape (`--handler-shapes`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// No SQL.
    None,
    /// An update of a row of the message's own.
    Disjoint,
    /// An update of one of this many shared rows.
    Hot(u32),
    /// No SQL; sleeps this long.
    Slow(Duration),
    /// No SQL; this share (0–100) of the messages fails its first attempt.
    Failing(u32),
}

impl Shape {
    /// Its name as `--handler-shapes` takes it.
    pub fn name(self) -> String {
        match self {
            Shape::None => "none".into(),
            Shape::Disjoint => "disjoint".into(),
            Shape::Hot(rows) => format!("hot:{rows}"),
            Shape::Slow(d) => format!("slow:{}", humantime::format_duration(d)),
            Shape::Failing(p) => format!("failing:{p}"),
        }
    }

    /// Rows of the counters table it updates (none without SQL).
    fn rows(self, messages: usize) -> Option<u32> {
        match self {
            Shape::Disjoint => Some(u32::try_from(messages).unwrap_or(u32::MAX)),
            Shape::Hot(rows) => Some(rows),
            Shape::None | Shape::Slow(_) | Shape::Failing(_) => None,
        }
    }
}

/// Parses a shape: `none`, `disjoint`, `hot:N`, `slow:DURATION`, `failing:P`.
pub fn shape(text: &str) -> Result<Shape, String> {
    let (kind, arg) = text.split_once(':').unwrap_or((text, ""));
    let bad = |what: &str| format!("{text:?}: {what}");
    match (kind, arg) {
        ("none", "") => Ok(Shape::None),
        ("disjoint", "") => Ok(Shape::Disjoint),
        ("hot", n) => match n.parse::<u32>() {
            Ok(rows) if rows >= 1 => Ok(Shape::Hot(rows)),
            _ => Err(bad("write hot:N with N hot rows, at least 1 (hot:4)")),
        },
        ("slow", d) => humantime::parse_duration(d)
            .map(Shape::Slow)
            .map_err(|e| bad(&format!("{e}; write slow:20ms"))),
        ("failing", p) => match p.parse::<u32>() {
            Ok(share) if share <= 100 => Ok(Shape::Failing(share)),
            _ => Err(bad(
                "write failing:P with P the percentage that fails once (failing:10)",
            )),
        },
        _ => Err(bad(
            "the shapes are none, disjoint, hot:N, slow:DURATION and failing:P",
        )),
    }
}

/// The shape's message: which counter row it updates, and its number.
#[derive(Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Bench.ShapeWork")]
struct Work {
    n: u32,
    row: u32,
}

/// Runs the shape's work for each message and counts the handled ones.
struct ShapeHandler {
    shape: Shape,
    update: String,
    handled: Tally,
}

impl Handler<Work> for ShapeHandler {
    async fn handle(&self, m: Work, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        match self.shape {
            Shape::None => {}
            Shape::Slow(d) => tokio::time::sleep(d).await,
            Shape::Failing(share) => {
                // Spread evenly: of the first N messages, N × P / 100 (rounded down) fail.
                let (n, share) = (u64::from(m.n), u64::from(share));
                let fails = (n + 1) * share / 100 > n * share / 100;
                if fails && ctx.attempt() == 1 {
                    return Err("fails its first attempt, as asked".into());
                }
            }
            Shape::Disjoint | Shape::Hot(_) => update(ctx, &self.update, m.row).await?,
        }
        self.handled.record_latency_us(0);
        Ok(())
    }
}

/// Adds one to counter `row` through the receive's own transaction.
async fn update(ctx: &mut HandlerContext, sql: &str, row: u32) -> Result<(), HandlerError> {
    let row = i32::try_from(row).unwrap_or(i32::MAX);
    match ctx.database() {
        #[cfg(feature = "postgres")]
        Some(nimbus::DatabaseKind::Postgres) => {
            ctx.postgres().await?.execute(sql, &[&row]).await?;
        }
        #[cfg(feature = "sqlserver")]
        Some(nimbus::DatabaseKind::SqlServer) => {
            ctx.sql_server().await?.execute(sql, &[&row]).await?;
        }
        #[cfg(feature = "sqlite")]
        Some(nimbus::DatabaseKind::Sqlite) => {
            let sql = sql.to_string();
            ctx.sqlite(move |db| db.execute(&sql, [row])).await?;
        }
        other => {
            return Err(format!("no handler SQL for the database {other:?} in this build").into())
        }
    }
    Ok(())
}

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Run {
    rate: f64,
    conflicts: u64,
    failed: u64,
}

/// A shape's rounds: (default, one at a time) per round.
struct ShapeResult {
    shape: Shape,
    rounds: Vec<(Run, Run)>,
}

impl ShapeResult {
    fn ratios(&self) -> Vec<f64> {
        self.rounds
            .iter()
            .map(|(d, one)| d.rate / one.rate)
            .collect()
    }
}

/// Runs every shape's rounds on `target` and prints the table (or one JSON line).
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    shapes: Vec<Shape>,
    json: bool,
) -> Result<(), Failure> {
    // SQL Server's counters are numbered by a cross join of five digits.
    if target.backend == "sqlserver"
        && shapes.contains(&Shape::Disjoint)
        && settings.messages > SQL_SERVER_MOST_ROWS
    {
        return Err(format!(
            "--handler-shapes disjoint on SQL Server takes at most {SQL_SERVER_MOST_ROWS} \
             messages (a row each; more is not supported yet). Fix: lower --messages"
        )
        .into());
    }
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let table = admin.qualified_table(&format!("BenchCounters{run_id}"));
    let queue = format!("BenchShapes{run_id}");
    let sender_queue = format!("{queue}Sender");
    let sender = builder(&target, settings.concurrency, &sender_queue, "sender")
        .route::<Work>(queue.clone())
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let measured = all_rounds(
        &target, &admin, &settings, &shapes, &sender, &table, &queue, json,
    )
    .await;
    let _ = sender.stop().await;
    let _ = admin
        .execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await;
    let _ = admin.drop_queue(&queue).await;
    let _ = admin.drop_queue(&sender_queue).await;
    let results = measured?;
    print(&target, &settings, &results, json)
}

#[allow(clippy::too_many_arguments)]
async fn all_rounds(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    shapes: &[Shape],
    sender: &Bus,
    table: &str,
    queue: &str,
    json: bool,
) -> Result<Vec<ShapeResult>, Failure> {
    let mut results: Vec<ShapeResult> = shapes
        .iter()
        .map(|&shape| ShapeResult {
            shape,
            rounds: Vec::new(),
        })
        .collect();
    let steps = (settings.rounds * shapes.len() * 2) as u64;
    let bar = super::progress_bar(steps, json)?;
    for round in 0..settings.rounds {
        for result in &mut results {
            let default_first = round % 2 == 0;
            let mut pair = [None, None];
            for one_at_a_time in [!default_first, default_first] {
                let mode = if one_at_a_time {
                    "receive_batch(1)"
                } else {
                    "default"
                };
                bar.set_message(format!(
                    "round {} {} {mode}",
                    round + 1,
                    result.shape.name()
                ));
                let run = one_run(
                    target,
                    admin,
                    settings,
                    result.shape,
                    sender,
                    table,
                    queue,
                    one_at_a_time,
                )
                .await?;
                pair[usize::from(one_at_a_time)] = Some(run);
                bar.inc(1);
            }
            if let [Some(default), Some(one)] = pair {
                result.rounds.push((default, one));
            }
        }
    }
    bar.finish_and_clear();
    Ok(results)
}

#[allow(clippy::too_many_arguments)]
async fn one_run(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    shape: Shape,
    sender: &Bus,
    table: &str,
    queue: &str,
    one_at_a_time: bool,
) -> Result<Run, Failure> {
    let messages = settings.messages;
    let rows = shape.rows(messages);
    if let Some(rows) = rows {
        reset_counters(target, admin, table, rows).await?;
    }
    let numbers: Vec<u32> = (0..messages)
        .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
        .collect();
    for chunk in numbers.chunks(1000) {
        let works = chunk.iter().map(|&n| Work {
            n,
            row: rows.map_or(0, |rows| n % rows),
        });
        sender.send_batch(works).await?;
    }
    let handled = Tally::default();
    let placeholder = match target.backend {
        "postgres" => "$1",
        "sqlserver" => "@P1",
        _ => "?1",
    };
    let mut receiver = builder(target, settings.concurrency, queue, "receiver")
        .monitoring_interval(None)
        .handler(ShapeHandler {
            shape,
            update: format!("UPDATE {table} SET n = n + 1 WHERE id = {placeholder}"),
            handled: handled.clone(),
        });
    if one_at_a_time {
        receiver = receiver.receive_batch(1);
    }
    if let Some(threads) = settings.handler_threads {
        receiver = receiver.handler_threads(threads);
    }
    let started = Instant::now();
    let bus = receiver.build()?.start().await?;
    let drained = wait_for(&handled, messages, "the shape's endpoint").await;
    let elapsed = started.elapsed();
    let metrics = bus.metrics();
    bus.stop().await?;
    drained?;
    Ok(Run {
        rate: messages as f64 / elapsed.as_secs_f64().max(1e-9),
        conflicts: metrics.conflicts,
        failed: metrics.failed,
    })
}

/// (Re)makes the counters table with `rows` rows at 0.
async fn reset_counters(
    target: &Target,
    admin: &Database,
    table: &str,
    rows: u32,
) -> Result<(), Failure> {
    admin
        .execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await?;
    admin
        .execute(&format!(
            "CREATE TABLE {table} (id int NOT NULL PRIMARY KEY, n bigint NOT NULL)"
        ))
        .await?;
    let fill = match target.backend {
        "postgres" => format!(
            "INSERT INTO {table} SELECT g, 0 FROM generate_series(0, {}) AS g",
            rows - 1
        ),
        "sqlserver" => format!(
            "WITH d AS (SELECT 0 AS i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 \
             UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 \
             UNION ALL SELECT 8 UNION ALL SELECT 9) \
             INSERT INTO {table} (id, n) SELECT n, 0 FROM (SELECT a.i + 10 * b.i + 100 * c.i \
             + 1000 * e.i + 10000 * f.i AS n FROM d a, d b, d c, d e, d f) AS numbers \
             WHERE n < {rows}"
        ),
        _ => format!(
            "WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i + 1 < {rows}) \
             INSERT INTO {table} (id, n) SELECT i, 0 FROM g"
        ),
    };
    admin.execute(&fill).await?;
    Ok(())
}

/// The table, or one JSON line.
fn print(
    target: &Target,
    settings: &Settings,
    results: &[ShapeResult],
    json: bool,
) -> Result<(), Failure> {
    if json {
        let shapes: Vec<_> = results
            .iter()
            .map(|r| {
                let ratios = r.ratios();
                json!({
                    "shape": r.shape.name(),
                    "ratio_median": median(&ratios),
                    "ratio_min": ratios.iter().copied().fold(f64::INFINITY, f64::min),
                    "ratio_max": ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    "rounds": r.rounds.iter().map(|(d, one)| json!({
                        "default_per_s": d.rate, "one_at_a_time_per_s": one.rate,
                        "default_conflicts": d.conflicts, "one_at_a_time_conflicts": one.conflicts,
                        "default_failed": d.failed, "one_at_a_time_failed": one.failed,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let report = json!({
            "mode": "handler_shapes",
            "database": target.backend,
            "messages": settings.messages,
            "rounds": settings.rounds,
            "concurrency": settings.concurrency,
            "shapes": shapes,
        });
        println!("{report}");
        return Ok(());
    }
    println!(
        "Handler shapes on {}: default ÷ receive_batch(1), {} messages queued first, {} \
         receivers, {} rounds",
        target.backend, settings.messages, settings.concurrency, settings.rounds
    );
    println!(
        "{:<14} {:>8} {:>15} {:>14} {:>14} {:>18}",
        "shape", "ratio", "min–max", "default msg/s", "one/tx msg/s", "conflicts (d/1)"
    );
    for r in results {
        let ratios = r.ratios();
        let rates =
            |pick: fn(&(Run, Run)) -> f64| median(&r.rounds.iter().map(pick).collect::<Vec<_>>());
        let conflicts = |pick: fn(&(Run, Run)) -> u64| r.rounds.iter().map(pick).sum::<u64>();
        println!(
            "{:<14} {:>8.2} {:>15} {:>14.0} {:>14.0} {:>18}",
            r.shape.name(),
            median(&ratios),
            format!(
                "{:.2}–{:.2}",
                ratios.iter().copied().fold(f64::INFINITY, f64::min),
                ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            ),
            rates(|(d, _)| d.rate),
            rates(|(_, one)| one.rate),
            format!(
                "{}/{}",
                conflicts(|(d, _)| d.conflicts),
                conflicts(|(_, one)| one.conflicts)
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_as_written_and_say_what_is_wrong() {
        assert_eq!(shape("none"), Ok(Shape::None));
        assert_eq!(shape("disjoint"), Ok(Shape::Disjoint));
        assert_eq!(shape("hot:4"), Ok(Shape::Hot(4)));
        assert_eq!(
            shape("slow:20ms"),
            Ok(Shape::Slow(Duration::from_millis(20)))
        );
        assert_eq!(shape("failing:10"), Ok(Shape::Failing(10)));
        for bad in ["hot:0", "hot", "failing:101", "slow:soon", "warm"] {
            let e = shape(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert_eq!(Shape::Slow(Duration::from_millis(20)).name(), "slow:20ms");
    }
}
