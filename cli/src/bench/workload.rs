//! The four workloads, each measurable through the framework or as the bare SQL it runs.
//!
//! Rates, per side:
//! * **send 1/tx** and **send batch**: messages over the time every sending task took;
//! * **receive+handle**: draining a queue filled by this round's send 1/tx, counted from the first
//!   message handled to the last (the framework's endpoint start-up is not throughput);
//! * **end to end**: receivers already running, messages over the time from the first send to
//!   the last message handled, with each message's send→handled latency; the senders send one
//!   message per transaction, or `--e2e-send-batch` per transaction.
//!
//! The bare receive loops run one row per transaction (the statement of pgmq's `pop`), on one
//! pool per `--instances` as the framework's endpoints do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::bench::BareSql;
use nimbus::{Bus, BusBuilder};

use super::cpu::{CpuClock, CpuPerMessage};
use super::drive::{join_all, run_tasks, wait_for};
use super::message::{ping, ping_body, Empty, Tally};
use super::pgmq::Pgmq;
use super::report::memory_mib;
use super::statements::{Statement, StatementStats};
use super::stats::per_second;
use super::{Settings, Target};
use crate::Failure;

/// How long an empty bare receive loop sleeps before it looks again (end to end).
const BARE_IDLE: Duration = Duration::from_millis(10);

/// A workload of the benchmark (`--workloads` names them by their JSON keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// One message per transaction.
    #[value(name = "send_1")]
    SendOne,
    /// `--batch` messages per transaction.
    #[value(name = "send_batch")]
    SendBatch,
    /// Draining the queue send 1/tx filled, with an empty handler.
    #[value(name = "receive_handle")]
    Receive,
    /// Senders and receivers together.
    #[value(name = "end_to_end")]
    EndToEnd,
}

impl Workload {
    /// Every workload, in the order a round runs them (receive drains what send 1/tx sent).
    pub const ALL: [Workload; 4] = [
        Workload::SendOne,
        Workload::SendBatch,
        Workload::Receive,
        Workload::EndToEnd,
    ];

    /// Its name in the JSON report (stable).
    pub fn key(self) -> &'static str {
        match self {
            Workload::SendOne => "send_1",
            Workload::SendBatch => "send_batch",
            Workload::Receive => "receive_handle",
            Workload::EndToEnd => "end_to_end",
        }
    }

    /// Its name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Workload::SendOne => "send 1/tx",
            Workload::SendBatch => "send batch",
            Workload::Receive => "receive+handle",
            Workload::EndToEnd => "end to end",
        }
    }
}

/// Who runs a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The framework: `Bus` sends, endpoints with a handler.
    Nimbus,
    /// The same statements with no framework around them (`Bus::bare_sql`).
    Bare,
    /// pgmq's functions (where the database has pgmq), on the queues of the bare side.
    Pgmq,
}

impl Side {
    /// Its name in the progress bar and the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Side::Nimbus => "nimbus",
            Side::Bare => "bare",
            Side::Pgmq => "pgmq",
        }
    }
}

/// One side of one workload in one round.
#[derive(Debug, Default)]
pub struct Measured {
    /// How many messages it sent or handled.
    pub messages: usize,
    /// Messages per second.
    pub rate: f64,
    /// CPU per message over the whole side (set by whoever sampled the CPU around it).
    pub cpu: CpuPerMessage,
    /// Send→handled latencies in microseconds (end to end only).
    pub latencies_us: Vec<u64>,
    /// Resident memory at 25/50/75/100% of the framework's end to end, in MiB.
    pub rss_quarters: Vec<f64>,
    /// What the server ran meanwhile, from `pg_stat_statements` (`--statements` only).
    pub statements: Vec<Statement>,
    /// The commits the framework's sends took (send 1/tx only): fewer than the messages where
    /// concurrent sends shared commits.
    pub commits: Option<u64>,
}

