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
//! Around each side of each workload it reads the CPU time of this process and, on PostgreSQL
//! on this machine, of the server's processes ([`cpu`]), and reports the median CPU per message.
//!
//! `--latency RATE` runs the latency benchmark instead ([`latency`]): throttled senders, idle
//! receivers, send→handled in one process and across two, request/response, and the bare SQL
//! round trip.
//!
//! The queues are tables named `Bench…<run id>`, emptied between rounds and dropped at the end,
//! even when the run fails.
//!
//! One job per module: [`message`] (the messages, handlers, tally), [`drive`] (load and
//! waiting), [`workload`] (the workloads), [`cpu`] (CPU time), [`stats`] (medians), [`report`]
//! (table and JSON), [`latency`] (the latency mode).

mod bodies;
mod bridge;
mod cpu;
mod deduplication;
mod drive;
mod groups;
pub mod latency;
mod limits;
mod memory;
mod message;
mod pgmq;
mod report;
mod shapes;
mod statements;
mod stats;
mod workload;

use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use nimbus::admin::Database;
use nimbus::Bus;

use self::cpu::CpuClock;
use self::message::{ping, Ping};
use self::pgmq::Pgmq;
use self::report::memory_mib;
use self::statements::{Breakdown, StatementStats};
use self::stats::{Peer, Round};
use self::workload::{builder, Measured, Queues, Rig, Side, Workload};
use crate::{Failure, Layout};

