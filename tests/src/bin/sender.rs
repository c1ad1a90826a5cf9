//! A sender process for the cross-process wake-up test: sends `count` `Numbered` messages to
//! `queue`, one every 200 ms, printing each send's completion time (microseconds since the Unix
//! epoch) on its own line.
//!
//! Usage: `sender <database-url> <schema> <queue> <count>` (`-` for no schema: SQLite)

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nimbus_conformance::suite::Numbered;

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: sender <database-url> <schema> <queue> <count>";
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(usage)?;
    let schema = args.next().ok_or(usage)?;
    let queue = args.next().ok_or(usage)?;
    let count: u32 = args.next().ok_or(usage)?.parse()?;
    let mut builder = nimbus::Bus::builder()
        .names("Sender", format!("sender-{}", std::process::id()))
        .database_url(url);
    if schema != "-" {
        builder = builder.schema(schema);
    }
    let bus = builder.build()?.start().await?;
    for n in 0..count {
        tokio::time::sleep(Duration::from_millis(200)).await;
        bus.send_to(&queue, Numbered { n }).await?;
        let sent = SystemTime::now().duration_since(UNIX_EPOCH)?.as_micros();
        println!("{sent}");
    }
    bus.stop().await?;
    Ok(())
}
