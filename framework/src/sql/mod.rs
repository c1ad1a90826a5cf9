//! SQL text, one module per dialect. Nothing outside this module writes SQL.
//!
//! Every statement takes values only as parameters; identifiers (schema, queue, index names) are
//! validated by [`crate::names`] and quoted by the dialect. Each dialect renders the same set of
//! statements with the same structure, so the logic above the SQL is the same for every database.
//! DDL comes from `schema/<database>/*.sql` via `include_str!`.

pub(crate) mod postgres;
pub(crate) mod sqlite;
pub(crate) mod sqlserver;

use crate::names::{QueueName, SchemaName};

/// The statements for one queue table. Rendered once per queue, reused for every message.
#[derive(Debug, Clone)]
pub(crate) struct QueueStatements {
    /// Creates the table and its indexes where they are missing (idempotent).
    pub create_queue: String,
    /// Adds the computed `BodyString` column where it is missing; `None` where the dialect has
    /// no such column.
    pub add_body_string: Option<String>,
    /// The indexes the seed requires, each with its creation statement.
    pub indexes: Vec<IndexStatement>,
    /// Inserts one message. Parameters, in order: Id, CorrelationId, ReplyToAddress,
    /// time to be received in milliseconds (NULL for none), Headers, Body, and an absolute
    /// `Expires` that wins over the time to be received (NULL for none; kept by retries).
    pub insert: String,
    /// Deletes the oldest row no other transaction holds and returns Id, CorrelationId,
    /// ReplyToAddress, Headers, Body, whether it has expired by database time, and Expires.
    pub receive: String,
    /// Deletes at most `@P1`/`$1` expired rows (by database time), skipping locked ones, through
    /// `Index_Expires`.
    pub purge_expired: String,
    /// Estimates the queue depth as `max(RowVersion) - min(RowVersion) + 1` (0 when empty).
    pub peek: String,
    /// Drops the queue table if it exists (the idle sweep of a per-instance queue).
    pub drop_queue: String,
}

/// An index on a queue table.
#[derive(Debug, Clone)]
pub(crate) struct IndexStatement {
    /// The name as stored in the catalog (unquoted).
    pub name: String,
    /// The statement that creates it (idempotent).
    pub create: String,
}

/// Statements of the shared-table layout (seed 003): every queue is a `Destination` value in
/// `NimbusMessages`; headers travel inside `Body` (see [`crate::shared_envelope`]).
#[derive(Debug, Clone)]
pub(crate) struct SharedTableStatements {
    /// Creates `NimbusMessages` and `IX_NimbusMessages_Dequeue` (the seed's DDL; idempotent).
    pub create: String,
    /// The dequeue index, as the catalog names it, and the statement quoted when it is missing.
    pub index: IndexStatement,
    /// Parameters: MessageId, Destination, Body, time to be received in ms, absolute ExpiresAt,
    /// delay in ms, absolute VisibleAfter (wins over the delay).
    pub insert: String,
    /// Deletes the first visible row of a destination (`VisibleAfter` then `MessageId`) that no
    /// other transaction holds. Parameter: Destination. Returns the columns of
    /// [`QueueStatements::receive`] (CorrelationId, ReplyToAddress and Headers as NULL: they
    /// travel in the Body's envelope), so one reader serves both layouts.
    pub receive: String,
    /// Counts the visible messages of a destination, up to 10,000. Parameter: Destination.
    pub peek: String,
    /// Deletes at most a batch of expired messages of a destination, skipping locked rows.
    /// Parameters: Destination, batch.
    pub purge_expired: String,
    /// Deletes every message of a destination. Parameter: Destination.
    pub delete_destination: String,
}

