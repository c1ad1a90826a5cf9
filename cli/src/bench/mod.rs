//! `nimbus bench`: the framework against the bare SQL it runs, on the same database, pool and
//! concurrency, in one run. Benchmarks are not tests: nothing asserts on time.
//!
//! A run is `--rounds` rounds. Each round runs every workload (send 1/tx, send batch,
//! receive+handle, end to end) through the framework and as bare SQL, one right after the other,
//! `--messages` messages each; odd rounds run the framework first, even rounds the bare SQL first,
//! so neither side always finds the caches warm. A workload's ratio is the median of its
//! per-round ratios (framework rate / bare rate), and the lowest and highest of them are its
//! spread: load on the machine moves both sides of a round alike, so the ratio holds still where
//! the rates do not.
//!
//! The queues are tables named `Bench…<run id>`, emptied between rounds and dropped at the end,
//! even when the run fails.
//!
//! One job per module: [`message`] (the message, handler, tally), [`drive`] (load and waiting),
//! [`workload`] (the workloads), [`stats`] (medians), [`report`] (table and JSON).

mod drive;
mod message;
mod report;
mod stats;
mod workload;

use indicatif::{ProgressBar, ProgressStyle};
use nimbus::admin::Database;

use self::message::{ping, Ping};
use self::report::memory_mib;
use self::stats::Round;
use self::workload::{builder, Measured, Queues, Rig, Side, Workload};
use crate::{Failure, Layout};

/// What to measure (`nimbus bench --help`).
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Messages per workload, per side, per round: a run sends `messages × rounds × 2` per
    /// workload.
    #[arg(long, default_value_t = 10_000, value_parser = positive)]
    pub messages: usize,
    /// Rounds: each runs every workload through the framework and as bare SQL, alternating
    /// which goes first.
    #[arg(long, default_value_t = 5, value_parser = positive)]
    pub rounds: usize,
    /// Approximate body size in bytes.
    #[arg(long, default_value_t = 200)]
    pub body_size: usize,
    /// Concurrency limit per endpoint instance (and bare SQL loops per instance, and sending
    /// tasks).
    #[arg(long, default_value_t = 16, value_parser = positive)]
    pub concurrency: usize,
    /// Endpoint instances receiving from a queue.
    #[arg(long, default_value_t = 1, value_parser = positive)]
    pub instances: usize,
    /// Messages per transaction in the batched send.
    #[arg(long, default_value_t = 100, value_parser = positive)]
    pub batch: usize,
}

/// A count of at least 1.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text:?} is not a whole number of at least 1")),
    }
}

/// The database the benchmark runs on (the CLI's global options).
#[derive(Debug, Clone)]
pub struct Target {
    /// Its URL or SQL Server connection string.
    pub url: String,
    /// Its schema, when not the default.
    pub schema: Option<String>,
    /// How queues are stored.
    pub layout: Layout,
    /// `sqlite`, `postgres` or `sqlserver`.
    pub backend: &'static str,
}

/// Every round's results.
#[derive(Debug, Default)]
pub struct Results {
    /// Per workload, in [`Workload::ALL`] order, its rounds.
    pub rounds: Vec<(Workload, Vec<Round>)>,
    /// Every end-to-end latency through the framework, in microseconds.
    pub nimbus_latencies_us: Vec<u64>,
    /// Every end-to-end latency through the bare SQL, in microseconds.
    pub bare_latencies_us: Vec<u64>,
    /// Resident memory at each quarter of the last round's framework end to end, in MiB.
    pub rss_quarters: Vec<f64>,
    /// Resident memory after each round, in MiB.
    pub rss_rounds: Vec<f64>,
}

impl Results {
    fn new() -> Results {
        Results {
            rounds: Workload::ALL.iter().map(|w| (*w, Vec::new())).collect(),
            ..Results::default()
        }
    }

    /// Adds one round of `workload`.
    fn add(&mut self, workload: Workload, round: Round, nimbus: Measured, bare: Measured) {
        if let Some((_, rounds)) = self.rounds.iter_mut().find(|(w, _)| *w == workload) {
            rounds.push(round);
        }
        self.nimbus_latencies_us.extend(nimbus.latencies_us);
        self.bare_latencies_us.extend(bare.latencies_us);
        if !nimbus.rss_quarters.is_empty() {
            self.rss_quarters = nimbus.rss_quarters;
        }
    }
}

