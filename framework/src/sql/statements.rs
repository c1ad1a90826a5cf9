//! The statement files of a dialect rendered for one schema (the common tables) and for one queue
//! (its table). Rendering only fills in quoted identifiers; values are always parameters.

use super::dialect::{is_empty_script, render, Dialect, NServiceBusQueueFiles};
use super::watch::ReadyPart;
use crate::names::{QueueName, SchemaName};
use crate::transport::StorageLayout;

/// What is sent to the database of a statement file: its lines without the whole-line `--`
/// comments (the header that documents parameters and results). Shorter text to send and to key
/// the prepared-statement caches by; the files keep the documentation.
fn statement_text(file: &str) -> String {
    if is_empty_script(file) {
        return file.to_string();
    }
    file.lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A part of the watch statement (`queue_ready.sql`, `messages_ready.sql`) rendered with `vars`,
/// or `None` where the dialect needs none.
fn ready_part(file: &str, vars: &[(&str, &str)]) -> Option<ReadyPart> {
    (!is_empty_script(file)).then(|| ReadyPart::new(&statement_text(file), vars))
}

/// What an index must be for the statements that rely on it, on every database: compared with
/// the catalog at start (`catalog_index_definitions.sql`), as NServiceBus compares its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexDefinition {
    /// The key columns the index must start with, in order.
    pub keys: &'static [&'static str],
    /// Columns it must also carry: included (`INCLUDE`), or further key columns where the
    /// database has no `INCLUDE` (SQLite).
    pub includes: &'static [&'static str],
    /// Whether a filtered (partial) index serves: NServiceBus creates `Index_Expires` with
    /// `WHERE Expires IS NOT NULL`, which the purge (`Expires < now`) can use.
    pub filter_allowed: bool,
}

/// `Index_RowVersion` (seed 000): the receive and peek order.
pub(crate) const ROWVERSION_INDEX: IndexDefinition = IndexDefinition {
    keys: &["RowVersion"],
    includes: &[],
    filter_allowed: false,
};

/// `Index_Expires` (seed 000): `[Expires] ASC INCLUDE ([Id], [RowVersion])`.
pub(crate) const EXPIRES_INDEX: IndexDefinition = IndexDefinition {
    keys: &["Expires"],
    includes: &["Id", "RowVersion"],
    filter_allowed: true,
};

/// A grouped queue table's group index: `(GroupKey, RowVersion)`.
pub(crate) const GROUP_INDEX: IndexDefinition = IndexDefinition {
    keys: &["GroupKey", "RowVersion"],
    includes: &[],
    filter_allowed: false,
};

/// A grouped queue table's index of retry copies by place: `(GroupPosition, GroupKey)`.
pub(crate) const GROUP_POSITION_INDEX: IndexDefinition = IndexDefinition {
    keys: &["GroupPosition", "GroupKey"],
    includes: &[],
    filter_allowed: false,
};

/// A priority queue table's receive index: `(Priority DESC, RowVersion)`.
pub(crate) const PRIORITY_INDEX: IndexDefinition = IndexDefinition {
    keys: &["Priority", "RowVersion"],
    includes: &[],
    filter_allowed: false,
};

/// `NimbusDelayedMessages_Index_Id`: `(Id)`.
pub(crate) const DELAYED_ID_INDEX_DEFINITION: IndexDefinition = IndexDefinition {
    keys: &["Id"],
    includes: &[],
    filter_allowed: false,
};

/// `NimbusDelayedMessages`' index on `Id`, by which a delayed message is cancelled or
/// rescheduled.
pub(crate) const DELAYED_ID_INDEX: &str = "NimbusDelayedMessages_Index_Id";

/// `IX_NimbusMessages_Dequeue` (seed 003): `(Destination, VisibleAfter) INCLUDE (ExpiresAt)`.
pub(crate) const DEQUEUE_INDEX_DEFINITION: IndexDefinition = IndexDefinition {
    keys: &["Destination", "VisibleAfter"],
    includes: &["ExpiresAt"],
    filter_allowed: false,
};

/// `IX_NimbusMessages_Priority`: the shared table's receive index once it keeps priorities,
/// `(Destination, Priority DESC, VisibleAfter, MessageId)`.
pub(crate) const SHARED_PRIORITY_INDEX: IndexDefinition = IndexDefinition {
    keys: &["Destination", "Priority", "VisibleAfter"],
    includes: &[],
    filter_allowed: false,
};

/// `IX_NimbusMessages_Group`: whether a message's group has one placed before it in its
/// destination, `(Destination, GroupKey, GroupPlace, MessageId)`.
pub(crate) const SHARED_GROUP_INDEX: IndexDefinition = IndexDefinition {
    keys: &["Destination", "GroupKey", "GroupPlace"],
    includes: &[],
    filter_allowed: false,
};

/// The name of the shared table's priority index.
pub(crate) const SHARED_PRIORITY_INDEX_NAME: &str = "IX_NimbusMessages_Priority";

/// The name of the shared table's group index.
pub(crate) const SHARED_GROUP_INDEX_NAME: &str = "IX_NimbusMessages_Group";

/// The unique `Seq` index of NServiceBus's PostgreSQL queue table: the receive and peek order.
/// PostgreSQL stores the unquoted name in lower case.
pub(crate) const SEQ_INDEX: IndexDefinition = IndexDefinition {
    keys: &["seq"],
    includes: &[],
    filter_allowed: false,
};

