//! Where a side's database time goes, statement by statement (`nimbus bench --statements`):
//! PostgreSQL's `pg_stat_statements`, reset before each side of each workload and read after it.
//!
//! The extension must be preloaded (`shared_preload_libraries`), which takes a server restart:
//! `scripts/pg-stat-statements-cluster.sh` starts a throwaway cluster that has it. The reset is
//! server-wide, so the figures are everything the server ran meanwhile: use a server of its own.
//!
//! Execution time is what the server measured around each statement's execution — wall clock,
//! so time spent waiting for a lock or for a CPU counts too, and for an autocommitted statement
//! it leaves out the commit (an explicit `COMMIT` has its own line, WAL flush included).
//! Planning is not counted (`pg_stat_statements.track_planning` is off by default).

use std::collections::HashMap;

use tokio_postgres::{Client, NoTls};

use super::Target;
use crate::Failure;

/// How many statements the report lists per workload and side (the totals cover them all).
pub const TOP: usize = 8;

/// One statement's counters over one or more runs of a side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statement {
    /// Its `queryid`: the same statement keeps it from one reset to the next, where its text
    /// may not (after a reset, a prepared statement run again without being parsed again is
    /// recorded with its constants as they are, not as `$1`).
    pub id: i64,
    /// Its normalized text (`$1` for constants), whitespace collapsed.
    pub query: String,
    /// How many times it ran.
    pub calls: u64,
    /// Its total execution time, in milliseconds.
    pub exec_ms: f64,
    /// The rows it returned or changed, over all its calls.
    pub rows: u64,
}

/// What one side of one workload ran, summed over its rounds: every statement, and the
/// messages it moved (the denominator of every "per message").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdown {
    /// Every statement, by its `queryid`.
    statements: HashMap<i64, Statement>,
    /// Messages sent or handled by the side over the rounds added.
    pub messages: usize,
}

impl Breakdown {
    /// Adds one round: the statements it ran and the messages it moved.
    pub fn add(&mut self, statements: &[Statement], messages: usize) {
        self.messages += messages;
        for s in statements {
            let sum = self.statements.entry(s.id).or_insert_with(|| Statement {
                id: s.id,
                query: s.query.clone(),
                ..Statement::default()
            });
            // The normalized text, when a round has it.
            if parameters(&s.query) > parameters(&sum.query) {
                sum.query = s.query.clone();
            }
            sum.calls += s.calls;
            sum.exec_ms += s.exec_ms;
            sum.rows += s.rows;
        }
    }

    /// Every statement's execution time per message, in microseconds.
    pub fn exec_us_per_msg(&self) -> f64 {
        let total: f64 = self.statements.values().map(|s| s.exec_ms).sum();
        total * 1000.0 / self.messages.max(1) as f64
    }

    /// Every statement's calls per message.
    pub fn calls_per_msg(&self) -> f64 {
        let total: u64 = self.statements.values().map(|s| s.calls).sum();
        total as f64 / self.messages.max(1) as f64
    }

    /// The `n` statements with the most execution time, most first.
    pub fn top(&self, n: usize) -> Vec<PerMessage> {
        let mut all: Vec<&Statement> = self.statements.values().collect();
        all.sort_by(|a, b| b.exec_ms.total_cmp(&a.exec_ms).then(a.query.cmp(&b.query)));
        all.into_iter()
            .take(n)
            .map(|s| PerMessage::of(s, self.messages))
            .collect()
    }
}

/// How many `$` placeholders `query` has.
fn parameters(query: &str) -> usize {
    query.matches('$').count()
}

/// One statement's figures per message and per call.
#[derive(Debug, Clone, PartialEq)]
pub struct PerMessage {
    /// Its text.
    pub query: String,
    /// Calls per message.
    pub calls_per_msg: f64,
    /// Mean execution time per call, in milliseconds.
    pub mean_ms: f64,
    /// Execution time per message, in microseconds.
    pub exec_us_per_msg: f64,
    /// Rows per call.
    pub rows_per_call: f64,
}

impl PerMessage {
    /// `s` over `messages` messages.
    fn of(s: &Statement, messages: usize) -> PerMessage {
        let (messages, calls) = (messages.max(1) as f64, s.calls.max(1) as f64);
        PerMessage {
            query: s.query.clone(),
            calls_per_msg: s.calls as f64 / messages,
            mean_ms: s.exec_ms / calls,
            exec_us_per_msg: s.exec_ms * 1000.0 / messages,
            rows_per_call: s.rows as f64 / calls,
        }
    }
}

