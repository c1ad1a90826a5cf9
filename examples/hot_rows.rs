//! Handlers that update a few hot rows, drained with the default receive and with one message
//! per transaction, in alternated pairs: what the default's batches cost when handlers collide
//! on the same rows (and how the conflict hold brings it back).
//!
//! ```sh
//! cargo run --release -p nimbus-examples --example hot_rows --features postgres -- \
//!     postgres://postgres@127.0.0.1:5432/postgres 4
//! ```
//!
//! Arguments: the PostgreSQL URL, how many hot rows (default 4), how many messages per run
//! (default 3000), how many pairs of runs (default 4). Each run queues every message first,
//! then starts one endpoint with 16 receivers and times it until all are handled; each pair
//! runs the default and `receive_batch(1)` one after the other, alternating which goes first.
//! It prints each run (messages per second, receives that gave way to another transaction,
//! failed attempts) and the ratio default ÷ one-at-a-time of each pair.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::{Bus, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

/// Adds one to a counter row.
#[derive(Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "HotRows.Add")]
struct Add {
    row: i32,
}

struct Counter(Arc<AtomicU64>);

impl Handler<Add> for Counter {
    async fn handle(&self, m: Add, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let db = ctx.postgres().await?;
        db.execute(
            "UPDATE hot_rows_counters SET n = n + 1 WHERE id = $1",
            &[&m.row],
        )
        .await?;
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// One run's figures.
struct Run {
    rate: f64,
    conflicts: u64,
    failed: u64,
}

async fn run(url: &str, queue: &str, rows: i32, messages: usize, one_at_a_time: bool) -> Run {
    let admin = nimbus::admin::Database::connect(url)
        .await
        .expect("connect");
    admin
        .execute(&format!(
            "DROP TABLE IF EXISTS hot_rows_counters;
             CREATE TABLE hot_rows_counters (id int PRIMARY KEY, n bigint NOT NULL);
             INSERT INTO hot_rows_counters SELECT g, 0 FROM generate_series(0, {}) AS g;",
            rows - 1
        ))
        .await
        .expect("the counters");
    let sender = Bus::builder()
        .names("HotRowsSender", "sender")
        .database_url(url)
        .create_queues_on_send(true)
        .route::<Add>(queue)
        .monitoring_interval(None)
        .build()
        .expect("a sender")
        .start()
        .await
        .expect("the sender starts");
    let adds: Vec<Add> = (0..messages)
        .map(|i| Add {
            row: i32::try_from(i).unwrap_or(0) % rows,
        })
        .collect();
    for chunk in adds.chunks(500) {
        let chunk: Vec<Add> = chunk.iter().map(|a| Add { row: a.row }).collect();
        sender.send_batch(chunk).await.expect("queued");
    }
    sender.stop().await.expect("the sender stops");
    let handled = Arc::new(AtomicU64::new(0));
    let builder = Bus::builder()
        .names(queue, "receiver")
        .database_url(url)
        .concurrency(16)
        .monitoring_interval(None)
        .handler(Counter(handled.clone()));
    let builder = if one_at_a_time {
        builder.receive_batch(1)
    } else {
        builder
    };
    let started = Instant::now();
    let bus = builder
        .build()
        .expect("a receiver")
        .start()
        .await
        .expect("the receiver starts");
    while handled.load(Ordering::Relaxed) < messages as u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let metrics = bus.metrics();
    bus.stop().await.expect("the receiver stops");
    admin.drop_queue(queue).await.expect("drop the queue");
    Run {
        rate: messages as f64 / elapsed.as_secs_f64(),
        conflicts: metrics.conflicts,
        failed: metrics.failed,
    }
}

#[actix_rt::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let arg =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let rows = i32::try_from(arg(1, 4)).unwrap_or(4).max(1);
    let messages = arg(2, 3000).max(1);
    let pairs = arg(3, 4).max(1);
    println!("{rows} hot rows, {messages} messages per run, 16 receivers, {pairs} pairs");
    let mut ratios = Vec::new();
    for pair in 0..pairs {
        let mut default = None;
        let mut single = None;
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for one_at_a_time in order {
            let queue = format!("HotRows{pair}{}", u8::from(one_at_a_time));
            let r = run(&url, &queue, rows, messages, one_at_a_time).await;
            println!(
                "pair {pair} {:>15}: {:>8.0} msg/s, {:>4} conflicts, {:>3} failed attempts",
                if one_at_a_time {
                    "receive_batch(1)"
                } else {
                    "default"
                },
                r.rate,
                r.conflicts,
                r.failed
            );
            if one_at_a_time {
                single = Some(r.rate);
            } else {
                default = Some(r.rate);
            }
        }
        if let (Some(d), Some(s)) = (default, single) {
            ratios.push(d / s);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!(
        "default ÷ receive_batch(1): median {median:.2}, {:.2}–{:.2}",
        ratios[0],
        ratios[ratios.len() - 1]
    );
}
