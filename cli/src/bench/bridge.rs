//! `nimbus bench --bridge`: how fast messages cross a bridge, in interleaved rounds.
//!
//! Each round moves `--messages` messages from one queue to another twice, alternating which
//! goes first:
//! * **forward**: within the benchmark's database, an endpoint of `--concurrency` receivers
//!   whose handler sends each message on to a second queue (one transaction per receive: the
//!   message taken and the copy written together);
//! * **bridge**: from a queue of the benchmark's database to a queue of `--bridge-to` (a new
//!   SQLite file when not given), by a [`Bridge`] (two transactions per message, one on each
//!   side, the copy's id claimed on the side it reaches).
//!
//! Both are filled first (not timed); a rate is from the mover's start until the destination
//! queue holds every message. The ratio is bridge ÷ forward, the median of the rounds with
//! the lowest and highest.

use std::time::{Duration, Instant};

use nimbus::admin::{ConnectOptions, Database};
use nimbus::bridge::{Bridge, BridgeConfig, BridgeSide};
use nimbus::{Handler, HandlerContext, HandlerError, SendOptions};
use serde_json::json;

use super::drive::send_rate;
use super::message::Ping;
use super::stats::Pairs;
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// How often the destination queue is counted while messages move.
const POLL: Duration = Duration::from_millis(20);

/// How long the destination may hold the same count before the round fails.
const STALL: Duration = Duration::from_secs(60);

/// Sends each ping on to a queue of the same database.
struct Forward(String);

#[nimbus::handler]
impl Handler<Ping> for Forward {
    async fn handle(&self, m: Ping, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send_with(m, SendOptions::new().to(self.0.as_str()))?;
        Ok(())
    }
}

/// The benchmark's queues, named for this run.
struct Queues {
    /// Filled, then forwarded within the database into `forwarded`.
    forward: String,
    forwarded: String,
    /// Filled, then moved by the bridge to `crossed` on the other side.
    bridge: String,
    crossed: String,
}

/// Runs the rounds and prints the table (or one JSON line).
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queues = Queues {
        forward: format!("BenchBridge{run_id}Forward"),
        forwarded: format!("BenchBridge{run_id}Forwarded"),
        bridge: format!("BenchBridge{run_id}Out"),
        crossed: format!("BenchBridge{run_id}In"),
    };
    let sender_queue = format!("BenchBridge{run_id}Sender");
    let (other_url, made_file) = match &settings.bridge_to {
        Some(url) => (url.clone(), None),
        None => {
            let file = std::env::temp_dir().join(format!("nimbus-bench-bridge-{run_id}.db"));
            (format!("sqlite://{}", file.display()), Some(file))
        }
    };
    admin
        .create_schema(&[&queues.forward, &queues.forwarded, &queues.bridge])
        .await?;
    let other = Database::connect_with(&other_url, ConnectOptions::new())
        .await
        .map_err(|e| format!("--bridge-to: {e}"))?;
    other.create_schema(&[&queues.crossed]).await?;
    let sender = builder(&target, settings.concurrency, &sender_queue, "sender")
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let measured = rounds(
        &target, &admin, &other, &other_url, &settings, &sender, &queues, json,
    )
    .await;
    let _ = sender.stop().await;
    for queue in [
        &queues.forward,
        &queues.forwarded,
        &queues.bridge,
        &sender_queue,
    ] {
        let _ = admin.drop_queue(queue).await;
    }
    let _ = other.drop_queue(&queues.crossed).await;
    if let Some(file) = made_file {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
        }
    }
    let moves = measured?;
    print(&target, other.database_name(), &settings, &moves, json);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn rounds(
    target: &Target,
    admin: &Database,
    other: &Database,
    other_url: &str,
    settings: &Settings,
    sender: &nimbus::Bus,
    queues: &Queues,
    json: bool,
) -> Result<Pairs, Failure> {
    let mut moves = Pairs::default();
    let bar = super::progress_bar((settings.rounds * 2) as u64, json)?;
    for round in 0..settings.rounds {
        let forward_first = round % 2 == 0;
        let mut pair = [0.0; 2];
        for bridged in [!forward_first, forward_first] {
            let which = if bridged { "bridge" } else { "forward" };
            bar.set_message(format!("round {} {which}", round + 1));
            let from = if bridged {
                &queues.bridge
            } else {
                &queues.forward
            };
            send_rate(sender, settings, from, |_| SendOptions::new()).await?;
            pair[usize::from(bridged)] = if bridged {
                bridge_rate(target, admin, other, other_url, settings, queues).await?
            } else {
                forward_rate(target, admin, settings, queues).await?
            };
            bar.inc(1);
        }
        moves.0.push((pair[0], pair[1]));
    }
    bar.finish_and_clear();
    Ok(moves)
}