/// A connection of its own to the server, for resetting and reading `pg_stat_statements`.
pub struct StatementStats {
    client: Client,
}

impl std::fmt::Debug for StatementStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementStats").finish_non_exhaustive()
    }
}

/// The hint every failure to use `pg_stat_statements` ends with.
const FIX: &str = "Fix: run it on a PostgreSQL server that preloads pg_stat_statements, such as \
                   the throwaway cluster `scripts/pg-stat-statements-cluster.sh start` makes \
                   (--database postgres://postgres@127.0.0.1:5433/postgres), or leave out \
                   --statements";

/// How long opening the statistics connection may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl StatementStats {
    /// Connects to `target` and makes sure `pg_stat_statements` can be read: the server
    /// preloads it (checked first, so a server without it is left untouched) and the
    /// extension exists in the database (created if missing). Fails with a clear error on any
    /// other database.
    pub async fn connect(target: &Target) -> Result<StatementStats, Failure> {
        if target.backend != "postgres" {
            return Err(format!(
                "--statements reads PostgreSQL's pg_stat_statements, and this database is {}. {FIX}",
                target.backend
            )
            .into());
        }
        let mut config: tokio_postgres::Config = target
            .url
            .parse()
            .map_err(|e| format!("--statements could not read the database URL: {e}"))?;
        // A server that accepts the connection and never answers is an error, not a hang
        // (`connect_timeout` covers the TCP connection only, the deadline the login too).
        config.connect_timeout(CONNECT_TIMEOUT);
        let connected = match tokio::time::timeout(CONNECT_TIMEOUT, config.connect(NoTls)).await {
            Ok(connected) => connected.map_err(|e| e.to_string()),
            Err(_) => Err("no answer".to_string()),
        };
        let (client, connection) = connected.map_err(|e| {
            format!(
                "--statements could not connect to the database without TLS within \
                 {CONNECT_TIMEOUT:?}: {e}. Fix: a local server without sslmode=require in the \
                 URL (the throwaway cluster of scripts/pg-stat-statements-cluster.sh), or leave \
                 out --statements"
            )
        })?;
        actix_rt::spawn(async move {
            // Ends when the client is dropped; a broken connection shows as the next query's
            // error.
            let _ = connection.await;
        });
        let stats = StatementStats { client };
        stats.check().await?;
        Ok(stats)
    }

    /// Checks the server preloads the extension, creates it in the database if missing, and
    /// reads it once.
    async fn check(&self) -> Result<(), Failure> {
        let failed = |what: &str, e: tokio_postgres::Error| -> Failure {
            format!("--statements: {what}: {}. {FIX}", describe(&e)).into()
        };
        let preload: String = self
            .client
            .query_one("SELECT current_setting('shared_preload_libraries')", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| failed("reading shared_preload_libraries", e))?;
        if !preload
            .split(',')
            .any(|lib| lib.trim().trim_matches('"') == "pg_stat_statements")
        {
            return Err(format!(
                "--statements: this server does not preload pg_stat_statements \
                 (shared_preload_libraries = '{preload}'), and changing that takes a restart. \
                 {FIX}"
            )
            .into());
        }
        self.client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await
            .map_err(|e| failed("creating the extension pg_stat_statements", e))?;
        self.reset().await?;
        self.read().await?;
        Ok(())
    }

    /// Forgets every statement the server counted so far.
    pub async fn reset(&self) -> Result<(), Failure> {
        self.client
            .batch_execute("SELECT pg_stat_statements_reset()")
            .await
            .map_err(|e| format!("--statements: pg_stat_statements_reset(): {}", describe(&e)))?;
        Ok(())
    }

    /// Every statement the server ran in this database since the last reset, but for the
    /// benchmark's own reads and resets of `pg_stat_statements`.
    pub async fn read(&self) -> Result<Vec<Statement>, Failure> {
        let rows = self
            .client
            .query(
                "SELECT queryid, query, calls, total_exec_time, rows FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND query NOT LIKE '%pg_stat_statements%'",
                &[],
            )
            .await
            .map_err(|e| format!("--statements: reading pg_stat_statements: {}", describe(&e)))?;
        let mut statements = Vec::with_capacity(rows.len());
        for row in rows {
            let read = |e: tokio_postgres::Error| {
                format!("--statements: reading pg_stat_statements: {}", describe(&e))
            };
            let id: Option<i64> = row.try_get(0).map_err(read)?;
            let query: String = row.try_get(1).map_err(read)?;
            // No queryid (compute_query_id off): the text is all there is to go by.
            let id = id.unwrap_or_else(|| {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                query.hash(&mut hasher);
                hasher.finish() as i64
            });
            let calls: i64 = row.try_get(2).map_err(read)?;
            let exec_ms: f64 = row.try_get(3).map_err(read)?;
            let rows: i64 = row.try_get(4).map_err(read)?;
            statements.push(Statement {
                id,
                query: collapse_whitespace(&query),
                calls: u64::try_from(calls).unwrap_or(0),
                exec_ms,
                rows: u64::try_from(rows).unwrap_or(0),
            });
        }
        Ok(statements)
    }
}

