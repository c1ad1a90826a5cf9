//! The creation script a DBA runs by hand: every statement auto-create would run, in order, for
//! one database, schema, layout and set of queues. Works for every database whatever features
//! are compiled in.

use super::dialect::{Dialect, POSTGRES, SQLITE, SQLSERVER};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::transport::StorageLayout;

/// The dialect named `database` (`sqlite`, `postgres` or `sqlserver`, as the folders of
/// `schema/`).
pub(crate) fn dialect_named(database: &str) -> Result<&'static Dialect> {
    [&SQLITE, &POSTGRES, &SQLSERVER]
        .into_iter()
        .find(|d| d.folder.eq_ignore_ascii_case(database))
        .ok_or_else(|| {
            NimbusError::config(
                format!("unknown database {database:?}"),
                "name one of sqlite, postgres, sqlserver",
            )
        })
}

/// SQL Server's scripts look names up as values (`@P1` the schema, `@P2` the table, `@P3` the
/// index, `@P4` its first key column): a printed script declares them first, as `N'…'`
/// literals.
fn declare(dialect: &Dialect, names: &[&str]) -> String {
    if dialect.folder != SQLSERVER.folder {
        return String::new();
    }
    let declared: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("@P{} sysname = N'{}'", i + 1, n.replace('\'', "''")))
        .collect();
    format!("DECLARE {};\n", declared.join(", "))
}

/// Renders the whole creation script. Statements are separated by `GO` on SQL Server (each
/// declares the names it needs) and by blank lines elsewhere.
pub(crate) fn creation_script(
    dialect: &'static Dialect,
    schema: &SchemaName,
    layout: StorageLayout,
    queues: &[QueueName],
) -> String {
    let s = dialect.schema_sql_for(layout, schema);
    let name = schema.as_str();
    let mut parts: Vec<(String, Vec<&str>)> = Vec::new();
    if let Some(create) = &s.schema {
        parts.push((create.clone(), vec![name]));
    }
    parts.push((s.subscriptions.clone(), vec![name]));
    // subscriptions.sql has LastSeenAt already; IdleSeconds comes by its upgrade.
    parts.push((s.upgrade_subscriptions_idle_seconds.clone(), vec![name]));
    parts.push((s.dead_letters.clone(), vec![name]));
    // Only endpoints with leases use it; an empty table costs nothing, and a DBA who creates
    // the schema once need not know which endpoints will.
    parts.push((s.leases.clone(), vec![name]));
    parts.push((s.paused_queues.clone(), vec![name]));
    parts.push((s.instances.clone(), vec![name]));
    // Only endpoints with schedules use it; as with NimbusLeases, a DBA need not know which.
    parts.push((s.schedules.clone(), vec![name]));
    // Deduplicated sends and inboxes use it; as with NimbusLeases, a DBA need not know which.
    parts.push((s.deduplication.clone(), vec![name]));
    // Endpoints with limits use it; as with NimbusLeases, a DBA need not know which.
    parts.push((s.limits.clone(), vec![name]));
    // Bodies the claim check stores apart (above 1 MiB by default, so any endpoint may).
    parts.push((s.bodies.clone(), vec![name]));
    parts.push((s.monitoring.clone(), vec![name]));
    // Only endpoints with sagas use it; as with NimbusLeases, a DBA need not know which.
    parts.push((s.sagas.clone(), vec![name]));
    let rendered_queues: Vec<_> = queues
        .iter()
        .map(|q| (q, dialect.queue_sql_for(layout, schema, q)))
        .collect();
    match layout {
        StorageLayout::SharedTable => {
            parts.push((s.shared_messages.clone(), vec![name]));
            let index = &s.shared_messages_index_dequeue;
            parts.push((
                index.create_if_missing.clone(),
                index.guard_names(name, "NimbusMessages").to_vec(),
            ));
        }
        StorageLayout::TablePerQueue | StorageLayout::NServiceBusPostgreSql => {
            parts.push((s.delayed_messages.clone(), vec![name]));
            let index = &s.delayed_messages_index_id;
            parts.push((
                index.create_if_missing.clone(),
                index.guard_names(name, "NimbusDelayedMessages").to_vec(),
            ));
            for (queue, q) in &rendered_queues {
                parts.push((q.create_table.clone(), vec![name, queue.as_str()]));
                for index in q.indexes() {
                    parts.push((
                        index.create_if_missing.clone(),
                        index.guard_names(name, queue.as_str()).to_vec(),
                    ));
                }
            }
        }
    }
    render(dialect, &parts)
}

