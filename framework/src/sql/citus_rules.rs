//! The rules `schema/README.md` gives for PostgreSQL statements that must also run on Citus,
//! checked on every file of `schema/postgres/`.

use std::path::{Path, PathBuf};

/// Every `.sql` file under `dir`, its subfolders included.
fn sql_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the schema folder") {
        let path = entry.expect("a schema folder entry").path();
        if path.is_dir() {
            files.extend(sql_files(&path));
        } else if path.extension().is_some_and(|e| e == "sql") {
            files.push(path);
        }
    }
    files
}

/// `text` without its `--` comments.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split("--").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where the level of brackets that `sql[from..]` is in ends: the index of the first `)` or `;`
/// outside the brackets opened after `from`, or the text's end.
fn end_of_level(sql: &str, from: usize) -> usize {
    let mut depth = 0i32;
    for (i, c) in sql[from..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' | ';' if depth == 0 => return from + i,
            ')' => depth -= 1,
            _ => {}
        }
    }
    sql.len()
}

/// The `RETURNING` lists of `sql`: from each `RETURNING` to the `)` that closes what holds it,
/// or to the statement's end.
fn returning_lists(sql: &str) -> Vec<&str> {
    sql.match_indices("RETURNING")
        .map(|(start, _)| &sql[start..end_of_level(sql, start)])
        .collect()
}

/// The text of each `CASE … END` and `COALESCE(…)` in `sql` (nested ones included).
fn conditionals(sql: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for (start, _) in sql.match_indices("CASE ") {
        let end = sql[start..].find(" END").map_or(sql.len(), |n| start + n);
        spans.push(&sql[start..end]);
    }
    for (start, opening) in sql.match_indices("COALESCE(") {
        spans.push(&sql[start..end_of_level(sql, start + opening.len())]);
    }
    spans
}

/// Whether `sql` is an `UPDATE` (after a `WITH clock AS (…)` at most).
fn is_update(sql: &str) -> bool {
    let body = sql.trim_start();
    body.starts_with("UPDATE ") || (body.starts_with("WITH clock AS") && body.contains("\nUPDATE "))
}

#[test]
fn postgres_statements_keep_to_what_citus_accepts() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/postgres");
    let files = sql_files(&dir);
    assert!(files.len() > 100, "the PostgreSQL statements: {files:?}");
    let mut broken = Vec::new();
    for path in files {
        let sql = without_comments(&std::fs::read_to_string(&path).expect("read a statement"));
        for list in returning_lists(&sql) {
            for function in [
                "now()",
                "clock_timestamp()",
                "random()",
                "gen_random_uuid()",
            ] {
                if list.contains(function) {
                    broken.push(format!(
                        "{}: {function} in a RETURNING list (Citus refuses functions that are \
                         not immutable there)",
                        path.display()
                    ));
                }
            }
        }
        if is_update(&sql) {
            for function in ["clock_timestamp()", "random()", "gen_random_uuid()"] {
                if sql.contains(function) {
                    broken.push(format!(
                        "{}: {function} in an UPDATE (Citus refuses volatile functions there: \
                         statement_timestamp() is the statement's clock)",
                        path.display()
                    ));
                }
            }
            for span in conditionals(&sql) {
                if span.contains("now()") {
                    broken.push(format!(
                        "{}: now() inside CASE or COALESCE in an UPDATE (Citus refuses it: read \
                         the clock in a WITH clock AS (…) and use clock.\"Now\")",
                        path.display()
                    ));
                }
            }
        }
        if let Some(at) = sql.find("ON CONFLICT") {
            if sql[at..].contains("now()") {
                broken.push(format!(
                    "{}: now() in an ON CONFLICT clause (Citus refuses functions that are not \
                     immutable there)",
                    path.display()
                ));
            }
        }
        if sql.contains("SET STORAGE") && !sql.contains("WHEN feature_not_supported") {
            broken.push(format!(
                "{}: SET STORAGE outside a block that ignores feature_not_supported (Citus \
                 refuses it on distributed tables)",
                path.display()
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_check_finds_the_clock_in_a_conditional_of_an_update() {
    let sql = "UPDATE t SET a = COALESCE($1, (now() AT TIME ZONE 'utc') + interval '1 s'), \
               b = CASE WHEN $2 THEN now() END WHERE c = 1";
    assert!(is_update(sql));
    let spans = conditionals(sql);
    assert_eq!(spans.len(), 2);
    assert!(spans.iter().all(|s| s.contains("now()")), "{spans:?}");
    assert!(!is_update("INSERT INTO t VALUES (now())"));
}

#[test]
fn the_check_finds_the_clock_in_a_returning_list() {
    let sql = "WITH t AS (DELETE FROM q RETURNING q.\"E\" > (now() AT TIME ZONE 'utc')) SELECT now() FROM t";
    let lists = returning_lists(sql);
    assert_eq!(lists.len(), 1);
    assert!(lists[0].contains("now()"));
    assert!(!returning_lists("SELECT now()")
        .iter()
        .any(|l| l.contains("now()")));
}