/// A PostgreSQL error with the server's message when there is one.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    }
}

/// `text` on one line, runs of whitespace made one space.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A statement's text shortened for the table: without the schema before each quoted table
/// name, without the run id `run` in the queue names (`"BenchE2e1a2b3c4d"` → `E2e`), at most
/// `width` characters.
pub fn shorten(query: &str, schema: Option<&str>, run: &str, width: usize) -> String {
    let mut text = query.to_string();
    if let Some(schema) = schema {
        text = text.replace(&format!("\"{}\".", schema.replace('"', "\"\"")), "");
    }
    text = text.replace(run, "").replace("\"Bench", "\"");
    if text.chars().count() > width {
        let cut: String = text.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(query: &str, calls: u64, exec_ms: f64, rows: u64) -> Statement {
        Statement {
            id: i64::from(query.as_bytes()[0]),
            query: query.into(),
            calls,
            exec_ms,
            rows,
        }
    }

    #[test]
    fn rounds_add_up_and_figures_are_per_message() {
        let mut b = Breakdown::default();
        b.add(
            &[
                statement("BEGIN", 100, 1.0, 0),
                statement("DELETE", 100, 9.0, 100),
            ],
            100,
        );
        b.add(&[statement("DELETE", 100, 11.0, 100)], 100);
        // The same statement (its queryid) under its text with a constant, then normalized.
        let mut b2 = Breakdown::default();
        b2.add(&[statement("DELETE LIMIT 1", 1, 1.0, 1)], 1);
        b2.add(&[statement("DELETE LIMIT $1", 1, 1.0, 1)], 1);
        b2.add(&[statement("DELETE LIMIT 1", 1, 1.0, 1)], 1);
        assert_eq!(b2.top(8).len(), 1);
        assert_eq!(b2.top(8)[0].query, "DELETE LIMIT $1");
        assert_eq!(b2.top(8)[0].calls_per_msg, 1.0);
        assert_eq!(b.messages, 200);
        assert_eq!(b.calls_per_msg(), 1.5);
        assert_eq!(b.exec_us_per_msg(), 105.0, "21 ms over 200 messages");
        let top = b.top(1);
        assert_eq!(top.len(), 1);
        let delete = &top[0];
        assert_eq!(delete.query, "DELETE");
        assert_eq!(delete.calls_per_msg, 1.0);
        assert_eq!(delete.mean_ms, 0.1);
        assert_eq!(delete.exec_us_per_msg, 100.0);
        assert_eq!(delete.rows_per_call, 1.0);
    }

    #[test]
    fn statements_are_shortened_for_the_table() {
        let q = collapse_whitespace(
            "DELETE FROM \"bench\".\"BenchE2e1a2b3c4d\"\n    WHERE \"RowVersion\" = $1",
        );
        assert_eq!(
            q,
            "DELETE FROM \"bench\".\"BenchE2e1a2b3c4d\" WHERE \"RowVersion\" = $1"
        );
        assert_eq!(
            shorten(&q, Some("bench"), "1a2b3c4d", 100),
            "DELETE FROM \"E2e\" WHERE \"RowVersion\" = $1"
        );
        assert_eq!(shorten(&q, None, "1a2b3c4d", 12), "DELETE FROM…");
    }
}