/// What to measure (`nimbus bench --help`).
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Messages per workload, per side, per round: a run sends `messages × rounds × 2` per
    /// workload (latency mode: per series and round).
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
    /// Endpoint instances (each its own bus, pool and concurrency limit) competing on one queue
    /// in receive+handle and end to end.
    #[arg(long, default_value_t = 1, value_parser = positive)]
    pub instances: usize,
    /// Messages per transaction in the batched send.
    #[arg(long, default_value_t = 100, value_parser = positive)]
    pub batch: usize,
    /// Messages each framework receiver takes in one transaction, always
    /// (`BusBuilder::receive_batch`); without it, the endpoint's default, which adapts the size
    /// to the backlog and the handlers' speed. pgmq's side reads and deletes this many per
    /// transaction (`pgmq.pop` without it). The bare side keeps one row per transaction, the
    /// statement a single-message queue consumer runs, so the ratio shows the gain.
    #[arg(long, value_parser = positive)]
    pub receive_batch: Option<usize>,
    /// Messages pgmq's side reads and deletes per transaction (`pgmq.read` and `pgmq.delete`),
    /// whatever `--receive-batch` says: to compare the framework's default, which adapts its
    /// batches, with pgmq's own batched receive. Without it, `--receive-batch`'s number, or
    /// `pgmq.pop` (one message) when that is not given either.
    #[arg(long, value_parser = positive)]
    pub pgmq_batch: Option<usize>,
    /// Messages per transaction the end-to-end senders send: 1 (the default) sends each message
    /// in its own transaction (`send_to`); N sends batches of N, through the framework's
    /// `send_batch` and, on the bare side, the multi-row insert the batched send runs.
    #[arg(long, default_value_t = 1, value_parser = positive)]
    pub e2e_send_batch: usize,
    /// Threads each framework receiver endpoint runs handlers on (`BusBuilder::handler_threads`;
    /// default: the CPUs).
    #[arg(long, value_parser = positive)]
    pub handler_threads: Option<usize>,
    /// Breaks each side of each workload down by statement, from `pg_stat_statements`
    /// (PostgreSQL with `shared_preload_libraries = pg_stat_statements`, such as the cluster
    /// `scripts/pg-stat-statements-cluster.sh` starts): reset before, read after, the top
    /// statements by execution time reported per message. It resets the server's statistics,
    /// so use a server of its own.
    #[arg(long, conflicts_with = "latency")]
    pub statements: bool,
    /// The workloads to run, comma-separated, each round in this order: send_1, send_batch,
    /// receive_handle (which drains the queue send_1 filled, so it needs send_1), end_to_end.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_values = ["send_1", "send_batch", "receive_handle", "end_to_end"],
        conflicts_with = "latency"
    )]
    pub workloads: Vec<Workload>,
    /// Handler-shape mode: instead of the throughput workloads, drain a queue of `--messages`
    /// with the default receive and with `receive_batch(1)`, in interleaved rounds, for each of
    /// these handler shapes (comma-separated): `none` (no SQL), `disjoint` (an UPDATE of a row
    /// of the message's own), `hot:N` (an UPDATE of one of N shared rows), `slow:DURATION`,
    /// `failing:P` (P % fail their first attempt). Reports default ÷ one-at-a-time per shape.
    #[arg(
        long,
        alias = "handler-sql",
        value_delimiter = ',',
        value_parser = shapes::shape,
        conflicts_with = "latency"
    )]
    pub handler_shapes: Vec<shapes::Shape>,
    /// Deduplication mode: instead of the throughput workloads, what deduplication costs, in
    /// interleaved rounds: `--messages` sends through `send_to` against `send_deduplicated`
    /// (a key each), and draining them without an inbox against `inbox(1h)`. Reports
    /// deduplicated ÷ plain.
    #[arg(long, conflicts_with_all = ["latency", "handler_shapes"])]
    pub deduplication: bool,
    /// Ordered-groups mode: what ordered groups cost, in interleaved rounds: `--messages`
    /// sends without a group to a plain queue against sends spread over `--group-count` groups to a queue
    /// that keeps them, and draining each. Reports grouped ÷ ungrouped.
    #[arg(long, conflicts_with_all = ["latency", "handler_shapes", "deduplication"])]
    pub groups: bool,
    /// Ordered-groups mode: how many groups the grouped messages are spread over, round robin.
    #[arg(long, default_value_t = 100, requires = "groups", value_parser = positive)]
    pub group_count: usize,
    /// Limits mode: what a limit costs the messages it never holds back, in interleaved
    /// rounds: draining `--messages` messages without a limit against with
    /// `Limit::concurrency(--concurrency)` on their type (every receiver finds a slot). Reports
    /// limited ÷ plain.
    #[arg(long, conflicts_with_all = ["latency", "handler_shapes", "deduplication", "groups"])]
    pub limits: bool,
    /// Bodies mode: what compression, encryption and the claim check cost, in interleaved
    /// rounds: `--messages` messages of `--body-size` bytes (words, which compress as text does)
    /// sent and drained plain, gzipped (`BodyCompression::gzip()`), zstd-compressed
    /// (`BodyCompression::zstd()`), encrypted (`BodyEncryption`), gzipped and encrypted, and
    /// stored apart (`ClaimCheck`). Reports each ÷ plain.
    #[arg(
        long,
        conflicts_with_all = ["latency", "handler_shapes", "deduplication", "groups", "limits"]
    )]
    pub bodies: bool,
    /// Bridge mode: how fast messages cross a bridge, in interleaved rounds: `--messages`
    /// messages moved from one queue to another within the database by an endpoint's handler,
    /// against moved by a bridge to a queue of `--bridge-to`. Reports bridge ÷ forward.
    #[arg(
        long,
        conflicts_with_all = ["latency", "handler_shapes", "deduplication", "groups", "limits", "bodies"]
    )]
    pub bridge: bool,
    /// Bridge mode: the database on the bridge's other side (a URL or connection string, as
    /// `--database` takes it; a new SQLite file when absent). Never printed.
    #[arg(long, requires = "bridge", value_name = "URL")]
    pub bridge_to: Option<String>,
    /// Bridge mode: the bridge keeps each message's way back for replies that do not copy its
    /// header (`"keep_ways_back": true`), to measure what that costs.
    #[arg(long, requires = "bridge")]
    pub keep_ways_back: bool,
    /// Large-bodies mode: sizes in megabytes (e.g. `1,20,100`). One message of each size is
    /// sent and handled in this process, its body stored apart by the claim check; reports the
    /// resident set size before, at its peak and after.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "MB",
        conflicts_with_all = ["latency", "handler_shapes", "deduplication", "groups", "limits", "bodies", "bridge"]
    )]
    pub large_bodies: Vec<usize>,
    /// Large-bodies mode: keep the bodies in their rows (`ClaimCheck::off()`), to compare.
    #[arg(long, requires = "large_bodies")]
    pub inline: bool,
    /// Bodies mode: gzip's level, 1 (fastest, the default) to 9.
    #[arg(long, requires = "bodies", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub gzip_level: Option<u32>,
    /// Latency mode: instead of the throughput workloads, send `--messages` messages per series
    /// and round at RATE messages per second to idle endpoints, and report the latencies (same
    /// process, another process, request/response, bare SQL round trip). `--instances` and
    /// `--batch` do not apply.
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub latency: Option<f64>,
    /// Latency mode: how long an idle endpoint waits before it looks at its empty queue again
    /// (polling alone would average half of it). The throughput workloads use 100 ms.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub peek_delay: Duration,
    /// Latency mode: messages each series sends (at RATE, after its endpoint starts) before the
    /// measured ones, left out of the percentiles: a new endpoint's first statements on each
    /// connection can be slow (Babelfish compiles every statement once per connection). The
    /// report gives their slowest latency apart. 0 measures from the first message.
    #[arg(long, default_value_t = 5)]
    pub warm_up: usize,
}

