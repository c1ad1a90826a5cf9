//! PostgreSQL SQL. Each statement mirrors the SQL Server statement of seed 000 in structure:
//! `FOR UPDATE SKIP LOCKED` stands where T-SQL has `WITH (UPDLOCK, READPAST, ROWLOCK)`,
//! `RETURNING` where it has `OUTPUT deleted.*`, `now() AT TIME ZONE 'utc'` for `GETUTCDATE()`.

use super::{
    render, Dialect, IndexStatement, QueueStatements, SharedStatements, SharedTableStatements,
};
use crate::names::{QueueName, SchemaName};

const SCHEMA: &str = include_str!("../../../schema/postgres/schema.sql");
const QUEUE_TABLE: &str = include_str!("../../../schema/postgres/queue_table.sql");
const INDEX_ROWVERSION: &str = include_str!("../../../schema/postgres/queue_index_rowversion.sql");
const INDEX_EXPIRES: &str = include_str!("../../../schema/postgres/queue_index_expires.sql");
const SUBSCRIPTIONS: &str = include_str!("../../../schema/postgres/subscriptions.sql");
const DEAD_LETTERS: &str = include_str!("../../../schema/postgres/dead_letters.sql");
const DELAYED: &str = include_str!("../../../schema/postgres/delayed_messages.sql");
const SHARED_MESSAGES: &str = include_str!("../../../schema/postgres/shared_messages.sql");
const UPGRADE_LAST_SEEN_AT: &str =
    include_str!("../../../schema/postgres/upgrade_subscriptions_last_seen_at.sql");

/// The database's current UTC time, as `Expires`, `Due` and `LastSeenAt` store it.
const NOW: &str = "(now() AT TIME ZONE 'utc')";

/// PostgreSQL identifiers are at most 63 bytes; index names add `_Index_RowVersion` (17).
const MAX_IDENTIFIER: usize = 63;

/// The PostgreSQL dialect.
pub(crate) struct Postgres;

impl Dialect for Postgres {
    const NAME: &'static str = "PostgreSQL";
    const MAX_QUEUE_NAME: usize = MAX_IDENTIFIER - "_Index_RowVersion".len();
    const MAX_SCHEMA_NAME: usize = MAX_IDENTIFIER;

    fn quote(identifier: &str) -> String {
        format!("\"{}\"", identifier.replace('"', "\"\""))
    }

