//! `nimbus bodies`: what the claim check stores apart in `NimbusBodies`, per queue the bodies'
//! messages were written to: how many, their bytes, how many are kept for dead letters.

use serde_json::json;

use crate::{connect, print_table, Cli, Failure};

/// Runs `nimbus bodies`.
pub async fn run(cli: &Cli) -> Result<(), Failure> {
    let db = connect(cli).await?;
    let bodies = db.bodies().await?;
    if cli.json {
        let rows: Vec<_> = bodies
            .iter()
            .map(|b| {
                json!({
                    "queue": b.queue,
                    "bodies": b.bodies,
                    "bytes": b.bytes,
                    "dead_lettered": b.dead_lettered,
                    "in_object_store": b.in_object_store,
                    "oldest": b.oldest.map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()),
                })
            })
            .collect();
        println!("{}", json!({ "bodies": rows }));
    } else if bodies.is_empty() {
        println!("no body is stored apart");
    } else {
        let rows = bodies.iter().map(|b| {
            vec![
                b.queue.clone(),
                b.bodies.to_string(),
                b.bytes.to_string(),
                b.dead_lettered.to_string(),
                b.oldest
                    .map_or_else(|| "-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string()),
            ]
        });
        print_table(
            &[
                "queue",
                "bodies",
                "bytes",
                "of dead letters",
                "oldest stored at (UTC)",
            ],
            &[1, 2, 3],
            rows,
        );
    }
    Ok(())
}
