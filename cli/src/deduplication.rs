//! `nimbus deduplication`: the keys held per scope (deduplicated sends per queue, inbox ids per
//! queue), and forgetting one so that its message goes through again.

use clap::Subcommand;
use serde_json::json;

use crate::{connect, print_table, report, Cli, Failure};

/// What `nimbus deduplication` does.
#[derive(Debug, Subcommand)]
pub enum DeduplicationCommand {
    /// The keys held within their window, per scope (`send:<queue>`: keys of deduplicated
    /// sends; `inbox:<queue>`: ids an inbox handled), with when the first of them is forgotten.
    List,
    /// Forgets one key: the next send with it, or the next copy of that message id, goes
    /// through. Says so when it was not held (`"forgotten": false` with --json).
    Forget {
        /// The scope, as `nimbus deduplication list` names it (`send:Orders`, `inbox:Billing`).
        scope: String,
        /// The key: a send's deduplication key, or a message id.
        key: String,
    },
}

/// Runs `command`.
pub async fn run(cli: &Cli, command: &DeduplicationCommand) -> Result<(), Failure> {
    let db = connect(cli).await?;
    match command {
        DeduplicationCommand::List => {
            let scopes = db.deduplication_scopes().await?;
            let soonest = |s: &nimbus::admin::DeduplicationScope| {
                s.soonest_expiry
                    .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            };
            if cli.json {
                let rows: Vec<_> = scopes
                    .iter()
                    .map(
                        |s| json!({"scope": s.scope, "keys": s.keys, "soonest_expiry": soonest(s)}),
                    )
                    .collect();
                println!("{}", json!({"scopes": rows}));
            } else if scopes.is_empty() {
                println!("no deduplication key is held");
            } else {
                let rows = scopes.iter().map(|s| {
                    vec![
                        s.scope.clone(),
                        s.keys.to_string(),
                        soonest(s).unwrap_or_else(|| "-".into()),
                    ]
                });
                print_table(&["scope", "keys", "first forgotten at (UTC)"], &[1], rows);
            }
            Ok(())
        }
        DeduplicationCommand::Forget { scope, key } => {
            let forgotten = db.forget_deduplication_key(scope, key).await?;
            report(
                cli,
                json!({"scope": scope, "key": key, "forgotten": forgotten}),
                &if forgotten {
                    format!("forgot {key:?} of {scope}: the next one goes through")
                } else {
                    format!("{key:?} was not held in {scope}")
                },
            );
            Ok(())
        }
    }
}