impl Settings {
    /// Messages pgmq's receive loops take per transaction: `--pgmq-batch`, else
    /// `--receive-batch`, else one (`pgmq.pop`).
    pub fn pgmq_receive_batch(&self) -> usize {
        self.pgmq_batch.or(self.receive_batch).unwrap_or(1)
    }

    /// The workloads `--workloads` names, once each, in the order a round runs them.
    pub fn selected_workloads(&self) -> Vec<Workload> {
        Workload::ALL
            .into_iter()
            .filter(|w| self.workloads.contains(w))
            .collect()
    }

    /// Refuses a selection that cannot run: receive+handle drains what send 1/tx sent.
    fn check_workloads(&self) -> Result<(), Failure> {
        let selected = self.selected_workloads();
        if selected.contains(&Workload::Receive) && !selected.contains(&Workload::SendOne) {
            return Err(
                "--workloads: receive_handle drains the queue send_1 fills; add send_1 \
                        (e.g. --workloads send_1,receive_handle)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// A count of at least 1.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text:?} is not a whole number of at least 1")),
    }
}

/// A rate in messages per second, above 0 and at most 100,000.
fn rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 100_000.0 => Ok(r),
        _ => Err(format!(
            "{text:?} is not a rate in messages per second above 0 and at most 100000"
        )),
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
    /// Per workload run, in [`Workload::ALL`] order, its rounds.
    pub rounds: Vec<(Workload, Vec<Round>)>,
    /// Every end-to-end latency through the framework, in microseconds.
    pub nimbus_latencies_us: Vec<u64>,
    /// Every end-to-end latency through the bare SQL, in microseconds.
    pub bare_latencies_us: Vec<u64>,
    /// Every end-to-end latency through pgmq, in microseconds (none without pgmq).
    pub pgmq_latencies_us: Vec<u64>,
    /// Resident memory at each quarter of the last round's framework end to end, in MiB.
    pub rss_quarters: Vec<f64>,
    /// Resident memory after each round, in MiB.
    pub rss_rounds: Vec<f64>,
    /// The framework's send 1/tx over every round: messages sent and the commits they took.
    pub send_one_commits: (u64, u64),
    /// Per workload run, in [`Workload::ALL`] order, the statements of the framework's side and
    /// of the bare side over every round (`--statements`; empty otherwise).
    pub statements: Vec<(Workload, Breakdown, Breakdown)>,
}

impl Results {
    fn new(workloads: &[Workload]) -> Results {
        Results {
            rounds: workloads.iter().map(|w| (*w, Vec::new())).collect(),
            statements: workloads
                .iter()
                .map(|w| (*w, Breakdown::default(), Breakdown::default()))
                .collect(),
            ..Results::default()
        }
    }

