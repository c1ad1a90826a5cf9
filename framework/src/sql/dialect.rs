//! A database's SQL: the statement files of `schema/<database>/`, how it quotes identifiers, and
//! how long its names may be. Nothing here talks to a database.

use crate::names::{QueueName, SchemaName};

/// The text of every statement file of one dialect, as shipped in `schema/<database>/`. The field
/// names are the file names; every dialect has every file (a file holding only comments means the
/// database needs nothing for that step).
#[derive(Debug)]
pub(crate) struct Files {
    pub schema: &'static str,
    pub schema_lock: &'static str,
    pub subscriptions: &'static str,
    pub dead_letters: &'static str,
    pub delayed_messages: &'static str,
    pub upgrade_subscriptions_last_seen_at: &'static str,
    pub shared_messages: &'static str,
    pub shared_messages_index_dequeue: &'static str,
    pub queue_table: &'static str,
    pub queue_index_rowversion: &'static str,
    pub queue_index_expires: &'static str,
    pub queue_body_string: &'static str,
    pub queue_body_string_text: &'static str,
    pub queue_group_columns: &'static str,
    pub queue_index_group: &'static str,
    pub queue_index_group_position: &'static str,
    pub queue_insert_grouped: &'static str,
    pub queue_receive_grouped: &'static str,
    pub queue_receive_batch_grouped: &'static str,
    pub queue_receive_batch_grouped_bounded: &'static str,
    pub queue_groups: &'static str,
    pub queue_priority_column: &'static str,
    pub queue_index_priority: &'static str,
    pub queue_insert_priority: &'static str,
    pub queue_receive_priority: &'static str,
    pub queue_receive_batch_priority: &'static str,
    pub queue_priorities: &'static str,
    pub index_if_missing: &'static str,
    pub queue_drop: &'static str,
    pub queue_insert: &'static str,
    pub queue_receive: &'static str,
    pub queue_peek: &'static str,
    pub queue_ready: &'static str,
    pub queue_purge_expired: &'static str,
    pub queue_count: &'static str,
    pub queue_browse: &'static str,
    pub messages_insert: &'static str,
    pub messages_receive: &'static str,
    pub messages_peek: &'static str,
    pub messages_ready: &'static str,
    pub watch_wait: &'static str,
    pub messages_purge_expired: &'static str,
    pub messages_delete_destination: &'static str,
    pub messages_count: &'static str,
    pub messages_browse: &'static str,
    pub delayed_insert: &'static str,
    pub delayed_take_due: &'static str,
    pub dead_letter_insert: &'static str,
    pub dead_letter_take: &'static str,
    pub dead_letter_list: &'static str,
    pub subscription_upsert: &'static str,
    pub subscription_list: &'static str,
    pub subscription_refresh: &'static str,
    pub subscription_delete: &'static str,
    pub subscription_sweep: &'static str,
    pub subscription_count_for_queue: &'static str,
    pub subscription_all: &'static str,
    pub catalog_has_last_seen_at: &'static str,
    pub catalog_list_indexes: &'static str,
    pub catalog_table_exists: &'static str,
    pub savepoint: &'static str,
    pub upgrade_subscriptions_idle_seconds: &'static str,
    pub catalog_has_idle_seconds: &'static str,
    pub catalog_citus_installed: &'static str,
    pub catalog_citus_undistributed: &'static str,
    pub catalog_list_tables: &'static str,
    pub savepoint_rollback: &'static str,
    pub savepoint_release: &'static str,
    pub table_dead_rows: &'static str,
    pub queue_vacuum: &'static str,
    pub messages_vacuum: &'static str,
    pub queue_receive_batch: &'static str,
    pub messages_receive_batch: &'static str,
    pub catalog_index_definitions: &'static str,
    pub index_drop: &'static str,
    pub wake_listen: &'static str,
    pub wake_announce: &'static str,
    pub wake_announce_one: &'static str,
    pub leases: &'static str,
    pub lease_insert: &'static str,
    pub lease_renew: &'static str,
    pub lease_end: &'static str,
    pub lease_take_expired: &'static str,
    pub handler_statement_timeout: &'static str,
    pub paused_queues: &'static str,
    pub queue_pause: &'static str,
    pub queue_resume: &'static str,
    pub paused_list: &'static str,
    pub dead_letter_get: &'static str,
    pub sagas: &'static str,
    pub saga_get: &'static str,
    pub saga_insert: &'static str,
    pub saga_update: &'static str,
    pub saga_delete: &'static str,
    pub saga_list: &'static str,
    pub nservicebus_subscription_table: &'static str,
    pub nservicebus_subscribe: &'static str,
    pub nservicebus_subscribers: &'static str,
    pub instances: &'static str,
    pub instance_lock: &'static str,
    pub instance_holders: &'static str,
    pub instance_register: &'static str,
    pub instance_heartbeat: &'static str,
    pub instance_stop: &'static str,
    pub instance_list: &'static str,
    pub instance_cleanup: &'static str,
    pub dead_letter_expire: &'static str,
    pub catalog_sagas_has_completed_at: &'static str,
    pub upgrade_sagas_completed_at: &'static str,
    pub saga_complete: &'static str,
    pub saga_cleanup: &'static str,
    pub monitoring: &'static str,
    pub monitoring_report: &'static str,
    pub monitoring_read: &'static str,
    pub monitoring_cleanup: &'static str,
    pub catalog_table_columns: &'static str,
    pub delayed_messages_index_id: &'static str,
    pub delayed_cancel: &'static str,
    pub delayed_reschedule: &'static str,
    pub delayed_list: &'static str,
    pub messages_cancel_delayed: &'static str,
    pub messages_reschedule_delayed: &'static str,
    pub messages_list_delayed: &'static str,
    pub schedules: &'static str,
    pub schedule_declare: &'static str,
    pub schedule_redefine: &'static str,
    pub schedule_retire: &'static str,
    pub schedule_list: &'static str,
    pub schedule_fire: &'static str,
    pub schedule_pause: &'static str,
    pub schedule_resume: &'static str,
    pub deduplication: &'static str,
    pub deduplication_claim: &'static str,
    pub deduplication_claim_many: &'static str,
    pub deduplication_expire_many: &'static str,
    pub deduplication_cleanup: &'static str,
    pub deduplication_release: &'static str,
    pub deduplication_scopes: &'static str,
    pub deduplication_keys: &'static str,
    pub limits: &'static str,
    pub limit_take: &'static str,
    pub limit_state: &'static str,
    pub limit_slots: &'static str,
    pub limit_held: &'static str,
    pub limits_list: &'static str,
    pub limits_cleanup: &'static str,
    pub messages_priority_column: &'static str,
    pub messages_index_priority: &'static str,
    pub messages_insert_priority: &'static str,
    pub messages_receive_priority: &'static str,
    pub messages_receive_batch_priority: &'static str,
    pub messages_priorities: &'static str,
    pub messages_group_columns: &'static str,
    pub messages_index_group: &'static str,
    pub messages_insert_grouped: &'static str,
    pub messages_receive_grouped: &'static str,
    pub messages_receive_batch_grouped: &'static str,
    pub messages_receive_batch_grouped_bounded: &'static str,
    pub messages_groups: &'static str,
    pub queue_insert_grouped_priority: &'static str,
    pub queue_receive_grouped_priority: &'static str,
    pub queue_receive_batch_grouped_priority: &'static str,
    pub messages_insert_grouped_priority: &'static str,
    pub messages_receive_grouped_priority: &'static str,
    pub messages_receive_batch_grouped_priority: &'static str,
    pub bodies: &'static str,
    pub body_insert: &'static str,
    pub body_fetch: &'static str,
    pub bodies_present: &'static str,
    pub body_delete: &'static str,
    pub body_dead_lettered: &'static str,
    pub body_replayed: &'static str,
    pub bodies_expire: &'static str,
    pub bodies_dead_letter_expire: &'static str,
    pub bodies_drop_queue: &'static str,
    pub bodies_summary: &'static str,
}