/// An index the seeds require, with the statement that creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexSql {
    /// The name as stored in the catalog (unquoted).
    pub name: String,
    /// What it must be.
    pub definition: IndexDefinition,
    /// The seed's statement, quoted in warnings when the index is missing.
    pub create: String,
    /// The statement auto-create runs: [`Self::create`] guarded so it does nothing when the
    /// index exists.
    pub create_if_missing: String,
    /// Drops it (`index_drop.sql`): quoted, before [`Self::create`], in the warning about an
    /// index of this name that is defined otherwise.
    pub drop: String,
}

impl IndexSql {
    /// The names SQL Server's `index_if_missing.sql` looks the index up by: schema, table, the
    /// index's name, and its first two key columns (the second empty for a one-column index).
    pub fn guard_names<'a>(&'a self, schema: &'a str, table: &'a str) -> [&'a str; 5] {
        let keys = self.definition.keys;
        [
            schema,
            table,
            self.name.as_str(),
            keys.first().copied().unwrap_or_default(),
            keys.get(1).copied().unwrap_or_default(),
        ]
    }
}

/// A DDL script, or `None` when the dialect needs nothing for that step.
pub(crate) type Script = Option<String>;

fn script(text: String) -> Script {
    (!is_empty_script(&text)).then_some(text)
}

/// The statements on NServiceBus's subscription table, for a bus that shares subscriptions with
/// NServiceBus endpoints.
#[derive(Debug, Clone)]
pub(crate) struct NServiceBusSubscriptionSql {
    /// Where the table is, for the catalog lookup.
    pub schema: SchemaName,
    pub table: String,
    pub create: String,
    pub subscribe: String,
    pub subscribers: String,
}

