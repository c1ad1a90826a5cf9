//! Index checks: the indexes the seeds require, compared by definition (type, key columns,
//! included columns, filter) with what the catalog says, as NServiceBus compares its own
//! (`CheckIfNonClusteredRowVersionIndexIsPresent`: a non-clustered index whose first key column
//! is `RowVersion`). A name alone proves nothing: an old table whose `Index_RowVersion` is
//! clustered (the upgrade case seed 000 points to), or an index of the right name on the wrong
//! column, is reported with the statements that fix it.

use crate::driver::statements::IndexColumn;
use crate::sql::{IndexDefinition, IndexSql};

/// An index as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundIndex {
    pub name: String,
    /// The database's name for its type (`NONCLUSTERED`, `CLUSTERED`, `btree`, `hash`, …).
    pub kind: String,
    /// Filtered (partial).
    pub filtered: bool,
    /// Its key columns in order; `None` for an expression.
    pub keys: Vec<Option<String>>,
    /// Its `INCLUDE` columns.
    pub includes: Vec<String>,
}

/// Gathers the rows of `catalog_index_definitions.sql` into one [`FoundIndex`] per index.
pub(crate) fn group(columns: Vec<IndexColumn>) -> Vec<FoundIndex> {
    /// Key columns by their ordinal, sorted once every row is in.
    type Keys = Vec<(i64, Option<String>)>;
    let mut found: Vec<(FoundIndex, Keys)> = Vec::new();
    for column in columns {
        let position = match found.iter().position(|(f, _)| f.name == column.index) {
            Some(position) => position,
            None => {
                found.push((
                    FoundIndex {
                        name: column.index.clone(),
                        kind: column.kind.clone(),
                        filtered: column.filtered,
                        keys: Vec::new(),
                        includes: Vec::new(),
                    },
                    Vec::new(),
                ));
                found.len() - 1
            }
        };
        let (index, keys) = &mut found[position];
        if column.key_ordinal > 0 {
            keys.push((column.key_ordinal, column.column));
        } else if column.included {
            if let Some(name) = column.column {
                index.includes.push(name);
            }
        }
    }
    found
        .into_iter()
        .map(|(mut index, mut keys)| {
            keys.sort_by_key(|(ordinal, _)| *ordinal);
            index.keys = keys.into_iter().map(|(_, column)| column).collect();
            index
        })
        .collect()
}

/// What is wrong with one index the seeds require.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProblemKind {
    /// No index of its name, and none of another name that serves.
    Missing,
    /// Its name, on the right columns, but clustered (SQL Server): a table from an older
    /// NServiceBus transport.
    Clustered,
    /// Its name, defined otherwise (another column, type, or a filter).
    Defined,
}

/// One index the seeds require that is missing or wrong, with the statements that fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexProblem {
    /// The index's name.
    pub name: String,
    pub kind: ProblemKind,
    /// What to run: the seed's `CREATE` statement, after a `DROP` of the index when one of
    /// that name exists.
    pub fix: String,
    /// What was found, in words.
    detail: String,
}

impl IndexProblem {
    /// The warning logged at start and kept in `Bus::warnings`, quoting the statements to run.
    /// A missing index's ends with `create it with:` and the statement alone.
    pub fn warning(&self, queue: &str, database: &str) -> String {
        match self.kind {
            ProblemKind::Missing => format!(
                "queue {queue:?} on {database} lacks index {:?}{}; create it with:\n{}",
                self.name, self.detail, self.fix
            ),
            ProblemKind::Clustered => format!(
                "queue {queue:?} on {database} has index {:?} {}; the receive needs it \
                 non-clustered, as NServiceBus creates it since its patches 3.1.5, 4.3.2, \
                 5.0.3 and 6.0.1 (its \"non-clustered index upgrade\" guide). Dropping a \
                 clustered index rewrites the table as a heap: on a large queue run this while \
                 the queue is quiet (WITH (ONLINE = ON) where \
                 the edition allows). Replace it with:\n{}",
                self.name, self.detail, self.fix
            ),
            ProblemKind::Defined => format!(
                "queue {queue:?} on {database} has index {:?} {}; replace it with:\n{}",
                self.name, self.detail, self.fix
            ),
        }
    }
}

