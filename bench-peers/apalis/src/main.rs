//! Peer benchmark: the workloads of `nimbus bench` (send_1, receive_handle, end_to_end) run
//! through apalis 1.0 and its PostgreSQL backend (`apalis-postgres` 1.0), so nimbus's rates can
//! be stated as a ratio of apalis's, measured on the same machine and database.
//!
//! Backend: `PostgresStorage::with_pubsub()`, apalis-postgres's LISTEN/NOTIFY storage (an
//! `AFTER INSERT` trigger notifies `apalis::job::insert`; each worker's own listener wakes it
//! to fetch), apalis's default `Config` apart from the queue name (and `--batch-size`), plus an
//! interval poll with `--poll-ms`. `--workers` workers (default 1), each
//! `.concurrency(--concurrency)`, apalis 1.0's way to run several jobs at once; they are
//! stopped through their `WorkerContext` (gracefully: in-flight jobs finish and their acks are
//! written) once every job has been handled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _, Result};
use apalis::prelude::*;
use apalis_postgres::{Config, PgPool, PostgresStorage};
use clap::{Parser, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::postgres::PgPoolOptions;

/// The apalis and apalis-postgres version Cargo.lock pins.
const APALIS_VERSION: &str = "1.0.0";
/// Prefix of every queue (apalis `job_type`) and worker this program creates.
const PREFIX: &str = "nimbus-bench-";
/// How long handling may make no progress before the benchmark gives up.
const STALL: Duration = Duration::from_secs(60);
/// Clock ticks per second of /proc/self/stat: sysconf(_SC_CLK_TCK), 100 on Linux.
const TICKS_PER_S: f64 = 100.0;

/// Command-line arguments, named like `nimbus bench`'s.
#[derive(Parser, Debug)]
#[command(about = "apalis 1.0 + apalis-postgres peer of `nimbus bench`")]
struct Args {
    /// PostgreSQL URL; apalis keeps its tables in its own `apalis` schema.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1/postgres")]
    database: String,
    /// Jobs per workload per round.
    #[arg(long, default_value_t = 20000)]
    messages: usize,
    /// Rounds; each uses fresh queue names and deletes its jobs at the end.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Sender tasks, and each worker's concurrency limit.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Approximate JSON body size in bytes (padding = body_size - 40 'x').
    #[arg(long, default_value_t = 200)]
    body_size: usize,
    /// Workloads to run, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "send_1,receive_handle,end_to_end"
    )]
    workloads: Vec<Workload>,
    /// apalis workers on each queue, each with `--concurrency`.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// apalis `Config::batch_size`: jobs per fetch (apalis's default is 10).
    #[arg(long, default_value_t = 10)]
    batch_size: usize,
    /// Also poll every this many ms (apalis `Strategy::interval`) besides LISTEN/NOTIFY; 0: no.
    #[arg(long, default_value_t = 0)]
    poll_ms: u64,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    json: bool,
}

/// A workload, as `nimbus bench` names it; its index in the results.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Workload {
    #[value(name = "send_1")]
    Send1,
    #[value(name = "receive_handle")]
    ReceiveHandle,
    #[value(name = "end_to_end")]
    EndToEnd,
}

/// The names of the workloads and how each one's rate is computed, by index.
const WORKLOADS: [(&str, &str); 3] = [
    ("send_1", "messages / (first push -> last push done)"),
    (
        "receive_handle",
        "(messages - 1) / (first handled -> last handled), as nimbus bench",
    ),
    ("end_to_end", "messages / (first send -> last handled)"),
];

/// The job: when it was sent, and padding to reach the body size.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    sent_at_us: u64,
    padding: String,
}

/// What the handler saw: first and last handled instants, each send→handled latency, and the
/// longest pause between two handled jobs (a worker that sleeps with jobs waiting shows there).
#[derive(Debug, Default)]
struct Seen {
    first: Option<Instant>,
    last: Option<Instant>,
    latencies_us: Vec<u64>,
    max_gap: Duration,
}

/// Shared between the handler and the driver.
#[derive(Debug, Clone, Default)]
struct Tally(Arc<Mutex<Seen>>);

