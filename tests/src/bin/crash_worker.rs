//! A worker process for the SIGKILL test: handles `Numbered` messages from the `Worker` queue and,
//! in the same transaction, sends each number on to the `Done` queue. Runs until killed.
//!
//! Usage: `crash_worker <database-url> <table|shared> [schema]`

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;

struct Forward;

#[nimbus::handler]
impl Handler<Numbered> for Forward {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send_to("Done", m)?;
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: crash_worker <database-url> <table|shared> [schema]";
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(usage)?;
    let layout = match args.next().as_deref() {
        Some("table") => StorageLayout::TablePerQueue,
        Some("shared") => StorageLayout::SharedTable,
        _ => return Err(usage.into()),
    };
    let mut builder = nimbus::Bus::builder()
        .names("Worker", format!("worker-{}", std::process::id()))
        .database_url(url)
        .storage_layout(layout)
        .peek_delay(std::time::Duration::from_millis(100))
        .concurrency(8)
        // Nobody receives from Done: the worker makes it.
        .create_queues_on_send(true)
        .handler(Forward);
    if let Some(schema) = args.next() {
        builder = builder.schema(schema);
    }
    let _bus = builder.build()?.start().await?;
    std::future::pending::<()>().await;
    Ok(())
}
