//! `nimbus`: operate a Nimbus for Rust database from the shell — print and apply the schema, look
//! at queues and dead letters, replay them, list and sweep subscriptions, and benchmark the
//! framework against the bare SQL it runs (`bench`, in [`bench`]). Every command works on
//! SQLite, PostgreSQL and SQL Server through `nimbus::admin`, prints a table for people or JSON
//! (`--json`) for scripts, and fails with the library's errors (what went wrong, what to do).
//!
//! This file is over 1,000 lines because it holds the command line's definitions with the help
//! texts users read, and one short function per command; the console and the benchmark are modules
//! of their own.

#[cfg(feature = "bench")]
mod bench;
mod bodies;
mod console;
mod deduplication;
mod delayed;
mod groups;
mod limits;
mod logging;
mod schedules;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nimbus::admin::{
    shown_body, ConnectOptions, Database, DeadLetterInfo, DeadLetterQuery, ShownBody,
};
use nimbus::StorageLayout;
use serde_json::json;

/// Operate a Nimbus for Rust database.
#[derive(Debug, Parser)]
#[command(name = "nimbus", version)]
struct Cli {
    /// The database: sqlite://file.db, postgres://user@host/db, or an ADO.NET connection string
    /// for SQL Server.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
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
    /// One table per queue (the default).
    Table,
    /// Every queue in one table, NimbusMessages.
    Shared,
    /// One table per queue in NServiceBus's PostgreSQL shape (PostgreSQL only).
    Nservicebus,
}

impl Layout {
    /// Its name on the command line (`table`, `shared` or `nservicebus`).
    fn name(self) -> &'static str {
        match self {
            Layout::Table => "table",
            Layout::Shared => "shared",
            Layout::Nservicebus => "nservicebus",
        }
    }
}