/// Forwards the messages queued in `queues.forward` to `queues.forwarded` with an endpoint:
/// messages per second from its start until the last arrived.
async fn forward_rate(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    queues: &Queues,
) -> Result<f64, Failure> {
    let started = Instant::now();
    let bus = builder(target, settings.concurrency, &queues.forward, "forwarder")
        .monitoring_interval(None)
        .handler(Forward(queues.forwarded.clone()))
        .build()?
        .start()
        .await?;
    let arrived = arrival(admin, &queues.forwarded, settings.messages, "forwarded").await;
    let elapsed = started.elapsed();
    bus.stop().await?;
    arrived?;
    admin.drop_queue(&queues.forwarded).await?;
    admin.create_schema(&[&queues.forwarded]).await?;
    Ok(settings.messages as f64 / elapsed.as_secs_f64().max(1e-9))
}

/// Moves the messages queued in `queues.bridge` to `queues.crossed` on the other side with a
/// bridge: messages per second from its start until the last arrived.
async fn bridge_rate(
    target: &Target,
    admin: &Database,
    other: &Database,
    other_url: &str,
    settings: &Settings,
    queues: &Queues,
) -> Result<f64, Failure> {
    let mut here = BridgeSide::new(target.url.clone());
    here.schema = target.schema.clone();
    here.storage_layout = target.layout.into();
    let mut config = BridgeConfig::new("bench")
        .side("here", here)
        .side("there", BridgeSide::new(other_url))
        .queue("here", &queues.bridge, "there", &queues.crossed);
    config.idle_poll = Some(Duration::from_millis(20));
    config.batch = settings.receive_batch;
    config.keep_ways_back = settings.keep_ways_back;
    let started = Instant::now();
    let bridge = Bridge::start(config).await?;
    let arrived = arrival(other, &queues.crossed, settings.messages, "crossed").await;
    let elapsed = started.elapsed();
    bridge.stop().await;
    arrived?;
    other.drop_queue(&queues.crossed).await?;
    other.create_schema(&[&queues.crossed]).await?;
    if admin.queue_depth(&queues.bridge).await? != 0 {
        return Err("the bridge left messages in the queue it moves".into());
    }
    Ok(settings.messages as f64 / elapsed.as_secs_f64().max(1e-9))
}

/// Waits until `queue` holds `count` messages; fails when its count stops moving for
/// [`STALL`].
async fn arrival(db: &Database, queue: &str, count: usize, what: &str) -> Result<(), Failure> {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    let (mut seen, mut moved_at) = (db.queue_depth(queue).await?, Instant::now());
    while seen < count {
        actix_rt::time::sleep(POLL).await;
        let now = db.queue_depth(queue).await?;
        if now != seen {
            (seen, moved_at) = (now, Instant::now());
        } else if moved_at.elapsed() >= STALL {
            return Err(format!(
                "{seen} of {count} messages {what} and none in the last {} s. Fix: look for them \
                 with `nimbus dead-letters list` and `nimbus queues` on both databases",
                STALL.as_secs()
            )
            .into());
        }
    }
    Ok(())
}

fn print(target: &Target, other: &str, settings: &Settings, moves: &Pairs, json: bool) {
    let (ratio, min, max, forward, bridged) = moves.summary();
    if json {
        println!(
            "{}",
            json!({"mode": "bridge", "database": target.backend, "bridge_to": other,
                   "messages": settings.messages, "rounds": settings.rounds,
                   "concurrency": settings.concurrency,
                   "results": [{"what": "move", "ratio_median": ratio, "ratio_min": min,
                                "ratio_max": max, "forward_per_s": forward,
                                "bridge_per_s": bridged}]})
        );
        return;
    }
    println!(
        "Bridge from {} to {other}: bridge ÷ forward within one database, {} messages, concurrency {}, {} rounds",
        target.backend, settings.messages, settings.concurrency, settings.rounds
    );
    println!(
        "{:<10} {:>8} {:>13} {:>16} {:>14}",
        "what", "ratio", "min–max", "forward msg/s", "bridge msg/s"
    );
    println!(
        "{:<10} {:>8.2} {:>13} {:>16.0} {:>14.0}",
        "move",
        ratio,
        format!("{min:.2}–{max:.2}"),
        forward,
        bridged
    );
}
