//! `nimbus bench --groups`: what ordered groups cost, in interleaved rounds.
//!
//! Each round runs, alternating which goes first:
//! * **send**: `--messages` messages sent one per call over `--concurrency` tasks to a queue
//!   without groups, and with `SendOptions::group` (`--group-count` groups, 100 by default,
//!   round robin) to a queue that
//!   keeps them;
//! * **receive**: the messages just sent drained by an endpoint with `--concurrency` receivers
//!   (a grouped queue hands out one message per group at a time).
//!
//! A ratio is the median of its rounds' rates (grouped ÷ ungrouped), with the lowest and highest.

use nimbus::admin::Database;
use nimbus::{Bus, SendOptions};
use serde_json::json;

use super::drive::{drain_rate, send_rate};
use super::message::Ping;
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
    let queues = [
        format!("BenchGroups{run_id}Plain"),
        format!("BenchGroups{run_id}Grouped"),
    ];
    let sender_queue = format!("BenchGroups{run_id}Sender");
    admin
        .create_schema(&[queues[0].as_str(), queues[1].as_str()])
        .await?;
    admin.create_ordered_groups(&queues[1]).await?;
    let sender = builder(&target, settings.concurrency, &sender_queue, "sender")
        .route::<Ping>(queues[0].clone())
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let measured = rounds(&target, &admin, &settings, &sender, &queues, json).await;
    let _ = sender.stop().await;
    for queue in queues.iter().chain([&sender_queue]) {
        let _ = admin.drop_queue(queue).await;
    }
    let (sends, receives) = measured?;
    print(&target, &settings, &sends, &receives, json);
    Ok(())
}

async fn rounds(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    sender: &Bus,
    queues: &[String; 2],
    json: bool,
) -> Result<(Pairs, Pairs), Failure> {
    let (mut sends, mut receives) = (Pairs::default(), Pairs::default());
    let bar = super::progress_bar((settings.rounds * 4) as u64, json)?;
    for round in 0..settings.rounds {
        let plain_first = round % 2 == 0;
        let mut send_pair = [0.0; 2];
        let mut receive_pair = [0.0; 2];
        for grouped in [!plain_first, plain_first] {
            let which = if grouped { "grouped" } else { "ungrouped" };
            let queue = &queues[usize::from(grouped)];
            bar.set_message(format!("round {} send {which}", round + 1));
            let groups = settings.group_count;
            let options = move |n: usize| match grouped {
                true => SendOptions::new().group(format!("group-{}", n % groups)),
                false => SendOptions::new(),
            };
            send_pair[usize::from(grouped)] = send_rate(sender, settings, queue, options).await?;
            bar.inc(1);
            // The sends above filled the queue: drained here.
            bar.set_message(format!("round {} receive {which}", round + 1));
            receive_pair[usize::from(grouped)] = receive_rate(target, settings, queue).await?;
            bar.inc(1);
            if admin.queue_depth(queue).await? != 0 {
                return Err("the benchmark's queue was not drained".into());
            }
        }
        sends.0.push((send_pair[0], send_pair[1]));
        receives.0.push((receive_pair[0], receive_pair[1]));
    }
    bar.finish_and_clear();
    Ok((sends, receives))
}

/// Drains the `--messages` messages queued in `queue` with an endpoint (at `--receive-batch`
/// when given): messages per second from its start. The endpoint finds whether the queue keeps
/// groups.
async fn receive_rate(target: &Target, settings: &Settings, queue: &str) -> Result<f64, Failure> {
    drain_rate(target, settings, queue, |receiver| {
        match settings.receive_batch {
            Some(batch) => receiver.receive_batch(batch),
            None => receiver,
        }
    })
    .await
}

fn print(target: &Target, settings: &Settings, sends: &Pairs, receives: &Pairs, json: bool) {
    let rows = [("send", sends), ("receive", receives)];
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, pairs)| {
                let (ratio, min, max, plain, grouped) = pairs.summary();
                json!({"what": name, "ratio_median": ratio, "ratio_min": min, "ratio_max": max,
                       "ungrouped_per_s": plain, "grouped_per_s": grouped})
            })
            .collect();
        println!(
            "{}",
            json!({"mode": "groups", "database": target.backend, "groups": settings.group_count,
                   "messages": settings.messages, "rounds": settings.rounds,
                   "concurrency": settings.concurrency, "results": rows})
        );
        return;
    }
    println!(
        "Ordered groups on {}: grouped ({} groups) ÷ ungrouped, {} messages, concurrency {}, {} rounds",
        target.backend, settings.group_count, settings.messages, settings.concurrency, settings.rounds
    );
    println!(
        "{:<10} {:>8} {:>13} {:>16} {:>14}",
        "what", "ratio", "min–max", "ungrouped msg/s", "grouped msg/s"
    );
    for (name, pairs) in rows {
        let (ratio, min, max, plain, grouped) = pairs.summary();
        println!(
            "{:<10} {:>8.2} {:>13} {:>16.0} {:>14.0}",
            name,
            ratio,
            format!("{min:.2}–{max:.2}"),
            plain,
            grouped
        );
    }
}
