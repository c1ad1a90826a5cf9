//! Driving load: jobs over a fixed number of tasks, jobs at a fixed rate, and waiting for
//! handlers to catch up.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::message::Tally;
use crate::Failure;

/// How long handling may make no progress before the benchmark gives up.
pub const STALL: Duration = Duration::from_secs(30);

/// How often [`wait_for`] looks at the tally.
const POLL: Duration = Duration::from_millis(5);

/// Runs `total` jobs over `concurrency` tasks, each task taking the next job until none is left;
/// returns the elapsed time. The first failing job stops every task, and is the error.
pub async fn run_tasks<F, Fut>(
    total: usize,
    concurrency: usize,
    job: F,
) -> Result<Duration, Failure>
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = Result<(), Failure>> + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (next, failed, job) = (next.clone(), failed.clone(), job.clone());
            actix_rt::spawn(async move {
                while !failed.load(Ordering::Relaxed)
                    && next.fetch_add(1, Ordering::Relaxed) < total
                {
                    if let Err(e) = job().await {
                        failed.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
                Ok(())
            })
        })
        .collect();
    join_all(tasks).await?;
    Ok(started.elapsed())
}

/// Waits for every task; the first failure (or panic) is the error.
pub async fn join_all(
    tasks: Vec<actix_rt::task::JoinHandle<Result<(), Failure>>>,
) -> Result<(), Failure> {
    let mut first_error = None;
    for task in tasks {
        let outcome = match task.await {
            Ok(outcome) => outcome,
            Err(e) => Err(format!("a benchmark task panicked: {e}").into()),
        };
        if let (Err(e), None) = (outcome, &first_error) {
            first_error = Some(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Waits until `tally` has counted `target` messages. Fails if the count stops moving for
/// [`STALL`]: the messages went somewhere else (dead letters) or the database stopped answering.
pub async fn wait_for(tally: &Tally, target: usize, who: &str) -> Result<(), Failure> {
    let (mut seen, mut moved_at) = (tally.count(), Instant::now());
    while seen < target {
        actix_rt::time::sleep(POLL).await;
        let now = tally.count();
        if now != seen {
            (seen, moved_at) = (now, Instant::now());
        } else if moved_at.elapsed() >= STALL {
            return Err(format!(
                "{who} handled {seen} of {target} messages and none in the last {} s. Fix: check \
                 that the database is up and look for them with `nimbus dead-letters list` and \
                 `nimbus queues`",
                STALL.as_secs()
            )
            .into());
        }
    }
    Ok(())
}

/// Runs `job` `count` times, one after the other, starting one every `1 / rate` seconds (evenly
/// spaced; a job that overruns its slot delays the next ones instead of bunching them); returns
/// what each returned. The first failure stops and is the error.
pub async fn paced<T, F, Fut>(rate: f64, count: usize, mut job: F) -> Result<Vec<T>, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut results = Vec::with_capacity(count);
    for _ in 0..count {
        ticks.tick().await;
        results.push(job().await?);
    }
    Ok(results)
}

/// Drains the `--messages` messages queued in `queue` with an endpoint of `--concurrency`
/// receivers and empty handlers, as `configure` sets it up (an inbox, a fixed batch): messages
/// per second from its start.
pub async fn drain_rate(
    target: &super::Target,
    settings: &super::Settings,
    queue: &str,
    configure: impl FnOnce(nimbus::BusBuilder) -> nimbus::BusBuilder,
) -> Result<f64, Failure> {
    let handled = Tally::default();
    let mut receiver = super::workload::builder(target, settings.concurrency, queue, "receiver")
        .monitoring_interval(None)
        .handler(super::message::Empty(handled.clone()));
    if let Some(threads) = settings.handler_threads {
        receiver = receiver.handler_threads(threads);
    }
    let started = Instant::now();
    let bus = configure(receiver).build()?.start().await?;
    let drained = wait_for(&handled, settings.messages, "the receiving endpoint").await;
    let elapsed = started.elapsed();
    bus.stop().await?;
    drained?;
    Ok(settings.messages as f64 / elapsed.as_secs_f64().max(1e-9))
}

/// Sends `--messages` pings to `queue`, one per call over `--concurrency` tasks, the `n`-th
/// with `options(n)`: messages per second.
pub async fn send_rate(
    sender: &nimbus::Bus,
    settings: &super::Settings,
    queue: &str,
    options: impl Fn(usize) -> nimbus::SendOptions + Clone + Send + Sync + 'static,
) -> Result<f64, Failure> {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (sender, queue, body) = (sender.clone(), queue.to_string(), settings.body_size);
    let elapsed = run_tasks(settings.messages, settings.concurrency, move || {
        let (sender, queue, counter) = (sender.clone(), queue.clone(), counter.clone());
        let options = options.clone();
        async move {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let message = super::message::ping(body);
            sender
                .send_with(message, options(n).to(queue.as_str()))
                .await?;
            Ok(())
        }
    })
    .await?;
    Ok(settings.messages as f64 / elapsed.as_secs_f64().max(1e-9))
}
