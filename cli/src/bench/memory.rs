//! `nimbus bench --large-bodies MB,MB,…`: how much memory sending and handling one large message
//! takes, and whether it is given back. For each size, one process (this one) sends one message
//! of that many megabytes of JSON and handles it, bodies stored apart by the claim check (or in
//! their rows with `--inline`); the resident set size (RSS) is read before, sampled every 2 ms
//! while the message travels (and the kernel's own peak, where it can be reset), and read again
//! two seconds after the handler is done.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::{ClaimCheck, SendOptions};
use serde_json::json;

use super::drive::wait_for;
use super::message::{ping_of_words, Empty, Tally};
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// What one size measured, in bytes.
struct Measured {
    megabytes: usize,
    before: u64,
    peak: u64,
    after: u64,
    elapsed: Duration,
}

/// The process's resident set size, or its peak (`VmHWM`), in bytes; 0 where `/proc` has none.
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn rss() -> u64 {
    status_kb("VmRSS:")
}

/// Resets the kernel's peak RSS to the current RSS (Linux ≥ 4.0); `false` where it cannot.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Samples the RSS every 2 ms until dropped, keeping the highest.
struct Sampler {
    stop: Arc<AtomicBool>,
    highest: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Sampler {
        let (stop, highest) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let thread = {
            let (stop, highest) = (stop.clone(), highest.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    highest.fetch_max(rss(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        Sampler {
            stop,
            highest,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.highest.load(Ordering::Relaxed)
    }
}

/// Runs the sizes on `target` and prints the result (or one JSON line).
pub async fn run(target: Target, settings: Settings, json: bool) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queue = format!("BenchLarge{run_id}");
    let largest = settings.large_bodies.iter().max().copied().unwrap_or(1);
    let claim_check = match settings.inline {
        true => ClaimCheck::off(),
        false => ClaimCheck::in_database(),
    };
    let max_body = (largest + 1) * 1024 * 1024;
    let handled = Tally::default();
    let receiver = builder(&target, 1, &queue, "receiver")
        .monitoring_interval(None)
        .max_body_size(max_body)
        .handler(Empty(handled.clone()))
        .build()?
        .start()
        .await?;
    let sender = builder(&target, 1, &format!("{queue}Sender"), "sender")
        .monitoring_interval(None)
        .max_body_size(max_body)
        .claim_check(claim_check)
        .build()?
        .start()
        .await?;
    let mut measured = Vec::new();
    for (n, megabytes) in settings.large_bodies.iter().copied().enumerate() {
        let before = rss();
        let kernel_peak = reset_peak();
        let sampler = Sampler::start();
        let started = Instant::now();
        let message = ping_of_words(megabytes * 1024 * 1024);
        sender
            .send_with(message, SendOptions::new().to(queue.as_str()))
            .await?;
        wait_for(&handled, n + 1, "the receiving endpoint").await?;
        let elapsed = started.elapsed();
        // The connections that moved the body close when given back, and the freed memory is
        // given back a moment later: the RSS two seconds after the handler finished.
        actix_rt::time::sleep(Duration::from_secs(2)).await;
        let after = rss();
        let sampled = sampler.finish();
        let peak = match kernel_peak {
            true => sampled.max(status_kb("VmHWM:")),
            false => sampled,
        };
        measured.push(Measured {
            megabytes,
            before,
            peak,
            after,
            elapsed,
        });
    }
    sender.stop().await?;
    receiver.stop().await?;
    print(&target, &settings, &measured, json);
    Ok(())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn print(target: &Target, settings: &Settings, measured: &[Measured], json: bool) {
    let stored = if settings.inline {
        "in their rows"
    } else {
        "stored apart"
    };
    if json {
        let rows: Vec<_> = measured
            .iter()
            .map(|m| {
                json!({"megabytes": m.megabytes, "rss_before_mb": mb(m.before),
                       "rss_peak_mb": mb(m.peak), "rss_after_mb": mb(m.after),
                       "peak_over_body": mb(m.peak.saturating_sub(m.before)) / m.megabytes as f64,
                       "seconds": m.elapsed.as_secs_f64()})
            })
            .collect();
        println!(
            "{}",
            json!({"mode": "large_bodies", "database": target.backend, "bodies": stored,
                   "results": rows})
        );
        return;
    }
    println!(
        "Large bodies on {} ({stored}): one message of each size sent and handled in this process",
        target.backend
    );
    println!(
        "{:>8} {:>12} {:>12} {:>14} {:>12} {:>9}",
        "body MB", "RSS before", "RSS peak", "peak − before", "RSS after", "seconds"
    );
    for m in measured {
        println!(
            "{:>8} {:>11.0}M {:>11.0}M {:>9.0}M ({:.1}×) {:>11.0}M {:>9.2}",
            m.megabytes,
            mb(m.before),
            mb(m.peak),
            mb(m.peak.saturating_sub(m.before)),
            mb(m.peak.saturating_sub(m.before)) / m.megabytes as f64,
            mb(m.after),
            m.elapsed.as_secs_f64()
        );
    }
}
