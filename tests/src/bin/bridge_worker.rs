//! A bridge process for the bridge's SIGKILL test: reads a bridge's configuration (JSON, as
//! `nimbus bridge --config` reads it) from the file its one argument names, runs the bridge,
//! and never stops on its own.
//!
//! Usage: `bridge_worker <config.json>`

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: bridge_worker <config.json>")?;
    let config: nimbus::bridge::BridgeConfig =
        serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let _bridge = nimbus::bridge::Bridge::start(config).await?;
    std::future::pending::<()>().await;
    Ok(())
}