    fn queue_statements(schema: &SchemaName, queue: &QueueName) -> QueueStatements {
        let table = format!(
            "{}.{}",
            Self::quote(schema.as_str()),
            Self::quote(queue.as_str())
        );
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
VALUES ($1, $2, $3, TRUE,
    COALESCE($7::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE {NOW} + $4::bigint * interval '1 millisecond' END),
    $5, $6)"#
            ),
            receive: format!(
                r#"WITH message AS (
    SELECT "RowVersion" FROM {table}
    ORDER BY "RowVersion"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {table} AS queue
USING message
WHERE queue."RowVersion" = message."RowVersion"
RETURNING queue."Id"::text, queue."CorrelationId", queue."ReplyToAddress", queue."Headers", queue."Body",
    CASE WHEN queue."Expires" IS NULL THEN FALSE
         WHEN queue."Expires" > {NOW} THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."Expires""#
            ),
            purge_expired: format!(
                r#"DELETE FROM {table}
WHERE "RowVersion" IN (
    SELECT "RowVersion" FROM {table}
    WHERE "Expires" < {NOW}
    LIMIT $1
    FOR UPDATE SKIP LOCKED)"#
            ),
            peek: format!(
                r#"SELECT COALESCE(max("RowVersion") - min("RowVersion") + 1, 0)::bigint AS "Estimate"
FROM {table}"#
            ),
            drop_queue: format!("DROP TABLE IF EXISTS {table}"),
        }
    }

    fn shared_statements(schema: &SchemaName) -> SharedStatements {
        let quoted = Self::quote(schema.as_str());
        let vars = [("schema", quoted.as_str())];
        SharedStatements {
            create_schema: Some(render(SCHEMA, &vars)),
            create_subscriptions: render(SUBSCRIPTIONS, &vars),
            create_dead_letters: render(DEAD_LETTERS, &vars),
            create_delayed: render(DELAYED, &vars),
            insert_delayed: format!(
                r#"INSERT INTO {quoted}."NimbusDelayedMessages" ("Id", "Destination", "Due", "CorrelationId", "ReplyToAddress", "Expires", "Headers", "Body")
VALUES ($1, $2,
    COALESCE($10::timestamp, {NOW} + COALESCE($9::bigint, 0) * interval '1 millisecond'),
    $3, $4,
    COALESCE($8::timestamp,
        CASE WHEN $5::bigint IS NULL THEN NULL
             ELSE {NOW} + $5::bigint * interval '1 millisecond' END),
    $6, $7)"#
            ),
            take_due_delayed: format!(
                r#"WITH due AS (
    SELECT "RowVersion" FROM {quoted}."NimbusDelayedMessages"
    WHERE "Due" <= {NOW}
    ORDER BY "Due", "RowVersion"
    LIMIT $1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {quoted}."NimbusDelayedMessages" AS delayed
USING due
WHERE delayed."RowVersion" = due."RowVersion"
RETURNING delayed."Id"::text, delayed."Destination", delayed."CorrelationId", delayed."ReplyToAddress",
    delayed."Expires", delayed."Headers", delayed."Body""#
            ),
            insert_dead_letter: format!(
                r#"INSERT INTO {quoted}."NimbusDeadLetters" ("MessageId", "OriginalDestination", "Body", "DeliveryAttempts", "FailedAt")
VALUES ($1, $2, $3, $4, {NOW})
ON CONFLICT ("MessageId") DO NOTHING"#
            ),
            take_dead_letter: format!(
                r#"DELETE FROM {quoted}."NimbusDeadLetters"
WHERE "MessageId" = $1
RETURNING "OriginalDestination", "Body""#
            ),
            subscribe: format!(
                r#"INSERT INTO {quoted}."NimbusSubscriptions" ("TopicName", "SubscriberQueue", "LastSeenAt")
VALUES ($1, $2, {NOW})
ON CONFLICT ("TopicName", "SubscriberQueue")
DO UPDATE SET "LastSeenAt" = EXCLUDED."LastSeenAt""#
            ),
            subscribers: format!(
                r#"SELECT "SubscriberQueue" FROM {quoted}."NimbusSubscriptions"
WHERE "TopicName" = $1
    AND "LastSeenAt" >= {NOW} - $2::bigint * interval '1 second'
ORDER BY "SubscriberQueue""#
            ),
            refresh_subscription: format!(
                r#"UPDATE {quoted}."NimbusSubscriptions"
SET "LastSeenAt" = {NOW}
WHERE "TopicName" = $1 AND "SubscriberQueue" = $2"#
            ),
            sweep_subscriptions: format!(
                r#"DELETE FROM {quoted}."NimbusSubscriptions"
WHERE "LastSeenAt" < {NOW} - $1::bigint * interval '1 second'
RETURNING "TopicName", "SubscriberQueue""#
            ),
            queue_subscriptions: format!(
                r#"SELECT count(*) FROM {quoted}."NimbusSubscriptions"
WHERE "SubscriberQueue" = $1"#
            ),
            has_last_seen_at: "SELECT 1 FROM information_schema.columns \
                WHERE table_schema = $1 AND table_name = 'NimbusSubscriptions' AND column_name = 'LastSeenAt'"
                .to_string(),
            upgrade_last_seen_at: render(UPGRADE_LAST_SEEN_AT, &vars),
            messages: shared_table(&quoted, render(SHARED_MESSAGES, &vars)),
            list_indexes: "SELECT indexname::text FROM pg_catalog.pg_indexes \
                           WHERE schemaname = $1 AND tablename = $2"
                .to_string(),
            table_exists: "SELECT 1 FROM information_schema.tables \
                           WHERE table_schema = $1 AND table_name = $2"
                .to_string(),
        }
    }
}