/// Compares the indexes `expected` with the `found` ones; `index_type` is what the database
/// calls an index the seeds accept ([`crate::sql::Dialect::index_type`]).
pub(crate) fn check(
    expected: &[IndexSql],
    found: &[FoundIndex],
    index_type: &str,
) -> Vec<IndexProblem> {
    expected
        .iter()
        .filter_map(|index| check_one(index, found, index_type))
        .collect()
}

fn check_one(index: &IndexSql, found: &[FoundIndex], index_type: &str) -> Option<IndexProblem> {
    let definition = &index.definition;
    let wanted = describe_definition(definition, index_type);
    // Compared as SQL Server's default collations compare names (case aside); Babelfish lists
    // them in lower case (see `driver::catalog_names`).
    match found.iter().find(|f| same(&f.name, &index.name)) {
        Some(named) => {
            if serves(named, definition, index_type) {
                return None;
            }
            let clustered = is_clustered(named) && keys_match(named, definition);
            Some(IndexProblem {
                name: index.name.clone(),
                kind: if clustered {
                    ProblemKind::Clustered
                } else {
                    ProblemKind::Defined
                },
                fix: format!("{}\n{}", index.drop, index.create),
                detail: if clustered {
                    format!("as a {}", describe(named))
                } else {
                    format!(
                        "defined as {}, where the seed's is {wanted}",
                        describe(named)
                    )
                },
            })
        }
        // An index of another name that serves is enough (NServiceBus's check goes by
        // definition alone).
        None if found.iter().any(|f| serves(f, definition, index_type)) => None,
        None => {
            let clustered = found
                .iter()
                .find(|f| is_clustered(f) && keys_match(f, definition));
            Some(IndexProblem {
                name: index.name.clone(),
                kind: ProblemKind::Missing,
                fix: index.create.clone(),
                detail: match clustered {
                    Some(c) => format!(
                        " (index {:?} is a {}: the receive wants {wanted}; drop {:?} once the new \
                         index exists)",
                        c.name,
                        describe(c),
                        c.name
                    ),
                    None => String::new(),
                },
            })
        }
    }
}

/// Whether `found` serves the statements that rely on `definition`: the accepted type, the key
/// columns first in order, the other columns carried (included, or as further keys), and no
/// filter unless the definition allows one.
fn serves(found: &FoundIndex, definition: &IndexDefinition, index_type: &str) -> bool {
    found.kind.eq_ignore_ascii_case(index_type)
        && keys_match(found, definition)
        && definition.includes.iter().all(|column| {
            found.includes.iter().any(|c| same(c, column))
                || found.keys.iter().flatten().any(|c| same(c, column))
        })
        && (!found.filtered || definition.filter_allowed)
}

fn keys_match(found: &FoundIndex, definition: &IndexDefinition) -> bool {
    found.keys.len() >= definition.keys.len()
        && definition
            .keys
            .iter()
            .zip(&found.keys)
            .all(|(wanted, key)| key.as_deref().is_some_and(|k| same(k, wanted)))
}

fn is_clustered(found: &FoundIndex) -> bool {
    found.kind.eq_ignore_ascii_case("CLUSTERED")
}

/// Column names compare as SQL Server's default collations do (case-insensitively); the
/// seeds' columns differ by more than case.
fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn describe(found: &FoundIndex) -> String {
    let keys: Vec<&str> = found
        .keys
        .iter()
        .map(|k| k.as_deref().unwrap_or("<expression>"))
        .collect();
    let mut text = format!("{} index on ({})", found.kind, keys.join(", "));
    if !found.includes.is_empty() {
        text += &format!(" INCLUDE ({})", found.includes.join(", "));
    }
    if found.filtered {
        text += " with a filter";
    }
    text
}