/// The statements of one schema: the common tables, the shared-table layout and the catalog
/// queries. Rendered once per transport.
#[derive(Debug, Clone)]
pub(crate) struct SchemaSql {
    pub schema: Script,
    pub schema_lock: Script,
    pub subscriptions: String,
    pub dead_letters: String,
    pub delayed_messages: String,
    pub upgrade_subscriptions_last_seen_at: String,
    pub shared_messages: String,
    pub shared_messages_index_dequeue: IndexSql,
    pub messages_insert: String,
    pub messages_receive: String,
    pub messages_peek: String,
    /// A queue of the shared table's part of [`Self::watch_wait`] (SQL Server), where the
    /// database has no other way to hear of another process's sends.
    pub messages_ready: Option<ReadyPart>,
    /// The statement that waits on the server until one of the queues it watches holds a message
    /// (SQL Server): `{ready}` is their parts (see [`super::watch_sql`]).
    pub watch_wait: Script,
    pub messages_purge_expired: String,
    pub messages_delete_destination: String,
    pub messages_count: String,
    pub messages_browse: String,
    pub delayed_insert: String,
    pub delayed_take_due: String,
    pub dead_letter_insert: String,
    pub dead_letter_take: String,
    pub dead_letter_list: String,
    pub subscription_upsert: String,
    pub subscription_list: String,
    pub subscription_refresh: String,
    pub subscription_delete: String,
    pub subscription_sweep: String,
    pub subscription_count_for_queue: String,
    pub subscription_all: String,
    pub catalog_has_last_seen_at: String,
    pub catalog_list_indexes: String,
    /// Every index of a table with its type and columns.
    pub catalog_index_definitions: String,
    pub catalog_table_exists: String,
    pub savepoint: String,
    pub upgrade_subscriptions_idle_seconds: String,
    pub catalog_has_idle_seconds: String,
    pub catalog_list_tables: String,
    pub savepoint_rollback: String,
    /// Ends the handler's savepoint before the commit; fails if the transaction cannot commit.
    pub savepoint_release: String,
    /// A row when the Citus extension is installed (PostgreSQL).
    pub catalog_citus_installed: Script,
    /// A row when the schema stays on a Citus coordinator that has worker nodes (PostgreSQL,
    /// only where Citus is installed).
    pub catalog_citus_undistributed: Script,
    /// A table's dead rows, where the database lets them pile up (PostgreSQL).
    pub table_dead_rows: Script,
    /// Reclaims NimbusMessages' dead rows (PostgreSQL).
    pub messages_vacuum: Script,
    /// NimbusMessages, schema-qualified and quoted.
    pub messages_table: String,
    /// Takes up to N messages of a destination at once.
    pub messages_receive_batch: Script,
    /// Listens for wake-ups (PostgreSQL).
    pub wake_listen: Script,
    /// Announces written queues after they committed (PostgreSQL).
    pub wake_announce: Script,
    /// Announces a queue inside the application's transaction (PostgreSQL).
    pub wake_announce_one: Script,
    /// NimbusMessages' statements once it keeps priorities (its `Priority` column).
    pub shared_priorities: PrioritySql,
    /// NimbusMessages' statements once it keeps ordered groups (its `GroupKey` and
    /// `GroupPlace` columns).
    pub shared_groups: SharedGroupSql,
    /// Creates `NimbusLeases`, where messages handled under a lease wait for their handler.
    pub leases: String,
    /// Holds a received message under a lease.
    pub lease_insert: String,
    /// Renews a lease.
    pub lease_renew: String,
    /// Ends a lease in the transaction that commits its message's outcome.
    pub lease_end: String,
    /// Takes back the longest-expired lease of a queue.
    pub lease_take_expired: String,
    /// Bounds a handler's own statements by the server's clock (PostgreSQL).
    pub handler_statement_timeout: Script,
    /// Creates `NimbusPausedQueues`, the queues an operator paused.
    pub paused_queues: String,
    /// Pauses a queue.
    pub queue_pause: String,
    /// Resumes a queue.
    pub queue_resume: String,
    /// Lists the paused queues.
    pub paused_list: String,
    /// Reads one dead letter.
    pub dead_letter_get: String,
    /// Creates `NimbusSagas`, where saga instances keep their state.
    pub sagas: String,
    /// Reads (and locks) a saga instance.
    pub saga_get: String,
    /// Stores a new saga instance.
    pub saga_insert: String,
    /// Writes a saga instance's new state at the version read.
    pub saga_update: String,
    /// Deletes a completed saga instance at the version read.
    pub saga_delete: String,
    /// Lists saga instances for operators.
    pub saga_list: String,
    /// Creates `NimbusInstances`, where running buses register and heartbeat.
    pub instances: String,
    /// Serializes the starts of buses with one name (none needed on SQLite).
    pub instance_lock: Script,
    /// The other live holders of an application and instance name.
    pub instance_holders: String,
    /// Registers a start of a bus.
    pub instance_register: String,
    /// A running bus's heartbeat.
    pub instance_heartbeat: String,
    /// Marks a bus stopped.
    pub instance_stop: String,
    /// Lists the registered buses for operators.
    pub instance_list: String,
    /// Deletes the rows of buses long gone.
    pub instance_cleanup: String,
    /// Deletes a batch of dead letters older than the retention period.
    pub dead_letter_expire: String,
    /// Whether `NimbusSagas` has `CompletedAt`.
    pub catalog_sagas_has_completed_at: String,
    /// Adds `CompletedAt` to an older `NimbusSagas`.
    pub upgrade_sagas_completed_at: String,
    /// Marks a saga instance completed at the version read.
    pub saga_complete: String,
    /// Deletes a batch of saga instances completed long ago.
    pub saga_cleanup: String,
    /// Creates `NimbusMonitoring`, where running buses write what they handled per queue.
    pub monitoring: String,
    /// Writes one queue's report of a period (one `VALUES` tuple; repeated for several queues).
    pub monitoring_report: String,
    /// Reads the reports of a recent window for the console's charts.
    pub monitoring_read: String,
    /// Deletes a batch of reports older than the retention period.
    pub monitoring_cleanup: String,
    /// The columns of a table, to say why one named like a queue is not one.
    pub catalog_table_columns: String,
    /// `NimbusDelayedMessages_Index_Id`: finds a delayed message by its id.
    pub delayed_messages_index_id: IndexSql,
    /// Deletes a delayed message still waiting in `NimbusDelayedMessages` (cancel).
    pub delayed_cancel: String,
    /// Moves the due time of a delayed message still waiting in `NimbusDelayedMessages`.
    pub delayed_reschedule: String,
    /// Lists the delayed messages waiting in `NimbusDelayedMessages`, soonest due first.
    pub delayed_list: String,
    /// Deletes a not yet visible message of `NimbusMessages` (cancel, shared-table layout).
    pub messages_cancel_delayed: String,
    /// Moves the `VisibleAfter` of a not yet visible message of `NimbusMessages`.
    pub messages_reschedule_delayed: String,
    /// Lists the not yet visible messages of `NimbusMessages`, soonest first.
    pub messages_list_delayed: String,
    /// Creates `NimbusSchedules`, the recurring messages endpoints declare.
    pub schedules: String,
    /// Adds a declared schedule unless its endpoint has one of that name.
    pub schedule_declare: String,
    /// Gives a schedule the definition its endpoint now declares (compare-and-set on `Version`).
    pub schedule_redefine: String,
    /// Deletes a schedule its endpoint no longer declares.
    pub schedule_retire: String,
    /// Lists the schedules of one endpoint or of all, with the database's time.
    pub schedule_list: String,
    /// Moves a due schedule to its next tick in the transaction that sends its message (compare-and-set on `Version`).
    pub schedule_fire: String,
    /// Pauses a schedule.
    pub schedule_pause: String,
    /// Resumes a paused schedule from a given next tick.
    pub schedule_resume: String,
    /// Creates `NimbusDeduplication`, the keys seen within a window (send keys, inbox ids).
    pub deduplication: String,
    /// Claims a key in a scope for a window: rows when it was not seen within its window.
    pub deduplication_claim: String,
    /// Claims a JSON array of distinct keys of one scope; returns those claimed.
    pub deduplication_claim_many: String,
    /// Deletes the expired ones of a JSON array of keys first, where the claim of several does
    /// not take them over itself (PostgreSQL).
    pub deduplication_expire_many: Script,
    /// Deletes at most a batch of expired keys.
    pub deduplication_cleanup: String,
    /// Gives back a key claimed in this transaction (an inbox id of a failed attempt).
    pub deduplication_release: String,
    /// Counts the keys held within their window, per scope.
    pub deduplication_scopes: String,
    /// Lists the keys of one scope within their window (a bridge's way back of a reply).
    pub deduplication_keys: String,
    /// Creates `NimbusLimits`, the slots of the endpoints' limits.
    pub limits: String,
    /// Takes a free slot of a limit in the receive's transaction: a row when one was free.
    pub limit_take: String,
    /// How many slots a limit has, and in how many ms the soonest is ready again.
    pub limit_state: String,
    /// Adds the slots a limit lacks.
    pub limit_slots: String,
    /// Counts a message a limit held back.
    pub limit_held: String,
    /// Lists every limit's scope with its slots and held messages.
    pub limits_list: String,
    /// Deletes at most a batch of limit rows untouched for a while.
    pub limits_cleanup: String,
    /// Creates `NimbusBodies`, the bodies the claim check stores apart from their queue rows.
    pub bodies: String,
    /// Stores one body apart in the transaction that writes its queue row.
    pub body_insert: String,
    /// Reads a body stored apart (bytes, or where else it is) for its message's handlers.
    pub body_fetch: String,
    /// Which of a JSON array of body ids have a row (the object-store sweep).
    pub bodies_present: String,
    /// Deletes a body stored apart with its message's last row.
    pub body_delete: String,
    /// Marks a body as its message's dead letter's: kept for a replay.
    pub body_dead_lettered: String,
    /// Gives a dead letter's body back to its replayed message and its queue.
    pub body_replayed: String,
    /// Deletes at most a batch of bodies whose message expired a given time ago.
    pub bodies_expire: String,
    /// Deletes at most a batch of dead letters' bodies past the retention period.
    pub bodies_dead_letter_expire: String,
    /// Deletes the bodies of a dropped queue's messages (not its dead letters').
    pub bodies_drop_queue: String,
    /// Per queue: bodies stored apart, their bytes, dead letters' and object stores'.
    pub bodies_summary: String,
}

