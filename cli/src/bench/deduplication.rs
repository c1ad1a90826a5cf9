//! `nimbus bench --deduplication`: what deduplication costs, in interleaved rounds.
//!
//! Each round runs, alternating which goes first:
//! * **send**: `--messages` messages sent one per call over `--concurrency` tasks, through
//!   `Bus::send_to` and through `Bus::send_deduplicated` with a key of their own each (so
//!   nothing is dropped: the cost of claiming the key);
//! * **receive**: `--messages` messages queued first, then drained by an endpoint with
//!   `--concurrency` receivers, without an inbox and with `inbox(1 h)`.
//!
//! A ratio is the median of its rounds' rates (deduplicated ÷ plain), with the lowest and
//! highest.

use std::time::Duration;

use nimbus::admin::Database;
use nimbus::{Bus, SendOptions};
use serde_json::json;

use super::drive::{drain_rate, run_tasks};
use super::message::{ping, Ping};
use super::stats::Pairs;
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// Runs the rounds on `target` and prints the table (or one JSON line).
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queue = format!("BenchDedup{run_id}");
    let sender_queue = format!("{queue}Sender");
    let sender = builder(&target, settings.concurrency, &sender_queue, "sender")
        .route::<Ping>(queue.clone())
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let measured = rounds(&target, &admin, &settings, &sender, &queue, json).await;
    let _ = sender.stop().await;
    let _ = admin.drop_queue(&queue).await;
    let _ = admin.drop_queue(&sender_queue).await;
    let (sends, receives) = measured?;
    print(&target, &settings, &sends, &receives, json);
    Ok(())
}

async fn rounds(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    sender: &Bus,
    queue: &str,
    json: bool,
) -> Result<(Pairs, Pairs), Failure> {
    let (mut sends, mut receives) = (Pairs::default(), Pairs::default());
    let bar = super::progress_bar((settings.rounds * 4) as u64, json)?;
    for round in 0..settings.rounds {
        let plain_first = round % 2 == 0;
        let mut send_pair = [0.0; 2];
        let mut receive_pair = [0.0; 2];
        for deduplicated in [!plain_first, plain_first] {
            let which = if deduplicated {
                "deduplicated"
            } else {
                "plain"
            };
            bar.set_message(format!("round {} send {which}", round + 1));
            send_pair[usize::from(deduplicated)] =
                send_rate(sender, settings, queue, deduplicated, round).await?;
            bar.inc(1);
            // The sends above filled the queue: drained here.
            bar.set_message(format!("round {} receive {which}", round + 1));
            receive_pair[usize::from(deduplicated)] =
                receive_rate(target, settings, queue, deduplicated).await?;
            bar.inc(1);
        }
        sends.0.push((send_pair[0], send_pair[1]));
        receives.0.push((receive_pair[0], receive_pair[1]));
        // Nothing left over for the next round.
        if admin.queue_depth(queue).await? != 0 {
            return Err("the benchmark's queue was not drained".into());
        }
    }
    bar.finish_and_clear();
    Ok((sends, receives))
}

/// Sends `--messages` messages to `queue`, one per call over `--concurrency` tasks: messages
/// per second.
async fn send_rate(
    sender: &Bus,
    settings: &Settings,
    queue: &str,
    deduplicated: bool,
    round: usize,
) -> Result<f64, Failure> {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (sender, queue, body) = (sender.clone(), queue.to_string(), settings.body_size);
    let elapsed = run_tasks(settings.messages, settings.concurrency, move || {
        let (sender, queue, counter) = (sender.clone(), queue.clone(), counter.clone());
        async move {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if deduplicated {
                let key = format!("r{round}-{n}");
                let options = SendOptions::new().to(queue.as_str());
                if !sender.send_deduplicated(&key, ping(body), options).await? {
                    return Err(format!("key {key} was dropped as a duplicate").into());
                }
            } else {
                sender.send_to(&queue, ping(body)).await?;
            }
            Ok(())
        }
    })
    .await?;
    Ok(settings.messages as f64 / elapsed.as_secs_f64().max(1e-9))
}

/// Drains `--messages` queued messages with an endpoint, with an inbox or without: messages per
/// second from its start.
async fn receive_rate(
    target: &Target,
    settings: &Settings,
    queue: &str,
    inbox: bool,
) -> Result<f64, Failure> {
    drain_rate(target, settings, queue, |receiver| match inbox {
        true => receiver.inbox(Duration::from_secs(3600)),
        false => receiver,
    })
    .await
}

fn print(target: &Target, settings: &Settings, sends: &Pairs, receives: &Pairs, json: bool) {
    let rows = [("send_deduplicated", sends), ("inbox", receives)];
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, pairs)| {
                let (ratio, min, max, plain, dedup) = pairs.summary();
                json!({"what": name, "ratio_median": ratio, "ratio_min": min, "ratio_max": max,
                       "plain_per_s": plain, "deduplicated_per_s": dedup})
            })
            .collect();
        println!(
            "{}",
            json!({"mode": "deduplication", "database": target.backend,
                   "messages": settings.messages, "rounds": settings.rounds,
                   "concurrency": settings.concurrency, "results": rows})
        );
        return;
    }
    println!(
        "Deduplication on {}: deduplicated ÷ plain, {} messages, concurrency {}, {} rounds",
        target.backend, settings.messages, settings.concurrency, settings.rounds
    );
    println!(
        "{:<18} {:>8} {:>13} {:>12} {:>18}",
        "what", "ratio", "min–max", "plain msg/s", "deduplicated msg/s"
    );
    for (name, pairs) in rows {
        let (ratio, min, max, plain, dedup) = pairs.summary();
        println!(
            "{:<18} {:>8.2} {:>13} {:>12.0} {:>18.0}",
            name,
            ratio,
            format!("{min:.2}–{max:.2}"),
            plain,
            dedup
        );
    }
}
