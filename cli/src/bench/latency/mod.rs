//! `nimbus bench --latency RATE`: how long one message takes when nothing is queued ahead of it.
//!
//! Senders are throttled to RATE messages per second, evenly spaced and far below what the
//! database can take, so latency measures the framework, not a backlog. Receiving endpoints are
//! idle (peek delay `--peek-delay`, 1 s by default: polling alone would average half of it), so
//! what brings a message to its handler at once is a wake-up. Four series, each `--messages`
//! messages per round:
//!
//! * **same process**: send→handled, the receiving endpoint in this process;
//! * **other process**: send→handled, the receiving endpoint in a child process (this binary's
//!   hidden `bench-receiver` command, see [`remote`]); only PostgreSQL's LISTEN/NOTIFY wakes it,
//!   on the other databases it finds a message at its next peek;
//! * **request/response**: `Bus::request` to an endpoint that replies, one request at a time;
//! * **bare SQL round trip**: one `INSERT`, then the skip-locked `DELETE` of that row on the same
//!   pool — the floor under every series.
//!
//! Each series first sends `--warm-up` messages (5 by default) to its new endpoint and lets it
//! fall idle again; their latencies are reported apart (a new connection's first statements can
//! be slow: Babelfish compiles each statement once per connection), not in the percentiles.
//! Rounds run every series, the order reversed every other round. Percentiles are over every
//! round's samples. One job per module: [`series`] (the measurements), [`remote`] (the other
//! process), [`report`] (table and JSON).

mod remote;
mod report;
mod series;

pub use remote::{receive, ReceiverArgs};

use nimbus::bench::BareSql;
use nimbus::Bus;
use series::Sampled;

use super::message::{ping, Request};
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// A latency series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Series {
    /// Send→handled, receiver in this process.
    SameProcess,
    /// Send→handled, receiver in another process.
    CrossProcess,
    /// `Bus::request` to a replying endpoint, until the reply is back.
    RequestResponse,
    /// A bare `INSERT` and the `DELETE` of that row.
    BareRoundTrip,
}

impl Series {
    /// Every series, in the order odd rounds run them (even rounds reverse it).
    pub const ALL: [Series; 4] = [
        Series::SameProcess,
        Series::CrossProcess,
        Series::RequestResponse,
        Series::BareRoundTrip,
    ];

    /// Its name in the JSON report (stable).
    pub fn key(self) -> &'static str {
        match self {
            Series::SameProcess => "same_process",
            Series::CrossProcess => "cross_process",
            Series::RequestResponse => "request_response",
            Series::BareRoundTrip => "bare_round_trip",
        }
    }

    /// Its name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Series::SameProcess => "send->handled, same process",
            Series::CrossProcess => "send->handled, other process",
            Series::RequestResponse => "request/response round trip",
            Series::BareRoundTrip => "bare SQL round trip (floor)",
        }
    }
}

/// The queues of one latency run.
#[derive(Debug, Clone)]
pub struct Queues {
    /// The sending bus's input queue (never received from; dropped in case).
    pub bus_input: String,
    /// The sending bus's instance queue, where replies come back.
    pub bus_instance: String,
    /// Received by an endpoint in this process.
    pub local: String,
    /// Received by an endpoint in the child process.
    pub remote: String,
    /// Received by the replying endpoint.
    pub responder: String,
    /// The bare SQL round trip's.
    pub bare: String,
}

impl Queues {
    /// Queue names for the run `run` (a short unique id).
    fn new(run: &str) -> Queues {
        let q = |what: &str| format!("BenchLat{what}{run}");
        Queues {
            bus_input: q("Sender"),
            bus_instance: format!("{}.sender", q("Sender")),
            local: q("Local"),
            remote: q("Remote"),
            responder: q("Responder"),
            bare: q("Bare"),
        }
    }

    /// Every queue the run may create.
    fn all(&self) -> [&str; 6] {
        [
            &self.bus_input,
            &self.bus_instance,
            &self.local,
            &self.remote,
            &self.responder,
            &self.bare,
        ]
    }
}

