//! `nimbus delayed`: the delayed messages not delivered yet; cancelling one, moving its due time.

use std::time::Duration;

use clap::Subcommand;
use serde_json::json;

use crate::{connect, print_table, report, Cli, Failure, Layout};

/// What `nimbus delayed` does.
#[derive(Debug, Subcommand)]
pub enum DelayedCommand {
    /// Delayed messages not delivered yet, soonest due first: id, destination queue, type and
    /// due time (database time, UTC).
    List {
        /// How many at most.
        #[arg(short = 'n', long, default_value_t = 100)]
        limit: i64,
    },
    /// Cancels a delayed message while it is pending: it is never delivered. Says so when it
    /// was delivered already, or no pending delayed message has that id (`"cancelled": false`
    /// with --json).
    Cancel {
        /// The message id (as `nimbus delayed list` or `Bus::send_delayed` gave it).
        id: nimbus::uuid::Uuid,
    },
    /// Moves the due time of a delayed message while it is pending. Says so when it was
    /// delivered already, or no pending delayed message has that id (`"rescheduled": false`
    /// with --json).
    Reschedule {
        /// The message id.
        id: nimbus::uuid::Uuid,
        /// Due this long from now by the database's clock, e.g. "90s", "2h".
        #[arg(long = "in", value_parser = humantime::parse_duration, conflicts_with = "at")]
        delay: Option<Duration>,
        /// Due at this time, RFC 3339 (e.g. 2026-12-24T18:00:00Z).
        #[arg(long, value_parser = parse_time)]
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
}

fn parse_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| {
            format!("{text:?} is not an RFC 3339 time ({e}); write e.g. 2026-12-24T18:00:00Z")
        })
}

/// Runs `command`.
pub async fn run(cli: &Cli, command: &DelayedCommand) -> Result<(), Failure> {
    let db = connect(cli).await?;
    // Where the layout keeps its delayed messages: a schema without it holds none, which is
    // said with what to check rather than as a missing table.
    let table = match cli.layout {
        Layout::Table | Layout::Nservicebus => "NimbusDelayedMessages",
        Layout::Shared => "NimbusMessages",
    };
    if !db.table_exists(table).await? {
        return Err(format!(
            "this schema has no table {table}, where the {} layout keeps delayed messages: \
             no endpoint of that layout ran here. Fix: check --database, --schema and \
             --layout, or create the tables with `nimbus schema apply`",
            cli.layout.name()
        )
        .into());
    }
    match command {
        DelayedCommand::List { limit } => {
            let delayed = db.delayed_messages(*limit).await?;
            let due = |m: &nimbus::DelayedMessage| {
                m.due.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            };
            if cli.json {
                let rows: Vec<_> = delayed
                    .iter()
                    .map(|m| {
                        json!({"id": m.id, "destination": m.destination,
                               "type": m.message_type, "due": due(m)})
                    })
                    .collect();
                println!("{}", json!({"delayed": rows}));
            } else if delayed.is_empty() {
                println!("no delayed message is waiting");
            } else {
                let rows = delayed.iter().map(|m| {
                    vec![
                        m.id.clone(),
                        m.destination.clone(),
                        m.message_type.clone().unwrap_or_else(|| "-".into()),
                        due(m).unwrap_or_else(|| "-".into()),
                    ]
                });
                print_table(&["id", "destination", "type", "due (UTC)"], &[], rows);
            }
            Ok(())
        }
        DelayedCommand::Cancel { id } => {
            let cancelled = db.cancel_delayed(*id).await?;
            report(
                cli,
                json!({"id": id.to_string(), "cancelled": cancelled}),
                &if cancelled {
                    format!("cancelled {id}: it will not be delivered")
                } else {
                    format!(
                        "{id} was not pending: delivered already, or no delayed message has this id"
                    )
                },
            );
            Ok(())
        }
        DelayedCommand::Reschedule { id, delay, at } => {
            let due = match (delay, at) {
                (Some(delay), None) => nimbus::Due::In(*delay),
                (None, Some(at)) => nimbus::Due::At(*at),
                _ => {
                    return Err("say when: --in DURATION (e.g. --in 2h) or --at TIME \
                                (e.g. --at 2026-12-24T18:00:00Z)"
                        .into())
                }
            };
            let moved = db.reschedule_delayed(*id, due).await?;
            report(
                cli,
                json!({"id": id.to_string(), "rescheduled": moved}),
                &if moved {
                    format!("rescheduled {id}")
                } else {
                    format!(
                        "{id} was not pending: delivered already, or no delayed message has this id"
                    )
                },
            );
            Ok(())
        }
    }
}