/// The queues of one run: fixed names with the run's id, reused by every round.
#[derive(Debug, Clone)]
pub struct Queues {
    /// The run's id, the end of every queue's name.
    pub run: String,
    /// The sending bus's own input queue.
    pub sender: String,
    /// Filled by the framework's send 1/tx, drained by its receive+handle.
    pub nimbus_send: String,
    /// Filled by the bare send 1/tx, drained by the bare receive+handle.
    pub bare_send: String,
    /// The framework's send batch (the route of `Ping`).
    pub nimbus_batch: String,
    /// The bare send batch.
    pub bare_batch: String,
    /// The framework's end to end.
    pub nimbus_e2e: String,
    /// The bare end to end.
    pub bare_e2e: String,
}

impl Queues {
    /// Queue names for the run `run` (a short unique id).
    pub fn new(run: &str) -> Queues {
        let q = |what: &str| format!("Bench{what}{run}");
        Queues {
            run: run.to_string(),
            sender: q("Sender"),
            nimbus_send: q("Fw"),
            bare_send: q("Bare"),
            nimbus_batch: q("Batch"),
            bare_batch: q("BareBatch"),
            nimbus_e2e: q("E2e"),
            bare_e2e: q("BareE2e"),
        }
    }

    /// The queues the workloads fill, which are emptied between rounds.
    pub fn measured(&self) -> [&str; 6] {
        [
            &self.nimbus_send,
            &self.bare_send,
            &self.nimbus_batch,
            &self.bare_batch,
            &self.nimbus_e2e,
            &self.bare_e2e,
        ]
    }

    /// Every queue the run creates.
    pub fn all(&self) -> Vec<&str> {
        let mut all = self.measured().to_vec();
        all.push(&self.sender);
        all
    }
}

/// A bus builder for the benchmark's database, with this concurrency limit and a peek delay of
/// 100 ms (the latency mode sets its own).
pub fn builder(target: &Target, concurrency: usize, app: &str, instance: &str) -> BusBuilder {
    let b = Bus::builder()
        .names(app, instance)
        .database_url(&target.url)
        .storage_layout(target.layout.into())
        .concurrency(concurrency)
        // The benchmark sends to its queues before their receivers start.
        .create_queues_on_send(true)
        .peek_delay(Duration::from_millis(100));
    match &target.schema {
        Some(s) => b.schema(s),
        None => b,
    }
}

/// Everything a workload needs: the sending buses, the bare SQL, the queues, the CPU clock and
/// (`--statements`) the statement counters.
pub struct Rig {
    /// The database.
    pub target: Target,
    /// Sizes and concurrency.
    pub settings: Settings,
    /// The bus every framework send goes through but the batched end-to-end sends.
    pub sender: Bus,
    /// With `--e2e-send-batch` above 1: the bus the end-to-end senders send batches through
    /// (`send_batch` goes to the route of its type, and this one routes it to the end-to-end
    /// queue).
    pub e2e_sender: Option<Bus>,
    /// The bare SQL over the sender's pool: the bare sends.
    pub bare: BareSql,
    /// One pool per `--instances`, as each framework receiver endpoint has its own: the bare
    /// receive loops of instance `i` run on `bare_receivers[i]`, so they compete neither with
    /// the bare senders nor with more loops than an endpoint has receivers.
    pub bare_receivers: Vec<(Bus, BareSql)>,
    /// The run's queues.
    pub queues: Queues,
    /// Reads the process's and the database's CPU time.
    pub cpu: CpuClock,
    /// Resets and reads `pg_stat_statements` around each side (`--statements`).
    pub statements: Option<StatementStats>,
    /// pgmq's connections, where the database has pgmq (its queues are named after the bare
    /// side's).
    pub pgmq: Option<Arc<Pgmq>>,
}

impl Rig {
    /// Runs `workload` on `side` once, with the CPU it took per message (start and stop of the
    /// side's endpoints included).
    /// With `--statements`, the server's statement counters are reset before and read after
    /// (outside the CPU readings).
    pub async fn measure(&self, workload: Workload, side: Side) -> Result<Measured, Failure> {
        if let Some(stats) = &self.statements {
            stats.reset().await?;
        }
        let before = self.cpu.before();
        let mut measured = self.run(workload, side).await?;
        let after = self.cpu.after();
        measured.cpu = self.cpu.per_message(before, after, measured.messages);
        if let Some(stats) = &self.statements {
            measured.statements = stats.read().await?;
        }
        Ok(measured)
    }

