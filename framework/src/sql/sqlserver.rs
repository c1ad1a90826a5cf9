//! SQL Server (2016+, Azure SQL) T-SQL, the statements of seed 000.
//!
//! Every statement has a PostgreSQL twin of the same structure in [`super::postgres`]; they differ
//! only where the dialect must:
//!
//! | here (T-SQL) | PostgreSQL twin |
//! | --- | --- |
//! | `WITH (UPDLOCK, READPAST, ROWLOCK)` on `SELECT TOP (1)` | `FOR UPDATE SKIP LOCKED` with `LIMIT 1` |
//! | `DELETE FROM message OUTPUT deleted.…` | `DELETE … USING message RETURNING …` |
//! | `GETUTCDATE()`, `SYSUTCDATETIME()` | `now() AT TIME ZONE 'utc'` |
//! | `DATEADD(millisecond, …)` | `+ … * interval '1 millisecond'` |
//! | `sp_getapplock` (transaction owner) | `pg_advisory_xact_lock` |
//! | `IF NOT EXISTS (… sys.tables / sys.indexes …) CREATE …` | `CREATE … IF NOT EXISTS` |
//! | `UPDATE … WITH (UPDLOCK, SERIALIZABLE); IF @@ROWCOUNT = 0 INSERT` | `INSERT … ON CONFLICT DO UPDATE` |
//!
//! Values are always parameters (`@P1`, `@P2`, … as tiberius binds them); identifiers are quoted
//! with brackets, `]` doubled. Scripts that need names as values (to look them up in the catalog)
//! take the schema as `@P1` and the table as `@P2`.

use super::{
    render, Dialect, IndexStatement, QueueStatements, SharedStatements, SharedTableStatements,
};
use crate::names::{QueueName, SchemaName};

const SCHEMA: &str = include_str!("../../../schema/sqlserver/schema.sql");
const QUEUE_TABLE: &str = include_str!("../../../schema/sqlserver/queue_table.sql");
const INDEX_ROWVERSION: &str = include_str!("../../../schema/sqlserver/queue_index_rowversion.sql");
const INDEX_EXPIRES: &str = include_str!("../../../schema/sqlserver/queue_index_expires.sql");
const BODY_STRING: &str = include_str!("../../../schema/sqlserver/queue_body_string.sql");
const SUBSCRIPTIONS: &str = include_str!("../../../schema/sqlserver/subscriptions.sql");
const DEAD_LETTERS: &str = include_str!("../../../schema/sqlserver/dead_letters.sql");
const DELAYED: &str = include_str!("../../../schema/sqlserver/delayed_messages.sql");
const SHARED_MESSAGES: &str = include_str!("../../../schema/sqlserver/shared_messages.sql");
const UPGRADE_LAST_SEEN_AT: &str =
    include_str!("../../../schema/sqlserver/upgrade_subscriptions_last_seen_at.sql");

/// SQL Server identifiers (`sysname`) are at most 128 characters.
const MAX_IDENTIFIER: usize = 128;

/// Index names on SQL Server are unique per table, so they are the seed's names exactly.
pub(crate) const INDEX_ROWVERSION_NAME: &str = "Index_RowVersion";
/// See [`INDEX_ROWVERSION_NAME`].
pub(crate) const INDEX_EXPIRES_NAME: &str = "Index_Expires";

/// The application lock that serializes schema creation across instances (the twin of
/// PostgreSQL's advisory lock). Held by the transaction; fails after 60 s rather than hang.
pub(crate) const SCHEMA_LOCK: &str = "DECLARE @lock_result int;
EXEC @lock_result = sys.sp_getapplock
    @Resource = N'Nimbus.Schema',
    @LockMode = N'Exclusive',
    @LockOwner = N'Transaction',
    @LockTimeout = 60000;
IF @lock_result < 0
    THROW 51000, N'Nimbus could not take the schema creation lock (sp_getapplock) within 60 s.', 1;";

/// The SQL Server dialect.
pub(crate) struct SqlServer;

/// Wraps an index statement so that it only runs when the index is missing. `@P1`/`@P2` are the
/// schema and table names as values.
fn create_index_if_missing(index_name: &str, statement: &str) -> String {
    format!(
        "IF NOT EXISTS (
    SELECT 1 FROM sys.indexes
    WHERE [object_id] = OBJECT_ID(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2))
        AND [name] = N'{index_name}')
{statement};"
    )
}

