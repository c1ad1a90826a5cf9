//! A process for the instance-registry tests: starts a bus named `<application>`/`<instance>`
//! that receives and can make requests, prints `started`, and runs until a line comes on stdin
//! (then stops the bus, prints `stopped` and exits 0) or it is killed. A start the registry
//! refuses prints `refused: <error>` and exits 2.
//!
//! Usage: `instance_holder <database-url> <table|shared|nservicebus> <schema|-> <application>
//! <instance> <share: 0|1> <heartbeat-ms>`

use std::io::Write;
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;

struct Quiet;

impl Handler<Numbered> for Quiet {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, layout, schema, application, instance, share, heartbeat_ms] = &args[..] else {
        return Err(
            "usage: instance_holder <database-url> <table|shared|nservicebus> <schema|-> \
                    <application> <instance> <share: 0|1> <heartbeat-ms>"
                .into(),
        );
    };
    let layout = match layout.as_str() {
        "shared" => StorageLayout::SharedTable,
        "nservicebus" => StorageLayout::NServiceBusPostgreSql,
        _ => StorageLayout::TablePerQueue,
    };
    let mut builder = nimbus::Bus::builder()
        .names(application, instance)
        .database_url(url)
        .storage_layout(layout)
        .enable_requests()
        .share_instance_name(share == "1")
        .instance_heartbeat(Duration::from_millis(heartbeat_ms.parse()?))
        .handler(Quiet);
    if schema != "-" {
        builder = builder.schema(schema);
    }
    let bus = match builder.build()?.start().await {
        Ok(bus) => bus,
        Err(e) => {
            println!("refused: {e}");
            std::io::stdout().flush()?;
            std::process::exit(2);
        }
    };
    println!("started");
    std::io::stdout().flush()?;
    let mut line = String::new();
    tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line)).await??;
    bus.stop().await?;
    println!("stopped");
    Ok(())
}
