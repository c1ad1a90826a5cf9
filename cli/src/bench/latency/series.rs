//! The four latency series: each sends `--messages` messages (or requests, or bare round trips)
//! at the rig's rate and returns every latency in microseconds.

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

/// Measures `series` once.
pub async fn measure(rig: &Rig, series: Series) -> Result<Vec<u64>, Failure> {
    match series {
        Series::SameProcess => same_process(rig).await,
        Series::CrossProcess => cross_process(rig).await,
        Series::RequestResponse => request_response(rig).await,
        Series::BareRoundTrip => bare_round_trip(rig).await,
    }
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

/// Sends the rig's pings to `queue`, evenly spaced at its rate.
async fn send_pings(rig: &Rig, queue: &str) -> Result<(), Failure> {
    let size = rig.settings.body_size;
    paced(rig.rate, rig.settings.messages, || async move {
        Ok(rig.bus.send_to(queue, ping(size)).await?)
    })
    .await?;
    Ok(())
}

/// Send→handled with the receiving endpoint in this process.
async fn same_process(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let tally = Tally::default();
    let queue = &rig.queues.local;
    let endpoint = idle_endpoint(rig, queue, |b| b.handler(Empty(tally.clone()))).await?;
    let handled = match send_pings(rig, queue).await {
        Ok(()) => wait_for(&tally, rig.settings.messages, "the receiving endpoint").await,
        Err(e) => Err(e),
    };
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
        send_pings(rig, &rig.queues.remote).await?;
        wait_for(
            remote.tally(),
            rig.settings.messages,
            "the receiving process",
        )
        .await
    }
    .await;
    let finished = remote.finish().await;
    handled?;
    finished?;
    Ok(remote.tally().latencies_us())
}

/// `Bus::request` to an endpoint in this process that replies, one at a time: from the request
/// to its reply back in the requester.
async fn request_response(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let responder = idle_endpoint(rig, &rig.queues.responder, |b| b.handler(Responder)).await?;
    let size = rig.settings.body_size;
    let round_trips = paced(rig.rate, rig.settings.messages, || async move {
        let started = Instant::now();
        let _: Reply = rig.bus.request::<Request, Reply>(request(size)).await?;
        Ok(micros_since(started))
    })
    .await;
    let stopped = responder.stop().await;
    let round_trips = round_trips?;
    stopped?;
    Ok(round_trips)
}

/// The bare SQL round trip: one `INSERT`, then the skip-locked `DELETE` of that row, on the
/// bus's pool with no framework around them.
async fn bare_round_trip(rig: &Rig) -> Result<Vec<u64>, Failure> {
    let (size, queue) = (rig.settings.body_size, rig.queues.bare.as_str());
    paced(rig.rate, rig.settings.messages, || async move {
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