impl Dialect for SqlServer {
    const NAME: &'static str = "SQL Server";
    const MAX_QUEUE_NAME: usize = MAX_IDENTIFIER;
    const MAX_SCHEMA_NAME: usize = MAX_IDENTIFIER;

    fn quote(identifier: &str) -> String {
        format!("[{}]", identifier.replace(']', "]]"))
    }

    fn queue_statements(schema: &SchemaName, queue: &QueueName) -> QueueStatements {
        let table = format!(
            "{}.{}",
            Self::quote(schema.as_str()),
            Self::quote(queue.as_str())
        );
        let vars = [("table", table.as_str())];
        let index_rowversion = render(INDEX_ROWVERSION, &vars);
        let index_expires = render(INDEX_EXPIRES, &vars);
        let create_queue = [
            render(QUEUE_TABLE, &vars),
            create_index_if_missing(INDEX_ROWVERSION_NAME, index_rowversion.trim_end()),
            create_index_if_missing(INDEX_EXPIRES_NAME, index_expires.trim_end()),
        ]
        .join("\n");
        QueueStatements {
            create_queue,
            add_body_string: Some(render(BODY_STRING, &vars)),
            indexes: vec![
                IndexStatement {
                    name: INDEX_ROWVERSION_NAME.to_string(),
                    create: index_rowversion,
                },
                IndexStatement {
                    name: INDEX_EXPIRES_NAME.to_string(),
                    create: index_expires,
                },
            ],
            insert: format!(
                "INSERT INTO {table} ([Id], [CorrelationId], [ReplyToAddress], [Recoverable], [Expires], [Headers], [Body])
VALUES (@P1, @P2, @P3, 1,
    COALESCE(@P7,
        CASE WHEN @P4 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P4 % 1000, DATEADD(second, @P4 / 1000, GETUTCDATE())) END),
    @P5, @P6);"
            ),
            receive: format!(
                "WITH message AS (
    SELECT TOP (1) *
    FROM {table} WITH (UPDLOCK, READPAST, ROWLOCK)
    ORDER BY [RowVersion])
DELETE FROM message
OUTPUT deleted.[Id], deleted.[CorrelationId], deleted.[ReplyToAddress], deleted.[Headers], deleted.[Body],
    CAST(CASE WHEN deleted.[Expires] IS NULL THEN 0
              WHEN deleted.[Expires] > GETUTCDATE() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    deleted.[Expires];"
            ),
            purge_expired: format!(
                "DELETE FROM {table}
WHERE [RowVersion] IN (
    SELECT TOP (@P1) [RowVersion] FROM {table} WITH (READPAST)
    WHERE [Expires] < GETUTCDATE());"
            ),
            peek: format!(
                "SELECT ISNULL(MAX([RowVersion]) - MIN([RowVersion]) + 1, 0) AS [Estimate]
FROM {table} WITH (READPAST);"
            ),
            drop_queue: format!("DROP TABLE IF EXISTS {table};"),
        }
    }

    fn shared_statements(schema: &SchemaName) -> SharedStatements {
        let quoted = Self::quote(schema.as_str());
        let vars = [("schema", quoted.as_str())];
        SharedStatements {
            create_schema: Some(SCHEMA.to_string()),
            create_subscriptions: render(SUBSCRIPTIONS, &vars),
            create_dead_letters: render(DEAD_LETTERS, &vars),
            create_delayed: render(DELAYED, &vars),
            insert_delayed: format!(
                "INSERT INTO {quoted}.[NimbusDelayedMessages] ([Id], [Destination], [Due], [CorrelationId], [ReplyToAddress], [Expires], [Headers], [Body])
VALUES (@P1, @P2,
    COALESCE(@P10, DATEADD(millisecond, COALESCE(@P9, 0) % 1000, DATEADD(second, COALESCE(@P9, 0) / 1000, SYSUTCDATETIME()))),
    @P3, @P4,
    COALESCE(@P8,
        CASE WHEN @P5 IS NULL THEN NULL
             ELSE DATEADD(millisecond, @P5 % 1000, DATEADD(second, @P5 / 1000, GETUTCDATE())) END),
    @P6, @P7);"
            ),
            take_due_delayed: format!(
                "WITH due AS (
    SELECT TOP (@P1) *
    FROM {quoted}.[NimbusDelayedMessages] WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Due] <= SYSUTCDATETIME()
    ORDER BY [Due], [RowVersion])
DELETE FROM due
OUTPUT deleted.[Id], deleted.[Destination], deleted.[CorrelationId], deleted.[ReplyToAddress],
    deleted.[Expires], deleted.[Headers], deleted.[Body];"
            ),
            insert_dead_letter: format!(
                "INSERT INTO {quoted}.[NimbusDeadLetters] ([MessageId], [OriginalDestination], [Body], [DeliveryAttempts], [FailedAt])
SELECT @P1, @P2, @P3, @P4, SYSUTCDATETIME()
WHERE NOT EXISTS (
    SELECT 1 FROM {quoted}.[NimbusDeadLetters] WITH (UPDLOCK, HOLDLOCK)
    WHERE [MessageId] = @P1);"
            ),
            take_dead_letter: format!(
                "DELETE FROM {quoted}.[NimbusDeadLetters]
OUTPUT deleted.[OriginalDestination], deleted.[Body]
WHERE [MessageId] = @P1;"
            ),
            subscribe: format!(
                "UPDATE {quoted}.[NimbusSubscriptions] WITH (UPDLOCK, SERIALIZABLE)
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;
IF @@ROWCOUNT = 0
    INSERT INTO {quoted}.[NimbusSubscriptions] ([TopicName], [SubscriberQueue], [LastSeenAt])
    VALUES (@P1, @P2, SYSUTCDATETIME());"
            ),
            subscribers: format!(
                "SELECT [SubscriberQueue] FROM {quoted}.[NimbusSubscriptions]
WHERE [TopicName] = @P1
    AND [LastSeenAt] >= DATEADD(second, -@P2, SYSUTCDATETIME())
ORDER BY [SubscriberQueue];"
            ),
            refresh_subscription: format!(
                "UPDATE {quoted}.[NimbusSubscriptions]
SET [LastSeenAt] = SYSUTCDATETIME()
WHERE [TopicName] = @P1 AND [SubscriberQueue] = @P2;"
            ),
            sweep_subscriptions: format!(
                "DELETE FROM {quoted}.[NimbusSubscriptions]
OUTPUT deleted.[TopicName], deleted.[SubscriberQueue]
WHERE [LastSeenAt] < DATEADD(second, -@P1, SYSUTCDATETIME());"
            ),
            queue_subscriptions: format!(
                "SELECT COUNT_BIG(*) FROM {quoted}.[NimbusSubscriptions]
WHERE [SubscriberQueue] = @P1;"
            ),
            has_last_seen_at: "SELECT 1 AS [Present]
