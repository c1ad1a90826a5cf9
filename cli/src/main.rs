//! `nimbus`: operate a Nimbus for Rust database from the shell — print and apply the schema, look
//! at queues and dead letters, replay them, list and sweep subscriptions. Every command works on
//! SQLite, PostgreSQL and SQL Server through `nimbus::admin`, prints a table for people or JSON
//! (`--json`) for scripts, and fails with the library's errors (what went wrong, what to do).

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use nimbus::admin::{ConnectOptions, Database};
use nimbus::StorageLayout;
use serde_json::json;

/// Operate a Nimbus for Rust database.
#[derive(Debug, Parser)]
#[command(name = "nimbus", version)]
struct Cli {
    /// The database: sqlite://file.db, postgres://user@host/db, or an ADO.NET connection string
    /// for SQL Server.
    #[arg(long, env = "DATABASE_URL", global = true)]
    database: Option<String>,
    /// The schema holding the tables (default: the database's default schema).
    #[arg(long, global = true)]
    schema: Option<String>,
    /// How the endpoints store queues.
    #[arg(long, value_enum, default_value_t = Layout::Table, global = true)]
    layout: Layout,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Layout {
    /// One table per queue (seed 000).
    Table,
    /// Every queue in NimbusMessages (seed 003).
    Shared,
}

impl From<Layout> for StorageLayout {
    fn from(layout: Layout) -> Self {
        match layout {
            Layout::Table => StorageLayout::TablePerQueue,
            Layout::Shared => StorageLayout::SharedTable,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The tables Nimbus needs.
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// The first messages of a queue, without removing them.
    Peek {
        /// The queue.
        queue: String,
        /// How many messages at most.
        #[arg(short = 'n', long, default_value_t = 10)]
        limit: i64,
    },
    /// Messages that failed for good.
    #[command(subcommand, name = "dead-letters")]
    DeadLetters(DeadLetterCommand),
    /// Who receives which events.
    #[command(subcommand)]
    Subscriptions(SubscriptionCommand),
}

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Prints every statement auto-create would run (no connection needed).
    Print {
        /// Queue tables to include (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
    },
    /// Creates what is missing (idempotent).
    Apply {
        /// Queue tables to create (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
    },
    /// Checks that everything exists; the error names the statement to run.
    Verify {
        /// Queue tables to check (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum DeadLetterCommand {
    /// The oldest dead letters.
    List {
        /// How many at most.
        #[arg(short = 'n', long, default_value_t = 50)]
        limit: i64,
        /// Only those that failed in this queue.
        #[arg(long)]
        queue: Option<String>,
    },
    /// One dead letter with its envelope (reason, headers, body).
    Show {
        /// Its id.
        id: uuid::Uuid,
    },
    /// Moves one dead letter back to its queue with a fresh retry budget.
    Replay {
        /// Its id.
        id: uuid::Uuid,
    },
}

#[derive(Debug, Subcommand)]
enum SubscriptionCommand {
    /// Every subscription and its last heartbeat.
    List,
    /// Deletes subscriptions not seen for `--idle` (rows with their own idle period use theirs).
    Sweep {
        /// The idle period, e.g. "4days" or "30m".
        #[arg(long, value_parser = humantime::parse_duration, default_value = "4days")]
        idle: Duration,
    },
}

/// A command's failure, printed as `error: …`.
type Failure = Box<dyn std::error::Error>;

#[actix_rt::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn database_url(cli: &Cli) -> Result<&str, Failure> {
    cli.database.as_deref().ok_or_else(|| {
        "no database given. Fix: pass --database URL or set DATABASE_URL (sqlite://file.db, \
         postgres://user@host/db, or Server=…;Database=…)"
            .into()
    })
}

/// The `schema/` folder of the database a URL names, for `schema print`.
fn dialect_of(url: &str) -> &'static str {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("sqlite:") {
        "sqlite"
    } else if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        "postgres"
    } else {
        "sqlserver"
    }
}