fn describe_definition(definition: &IndexDefinition, index_type: &str) -> String {
    let mut text = format!("{index_type} on ({})", definition.keys.join(", "));
    if !definition.includes.is_empty() {
        text += &format!(" carrying ({})", definition.includes.join(", "));
    }
    if !definition.filter_allowed {
        text += " without a filter";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{QueueName, SchemaName};
    use crate::sql::Dialect;

    fn column(index: &str, kind: &str, column: &str, key: i64, included: bool) -> IndexColumn {
        IndexColumn {
            index: index.into(),
            kind: kind.into(),
            filtered: false,
            column: Some(column.into()),
            key_ordinal: key,
            included,
        }
    }

    fn queue_indexes(database: &str) -> Vec<IndexSql> {
        let dialect: &'static Dialect = crate::sql::dialect_named(database).unwrap();
        let schema = SchemaName::new(dialect.only_schema.unwrap_or("dbo")).unwrap();
        let queue = QueueName::new("Sales").unwrap();
        let sql = dialect.queue_sql(&schema, &queue);
        sql.indexes().into_iter().cloned().collect()
    }

    /// What SQL Server's catalog says of the seed's two indexes.
    fn seed_sqlserver() -> Vec<IndexColumn> {
        vec![
            column("Index_Expires", "NONCLUSTERED", "Id", 0, true),
            column("Index_Expires", "NONCLUSTERED", "RowVersion", 0, true),
            column("Index_Expires", "NONCLUSTERED", "Expires", 1, false),
            column("Index_RowVersion", "NONCLUSTERED", "RowVersion", 1, false),
        ]
    }

    #[test]
    fn the_seeds_indexes_pass() {
        let expected = queue_indexes("sqlserver");
        let found = group(seed_sqlserver());
        assert_eq!(found.len(), 2);
        assert!(check(&expected, &found, "NONCLUSTERED").is_empty());
        // SQLite carries the included columns as further keys.
        let expected = queue_indexes("sqlite");
        let found = group(vec![
            column("Sales_Index_RowVersion", "btree", "RowVersion", 1, false),
            column("Sales_Index_Expires", "btree", "Expires", 1, false),
            column("Sales_Index_Expires", "btree", "Id", 2, false),
            column("Sales_Index_Expires", "btree", "RowVersion", 3, false),
        ]);
        assert!(check(&expected, &found, "btree").is_empty());
    }

    #[test]
    fn nservicebus_filtered_expires_index_passes() {
        let expected = queue_indexes("sqlserver");
        let mut rows = seed_sqlserver();
        for row in rows.iter_mut().filter(|r| r.index == "Index_Expires") {
            row.filtered = true;
        }
        assert!(check(&expected, &group(rows), "NONCLUSTERED").is_empty());
    }

    #[test]
    fn a_clustered_rowversion_index_is_the_upgrade_case() {
        let expected = queue_indexes("sqlserver");
        let mut rows = seed_sqlserver();
        rows.last_mut().unwrap().kind = "CLUSTERED".into();
        let problems = check(&expected, &group(rows), "NONCLUSTERED");
        assert_eq!(problems.len(), 1, "{problems:?}");
        let problem = &problems[0];
        assert_eq!(problem.kind, ProblemKind::Clustered);
        assert!(problem
            .fix
            .starts_with("DROP INDEX IF EXISTS [Index_RowVersion] ON [dbo].[Sales];"));
        assert!(problem
            .fix
            .contains("CREATE NONCLUSTERED INDEX [Index_RowVersion]"));
        let warning = problem.warning("Sales", "SQL Server");
        assert!(
            warning.contains("CLUSTERED index on (RowVersion)"),
            "{warning}"
        );
        assert!(warning.contains("non-clustered"), "{warning}");
        assert!(warning.ends_with(&problem.fix), "{warning}");
    }

    #[test]
    fn the_right_name_on_the_wrong_column_is_reported() {
        let expected = queue_indexes("postgres");
        let found = group(vec![
            column("Sales_Index_RowVersion", "btree", "Id", 1, false),
            column("Sales_Index_Expires", "btree", "Expires", 1, false),
            column("Sales_Index_Expires", "btree", "Id", 2, true),
            column("Sales_Index_Expires", "btree", "RowVersion", 3, true),
        ]);
        let problems = check(&expected, &found, "btree");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::Defined);
        let warning = problems[0].warning("Sales", "PostgreSQL");
        assert!(warning.contains("btree index on (Id)"), "{warning}");
        assert!(warning.contains("btree on (RowVersion)"), "{warning}");
        assert!(warning.contains("DROP INDEX IF EXISTS \"dbo\".\"Sales_Index_RowVersion\";"));
        assert!(warning.contains("CREATE INDEX IF NOT EXISTS \"Sales_Index_RowVersion\""));
    }

    #[test]
    fn a_missing_include_a_hash_index_or_a_filter_is_a_wrong_definition() {
        let expected = queue_indexes("postgres");
        let found = group(vec![
            column("Sales_Index_RowVersion", "hash", "RowVersion", 1, false),
            column("Sales_Index_Expires", "btree", "Expires", 1, false),
        ]);
        let problems = check(&expected, &found, "btree");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().all(|p| p.kind == ProblemKind::Defined));
        let mut rows = vec![column(
            "Sales_Index_RowVersion",
            "btree",
            "RowVersion",
            1,
            false,
        )];
        rows[0].filtered = true;
        let problems = check(&expected[..1], &group(rows), "btree");
        assert_eq!(problems[0].kind, ProblemKind::Defined, "{problems:?}");
    }

    #[test]
    fn missing_indexes_quote_their_statement_and_another_name_may_serve() {
        let expected = queue_indexes("sqlserver");
        let problems = check(&expected, &[], "NONCLUSTERED");
        assert_eq!(problems.len(), 2);
        let warning = problems[0].warning("Sales", "SQL Server");
        let (_, statement) = warning.split_once("create it with:\n").unwrap();
        assert_eq!(statement, expected[0].create);
        // A DBA's index of another name with the right definition serves.
        let found = group(vec![
            column(
                "IX_Sales_RowVersion",
                "NONCLUSTERED",
                "RowVersion",
                1,
                false,
            ),
            column("IX_Sales_Expires", "NONCLUSTERED", "Expires", 1, false),
            column("IX_Sales_Expires", "NONCLUSTERED", "Id", 0, true),
            column("IX_Sales_Expires", "NONCLUSTERED", "RowVersion", 0, true),
        ]);
        assert!(check(&expected, &found, "NONCLUSTERED").is_empty());
        // A clustered one of another name does not, and is named.
        let found = group(vec![column(
            "PK_Sales",
            "CLUSTERED",
            "RowVersion",
            1,
            false,
        )]);
        let problems = check(&expected[..1], &found, "NONCLUSTERED");
        assert_eq!(problems[0].kind, ProblemKind::Missing);
        let warning = problems[0].warning("Sales", "SQL Server");
        assert!(
            warning.contains("\"PK_Sales\" is a CLUSTERED index"),
            "{warning}"
        );
        assert!(warning.contains("create it with:\n"), "{warning}");
    }

    #[test]
    fn grouping_orders_keys_by_ordinal_and_keeps_expressions() {
        let mut rows = vec![
            column("ix", "btree", "b", 2, false),
            column("ix", "btree", "a", 1, false),
            column("ix", "btree", "c", 0, true),
            column("ix", "btree", "partition", 0, false),
        ];
        rows.push(IndexColumn {
            column: None,
            key_ordinal: 3,
            ..rows[0].clone()
        });
        let found = group(rows);
        assert_eq!(
            found[0].keys,
            vec![Some("a".to_string()), Some("b".to_string()), None]
        );
        assert_eq!(found[0].includes, vec!["c".to_string()]);
    }
}