WHERE COL_LENGTH(QUOTENAME(@P1) + N'.[NimbusSubscriptions]', N'LastSeenAt') IS NOT NULL;"
                .to_string(),
            upgrade_last_seen_at: render(UPGRADE_LAST_SEEN_AT, &vars),
            messages: shared_table(&quoted, render(SHARED_MESSAGES, &vars)),
            list_indexes: "SELECT i.[name] FROM sys.indexes AS i
JOIN sys.tables AS t ON t.[object_id] = i.[object_id]
WHERE t.[schema_id] = SCHEMA_ID(@P1) AND t.[name] = @P2 AND i.[name] IS NOT NULL;"
                .to_string(),
            table_exists: "SELECT 1 FROM sys.tables
WHERE [schema_id] = SCHEMA_ID(@P1) AND [name] = @P2;"
                .to_string(),
        }
    }
}

/// `@Pn` milliseconds after the database's current UTC time.
fn after_ms(ms: &str) -> String {
    format!("DATEADD(millisecond, {ms} % 1000, DATEADD(second, {ms} / 1000, SYSUTCDATETIME()))")
}

fn shared_table(quoted_schema: &str, create: String) -> SharedTableStatements {
    let table = format!("{quoted_schema}.[NimbusMessages]");
    let index_create = format!(
        "CREATE INDEX [IX_NimbusMessages_Dequeue]
    ON {table} ([Destination], [VisibleAfter])
    INCLUDE ([ExpiresAt]);"
    );
    SharedTableStatements {
        create,
        index: IndexStatement {
            name: "IX_NimbusMessages_Dequeue".into(),
            create: index_create,
        },
        insert: format!(
            "INSERT INTO {table} ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt])
VALUES (@P1, @P2, @P3,
    COALESCE(@P7, {visible}),
    COALESCE(@P5, CASE WHEN @P4 IS NULL THEN NULL ELSE {expires} END));",
            visible = after_ms("COALESCE(@P6, 0)"),
            expires = after_ms("@P4"),
        ),
        receive: format!(
            "WITH message AS (
    SELECT TOP (1) *
    FROM {table} WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()
    ORDER BY [VisibleAfter], [MessageId])
DELETE FROM message
OUTPUT deleted.[MessageId], CAST(NULL AS varchar(255)), CAST(NULL AS varchar(255)),
    CAST(NULL AS nvarchar(max)), deleted.[Body],
    CAST(CASE WHEN deleted.[ExpiresAt] IS NULL THEN 0
              WHEN deleted.[ExpiresAt] > SYSUTCDATETIME() THEN 0
              ELSE 1 END AS bit) AS [Expired],
    deleted.[ExpiresAt];"
        ),
        peek: format!(
            "SELECT COUNT_BIG(*) AS [Estimate] FROM (
    SELECT TOP (10000) 1 AS [Visible]
    FROM {table} WITH (READPAST)
    WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()) AS [visible];"
        ),
        purge_expired: format!(
            "DELETE FROM {table}
WHERE [MessageId] IN (
    SELECT TOP (@P2) [MessageId] FROM {table} WITH (READPAST)
    WHERE [Destination] = @P1 AND [ExpiresAt] < SYSUTCDATETIME());"
        ),
        delete_destination: format!("DELETE FROM {table} WHERE [Destination] = @P1;"),
    }
}

