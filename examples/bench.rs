//! The benchmark: the framework against the bare SQL it runs, on the same database, pool and
//! concurrency, in one run. Benchmarks are not tests: nothing here asserts on time.
//!
//! ```sh
//! cargo run --release --example bench -- --database postgres://postgres@127.0.0.1/postgres \
//!     --messages 100000 --body-size 200 --concurrency 16 --instances 1
//! ```
//!
//! Workloads, each driven once through the framework and once as bare SQL:
//! * **send 1**: `bus.send_to` of one message per transaction, vs. the same `INSERT`;
//! * **send batch**: `bus.send_batch` of `--batch` messages per transaction, vs. the same inserts;
//! * **receive**: handle a pre-filled queue with an empty handler, vs. the same skip-locked
//!   `DELETE … RETURNING` + commit in `concurrency × instances` loops;
//! * **end to end**: senders and receivers together, with send→handled latency.
//!
//! Prints a table and one JSON line (`{"bench":…}`) for scripts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use nimbus::{Bus, Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

#[derive(Parser, Debug, Clone)]
#[command(about = "Nimbus against bare SQL, in one run")]
struct Args {
    /// Database URL or SQL Server connection string.
    #[arg(long, default_value = "sqlite://bench.db")]
    database: String,
    /// Schema (PostgreSQL, SQL Server).
    #[arg(long)]
    schema: Option<String>,
    /// Messages per workload.
    #[arg(long, default_value_t = 10_000)]
    messages: usize,
    /// Approximate body size in bytes.
    #[arg(long, default_value_t = 200)]
    body_size: usize,
    /// Concurrency limit per endpoint instance (and bare SQL loops per instance).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Endpoint instances receiving from the queue.
    #[arg(long, default_value_t = 1)]
    instances: usize,
    /// Messages per transaction in the batched send.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Storage layout: `table` (a table per queue) or `shared` (NimbusMessages).
    #[arg(long, default_value = "table", value_parser = ["table", "shared"])]
    layout: String,
}

/// The benchmark's message: when it was sent, and padding up to the body size.
#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Bench.Ping")]
struct Ping {
    sent_at_us: u64,
    padding: String,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or_default()
}

fn ping(body_size: usize) -> Ping {
    Ping {
        sent_at_us: now_us(),
        padding: "x".repeat(body_size.saturating_sub(40)),
    }
}

/// Counts handled messages and their latencies.
#[derive(Clone, Default)]
struct Tally {
    handled: Arc<AtomicUsize>,
    latencies_us: Arc<Mutex<Vec<u64>>>,
}

impl Tally {
    fn record(&self, sent_at_us: u64) {
        let latency = now_us().saturating_sub(sent_at_us);
        if let Ok(mut l) = self.latencies_us.lock() {
            l.push(latency);
        }
        self.handled.fetch_add(1, Ordering::Relaxed);
    }

    fn record_body(&self, body: &[u8]) {
        let sent = serde_json::from_slice::<Ping>(body)
            .map(|p| p.sent_at_us)
            .unwrap_or_else(|_| now_us());
        self.record(sent);
    }

    fn count(&self) -> usize {
        self.handled.load(Ordering::Relaxed)
    }

