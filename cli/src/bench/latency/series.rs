//! The four latency series: each sends `--warm-up` messages (or requests, or bare round trips),
//! lets its endpoint fall idle again, then sends `--messages` more, all at the rig's rate, and
//! returns every latency in microseconds, the warm-up's apart.

use std::time::{Duration, Instant};

use nimbus::Bus;

use super::remote::Remote;
use super::{Rig, Series};
use crate::bench::drive::{paced, wait_for};
use crate::bench::message::{ping, ping_body, request, Empty, Reply, Request, Responder, Tally};
use crate::bench::workload::builder;
use crate::Failure;

/// How long a freshly started endpoint is left alone before the first message, so that it is
/// idle (waiting out its peek delay after finding its queue empty) when the message comes.
const SETTLE: Duration = Duration::from_millis(200);

/// One series' latencies in one round, in microseconds.
#[derive(Debug, Default)]
pub struct Sampled {
    /// The warm-up's, left out of the percentiles.
    pub warm_up: Vec<u64>,
    /// The measured messages'.
    pub measured: Vec<u64>,
}

impl Sampled {
    /// Splits `latencies`, in the order they were recorded, after the first `warm_up`.
    fn split(mut latencies: Vec<u64>, warm_up: usize) -> Sampled {
        let measured = latencies.split_off(warm_up.min(latencies.len()));
        Sampled {
            warm_up: latencies,
            measured,
        }
    }
}

/// Measures `series` once.
pub async fn measure(rig: &Rig, series: Series) -> Result<Sampled, Failure> {
    let latencies = match series {
        Series::SameProcess => same_process(rig).await?,
        Series::CrossProcess => cross_process(rig).await?,
        Series::RequestResponse => request_response(rig).await?,
        Series::BareRoundTrip => bare_round_trip(rig).await?,
    };
    Ok(Sampled::split(latencies, rig.settings.warm_up))
}

/// Microseconds since `started`.
fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Starts an endpoint in this process receiving `queue`, its builder finished by `with` (the
/// handler), and leaves it alone for [`SETTLE`] so that it is idle.
async fn idle_endpoint(
    rig: &Rig,
    queue: &str,
    with: impl FnOnce(nimbus::BusBuilder) -> nimbus::BusBuilder,
) -> Result<Bus, Failure> {
    let b = builder(&rig.target, rig.settings.concurrency, queue, "receiver")
        .peek_delay(rig.settings.peek_delay);
    let endpoint = with(b).build()?.start().await?;
    actix_rt::time::sleep(SETTLE).await;
    Ok(endpoint)
}

/// Sends `count` of the rig's pings to `queue`, evenly spaced at its rate.
async fn send_pings(rig: &Rig, queue: &str, count: usize) -> Result<(), Failure> {
    let size = rig.settings.body_size;
    paced(rig.rate, count, || async move {
        Ok(rig.bus.send_to(queue, ping(size)).await?)
    })
    .await?;
    Ok(())
}

/// Sends the warm-up's pings to `queue` and waits until `tally` (what its receiver handled)
/// counts them, then leaves the receiver alone for [`SETTLE`], so that it is idle again; then
/// sends the measured pings and waits for them too.
async fn warm_up_then_measure(
    rig: &Rig,
    queue: &str,
    tally: &Tally,
    who: &str,
) -> Result<(), Failure> {
    let (warm_up, messages) = (rig.settings.warm_up, rig.settings.messages);
    if warm_up > 0 {
        send_pings(rig, queue, warm_up).await?;
        wait_for(tally, warm_up, who).await?;
        actix_rt::time::sleep(SETTLE).await;
    }
    send_pings(rig, queue, messages).await?;
    wait_for(tally, warm_up + messages, who).await
}

/// Send→handled with the receiving endpoint in this process.
async fn same_process(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let tally = Tally::default();
    let queue = &rig.queues.local;
    let endpoint = idle_endpoint(rig, queue, |b| b.handler(Empty(tally.clone()))).await?;
    let handled = warm_up_then_measure(rig, queue, &tally, "the receiving endpoint").await;
    let stopped = endpoint.stop().await;
    handled?;
    stopped?;
    Ok(tally.latencies_us())
}

/// Send→handled with the receiving endpoint in a child process, which reports each latency.
async fn cross_process(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let mut remote = Remote::spawn(rig, &rig.queues.remote)?;
    let handled = async {
        remote.ready().await?;
        actix_rt::time::sleep(SETTLE).await;
        let (queue, tally) = (&rig.queues.remote, remote.tally());
        warm_up_then_measure(rig, queue, tally, "the receiving process").await
    }
    .await;
    let finished = remote.finish().await;
    handled?;
    finished?;
    Ok(remote.tally().latencies_us())
}

/// `Bus::request` to an endpoint in this process that replies, one at a time: from the request
/// to its reply back in the requester. The warm-up's requests come first, then [`SETTLE`].
async fn request_response(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let responder = idle_endpoint(rig, &rig.queues.responder, |b| b.handler(Responder)).await?;
    let size = rig.settings.body_size;
    let requests = |count| {
        paced(rig.rate, count, || async move {
            let started = Instant::now();
            let _: Reply = rig.bus.request::<Request, Reply>(request(size)).await?;
            Ok(micros_since(started))
        })
    };
    let round_trips = async {
        let mut round_trips = requests(rig.settings.warm_up).await?;
        if rig.settings.warm_up > 0 {
            actix_rt::time::sleep(SETTLE).await;
        }
        round_trips.extend(requests(rig.settings.messages).await?);
        Ok::<_, Failure>(round_trips)
    }
    .await;
    let stopped = responder.stop().await;
    let round_trips = round_trips?;
    stopped?;
    Ok(round_trips)
}

/// The bare SQL round trip: one `INSERT`, then the skip-locked `DELETE` of that row, on the
/// bus's pool with no framework around them (the warm-up's round trips first).
async fn bare_round_trip(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let (size, queue) = (rig.settings.body_size, rig.queues.bare.as_str());
    let count = rig.settings.warm_up + rig.settings.messages;
    paced(rig.rate, count, || async move {
        let body = ping_body(size)?;
        let started = Instant::now();
        rig.bare.send(queue, vec![body]).await?;
        match rig.bare.receive(queue).await? {
            Some(_) => Ok(micros_since(started)),
            None => Err(format!(
                "the bare round trip found its queue {queue:?} empty right after inserting into \
                 it. Fix: make sure nothing else receives from the benchmark's queues"
            )
            .into()),
        }
    })
    .await
}