/// Builds a [`Files`] from `schema/<dir>/`, one `include_str!` per field, so a missing file is a
/// compile error rather than a surprise at run time.
macro_rules! statement_files {
    ($dir:literal; $($file:ident),* $(,)?) => {
        Files {
            $($file: include_str!(concat!("../../schema/", $dir, "/", stringify!($file), ".sql")),)*
        }
    };
}

macro_rules! all_files {
    ($dir:literal) => {
        statement_files!($dir;
            schema, schema_lock, subscriptions, dead_letters, delayed_messages,
            upgrade_subscriptions_last_seen_at, shared_messages, shared_messages_index_dequeue,
            queue_table, queue_index_rowversion, queue_index_expires, queue_body_string,
            queue_body_string_text,
            index_if_missing, queue_drop, queue_insert, queue_receive, queue_peek, queue_ready,
            queue_purge_expired, queue_count, queue_browse, messages_insert, messages_receive,
            messages_peek, messages_ready, watch_wait, messages_purge_expired, messages_delete_destination,
            messages_count,
            messages_browse, delayed_insert, delayed_take_due, dead_letter_insert,
            dead_letter_take, dead_letter_list, subscription_upsert, subscription_list,
            subscription_refresh, subscription_delete, subscription_sweep, subscription_count_for_queue,
            subscription_all, catalog_has_last_seen_at, catalog_list_indexes,
            catalog_table_exists, savepoint, savepoint_rollback,
            upgrade_subscriptions_idle_seconds, catalog_has_idle_seconds, catalog_list_tables,
            catalog_citus_installed, catalog_citus_undistributed,
            savepoint_release, table_dead_rows, queue_vacuum, messages_vacuum,
            queue_receive_batch, messages_receive_batch, wake_listen, wake_announce,
            wake_announce_one, catalog_index_definitions,
            index_drop, leases, lease_insert, lease_renew, lease_end, lease_take_expired,
            handler_statement_timeout, paused_queues, queue_pause, queue_resume, paused_list,
            dead_letter_get, sagas, saga_get, saga_insert, saga_update, saga_delete, saga_list,
            nservicebus_subscription_table, nservicebus_subscribe, nservicebus_subscribers,
            instances, instance_lock, instance_holders, instance_register, instance_heartbeat,
            instance_stop, instance_list, instance_cleanup, dead_letter_expire,
            catalog_sagas_has_completed_at, upgrade_sagas_completed_at, saga_complete,
            saga_cleanup, monitoring, monitoring_report, monitoring_read, monitoring_cleanup,
            catalog_table_columns, delayed_messages_index_id, delayed_cancel, delayed_reschedule,
            delayed_list, messages_cancel_delayed, messages_reschedule_delayed,
            messages_list_delayed, schedules, schedule_declare, schedule_redefine,
            schedule_retire, schedule_list, schedule_fire, schedule_pause, schedule_resume,
            deduplication, deduplication_claim, deduplication_claim_many, deduplication_expire_many,
            deduplication_cleanup, deduplication_release,
            deduplication_scopes, deduplication_keys, queue_group_columns, queue_index_group,
            queue_index_group_position, queue_insert_grouped, queue_receive_grouped,
            queue_receive_batch_grouped, queue_receive_batch_grouped_bounded, queue_groups,
            queue_priority_column,
            queue_index_priority, queue_insert_priority, queue_receive_priority,
            queue_receive_batch_priority, queue_priorities, limits, limit_take, limit_state,
            limit_slots, limit_held, limits_list, limits_cleanup, messages_priority_column,
            messages_index_priority, messages_insert_priority, messages_receive_priority,
            messages_receive_batch_priority, messages_priorities, messages_group_columns,
            messages_index_group, messages_insert_grouped, messages_receive_grouped,
            messages_receive_batch_grouped, messages_receive_batch_grouped_bounded,
            messages_groups, queue_insert_grouped_priority,
            queue_receive_grouped_priority, queue_receive_batch_grouped_priority,
            messages_insert_grouped_priority, messages_receive_grouped_priority,
            messages_receive_batch_grouped_priority, bodies, body_insert, body_fetch, bodies_present, body_delete,
            body_dead_lettered, body_replayed, bodies_expire, bodies_dead_letter_expire,
            bodies_drop_queue, bodies_summary,
        )
    };
}

