//! A bridge process for the bridge's SIGKILL test: reads a bridge's configuration (JSON, as
//! `nimbus bridge --config` reads it) from the file its one argument names, runs the bridge,
//! and never stops on its own.
//!
//! Usage: `bridge_worker <config.json>`

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // What the bridge warns of (a side it cannot reach, a move it tries again) reaches the
    // test's output, so a test that waits in vain says why.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: bridge_worker <config.json>")?;
    let config: nimbus::bridge::BridgeConfig =
        serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let _bridge = nimbus::bridge::Bridge::start(config).await?;
    std::future::pending::<()>().await;
    Ok(())
}