impl From<Layout> for StorageLayout {
    fn from(layout: Layout) -> Self {
        match layout {
            Layout::Table => StorageLayout::TablePerQueue,
            Layout::Shared => StorageLayout::SharedTable,
            Layout::Nservicebus => StorageLayout::NServiceBusPostgreSql,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The tables Nimbus needs.
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// Every queue: its exact depth and the age of its oldest message (from its
    /// NServiceBus.TimeSent header, the sender's clock).
    Queues,
    /// The running buses (endpoint instances) and whether each is alive: live, not responding
    /// (it missed three heartbeats: killed, frozen or cut off) or stopped; with host, process,
    /// version, queues and the last heartbeat (database time).
    Instances {
        /// Also the instances that stopped (kept a day).
        #[arg(long)]
        all: bool,
    },
    /// What every endpoint and queue handled over a recent window, from the reports running
    /// buses write into NimbusMonitoring: handled (and per second), failed and retried per
    /// second, processing and critical time p95, queue length. The console charts the same.
    Monitoring {
        /// How far back, e.g. "15m", "1h", "6h" (reports are kept 6 hours by default).
        #[arg(long, default_value = "15m", value_parser = humantime::parse_duration)]
        window: Duration,
    },
    /// Pauses a queue: its endpoints, in every process, stop taking its messages within one
    /// peek delay (handlers already running finish); sends still go in. Kept in the database
    /// until `nimbus resume`.
    Pause {
        /// The queue: a name in --schema, or an address naming its schema (Billing@[sales]).
        queue: String,
        /// Who pauses it, shown to other operators (default: $USER on this host).
        #[arg(long)]
        by: Option<String>,
    },
    /// Resumes a paused queue: its endpoints take its messages again within one peek delay.
    Resume {
        /// The queue: a name in --schema, or an address naming its schema (Billing@[sales]).
        queue: String,
    },
    /// The first messages of a queue, without removing them. Bodies longer than 2,000
    /// characters are cut, saying how much more there is (`--full` prints them whole).
    Peek {
        /// The queue: a name in --schema, or an address naming its schema (Billing@[sales]).
        queue: String,
        /// How many messages at most.
        #[arg(short = 'n', long, default_value_t = 10)]
        limit: i64,
        /// Print every body whole, however long.
        #[arg(long)]
        full: bool,
        /// Decrypt the bodies encrypted with these keys: a file with one key per line,
        /// `<key id> <key in base64>` (what `BodyEncryption::from_base64` reads). Without it,
        /// encrypted bodies are only named. Keys are never printed.
        #[arg(long, value_name = "PATH")]
        key_file: Option<std::path::PathBuf>,
    },
    /// Sends one message with a JSON body to a queue that exists, with the headers an endpoint
    /// writes; prints its id.
    Send {
        /// The queue: a name in --schema, or an address naming its schema (Billing@[sales]).
        queue: String,
        /// The message type receivers dispatch on (NServiceBus.EnclosedMessageTypes).
        #[arg(long = "type")]
        message_type: String,
        /// The body: JSON text.
        #[arg(long)]
        body: String,
        /// Another header, as NAME=VALUE (repeatable).
        #[arg(long = "header", value_parser = parse_header)]
        headers: Vec<(String, String)>,
    },
    /// Messages that failed for good.
    #[command(subcommand, name = "dead-letters")]
    DeadLetters(DeadLetterCommand),
    /// Delayed messages not delivered yet: list them, cancel one, move its due time.
    #[command(subcommand)]
    Delayed(delayed::DelayedCommand),
    /// Deduplication keys held (deduplicated sends, inbox ids): count them, forget one.
    #[command(subcommand)]
    Deduplication(deduplication::DeduplicationCommand),
    /// The ordered groups of a queue with messages waiting, longest first, and which are held
    /// by a first message waiting for its delayed retry.
    Groups {
        /// The queue (its endpoint keeps ordered groups).
        queue: String,
        /// At most this many groups.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// The messages of a queue that keeps priorities, per priority, the highest first.
    Priorities {
        /// The queue (its endpoint keeps priorities).
        queue: String,
    },
    /// The limits of handlers at once and messages per period the endpoints keep: each one's
    /// slots, how many of a rate's are taken this period, and how many messages it held back
    /// because it was full (they wait in their queue, and are neither failed nor dead-lettered).
    Limits,
    /// The bodies the claim check stores apart from their queue rows (table NimbusBodies), per
    /// queue their messages were written to: how many, their bytes, and how many are kept for
    /// dead letters (until they are replayed or their retention ends).
    Bodies,
    /// Recurring messages the endpoints declare: list them with their next and last ticks,
    /// pause one, resume it.
    #[command(subcommand)]
    Schedules(schedules::ScheduleCommand),
    /// Who receives which events.
    #[command(subcommand)]
    Subscriptions(SubscriptionCommand),
    /// Running saga instances.
    #[command(subcommand)]
    Sagas(SagaCommand),
    /// Benchmarks the framework against the bare SQL it runs, on this database.
    ///
    /// Interleaved rounds: in each, every workload runs through the framework and as bare SQL
    /// one right after the other, alternating which goes first. Reports the median rates, and
    /// the median and the spread (lowest-highest) of the per-round ratios. Makes its own queues
    /// (`Bench…`), empties them between rounds and drops them at the end. With `--latency RATE`,
    /// measures latency instead: throttled senders, idle receivers, in one process and two.
    #[cfg(feature = "bench")]
    Bench(bench::Settings),
    /// Benchmarks the framework against bare SQL: not in this build (install the CLI with
    /// `--features bench`).
    #[cfg(not(feature = "bench"))]
    Bench(NoBench),
    /// Serves a web console for operators: queues (depth, chart, pause and resume), failed
    /// messages grouped by queue, type and reason (replay, delete), subscriptions and
    /// instances. Listens on 127.0.0.1:8080 by default; any other address needs the
    /// NIMBUS_CONSOLE_TOKEN environment variable.
    Console(console::Settings),
    /// Runs a bridge between databases until stopped (Ctrl-C, SIGTERM): it moves the queues and
    /// events a JSON file names from one database to another, each message exactly once (see
    /// the guide's "Past one database server"). The file holds the databases' URLs: keep it
    /// private. --database is not used.
    Bridge {
        /// The bridge's configuration: {"name", "sides": {NAME: {"database_url", "schema"?,
        /// "storage_layout"?}}, "queues": [{"from", "queue", "to", "to_queue"?}],
        /// "events": [{"from", "topic", "to"}], "window"?, "idle_poll"?, "batch"?,
        /// "keep_ways_back"? (true: replies from NServiceBus endpoints find their way back)}.
        #[arg(long, value_name = "FILE")]
        config: std::path::PathBuf,
    },
    /// The receiving process of `bench --latency` (started by it, not by people).
    #[cfg(feature = "bench")]
    #[command(hide = true, name = "bench-receiver")]
    BenchReceiver(bench::latency::ReceiverArgs),
}

/// What `nimbus bench` takes in a build without the benchmark: anything, to say so.
#[cfg(not(feature = "bench"))]
#[derive(Debug, Clone, clap::Args)]
struct NoBench {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    args: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum SagaCommand {
    /// Running instances, oldest first: type, correlation value, version, age, state.
    List {
        /// Only instances of this saga (its NAME).
        #[arg(long = "type")]
        saga_type: Option<String>,
        /// How many at most.
        #[arg(short = 'n', long, default_value_t = 100)]
        limit: i64,
    },
    /// One instance's state, as JSON (running or completed).
    Show {
        /// The saga (its NAME).
        saga_type: String,
        /// The instance's correlation value.
        correlation: String,
    },
    /// Ends a running instance as its own mark_complete() would: it stays, completed, so that
    /// messages of it that come later are ignored, until completed_sagas_kept has passed.
    Complete {
        /// The saga (its NAME).
        saga_type: String,
        /// The instance's correlation value.
        correlation: String,
    },
    /// Deletes an instance, running or completed: a message that may start it starts it anew.
    Delete {
        /// The saga (its NAME).
        saga_type: String,
        /// The instance's correlation value.
        correlation: String,
    },
}

/// A database's SQL, for `schema print --dialect`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// SQL Server (and Azure SQL).
    Sqlserver,
}

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Prints every statement auto-create would run (no connection needed).
    Print {
        /// Queue tables to include (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
        /// Queue tables to include with the columns and indexes of ordered groups.
        #[arg(long = "grouped-queue")]
        grouped: Vec<String>,
        /// Queue tables to include with the Priority column and its index.
        #[arg(long = "priority-queue")]
        prioritized: Vec<String>,
        /// The database's SQL to print, instead of the one `--database` names.
        #[arg(long, value_enum)]
        dialect: Option<Dialect>,
    },
    /// Creates what is missing (idempotent).
    Apply {
        /// Queue tables to create (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
        /// Queue tables to create, or complete, with the columns and indexes of ordered groups.
        #[arg(long = "grouped-queue")]
        grouped: Vec<String>,
        /// Queue tables to create, or complete, with the Priority column and its index.
        #[arg(long = "priority-queue")]
        prioritized: Vec<String>,
    },
    /// Checks that everything exists; the error names the statement to run.
    Verify {
        /// Queue tables to check (table-per-queue layout).
        #[arg(long = "queue")]
        queues: Vec<String>,
        /// Queue tables to check, with the columns and indexes of ordered groups.
        #[arg(long = "grouped-queue")]
        grouped: Vec<String>,
        /// Queue tables to check, with the Priority column and its index.
        #[arg(long = "priority-queue")]
        prioritized: Vec<String>,
    },
}

/// A script of statements for one queue table (`nimbus::admin::ordered_groups_script` and its
/// twin for priorities): database, schema, layout, queue.
type Script = fn(&str, Option<&str>, nimbus::StorageLayout, &str) -> nimbus::Result<String>;

/// `NAME=VALUE`.
fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

/// Which dead letters a command works on.
#[derive(Debug, Clone, Args)]
struct Filter {
    /// Only those that failed in this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only those of this message type (NServiceBus.EnclosedMessageTypes).
    #[arg(long = "type")]
    message_type: Option<String>,
    /// Only those that failed at least this long ago, e.g. "2h".
    #[arg(long, value_parser = humantime::parse_duration)]
    older_than: Option<Duration>,
    /// Only those that failed at most this long ago, e.g. "30m".
    #[arg(long, value_parser = humantime::parse_duration)]
    newer_than: Option<Duration>,
}

impl Filter {
    /// The filters the database applies: the queue and the failure time window.
    fn query(&self) -> DeadLetterQuery {
        let now = chrono::Utc::now().naive_utc();
        let ago = |d: &Duration| {
            chrono::Duration::from_std(*d)
                .ok()
                .and_then(|d| now.checked_sub_signed(d))
                .unwrap_or(chrono::NaiveDateTime::MIN)
        };
        DeadLetterQuery {
            queue: self.queue.clone(),
            failed_at_or_before: self.older_than.as_ref().map(ago),
            failed_at_or_after: self.newer_than.as_ref().map(ago),
        }
    }

    /// The filter the database cannot apply: the message type, read from the envelope.
    fn matches_type(&self, letter: &DeadLetterInfo) -> bool {
        self.message_type
            .as_ref()
            .is_none_or(|t| letter.message_type().as_deref() == Some(t.as_str()))
    }
}

/// How much of a body `nimbus peek` prints without `--full`.
const PEEK_BODY_CHARS: usize = 2_000;

/// `text` cut to its first `max` characters, saying how many more there are.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}… ({} more characters; --full prints them)",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}

/// Dead letters read per statement while listing, showing or collecting them.
const DEAD_LETTER_PAGE: i64 = 500;

/// Up to `limit` dead letters `filter` matches, oldest first, read page by page.
async fn dead_letters_matching(
    db: &Database,
    filter: &Filter,
    limit: usize,
) -> Result<Vec<DeadLetterInfo>, Failure> {
    let query = filter.query();
    let mut found = Vec::new();
    let mut after: Option<DeadLetterInfo> = None;
    while found.len() < limit {
        let page = db
            .dead_letters_matching(&query, after.as_ref(), DEAD_LETTER_PAGE)
            .await?;
        let last = page.last().cloned();
        let full = page.len() as i64 == DEAD_LETTER_PAGE;
        found.extend(page.into_iter().filter(|d| filter.matches_type(d)));
        match last {
            Some(last) if full => after = Some(last),
            _ => break,
        }
    }
    found.truncate(limit);
    Ok(found)
}

#[derive(Debug, Subcommand)]
enum DeadLetterCommand {
    /// The oldest dead letters.
    List {
        /// How many at most.
        #[arg(short = 'n', long, default_value_t = 50)]
        limit: i64,
        #[command(flatten)]
        filter: Filter,
    },
    /// Moves every matching dead letter back to its queue, one transaction each: safe to
    /// interrupt and run again (what was replayed is no longer a dead letter).
    ReplayAll {
        #[command(flatten)]
        filter: Filter,
    },
    /// Deletes every matching dead letter for good.
    Purge {
        #[command(flatten)]
        filter: Filter,
        /// Confirms the deletion; without it, purge only says how many it would delete.
        #[arg(long)]
        yes: bool,
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
    /// Deletes one subscription, so publishes of that event stop reaching the queue. An
    /// endpoint that still runs with a handler for the event writes it again at its next
    /// heartbeat: stop it, or remove the handler, first.
    Remove {
        /// The event type (the subscription's topic, as `list` shows it).
        #[arg(long)]
        topic: String,
        /// The subscribed queue.
        #[arg(long)]
        queue: String,
    },
}

/// A command's failure, printed as `error: …`.
type Failure = Box<dyn std::error::Error>;

#[actix_rt::main]
async fn main() -> ExitCode {
    // A reader that goes away (`nimbus peek Sales | head`) ends the process quietly, as it ends
    // other command-line tools, instead of a panic at the next line printed.
    #[cfg(unix)]
    // SAFETY: `signal` only sets the process's disposition of SIGPIPE back to the default;
    // nothing in this program relies on it being ignored (writes to a closed pipe end it).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(nimbus::NimbusError::MissingSchema { .. }) = e.downcast_ref() {
                eprintln!(
                    "from this tool: `nimbus schema apply --queue NAME` (one --queue per queue) \
                     creates what is missing"
                );
            }
            ExitCode::FAILURE
        }
    }
}