/// Which columns a queue table has, and so which parameters its insert takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueColumns {
    /// Seed 000: `Id, CorrelationId, ReplyToAddress, Recoverable, Expires, Headers, Body,
    /// RowVersion`; the insert takes Id, CorrelationId, ReplyToAddress, time to be received,
    /// Headers, Body, absolute Expires.
    Seed000,
    /// NServiceBus's PostgreSQL table: `Id, Expires, Headers, Body, Seq`; the insert takes Id,
    /// time to be received, Headers, Body, absolute Expires.
    NServiceBusPostgreSql,
}

/// The statements of one queue table. Rendered once per queue and reused for every message.
#[derive(Debug, Clone)]
pub(crate) struct QueueSql {
    /// The table's columns, which decide the insert's parameters.
    pub columns: QueueColumns,
    /// The table, schema-qualified and quoted.
    pub table: String,
    /// Creates the table (without its indexes).
    pub create_table: String,
    /// The FIFO index: `Index_RowVersion`, or the unique `Seq` index of NServiceBus's
    /// PostgreSQL table.
    pub index_rowversion: IndexSql,
    /// `Index_Expires`, where the table shape has one (NServiceBus's PostgreSQL table has none).
    pub index_expires: Option<IndexSql>,
    /// NServiceBus's `BodyString` (`nvarchar`).
    pub body_string: Script,
    /// The `BodyString` that reads as the body's text (`varchar`).
    pub body_string_text: Script,
    pub drop: String,
    pub insert: String,
    pub receive: String,
    pub peek: String,
    /// The queue's part of [`SchemaSql::watch_wait`] (SQL Server), where the database has no
    /// other way to hear of another process's sends.
    pub ready: Option<ReadyPart>,
    pub purge_expired: String,
    pub count: String,
    pub browse: String,
    /// Reclaims the table's dead rows (PostgreSQL).
    pub vacuum: Script,
    /// Takes up to N messages at once.
    pub receive_batch: Script,
    /// The statements of ordered groups, for a table that has their columns.
    pub groups: GroupSql,
    /// The statements of priorities, for a table that has their column.
    pub priorities: PrioritySql,
}

/// The statements of a queue table that keeps priorities (its `Priority` column).
#[derive(Debug, Clone)]
pub(crate) struct PrioritySql {
    /// Adds the column where it is missing (takes schema and table names as values on SQL
    /// Server).
    pub column: String,
    /// `(Priority DESC, RowVersion)`: the receive order.
    pub index: IndexSql,
    /// Inserts a message at a priority (the seed 000 insert's parameters, then Priority).
    pub insert: String,
    /// Takes the message with the highest priority, the oldest of those.
    pub receive: String,
    /// Takes up to N messages in that order.
    pub receive_batch: Script,
    /// Counts the messages per priority.
    pub list: String,
}

/// The statements of a queue table that keeps ordered groups (its `GroupKey`, `GroupPosition`
/// and `NotBefore` columns).
#[derive(Debug, Clone)]
pub(crate) struct GroupSql {
    /// Adds the three columns where they are missing (takes schema and table names as values on
    /// SQL Server).
    pub columns: String,
    /// `(GroupKey, RowVersion)`: whether a group has an older message.
    pub index_group: IndexSql,
    /// `(GroupPosition, GroupKey)`: whether a group has a retry copy of an older message.
    pub index_group_position: IndexSql,
    /// Inserts a message of a group (the seed 000 insert's parameters, then GroupKey,
    /// GroupPosition and a not-before delay).
    pub insert: String,
    /// Takes the oldest message that is the first of its group (or of none).
    pub receive: String,
    /// Takes up to N such messages, never two of one group.
    pub receive_batch: Script,
    /// As `receive_batch`, with a bounded cost while the queue's first messages are all held
    /// (`queue_receive_batch_grouped_bounded.sql`).
    pub receive_batch_bounded: Script,
    /// Lists the groups with messages waiting.
    pub list: String,
    /// The statements of a table that keeps priorities too.
    pub prioritized: PrioritizedGroupSql,
}