/// The queue-table statements of NServiceBus's PostgreSQL shape
/// ([`crate::StorageLayout::NServiceBusPostgreSql`]), from `schema/postgres/nservicebus/`: what
/// differs from the seed 000 table's statements; dropping, counting and vacuuming a table are the
/// same.
#[derive(Debug)]
pub(crate) struct NServiceBusQueueFiles {
    pub queue_table: &'static str,
    pub queue_index_seq: &'static str,
    pub queue_insert: &'static str,
    pub queue_receive: &'static str,
    pub queue_receive_batch: &'static str,
    pub queue_peek: &'static str,
    pub queue_purge_expired: &'static str,
    pub queue_browse: &'static str,
    pub catalog_list_tables: &'static str,
}

macro_rules! nservicebus_files {
    ($dir:literal; $($file:ident),* $(,)?) => {
        NServiceBusQueueFiles {
            $($file: include_str!(concat!("../../schema/", $dir, "/nservicebus/", stringify!($file), ".sql")),)*
        }
    };
}

static POSTGRES_NSERVICEBUS_FILES: NServiceBusQueueFiles = nservicebus_files!("postgres";
    queue_table, queue_index_seq, queue_insert, queue_receive, queue_receive_batch, queue_peek,
    queue_purge_expired, queue_browse, catalog_list_tables,
);

