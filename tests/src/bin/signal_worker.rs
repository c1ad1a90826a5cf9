//! A worker process for the graceful-stop test: starts a bus on the SQLite file it is given,
//! prints `started`, waits for a line on stdin, stops on SIGTERM or Ctrl-C (also one that came
//! while it waited), prints `stopped` and exits 0.
//!
//! Usage: `signal_worker <sqlite-file>`

use std::io::Write;

use nimbus::{Handler, HandlerContext, HandlerError};
use nimbus_conformance::suite::Numbered;

struct Quiet;

impl Handler<Numbered> for Quiet {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = std::env::args()
        .nth(1)
        .ok_or("usage: signal_worker <sqlite-file>")?;
    let bus = nimbus::Bus::builder()
        .names("Graceful", "graceful-1")
        .database_url(format!("sqlite://{file}"))
        .handler(Quiet)
        .build()?
        .start()
        .await?;
    // Listen before saying "started": the test sends SIGTERM as soon as it reads it, and only
    // then lets the worker go on (a line on stdin), so the signal arrives before the future
    // that waits for it is first polled — as it does in an application busy starting up.
    let stopped = bus.stop_on_signal();
    println!("started");
    std::io::stdout().flush()?;
    let mut go = String::new();
    std::io::stdin().read_line(&mut go)?;
    stopped.await?;
    println!("stopped");
    Ok(())
}