/// The statements of a table that keeps both ordered groups and priorities: a message of a
/// group is written at its priority, and receives take the first message of each group (or of
/// none) with the highest priority first.
#[derive(Debug, Clone)]
pub(crate) struct PrioritizedGroupSql {
    /// Inserts a message of a group at a priority (the grouped insert's parameters, then
    /// Priority).
    pub insert: String,
    /// Takes the first message of a group (or of none) with the highest priority.
    pub receive: String,
    /// Takes up to N such messages, never two of one group.
    pub receive_batch: Script,
}

/// The statements of NimbusMessages (shared-table layout) once it keeps ordered groups: every
/// statement takes the destination first.
#[derive(Debug, Clone)]
pub(crate) struct SharedGroupSql {
    /// Adds `GroupKey` and `GroupPlace` where they are missing (takes schema and table names as
    /// values on SQL Server).
    pub columns: String,
    /// `(Destination, GroupKey, GroupPlace, MessageId)`: whether a group has an earlier message.
    pub index: IndexSql,
    /// Inserts a message of a group (the shared insert's parameters, then GroupKey and the place
    /// a retry copy keeps).
    pub insert: String,
    /// Takes the first visible message that is the first of its group (or of none).
    pub receive: String,
    /// Takes up to N such messages, never two of one group.
    pub receive_batch: Script,
    /// As `receive_batch`, with a bounded cost while the destination's first messages are all
    /// held (`messages_receive_batch_grouped_bounded.sql`).
    pub receive_batch_bounded: Script,
    /// Lists a destination's groups with messages waiting.
    pub list: String,
    /// The statements of the table once it keeps priorities too.
    pub prioritized: PrioritizedGroupSql,
}

impl QueueSql {
    /// The indexes the table shape requires.
    pub fn indexes(&self) -> Vec<&IndexSql> {
        std::iter::once(&self.index_rowversion)
            .chain(self.index_expires.as_ref())
            .collect()
    }
}

/// The name of the shared-table layout's dequeue index (seed 003).
pub(crate) const DEQUEUE_INDEX: &str = "IX_NimbusMessages_Dequeue";

impl Dialect {
    /// An index on `table` (quoted) in `schema`: `create` (its statement, rendered), guarded to
    /// run only when it is missing, and the statement that drops it by its quoted name.
    fn index_sql(
        &self,
        name: String,
        definition: IndexDefinition,
        create: String,
        table: &str,
        schema: &SchemaName,
    ) -> IndexSql {
        let (quoted_index, quoted_schema) = (self.quote(&name), self.quote(schema.as_str()));
        IndexSql {
            create_if_missing: render(
                &statement_text(self.files.index_if_missing),
                &[("statement", without_comments(&create).as_str())],
            ),
            drop: render(
                &statement_text(self.files.index_drop),
                &[
                    ("index", quoted_index.as_str()),
                    ("table", table),
                    ("schema", quoted_schema.as_str()),
                ],
            ),
            name,
            definition,
            create,
        }
    }