/// Runs the benchmark on `target` and prints the report: a table, or one JSON line with `json`.
/// `admin` empties the queues between rounds.
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queues = Queues::new(&run_id);
    let sender = builder(&target, &settings, &queues.sender, "sender")
        .route::<Ping>(queues.nimbus_batch.clone())
        .build()?
        .start()
        .await?;
    let rig = Rig {
        target,
        settings,
        bare: sender.bare_sql(),
        sender,
        queues,
    };
    let measured = all_rounds(&rig, &admin, json).await;
    let cleaned = clean_up(&rig).await;
    let results = measured?;
    cleaned?;
    report::print(&rig, &results, json)
}

/// Makes the queues, then runs every round; a progress bar on stderr unless `json`.
async fn all_rounds(rig: &Rig, admin: &Database, json: bool) -> Result<Results, Failure> {
    let steps = rig.settings.rounds * Workload::ALL.len() * 2;
    let bar = progress_bar(steps as u64, json)?;
    let results = rounds(rig, admin, &bar).await;
    bar.finish_and_clear();
    results
}

/// Runs every round, showing each step on `bar`. Round 1 runs the framework first, round 2 the
/// bare SQL, and so on.
async fn rounds(rig: &Rig, admin: &Database, bar: &ProgressBar) -> Result<Results, Failure> {
    prepare_queues(rig).await?;
    let mut results = Results::new();
    for round in 0..rig.settings.rounds {
        let order = if round % 2 == 0 {
            [Side::Nimbus, Side::Bare]
        } else {
            [Side::Bare, Side::Nimbus]
        };
        for workload in Workload::ALL {
            let (nimbus, bare) = pair(rig, workload, order, round, bar).await?;
            let round = Round {
                nimbus: nimbus.rate,
                bare: bare.rate,
                nimbus_first: order[0] == Side::Nimbus,
            };
            results.add(workload, round, nimbus, bare);
        }
        empty_queues(rig, admin).await?;
        results.rss_rounds.push(memory_mib().0);
    }
    Ok(results)
}

/// A progress bar of `steps` steps on stderr, hidden with `--json` (and by indicatif when
/// stderr is not a terminal).
fn progress_bar(steps: u64, json: bool) -> Result<ProgressBar, Failure> {
    if json {
        return Ok(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(steps);
    bar.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {pos}/{len} ({elapsed})")
            .map_err(|e| e.to_string())?,
    );
    Ok(bar)
}

/// Runs `workload` on both sides in `order`; returns (framework, bare).
async fn pair(
    rig: &Rig,
    workload: Workload,
    order: [Side; 2],
    round: usize,
    bar: &ProgressBar,
) -> Result<(Measured, Measured), Failure> {
    let (mut nimbus, mut bare) = (Measured::default(), Measured::default());
    for side in order {
        bar.set_message(format!(
            "round {}/{}: {} ({})",
            round + 1,
            rig.settings.rounds,
            workload.label(),
            side.name()
        ));
        let measured = rig.measure(workload, side).await?;
        match side {
            Side::Nimbus => nimbus = measured,
            Side::Bare => bare = measured,
        }
        bar.inc(1);
    }
    Ok((nimbus, bare))
}

/// Creates every queue before anything is timed (auto-create runs on first use), and leaves
/// them empty.
async fn prepare_queues(rig: &Rig) -> Result<(), Failure> {
    for queue in rig.queues.measured() {
        rig.bare.send(queue, Vec::new()).await?;
        rig.sender.send_to(queue, ping(0)).await?;
        while rig.bare.receive(queue).await?.is_some() {}
    }
    Ok(())
}

/// Deletes what a round left in the queues (the batches; anything a failed side left behind),
/// so every round starts from empty queues.
async fn empty_queues(rig: &Rig, admin: &Database) -> Result<(), Failure> {
    for queue in rig.queues.measured() {
        match rig.target.layout {
            // A table per queue: delete its rows and keep the table the framework knows exists.
            Layout::Table => {
                let sql = format!("DELETE FROM {}", admin.qualified_table(queue));
                admin.execute(&sql).await?;
            }
            // The shared table: dropping a queue deletes its rows.
            Layout::Shared => admin.drop_queue(queue).await?,
        }
    }
    Ok(())
}

/// Drops every queue the run made and stops the sending bus, going on past failures; the first
/// one is the error, naming the queues left behind.
async fn clean_up(rig: &Rig) -> Result<(), Failure> {
    let mut left = Vec::new();
    let mut first_error = None;
    for queue in rig.queues.all() {
        if let Err(e) = rig.bare.drop_queue(queue).await {
            left.push(queue);
            first_error.get_or_insert(e);
        }
    }
    let stopped = rig.sender.stop().await;
    match first_error {
        Some(e) => Err(format!(
            "the benchmark could not drop its queues {left:?}: {e}. Fix: drop them by hand once \
             the database answers (nimbus queues lists them)"
        )
        .into()),
        None => Ok(stopped?),
    }
}
