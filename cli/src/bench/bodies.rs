//! `nimbus bench --bodies`: what compressing and encrypting bodies cost, in interleaved rounds.
//!
//! Each round sends `--messages` messages of `--body-size` bytes (words, which compress about as
//! text and JSON do) and drains them, once per variant, in an order that rotates from round to
//! round: plain, gzip ([`BodyCompression::gzip`]), zstd ([`BodyCompression::zstd`]), AES-256-GCM
//! ([`BodyEncryption`]), gzip and AES-256-GCM together, and
//! stored apart by the claim check ([`ClaimCheck`], every body). The sending endpoint encodes;
//! the receiving one decodes (it holds the key). Every variant but the last keeps bodies in
//! their rows, whatever their size.
//!
//! A ratio is the median of its rounds' rates (variant ÷ plain), with the lowest and highest;
//! the sizes are what one message's body takes in the queue.

use nimbus::admin::Database;
use nimbus::{BodyCompression, BodyEncryption, ClaimCheck, SendOptions};
use serde_json::json;

use super::drive::{drain_rate, run_tasks};
use super::message::ping_of_words;
use super::stats::Pairs;
use super::workload::builder;
use super::{Settings, Target};
use crate::Failure;

/// A key for the benchmark's messages alone.
const BENCH_KEY: [u8; 32] = [0x5a; 32];

/// One way of writing bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Plain,
    Gzip,
    Zstd,
    Encrypted,
    Both,
    StoredApart,
}

const VARIANTS: [Variant; 6] = [
    Variant::Plain,
    Variant::Gzip,
    Variant::Zstd,
    Variant::Encrypted,
    Variant::Both,
    Variant::StoredApart,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Gzip => "gzip",
            Variant::Zstd => "zstd",
            Variant::Encrypted => "aes-256-gcm",
            Variant::Both => "gzip+aes",
            Variant::StoredApart => "stored-apart",
        }
    }

    /// `builder` set up to write bodies this way (gzip at `level`, zstd at its default level),
    /// and to read them: the key
    /// decrypts.
    fn apply(self, builder: nimbus::BusBuilder, level: u32) -> nimbus::BusBuilder {
        let builder = builder.claim_check(match self {
            Variant::StoredApart => ClaimCheck::in_database().above(0),
            _ => ClaimCheck::off(),
        });
        let builder = match self {
            Variant::Gzip | Variant::Both => {
                builder.body_compression(BodyCompression::gzip().min_bytes(0).level(level))
            }
            Variant::Zstd => builder.body_compression(BodyCompression::zstd().min_bytes(0)),
            _ => builder,
        };
        match self {
            Variant::Encrypted | Variant::Both => {
                builder.body_encryption(BodyEncryption::new("bench", BENCH_KEY))
            }
            _ => builder.body_encryption(BodyEncryption::new("bench", BENCH_KEY).decrypt_only()),
        }
    }
}

/// gzip's level: `--gzip-level`, else the default.
fn level(settings: &Settings) -> u32 {
    settings.gzip_level.unwrap_or(nimbus::DEFAULT_GZIP_LEVEL)
}

/// What the rounds measured for one variant against plain.
#[derive(Default)]
struct Measured {
    sends: Pairs,
    receives: Pairs,
    /// One message's body as stored.
    stored_bytes: usize,
}

/// Runs the rounds on `target` and prints the result (or one JSON line).
pub async fn run(
    target: Target,
    admin: Database,
    settings: Settings,
    json: bool,
) -> Result<(), Failure> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let queue = format!("BenchBodies{run_id}");
    admin.create_schema(&[queue.as_str()]).await?;
    let measured = rounds(&target, &admin, &settings, &queue, json).await;
    let _ = admin.drop_queue(&queue).await;
    for variant in VARIANTS {
        let _ = admin
            .drop_queue(&format!("{queue}{}", sender_suffix(variant)))
            .await;
    }
    let measured = measured?;
    print(&target, &settings, &measured, json);
    Ok(())
}

/// What `message`'s body takes as written: in its row, or stored apart (its header says).
fn stored_size(message: &nimbus::admin::QueuedMessage) -> usize {
    match nimbus::admin::shown_body(&message.headers, &message.body) {
        nimbus::admin::ShownBody::StoredApart { bytes, .. } => {
            usize::try_from(bytes).unwrap_or(usize::MAX)
        }
        _ => message.body.len(),
    }
}

fn sender_suffix(variant: Variant) -> String {
    format!("Sender{}", variant.name().replace(['-', '+'], ""))
}