    /// Renders the statements of `schema`.
    pub(crate) fn schema_sql(&'static self, schema: &SchemaName) -> SchemaSql {
        let quoted = self.quote(schema.as_str());
        let vars = [("schema", quoted.as_str())];
        let f = self.files;
        let r = |text: &str| render(&statement_text(text), &vars);
        let table = |name: &str| {
            if self.qualified_tables {
                format!("{quoted}.{}", self.quote(name))
            } else {
                self.quote(name)
            }
        };
        let messages_table = table("NimbusMessages");
        let delayed_table = table("NimbusDelayedMessages");
        SchemaSql {
            schema: script(r(f.schema)),
            schema_lock: script(r(f.schema_lock)),
            subscriptions: r(f.subscriptions),
            dead_letters: r(f.dead_letters),
            delayed_messages: r(f.delayed_messages),
            upgrade_subscriptions_last_seen_at: r(f.upgrade_subscriptions_last_seen_at),
            shared_messages: r(f.shared_messages),
            shared_messages_index_dequeue: self.index_sql(
                DEQUEUE_INDEX.to_string(),
                DEQUEUE_INDEX_DEFINITION,
                r(f.shared_messages_index_dequeue),
                &messages_table,
                schema,
            ),
            messages_insert: r(f.messages_insert),
            messages_receive: r(f.messages_receive),
            messages_peek: r(f.messages_peek),
            messages_ready: ready_part(f.messages_ready, &vars),
            watch_wait: script(statement_text(f.watch_wait)),
            messages_purge_expired: r(f.messages_purge_expired),
            messages_delete_destination: r(f.messages_delete_destination),
            messages_count: r(f.messages_count),
            messages_browse: r(f.messages_browse),
            delayed_insert: r(f.delayed_insert),
            delayed_take_due: r(f.delayed_take_due),
            dead_letter_insert: r(f.dead_letter_insert),
            dead_letter_take: r(f.dead_letter_take),
            dead_letter_list: r(f.dead_letter_list),
            subscription_upsert: r(f.subscription_upsert),
            subscription_list: r(f.subscription_list),
            subscription_refresh: r(f.subscription_refresh),
            subscription_delete: r(f.subscription_delete),
            subscription_sweep: r(f.subscription_sweep),
            subscription_count_for_queue: r(f.subscription_count_for_queue),
            subscription_all: r(f.subscription_all),
            catalog_has_last_seen_at: r(f.catalog_has_last_seen_at),
            catalog_list_indexes: r(f.catalog_list_indexes),
            catalog_index_definitions: r(f.catalog_index_definitions),
            catalog_table_exists: r(f.catalog_table_exists),
            savepoint: r(f.savepoint),
            upgrade_subscriptions_idle_seconds: r(f.upgrade_subscriptions_idle_seconds),
            catalog_has_idle_seconds: r(f.catalog_has_idle_seconds),
            catalog_list_tables: r(f.catalog_list_tables),
            savepoint_rollback: r(f.savepoint_rollback),
            savepoint_release: r(f.savepoint_release),
            catalog_citus_installed: script(r(f.catalog_citus_installed)),
            catalog_citus_undistributed: script(r(f.catalog_citus_undistributed)),
            table_dead_rows: script(r(f.table_dead_rows)),
            messages_vacuum: script(r(f.messages_vacuum)),
            messages_receive_batch: script(r(f.messages_receive_batch)),
            wake_listen: script(r(f.wake_listen)),
            wake_announce: script(r(f.wake_announce)),
            wake_announce_one: script(r(f.wake_announce_one)),
            leases: r(f.leases),
            lease_insert: r(f.lease_insert),
            lease_renew: r(f.lease_renew),
            lease_end: r(f.lease_end),
            lease_take_expired: r(f.lease_take_expired),
            handler_statement_timeout: script(r(f.handler_statement_timeout)),
            paused_queues: r(f.paused_queues),
            queue_pause: r(f.queue_pause),
            queue_resume: r(f.queue_resume),
            paused_list: r(f.paused_list),
            dead_letter_get: r(f.dead_letter_get),
            sagas: r(f.sagas),
            saga_get: r(f.saga_get),
            saga_insert: r(f.saga_insert),
            saga_update: r(f.saga_update),
            saga_delete: r(f.saga_delete),
            saga_list: r(f.saga_list),
            instances: r(f.instances),
            instance_lock: script(r(f.instance_lock)),
            instance_holders: r(f.instance_holders),
            instance_register: r(f.instance_register),
            instance_heartbeat: r(f.instance_heartbeat),
            instance_stop: r(f.instance_stop),
            instance_list: r(f.instance_list),
            instance_cleanup: r(f.instance_cleanup),
            dead_letter_expire: r(f.dead_letter_expire),
            catalog_sagas_has_completed_at: r(f.catalog_sagas_has_completed_at),
            upgrade_sagas_completed_at: r(f.upgrade_sagas_completed_at),
            saga_complete: r(f.saga_complete),
            saga_cleanup: r(f.saga_cleanup),
            monitoring: r(f.monitoring),
            monitoring_report: r(f.monitoring_report),
            monitoring_read: r(f.monitoring_read),
            monitoring_cleanup: r(f.monitoring_cleanup),
            catalog_table_columns: r(f.catalog_table_columns),
            delayed_messages_index_id: self.index_sql(
                DELAYED_ID_INDEX.to_string(),
                DELAYED_ID_INDEX_DEFINITION,
                r(f.delayed_messages_index_id),
                &delayed_table,
                schema,
            ),
            delayed_cancel: r(f.delayed_cancel),
            delayed_reschedule: r(f.delayed_reschedule),
            delayed_list: r(f.delayed_list),
            messages_cancel_delayed: r(f.messages_cancel_delayed),
            messages_reschedule_delayed: r(f.messages_reschedule_delayed),
            messages_list_delayed: r(f.messages_list_delayed),
            schedules: r(f.schedules),
            schedule_declare: r(f.schedule_declare),
            schedule_redefine: r(f.schedule_redefine),
            schedule_retire: r(f.schedule_retire),
            schedule_list: r(f.schedule_list),
            schedule_fire: r(f.schedule_fire),
            schedule_pause: r(f.schedule_pause),
            schedule_resume: r(f.schedule_resume),
            deduplication: r(f.deduplication),
            deduplication_claim: r(f.deduplication_claim),
            deduplication_claim_many: r(f.deduplication_claim_many),
            deduplication_expire_many: script(r(f.deduplication_expire_many)),
            deduplication_cleanup: r(f.deduplication_cleanup),
            deduplication_release: r(f.deduplication_release),
            deduplication_scopes: r(f.deduplication_scopes),
            deduplication_keys: r(f.deduplication_keys),
            limits: r(f.limits),
            limit_take: r(f.limit_take),
            limit_state: r(f.limit_state),
            limit_slots: r(f.limit_slots),
            limit_held: r(f.limit_held),
            limits_list: r(f.limits_list),
            limits_cleanup: r(f.limits_cleanup),
            bodies: r(f.bodies),
            body_insert: r(f.body_insert),
            body_fetch: r(f.body_fetch),
            bodies_present: r(f.bodies_present),
            body_delete: r(f.body_delete),
            body_dead_lettered: r(f.body_dead_lettered),
            body_replayed: r(f.body_replayed),
            bodies_expire: r(f.bodies_expire),
            bodies_dead_letter_expire: r(f.bodies_dead_letter_expire),
            bodies_drop_queue: r(f.bodies_drop_queue),
            bodies_summary: r(f.bodies_summary),
            shared_priorities: PrioritySql {
                column: r(f.messages_priority_column),
                index: self.index_sql(
                    SHARED_PRIORITY_INDEX_NAME.to_string(),
                    SHARED_PRIORITY_INDEX,
                    r(f.messages_index_priority),
                    &messages_table,
                    schema,
                ),
                insert: r(f.messages_insert_priority),
                receive: r(f.messages_receive_priority),
                receive_batch: script(r(f.messages_receive_batch_priority)),
                list: r(f.messages_priorities),
            },
            shared_groups: SharedGroupSql {
                columns: r(f.messages_group_columns),
                index: self.index_sql(
                    SHARED_GROUP_INDEX_NAME.to_string(),
                    SHARED_GROUP_INDEX,
                    r(f.messages_index_group),
                    &messages_table,
                    schema,
                ),
                insert: r(f.messages_insert_grouped),
                receive: r(f.messages_receive_grouped),
                receive_batch: script(r(f.messages_receive_batch_grouped)),
                receive_batch_bounded: script(r(f.messages_receive_batch_grouped_bounded)),
                list: r(f.messages_groups),
                prioritized: PrioritizedGroupSql {
                    insert: r(f.messages_insert_grouped_priority),
                    receive: r(f.messages_receive_grouped_priority),
                    receive_batch: script(r(f.messages_receive_batch_grouped_priority)),
                },
            },
            messages_table,
        }
    }

