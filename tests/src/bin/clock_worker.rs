//! A worker process for the schedule SIGKILL test: an instance of the `Clock` endpoint whose
//! one-second schedule `pulse` sends `Numbered { n: 0 }` to `Ticks`. Named
//! `NIMBUS_INSTANCE` (default: `clock-<pid>`). Runs until killed.
//!
//! Usage: `clock_worker <database-url> <table|shared|nservicebus> [schema]`

use std::time::Duration;

use nimbus::Schedule;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::WorkerArgs;

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args =
        WorkerArgs::read("usage: clock_worker <database-url> <table|shared|nservicebus> [schema]")?;
    let instance = std::env::var("NIMBUS_INSTANCE")
        .unwrap_or_else(|_| format!("clock-{}", std::process::id()));
    let mut builder = nimbus::Bus::builder()
        .names("Clock", instance)
        .database_url(args.url)
        .storage_layout(args.layout)
        .schedule(
            Schedule::every("pulse", Duration::from_secs(1)).send_to("Ticks", Numbered { n: 0 }),
        );
    if let Some(schema) = args.schema {
        builder = builder.schema(schema);
    }
    let _bus = builder.build()?.start().await?;
    std::future::pending::<()>().await;
    Ok(())
}