/// Fails with what to check when the schema holds none of the tables of `--layout`: a schema
/// that does not exist, a wrong `--schema` or `--layout` would otherwise list nothing and
/// succeed.
async fn holds_nimbus_tables(cli: &Cli, db: &nimbus::admin::Database) -> Result<(), Failure> {
    let table = match cli.layout {
        Layout::Table | Layout::Nservicebus => "NimbusDeadLetters",
        Layout::Shared => "NimbusMessages",
    };
    if db.table_exists(table).await? {
        return Ok(());
    }
    Err(format!(
        "{} has no table {table}: it holds no Nimbus queues in the {} layout. Fix: check \
         --schema{} and --layout, or create the tables with `nimbus schema apply`",
        cli.schema.as_deref().map_or_else(
            || "the default schema".to_string(),
            |s| format!("schema {s:?}")
        ),
        cli.layout.name(),
        cli.schema
            .as_deref()
            .map_or("", |_| " (does the schema exist?)"),
    )
    .into())
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
    connect_in(cli, cli.schema.clone()).await
}

async fn connect_in(cli: &Cli, schema: Option<String>) -> Result<Database, Failure> {
    let mut options = ConnectOptions::new().layout(cli.layout.into());
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    Ok(Database::connect_with(database_url(cli)?, options).await?)
}

