//! `nimbus schedules`: the recurring messages endpoints declare, with their next and last
//! ticks; pausing one, resuming it.

use clap::Subcommand;
use serde_json::json;

use crate::{connect, operator_running, print_table, report, Cli, Failure};

/// What `nimbus schedules` does.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Every schedule (or one endpoint's): when it fires, what it sends, its next tick, its
    /// last tick and who fired it, how many ticks it sent and missed, and whether it is paused.
    /// Times are the database's, UTC.
    List {
        /// Only this endpoint's schedules.
        #[arg(long)]
        endpoint: Option<String>,
    },
    /// Pauses a schedule: no instance of its endpoint fires it until `nimbus schedules resume`.
    /// Kept in the database, so it survives restarts.
    Pause {
        /// The endpoint that declares it (its application name).
        endpoint: String,
        /// The schedule's name.
        name: String,
        /// Who pauses it, shown to other operators (default: $USER on this host).
        #[arg(long)]
        by: Option<String>,
    },
    /// Resumes a paused schedule from its next tick after now: the ticks that came due while
    /// it was paused are not fired.
    Resume {
        /// The endpoint that declares it.
        endpoint: String,
        /// The schedule's name.
        name: String,
    },
}

fn time(t: Option<chrono::NaiveDateTime>) -> Option<String> {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

/// Runs `command`.
pub async fn run(cli: &Cli, command: &ScheduleCommand) -> Result<(), Failure> {
    let db = connect(cli).await?;
    match command {
        ScheduleCommand::List { endpoint } => {
            let schedules = db.schedules(endpoint.as_deref()).await?;
            if cli.json {
                let rows: Vec<_> = schedules
                    .iter()
                    .map(|s| {
                        json!({
                            "endpoint": s.endpoint, "name": s.name, "when": s.recurrence,
                            "target": s.target, "missed": s.missed,
                            "next_due": time(Some(s.next_due)), "last_due": time(s.last_due),
                            "last_fired_at": time(s.last_fired_at),
                            "last_fired_by": s.last_fired_by, "fired": s.fired,
                            "missed_ticks": s.missed_ticks, "paused_at": time(s.paused_at),
                            "paused_by": s.paused_by,
                        })
                    })
                    .collect();
                println!("{}", json!({"schedules": rows}));
            } else if schedules.is_empty() {
                println!("no endpoint here declares a schedule");
            } else {
                let rows = schedules.iter().map(|s| {
                    let state = match (&s.paused_at, &s.paused_by) {
                        (Some(_), Some(by)) => format!("paused by {by}"),
                        (Some(_), None) => "paused".to_string(),
                        _ => "running".to_string(),
                    };
                    let last = match (time(s.last_due), &s.last_fired_by) {
                        (Some(tick), Some(by)) => format!("{tick} by {by}"),
                        (Some(tick), None) => tick,
                        _ => "-".to_string(),
                    };
                    vec![
                        s.endpoint.clone(),
                        s.name.clone(),
                        s.recurrence.clone(),
                        s.target.clone(),
                        time(Some(s.next_due)).unwrap_or_default(),
                        last,
                        s.fired.to_string(),
                        s.missed_ticks.to_string(),
                        state,
                    ]
                });
                print_table(
                    &[
                        "endpoint",
                        "schedule",
                        "when",
                        "sends",
                        "next (UTC)",
                        "last tick (UTC)",
                        "fired",
                        "missed",
                        "state",
                    ],
                    &[6, 7],
                    rows,
                );
            }
            Ok(())
        }
        ScheduleCommand::Pause { endpoint, name, by } => {
            let by = by
                .clone()
                .unwrap_or_else(|| operator_running("nimbus schedules pause"));
            let newly = db.pause_schedule(endpoint, name, &by).await?;
            report(
                cli,
                json!({"endpoint": endpoint, "schedule": name, "paused": true, "already_paused": !newly}),
                &if newly {
                    format!(
                        "paused schedule {name:?} of {endpoint}: no tick fires until `nimbus schedules resume {endpoint} {name}`"
                    )
                } else {
                    format!("schedule {name:?} of {endpoint} was paused already")
                },
            );
            Ok(())
        }
        ScheduleCommand::Resume { endpoint, name } => {
            let resumed = db.resume_schedule(endpoint, name).await?;
            report(
                cli,
                json!({"endpoint": endpoint, "schedule": name, "resumed": resumed}),
                &if resumed {
                    format!(
                        "resumed schedule {name:?} of {endpoint} from its next tick (the ticks that came due while it was paused do not fire)"
                    )
                } else {
                    format!("schedule {name:?} of {endpoint} was not paused")
                },
            );
            Ok(())
        }
    }
}
