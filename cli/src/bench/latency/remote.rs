//! The receiving endpoint in another process, for the cross-process latency series.
//!
//! The parent runs this same binary (`std::env::current_exe()`) as
//! `nimbus bench-receiver --queue Q --count N …` (a hidden command), with the database in
//! `DATABASE_URL` (kept off the process list). The child starts an idle endpoint on `Q`, prints
//! `ready`, then one line per handled message: its send→handled latency in microseconds, from
//! the send time the message carries and the machine's clock both processes share. It stops
//! once it has handled `N` messages, or when its standard input closes (the parent is done or
//! gone), so it never outlives the benchmark.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError};

use super::Rig;
use crate::bench::message::{now_us, Ping, Tally};
use crate::bench::workload::builder;
use crate::bench::Target;
use crate::Failure;

/// What `nimbus bench-receiver` takes (a hidden command: the latency benchmark runs it).
#[derive(Debug, Clone, clap::Args)]
pub struct ReceiverArgs {
    /// The queue to receive from.
    #[arg(long)]
    pub queue: String,
    /// How many messages to handle before stopping.
    #[arg(long)]
    pub count: usize,
    /// The endpoint's peek delay.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub peek_delay: Duration,
    /// The endpoint's concurrency limit.
    #[arg(long)]
    pub concurrency: usize,
}

/// How long the child may take to start its endpoint.
const START: Duration = Duration::from_secs(60);

/// How long the child may take to stop once told to.
const STOP: Duration = Duration::from_secs(30);

/// How often the parent and the child look at what the other did.
const POLL: Duration = Duration::from_millis(5);

/// The child process, seen from the parent.
pub struct Remote {
    /// The process; killed on drop if it is still running.
    child: Child,
    /// Its standard input: closing it tells the child to stop.
    stdin: Option<ChildStdin>,
    /// The latencies it reported.
    tally: Tally,
    /// Whether it said `ready`.
    ready: Arc<AtomicBool>,
    /// Whether its standard output closed (it exited, or is about to).
    closed: Arc<AtomicBool>,
}

impl Remote {
    /// Starts the child receiving `queue` with the rig's database, peek delay and concurrency,
    /// for the rig's warm-up and measured messages.
    pub fn spawn(rig: &Rig, queue: &str) -> Result<Remote, Failure> {
        let exe = std::env::current_exe().map_err(|e| {
            format!(
                "cannot find this program to start the receiving process: {e}. Fix: run nimbus \
                 from a path that still exists"
            )
        })?;
        let mut command = Command::new(exe);
        command.env("DATABASE_URL", &rig.target.url);
        if let Some(schema) = &rig.target.schema {
            command.arg("--schema").arg(schema);
        }
        command
            .args(["--layout", rig.target.layout.name(), "bench-receiver"])
            .args(["--queue", queue])
            .args([
                "--count",
                &(rig.settings.warm_up + rig.settings.messages).to_string(),
            ])
            .arg("--peek-delay")
            .arg(humantime::format_duration(rig.settings.peek_delay).to_string())
            .args(["--concurrency", &rig.settings.concurrency.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().map_err(|e| {
            format!("cannot start the receiving process: {e}. Fix: check that nimbus can run")
        })?;
        let (tally, ready, closed) = (Tally::default(), Arc::default(), Arc::default());
        if let Some(stdout) = child.stdout.take() {
            read_reports(
                stdout,
                tally.clone(),
                Arc::clone(&ready),
                Arc::clone(&closed),
            );
        }
        Ok(Remote {
            stdin: child.stdin.take(),
            child,
            tally,
            ready,
            closed,
        })
    }

    /// Waits until the child's endpoint runs.
    pub async fn ready(&mut self) -> Result<(), Failure> {
        let started = Instant::now();
        while !self.ready.load(Ordering::Acquire) {
            if self.closed.load(Ordering::Acquire) {
                let status = self.child.wait()?;
                return Err(format!(
                    "the receiving process ended before its endpoint ran ({status}); its error \
                     is above. Fix: check that `nimbus bench-receiver` can reach the database"
                )
                .into());
            }
            if started.elapsed() >= START {
                return Err(format!(
                    "the receiving process did not start its endpoint within {} s. Fix: check \
                     that the database is up and answers quickly",
                    START.as_secs()
                )
                .into());
            }
            actix_rt::time::sleep(POLL).await;
        }
        Ok(())
    }

    /// The latencies the child reported so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Tells the child to stop and waits for it (killing it after [`STOP`]); fails if it did
    /// not exit cleanly.
    pub async fn finish(&mut self) -> Result<(), Failure> {
        drop(self.stdin.take());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return if status.success() {
                    Ok(())
                } else {
                    Err(
                        format!("the receiving process failed ({status}); its error is above")
                            .into(),
                    )
                };
            }
            if started.elapsed() >= STOP {
                self.child.kill()?;
                self.child.wait()?;
                return Err(format!(
                    "the receiving process did not stop within {} s and was killed. Fix: check \
                     with `nimbus queues` that the benchmark's queues are gone",
                    STOP.as_secs()
                )
                .into());
            }
            actix_rt::time::sleep(POLL).await;
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        // After a failure on the parent's side: the child must not outlive the benchmark.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads the child's reports on a thread of its own: `ready`, then one latency per line into
/// `tally`; sets `closed` when the output ends.
fn read_reports(
    stdout: impl Read + Send + 'static,
    tally: Tally,
    ready: Arc<AtomicBool>,
    closed: Arc<AtomicBool>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let line = line.trim();
            if line == "ready" {
                ready.store(true, Ordering::Release);
            } else if let Ok(latency) = line.parse::<u64>() {
                tally.record_latency_us(latency);
            }
        }
        closed.store(true, Ordering::Release);
    });
}

/// The child's handler: prints each message's latency and counts it.
struct Report(Arc<AtomicUsize>);

#[nimbus::handler]
impl Handler<Ping> for Report {
    async fn handle(&self, m: Ping, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let latency = now_us().saturating_sub(m.sent_at_us());
        let mut out = std::io::stdout().lock();
        // The parent gone, nobody reads: the message is handled all the same.
        let _ = writeln!(out, "{latency}").and_then(|()| out.flush());
        self.0.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

/// `nimbus bench-receiver`: runs an idle endpoint on `args.queue` printing latencies, until it
/// has handled `args.count` messages or its standard input closes.
pub async fn receive(target: Target, args: ReceiverArgs) -> Result<(), Failure> {
    let handled = Arc::new(AtomicUsize::new(0));
    let endpoint = builder(&target, args.concurrency, &args.queue, "remote-receiver")
        .peek_delay(args.peek_delay)
        .handler(Report(Arc::clone(&handled)))
        .build()?
        .start()
        .await?;
    let parent_gone = watch_stdin();
    let announced = {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready").and_then(|()| out.flush())
    };
    if announced.is_ok() {
        while handled.load(Ordering::Acquire) < args.count && !parent_gone.load(Ordering::Acquire) {
            actix_rt::time::sleep(POLL).await;
        }
    }
    let stopped = endpoint.stop().await;
    announced.map_err(|e| format!("cannot tell the benchmark the receiver is ready: {e}"))?;
    Ok(stopped?)
}

/// A flag set when standard input closes, read on a thread of its own.
fn watch_stdin() -> Arc<AtomicBool> {
    let gone = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&gone);
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        flag.store(true, Ordering::Release);
    });
    gone
}
