//! A load for measuring the console and the cost of instance reports: starts `instances` buses
//! (default 10) of five endpoints, each receiving from its own queue and reporting to the
//! Monitoring page every second, makes further queues up to `queues` in all (default 50), and
//! sends each endpoint a few messages a second until `seconds` have passed (default 120). Point
//! `nimbus console` at the same database meanwhile.
//!
//! `cargo run --release --example console_load -- sqlite://load.db 10 50 120` (a PostgreSQL URL
//! with `--features postgres`, a SQL Server connection string with `--features sqlserver`).

use std::time::{Duration, Instant};

use nimbus::admin::Database;
use nimbus::{Bus, Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Command)]
#[nimbus(type_name = "Load.Work")]
struct Work {
    n: u64,
}

/// Takes a few milliseconds; one message in 20 fails its first attempt, so the charts show
/// failures and retries too.
struct Busy;

impl Handler<Work> for Busy {
    async fn handle(&self, m: Work, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        tokio::time::sleep(Duration::from_millis(1 + m.n % 7)).await;
        if m.n.is_multiple_of(20) && ctx.attempt() == 1 {
            return Err("declined on the first attempt; the retry takes it".into());
        }
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| "sqlite://load.db".into());
    let number = |given: Option<String>, default: u64| -> Result<u64, std::num::ParseIntError> {
        given.map_or(Ok(default), |a| a.parse())
    };
    let instances = number(args.next(), 10)?;
    let queues = number(args.next(), 50)?;
    let seconds = number(args.next(), 120)?;

    let mut buses = Vec::new();
    for i in 0..instances {
        let endpoint = format!("Load{}", i % 5);
        let bus = Bus::builder()
            .names(endpoint.clone(), format!("load-{i}"))
            .database_url(url.clone())
            .monitoring_interval(Some(Duration::from_secs(1)))
            .route::<Work>(endpoint)
            .handler(Busy)
            .build()?
            .start()
            .await?;
        buses.push(bus);
    }
    let database = Database::connect(&url).await?;
    let made = database.queues().await?.len() as u64;
    let others: Vec<String> = (made..queues).map(|q| format!("Idle{q}")).collect();
    let names: Vec<&str> = others.iter().map(String::as_str).collect();
    database.create_schema(&names).await?;
    println!(
        "{instances} instances of 5 endpoints and {} idle queues; sending for {seconds} s",
        others.len()
    );

    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        for bus in &buses {
            n += 1;
            bus.send(Work { n }).await?;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let handled: u64 = buses.iter().map(|b| b.metrics().handled).sum();
    println!("sent {n}, handled {handled}");
    for bus in buses {
        bus.stop().await?;
    }
    Ok(())
}