/// Connects to the schema a queue's address names (`Billing@[sales]`, `"sales"."Billing"`:
/// the forms endpoints take), or to `--schema` for a plain name; returns the queue's name.
async fn connect_for(cli: &Cli, address: &str) -> Result<(Database, String), Failure> {
    if let Some(catalog) = nimbus::QueueName::parse(address)?.catalog() {
        return Err(format!(
            "the address {address:?} names database {:?}: this tool works in the database of \
             --database. Fix: point --database (or DATABASE_URL) at that database and name the \
             queue as Name@[schema]",
            catalog.as_str()
        )
        .into());
    }
    let mut options = ConnectOptions::new().layout(cli.layout.into());
    if let Some(schema) = &cli.schema {
        options = options.schema(schema.clone());
    }
    Ok(Database::connect_for(database_url(cli)?, options, address).await?)
}

/// Prints a table for people: a header, then `rows`, columns as wide as their widest cell
/// (wide characters counted as they show), the columns in `right` aligned right, no borders
/// (scripts use `--json`).
/// `nimbus monitoring`: a row per endpoint, then per queue, with the window's totals.
fn print_monitoring(cli: &Cli, view: &nimbus::monitoring::MonitoringView) {
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    let totals = |kind: &str, s: &nimbus::monitoring::Series| {
        let t = &s.totals;
        json!({"kind": kind, "name": s.name, "instances": s.instances, "related": s.related,
               "handled": t.handled, "failed": t.failed, "retried": t.retried,
               "dead_lettered": t.dead_lettered, "handled_per_second": t.handled_per_second,
               "failed_per_second": t.failed_per_second,
               "retried_per_second": t.retried_per_second,
               "processing_p50_ms": ms(t.processing_p50), "processing_p95_ms": ms(t.processing_p95),
               "critical_p50_ms": ms(t.critical_p50), "critical_p95_ms": ms(t.critical_p95),
               "queue_length": t.queue_length})
    };
    let series = view
        .endpoints
        .iter()
        .map(|s| ("endpoint", s))
        .chain(view.queues.iter().map(|s| ("queue", s)));
    if cli.json {
        let rows: Vec<_> = series.map(|(kind, s)| totals(kind, s)).collect();
        println!(
            "{}",
            json!({"window_seconds": view.window.as_secs(), "monitoring": rows})
        );
        return;
    }
    if view.queues.is_empty() {
        println!(
            "no reports in the last {}: no receiving bus ran, or they run with monitoring off",
            humantime::format_duration(view.window)
        );
        return;
    }
    let time = |d: Option<Duration>| {
        ms(d)
            .map(|v| format!("{v:.1} ms"))
            .unwrap_or_else(|| "-".into())
    };
    let rows = series.map(|(kind, s)| {
        let t = &s.totals;
        vec![
            kind.to_string(),
            s.name.clone(),
            s.instances.len().to_string(),
            t.handled.to_string(),
            format!("{:.2}", t.handled_per_second),
            format!("{:.2}", t.failed_per_second),
            format!("{:.2}", t.retried_per_second),
            time(t.processing_p95),
            time(t.critical_p95),
            t.queue_length
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into()),
        ]
    });
    print_table(
        &[
            "",
            "name",
            "instances",
            "handled",
            "handled/s",
            "failed/s",
            "retried/s",
            "processing p95",
            "critical p95",
            "length",
        ],
        &[2, 3, 4, 5, 6, 7, 8, 9],
        rows,
    );
}