static SQLITE_FILES: Files = all_files!("sqlite");
static POSTGRES_FILES: Files = all_files!("postgres");
static SQLSERVER_FILES: Files = all_files!("sqlserver");

/// How a dialect names the indexes of a queue table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexNaming {
    /// Index names are unique per schema: they carry the queue name (`Sales_Index_RowVersion`).
    PerSchema,
    /// Index names are unique per table: the seed's names exactly (`Index_RowVersion`).
    PerTable,
}

/// How a database's statements write parameter `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placeholder {
    /// `$n` (PostgreSQL).
    Dollar,
    /// `?n` (SQLite).
    Question,
    /// `@Pn` (SQL Server, through tiberius).
    AtP,
}

/// One database's SQL.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// The database's name for messages ("PostgreSQL").
    pub name: &'static str,
    /// The folder under `schema/` its files come from.
    pub folder: &'static str,
    /// Its statement files.
    pub files: &'static Files,
    /// The queue-table statements of NServiceBus's shape on this database, where NServiceBus's
    /// table differs from seed 000's (PostgreSQL).
    pub nservicebus_files: Option<&'static NServiceBusQueueFiles>,
    /// The longest queue name it accepts, in bytes.
    pub max_queue_name: usize,
    /// The longest schema name it accepts, in bytes.
    pub max_schema_name: usize,
    /// Whether tables are written schema-qualified (`"public"."Sales"`); SQLite has no schemas.
    pub qualified_tables: bool,
    /// How queue indexes are named.
    pub index_naming: IndexNaming,
    /// The one schema a database without schemas has, when it is such a database.
    pub only_schema: Option<&'static str>,
    /// How its statements write parameter `n`.
    pub placeholder: Placeholder,
    /// How many rows one INSERT may carry while the rows still get their `RowVersion` in the
    /// order they are listed (1: one statement per row). SQL Server does not promise that order
    /// for a multi-row `VALUES`, so it writes a row per statement.
    pub rows_per_insert: usize,
    /// What `catalog_index_definitions.sql` reports as the type of an index the seeds accept
    /// (SQL Server: `NONCLUSTERED`; PostgreSQL and SQLite: `btree`).
    pub index_type: &'static str,
    /// Whether the database's names compare without regard to case, so that `Billing` and
    /// `billing` are one queue (SQL Server's default collations are case-insensitive, for
    /// table names and for `Destination` values alike; Babelfish lists table names folded to
    /// lower case). Known queues are then compared that way too.
    pub names_ignore_case: bool,
    /// Whether the peek statements leave out rows that other transactions hold (row locks
    /// skipped: PostgreSQL's `SKIP LOCKED`, SQL Server's `READPAST`). Where they do not (SQLite,
    /// whose receives hold the one write lock and whose readers see the rows until the commit),
    /// the rows this process's receives hold are counted and must be subtracted.
    pub peek_skips_held_rows: bool,
    /// The most rows one statement that deletes or moves many (the expiry purge, dropping a
    /// queue of the shared table) may touch; larger batches run as several statements.
    pub max_rows_per_statement: i64,
    /// Which places its addresses can name, and how it writes its own.
    pub address_form: crate::names::AddressForm,
    open_quote: char,
    close_quote: char,
}

