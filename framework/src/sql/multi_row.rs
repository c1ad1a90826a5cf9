//! One INSERT for many rows: the statement file's single-row `INSERT … VALUES (…)` with its
//! `VALUES` tuple repeated, each copy's parameters renumbered, so a batch of messages to one
//! queue costs one statement and one round trip instead of one per message.

use super::dialect::{Dialect, Placeholder};

/// `insert` (one row, parameters 1..=`params_per_row`) made into an INSERT of `rows` rows:
/// row `r` binds parameters `r * params_per_row + 1 ..`. `None` when the text has no `VALUES`
/// tuple to repeat, or a parameter numbered past `params_per_row`.
pub(crate) fn multi_row_insert(
    dialect: &Dialect,
    insert: &str,
    params_per_row: usize,
    rows: usize,
) -> Option<String> {
    let values = find_values(insert)?;
    let (head, tuple) = insert.split_at(values + "VALUES".len());
    let tuple = tuple.trim().trim_end_matches(';').trim_end();
    let terminator = if insert.trim_end().ends_with(';') {
        ";"
    } else {
        ""
    };
    let mut out = String::with_capacity(head.len() + rows * (tuple.len() + 8));
    out.push_str(head);
    for row in 0..rows {
        out.push_str(if row == 0 { "\n" } else { ",\n" });
        out.push_str(&renumber(
            tuple,
            dialect.placeholder,
            row * params_per_row,
            params_per_row,
        )?);
    }
    out.push_str(terminator);
    Some(out)
}

/// Byte offsets of `sql` that are outside string literals (`'…'`) and quoted identifiers
/// (`"…"`, `[…]`), where keywords and parameters can be.
fn outside_quotes(sql: &str) -> Vec<bool> {
    let mut outside = vec![true; sql.len()];
    let mut closing: Option<char> = None;
    let mut chars = sql.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match closing {
            None => match c {
                '\'' => closing = Some('\''),
                '"' => closing = Some('"'),
                '[' => closing = Some(']'),
                _ => continue,
            },
            Some(close) if c == close => {
                // A doubled closing character is an escaped one, still inside.
                if chars.peek().is_some_and(|&(_, next)| next == close) {
                    let (j, _) = chars.next().unwrap_or((i, c));
                    outside[i] = false;
                    outside[j] = false;
                    continue;
                }
                closing = None;
            }
            Some(_) => {}
        }
        for flag in &mut outside[i..i + c.len_utf8()] {
            *flag = false;
        }
    }
    outside
}

/// Where the `VALUES` keyword is (outside quotes), when there is one.
fn find_values(sql: &str) -> Option<usize> {
    let upper = sql.to_ascii_uppercase();
    let outside = outside_quotes(sql);
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    upper.match_indices("VALUES").map(|(i, _)| i).find(|&i| {
        outside[i]
            && !word(upper[..i].chars().next_back())
            && !word(upper[i + "VALUES".len()..].chars().next())
    })
}

/// `tuple` with every parameter `n` (as the dialect writes it, outside quotes) made `n + offset`;
/// `None` if one is past `params_per_row`.
fn renumber(
    tuple: &str,
    placeholder: Placeholder,
    offset: usize,
    params_per_row: usize,
) -> Option<String> {
    let marker = match placeholder {
        Placeholder::Dollar => "$",
        Placeholder::Question => "?",
        Placeholder::AtP => "@P",
    };
    let outside = outside_quotes(tuple);
    let mut out = String::with_capacity(tuple.len() + 16);
    let mut i = 0;
    while let Some(c) = tuple[i..].chars().next() {
        if outside[i] && tuple[i..].starts_with(marker) {
            let digits: String = tuple[i + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !digits.is_empty() {
                let n: usize = digits.parse().ok()?;
                if n == 0 || n > params_per_row {
                    return None;
                }
                out.push_str(marker);
                out.push_str(&(n + offset).to_string());
                i += marker.len() + digits.len();
                continue;
            }
        }
        out.push(c);
        i += c.len_utf8();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::{POSTGRES, SQLITE};

    /// Every insert of the shared table merges into a multi-row insert on every database, so
    /// grouped and prioritized sends cost one statement per batch as plain ones do.
    #[test]
    fn every_shared_table_insert_merges() {
        use crate::sql::dialect::SQLSERVER;
        let schema = crate::names::SchemaName::constant("dbo");
        for dialect in [&POSTGRES, &SQLITE, &SQLSERVER] {
            let s = dialect.schema_sql(&schema);
            for (insert, per_row) in [
                (&s.messages_insert, 7),
                (&s.shared_priorities.insert, 8),
                (&s.shared_groups.insert, 9),
                (&s.shared_groups.prioritized.insert, 10),
            ] {
                let merged = multi_row_insert(dialect, insert, per_row, 3);
                assert!(merged.is_some(), "{}: {insert}", dialect.name);
            }
        }
    }

    #[test]
    fn parameters_are_renumbered_per_row_and_quoted_text_is_left_alone() {
        let sql = "INSERT INTO t (a, b, c)\nVALUES ($1, COALESCE($3::timestamp, now() + $2 * interval '1 $1'), $2)";
        let many = multi_row_insert(&POSTGRES, sql, 3, 3).expect("a multi-row insert");
        assert_eq!(
            many,
            "INSERT INTO t (a, b, c)\nVALUES\n($1, COALESCE($3::timestamp, now() + $2 * interval '1 $1'), $2),\n\
             ($4, COALESCE($6::timestamp, now() + $5 * interval '1 $1'), $5),\n\
             ($7, COALESCE($9::timestamp, now() + $8 * interval '1 $1'), $8)"
        );
    }

    #[test]
    fn quoted_names_with_apostrophes_and_brackets_do_not_confuse_it() {
        let sql = "INSERT INTO \"it's \"\"x\"\" values\" (a) VALUES ($1, '$1 '' $2')";
        assert_eq!(
            multi_row_insert(&POSTGRES, sql, 1, 2).as_deref(),
            Some(
                "INSERT INTO \"it's \"\"x\"\" values\" (a) VALUES\n($1, '$1 '' $2'),\n($2, '$1 '' $2')"
            )
        );
    }

    #[test]
    fn sqlite_placeholders_and_a_parameter_past_the_row_are_refused() {
        let sql = "INSERT INTO t (a) VALUES (?1, ?2);";
        assert_eq!(
            multi_row_insert(&SQLITE, sql, 2, 2).as_deref(),
            Some("INSERT INTO t (a) VALUES\n(?1, ?2),\n(?3, ?4);")
        );
        assert_eq!(
            multi_row_insert(&SQLITE, sql, 1, 2),
            None,
            "?2 is past one per row"
        );
        assert_eq!(multi_row_insert(&SQLITE, "DELETE FROM t", 1, 2), None);
    }
}