    /// Adds one round of `workload`.
    fn add(
        &mut self,
        workload: Workload,
        round: Round,
        nimbus: Measured,
        bare: Measured,
        pgmq: Option<Measured>,
    ) {
        if let Some((_, rounds)) = self.rounds.iter_mut().find(|(w, _)| *w == workload) {
            rounds.push(round);
        }
        if let Some((_, n, b)) = self.statements.iter_mut().find(|(w, ..)| *w == workload) {
            n.add(&nimbus.statements, nimbus.messages);
            b.add(&bare.statements, bare.messages);
        }
        self.nimbus_latencies_us.extend(nimbus.latencies_us);
        self.bare_latencies_us.extend(bare.latencies_us);
        if let Some(pgmq) = pgmq {
            self.pgmq_latencies_us.extend(pgmq.latencies_us);
        }
        if !nimbus.rss_quarters.is_empty() {
            self.rss_quarters = nimbus.rss_quarters;
        }
        if let Some(commits) = nimbus.commits {
            let messages = u64::try_from(nimbus.messages).unwrap_or(u64::MAX);
            self.send_one_commits.0 += messages;
            self.send_one_commits.1 += commits;
        }
    }

    /// Messages per commit in the framework's send 1/tx, over every round (`None` when it did
    /// not run).
    pub fn send_one_messages_per_commit(&self) -> Option<f64> {
        let (messages, commits) = self.send_one_commits;
        (commits > 0).then(|| messages as f64 / commits as f64)
    }
}

/// Runs the benchmark on `target` and prints the report: a table, or one JSON line with `json`.
/// `admin` empties the queues between rounds. With `--latency`, runs the latency benchmark.
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    if settings.deduplication {
        return deduplication::run(target, admin, settings, json).await;
    }
    if settings.groups {
        return groups::run(target, admin, settings, json).await;
    }
    if settings.limits {
        return limits::run(target, admin, settings, json).await;
    }
    if settings.bodies {
        return bodies::run(target, admin, settings, json).await;
    }
    if settings.bridge {
        return bridge::run(target, admin, settings, json).await;
    }
    if !settings.large_bodies.is_empty() {
        let _ = admin;
        return memory::run(target, settings, json).await;
    }
    if !settings.handler_shapes.is_empty() {
        let shapes = settings.handler_shapes.clone();
        return shapes::run(target, admin, settings, shapes, json).await;
    }
    match settings.latency {
        Some(rate) => latency::run(target, settings, rate, json).await,
        None => throughput(target, admin, settings, json).await,
    }
}

