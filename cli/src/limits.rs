//! `nimbus limits`: every limit of handlers at once or messages per period the endpoints keep
//! in `NimbusLimits`, with its slots and the messages it held back because it was full.

use serde_json::json;

use crate::{connect, print_table, Cli, Failure};

/// A time as the listing prints it (UTC), `-` when none.
fn when(time: Option<chrono::NaiveDateTime>) -> String {
    time.map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

/// Runs `nimbus limits`.
pub async fn run(cli: &Cli) -> Result<(), Failure> {
    let db = connect(cli).await?;
    let limits = db.limits().await?;
    if cli.json {
        let rows: Vec<_> = limits
            .iter()
            .map(|l| {
                json!({
                    "scope": l.scope,
                    "slots": l.slots,
                    "taken": l.taken,
                    "last_taken": l.last_taken.map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()),
                    "held": l.held,
                    "last_held": l.last_held.map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()),
                })
            })
            .collect();
        println!("{}", json!({ "limits": rows }));
    } else if limits.is_empty() {
        println!("no limit has been used yet");
    } else {
        let rows = limits.iter().map(|l| {
            vec![
                l.scope.clone(),
                l.slots.to_string(),
                l.taken.to_string(),
                l.held.to_string(),
                when(l.last_held),
            ]
        });
        print_table(
            &[
                "scope (queue|kind|message type|key)",
                "slots",
                "taken this period",
                "messages held",
                "last held at (UTC)",
            ],
            &[1, 2, 3],
            rows,
        );
    }
    Ok(())
}