    /// Runs `workload` on `side` once.
    async fn run(&self, workload: Workload, side: Side) -> Result<Measured, Failure> {
        match (workload, side) {
            (Workload::SendOne, Side::Nimbus) => self.send_one_nimbus().await,
            (Workload::SendOne, Side::Bare) => self.send_one_bare().await,
            (Workload::SendBatch, Side::Nimbus) => self.send_batch_nimbus().await,
            (Workload::SendBatch, Side::Bare) => self.send_batch_bare().await,
            (Workload::Receive, Side::Nimbus) => self.receive_nimbus().await,
            (Workload::Receive, Side::Bare) => self.receive_bare().await,
            (Workload::EndToEnd, Side::Nimbus) => self.end_to_end_nimbus().await,
            (Workload::EndToEnd, Side::Bare) => self.end_to_end_bare().await,
            (_, Side::Pgmq) => match &self.pgmq {
                Some(pgmq) => self.run_pgmq(pgmq, workload).await,
                None => Err("pgmq is not installed in this database".into()),
            },
        }
    }

    /// Runs `workload` through pgmq: the same messages, senders and receive loops as the bare
    /// side, each statement one of pgmq's functions.
    async fn run_pgmq(&self, pgmq: &Arc<Pgmq>, workload: Workload) -> Result<Measured, Failure> {
        let q = &self.queues;
        match workload {
            Workload::SendOne => {
                let (elapsed, total) = self.sending_pgmq(pgmq, &q.bare_send, 1).await?;
                Ok(Self::rate(total, elapsed))
            }
            Workload::SendBatch => {
                let batch = self.settings.batch;
                let (elapsed, total) = self.sending_pgmq(pgmq, &q.bare_batch, batch).await?;
                Ok(Self::rate(total, elapsed))
            }
            Workload::Receive => {
                let tally = Tally::default();
                let started = Instant::now();
                let limit = self.settings.pgmq_receive_batch();
                let loops = (0..self.settings.concurrency * self.settings.instances)
                    .map(|_| {
                        let (pgmq, queue, tally) =
                            (pgmq.clone(), q.bare_send.clone(), tally.clone());
                        actix_rt::spawn(async move {
                            loop {
                                let bodies = pgmq.receive(&queue, limit).await?;
                                if bodies.is_empty() {
                                    return Ok(());
                                }
                                bodies.iter().for_each(|b| tally.record_body(b));
                            }
                        })
                    })
                    .collect();
                join_all(loops).await?;
                Ok(Measured {
                    messages: self.messages(),
                    rate: tally.rate_after_first(started),
                    ..Measured::default()
                })
            }
            Workload::EndToEnd => {
                let tally = Tally::default();
                let stop = Arc::new(AtomicBool::new(false));
                let limit = self.settings.pgmq_receive_batch();
                let loops: Vec<_> = (0..self.settings.concurrency * self.settings.instances)
                    .map(|_| {
                        let (pgmq, queue) = (pgmq.clone(), q.bare_e2e.clone());
                        let (tally, stop) = (tally.clone(), stop.clone());
                        actix_rt::spawn(async move {
                            while !stop.load(Ordering::Relaxed) {
                                let bodies = pgmq.receive(&queue, limit).await?;
                                if bodies.is_empty() {
                                    actix_rt::time::sleep(BARE_IDLE).await;
                                }
                                bodies.iter().for_each(|b| tally.record_body(b));
                            }
                            Ok(())
                        })
                    })
                    .collect();
                let sending = self.sending_pgmq(pgmq, &q.bare_e2e, self.settings.e2e_send_batch);
                self.loops_end_to_end(&tally, &stop, loops, sending, "the pgmq receive loops")
                    .await
            }
        }
    }

