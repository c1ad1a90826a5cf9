//! SQLite SQL, the embedded default. SQLite has no row locks: a receive runs inside
//! `BEGIN IMMEDIATE`, which holds the database's single write lock until commit, so two receivers
//! can never take the same row. The statements keep the structure of the PostgreSQL and T-SQL ones
//! (a CTE that picks the lowest `RowVersion`, a `DELETE … RETURNING`).
//!
//! SQLite has no schemas here: everything lives in the database file's `main` schema.

use super::{
    render, Dialect, IndexStatement, QueueStatements, SharedStatements, SharedTableStatements,
};
use crate::names::{QueueName, SchemaName};

const QUEUE_TABLE: &str = include_str!("../../../schema/sqlite/queue_table.sql");
const INDEX_ROWVERSION: &str = include_str!("../../../schema/sqlite/queue_index_rowversion.sql");
const INDEX_EXPIRES: &str = include_str!("../../../schema/sqlite/queue_index_expires.sql");
const SUBSCRIPTIONS: &str = include_str!("../../../schema/sqlite/subscriptions.sql");
const DEAD_LETTERS: &str = include_str!("../../../schema/sqlite/dead_letters.sql");
const DELAYED: &str = include_str!("../../../schema/sqlite/delayed_messages.sql");
const SHARED_MESSAGES: &str = include_str!("../../../schema/sqlite/shared_messages.sql");
const UPGRADE_LAST_SEEN_AT: &str =
    include_str!("../../../schema/sqlite/upgrade_subscriptions_last_seen_at.sql");

/// The current UTC time in the format stored in `Expires` and `LastSeenAt`.
const NOW: &str = "strftime('%Y-%m-%d %H:%M:%f', 'now')";

/// The only schema an SQLite database file has.
pub(crate) const MAIN_SCHEMA: &str = "main";

/// The SQLite dialect.
pub(crate) struct Sqlite;

impl Dialect for Sqlite {
    const NAME: &'static str = "SQLite";
    const MAX_QUEUE_NAME: usize = crate::names::MAX_NAME_LEN;
    const MAX_SCHEMA_NAME: usize = crate::names::MAX_NAME_LEN;

    fn quote(identifier: &str) -> String {
        format!("\"{}\"", identifier.replace('"', "\"\""))
    }

    fn queue_statements(_schema: &SchemaName, queue: &QueueName) -> QueueStatements {
        let table = Self::quote(queue.as_str());
        let rowversion_name = format!("{queue}_Index_RowVersion");
        let expires_name = format!("{queue}_Index_Expires");
        let vars = [
            ("table", table.as_str()),
            ("index_rowversion", &Self::quote(&rowversion_name)),
            ("index_expires", &Self::quote(&expires_name)),
        ];
        let create_queue = [QUEUE_TABLE, INDEX_ROWVERSION, INDEX_EXPIRES]
            .iter()
            .map(|script| render(script, &vars))
            .collect::<Vec<_>>()
            .join("\n");
        QueueStatements {
            create_queue,
            add_body_string: None,
            indexes: vec![
                IndexStatement {
                    name: rowversion_name.clone(),
                    create: render(INDEX_ROWVERSION, &vars),
                },
                IndexStatement {
                    name: expires_name.clone(),
                    create: render(INDEX_EXPIRES, &vars),
                },
            ],
            insert: format!(
                r#"INSERT INTO {table} ("Id", "CorrelationId", "ReplyToAddress", "Recoverable", "Expires", "Headers", "Body")
VALUES (?1, ?2, ?3, 1,
    COALESCE(?7,
        CASE WHEN ?4 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (?4 / 1000.0) || ' seconds') END),
    ?5, ?6)"#
            ),
            receive: format!(
                r#"WITH message AS (
    SELECT "RowVersion" FROM {table}
    ORDER BY "RowVersion"
    LIMIT 1)
DELETE FROM {table}
WHERE "RowVersion" IN (SELECT "RowVersion" FROM message)
RETURNING "Id", "CorrelationId", "ReplyToAddress", "Headers", "Body",
    CASE WHEN "Expires" IS NULL THEN 0
         WHEN "Expires" > {NOW} THEN 0
         ELSE 1 END AS "Expired",
    "Expires""#
            ),
            purge_expired: format!(
                r#"DELETE FROM {table}
WHERE "RowVersion" IN (
    SELECT "RowVersion" FROM {table}
    WHERE "Expires" < {NOW}
    LIMIT ?1)"#
            ),
            peek: format!(
                r#"SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0) AS "Estimate"
FROM {table}"#
            ),
            drop_queue: format!("DROP TABLE IF EXISTS {table}"),
        }
    }

    fn shared_statements(_schema: &SchemaName) -> SharedStatements {
        SharedStatements {
            create_schema: None,
            create_subscriptions: SUBSCRIPTIONS.to_string(),
            create_dead_letters: DEAD_LETTERS.to_string(),
            create_delayed: DELAYED.to_string(),
            insert_delayed: r#"INSERT INTO "NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES (?1, ?2,
    COALESCE(?10, strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (COALESCE(?9, 0) / 1000.0) || ' seconds')),
    ?3, ?4,
    COALESCE(?8,
        CASE WHEN ?5 IS NULL THEN NULL
             ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || (?5 / 1000.0) || ' seconds') END),
    ?6, ?7)"#
                .to_string(),
            take_due_delayed: format!(
                r#"WITH due AS (
    SELECT "RowVersion" FROM "NimbusDelayedMessages"
    WHERE "Due" <= {NOW}
    ORDER BY "Due", "RowVersion"
    LIMIT ?1)