fn shared_table(quoted_schema: &str, create: String) -> SharedTableStatements {
    let table = format!("{quoted_schema}.\"NimbusMessages\"");
    let index_create = create
        .split_once("CREATE INDEX")
        .map(|(_, index)| format!("CREATE INDEX{index}"))
        .unwrap_or_default();
    SharedTableStatements {
        create,
        index: IndexStatement {
            name: "IX_NimbusMessages_Dequeue".into(),
            create: index_create,
        },
        insert: format!(
            r#"INSERT INTO {table} ("MessageId", "Destination", "Body", "VisibleAfter", "ExpiresAt")
VALUES ($1, $2, $3,
    COALESCE($7::timestamp, {NOW} + COALESCE($6::bigint, 0) * interval '1 millisecond'),
    COALESCE($5::timestamp,
        CASE WHEN $4::bigint IS NULL THEN NULL
             ELSE {NOW} + $4::bigint * interval '1 millisecond' END))"#
        ),
        receive: format!(
            r#"WITH message AS (
    SELECT "MessageId" FROM {table}
    WHERE "Destination" = $1 AND "VisibleAfter" <= {NOW}
    ORDER BY "VisibleAfter", "MessageId"
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
DELETE FROM {table} AS queue
USING message
WHERE queue."MessageId" = message."MessageId"
RETURNING queue."MessageId"::text, NULL::varchar, NULL::varchar, NULL::text, queue."Body",
    CASE WHEN queue."ExpiresAt" IS NULL THEN FALSE
         WHEN queue."ExpiresAt" > {NOW} THEN FALSE
         ELSE TRUE END AS "Expired",
    queue."ExpiresAt""#
        ),
        peek: format!(
            r#"SELECT count(*) AS "Estimate" FROM (
    SELECT 1 FROM {table}
    WHERE "Destination" = $1 AND "VisibleAfter" <= {NOW}
    LIMIT 10000) AS visible"#
        ),
        purge_expired: format!(
            r#"DELETE FROM {table}
WHERE "MessageId" IN (
    SELECT "MessageId" FROM {table}
    WHERE "Destination" = $1 AND "ExpiresAt" < {NOW}
    LIMIT $2
    FOR UPDATE SKIP LOCKED)"#
        ),
        delete_destination: format!(r#"DELETE FROM {table} WHERE "Destination" = $1"#),
    }
}

/// Key of the advisory lock that serializes schema creation across instances.
pub(crate) const SCHEMA_LOCK_KEY: i64 = 0x4e49_4d42_5553; // "NIMBUS"

/// Takes the schema-creation lock for the rest of the transaction.
pub(crate) const SCHEMA_LOCK: &str = "SELECT pg_advisory_xact_lock($1)";

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(schema: &str, queue: &str) -> QueueStatements {
        Postgres::queue_statements(
            &SchemaName::new(schema).unwrap(),
            &QueueName::new(queue).unwrap(),
        )
    }

    #[test]
    fn identifiers_are_quoted_with_quotes_doubled() {
        let s = statements("my \"schema\"", "it's \"q\" [x]");
        assert!(s
            .insert
            .contains(r#"INSERT INTO "my ""schema"""."it's ""q"" [x]""#));
        assert!(s
            .create_queue
            .contains(r#""my ""schema"""."it's ""q"" [x]""#));
        assert!(s.indexes[0]
            .create
            .contains(r#""it's ""q"" [x]_Index_RowVersion""#));
    }

    #[test]
    fn values_are_parameters() {
        let s = statements("public", "Sales");
        for p in ["$1", "$2", "$3", "$4", "$5", "$6", "$7"] {
            assert!(s.insert.contains(p), "insert lacks {p}");
        }
        assert!(s.receive.contains("FOR UPDATE SKIP LOCKED"));
        assert!(s.receive.contains("ORDER BY \"RowVersion\""));
        assert!(!s.receive.contains('$'), "receive takes no values");
    }

    #[test]
    fn index_statements_match_the_seed() {
        let s = statements("public", "Sales");
        assert_eq!(s.indexes[0].name, "Sales_Index_RowVersion");
        assert_eq!(s.indexes[1].name, "Sales_Index_Expires");
        let expires = &s.indexes[1].create;
        assert!(expires.contains("\"Expires\" ASC"));
        assert!(expires.contains("INCLUDE"));
        assert!(expires.contains("\"Id\",\n    \"RowVersion\""));
    }

    #[test]
    fn schema_scripts_have_no_placeholders_left() {
        let s = statements("public", "Sales");
        let shared = Postgres::shared_statements(&SchemaName::new("public").unwrap());
        for text in [
            &s.create_queue,
            &s.indexes[0].create,
            &s.indexes[1].create,
            &shared.create_subscriptions,
            &shared.create_dead_letters,
        ] {
            assert!(!text.contains('{'), "unrendered placeholder in {text}");
        }
    }
}