/// SQLite, the embedded default.
pub(crate) static SQLITE: Dialect = Dialect {
    name: "SQLite",
    folder: "sqlite",
    files: &SQLITE_FILES,
    nservicebus_files: None,
    max_queue_name: crate::names::MAX_NAME_LEN,
    max_schema_name: crate::names::MAX_NAME_LEN,
    qualified_tables: false,
    index_naming: IndexNaming::PerSchema,
    only_schema: Some("main"),
    placeholder: Placeholder::Question,
    // 7 parameters a row, well under SQLite's 32,766 variables.
    rows_per_insert: 500,
    index_type: "btree",
    names_ignore_case: false,
    peek_skips_held_rows: false,
    max_rows_per_statement: i64::MAX,
    address_form: crate::names::AddressForm::OwnSchemaOnly,
    open_quote: '"',
    close_quote: '"',
};

/// PostgreSQL identifiers are at most 63 bytes; index names add `_Index_RowVersion` (17).
const POSTGRES_MAX_IDENTIFIER: usize = 63;

/// PostgreSQL 13+.
pub(crate) static POSTGRES: Dialect = Dialect {
    name: "PostgreSQL",
    folder: "postgres",
    files: &POSTGRES_FILES,
    nservicebus_files: Some(&POSTGRES_NSERVICEBUS_FILES),
    max_queue_name: POSTGRES_MAX_IDENTIFIER - "_Index_RowVersion".len(),
    max_schema_name: POSTGRES_MAX_IDENTIFIER,
    qualified_tables: true,
    index_naming: IndexNaming::PerSchema,
    only_schema: None,
    placeholder: Placeholder::Dollar,
    // 7 parameters a row, well under PostgreSQL's 65,535.
    rows_per_insert: 1000,
    index_type: "btree",
    names_ignore_case: false,
    peek_skips_held_rows: true,
    max_rows_per_statement: i64::MAX,
    address_form: crate::names::AddressForm::Schemas,
    open_quote: '"',
    close_quote: '"',
};

/// The most rows one SQL Server statement deletes when it deletes many: well under the 5,000
/// locks on one table at which the Database Engine escalates a statement's row locks to a lock
/// on the whole table (Microsoft, "Transaction locking and row versioning guide", section "Lock
/// escalation"), which would stall every receive and send of the table until the statement
/// commits. NServiceBus's SQL Server transport keeps its cleanup batches under 4,000 rows too.
pub(crate) const SQLSERVER_ROWS_PER_STATEMENT: i64 = 4_000;
const _: () = assert!(
    SQLSERVER_ROWS_PER_STATEMENT < 5_000,
    "under the escalation threshold"
);