#[cfg(test)]
mod tests {
    //! Text tests: SQL Server cannot run here, so every statement is checked for what the seed and
    //! SQL Server's documentation require: values only as `@Pn` parameters, identifiers in
    //! brackets with `]` doubled, the locking hints, and nothing of a name outside its brackets.

    use super::*;

    const AWKWARD_SCHEMA: &str = "Zeb]ra 'x'";
    const AWKWARD_QUEUE: &str = "it's [Wal]] rus";

    fn statements() -> (QueueStatements, SharedStatements) {
        let schema = SchemaName::new(AWKWARD_SCHEMA).unwrap();
        let queue = QueueName::new(AWKWARD_QUEUE).unwrap();
        (
            SqlServer::queue_statements(&schema, &queue),
            SqlServer::shared_statements(&schema),
        )
    }

    fn all_texts() -> Vec<(&'static str, String)> {
        let (q, s) = statements();
        let mut texts = vec![
            ("create_queue", q.create_queue.clone()),
            ("add_body_string", q.add_body_string.clone().unwrap()),
            ("insert", q.insert.clone()),
            ("receive", q.receive.clone()),
            ("peek", q.peek.clone()),
            ("create_schema", s.create_schema.clone().unwrap()),
            ("create_subscriptions", s.create_subscriptions.clone()),
            ("create_dead_letters", s.create_dead_letters.clone()),
            ("create_delayed", s.create_delayed.clone()),
            ("insert_delayed", s.insert_delayed.clone()),
            ("take_due_delayed", s.take_due_delayed.clone()),
            ("insert_dead_letter", s.insert_dead_letter.clone()),
            ("take_dead_letter", s.take_dead_letter.clone()),
            ("refresh_subscription", s.refresh_subscription.clone()),
            ("sweep_subscriptions", s.sweep_subscriptions.clone()),
            ("queue_subscriptions", s.queue_subscriptions.clone()),
            ("has_last_seen_at", s.has_last_seen_at.clone()),
            ("upgrade_last_seen_at", s.upgrade_last_seen_at.clone()),
            ("drop_queue", q.drop_queue.clone()),
            ("messages.create", s.messages.create.clone()),
            ("messages.insert", s.messages.insert.clone()),
            ("messages.receive", s.messages.receive.clone()),
            ("messages.peek", s.messages.peek.clone()),
            ("messages.purge_expired", s.messages.purge_expired.clone()),
            (
                "messages.delete_destination",
                s.messages.delete_destination.clone(),
            ),
            ("purge_expired", q.purge_expired.clone()),
            ("subscribe", s.subscribe.clone()),
            ("subscribers", s.subscribers.clone()),
            ("list_indexes", s.list_indexes.clone()),
            ("table_exists", s.table_exists.clone()),
            ("schema_lock", SCHEMA_LOCK.to_string()),
        ];
        for i in &q.indexes {
            texts.push(("index", i.create.clone()));
        }
        texts
    }