fn print_table(header: &[&str], right: &[usize], rows: impl Iterator<Item = Vec<String>>) {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    for row in rows {
        table.add_row(row);
    }
    for &index in right {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    println!("{table}");
}

/// The first line of `text`, at most `max` characters (an ellipsis marks a cut).
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max {
        line.to_string()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Bytes that hold JSON as that JSON (an object, not a string that contains one), anything
/// else as text.
fn json_or_text(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| serde_json::Value::String(text(bytes)))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn run(cli: Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Schema(SchemaCommand::Print {
            queues,
            grouped,
            prioritized,
            dialect,
        }) => {
            let queues: Vec<&str> = queues
                .iter()
                .chain(grouped)
                .chain(prioritized)
                .map(String::as_str)
                .collect();
            let dialect = match dialect {
                Some(Dialect::Sqlite) => "sqlite",
                Some(Dialect::Postgres) => "postgres",
                Some(Dialect::Sqlserver) => "sqlserver",
                None => dialect_of(database_url(&cli).map_err(|_| {
                    "no database given. Fix: pass --dialect sqlite|postgres|sqlserver, or \
                     --database URL (or set DATABASE_URL)"
                })?),
            };
            let mut script = nimbus::admin::creation_script(
                dialect,
                cli.schema.as_deref(),
                cli.layout.into(),
                &queues,
            )?;
            let extras = grouped
                .iter()
                .map(|q| {
                    (
                        "--grouped-queue",
                        q,
                        nimbus::admin::ordered_groups_script as Script,
                    )
                })
                .chain(prioritized.iter().map(|q| {
                    (
                        "--priority-queue",
                        q,
                        nimbus::admin::priorities_script as Script,
                    )
                }));
            for (flag, queue, make) in extras {
                let extra = make(dialect, cli.schema.as_deref(), cli.layout.into(), queue)
                    .map_err(|e| format!("{flag} {queue}: {e}"))?;
                if script.contains(&extra) {
                    // The shared table's columns, printed once for every queue.
                    continue;
                }
                script.push_str(if dialect == "sqlserver" {
                    "GO\n\n"
                } else {
                    "\n"
                });
                script.push_str(&extra);
            }
            print!("{script}");
        }
        Command::Schema(SchemaCommand::Apply {
            queues,
            grouped,
            prioritized,
        }) => {
            let queues: Vec<&str> = queues
                .iter()
                .chain(grouped)
                .chain(prioritized)
                .map(String::as_str)
                .collect();
            let db = connect(&cli).await?;
            db.create_schema(&queues).await?;
            for queue in grouped {
                db.create_ordered_groups(queue).await?;
            }
            for queue in prioritized {
                db.create_priorities(queue).await?;
            }
            report(&cli, json!({"applied": true}), "schema applied");
        }
        Command::Schema(SchemaCommand::Verify {
            queues,
            grouped,
            prioritized,
        }) => {
            let queues: Vec<&str> = queues
                .iter()
                .chain(grouped)
                .chain(prioritized)
                .map(String::as_str)
                .collect();
            let db = connect(&cli).await?;
            db.verify_schema(&queues).await?;
            for queue in grouped {
                db.verify_ordered_groups(queue).await?;
            }
            for queue in prioritized {
                db.verify_priorities(queue).await?;
            }
            let mut missing = Vec::new();
            for queue in &queues {
                for (name, statement) in db.missing_indexes(queue).await? {
                    missing.push(json!({"queue": queue, "index": name, "statement": statement}));
                }
            }
            if missing.is_empty() {
                report(
                    &cli,
                    json!({"verified": true, "missing_indexes": missing}),
                    "schema verified",
                );
            } else {
                // A deploy gate must fail: receives without these indexes scan their tables.
                let count = missing.len();
                let statements: Vec<String> = missing
                    .iter()
                    .filter_map(|m| m["statement"].as_str().map(str::to_string))
                    .collect();
                if cli.json {
                    println!("{}", json!({"verified": false, "missing_indexes": missing}));
                }
                return Err(format!(
                    "{count} index(es) missing: receives and expiry scan the whole table \
                     without them. Fix: `nimbus schema apply` with the same --queue options, or \
                     run:\n{}",
                    statements.join("\n")
                )
                .into());
            }
        }
        Command::Send {
            queue,
            message_type,
            body,
            headers,
        } => {
            let (db, name) = connect_for(&cli, queue).await?;
            let id = db
                .send_json(&name, message_type, body, "nimbus-cli", headers)
                .await?;
            if cli.json {
                println!(
                    "{}",
                    json!({"queue": queue, "id": id, "type": message_type})
                );
            } else {
                println!("sent {message_type} {id} to {queue:?}");
            }
        }
        Command::Peek {
            queue,
            limit,
            full,
            key_file,
        } => {
            let keys = key_file.as_deref().map(read_key_file).transpose()?;
            let shown_body = |headers: &str, body: &[u8]| match &keys {
                Some(keys) => nimbus::admin::shown_body_decrypted(headers, body, keys),
                None => shown_body(headers, body),
            };
            let (db, name) = connect_for(&cli, queue).await?;
            let messages = db.peek(&name, *limit).await?;
            if cli.json {
                let rows: Vec<_> = messages
                    .iter()
                    .map(|m| {
                        let (body, encrypted) = match shown_body(&m.headers, &m.body) {
                            ShownBody::Readable(bytes) => (json_or_text(&bytes), None),
                            ShownBody::Encrypted { key_id, bytes } => (
                                serde_json::Value::Null,
                                Some(json!({"key_id": key_id, "bytes": bytes})),
                            ),
                            ShownBody::Unreadable(why) => (json!({"unreadable": why}), None),
                            ShownBody::StoredApart { id, bytes } => {
                                (json!({"stored_apart": {"id": id, "bytes": bytes}}), None)
                            }
                        };
                        json!({"id": m.id, "headers": json_or_text(m.headers.as_bytes()),
                               "body": body, "encrypted": encrypted,
                               "expires": m.expires.map(|t| t.to_string()),
                               "unreadable": m.unreadable})
                    })
                    .collect();
                println!("{}", json!({"queue": queue, "messages": rows}));
            } else {
                println!("{} message(s) at the head of {queue:?}", messages.len());
                for m in &messages {
                    let body = match shown_body(&m.headers, &m.body) {
                        ShownBody::Readable(bytes) => text(&bytes),
                        ShownBody::Encrypted { key_id, bytes } => {
                            format!("(encrypted with key {key_id:?}, {bytes} bytes: not shown)")
                        }
                        ShownBody::Unreadable(why) => format!("(unreadable: {why})"),
                        ShownBody::StoredApart { id, bytes } => format!(
                            "(stored apart in NimbusBodies under {id}, {bytes} bytes: not shown)"
                        ),
                    };
                    println!(
                        "- {}\n  headers: {}\n  body: {}",
                        m.id,
                        m.headers,
                        if *full {
                            body
                        } else {
                            cut(&body, PEEK_BODY_CHARS)
                        }
                    );
                    if let Some(why) = &m.unreadable {
                        println!("  unreadable: {why}");
                    }
                }
            }
        }
        Command::Queues => {
            let db = connect(&cli).await?;
            let queues = db.queues().await?;
            if queues.is_empty() {
                holds_nimbus_tables(&cli, &db).await?;
            }
            let now = chrono::Utc::now();
            if cli.json {
                let rows: Vec<_> = queues
                    .iter()
                    .map(|q| {
                        json!({"queue": q.name, "depth": q.depth, "depth_is": "exact",
                               "paused": q.paused,
                               "oldest_sent_at": q.oldest_sent_at.map(|t| t.to_rfc3339()),
                               "oldest_age_seconds": q.oldest_sent_at.map(|t| (now - t).num_seconds())})
                    })
                    .collect();
                println!("{}", json!({"queues": rows}));
            } else {
                let rows = queues.iter().map(|q| {
                    let age = q
                        .oldest_sent_at
                        .and_then(|t| (now - t).to_std().ok())
                        .map(|d| {
                            humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
                        })
                        .unwrap_or_else(|| "-".into());
                    let state = if q.paused { "paused" } else { "" };
                    vec![q.name.clone(), q.depth.to_string(), age, state.to_string()]
                });
                print_table(
                    &[
                        "queue",
                        "depth",
                        "oldest message (age, sender's clock)",
                        "state",
                    ],
                    &[1],
                    rows,
                );
            }
        }
        Command::Monitoring { window } => {
            let db = connect(&cli).await?;
            let Some(view) = db.monitoring(*window).await? else {
                return Err(
                    "this database has no NimbusMonitoring table, where running buses write what \
                     they handle: no bus of this version has started on it with auto-create. \
                     Fix: start one, or create the tables with `nimbus schema apply`"
                        .into(),
                );
            };
            print_monitoring(&cli, &view);
        }
        Command::Instances { all } => {
            let db = connect(&cli).await?;
            let Some(instances) = db.instances().await? else {
                return Err(
                    "this database has no NimbusInstances table, where running buses register: \
                     no bus of this version has started on it with auto-create. Fix: start one, \
                     or create the tables with `nimbus schema apply`"
                        .into(),
                );
            };
            let shown: Vec<_> = instances
                .iter()
                .filter(|i| *all || i.state != nimbus::admin::InstanceState::Stopped)
                .collect();
            if cli.json {
                let rows: Vec<_> = shown
                    .iter()
                    .map(|i| {
                        json!({"application": i.application, "instance": i.instance,
                               "state": i.state.as_str(), "host": i.host,
                               "process_id": i.process_id, "version": i.version,
                               "queues": i.queues, "handlers": i.handlers,
                               "shares_name": i.shares_name,
                               "heartbeat_seconds": i.heartbeat.as_secs(),
                               "started_at": i.started_at.map(|t| t.and_utc().to_rfc3339()),
                               "last_seen_at": i.last_seen_at.map(|t| t.and_utc().to_rfc3339()),
                               "stopped_at": i.stopped_at.map(|t| t.and_utc().to_rfc3339()),
                               "seconds_since_seen": i.seconds_since_seen})
                    })
                    .collect();
                println!("{}", json!({"instances": rows}));
            } else {
                let rows = shown.iter().map(|i| {
                    let ago = humantime::format_duration(Duration::from_secs(
                        i.seconds_since_seen.max(0).unsigned_abs(),
                    ));
                    vec![
                        i.application.clone(),
                        i.instance.clone(),
                        i.state.as_str().to_string(),
                        format!("{ago} ago"),
                        i.host.clone(),
                        i.process_id.to_string(),
                        i.version.clone(),
                        i.queues.join(", "),
                    ]
                });
                print_table(
                    &[
                        "application",
                        "instance",
                        "state",
                        "last heartbeat",
                        "host",
                        "pid",
                        "version",
                        "queues",
                    ],
                    &[5],
                    rows,
                );
                let stopped = instances.len() - shown.len();
                if stopped > 0 {
                    println!("({stopped} stopped instances not shown: --all shows them)");
                }
            }
        }
        Command::Pause { queue, by } => {
            let (db, name) = connect_for(&cli, queue).await?;
            let by = by.clone().unwrap_or_else(operator);
            let newly = db.pause_queue(&name, &by).await?;
            report(
                &cli,
                json!({"paused": queue, "already_paused": !newly}),
                &if newly {
                    format!(
                        "paused {queue:?}: its endpoints stop taking messages within one peek delay (sends still go in); `nimbus resume {queue}` undoes it"
                    )
                } else {
                    format!("{queue:?} was paused already")
                },
            );
        }
        Command::Resume { queue } => {
            let (db, name) = connect_for(&cli, queue).await?;
            let resumed = db.resume_queue(&name).await?;
            report(
                &cli,
                json!({"resumed": queue, "was_paused": resumed}),
                &if resumed {
                    format!("resumed {queue:?}: its endpoints receive again within one peek delay")
                } else {
                    format!("{queue:?} was not paused")
                },
            );
        }
        Command::Delayed(command) => delayed::run(&cli, command).await?,
        Command::Schedules(command) => schedules::run(&cli, command).await?,
        Command::Deduplication(command) => deduplication::run(&cli, command).await?,
        Command::Groups { queue, limit } => groups::run(&cli, queue, *limit).await?,
        Command::Priorities { queue } => groups::run_priorities(&cli, queue).await?,
        Command::Limits => limits::run(&cli).await?,
        Command::Bodies => bodies::run(&cli).await?,
        Command::DeadLetters(DeadLetterCommand::ReplayAll { filter }) => {
            let db = connect(&cli).await?;
            let ids = matching(&db, filter).await?;
            let done = bulk(&cli, &ids, "replaying", |id| {
                let db = db.clone();
                async move { db.replay_dead_letter(id).await }
            })
            .await?;
            report(
                &cli,
                json!({"replayed": done}),
                &format!("replayed {done} dead letter(s)"),
            );
        }
        Command::DeadLetters(DeadLetterCommand::Purge { filter, yes }) => {
            let db = connect(&cli).await?;
            let ids = matching(&db, filter).await?;
            if !yes {
                return Err(format!(
                    "{} dead letter(s) match; nothing was deleted. Fix: add --yes to delete them",
                    ids.len()
                )
                .into());
            }
            let done = bulk(&cli, &ids, "purging", |id| {
                let db = db.clone();
                async move { db.purge_dead_letter(id).await }
            })
            .await?;
            report(
                &cli,
                json!({"purged": done}),
                &format!("purged {done} dead letter(s)"),
            );
        }
        Command::DeadLetters(DeadLetterCommand::List { limit, filter }) => {
            let db = connect(&cli).await?;
            let limit = usize::try_from(*limit).unwrap_or(0);
            let letters = dead_letters_matching(&db, filter, limit).await?;
            if cli.json {
                let rows: Vec<_> = letters
                    .iter()
                    .map(|d| {
                        json!({"id": d.message_id, "queue": d.original_destination,
                               "type": d.message_type(), "reason": d.reason(),
                               "attempts": d.delivery_attempts,
                               "failed_at": d.failed_at.map(|t| t.to_string())})
                    })
                    .collect();
                println!("{}", json!({"dead_letters": rows}));
            } else {
                let rows = letters.iter().map(|d| {
                    vec![
                        d.message_id.clone(),
                        d.original_destination.clone().unwrap_or_else(|| "-".into()),
                        d.message_type().unwrap_or_else(|| "-".into()),
                        d.delivery_attempts.to_string(),
                        d.failed_at.map(|t| t.to_string()).unwrap_or_default(),
                        // Without "message <id> (<type>): ", which the id and type columns show:
                        // the cause fits in the column.
                        first_line(&d.reason_without_message().unwrap_or_default(), 100),
                    ]
                });
                print_table(
                    &["id", "queue", "type", "attempts", "failed at", "reason"],
                    &[3],
                    rows,
                );
            }
        }
        Command::DeadLetters(DeadLetterCommand::Show { id }) => {
            let db = connect(&cli).await?;
            let letter = db
                .dead_letter(*id)
                .await?
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
                let rows = subscriptions.iter().map(|s| {
                    vec![
                        s.topic.clone(),
                        s.queue.clone(),
                        s.last_seen_at.map(|t| t.to_string()).unwrap_or_default(),
                    ]
                });
                print_table(&["topic", "queue", "last seen"], &[], rows);
            }
        }
        #[cfg(not(feature = "bench"))]
        Command::Bench(_) => {
            return Err(
                "this nimbus was built without the benchmark. Fix: cargo install \
                        nimbus-bus-cli --features bench (it brings what the benchmark needs: \
                        a PostgreSQL client for pg_stat_statements and its workloads)"
                    .into(),
            );
        }
        #[cfg(feature = "bench")]
        Command::Bench(settings) => {
            // The endpoints it runs say on stderr what goes wrong (a refused statement, a stall).
            logging::to_stderr("warn");
            let db = connect(&cli).await?;
            bench::run(bench_target(&cli)?, db, settings.clone(), cli.json).await?;
        }
        Command::Sagas(SagaCommand::List { saga_type, limit }) => {
            let db = connect(&cli).await?;
            let sagas = db.sagas(saga_type.as_deref(), *limit).await?;
            let now = chrono::Utc::now().naive_utc();
            let age = |t: Option<chrono::NaiveDateTime>| {
                t.and_then(|t| (now - t).to_std().ok())
                    .map(|d| {
                        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
                    })
                    .unwrap_or_else(|| "-".into())
            };
            if cli.json {
                let rows: Vec<_> = sagas
                    .iter()
                    .map(|s| {
                        let state: serde_json::Value =
                            serde_json::from_str(&s.state).unwrap_or_else(|_| json!(s.state));
                        json!({"type": s.saga_type, "correlation": s.correlation,
                               "version": s.version, "id": s.id, "state": state,
                               "started_at": s.started_at.map(|t| t.to_string()),
                               "updated_at": s.updated_at.map(|t| t.to_string())})
                    })
                    .collect();
                println!("{}", json!({"sagas": rows}));
            } else {
                let rows = sagas.iter().map(|s| {
                    vec![
                        s.saga_type.clone(),
                        s.correlation.clone(),
                        s.version.to_string(),
                        age(s.started_at),
                        age(s.updated_at),
                        s.state.chars().take(60).collect(),
                    ]
                });
                print_table(
                    &[
                        "saga",
                        "correlation",
                        "version",
                        "age",
                        "last change",
                        "state",
                    ],
                    &[2],
                    rows,
                );
            }
        }
        Command::Sagas(SagaCommand::Show {
            saga_type,
            correlation,
        }) => {
            let db = connect(&cli).await?;
            let saga = db.saga(saga_type, correlation).await?.ok_or_else(|| {
                format!(
                    "no instance of saga {saga_type:?} for {correlation:?} (it never started, \
                     or it completed). Fix: copy both from `nimbus sagas list`"
                )
            })?;
            let state: serde_json::Value =
                serde_json::from_str(&saga.state).unwrap_or_else(|_| json!(saga.state));
            println!(
                "{:#}",
                json!({"type": saga_type, "correlation": correlation, "id": saga.id,
                       "version": saga.version, "completed": saga.completed, "state": state})
            );
        }
        Command::Sagas(SagaCommand::Complete {
            saga_type,
            correlation,
        }) => {
            let db = connect(&cli).await?;
            if !db.complete_saga(saga_type, correlation).await? {
                return Err(format!(
                    "no running instance of saga {saga_type:?} for {correlation:?} (it never \
                     started, or it completed already). Fix: copy both from `nimbus sagas list`"
                )
                .into());
            }
            println!("completed saga {saga_type:?} {correlation:?}: messages of it that come later are ignored");
        }
        Command::Sagas(SagaCommand::Delete {
            saga_type,
            correlation,
        }) => {
            let db = connect(&cli).await?;
            if !db.delete_saga(saga_type, correlation).await? {
                return Err(format!(
                    "no instance of saga {saga_type:?} for {correlation:?}. Fix: copy both \
                     from `nimbus sagas list`"
                )
                .into());
            }
            println!("deleted saga {saga_type:?} {correlation:?}");
        }
        Command::Console(settings) => {
            let db = connect(&cli).await?;
            console::run(db, settings.clone()).await?;
        }
        Command::Bridge { config } => {
            logging::to_stderr("info");
            let text = std::fs::read_to_string(config).map_err(|e| {
                format!(
                    "cannot read the bridge's configuration {}: {e}",
                    config.display()
                )
            })?;
            let settings: nimbus::bridge::BridgeConfig =
                serde_json::from_str(&text).map_err(|e| {
                    format!(
                        "the bridge's configuration {} is not valid: {e}",
                        config.display()
                    )
                })?;
            let bridge = nimbus::bridge::Bridge::start(settings).await?;
            nimbus::stop_signal().await?;
            let counts = (bridge.counts().crossed(), bridge.counts().duplicates());
            bridge.stop().await;
            println!(
                "bridge stopped: {} message(s) crossed, {} duplicate(s) dropped",
                counts.0, counts.1
            );
        }
        #[cfg(feature = "bench")]
        Command::BenchReceiver(args) => {
            logging::to_stderr("warn");
            bench::latency::receive(bench_target(&cli)?, args.clone()).await?;
        }
        Command::Subscriptions(SubscriptionCommand::Remove { topic, queue }) => {
            let db = connect(&cli).await?;
            if !db.unsubscribe(topic, queue).await? {
                return Err(format!(
                    "no subscription of queue {queue:?} to {topic:?}. Fix: copy the topic and \
                     queue from `nimbus subscriptions list`"
                )
                .into());
            }
            report(
                &cli,
                json!({"removed": {"topic": topic, "queue": queue}}),
                &format!(
                    "removed the subscription of {queue:?} to {topic:?} (a running subscriber \
                     writes it again at its next heartbeat)"
                ),
            );
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

/// The database `bench` runs on, from the global options.
#[cfg(feature = "bench")]
fn bench_target(cli: &Cli) -> Result<bench::Target, Failure> {
    let url = database_url(cli)?;
    if matches!(cli.layout, Layout::Nservicebus) {
        return Err(
            "the benchmark does not support --layout nservicebus yet (its bare side \
             writes seed 000's rows). Fix: run it with --layout table or --layout shared"
                .into(),
        );
    }
    Ok(bench::Target {
        url: url.to_string(),
        schema: cli.schema.clone(),
        layout: cli.layout,
        backend: dialect_of(url),
    })
}

/// The ids of every dead letter `filter` matches, read page by page.
async fn matching(db: &Database, filter: &Filter) -> Result<Vec<uuid::Uuid>, Failure> {
    Ok(dead_letters_matching(db, filter, usize::MAX)
        .await?
        .iter()
        .filter_map(|d| uuid::Uuid::parse_str(&d.message_id).ok())
        .collect())
}

/// Runs `one` for every id, one transaction each, with a progress bar (hidden with `--json`);
/// returns how many it did. Stops at the first error: running the command again resumes.
async fn bulk<F, Fut>(cli: &Cli, ids: &[uuid::Uuid], what: &str, one: F) -> Result<u64, Failure>
where
    F: Fn(uuid::Uuid) -> Fut,
    Fut: std::future::Future<Output = nimbus::Result<bool>>,
{
    let bar = if cli.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(ids.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .map_err(|e| e.to_string())?,
    );
    bar.set_message(what.to_string());
    let mut done = 0;
    for id in ids {
        if one(*id).await? {
            done += 1;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(done)
}

/// Who runs `nimbus pause`, for the record a pause keeps: `$USER@host` where known.
fn operator() -> String {
    operator_running("nimbus pause")
}

/// Who runs `command`, for the record a pause keeps: `$USER@host (command)` where known.
pub(crate) fn operator_running(command: &str) -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "someone".into());
    match std::env::var("HOSTNAME") {
        Ok(host) if !host.is_empty() => format!("{user}@{host} ({command})"),
        _ => format!("{user} ({command})"),
    }
}

/// Prints a command's result: `value` with `--json`, `summary` otherwise.
fn report(cli: &Cli, value: serde_json::Value, summary: &str) {
    if cli.json {
        println!("{value}");
    } else {
        println!("{summary}");
    }
}

/// The keys of `nimbus peek --key-file`: one per line, `<key id> <key in base64>`; blank lines
/// and lines starting with `#` are skipped. Errors name the line, never its key.
fn read_key_file(path: &std::path::Path) -> Result<nimbus::BodyEncryption, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    let mut keys: Option<nimbus::BodyEncryption> = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, key) = line.split_once(char::is_whitespace).ok_or_else(|| {
            format!(
                "line {} of the key file {} is not `<key id> <key in base64>`",
                number + 1,
                path.display()
            )
        })?;
        let key = nimbus::BodyEncryption::from_base64(id, key.trim()).map_err(|e| {
            format!(
                "line {} of the key file {}: {e}",
                number + 1,
                path.display()
            )
        })?;
        keys = Some(match keys {
            None => key,
            Some(keys) => keys.with_old_keys_of(key),
        });
    }
    keys.ok_or_else(|| format!("the key file {} holds no key", path.display()).into())
}