/// SQL Server 2016+ and Azure SQL (`sysname` is 128 characters).
pub(crate) static SQLSERVER: Dialect = Dialect {
    name: "SQL Server",
    folder: "sqlserver",
    files: &SQLSERVER_FILES,
    nservicebus_files: None,
    max_queue_name: 128,
    max_schema_name: 128,
    qualified_tables: true,
    index_naming: IndexNaming::PerTable,
    only_schema: None,
    placeholder: Placeholder::AtP,
    rows_per_insert: 1,
    index_type: "NONCLUSTERED",
    names_ignore_case: true,
    peek_skips_held_rows: true,
    max_rows_per_statement: SQLSERVER_ROWS_PER_STATEMENT,
    address_form: crate::names::AddressForm::SchemasAndCatalogs,
    open_quote: '[',
    close_quote: ']',
};

impl Dialect {
    /// Quotes an identifier so that every character in it is taken literally (the closing quote
    /// doubled).
    pub fn quote(&self, identifier: &str) -> String {
        let close = self.close_quote.to_string();
        format!(
            "{}{}{}",
            self.open_quote,
            identifier.replace(self.close_quote, &format!("{close}{close}")),
            self.close_quote
        )
    }

    /// The sizes of the statements that together delete up to `batch` rows, none of them more
    /// than [`Dialect::max_rows_per_statement`]: `[4000, 4000, 2000]` for 10,000 on SQL Server,
    /// `[10000]` elsewhere.
    pub fn statement_sizes(&self, batch: i64) -> impl Iterator<Item = i64> {
        let (batch, cap) = (batch.max(0), self.max_rows_per_statement.max(1));
        let full = usize::try_from(batch / cap).unwrap_or(usize::MAX);
        let rest = batch % cap;
        std::iter::repeat_n(cap, full).chain((rest > 0).then_some(rest))
    }

    /// The quoted name of `queue`'s table: in `schema`, unless the queue's address names another
    /// schema (and database).
    pub fn table(&self, schema: &SchemaName, queue: &QueueName) -> String {
        if !self.qualified_tables {
            return self.quote(queue.as_str());
        }
        let schema = queue.schema().unwrap_or(schema);
        let table = format!(
            "{}.{}",
            self.quote(schema.as_str()),
            self.quote(queue.as_str())
        );
        match queue.catalog() {
            Some(catalog) => format!("{}.{table}", self.quote(catalog.as_str())),
            None => table,
        }
    }

    /// The name (unquoted, as the catalog stores it) of a queue index whose seed name is `seed`
    /// (`Index_RowVersion`).
    pub fn index_name(&self, queue: &QueueName, seed: &str) -> String {
        match self.index_naming {
            IndexNaming::PerSchema => format!("{queue}_{seed}"),
            IndexNaming::PerTable => seed.to_string(),
        }
    }
}

/// Replaces `{name}` placeholders in a statement with already-quoted identifiers, in one pass
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

/// A statement file that holds only comments and blank lines: the database needs nothing for
/// that step.
pub(crate) fn is_empty_script(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with("--")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_deletes_on_sql_server_stay_under_lock_escalation() {
        let sizes = |d: &Dialect, batch| d.statement_sizes(batch).collect::<Vec<_>>();
        assert_eq!(sizes(&SQLSERVER, 10_000), vec![4_000, 4_000, 2_000]);
        assert_eq!(sizes(&SQLSERVER, 8_000), vec![4_000, 4_000]);
        assert_eq!(sizes(&SQLSERVER, 100), vec![100]);
        assert_eq!(sizes(&POSTGRES, 10_000), vec![10_000]);
        assert_eq!(sizes(&SQLITE, 10_000), vec![10_000]);
        assert_eq!(sizes(&SQLITE, 0), Vec::<i64>::new());
    }

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

    #[test]
    fn quoting_doubles_the_closing_quote() {
        assert_eq!(POSTGRES.quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(SQLSERVER.quote("a]b[c"), "[a]]b[c]");
        assert_eq!(SQLITE.quote("x"), "\"x\"");
    }

    #[test]
    fn comment_only_files_are_empty_scripts() {
        assert!(is_empty_script("-- nothing\n\n  -- at all\n"));
        assert!(!is_empty_script("-- a\nSELECT 1"));
    }
}