impl Tally {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        // A poisoned lock only means a handler panicked while recording; the counts are intact.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One workload's measurements over the rounds.
#[derive(Debug, Default)]
struct Series {
    per_s: Vec<f64>,
    cpu_ticks: u64,
    messages: usize,
    /// receive_handle: messages / (workers started → last handled).
    per_s_from_start: Vec<f64>,
    max_gap_ms: Vec<f64>,
    p50_ms: Vec<f64>,
    p99_ms: Vec<f64>,
}

impl Series {
    /// Records a round: its rate, the CPU ticks it took, and what the handler saw.
    fn push(&mut self, rate: f64, ticks: u64, messages: usize, seen: Option<&Seen>) {
        (self.cpu_ticks, self.messages) = (self.cpu_ticks + ticks, self.messages + messages);
        self.per_s.push(rate);
        if let Some(seen) = seen {
            self.max_gap_ms.push(seen.max_gap.as_secs_f64() * 1e3);
        }
    }

    /// Process CPU microseconds per message over every round.
    fn cpu_us(&self) -> f64 {
        self.cpu_ticks as f64 * 1e6 / TICKS_PER_S / self.messages.max(1) as f64
    }
}

/// Microseconds since the Unix epoch.
fn now_us() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| d.as_micros() as u64)
}

/// utime + stime of this process (fields 14 and 15 of /proc/self/stat), in clock ticks.
fn cpu_ticks() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    // The command name (field 2) may hold spaces; field 3 starts after its closing ')'.
    let rest = stat
        .rsplit_once(')')
        .context("no ')' in /proc/self/stat")?
        .1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64> {
        let f = fields
            .get(n - 3)
            .with_context(|| format!("no field {n} in /proc/self/stat"))?;
        f.parse()
            .with_context(|| format!("field {n} of /proc/self/stat: {f:?}"))
    };
    Ok(field(14)? + field(15)?)
}

/// The handler: records when, and how long after its send, the job was handled; nothing else.
async fn handle(job: Job, tally: Data<Tally>) -> Result<(), BoxDynError> {
    let (latency, now) = (now_us().saturating_sub(job.sent_at_us), Instant::now());
    let mut seen = tally.seen();
    seen.latencies_us.push(latency);
    seen.first.get_or_insert(now);
    if let Some(last) = seen.last.replace(now) {
        seen.max_gap = seen.max_gap.max(now - last);
    }
    Ok(())
}

/// The storage for `queue`: apalis's defaults apart from the queue name and batch size.
fn storage(pool: &PgPool, queue: &str, args: &Args) -> PostgresStorage<Job> {
    let config = Config::default()
        .queue(queue)
        .batch_size(args.batch_size.max(1));
    PostgresStorage::new(pool).with_config(config)
}