    fn percentiles(&self) -> (f64, f64, f64) {
        let mut l = self
            .latencies_us
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        if l.is_empty() {
            return (0.0, 0.0, 0.0);
        }
        l.sort_unstable();
        let at = |p: f64| l[((l.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
        (at(0.50), at(0.99), at(1.0))
    }
}

struct Empty(Tally);

#[nimbus::handler]
impl Handler<Ping> for Empty {
    async fn handle(&self, m: Ping, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.record(m.sent_at_us);
        Ok(())
    }
}

/// Resident memory now and at its peak, from /proc (Linux), in MiB.
fn memory_mib() -> (f64, f64) {
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

fn builder(args: &Args, app: &str, instance: &str) -> nimbus::BusBuilder {
    let layout = if args.layout == "shared" {
        nimbus::StorageLayout::SharedTable
    } else {
        nimbus::StorageLayout::TablePerQueue
    };
    let b = Bus::builder()
        .names(app, instance)
        .database_url(&args.database)
        .storage_layout(layout)
        .concurrency(args.concurrency)
        // The benchmark sends to its queues before their receivers start.
        .create_queues_on_send(true)
        .peek_delay(Duration::from_millis(100));
    match &args.schema {
        Some(s) => b.schema(s),
        None => b,
    }
}

/// Runs `total` jobs over `concurrency` tasks; returns the elapsed time.
async fn run_tasks<F, Fut>(total: usize, concurrency: usize, job: F) -> Duration
where
    F: Fn(usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (next, job) = (next.clone(), job.clone());
            actix_rt::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    job(i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    started.elapsed()
}

async fn wait_for(tally: &Tally, target: usize) {
    while tally.count() < target {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

struct Row {
    name: &'static str,
    framework: f64,
    bare: f64,
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let q = |what: &str| format!("Bench{what}{run}");
    let n = args.messages;
    let c = args.concurrency;
    let body = serde_json::to_vec(&ping(args.body_size))?;
    eprintln!(
        "bench: {} messages of ~{} bytes, concurrency {} x {} instance(s), batch {}, layout {}",
        n,
        body.len(),
        c,
        args.instances,
        args.batch,
        args.layout
    );

    let sender = builder(&args, &q("Sender"), "sender")
        .route::<Ping>(q("Batch"))
        .build()?
        .start()
        .await?;
    let bare = sender.bare_sql();
    // Make the queues exist before timing (auto-create runs on first use).
    for name in ["Fw", "Bare", "Batch", "BareBatch", "E2e", "BareE2e"] {
        bare.send(&q(name), Vec::new()).await?;
        sender.send_to(&q(name), ping(0)).await?;
        while bare.receive(&q(name)).await?.is_some() {}
    }
    let mut rows = Vec::new();

    // 1. Send, one message per transaction.
    let size = args.body_size;
    let fw = {
        let (bus, queue) = (sender.clone(), q("Fw"));
        run_tasks(n, c, move |_| {
            let (bus, queue) = (bus.clone(), queue.clone());
            async move {
                let _ = bus.send_to(&queue, ping(size)).await;
            }
        })
        .await
    };
    let br = {
        let (bare, queue) = (bare.clone(), q("Bare"));
        run_tasks(n, c, move |_| {
            let (bare, queue) = (bare.clone(), queue.clone());
            async move {
                let body = serde_json::to_vec(&ping(size)).unwrap_or_default();
                let _ = bare.send(&queue, vec![body]).await;
            }
        })
        .await
    };
    rows.push(Row {
        name: "send 1/tx",
        framework: n as f64 / fw.as_secs_f64(),
        bare: n as f64 / br.as_secs_f64(),
    });

    // 2. Send, batched.
    let batches = n.div_ceil(args.batch);
    let batch = args.batch;
    let fw = {
        let bus = sender.clone();
        run_tasks(batches, c, move |_| {
            let bus = bus.clone();
            async move {
                let _ = bus.send_batch((0..batch).map(|_| ping(size))).await;
            }
        })
        .await
    };
    let br = {
        let (bare, queue) = (bare.clone(), q("BareBatch"));
        run_tasks(batches, c, move |_| {
            let (bare, queue) = (bare.clone(), queue.clone());
            async move {
                let bodies = (0..batch)
                    .map(|_| serde_json::to_vec(&ping(size)).unwrap_or_default())
                    .collect();
                let _ = bare.send(&queue, bodies).await;
            }
        })
        .await
    };
    rows.push(Row {
        name: "send batch",
        framework: (batches * batch) as f64 / fw.as_secs_f64(),
        bare: (batches * batch) as f64 / br.as_secs_f64(),
    });

    // 3. Receive and handle a pre-filled queue (filled by workload 1).
    let tally = Tally::default();
    let started = Instant::now();
    let mut receivers = Vec::new();
    for i in 0..args.instances {
        receivers.push(
            builder(&args, &q("Fw"), &format!("receiver-{i}"))
                .handler(Empty(tally.clone()))
                .build()?
                .start()
                .await?,
        );
    }
    wait_for(&tally, n).await;
    let fw = started.elapsed();
    for r in &receivers {
        r.stop().await?;
    }
    let bare_tally = Tally::default();
    let br = {
        let (bare, queue, t) = (bare.clone(), q("Bare"), bare_tally.clone());
        let started = Instant::now();
        let loops: Vec<_> = (0..c * args.instances)
            .map(|_| {
                let (bare, queue, t) = (bare.clone(), queue.clone(), t.clone());
                actix_rt::spawn(async move {
                    while let Ok(Some(body)) = bare.receive(&queue).await {
                        t.record_body(&body);
                    }
                })
            })
            .collect();
        for l in loops {
            let _ = l.await;
        }
        started.elapsed()
    };
    rows.push(Row {
        name: "receive+handle",
        framework: n as f64 / fw.as_secs_f64(),
        bare: bare_tally.count() as f64 / br.as_secs_f64(),
    });

    // 4. End to end: senders and receivers together.
    let tally = Tally::default();
    let mut receivers = Vec::new();
    for i in 0..args.instances {
        receivers.push(
            builder(&args, &q("E2e"), &format!("e2e-{i}"))
                .handler(Empty(tally.clone()))
                .build()?
                .start()
                .await?,
        );
    }
    let mut memory = Vec::new();
    let started = Instant::now();
    {
        let (bus, queue) = (sender.clone(), q("E2e"));
        let sending = run_tasks(n, c, move |_| {
            let (bus, queue) = (bus.clone(), queue.clone());
            async move {
                let _ = bus.send_to(&queue, ping(size)).await;
            }
        });
        let watch = async {
            for quarter in 1..=4 {
                wait_for(&tally, n * quarter / 4).await;
                memory.push(memory_mib().0);
            }
        };
        futures::join!(sending, watch);
    }
    let fw = started.elapsed();
    let fw_latency = tally.percentiles();
    for r in &receivers {
        r.stop().await?;
    }
    let bare_tally = Tally::default();
    let br = {
        let started = Instant::now();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let loops: Vec<_> = (0..c * args.instances)
            .map(|_| {
                let (bare, queue, t, stop) =
                    (bare.clone(), q("BareE2e"), bare_tally.clone(), stop.clone());
                actix_rt::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        match bare.receive(&queue).await {
                            Ok(Some(body)) => t.record_body(&body),
                            _ => tokio::time::sleep(Duration::from_millis(10)).await,
                        }
                    }
                })
            })
            .collect();
        let (bare2, queue) = (bare.clone(), q("BareE2e"));
        run_tasks(n, c, move |_| {
            let (bare, queue) = (bare2.clone(), queue.clone());
            async move {
                let body = serde_json::to_vec(&ping(size)).unwrap_or_default();
                let _ = bare.send(&queue, vec![body]).await;
            }
        })
        .await;
        wait_for(&bare_tally, n).await;
        stop.store(true, Ordering::Relaxed);
        for l in loops {
            let _ = l.await;
        }
        started.elapsed()
    };
    let bare_latency = bare_tally.percentiles();
    rows.push(Row {
        name: "end to end",
        framework: n as f64 / fw.as_secs_f64(),
        bare: n as f64 / br.as_secs_f64(),
    });

    for name in ["Fw", "Bare", "Batch", "BareBatch", "E2e", "BareE2e"] {
        let _ = bare.drop_queue(&q(name)).await;
    }
    sender.stop().await?;
    let (_, peak) = memory_mib();

    println!();
    println!(
        "{:<16} {:>14} {:>14} {:>8}",
        "workload", "nimbus msg/s", "bare msg/s", "ratio"
    );
    for r in &rows {
        println!(
            "{:<16} {:>14.0} {:>14.0} {:>7.0}%",
            r.name,
            r.framework,
            r.bare,
            100.0 * r.framework / r.bare
        );
    }
    println!(
        "latency send->handled (end to end): nimbus p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
         bare p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        fw_latency.0, fw_latency.1, fw_latency.2, bare_latency.0, bare_latency.1, bare_latency.2
    );
    println!(
        "memory: RSS at 25/50/75/100% of end to end {:?} MiB; peak {:.1} MiB",
        memory
            .iter()
            .map(|m| (m * 10.0).round() / 10.0)
            .collect::<Vec<_>>(),
        peak
    );
    let json = serde_json::json!({
        "bench": {
            "backend": args.database.split(':').next().unwrap_or("?").split('=').next().unwrap_or("?"),
            "messages": n,
            "body_bytes": body.len(),
            "concurrency": c,
            "instances": args.instances,
            "batch": args.batch,
            "layout": args.layout,
            "workloads": rows.iter().map(|r| serde_json::json!({
                "name": r.name,
                "nimbus_per_s": r.framework.round(),
                "bare_per_s": r.bare.round(),
                "ratio": (r.framework / r.bare * 1000.0).round() / 1000.0,
            })).collect::<Vec<_>>(),
            "latency_ms": {
                "nimbus": {"p50": fw_latency.0, "p99": fw_latency.1, "max": fw_latency.2},
                "bare": {"p50": bare_latency.0, "p99": bare_latency.1, "max": bare_latency.2},
            },
            "rss_mib_quarters": memory,
            "peak_rss_mib": peak,
        }
    });
    println!("{json}");
    Ok(())
}