    /// About `--messages` pgmq sends to `queue`, `batch` per transaction, over `--concurrency`
    /// tasks; returns the elapsed time and how many messages that was.
    async fn sending_pgmq(
        &self,
        pgmq: &Arc<Pgmq>,
        queue: &str,
        batch: usize,
    ) -> Result<(Duration, usize), Failure> {
        let (batches, total) = self.batches(batch);
        let (pgmq, queue, size) = (pgmq.clone(), queue.to_string(), self.settings.body_size);
        let elapsed = run_tasks(batches, self.settings.concurrency, move || {
            let (pgmq, queue) = (pgmq.clone(), queue.clone());
            async move {
                let bodies = (0..batch)
                    .map(|_| ping_body(size))
                    .collect::<serde_json::Result<Vec<_>>>()?;
                pgmq.send(&queue, bodies).await
            }
        })
        .await?;
        Ok((elapsed, total))
    }

    /// Messages per round and side.
    fn messages(&self) -> usize {
        self.settings.messages
    }

    /// A rate-only measurement of `count` messages in `elapsed`.
    fn rate(count: usize, elapsed: Duration) -> Measured {
        Measured {
            messages: count,
            rate: per_second(count, elapsed),
            ..Measured::default()
        }
    }

    async fn send_one_nimbus(&self) -> Result<Measured, Failure> {
        let before = self.sender.metrics().send_commits;
        let elapsed = self.sending_nimbus(&self.queues.nimbus_send).await?;
        let commits = self.sender.metrics().send_commits.saturating_sub(before);
        Ok(Measured {
            commits: Some(commits),
            ..Self::rate(self.messages(), elapsed)
        })
    }

    async fn send_one_bare(&self) -> Result<Measured, Failure> {
        let (elapsed, total) = self.sending_bare(&self.queues.bare_send, 1).await?;
        Ok(Self::rate(total, elapsed))
    }

    /// `--messages` framework sends to `queue`, one per transaction, over `--concurrency` tasks.
    async fn sending_nimbus(&self, queue: &str) -> Result<Duration, Failure> {
        let (bus, queue, size) = (
            self.sender.clone(),
            queue.to_string(),
            self.settings.body_size,
        );
        run_tasks(self.messages(), self.settings.concurrency, move || {
            let (bus, queue) = (bus.clone(), queue.clone());
            async move { Ok(bus.send_to(&queue, ping(size)).await?) }
        })
        .await
    }

    /// About `--messages` bare inserts into `queue` in transactions of `batch` rows each (the
    /// multi-row insert the framework's batched send runs; one row when `batch` is 1), over
    /// `--concurrency` tasks; returns the elapsed time and how many messages that was.
    async fn sending_bare(&self, queue: &str, batch: usize) -> Result<(Duration, usize), Failure> {
        let (batches, total) = self.batches(batch);
        let (bare, queue, size) = (
            self.bare.clone(),
            queue.to_string(),
            self.settings.body_size,
        );
        let elapsed = run_tasks(batches, self.settings.concurrency, move || {
            let (bare, queue) = (bare.clone(), queue.clone());
            async move {
                let bodies = (0..batch)
                    .map(|_| ping_body(size))
                    .collect::<serde_json::Result<Vec<_>>>()?;
                Ok(bare.send(&queue, bodies).await?)
            }
        })
        .await?;
        Ok((elapsed, total))
    }

    /// About `--messages` framework sends through `bus`'s `send_batch` (to the route of
    /// [`Ping`](super::message::Ping) on that bus), `batch` per transaction, over
    /// `--concurrency` tasks; returns the elapsed time and how many messages that was.
    async fn sending_nimbus_batches(
        &self,
        bus: &Bus,
        batch: usize,
    ) -> Result<(Duration, usize), Failure> {
        let (batches, total) = self.batches(batch);
        let (bus, size) = (bus.clone(), self.settings.body_size);
        let elapsed = run_tasks(batches, self.settings.concurrency, move || {
            let bus = bus.clone();
            async move { Ok(bus.send_batch((0..batch).map(|_| ping(size))).await?) }
        })
        .await?;
        Ok((elapsed, total))
    }