async fn connect(cli: &Cli) -> Result<Database, Failure> {
    let mut options = ConnectOptions::new().layout(cli.layout.into());
    if let Some(schema) = &cli.schema {
        options = options.schema(schema.clone());
    }
    Ok(Database::connect_with(database_url(cli)?, options).await?)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn run(cli: Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Schema(SchemaCommand::Print { queues }) => {
            let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
            let script = nimbus::admin::creation_script(
                dialect_of(database_url(&cli)?),
                cli.schema.as_deref(),
                cli.layout.into(),
                &queues,
            )?;
            print!("{script}");
        }
        Command::Schema(SchemaCommand::Apply { queues }) => {
            let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
            let db = connect(&cli).await?;
            db.create_schema(&queues).await?;
            report(&cli, json!({"applied": true}), "schema applied");
        }
        Command::Schema(SchemaCommand::Verify { queues }) => {
            let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
            let db = connect(&cli).await?;
            db.verify_schema(&queues).await?;
            let mut missing = Vec::new();
            for queue in &queues {
                for (name, statement) in db.missing_indexes(queue).await? {
                    missing.push(json!({"queue": queue, "index": name, "statement": statement}));
                }
            }
            let summary = if missing.is_empty() {
                "schema verified".to_string()
            } else {
                format!(
                    "schema verified; {} index(es) missing: {:#}",
                    missing.len(),
                    serde_json::Value::Array(missing.clone())
                )
            };
            report(
                &cli,
                json!({"verified": true, "missing_indexes": missing}),
                &summary,
            );
        }
        Command::Peek { queue, limit } => {
            let db = connect(&cli).await?;
            let messages = db.peek(queue, *limit).await?;
            if cli.json {
                let rows: Vec<_> = messages
                    .iter()
                    .map(|m| {
                        json!({"id": m.id, "headers": m.headers, "body": text(&m.body),
                               "expires": m.expires.map(|t| t.to_string()),
                               "unreadable": m.unreadable})
                    })
                    .collect();
                println!("{}", json!({"queue": queue, "messages": rows}));
            } else {
                println!("{} message(s) at the head of {queue:?}", messages.len());
                for m in &messages {
                    println!(
                        "- {}\n  headers: {}\n  body: {}",
                        m.id,
                        m.headers,
                        text(&m.body)
                    );
                    if let Some(why) = &m.unreadable {
                        println!("  unreadable: {why}");
                    }
                }
            }
        }
        Command::DeadLetters(DeadLetterCommand::List { limit, queue }) => {
            let db = connect(&cli).await?;
            let letters: Vec<_> = db
                .dead_letters(*limit)
                .await?
                .into_iter()
                .filter(|d| queue.is_none() || d.original_destination == *queue)
                .collect();
            if cli.json {
                let rows: Vec<_> = letters
                    .iter()
                    .map(|d| {
                        json!({"id": d.message_id, "queue": d.original_destination,
                               "attempts": d.delivery_attempts,
                               "failed_at": d.failed_at.map(|t| t.to_string())})
                    })
                    .collect();
                println!("{}", json!({"dead_letters": rows}));
            } else {
                println!("{:<38} {:<24} {:>8}  failed at", "id", "queue", "attempts");
                for d in &letters {
                    println!(
                        "{:<38} {:<24} {:>8}  {}",
                        d.message_id,
                        d.original_destination.as_deref().unwrap_or("-"),
                        d.delivery_attempts,
                        d.failed_at.map(|t| t.to_string()).unwrap_or_default()
                    );
                }
            }
        }
        Command::DeadLetters(DeadLetterCommand::Show { id }) => {
            let db = connect(&cli).await?;
            let wanted = id.to_string();
            let letter = db
                .dead_letters(i64::MAX)
                .await?
                .into_iter()
                .find(|d| d.message_id.eq_ignore_ascii_case(&wanted))
                .ok_or_else(|| format!("no dead letter {id}"))?;
            let envelope: serde_json::Value = serde_json::from_slice(&letter.body)
                .unwrap_or_else(|_| json!({"raw": text(&letter.body)}));
            println!(
                "{:#}",
                json!({"id": letter.message_id, "queue": letter.original_destination,
                       "attempts": letter.delivery_attempts,
                       "failed_at": letter.failed_at.map(|t| t.to_string()),
                       "envelope": envelope})
            );
        }
        Command::DeadLetters(DeadLetterCommand::Replay { id }) => {
            let db = connect(&cli).await?;
            if !db.replay_dead_letter(*id).await? {
                return Err(format!("no dead letter {id}").into());
            }
            report(&cli, json!({"replayed": id}), &format!("replayed {id}"));
        }
        Command::Subscriptions(SubscriptionCommand::List) => {
            let db = connect(&cli).await?;
            let subscriptions = db.subscriptions().await?;
            if cli.json {
                let rows: Vec<_> = subscriptions
                    .iter()
                    .map(|s| {
                        json!({"topic": s.topic, "queue": s.queue,
                               "last_seen_at": s.last_seen_at.map(|t| t.to_string()),
                               "idle_seconds": s.idle_seconds})
                    })
                    .collect();
                println!("{}", json!({"subscriptions": rows}));
            } else {
                println!("{:<40} {:<30} last seen", "topic", "queue");
                for s in &subscriptions {
                    println!(
                        "{:<40} {:<30} {}",
                        s.topic,
                        s.queue,
                        s.last_seen_at.map(|t| t.to_string()).unwrap_or_default()
                    );
                }
            }
        }
        Command::Subscriptions(SubscriptionCommand::Sweep { idle }) => {
            let db = connect(&cli).await?;
            let report_ = db.sweep_subscriptions(*idle).await?;
            report(
                &cli,
                json!({"swept": report_.subscriptions, "queues_dropped": report_.queues_dropped}),
                &format!(
                    "swept {} subscription(s), dropped {} queue(s)",
                    report_.subscriptions.len(),
                    report_.queues_dropped.len()
                ),
            );
        }
    }
    Ok(())
}

/// Prints a command's result: `value` with `--json`, `summary` otherwise.
fn report(cli: &Cli, value: serde_json::Value, summary: &str) {
    if cli.json {
        println!("{value}");
    } else {
        println!("{summary}");
    }
}