    /// Renders the statements on NServiceBus's subscription table `table` (an address: in
    /// `schema` unless it names its own).
    pub(crate) fn nservicebus_subscription_sql(
        &'static self,
        schema: &SchemaName,
        table: &QueueName,
    ) -> NServiceBusSubscriptionSql {
        let quoted = self.table(schema, table);
        let vars = [("table", quoted.as_str())];
        let f = self.files;
        let r = |text: &str| render(&statement_text(text), &vars);
        NServiceBusSubscriptionSql {
            schema: table.schema().unwrap_or(schema).clone(),
            table: table.as_str().to_string(),
            create: r(f.nservicebus_subscription_table),
            subscribe: r(f.nservicebus_subscribe),
            subscribers: r(f.nservicebus_subscribers),
        }
    }

    /// Renders the statements of `queue`'s table in `schema`.
    pub(crate) fn queue_sql(&'static self, schema: &SchemaName, queue: &QueueName) -> QueueSql {
        let table = self.table(schema, queue);
        let rowversion_name = self.index_name(queue, "Index_RowVersion");
        let expires_name = self.index_name(queue, "Index_Expires");
        let group_name = self.index_name(queue, "Index_Group");
        let group_position_name = self.index_name(queue, "Index_GroupPosition");
        let quoted_rowversion = self.quote(&rowversion_name);
        let quoted_expires = self.quote(&expires_name);
        let (quoted_group, quoted_group_position) =
            (self.quote(&group_name), self.quote(&group_position_name));
        let priority_name = self.index_name(queue, "Index_Priority");
        let quoted_priority = self.quote(&priority_name);
        let vars = [
            ("table", table.as_str()),
            ("index_rowversion", quoted_rowversion.as_str()),
            ("index_expires", quoted_expires.as_str()),
            ("index_group", quoted_group.as_str()),
            ("index_group_position", quoted_group_position.as_str()),
            ("index_priority", quoted_priority.as_str()),
        ];
        let f = self.files;
        let r = |text: &str| render(&statement_text(text), &vars);
        let index = |name: String, definition: IndexDefinition, text: &str| {
            self.index_sql(name, definition, r(text), &table, schema)
        };
        QueueSql {
            index_rowversion: index(rowversion_name, ROWVERSION_INDEX, f.queue_index_rowversion),
            index_expires: Some(index(expires_name, EXPIRES_INDEX, f.queue_index_expires)),
            columns: QueueColumns::Seed000,
            body_string: script(r(f.queue_body_string)),
            body_string_text: script(r(f.queue_body_string_text)),
            drop: r(f.queue_drop),
            insert: r(f.queue_insert),
            receive: r(f.queue_receive),
            peek: r(f.queue_peek),
            ready: ready_part(f.queue_ready, &vars),
            purge_expired: r(f.queue_purge_expired),
            count: r(f.queue_count),
            browse: r(f.queue_browse),
            vacuum: script(r(f.queue_vacuum)),
            receive_batch: script(r(f.queue_receive_batch)),
            create_table: r(f.queue_table),
            groups: GroupSql {
                columns: r(f.queue_group_columns),
                index_group: index(group_name, GROUP_INDEX, f.queue_index_group),
                index_group_position: index(
                    group_position_name,
                    GROUP_POSITION_INDEX,
                    f.queue_index_group_position,
                ),
                insert: r(f.queue_insert_grouped),
                receive: r(f.queue_receive_grouped),
                receive_batch: script(r(f.queue_receive_batch_grouped)),
                receive_batch_bounded: script(r(f.queue_receive_batch_grouped_bounded)),
                list: r(f.queue_groups),
                prioritized: PrioritizedGroupSql {
                    insert: r(f.queue_insert_grouped_priority),
                    receive: r(f.queue_receive_grouped_priority),
                    receive_batch: script(r(f.queue_receive_batch_grouped_priority)),
                },
            },
            priorities: PrioritySql {
                column: r(f.queue_priority_column),
                index: index(priority_name, PRIORITY_INDEX, f.queue_index_priority),
                insert: r(f.queue_insert_priority),
                receive: r(f.queue_receive_priority),
                receive_batch: script(r(f.queue_receive_batch_priority)),
                list: r(f.queue_priorities),
            },
            table,
        }
    }
}