/// The statements that give `queue`'s table (seed 000's shape, table-per-queue layout) the
/// columns and indexes of ordered groups, each guarded to run only where missing; in the
/// shared-table layout, those of `NimbusMessages`, whatever the queue.
pub(crate) fn ordered_groups_script(
    dialect: &'static Dialect,
    schema: &SchemaName,
    layout: StorageLayout,
    queue: &QueueName,
) -> String {
    if layout == StorageLayout::SharedTable {
        let groups = dialect.schema_sql(schema).shared_groups;
        return columns_script(
            dialect,
            schema,
            "NimbusMessages",
            &groups.columns,
            &[&groups.index],
        );
    }
    let groups = dialect.queue_sql(schema, queue).groups;
    columns_script(
        dialect,
        schema,
        queue.as_str(),
        &groups.columns,
        &[&groups.index_group, &groups.index_group_position],
    )
}

/// The statements that give `queue`'s table (seed 000's shape, table-per-queue layout) the
/// `Priority` column and its index, each guarded to run only where missing; in the shared-table
/// layout, those of `NimbusMessages`, whatever the queue.
pub(crate) fn priorities_script(
    dialect: &'static Dialect,
    schema: &SchemaName,
    layout: StorageLayout,
    queue: &QueueName,
) -> String {
    let priorities = match layout {
        StorageLayout::SharedTable => {
            let priorities = dialect.schema_sql(schema).shared_priorities;
            return columns_script(
                dialect,
                schema,
                "NimbusMessages",
                &priorities.column,
                &[&priorities.index],
            );
        }
        _ => dialect.queue_sql(schema, queue).priorities,
    };
    columns_script(
        dialect,
        schema,
        queue.as_str(),
        &priorities.column,
        &[&priorities.index],
    )
}

/// `columns` (a script adding columns to `table`) and then `indexes`, as one script.
fn columns_script(
    dialect: &'static Dialect,
    schema: &SchemaName,
    table: &str,
    columns: &str,
    indexes: &[&super::IndexSql],
) -> String {
    let name = schema.as_str();
    let mut parts: Vec<(String, Vec<&str>)> = vec![(columns.to_string(), vec![name, table])];
    for index in indexes {
        parts.push((
            index.create_if_missing.clone(),
            index.guard_names(name, table).to_vec(),
        ));
    }
    render(dialect, &parts)
}

/// `parts` (statements with the names SQL Server's declare) as one script.
fn render(dialect: &Dialect, parts: &[(String, Vec<&str>)]) -> String {
    let separator = if dialect.folder == SQLSERVER.folder {
        "\nGO\n\n"
    } else {
        "\n\n"
    };
    let sql_server = dialect.folder == SQLSERVER.folder;
    parts
        .iter()
        .map(|(text, names)| {
            format!(
                "{}{}",
                declare(dialect, names),
                terminated(text.trim_end(), sql_server)
            )
        })
        .collect::<Vec<_>>()
        .join(separator)
        + "\n"
}

/// `text` ending with a `;` where the script is run statement by statement (psql, sqlite3):
/// the statements Nimbus runs one at a time carry none. A statement that ends in a comment line
/// gets its `;` on a line of its own. SQL Server's batches end at `GO`.
fn terminated(text: &str, sql_server: bool) -> String {
    let last_line = text.lines().last().unwrap_or_default().trim_start();
    if sql_server || text.ends_with(';') || text.is_empty() {
        text.to_string()
    } else if last_line.starts_with("--") {
        format!("{text}\n;")
    } else {
        format!("{text};")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_every_table_for_each_layout() {
        let queue = QueueName::new("Sales").expect("a valid name");
        let script = creation_script(
            &SQLSERVER,
            &SchemaName::new("it's").expect("a valid name"),
            StorageLayout::TablePerQueue,
            std::slice::from_ref(&queue),
        );
        assert!(script.contains("DECLARE @P1 sysname = N'it''s', @P2 sysname = N'Sales';"));
        assert!(script.contains("CREATE TABLE [it's].[Sales]"));
        assert!(script.contains("[Index_Expires]"));
        assert!(script.contains("\nGO\n"));
        let shared = creation_script(
            &POSTGRES,
            &SchemaName::new("public").expect("a valid name"),
            StorageLayout::SharedTable,
            &[queue],
        );
        assert!(shared.contains("\"public\".\"NimbusMessages\""));
        assert!(
            !shared.contains("\"Sales\""),
            "no queue table in the shared layout"
        );
        // Run as printed (psql, sqlite3): every statement ends with its `;`.
        for dialect in [&POSTGRES, &SQLITE] {
            let script = creation_script(
                dialect,
                &SchemaName::new(dialect.only_schema.unwrap_or("public")).expect("a valid name"),
                StorageLayout::TablePerQueue,
                &[QueueName::new("Sales").expect("a valid name")],
            );
            for statement in script.split("\n\n") {
                let code: Vec<&str> = statement
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("--") && !l.trim().is_empty())
                    .collect();
                if let Some(last) = code.last() {
                    assert!(
                        last.trim_end().ends_with(';'),
                        "{}: {statement}",
                        dialect.name
                    );
                }
            }
        }
        assert!(dialect_named("SQLite").is_ok());
        assert!(dialect_named("mysql").is_err());
    }
}