/// Runs the throughput workloads and prints their report.
async fn throughput(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    settings.check_workloads()?;
    // Before anything is made: --statements fails here on a server without the extension.
    let statements = match settings.statements {
        true => Some(StatementStats::connect(&target).await?),
        false => None,
    };
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queues = Queues::new(&run_id);
    let mut cpu = CpuClock::new(&target);
    cpu.find_server(&admin).await;
    let mut buses = Buses::default();
    let started = buses.start(&target, &settings, &queues).await;
    let Buses {
        sender,
        e2e_sender,
        bare_receivers,
    } = buses;
    let Some(sender) = sender else {
        stop_all(e2e_sender.into_iter().chain(bare_receivers)).await;
        return Err(started
            .err()
            .unwrap_or_else(|| "the benchmark's sending bus did not start".into()));
    };
    // The bare rows carry the headers the framework writes for the benchmark's message, so
    // both sides write the same bytes.
    let sample = message::ping(settings.body_size);
    let bare_receivers = match bare_receivers
        .into_iter()
        .map(|bus| bus.bare_sql(&sample).map(|bare| (bus, bare)))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(bare_receivers) => bare_receivers,
        Err(e) => {
            stop_all(std::iter::once(sender).chain(e2e_sender)).await;
            return Err(e.into());
        }
    };
    let bare = match sender.bare_sql(&sample) {
        Ok(bare) => bare,
        Err(e) => {
            stop_all(std::iter::once(sender).chain(e2e_sender)).await;
            return Err(e.into());
        }
    };
    // pgmq's side, where the database has the extension: the same headers as the other sides.
    let pgmq = match target.backend {
        "postgres" => {
            let connections = settings.concurrency * settings.instances.max(1);
            match Pgmq::connect(&target.url, connections, bare.headers_json()).await {
                Ok(pgmq) => pgmq.map(Arc::new),
                Err(e) => {
                    let receivers = bare_receivers.into_iter().map(|(bus, _)| bus);
                    stop_all(std::iter::once(sender).chain(e2e_sender).chain(receivers)).await;
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    let rig = Rig {
        cpu,
        target,
        settings,
        bare,
        sender,
        e2e_sender,
        bare_receivers,
        queues,
        statements,
        pgmq,
    };
    let measured = match started {
        Ok(()) => all_rounds(&rig, &admin, json).await,
        Err(e) => Err(e),
    };
    let cleaned = clean_up(&rig).await;
    let results = measured?;
    cleaned?;
    report::print(&rig, &results, json)
}

/// The buses a throughput run sends and receives bare through, each started as soon as made.
#[derive(Default)]
struct Buses {
    /// Every framework send but the batched end-to-end ones (routes `Ping` to the send batch
    /// queue).
    sender: Option<Bus>,
    /// With `--e2e-send-batch` above 1, the end-to-end senders' bus (routes `Ping` to the
    /// end-to-end queue, for `send_batch`).
    e2e_sender: Option<Bus>,
    /// One per `--instances`, for the bare receive loops' pools.
    bare_receivers: Vec<Bus>,
}

impl Buses {
    /// Starts every bus; on a failure, the ones started so far stay in `self` to be stopped.
    async fn start(
        &mut self,
        target: &Target,
        settings: &Settings,
        queues: &Queues,
    ) -> Result<(), Failure> {
        let concurrency = settings.concurrency;
        self.sender = Some(
            builder(target, concurrency, &queues.sender, "sender")
                .route::<Ping>(queues.nimbus_batch.clone())
                .build()?
                .start()
                .await?,
        );
        if settings.e2e_send_batch > 1 {
            self.e2e_sender = Some(
                builder(target, concurrency, &queues.sender, "e2e-sender")
                    .route::<Ping>(queues.nimbus_e2e.clone())
                    .build()?
                    .start()
                    .await?,
            );
        }
        for i in 0..settings.instances {
            let instance = format!("bare-receiver-{i}");
            let bus = builder(target, concurrency, &queues.sender, &instance)
                .build()?
                .start()
                .await?;
            self.bare_receivers.push(bus);
        }
        Ok(())
    }
}

/// Stops every bus of `buses`, going on past failures (the run has already failed).
async fn stop_all(buses: impl IntoIterator<Item = Bus>) {
    for bus in buses {
        let _ = bus.stop().await;
    }
}

/// Makes the queues, then runs every round; a progress bar on stderr unless `json`.
async fn all_rounds(rig: &Rig, admin: &Database, json: bool) -> Result<Results, Failure> {
    let steps = rig.settings.rounds * rig.settings.selected_workloads().len() * sides(rig).len();
    let bar = progress_bar(steps as u64, json)?;
    let results = rounds(rig, admin, &bar).await;
    bar.finish_and_clear();
    results
}

/// The sides a run compares: the framework and the bare SQL, and pgmq where it is installed.
fn sides(rig: &Rig) -> Vec<Side> {
    let mut sides = vec![Side::Nimbus, Side::Bare];
    if rig.pgmq.is_some() {
        sides.push(Side::Pgmq);
    }
    sides
}

/// Runs every round, showing each step on `bar`. Each round starts with the next side in turn
/// (round 1 the framework, round 2 the bare SQL, round 3 pgmq where it runs, …), so that no side
/// always finds the caches warm.
async fn rounds(rig: &Rig, admin: &Database, bar: &ProgressBar) -> Result<Results, Failure> {
    prepare_queues(rig).await?;
    let workloads = rig.settings.selected_workloads();
    let mut results = Results::new(&workloads);
    let sides = sides(rig);
    for round in 0..rig.settings.rounds {
        let mut order = sides.clone();
        order.rotate_left(round % sides.len());
        for &workload in &workloads {
            let (nimbus, bare, pgmq) = sides_of(rig, workload, &order, round, bar).await?;
            let round = Round {
                nimbus: nimbus.rate,
                bare: bare.rate,
                nimbus_first: order[0] == Side::Nimbus,
                nimbus_cpu: nimbus.cpu,
                bare_cpu: bare.cpu,
                pgmq: pgmq.as_ref().map(|p| Peer {
                    rate: p.rate,
                    cpu: p.cpu,
                }),
            };
            results.add(workload, round, nimbus, bare, pgmq);
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

/// Runs `workload` on every side in `order`; returns (framework, bare, pgmq).
async fn sides_of(
    rig: &Rig,
    workload: Workload,
    order: &[Side],
    round: usize,
    bar: &ProgressBar,
) -> Result<(Measured, Measured, Option<Measured>), Failure> {
    let (mut nimbus, mut bare, mut pgmq) = (Measured::default(), Measured::default(), None);
    for &side in order {
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
            Side::Pgmq => pgmq = Some(measured),
        }
        bar.inc(1);
    }
    Ok((nimbus, bare, pgmq))
}

/// Creates every queue before anything is timed (auto-create runs on first use), lets every
/// bus see the queues it uses (a bus's first send to a queue looks it up among the tables, and
/// keeps looking until one commits), and leaves them empty.
async fn prepare_queues(rig: &Rig) -> Result<(), Failure> {
    for queue in rig.queues.measured() {
        rig.bare.send(queue, Vec::new()).await?;
        rig.sender.send_to(queue, ping(0)).await?;
    }
    if let Some(bus) = &rig.e2e_sender {
        bus.send_batch([ping(0)]).await?;
    }
    if let Some(pgmq) = &rig.pgmq {
        for queue in [
            &rig.queues.bare_send,
            &rig.queues.bare_batch,
            &rig.queues.bare_e2e,
        ] {
            pgmq.create(queue).await?;
            pgmq.purge(queue).await?;
        }
    }
    for queue in rig.queues.measured() {
        while rig.bare.receive(queue).await?.is_some() {}
        for (_, bare) in &rig.bare_receivers {
            while bare.receive(queue).await?.is_some() {}
        }
    }
    Ok(())
}

/// Deletes what a round left in the queues (the batches; anything a failed side left behind),
/// so every round starts from empty queues. On PostgreSQL a queue's table is truncated, which
/// also leaves it as clean as in the first round: after a `DELETE`, where autovacuum is off (as
/// on this project's servers) nothing reclaims the dead rows during a run (an endpoint's table
/// maintenance looks every 30 s, longer than a side takes), and every later round's receives,
/// on both sides, skipped more of them (bare receive+handle fell from 8,900 to 4,700 msg/s over
/// 5 rounds). A `VACUUM` instead is worse: an emptied, vacuumed table has statistics of zero
/// rows, so a receive planned while it is empty (the bare end-to-end loops poll it) is planned
/// as a sequential scan and sort and keeps that plan as the table fills (bare end to end fell to
/// 200 msg/s). Truncating leaves the statistics unknown, as for a new table.
async fn empty_queues(rig: &Rig, admin: &Database) -> Result<(), Failure> {
    for queue in rig.queues.measured() {
        match rig.target.layout {
            // A table per queue: delete its rows and keep the table the framework knows exists.
            Layout::Table | Layout::Nservicebus => {
                let verb = match rig.target.backend {
                    "postgres" => "TRUNCATE",
                    _ => "DELETE FROM",
                };
                let sql = format!("{verb} {}", admin.qualified_table(queue));
                admin.execute(&sql).await?;
            }
            // The shared table: dropping a queue deletes its rows.
            Layout::Shared => admin.drop_queue(queue).await?,
        }
    }
    if let Some(pgmq) = &rig.pgmq {
        for queue in [
            &rig.queues.bare_send,
            &rig.queues.bare_batch,
            &rig.queues.bare_e2e,
        ] {
            pgmq.purge(queue).await?;
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
            left.push(queue.to_string());
            first_error.get_or_insert(e.to_string());
        }
    }
    if let Some(pgmq) = &rig.pgmq {
        for queue in [
            &rig.queues.bare_send,
            &rig.queues.bare_batch,
            &rig.queues.bare_e2e,
        ] {
            if let Err(e) = pgmq.drop_queue(queue).await {
                left.push(pgmq::queue_name(queue));
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    let mut stopped = rig.sender.stop().await;
    let others = rig
        .e2e_sender
        .iter()
        .chain(rig.bare_receivers.iter().map(|(bus, _)| bus));
    for bus in others {
        let outcome = bus.stop().await;
        if stopped.is_ok() {
            stopped = outcome;
        }
    }
    match first_error {
        Some(e) => Err(format!(
            "the benchmark could not drop its queues {left:?}: {e}. Fix: drop them by hand once \
             the database answers (nimbus queues lists them)"
        )
        .into()),
        None => Ok(stopped?),
    }
}