    /// How many transactions of `batch` messages a round sends (`--messages` rounded up to
    /// whole batches), and how many messages that is.
    fn batches(&self, batch: usize) -> (usize, usize) {
        let batches = self.messages().div_ceil(batch.max(1));
        (batches, batches * batch.max(1))
    }

    async fn send_batch_nimbus(&self) -> Result<Measured, Failure> {
        let (elapsed, total) = self
            .sending_nimbus_batches(&self.sender, self.settings.batch)
            .await?;
        Ok(Self::rate(total, elapsed))
    }

    async fn send_batch_bare(&self) -> Result<Measured, Failure> {
        let (elapsed, total) = self
            .sending_bare(&self.queues.bare_batch, self.settings.batch)
            .await?;
        Ok(Self::rate(total, elapsed))
    }

    /// How many messages a round's end to end sends: `--messages` rounded up to whole
    /// `--e2e-send-batch` batches.
    fn e2e_messages(&self) -> usize {
        self.batches(self.settings.e2e_send_batch).1
    }

    /// The framework's end-to-end sends: `send_to` one per transaction, or `send_batch` with
    /// `--e2e-send-batch`.
    async fn sending_e2e_nimbus(&self) -> Result<(), Failure> {
        match &self.e2e_sender {
            Some(bus) => {
                self.sending_nimbus_batches(bus, self.settings.e2e_send_batch)
                    .await?;
            }
            None => {
                self.sending_nimbus(&self.queues.nimbus_e2e).await?;
            }
        }
        Ok(())
    }

    /// Starts `--instances` endpoints receiving from `queue` with an empty handler counting
    /// into `tally`.
    async fn receivers(&self, queue: &str, tally: &Tally) -> Result<Vec<Bus>, Failure> {
        let mut receivers = Vec::new();
        for i in 0..self.settings.instances {
            let endpoint = builder(
                &self.target,
                self.settings.concurrency,
                queue,
                &format!("receiver-{i}"),
            )
            .handler(Empty(tally.clone()));
            let endpoint = match self.settings.receive_batch {
                Some(messages) => endpoint.receive_batch(messages),
                None => endpoint,
            };
            let endpoint = match self.settings.handler_threads {
                Some(threads) => endpoint.handler_threads(threads),
                None => endpoint,
            }
            .build()?;
            receivers.push(endpoint.start().await?);
        }
        Ok(receivers)
    }