/// Pushes `--messages` jobs over `--concurrency` tasks, one push (one transaction) each.
async fn send(pool: &PgPool, queue: &str, args: &Args) -> Result<Duration> {
    let (padding, next) = (
        "x".repeat(args.body_size.saturating_sub(40)),
        Arc::new(AtomicUsize::new(0)),
    );
    let start = Instant::now();
    let tasks: Vec<_> = (0..args.concurrency.max(1))
        .map(|_| {
            let (mut sink, next, padding) =
                (storage(pool, queue, args), next.clone(), padding.clone());
            let total = args.messages;
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    let job = Job {
                        sent_at_us: now_us(),
                        padding: padding.clone(),
                    };
                    sink.push(job).await.context("apalis push")?;
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.context("a sender task panicked")??;
    }
    Ok(start.elapsed())
}

/// Runs `--workers` workers on `queue` until `target` jobs are handled, then stops them
/// (`WorkerContext::stop`: graceful) and waits for them to finish.
async fn work(pool: &PgPool, queue: &str, args: &Args, tally: &Tally, target: usize) -> Result<()> {
    let mut workers = Vec::new();
    for i in 0..args.workers.max(1) {
        let ctx = WorkerContext::new(&format!("{queue}-worker-{i}"));
        let strategy = match args.poll_ms {
            0 => Strategy::new(), // none: LISTEN/NOTIFY only
            ms => Strategy::new().interval(Duration::from_millis(ms)),
        };
        let backend = storage(pool, queue, args)
            .with_pubsub()
            .poll_with_strategy(strategy);
        let worker = WorkerBuilder::new(&ctx)
            .backend(backend)
            .concurrency(args.concurrency.max(1))
            .data(tally.clone())
            .build(handle);
        workers.push((ctx, tokio::spawn(worker.run())));
    }
    let (mut count, mut moved_at) = (0, Instant::now());
    while count < target {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = tally.seen().latencies_us.len();
        if now != count {
            (count, moved_at) = (now, Instant::now());
        } else if moved_at.elapsed() >= STALL {
            workers.iter().for_each(|(_, run)| run.abort());
            bail!("apalis handled {count} of {target} jobs on {queue} and none for {STALL:?}");
        }
    }
    for (ctx, run) in workers {
        ctx.stop()
            .map_err(|e| anyhow!("stopping {}: {e}", ctx.name()))?;
        let ran = run.await.context("an apalis worker panicked")?;
        ran.map_err(|e| anyhow!("apalis worker {}: {e}", ctx.name()))?;
    }
    Ok(())
}

/// Percentile `p` (0..=100) of sorted microseconds, in milliseconds.
fn percentile_ms(sorted: &[u64], p: f64) -> f64 {
    let i = ((p / 100.0) * sorted.len().saturating_sub(1) as f64).round() as usize;
    sorted.get(i).map_or(0.0, |&us| us as f64 / 1000.0)
}

/// Median of a list (0 when empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Notes jobs of queues matching `pattern` that are not `Done` (apalis marks handled jobs done
/// and keeps them), then deletes those queues' jobs and workers.
async fn cleanup(pool: &PgPool, pattern: &str) -> Result<()> {
    let sql = "SELECT status, count(*) FROM apalis.jobs WHERE job_type LIKE $1 \
               AND status <> 'Done' GROUP BY status";
    let left: Vec<(String, i64)> = sqlx::query_as(sql).bind(pattern).fetch_all(pool).await?;
    for (status, n) in left {
        eprintln!("note: {n} job(s) of {pattern} left in status {status}");
    }
    for sql in [
        "DELETE FROM apalis.jobs WHERE job_type LIKE $1",
        "DELETE FROM apalis.workers WHERE worker_type LIKE $1",
    ] {
        sqlx::query(sql)
            .bind(pattern)
            .execute(pool)
            .await
            .context(sql)?;
    }
    Ok(())
}

/// One round of the chosen workloads, on queues of its own, deleted at the end.
async fn round(
    args: &Args,
    r: usize,
    senders: &PgPool,
    workers: &PgPool,
    out: &mut [Series; 3],
) -> Result<()> {
    let base = format!("{PREFIX}{}-{}-{r}", std::process::id(), now_us());
    let (m, runs) = (args.messages, |w| args.workloads.contains(&w));
    let queue = format!("{base}-send");
    if runs(Workload::Send1) || runs(Workload::ReceiveHandle) {
        let cpu0 = cpu_ticks()?;
        let elapsed = send(senders, &queue, args).await?;
        out[0].push(
            m as f64 / elapsed.as_secs_f64(),
            cpu_ticks()? - cpu0,
            m,
            None,
        );
    }
    if runs(Workload::ReceiveHandle) {
        // Drains send_1's jobs.
        let (tally, cpu0, start) = (Tally::default(), cpu_ticks()?, Instant::now());
        work(workers, &queue, args, &tally, m).await?;
        let ticks = cpu_ticks()? - cpu0;
        let seen = tally.seen();
        let (first, last) = seen.first.zip(seen.last).context("nothing handled")?;
        let rate = m.saturating_sub(1) as f64 / (last - first).as_secs_f64().max(1e-9);
        out[1].push(rate, ticks, m, Some(&seen));
        out[1]
            .per_s_from_start
            .push(m as f64 / (last - start).as_secs_f64());
    }
    if runs(Workload::EndToEnd) {
        // Workers first, on an empty queue, given time to register and LISTEN; then senders.
        let (queue, tally) = (format!("{base}-e2e"), Tally::default());
        let sending = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (cpu0, start) = (cpu_ticks()?, Instant::now());
            send(senders, &queue, args).await?;
            Ok::<_, anyhow::Error>((cpu0, start))
        };
        let ((cpu0, start), ()) =
            tokio::try_join!(sending, work(workers, &queue, args, &tally, m))?;
        let ticks = cpu_ticks()? - cpu0;
        let mut seen = tally.seen();
        let last = seen.last.context("nothing handled")?;
        out[2].push(
            m as f64 / (last - start).as_secs_f64(),
            ticks,
            m,
            Some(&seen),
        );
        seen.latencies_us.sort_unstable();
        out[2].p50_ms.push(percentile_ms(&seen.latencies_us, 50.0));
        out[2].p99_ms.push(percentile_ms(&seen.latencies_us, 99.0));
    }
    cleanup(workers, &format!("{base}-%")).await
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let size = args.concurrency.max(1) as u32;
    let pool = || {
        PgPoolOptions::new()
            .max_connections(size)
            .connect(&args.database)
    };
    let senders = pool()
        .await
        .with_context(|| format!("connecting to {}", args.database))?;
    let workers = pool()
        .await
        .with_context(|| format!("connecting to {}", args.database))?;
    PostgresStorage::setup(&workers)
        .await
        .context("apalis setup (its migrations)")?;
    cleanup(&workers, &format!("{PREFIX}%")).await?;
    let poll = match args.poll_ms {
        0 => "no interval poll".to_string(),
        ms => format!("plus Strategy::interval({ms} ms)"),
    };
    let backend = format!(
        "PostgresStorage::with_pubsub (LISTEN/NOTIFY on apalis::job::insert), {poll}; Config::default() \
         with batch_size {} (lock_tasks, persist_results on); {} worker(s) .concurrency({})",
        args.batch_size, args.workers, args.concurrency
    );
    let mut out: [Series; 3] = Default::default();
    for r in 0..args.rounds {
        round(&args, r, &senders, &workers, &mut out).await?;
    }
    let chosen: Vec<usize> = (0..3).filter(|&i| !out[i].per_s.is_empty()).collect();
    let whole = |v: &[f64]| v.iter().map(|x| x.round()).collect::<Vec<_>>();
    let tenths = |v: &[f64]| {
        v.iter()
            .map(|x| (x * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    };
    if args.json {
        let mut workloads = serde_json::Map::new();
        for &i in &chosen {
            let (s, (name, rate)) = (&out[i], WORKLOADS[i]);
            let mut w = json!({"per_s": whole(&s.per_s), "median_per_s": median(&s.per_s).round(),
                "process_cpu_us_per_msg": (s.cpu_us() * 10.0).round() / 10.0, "rate": rate});
            if i > 0 {
                w["max_gap_ms"] = json!(tenths(&s.max_gap_ms));
            }
            if i == 1 {
                w["per_s_from_start"] = json!(whole(&s.per_s_from_start));
            }
            if i == 2 {
                (w["p50_ms"], w["p99_ms"]) = (json!(tenths(&s.p50_ms)), json!(tenths(&s.p99_ms)));
            }
            workloads.insert(name.to_string(), w);
        }
        let doc = json!({"apalis": {"version": APALIS_VERSION, "backend": backend,
            "messages": args.messages, "rounds": args.rounds, "concurrency": args.concurrency,
            "body_size": args.body_size, "workloads": workloads}});
        println!("{doc}");
        return Ok(());
    }
    println!("apalis {APALIS_VERSION}: {backend}");
    println!(
        "{} messages x {} round(s), {} senders, body ~{} B; process CPU over each workload",
        args.messages, args.rounds, args.concurrency, args.body_size
    );
    println!(
        "{:<15} {:>9} {:>11}  {:<16} rate",
        "workload", "median/s", "cpu us/msg", "rounds/s"
    );
    for &i in &chosen {
        let (s, (name, rate)) = (&out[i], WORKLOADS[i]);
        let rounds = whole(&s.per_s)
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        println!(
            "{name:<15} {:>9.0} {:>11.1}  {rounds:<16} {rate}",
            median(&s.per_s),
            s.cpu_us()
        );
    }
    if !out[1].per_s.is_empty() {
        let (from_start, gap) = (median(&out[1].per_s_from_start), median(&out[1].max_gap_ms));
        println!(
            "receive_handle: {from_start:.0}/s from the workers' start; longest pause {gap:.0} ms"
        );
    }
    if !out[2].per_s.is_empty() {
        let (p50, p99, gap) = (
            median(&out[2].p50_ms),
            median(&out[2].p99_ms),
            median(&out[2].max_gap_ms),
        );
        println!("end_to_end: send->handled p50 {p50:.1} ms, p99 {p99:.1} ms; longest pause {gap:.0} ms (medians)");
    }
    Ok(())
}