/// Everything a latency series needs.
pub struct Rig {
    /// The database.
    pub target: Target,
    /// Sizes, rounds, concurrency, peek delay.
    pub settings: Settings,
    /// Messages per second.
    pub rate: f64,
    /// Sends every message and every request (it has an instance queue for the replies).
    pub bus: Bus,
    /// The bare SQL over the bus's pool.
    pub bare: BareSql,
    /// The run's queues.
    pub queues: Queues,
}

/// Every sample of every series: per series, per round, in microseconds.
#[derive(Debug)]
pub struct Results {
    /// In [`Series::ALL`] order.
    pub series: Vec<(Series, Vec<Sampled>)>,
}

impl Results {
    /// Every measured sample of `series`, all rounds together (the warm-up's left out).
    pub fn samples(&self, series: Series) -> Vec<u64> {
        self.rounds(series)
            .iter()
            .flat_map(|round| round.measured.iter().copied())
            .collect()
    }

    /// Every warm-up sample of `series`, all rounds together.
    pub fn warm_up(&self, series: Series) -> Vec<u64> {
        self.rounds(series)
            .iter()
            .flat_map(|round| round.warm_up.iter().copied())
            .collect()
    }

    /// The samples of `series`, round by round.
    pub fn rounds(&self, series: Series) -> &[Sampled] {
        self.series
            .iter()
            .find(|(s, _)| *s == series)
            .map_or(&[], |(_, rounds)| rounds.as_slice())
    }
}

/// Runs the latency benchmark at `rate` messages per second on `target` and prints the report:
/// a table, or one JSON line `{"bench_latency":{…}}` with `json`.
pub async fn run(target: Target, settings: Settings, rate: f64, json: bool) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queues = Queues::new(&run_id);
    let bus = builder(&target, settings.concurrency, &queues.bus_input, "sender")
        .peek_delay(settings.peek_delay)
        .enable_requests()
        .route::<Request>(queues.responder.clone())
        .build()?
        .start()
        .await?;
    let bare = match bus.bare_sql(&crate::bench::message::ping(settings.body_size)) {
        Ok(bare) => bare,
        Err(e) => {
            let _ = bus.stop().await;
            return Err(e.into());
        }
    };
    let rig = Rig {
        target,
        settings,
        rate,
        bare,
        bus,
        queues,
    };
    let measured = all_rounds(&rig, json).await;
    let cleaned = clean_up(&rig).await;
    let results = measured?;
    cleaned?;
    report::print(&rig, &results, json)
}

/// Makes the queues, then runs every round; says on stderr what runs, unless `json`.
async fn all_rounds(rig: &Rig, json: bool) -> Result<Results, Failure> {
    prepare_queues(rig).await?;
    let mut results = Results {
        series: Series::ALL.iter().map(|s| (*s, Vec::new())).collect(),
    };
    for round in 0..rig.settings.rounds {
        let mut order = Series::ALL;
        if round % 2 == 1 {
            order.reverse();
        }
        for series in order {
            if !json {
                eprintln!(
                    "round {}/{}: {} ({} messages after {} to warm up, at {}/s)",
                    round + 1,
                    rig.settings.rounds,
                    series.label(),
                    rig.settings.messages,
                    rig.settings.warm_up,
                    rig.rate
                );
            }
            let samples = series::measure(rig, series).await?;
            if let Some((_, rounds)) = results.series.iter_mut().find(|(s, _)| *s == series) {
                rounds.push(samples);
            }
        }
    }
    Ok(results)
}

/// Creates the queues the sender writes to before anything is timed (and the bus's first
/// statements on them), and leaves them empty.
async fn prepare_queues(rig: &Rig) -> Result<(), Failure> {
    let q = &rig.queues;
    for queue in [&q.local, &q.remote, &q.responder, &q.bare] {
        rig.bus.send_to(queue, ping(0)).await?;
        while rig.bare.receive(queue).await?.is_some() {}
    }
    Ok(())
}

/// Stops the bus (its receiver of replies first, so no peek meets a dropped table), then drops
/// every queue the run made over its pool, going on past failures; the first one is the error,
/// naming the queues left behind.
async fn clean_up(rig: &Rig) -> Result<(), Failure> {
    let stopped = rig.bus.stop().await;
    let mut left = Vec::new();
    let mut first_error = None;
    for queue in rig.queues.all() {
        if let Err(e) = rig.bare.drop_queue(queue).await {
            left.push(queue);
            first_error.get_or_insert(e);
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