    /// Stops every receiver, even when one fails to stop; the first failure is the error.
    async fn stop(receivers: Vec<Bus>) -> Result<(), Failure> {
        let mut first_error = None;
        for r in receivers {
            if let Err(e) = r.stop().await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), |e| Err(e.into()))
    }

    async fn receive_nimbus(&self) -> Result<Measured, Failure> {
        let tally = Tally::default();
        let started = Instant::now();
        let receivers = self.receivers(&self.queues.nimbus_send, &tally).await?;
        let waited = wait_for(&tally, self.messages(), "the framework").await;
        Self::stop(receivers).await?;
        waited?;
        Ok(Measured {
            messages: self.messages(),
            rate: tally.rate_after_first(started),
            ..Measured::default()
        })
    }

    /// The bare SQL the `loop_index`th bare receive loop runs on: `--concurrency` loops on
    /// each instance's pool, as each framework endpoint runs `--concurrency` receivers on its
    /// own.
    fn bare_receiver(&self, loop_index: usize) -> BareSql {
        let instance = loop_index / self.settings.concurrency.max(1);
        self.bare_receivers
            .get(instance)
            .map_or_else(|| self.bare.clone(), |(_, bare)| bare.clone())
    }

    /// `--concurrency × --instances` bare receive loops; each ends when it finds the queue empty.
    async fn receive_bare(&self) -> Result<Measured, Failure> {
        let tally = Tally::default();
        let started = Instant::now();
        let loops = (0..self.settings.concurrency * self.settings.instances)
            .map(|i| {
                let (bare, queue) = (self.bare_receiver(i), self.queues.bare_send.clone());
                let tally = tally.clone();
                actix_rt::spawn(async move {
                    while let Some(body) = bare.receive(&queue).await? {
                        tally.record_body(&body);
                    }
                    Ok(())
                })
            })
            .collect();
        join_all(loops).await?;
        Ok(Measured {
            messages: self.messages(),
            rate: tally.rate_after_first(started),
            ..Measured::default()
        })
    }

    async fn end_to_end_nimbus(&self) -> Result<Measured, Failure> {
        let tally = Tally::default();
        let receivers = self.receivers(&self.queues.nimbus_e2e, &tally).await?;
        let started = Instant::now();
        let rss_quarters = {
            let sending = self.sending_e2e_nimbus();
            let watching = self.watch_memory(&tally);
            tokio::try_join!(sending, watching).map(|(_, rss)| rss)
        };
        Self::stop(receivers).await?;
        let rss_quarters = rss_quarters?;
        let messages = self.e2e_messages();
        Ok(Measured {
            messages,
            rate: per_second(messages, Self::until_last(&tally, started)),
            latencies_us: tally.latencies_us(),
            rss_quarters,
            ..Measured::default()
        })
    }

    /// Waits for the framework to handle every message, noting the resident memory at each
    /// quarter.
    async fn watch_memory(&self, tally: &Tally) -> Result<Vec<f64>, Failure> {
        let mut quarters = Vec::new();
        for quarter in 1..=4 {
            wait_for(tally, self.e2e_messages() * quarter / 4, "the framework").await?;
            quarters.push(memory_mib().0);
        }
        Ok(quarters)
    }

    async fn end_to_end_bare(&self) -> Result<Measured, Failure> {
        let tally = Tally::default();
        let stop = Arc::new(AtomicBool::new(false));
        let loops = self.bare_receive_loops(&tally, &stop);
        let sending = self.sending_bare(&self.queues.bare_e2e, self.settings.e2e_send_batch);
        self.loops_end_to_end(&tally, &stop, loops, sending, "the bare receive loops")
            .await
    }

    /// An end to end whose receive `loops` (the bare SQL's or pgmq's) run until `stop`: times
    /// `sending` and the loops from the first send to the last message `tally` counted, then
    /// stops the loops (`who` names them if they fall short).
    async fn loops_end_to_end(
        &self,
        tally: &Tally,
        stop: &AtomicBool,
        loops: Vec<actix_rt::task::JoinHandle<Result<(), Failure>>>,
        sending: impl std::future::Future<Output = Result<(Duration, usize), Failure>>,
        who: &str,
    ) -> Result<Measured, Failure> {
        let started = Instant::now();
        let messages = self.e2e_messages();
        let handled = match sending.await {
            Ok(_) => wait_for(tally, messages, who).await,
            Err(e) => Err(e),
        };
        stop.store(true, Ordering::Relaxed);
        let joined = join_all(loops).await;
        handled?;
        joined?;
        Ok(Measured {
            messages,
            rate: per_second(messages, Self::until_last(tally, started)),
            latencies_us: tally.latencies_us(),
            ..Measured::default()
        })
    }

    /// `--concurrency × --instances` bare receive loops on the end-to-end queue, sleeping while
    /// it is empty, until `stop`: one row per transaction, the statement of pgmq's `pop`.
    fn bare_receive_loops(
        &self,
        tally: &Tally,
        stop: &Arc<AtomicBool>,
    ) -> Vec<actix_rt::task::JoinHandle<Result<(), Failure>>> {
        (0..self.settings.concurrency * self.settings.instances)
            .map(|i| {
                let (bare, queue) = (self.bare_receiver(i), self.queues.bare_e2e.clone());
                let (tally, stop) = (tally.clone(), stop.clone());
                actix_rt::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        match bare.receive(&queue).await? {
                            Some(body) => tally.record_body(&body),
                            None => actix_rt::time::sleep(BARE_IDLE).await,
                        }
                    }
                    Ok(())
                })
            })
            .collect()
    }

    /// The time from `started` to the last message `tally` counted.
    fn until_last(tally: &Tally, started: Instant) -> Duration {
        tally
            .last()
            .map_or_else(|| started.elapsed(), |last| last - started)
    }
}
