//! `nimbus bench --limits`: what a limit costs a message it never holds back, in interleaved
//! rounds.
//!
//! Each round sends `--messages` messages to the queue and drains them twice over, alternating
//! which goes first: with an endpoint without limits, and with the same endpoint with
//! `Limit::concurrency(n)` on the message type, `n` being the endpoint's `--concurrency` (every
//! receiver finds a slot: what is measured is taking it, one statement per message in the
//! receive's transaction).
//!
//! A ratio is the median of its rounds' rates (limited ÷ plain), with the lowest and highest.

use nimbus::admin::Database;
use nimbus::{Bus, Limit, SendOptions};
use serde_json::json;

use super::drive::{drain_rate, send_rate};
use super::message::Ping;
use super::stats::Pairs;
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// Runs the rounds on `target` and prints the result (or one JSON line).
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queue = format!("BenchLimits{run_id}");
    let sender_queue = format!("BenchLimits{run_id}Sender");
    admin.create_schema(&[queue.as_str()]).await?;
    let sender = builder(&target, settings.concurrency, &sender_queue, "sender")
        .route::<Ping>(queue.clone())
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let measured = rounds(&target, &admin, &settings, &sender, &queue, json).await;
    let _ = sender.stop().await;
    for queue in [&queue, &sender_queue] {
        let _ = admin.drop_queue(queue).await;
    }
    let receives = measured?;
    print(&target, &settings, &receives, json);
    Ok(())
}

async fn rounds(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    sender: &Bus,
    queue: &str,
    json: bool,
) -> Result<Pairs, Failure> {
    let mut receives = Pairs::default();
    let bar = super::progress_bar((settings.rounds * 2) as u64, json)?;
    for round in 0..settings.rounds {
        let plain_first = round % 2 == 0;
        let mut pair = [0.0; 2];
        for limited in [!plain_first, plain_first] {
            let which = if limited { "limited" } else { "plain" };
            send_rate(sender, settings, queue, |_| SendOptions::new()).await?;
            bar.set_message(format!("round {} receive {which}", round + 1));
            pair[usize::from(limited)] = receive_rate(target, settings, queue, limited).await?;
            bar.inc(1);
            if admin.queue_depth(queue).await? != 0 {
                return Err("the benchmark's queue was not drained".into());
            }
        }
        receives.0.push((pair[0], pair[1]));
    }
    bar.finish_and_clear();
    Ok(receives)
}

/// Drains `queue` with an endpoint (at `--receive-batch` when given), with a limit of
/// `--concurrency` handlers at once when `limited`: messages per second from its start.
async fn receive_rate(
    target: &Target,
    settings: &Settings,
    queue: &str,
    limited: bool,
) -> Result<f64, Failure> {
    let slots = u32::try_from(settings.concurrency).unwrap_or(nimbus::MAX_LIMIT_SLOTS);
    drain_rate(target, settings, queue, |mut receiver| {
        if let Some(batch) = settings.receive_batch {
            receiver = receiver.receive_batch(batch);
        }
        if limited {
            receiver = receiver.limit::<Ping>(Limit::concurrency(slots));
        }
        receiver
    })
    .await
}

fn print(target: &Target, settings: &Settings, receives: &Pairs, json: bool) {
    let (ratio, min, max, plain, limited) = receives.summary();
    if json {
        println!(
            "{}",
            json!({"mode": "limits", "database": target.backend,
                   "messages": settings.messages, "rounds": settings.rounds,
                   "concurrency": settings.concurrency,
                   "results": [{"what": "receive", "ratio_median": ratio, "ratio_min": min,
                                "ratio_max": max, "plain_per_s": plain,
                                "limited_per_s": limited}]})
        );
        return;
    }
    println!(
        "Limits on {}: limited (Limit::concurrency({})) ÷ plain, {} messages, {} rounds",
        target.backend, settings.concurrency, settings.messages, settings.rounds
    );
    println!(
        "{:<10} {:>8} {:>13} {:>12} {:>14}",
        "what", "ratio", "min–max", "plain msg/s", "limited msg/s"
    );
    println!(
        "{:<10} {:>8.2} {:>13} {:>12.0} {:>14.0}",
        "receive",
        ratio,
        format!("{min:.2}–{max:.2}"),
        plain,
        limited
    );
}