impl Dialect {
    /// The statements of `schema` for storage layout `layout`: the queue tables are listed in the
    /// layout's own shape.
    pub(crate) fn schema_sql_for(
        &'static self,
        layout: StorageLayout,
        schema: &SchemaName,
    ) -> SchemaSql {
        let mut sql = self.schema_sql(schema);
        if let (StorageLayout::NServiceBusPostgreSql, Some(f)) = (layout, self.nservicebus_files) {
            sql.catalog_list_tables = statement_text(f.catalog_list_tables);
        }
        sql
    }

    /// The statements of `queue`'s table in `schema` for storage layout `layout` (the seed 000
    /// table's, unless the layout is NServiceBus's PostgreSQL shape and the database has it).
    pub(crate) fn queue_sql_for(
        &'static self,
        layout: StorageLayout,
        schema: &SchemaName,
        queue: &QueueName,
    ) -> QueueSql {
        let sql = self.queue_sql(schema, queue);
        match (layout, self.nservicebus_files) {
            (StorageLayout::NServiceBusPostgreSql, Some(files)) => {
                self.in_nservicebus_shape(sql, files, schema, queue)
            }
            _ => sql,
        }
    }

    /// `seed000` (the statements of `queue`'s seed 000 table) made the statements of its table
    /// in NServiceBus's shape: what differs comes from `files`.
    fn in_nservicebus_shape(
        &'static self,
        seed000: QueueSql,
        files: &NServiceBusQueueFiles,
        schema: &SchemaName,
        queue: &QueueName,
    ) -> QueueSql {
        // The name PostgreSQL gives the index of the table's `UNIQUE` constraint on Seq.
        let seq_name = format!("{}_seq_key", queue.as_str());
        let quoted_seq = self.quote(&seq_name);
        let vars = [
            ("table", seed000.table.as_str()),
            ("index_seq", quoted_seq.as_str()),
        ];
        let r = |text: &str| render(&statement_text(text), &vars);
        let index_rowversion = self.index_sql(
            seq_name,
            SEQ_INDEX,
            r(files.queue_index_seq),
            &seed000.table,
            schema,
        );
        QueueSql {
            columns: QueueColumns::NServiceBusPostgreSql,
            create_table: r(files.queue_table),
            index_rowversion,
            index_expires: None,
            // NServiceBus's BodyString is its own generated column; Nimbus does not add it.
            body_string: None,
            body_string_text: None,
            insert: r(files.queue_insert),
            receive: r(files.queue_receive),
            receive_batch: script(r(files.queue_receive_batch)),
            peek: r(files.queue_peek),
            purge_expired: r(files.queue_purge_expired),
            browse: r(files.queue_browse),
            ..seed000
        }
    }
}

/// `text` without its comment lines and trailing `;` and white space, to be embedded in another
/// statement.
fn without_comments(text: &str) -> String {
    let body: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect();
    body.join("\n")
        .trim()
        .trim_end_matches(';')
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::super::dialect::{POSTGRES, SQLITE, SQLSERVER};
    use super::*;

    fn names(schema: &str, queue: &str) -> (SchemaName, QueueName) {
        (
            SchemaName::new(schema).expect("a valid schema name"),
            QueueName::new(queue).expect("a valid queue name"),
        )
    }

    #[test]
    fn identifiers_are_quoted_with_their_quote_doubled() {
        let (schema, queue) = names("my \"schema\"", "it's \"q\" [x]");
        let q = POSTGRES.queue_sql(&schema, &queue);
        assert!(q
            .insert
            .contains(r#"INSERT INTO "my ""schema"""."it's ""q"" [x]""#));
        assert!(q
            .index_rowversion
            .create
            .contains(r#""it's ""q"" [x]_Index_RowVersion""#));
        let (schema, queue) = names("Zeb]ra", "Wal]rus");
        let q = SQLSERVER.queue_sql(&schema, &queue);
        assert!(q.insert.contains("INSERT INTO [Zeb]]ra].[Wal]]rus]"));
    }

    #[test]
    fn no_placeholder_is_left_in_any_statement() {
        for dialect in [&SQLITE, &POSTGRES, &SQLSERVER] {
            let (schema, queue) = names(dialect.only_schema.unwrap_or("s"), "Sales");
            let q = dialect.queue_sql(&schema, &queue);
            let s = dialect.schema_sql(&schema);
            let texts = format!("{q:?}{s:?}");
            for placeholder in [
                "{schema}",
                "{table}",
                "{index_rowversion}",
                "{index_expires}",
                "{statement}",
                "{index}",
            ] {
                assert!(
                    !texts.contains(placeholder),
                    "{} leaves {placeholder}",
                    dialect.name
                );
            }
        }
    }

    #[test]
    fn index_names_follow_the_dialect() {
        let (schema, queue) = names("public", "Sales");
        assert_eq!(
            POSTGRES.queue_sql(&schema, &queue).index_rowversion.name,
            "Sales_Index_RowVersion"
        );
        assert_eq!(
            SQLSERVER
                .queue_sql(&schema, &queue)
                .index_expires
                .map(|index| index.name)
                .as_deref(),
            Some("Index_Expires")
        );
    }
}
