//! `nimbus groups QUEUE`: the ordered groups of a queue with messages waiting, longest first,
//! and which of them are held by a first message waiting for its delayed retry; and
//! `nimbus priorities QUEUE`: its messages per priority.

use serde_json::json;

use crate::{connect, print_table, Cli, Failure};

/// Runs `nimbus groups`: at most `limit` groups of `queue`.
pub async fn run(cli: &Cli, queue: &str, limit: i64) -> Result<(), Failure> {
    let db = connect(cli).await?;
    let groups = db.groups(queue, limit).await?;
    let held_until = |g: &nimbus::GroupSummary| {
        g.held_until
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
    };
    if cli.json {
        let rows: Vec<_> = groups
            .iter()
            .map(|g| json!({"group": g.key, "waiting": g.waiting, "held_until": held_until(g)}))
            .collect();
        println!("{}", json!({"queue": queue, "groups": rows}));
    } else if groups.is_empty() {
        println!("no group of {queue} has messages waiting (or the queue keeps no ordered groups)");
    } else {
        let rows = groups.iter().map(|g| {
            vec![
                g.key.clone(),
                g.waiting.to_string(),
                held_until(g).map_or_else(|| "-".into(), |t| format!("held until {t}")),
            ]
        });
        print_table(&["group", "waiting", "state (UTC)"], &[1], rows);
    }
    Ok(())
}

/// Runs `nimbus priorities`: the messages of `queue` per priority, the highest first.
pub async fn run_priorities(cli: &Cli, queue: &str) -> Result<(), Failure> {
    let db = connect(cli).await?;
    let counts = db.priorities(queue).await?;
    if cli.json {
        let rows: Vec<_> = counts
            .iter()
            .map(|c| json!({"priority": c.priority, "waiting": c.waiting}))
            .collect();
        println!("{}", json!({"queue": queue, "priorities": rows}));
    } else if counts.is_empty() {
        println!("no message waits in {queue} (or the queue keeps no priorities)");
    } else {
        let rows = counts
            .iter()
            .map(|c| vec![c.priority.to_string(), c.waiting.to_string()]);
        print_table(&["priority", "waiting"], &[0, 1], rows);
    }
    Ok(())
}