/// Statements for the tables every endpoint shares.
#[derive(Debug, Clone)]
pub(crate) struct SharedStatements {
    /// Creates the schema, where the database has schemas.
    pub create_schema: Option<String>,
    /// Creates `NimbusSubscriptions` (seed 003).
    pub create_subscriptions: String,
    /// Creates `NimbusDeadLetters` (seed 003).
    pub create_dead_letters: String,
    /// Creates `NimbusDelayedMessages`, where delayed messages wait until due.
    pub create_delayed: String,
    /// Inserts a delayed message. Parameters: Id, Destination, CorrelationId, ReplyToAddress,
    /// time to be received in ms, Headers, Body, absolute Expires, delay in ms, absolute due time
    /// (the due time wins when both are given).
    pub insert_delayed: String,
    /// Deletes at most `batch` (first parameter) due delayed messages, skipping locked rows, and
    /// returns Id, Destination, CorrelationId, ReplyToAddress, Expires, Headers, Body.
    pub take_due_delayed: String,
    /// Inserts a dead letter unless one with the same MessageId exists (then it affects no row).
    /// Parameters: MessageId, OriginalDestination, Body, DeliveryAttempts.
    pub insert_dead_letter: String,
    /// Deletes one dead letter and returns OriginalDestination, Body. Parameter: MessageId.
    pub take_dead_letter: String,
    /// Writes or refreshes one subscription. Parameters: TopicName, SubscriberQueue.
    pub subscribe: String,
    /// Lists the queues subscribed to a topic whose heartbeat is recent. Parameters: TopicName,
    /// the idle period in seconds (rows not seen for longer are skipped).
    pub subscribers: String,
    /// Refreshes `LastSeenAt` of one subscription; affects no row when it is gone. Parameters:
    /// TopicName, SubscriberQueue.
    pub refresh_subscription: String,
    /// Deletes the subscriptions not seen for the idle period (seconds, the parameter) and returns
    /// their TopicName and SubscriberQueue.
    pub sweep_subscriptions: String,
    /// Counts the subscriptions left for a queue. Parameter: SubscriberQueue.
    pub queue_subscriptions: String,
    /// Returns a row when `NimbusSubscriptions` has `LastSeenAt`. Parameter: the schema name.
    pub has_last_seen_at: String,
    /// Adds `LastSeenAt` to a `NimbusSubscriptions` from before heartbeats (seed 003's upgrade).
    pub upgrade_last_seen_at: String,
    /// The shared-table layout's statements.
    pub messages: SharedTableStatements,
    /// Lists the index names of a table. Parameters: schema, table (both as values).
    pub list_indexes: String,
    /// Returns a row when a table exists. Parameters: schema, table (both as values).
    pub table_exists: String,
}

/// A database's SQL.
pub(crate) trait Dialect: Send + Sync + 'static {
    /// The database's name for messages ("PostgreSQL").
    const NAME: &'static str;
    /// The longest queue name this dialect accepts, in bytes.
    const MAX_QUEUE_NAME: usize;
    /// The longest schema name this dialect accepts, in bytes.
    const MAX_SCHEMA_NAME: usize;

    /// Quotes an identifier so that any character in it is taken literally.
    fn quote(identifier: &str) -> String;
    /// Statements for one queue table.
    fn queue_statements(schema: &SchemaName, queue: &QueueName) -> QueueStatements;
    /// Statements for the shared tables.
    fn shared_statements(schema: &SchemaName) -> SharedStatements;
}

/// Replaces `{name}` placeholders in a schema script with already-quoted identifiers, in one pass
/// over the template, so a replacement is never scanned again (a queue named `{table}` stays a
/// name). Unknown placeholders are left as they are.
pub(crate) fn render(template: &str, replacements: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let found = after.find('}').and_then(|end| {
            let key = &after[..end];
            replacements
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (end, *v))
        });
        match found {
            Some((end, value)) => {
                out.push_str(value);
                rest = &after[end + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_replaces_every_occurrence() {
        assert_eq!(
            render("a {t} b {t} {s}", &[("t", "\"x\""), ("s", "\"y\"")]),
            "a \"x\" b \"x\" \"y\""
        );
    }

    #[test]
    fn render_never_rescans_a_replacement() {
        assert_eq!(
            render("{t} {s}", &[("t", "\"{s}\""), ("s", "\"y\"")]),
            "\"{s}\" \"y\""
        );
        assert_eq!(render("{unknown} {", &[]), "{unknown} {");
    }
}
