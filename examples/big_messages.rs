//! Measures what big messages cost in memory: sends one message of each size (1, 20 and 100 MB
//! by default) to an endpoint in this process and waits until it is handled, printing the
//! process's resident memory (`VmRSS`) and its peak (`VmHWM`) before, right after, and a few
//! seconds after each (Linux only: it reads `/proc/self/status`).
//!
//! `cargo run --release --example big_messages -- sqlite://big.db 1 20 100` (sizes in MB; a
//! PostgreSQL URL with `--features postgres`). The bus's `max_body_size` is raised to fit the
//! largest.

use std::time::{Duration, Instant};

use nimbus::{Bus, Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Measure.Big")]
struct Big {
    data: String,
}

struct Take;

impl Handler<Big> for Take {
    async fn handle(&self, m: Big, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        std::hint::black_box(m.data.len());
        Ok(())
    }
}

/// (VmRSS, VmHWM) in MB.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let read = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (read("VmRSS:"), read("VmHWM:"))
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| "sqlite://big.db".into());
    let sizes: Vec<usize> = {
        let given: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
        if given.is_empty() {
            vec![1, 20, 100]
        } else {
            given
        }
    };
    let largest = sizes.iter().max().copied().unwrap_or(1);
    let bus = Bus::builder()
        .names("Big", "big-1")
        .database_url(url)
        .route::<Big>("Big")
        .max_body_size((largest + 1) * 1024 * 1024)
        .handler(Take)
        .build()?
        .start()
        .await?;
    let (rss, _) = memory();
    println!("started: RSS {rss:.0} MB");
    for size in sizes {
        let before = bus.metrics().handled;
        let (rss_before, _) = memory();
        let started = Instant::now();
        bus.send(Big {
            data: "x".repeat(size * 1024 * 1024),
        })
        .await?;
        let sent = started.elapsed();
        while bus.metrics().handled == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let handled = started.elapsed();
        let (rss_after, peak) = memory();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (rss_settled, _) = memory();
        println!(
            "{size} MB: sent in {:.2} s, handled after {:.2} s; RSS {rss_before:.0} MB before, \
             {rss_after:.0} MB after, {rss_settled:.0} MB 3 s later; peak so far {peak:.0} MB",
            sent.as_secs_f64(),
            handled.as_secs_f64()
        );
    }
    bus.stop().await?;
    Ok(())
}