async fn rounds(
    target: &Target,
    admin: &Database,
    settings: &Settings,
    queue: &str,
    json: bool,
) -> Result<Vec<(Variant, Measured)>, Failure> {
    let mut measured: Vec<(Variant, Measured)> =
        VARIANTS.iter().map(|v| (*v, Measured::default())).collect();
    let bar = super::progress_bar((settings.rounds * VARIANTS.len()) as u64, json)?;
    for round in 0..settings.rounds {
        let mut rates = [(0.0, 0.0); VARIANTS.len()];
        for step in 0..VARIANTS.len() {
            let index = (round + step) % VARIANTS.len();
            let variant = VARIANTS[index];
            bar.set_message(format!("round {} {}", round + 1, variant.name()));
            let sent = send_rate(target, settings, queue, variant).await?;
            if round == 0 {
                let stored = admin.peek(queue, 1).await?;
                measured[index].1.stored_bytes = stored.first().map_or(0, stored_size);
            }
            let received = drain_rate(target, settings, queue, |receiver| {
                let receiver = match settings.receive_batch {
                    Some(batch) => receiver.receive_batch(batch),
                    None => receiver,
                };
                variant.apply(receiver, level(settings))
            })
            .await?;
            if admin.queue_depth(queue).await? != 0 {
                return Err("the benchmark's queue was not drained".into());
            }
            rates[index] = (sent, received);
            bar.inc(1);
        }
        let (plain_sent, plain_received) = rates[0];
        for (index, (_, m)) in measured.iter_mut().enumerate() {
            m.sends.0.push((plain_sent, rates[index].0));
            m.receives.0.push((plain_received, rates[index].1));
        }
    }
    bar.finish_and_clear();
    Ok(measured)
}

/// Sends `--messages` messages of words to `queue` from an endpoint that writes bodies as
/// `variant` says, over `--concurrency` tasks: messages per second.
async fn send_rate(
    target: &Target,
    settings: &Settings,
    queue: &str,
    variant: Variant,
) -> Result<f64, Failure> {
    let sender_queue = format!("{queue}{}", sender_suffix(variant));
    let sender = variant
        .apply(
            builder(target, settings.concurrency, &sender_queue, "sender"),
            level(settings),
        )
        .route::<super::message::Ping>(queue.to_string())
        .monitoring_interval(None)
        .build()?
        .start()
        .await?;
    let (bus, body) = (sender.clone(), settings.body_size);
    let to = queue.to_string();
    let elapsed = run_tasks(settings.messages, settings.concurrency, move || {
        let (bus, to) = (bus.clone(), to.clone());
        async move {
            bus.send_with(ping_of_words(body), SendOptions::new().to(to.as_str()))
                .await?;
            Ok(())
        }
    })
    .await;
    sender.stop().await?;
    Ok(settings.messages as f64 / elapsed?.as_secs_f64().max(1e-9))
}

fn print(target: &Target, settings: &Settings, measured: &[(Variant, Measured)], json: bool) {
    let rows: Vec<_> = measured
        .iter()
        .map(|(variant, m)| {
            let (send, send_min, send_max, plain_send, send_rate) = m.sends.summary();
            let (receive, receive_min, receive_max, plain_receive, receive_rate) =
                m.receives.summary();
            (
                *variant,
                [send, send_min, send_max, plain_send, send_rate],
                [
                    receive,
                    receive_min,
                    receive_max,
                    plain_receive,
                    receive_rate,
                ],
                m.stored_bytes,
            )
        })
        .collect();
    if json {
        let results: Vec<_> = rows
            .iter()
            .map(|(variant, send, receive, stored)| {
                json!({"what": variant.name(), "stored_bytes": stored,
                       "send_ratio_median": send[0], "send_ratio_min": send[1],
                       "send_ratio_max": send[2], "send_per_s": send[4],
                       "receive_ratio_median": receive[0], "receive_ratio_min": receive[1],
                       "receive_ratio_max": receive[2], "receive_per_s": receive[4]})
            })
            .collect();
        println!(
            "{}",
            json!({"mode": "bodies", "database": target.backend,
                   "gzip_level": level(settings),
                   "messages": settings.messages, "rounds": settings.rounds,
                   "body_size": settings.body_size, "concurrency": settings.concurrency,
                   "results": results})
        );
        return;
    }
    println!(
        "Bodies on {}: each ÷ plain, {} messages of {} bytes, {} rounds",
        target.backend, settings.messages, settings.body_size, settings.rounds
    );
    println!(
        "{:<12} {:>9} {:>11} {:>13} {:>10} {:>11} {:>13} {:>10}",
        "variant", "stored B", "send ratio", "min–max", "send/s", "recv ratio", "min–max", "recv/s"
    );
    for (variant, send, receive, stored) in rows {
        println!(
            "{:<12} {:>9} {:>11.2} {:>13} {:>10.0} {:>11.2} {:>13} {:>10.0}",
            variant.name(),
            stored,
            send[0],
            format!("{:.2}–{:.2}", send[1], send[2]),
            send[4],
            receive[0],
            format!("{:.2}–{:.2}", receive[1], receive[2]),
            receive[4]
        );
    }
}
