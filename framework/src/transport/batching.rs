//! Batched writes: planned inserts with the same statement (the same queue, the same kind of
//! row) become one multi-row INSERT, up to the dialect's rows per statement, so a batch of sends
//! costs one statement instead of one per message. Inserts are grouped by statement in the
//! order each statement first appears: rows of one statement (one table) keep the order they
//! were planned in, which is the order their queue receives them; rows of different tables may
//! be written in another order, which no queue can see (each table has its own `RowVersion`
//! order). So sends to several queues that share a commit still cost one statement per queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::storage::PlannedInsert;
use crate::driver::Statement;
use crate::sql::{multi_row_insert, Dialect};

/// Multi-row statements made so far, by single-row statement and row count: writing them is
/// text work per send (about 3% of a send's instructions under shared commits, whose groups
/// vary in size), and the same few come back again and again.
type Made = HashMap<(&'static str, String, usize, usize), Option<Arc<str>>>;

/// At most this many multi-row statements are kept; past it the cache starts over.
const MADE_AT_MOST: usize = 512;

fn made() -> &'static Mutex<Made> {
    static MADE: OnceLock<Mutex<Made>> = OnceLock::new();
    MADE.get_or_init(Default::default)
}

/// [`multi_row_insert`], remembered.
fn multi_row_insert_cached(
    dialect: &'static Dialect,
    insert: &str,
    per_row: usize,
    rows: usize,
) -> Option<String> {
    let key = (dialect.name, insert.to_string(), per_row, rows);
    if let Some(sql) = made().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return sql.as_deref().map(str::to_string);
    }
    let sql: Option<Arc<str>> = multi_row_insert(dialect, insert, per_row, rows).map(Into::into);
    let mut made = made().lock().unwrap_or_else(|p| p.into_inner());
    if made.len() >= MADE_AT_MOST {
        made.clear();
    }
    made.insert(key, sql.clone());
    sql.as_deref().map(str::to_string)
}

/// `planned`, with every run of identical statements merged into multi-row inserts.
pub(crate) fn combine(
    planned: Vec<PlannedInsert>,
    dialect: &'static Dialect,
) -> Vec<PlannedInsert> {
    if dialect.rows_per_insert <= 1 || planned.len() < 2 {
        return planned;
    }
    // One group per statement, in the order each first appears; each group in planned order.
    let mut groups: Vec<Vec<PlannedInsert>> = Vec::new();
    for insert in planned {
        match groups
            .iter_mut()
            .find(|g| g[0].statement.sql == insert.statement.sql)
        {
            Some(group) => group.push(insert),
            None => groups.push(vec![insert]),
        }
    }
    let mut out = Vec::new();
    for group in groups {
        let mut run: Vec<PlannedInsert> = Vec::new();
        for insert in group {
            if run.len() == dialect.rows_per_insert {
                flush(&mut run, &mut out, dialect);
            }
            run.push(insert);
        }
        flush(&mut run, &mut out, dialect);
    }
    out
}

/// Moves `run` onto `out`: one insert when it has one row or cannot be merged, else one
/// multi-row insert.
fn flush(run: &mut Vec<PlannedInsert>, out: &mut Vec<PlannedInsert>, dialect: &'static Dialect) {
    if run.len() < 2 {
        out.append(run);
        return;
    }
    let per_row = run[0].statement.params.len();
    let Some(sql) = multi_row_insert_cached(dialect, &run[0].statement.sql, per_row, run.len())
    else {
        out.append(run);
        return;
    };
    let rows = run.len();
    let operation = format!("{} ({rows} messages in one statement)", run[0].operation);
    let (forget_on_failure, database) = (run[0].forget_on_failure.clone(), run[0].database);
    let mut params = Vec::with_capacity(per_row * rows);
    for insert in run.drain(..) {
        params.extend(insert.statement.params);
    }
    out.push(PlannedInsert {
        statement: Statement { sql, params },
        forget_on_failure,
        database,
        operation,
    });
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;
    use crate::driver::{Param, Statement};

    fn planned(sql: &str, id: i64) -> PlannedInsert {
        PlannedInsert {
            statement: Statement::new(sql, &[Param::BigInt(Some(id))]),
            forget_on_failure: None,
            database: "PostgreSQL",
            operation: "sending".into(),
        }
    }

    #[test]
    fn runs_of_one_statement_become_one_insert_in_order() {
        let a = "INSERT INTO a (x) VALUES ($1)";
        let b = "INSERT INTO b (x) VALUES ($1)";
        let combined = combine(
            vec![
                planned(a, 1),
                planned(a, 2),
                planned(a, 3),
                planned(b, 4),
                planned(a, 5),
            ],
            &crate::sql::POSTGRES,
        );
        let texts: Vec<(&str, Vec<Param<'_>>)> = combined
            .iter()
            .map(|p| (p.statement.sql.as_str(), p.statement.params()))
            .collect();
        assert_eq!(texts.len(), 2, "every row of a in one insert, then b");
        assert_eq!(
            texts[0].0,
            "INSERT INTO a (x) VALUES\n($1),\n($2),\n($3),\n($4)"
        );
        let ids: Vec<String> = texts[0].1.iter().map(|p| format!("{p:?}")).collect();
        assert_eq!(
            ids,
            [
                "BigInt(Some(1))",
                "BigInt(Some(2))",
                "BigInt(Some(3))",
                "BigInt(Some(5))"
            ],
            "a's rows in the order they were planned"
        );
        assert_eq!(texts[1].0, b);
        assert!(combined[0]
            .operation
            .contains("4 messages in one statement"));
    }

    #[test]
    fn a_run_is_cut_at_the_dialects_rows_per_statement() {
        let a = "INSERT INTO a (x) VALUES ($1)";
        let rows = crate::sql::POSTGRES.rows_per_insert + 1;
        let combined = combine(
            (0..rows).map(|i| planned(a, i as i64)).collect(),
            &crate::sql::POSTGRES,
        );
        assert_eq!(combined.len(), 2);
        assert_eq!(combined[1].statement.params.len(), 1);
    }
}