DELETE FROM "NimbusDelayedMessages"
WHERE "RowVersion" IN (SELECT "RowVersion" FROM due)
RETURNING "Id", "Destination", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body""#
            ),
            insert_dead_letter: format!(
                r#"INSERT INTO "NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES (?1, ?2, ?3, ?4, {NOW})
ON CONFLICT ("MessageId") DO NOTHING"#
            ),
            take_dead_letter: r#"DELETE FROM "NimbusDeadLetters"
WHERE "MessageId" = ?1
RETURNING "OriginalDestination", "Body""#
                .to_string(),
            subscribe: format!(
                r#"INSERT INTO "NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt")
VALUES (?1, ?2, {NOW})
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = excluded."LastSeenAt""#
            ),
            subscribers: r#"SELECT "SubscriberQueue" FROM "NimbusSubscriptions"
WHERE "TopicName" = ?1
    AND "LastSeenAt" >= strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?2 || ' seconds')
ORDER BY "SubscriberQueue""#
                .to_string(),
            refresh_subscription: format!(
                r#"UPDATE "NimbusSubscriptions"
SET "LastSeenAt" = {NOW}
WHERE "TopicName" = ?1 AND "SubscriberQueue" = ?2"#
            ),
            sweep_subscriptions: r#"DELETE FROM "NimbusSubscriptions"
WHERE "LastSeenAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?1 || ' seconds')
RETURNING "TopicName", "SubscriberQueue""#
                .to_string(),
            queue_subscriptions: r#"SELECT count(*) FROM "NimbusSubscriptions"
WHERE "SubscriberQueue" = ?1"#
                .to_string(),
            has_last_seen_at: "SELECT 1 FROM pragma_table_info('NimbusSubscriptions') \
                WHERE name = 'LastSeenAt' AND ?1 = 'main'"
                .to_string(),
            upgrade_last_seen_at: UPGRADE_LAST_SEEN_AT.to_string(),
            messages: shared_table(),
            list_indexes: "SELECT name FROM sqlite_schema \
                           WHERE type = 'index' AND ?1 = 'main' AND tbl_name = ?2"
                .to_string(),
            table_exists: "SELECT 1 FROM sqlite_schema \
                           WHERE type = 'table' AND ?1 = 'main' AND name = ?2"
                .to_string(),
        }
    }
}

fn shared_table() -> SharedTableStatements {
    let table = "\"NimbusMessages\"";
    let index_create = SHARED_MESSAGES
        .split_once("CREATE INDEX")
        .map(|(_, index)| format!("CREATE INDEX{index}"))
        .unwrap_or_default();
    let later = |ms: &str| {
        format!("strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ({ms} / 1000.0) || ' seconds')")
    };
    SharedTableStatements {
        create: SHARED_MESSAGES.to_string(),
        index: IndexStatement {
            name: "IX_NimbusMessages_Dequeue".into(),
            create: index_create,
        },
        insert: format!(
            r#"INSERT INTO {table} ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt")
VALUES (?1, ?2, ?3,
    COALESCE(?7, {visible}),
    COALESCE(?5, CASE WHEN ?4 IS NULL THEN NULL ELSE {expires} END))"#,
            visible = later("COALESCE(?6, 0)"),
            expires = later("?4"),
        ),
        receive: format!(
            r#"WITH message AS (
    SELECT "MessageId" FROM {table}
    WHERE "Destination" = ?1 AND "VisibleAfter" <= {NOW}
    ORDER BY "VisibleAfter", "MessageId"
    LIMIT 1)
DELETE FROM {table}
WHERE "MessageId" IN (SELECT "MessageId" FROM message)
RETURNING "MessageId", NULL, NULL, NULL, "Body",
    CASE WHEN "ExpiresAt" IS NULL THEN 0
         WHEN "ExpiresAt" > {NOW} THEN 0
         ELSE 1 END AS "Expired",
    "ExpiresAt""#
        ),
        peek: format!(
            r#"SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM {table}
    WHERE "Destination" = ?1 AND "VisibleAfter" <= {NOW}
    LIMIT 10000)"#
        ),
        purge_expired: format!(
            r#"DELETE FROM {table}
WHERE "MessageId" IN (
    SELECT "MessageId" FROM {table}
    WHERE "Destination" = ?1 AND "ExpiresAt" < {NOW}
    LIMIT ?2)"#
        ),
        delete_destination: format!(r#"DELETE FROM {table} WHERE "Destination" = ?1"#),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_values_are_parameters() {
        let s = Sqlite::queue_statements(
            &SchemaName::new("main").unwrap(),
            &QueueName::new("it's \"q\" [x]").unwrap(),
        );
        assert!(s.insert.contains(r#"INSERT INTO "it's ""q"" [x]""#));
        for p in ["?1", "?2", "?3", "?4", "?5", "?6", "?7"] {
            assert!(s.insert.contains(p));
        }
        assert!(!s.receive.contains('?'));
        assert!(!s.create_queue.contains('{'));
    }
}