    /// The text with every bracket-quoted identifier and every N'…' literal removed.
    fn outside_identifiers(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '[' => {
                    // Skip to the closing bracket; "]]" is an escaped bracket inside.
                    while let Some(c) = chars.next() {
                        if c == ']' {
                            if chars.peek() == Some(&']') {
                                chars.next();
                            } else {
                                break;
                            }
                        }
                    }
                    out.push_str("[]");
                }
                '\'' => {
                    while let Some(c) = chars.next() {
                        if c == '\'' {
                            if chars.peek() == Some(&'\'') {
                                chars.next();
                            } else {
                                break;
                            }
                        }
                    }
                    out.push_str("''");
                }
                '-' if chars.peek() == Some(&'-') => {
                    // A comment runs to the end of the line.
                    for c in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                    out.push('\n');
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn identifiers_are_bracketed_with_closing_brackets_doubled() {
        let (q, s) = statements();
        let table = "[Zeb]]ra 'x'].[it's [Wal]]]] rus]";
        for text in [&q.create_queue, &q.insert, &q.receive, &q.peek] {
            assert!(text.contains(table), "{text}");
        }
        assert!(s
            .create_subscriptions
            .contains("[Zeb]]ra 'x'].[NimbusSubscriptions]"));
        assert!(s.subscribe.contains("[Zeb]]ra 'x'].[NimbusSubscriptions]"));
    }

    #[test]
    fn names_never_appear_outside_brackets_or_as_literals() {
        for (what, text) in all_texts() {
            let bare = outside_identifiers(&text);
            for fragment in ["Zeb", "Wal", "rus", "'x'"] {
                assert!(
                    !bare.contains(fragment),
                    "{what}: {fragment:?} outside brackets in\n{text}"
                );
            }
            // No value is formatted into a string literal: the only literals are fixed words.
            for literal in text.split("N'").skip(1) {
                let value = literal.split('\'').next().unwrap_or("");
                assert!(
                    !value.contains("Wal") && !value.contains("Zeb"),
                    "{what}: a name inside a literal: {value:?}"
                );
            }
        }
    }

    #[test]
    fn values_are_parameters_in_order() {
        let (q, s) = statements();
        for p in ["@P1", "@P2", "@P3", "@P4", "@P5", "@P6", "@P7"] {
            assert!(q.insert.contains(p), "insert lacks {p}");
        }
        assert!(!q.insert.contains("@P8"));
        for p in [
            "@P1,", "@P2,", "@P3,", "@P4,", "@P5 ", "@P6,", "@P7)", "@P8,", "@P9,", "@P10,",
        ] {
            assert!(s.insert_delayed.contains(p), "insert_delayed lacks {p}");
        }
        assert!(q.purge_expired.contains("TOP (@P1)"));
        assert!(s.take_due_delayed.contains("TOP (@P1)"));
        assert!(s.take_dead_letter.contains("[MessageId] = @P1"));
        assert!(!q.receive.contains("@P"), "receive takes no values");
        assert!(!q.peek.contains("@P"), "peek takes no values");
        assert!(s.subscribe.contains("@P1") && s.subscribe.contains("@P2"));
        assert!(s.subscribers.contains("[TopicName] = @P1"));
        for ddl in [
            &q.create_queue,
            &s.create_subscriptions,
            &s.create_dead_letters,
        ] {
            assert!(ddl.contains("SCHEMA_ID(@P1)"), "{ddl}");
        }
        assert!(q.create_queue.contains("[name] = @P2"));
    }

    #[test]
    fn receive_deletes_the_oldest_unlocked_row_with_the_seed_hints() {
        let (q, _) = statements();
        assert!(q.receive.contains("SELECT TOP (1) *"));
        assert!(q.receive.contains("WITH (UPDLOCK, READPAST, ROWLOCK)"));
        assert!(q.receive.contains("ORDER BY [RowVersion]"));
        assert!(q.receive.contains("DELETE FROM message"));
        assert!(q.receive.contains("OUTPUT deleted.[Id]"));
        assert!(q.receive.contains("deleted.[Expires] > GETUTCDATE()"));
        assert!(q.peek.contains("WITH (READPAST)"));
        assert!(q.peek.contains("MAX([RowVersion]) - MIN([RowVersion]) + 1"));
    }

    #[test]
    fn delayed_delivery_expiry_and_dead_letters_skip_locked_rows() {
        let (q, s) = statements();
        assert!(s
            .take_due_delayed
            .contains("WITH (UPDLOCK, READPAST, ROWLOCK)"));
        assert!(s.take_due_delayed.contains("[Due] <= SYSUTCDATETIME()"));
        assert!(s.take_due_delayed.contains("DELETE FROM due"));
        assert!(q.purge_expired.contains("WITH (READPAST)"));
        assert!(q.purge_expired.contains("[Expires] < GETUTCDATE()"));
        assert!(s.insert_dead_letter.contains("WITH (UPDLOCK, HOLDLOCK)"));
        assert!(s.insert_dead_letter.contains("WHERE NOT EXISTS"));
        assert!(s
            .take_dead_letter
            .contains("OUTPUT deleted.[OriginalDestination], deleted.[Body]"));
        assert!(s
            .create_delayed
            .contains("CREATE NONCLUSTERED INDEX [Index_Due]"));
    }

    #[test]
    fn subscriptions_heartbeat_lapse_and_sweep_by_database_time() {
        let (q, s) = statements();
        assert!(s
            .subscribers
            .contains("[LastSeenAt] >= DATEADD(second, -@P2, SYSUTCDATETIME())"));
        assert!(s
            .refresh_subscription
            .contains("SET [LastSeenAt] = SYSUTCDATETIME()"));
        assert!(s
            .sweep_subscriptions
            .contains("WHERE [LastSeenAt] < DATEADD(second, -@P1, SYSUTCDATETIME())"));
        assert!(s
            .sweep_subscriptions
            .contains("OUTPUT deleted.[TopicName], deleted.[SubscriberQueue]"));
        assert!(q
            .drop_queue
            .starts_with("DROP TABLE IF EXISTS [Zeb]]ra 'x']."));
        // The seed's upgrade statement, run only when the column is missing.
        assert!(s
            .upgrade_last_seen_at
            .contains("ADD [LastSeenAt] DATETIME2 NOT NULL DEFAULT SYSUTCDATETIME();"));
        assert!(s.upgrade_last_seen_at.contains("COL_LENGTH(QUOTENAME(@P1)"));
    }

    #[test]
    fn shared_table_is_the_seed_003_table_with_skip_locked_dequeue() {
        let (_, s) = statements();
        let m = &s.messages;
        for column in [
            "[MessageId]    UNIQUEIDENTIFIER NOT NULL PRIMARY KEY",
            "[Destination]  NVARCHAR(255)    NOT NULL",
            "[Body]         VARBINARY(MAX)   NOT NULL",
            "[VisibleAfter] DATETIME2        NOT NULL",
            "[ExpiresAt]    DATETIME2        NULL",
        ] {
            assert!(m.create.contains(column), "missing {column}");
        }
        assert!(m.create.contains(
            "CREATE INDEX [IX_NimbusMessages_Dequeue]\n        ON [Zeb]]ra 'x'].[NimbusMessages] ([Destination], [VisibleAfter])\n        INCLUDE ([ExpiresAt]);"
        ));
        assert!(m.receive.contains("WITH (UPDLOCK, READPAST, ROWLOCK)"));
        assert!(m
            .receive
            .contains("WHERE [Destination] = @P1 AND [VisibleAfter] <= SYSUTCDATETIME()"));
        assert!(m.receive.contains("ORDER BY [VisibleAfter], [MessageId]"));
        assert!(
            m.purge_expired.contains("TOP (@P2)")
                && m.purge_expired.contains("[Destination] = @P1")
        );
        for p in ["@P1", "@P2", "@P3", "@P4", "@P5", "@P6", "@P7"] {
            assert!(m.insert.contains(p), "insert lacks {p}");
        }
        assert_eq!(m.index.name, "IX_NimbusMessages_Dequeue");
    }

    #[test]
    fn queue_table_has_the_seed_columns() {
        let (q, _) = statements();
        for column in [
            "[Id]             uniqueidentifier NOT NULL",
            "[CorrelationId]  varchar(255)     NULL",
            "[ReplyToAddress] varchar(255)     NULL",
            "[Recoverable]    bit              NOT NULL",
            "[Expires]        datetime         NULL",
            "[Headers]        nvarchar(max)    NOT NULL",
            "[Body]           varbinary(max)   NULL",
            "[RowVersion]     bigint           IDENTITY(1,1) NOT NULL",
        ] {
            assert!(q.create_queue.contains(column), "missing {column}");
        }
        assert!(q.insert.contains("@P3, 1,"), "Recoverable is always 1");
    }

    #[test]
    fn index_statements_are_the_seeds() {
        let (q, _) = statements();
        let expires = &q.indexes[1].create;
        assert_eq!(q.indexes[1].name, "Index_Expires");
        assert!(expires.starts_with("CREATE NONCLUSTERED INDEX [Index_Expires]\nON "));
        assert!(
            expires.contains("(\n    [Expires] ASC\n)\nINCLUDE\n(\n    [Id],\n    [RowVersion]\n)")
        );
        assert_eq!(q.indexes[0].name, "Index_RowVersion");
        assert!(q.indexes[0]
            .create
            .starts_with("CREATE NONCLUSTERED INDEX [Index_RowVersion]"));
        // Auto-create runs them only when sys.indexes lacks them.
        assert!(q.create_queue.contains("FROM sys.indexes"));
        assert!(q.create_queue.contains("[name] = N'Index_Expires'"));
    }

    #[test]
    fn shared_tables_have_the_seed_003_columns() {
        let (_, s) = statements();
        for column in [
            "[TopicName]       NVARCHAR(255) NOT NULL",
            "[SubscriberQueue] NVARCHAR(255) NOT NULL",
            "[LastSeenAt]      DATETIME2     NOT NULL DEFAULT SYSUTCDATETIME()",
            "PRIMARY KEY ([TopicName], [SubscriberQueue])",
        ] {
            assert!(s.create_subscriptions.contains(column), "missing {column}");
        }
        for column in [
            "[MessageId]           UNIQUEIDENTIFIER NOT NULL PRIMARY KEY",
            "[OriginalDestination] NVARCHAR(255)    NULL",
            "[Body]                VARBINARY(MAX)   NOT NULL",
            "[DeliveryAttempts]    INT              NOT NULL",
            "[FailedAt]            DATETIME2        NOT NULL DEFAULT SYSUTCDATETIME()",
        ] {
            assert!(s.create_dead_letters.contains(column), "missing {column}");
        }
    }

    #[test]
    fn upsert_and_schema_creation_are_race_safe() {
        let (_, s) = statements();
        assert!(s.subscribe.contains("WITH (UPDLOCK, SERIALIZABLE)"));
        assert!(s.subscribe.contains("IF @@ROWCOUNT = 0"));
        assert!(SCHEMA_LOCK.contains("@LockOwner = N'Transaction'"));
        assert!(SCHEMA_LOCK.contains("@LockTimeout = 60000"));
        assert!(SCHEMA_LOCK.contains("IF @lock_result < 0"));
        let create_schema = s.create_schema.unwrap();
        assert!(create_schema.contains("QUOTENAME(@P1)"));
        assert!(create_schema.contains("sys.sp_executesql"));
    }

    #[test]
    fn body_string_is_a_computed_column_added_once() {
        let (q, _) = statements();
        let add = q.add_body_string.unwrap();
        assert!(add
            .contains("COL_LENGTH(QUOTENAME(@P1) + N'.' + QUOTENAME(@P2), N'BodyString') IS NULL"));
        assert!(add.contains("ADD [BodyString] AS CAST([Body] AS varchar(max))"));
    }

    #[test]
    fn statements_have_no_placeholders_left() {
        for (what, text) in all_texts() {
            assert!(
                !text.contains("{table}") && !text.contains("{schema}"),
                "{what}"
            );
        }
    }
}
