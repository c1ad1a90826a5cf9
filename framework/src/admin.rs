//! Operating a Nimbus database without running an endpoint: look at queues, dead letters and
//! subscriptions, replay dead letters, sweep, check the schema. The command-line tool and the
//! conformance suite's fixtures use this; so can your own maintenance code.
//!
//! ```no_run
//! # async fn demo() -> nimbus::Result<()> {
//! use nimbus::admin::Database;
//!
//! let db = Database::connect("sqlite://shop.db").await?;
//! println!("Billing holds {} messages", db.queue_depth("Billing").await?);
//! for letter in db.dead_letters(20).await? {
//!     println!("{} from {:?}", letter.message_id, letter.original_destination);
//! }
//! # Ok(()) }
//! ```
//!
//! This file is over 1,000 lines because it is the operators' API: one short documented method per
//! operation, with its example.

use std::sync::Arc;

mod deduplication;
mod groups;
mod limits;
mod schedules;

pub use deduplication::DeduplicationScope;
pub use limits::{BodySummary, LimitSummary};

use chrono::NaiveDateTime;
use uuid::Uuid;

use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::transport::{Admin, DatabaseUrl, RawRow, StorageLayout, SweepReport, TransportSettings};

/// A connection to a database that holds Nimbus queues, for operators and tools.
#[derive(Clone)]
pub struct Database {
    transport: Arc<dyn Admin>,
    /// The schema this handle works in, and its database's SQL: queue addresses are read
    /// against them.
    schema: SchemaName,
    dialect: &'static crate::sql::Dialect,
    layout: StorageLayout,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("database", &self.transport.name())
            .finish_non_exhaustive()
    }
}

/// Where and how to connect: the schema (default: the database's default schema) and the
/// storage layout the endpoints use.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The schema holding the tables; `None` for the database's default (`dbo`, `public`,
    /// `main`).
    pub schema: Option<String>,
    /// How the endpoints store queues.
    pub layout: StorageLayout,
    /// SQL Server: Entra ID access tokens to log in with ([`crate::SqlServerToken`]).
    #[cfg(feature = "sqlserver")]
    pub sql_server_token: Option<crate::SqlServerToken>,
}

impl ConnectOptions {
    /// The defaults: the database's default schema, one table per queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `schema`.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Uses `layout`.
    pub fn layout(mut self, layout: StorageLayout) -> Self {
        self.layout = layout;
        self
    }

    /// SQL Server: logs in with Entra ID access tokens from `token` (see
    /// [`crate::BusBuilder::sql_server_token`]).
    #[cfg(feature = "sqlserver")]
    pub fn sql_server_token(mut self, token: crate::SqlServerToken) -> Self {
        self.sql_server_token = Some(token);
        self
    }
}

/// A message still in its queue, as [`Database::peek`] shows it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct QueuedMessage {
    /// The row's `Id` (`MessageId` in the shared table).
    pub id: String,
    /// The headers' JSON text.
    pub headers: String,
    /// The body, byte for byte.
    pub body: Vec<u8>,
    /// When it expires (UTC), if it does.
    pub expires: Option<NaiveDateTime>,
    /// What could not be read from the row, if anything: such a message goes to the dead
    /// letters when received.
    pub unreadable: Option<String>,
}

/// A queue, as [`Database::queues`] lists it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct QueueInfo {
    /// Its name.
    pub name: String,
    /// How many messages it holds, counted exactly.
    pub depth: i64,
    /// When its oldest message was sent, by the sender's clock (`NServiceBus.TimeSent`);
    /// `None` when it is empty or the header is missing.
    pub oldest_sent_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether an operator paused it ([`Database::pause_queue`]).
    pub paused: bool,
}

/// A saga instance, as [`Database::sagas`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SagaInfo {
    /// The saga's name ([`crate::saga::Saga::NAME`]).
    pub saga_type: String,
    /// The instance's correlation value.
    pub correlation: String,
    /// Its state, as the JSON text stored.
    pub state: String,
    /// How many changes it has had (1 when it started).
    pub version: i64,
    /// When it started (UTC, database time).
    pub started_at: Option<NaiveDateTime>,
    /// When it last changed (UTC, database time).
    pub updated_at: Option<NaiveDateTime>,
    /// Its id (`NimbusSagas.Id`).
    pub id: String,
}

/// One saga instance's state, as [`Database::saga`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SagaState {
    /// Its id (`NimbusSagas.Id`).
    pub id: Uuid,
    /// Its state, as the JSON text stored.
    pub state: String,
    /// How many changes it has had (1 when it started).
    pub version: i64,
    /// It completed: kept a while so that messages of it that come late are ignored.
    pub completed: bool,
}

/// Whether a registered instance is alive, as [`Database::instances`] judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InstanceState {
    /// Its heartbeat is recent: it runs.
    Live,
    /// It missed three heartbeats in a row (by database time) without stopping: killed, frozen,
    /// or cut off from the database.
    NotResponding,
    /// Its `stop()` ran.
    Stopped,
}

impl InstanceState {
    /// In words, as the CLI and the console show it: `live`, `not responding`, `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceState::Live => "live",
            InstanceState::NotResponding => "not responding",
            InstanceState::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for InstanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A start of a bus registered in `NimbusInstances`, as [`Database::instances`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstanceInfo {
    /// The application name (its input queue).
    pub application: String,
    /// The instance name.
    pub instance: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id on that host.
    pub process_id: i64,
    /// The version of Nimbus it runs.
    pub version: String,
    /// The queues it receives from.
    pub queues: Vec<String>,
    /// The message types it handles.
    pub handlers: Vec<String>,
    /// Whether it lets other live processes use its name.
    pub shares_name: bool,
    /// Its heartbeat interval.
    pub heartbeat: std::time::Duration,
    /// When it started (database time, UTC).
    pub started_at: Option<NaiveDateTime>,
    /// Its last heartbeat (database time, UTC).
    pub last_seen_at: Option<NaiveDateTime>,
    /// When it stopped, if it did.
    pub stopped_at: Option<NaiveDateTime>,
    /// How long ago its last heartbeat was, by the database's clock.
    pub seconds_since_seen: i64,
    /// Live, not responding or stopped.
    pub state: InstanceState,
    /// This start's id (a restart is a new row).
    pub run_id: String,
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl From<crate::driver::instance_statements::ListedInstance> for InstanceInfo {
    fn from(row: crate::driver::instance_statements::ListedInstance) -> Self {
        let heartbeat_seconds = row.heartbeat_seconds.max(1);
        let missed = i64::from(crate::transport::instances::MISSED_HEARTBEATS);
        let state = if row.stopped_at.is_some() {
            InstanceState::Stopped
        } else if row.seconds_since_seen > missed * heartbeat_seconds {
            InstanceState::NotResponding
        } else {
            InstanceState::Live
        };
        InstanceInfo {
            queues: split_list(&row.queues),
            handlers: split_list(&row.handlers),
            application: row.application,
            instance: row.instance,
            host: row.host,
            process_id: row.process_id,
            version: row.version,
            shares_name: row.shares_name,
            heartbeat: std::time::Duration::from_secs(heartbeat_seconds.unsigned_abs()),
            started_at: row.started_at,
            last_seen_at: row.last_seen_at,
            stopped_at: row.stopped_at,
            seconds_since_seen: row.seconds_since_seen,
            state,
            run_id: row.run_id,
        }
    }
}

/// A paused queue, as [`Database::paused_queues`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PausedQueue {
    /// The queue.
    pub name: String,
    /// When it was paused (database time, UTC).
    pub paused_at: Option<NaiveDateTime>,
    /// Who paused it, as the pausing tool wrote it.
    pub paused_by: String,
}

/// A dead letter, as [`Database::dead_letters`] lists it. `Default` makes one for tests of tools
/// that read dead letters. Its `Debug` shows the envelope as text (cut after 1,000 characters),
/// not as bytes.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct DeadLetterInfo {
    /// The dead letter's id (the failed message's id), to replay it.
    pub message_id: String,
    /// The queue it was received from.
    pub original_destination: Option<String>,
    /// The dead-letter envelope: JSON with the reason, the headers and the body (see "Dead
    /// letters" in the guide's chapter docs/guide/failures.md).
    pub body: Vec<u8>,
    /// How many times it was tried.
    pub delivery_attempts: i64,
    /// When it failed for good (UTC).
    pub failed_at: Option<NaiveDateTime>,
}

impl std::fmt::Debug for DeadLetterInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 1_000;
        let text = String::from_utf8_lossy(&self.body);
        let body = match text.char_indices().nth(SHOWN) {
            None => text.into_owned(),
            Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], self.body.len()),
        };
        f.debug_struct("DeadLetterInfo")
            .field("message_id", &self.message_id)
            .field("original_destination", &self.original_destination)
            .field("delivery_attempts", &self.delivery_attempts)
            .field("failed_at", &self.failed_at)
            .field("body", &body)
            .finish()
    }
}

impl From<crate::driver::statements::ListedDeadLetter> for DeadLetterInfo {
    fn from(d: crate::driver::statements::ListedDeadLetter) -> Self {
        DeadLetterInfo {
            message_id: d.message_id,
            original_destination: d.original_destination,
            body: d.body,
            delivery_attempts: d.delivery_attempts,
            failed_at: d.failed_at,
        }
    }
}

impl DeadLetterInfo {
    /// Why it failed for good (the envelope's `reason`: the last failure, or why it was moved
    /// at once); `None` when the body is not a dead-letter envelope.
    pub fn reason(&self) -> Option<String> {
        self.envelope()?.get("reason")?.as_str().map(str::to_string)
    }

    /// The reason without the failed message's own id and type in front (the framework writes
    /// `message <id> (<type>): …`), so that letters that failed the same way read the same:
    /// what the console groups them by. `None` as for [`DeadLetterInfo::reason`].
    pub fn reason_without_message(&self) -> Option<String> {
        let reason = self.reason()?;
        let stripped = reason
            .strip_prefix("message ")
            .and_then(|rest| rest.split_once(" ("))
            .filter(|(id, _)| !id.is_empty() && !id.contains(' '))
            .and_then(|(_, rest)| rest.split_once("): "))
            .map(|(_, after)| after.to_string());
        Some(stripped.unwrap_or(reason))
    }

    /// The first of its message types (`NServiceBus.EnclosedMessageTypes`, without an assembly
    /// name); `None` when its headers name none or the body is not a dead-letter envelope.
    pub fn message_type(&self) -> Option<String> {
        let envelope = self.envelope()?;
        let types = envelope
            .get("headers")?
            .get(crate::headers::ENCLOSED_MESSAGE_TYPES)?
            .as_str()?;
        let first = types.split(';').next()?;
        Some(first.split(',').next().unwrap_or(first).trim().to_string())
    }

    fn envelope(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Which dead letters [`Database::dead_letters_matching`] returns; every field left `None`
/// matches everything. The database applies the filters, so a page holds only matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadLetterQuery {
    /// Only those that failed in this queue (their `OriginalDestination`).
    pub queue: Option<String>,
    /// Only those that failed at or before this time (UTC).
    pub failed_at_or_before: Option<NaiveDateTime>,
    /// Only those that failed at or after this time (UTC).
    pub failed_at_or_after: Option<NaiveDateTime>,
}

/// A subscription row.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriptionInfo {
    /// The topic (an event's type name).
    pub topic: String,
    /// The queue that receives it.
    pub queue: String,
    /// The subscriber's last heartbeat (UTC, database time).
    pub last_seen_at: Option<NaiveDateTime>,
    /// The idle period its subscriber promised (`auto_delete_on_idle`), in seconds: past it
    /// without a heartbeat the subscription lapses. `None` for rows from before that column,
    /// which each reader judges by its own setting.
    pub idle_seconds: Option<i64>,
}

/// A message row to write as it is, bypassing serialization (moving rows by hand, testing what
/// receivers do with bad input).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RawMessage {
    /// The row id.
    pub id: Uuid,
    /// The `Headers` text, written as it is (it need not be JSON).
    pub headers: String,
    /// The `Body`, written as it is.
    pub body: Vec<u8>,
    /// Milliseconds until it expires, by database time; negative for a message already
    /// expired; `None` for one that never expires.
    pub time_to_be_received_ms: Option<i64>,
}

impl RawMessage {
    /// A row with a fresh id that never expires.
    pub fn new(headers: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        RawMessage {
            id: Uuid::new_v4(),
            headers: headers.into(),
            body: body.into(),
            time_to_be_received_ms: None,
        }
    }

    /// Expires `ms` milliseconds after it is written (negative: already expired).
    pub fn expires_in_ms(mut self, ms: i64) -> Self {
        self.time_to_be_received_ms = Some(ms);
        self
    }
}

pub use crate::body_codecs::{shown_body, shown_body_decrypted, ShownBody};

/// The script that creates what Nimbus needs, for a DBA to run by hand (with auto-create off):
/// the statements of `schema/<database>/` for `database` (`sqlite`, `postgres` or `sqlserver`,
/// whatever features are compiled in), `schema` (`None`: the database's default), `layout`, and
/// the tables of `queues` (table-per-queue layout).
///
/// ```
/// let script = nimbus::admin::creation_script(
///     "sqlserver", Some("sales"), nimbus::StorageLayout::TablePerQueue, &["Sales", "Billing"],
/// ).unwrap();
/// assert!(script.contains("CREATE TABLE [sales].[Billing]"));
/// ```
pub fn creation_script(
    database: &str,
    schema: Option<&str>,
    layout: StorageLayout,
    queues: &[&str],
) -> Result<String> {
    let dialect = crate::sql::dialect_named(database)?;
    crate::transport::check_layout(dialect, layout)?;
    let schema = script_schema(dialect, schema)?;
    let queues = queues
        .iter()
        .map(|q| script_queue(dialect, q))
        .collect::<Result<Vec<_>>>()?;
    Ok(crate::sql::creation_script(
        dialect, &schema, layout, &queues,
    ))
}

/// The statements that give the table of `queue` the columns and indexes of ordered groups
/// where it lacks them, for a DBA to run by hand after the [`creation_script`] (see
/// [`BusBuilder::ordered_groups`](crate::BusBuilder::ordered_groups)). In the shared-table layout
/// they are `NimbusMessages`' (`GroupKey`, `GroupPlace` and `IX_NimbusMessages_Group`), whatever
/// the queue; NServiceBus's PostgreSQL table shape cannot keep groups.
///
/// ```
/// use nimbus::StorageLayout;
/// let script = nimbus::admin::ordered_groups_script(
///     "postgres", Some("sales"), StorageLayout::TablePerQueue, "Ledger").unwrap();
/// assert!(script.contains(r#"ADD COLUMN IF NOT EXISTS "GroupKey""#));
/// let shared = nimbus::admin::ordered_groups_script(
///     "postgres", Some("sales"), StorageLayout::SharedTable, "Ledger").unwrap();
/// assert!(shared.contains(r#"ADD COLUMN IF NOT EXISTS "GroupPlace""#));
/// ```
pub fn ordered_groups_script(
    database: &str,
    schema: Option<&str>,
    layout: StorageLayout,
    queue: &str,
) -> Result<String> {
    let dialect = crate::sql::dialect_named(database)?;
    crate::transport::check_layout(dialect, layout)?;
    refuse_nservicebus_shape(layout, "ordered groups")?;
    let schema = script_schema(dialect, schema)?;
    let queue = script_queue(dialect, queue)?;
    Ok(crate::sql::ordered_groups_script(
        dialect, &schema, layout, &queue,
    ))
}

/// The statements that give the table of `queue` the `Priority` column and its index where it
/// lacks them, for a DBA to run by hand after the [`creation_script`] (see
/// [`BusBuilder::priorities`](crate::BusBuilder::priorities)). In the shared-table layout they
/// are `NimbusMessages`' (`Priority` and `IX_NimbusMessages_Priority`), whatever the queue;
/// NServiceBus's PostgreSQL table shape cannot keep priorities.
///
/// ```
/// use nimbus::StorageLayout;
/// let script = nimbus::admin::priorities_script(
///     "sqlserver", Some("mail"), StorageLayout::TablePerQueue, "Mailer").unwrap();
/// assert!(script.contains("ADD [Priority] smallint NOT NULL DEFAULT 0"));
/// ```
pub fn priorities_script(
    database: &str,
    schema: Option<&str>,
    layout: StorageLayout,
    queue: &str,
) -> Result<String> {
    let dialect = crate::sql::dialect_named(database)?;
    crate::transport::check_layout(dialect, layout)?;
    refuse_nservicebus_shape(layout, "priorities")?;
    let schema = script_schema(dialect, schema)?;
    let queue = script_queue(dialect, queue)?;
    Ok(crate::sql::priorities_script(
        dialect, &schema, layout, &queue,
    ))
}

/// The error for `what` (ordered groups, priorities) in NServiceBus's PostgreSQL table shape.
fn refuse_nservicebus_shape(layout: StorageLayout, what: &str) -> Result<()> {
    match layout {
        StorageLayout::NServiceBusPostgreSql => Err(NimbusError::config(
            format!("{what} are not supported yet in NServiceBus's PostgreSQL table shape"),
            "use the table-per-queue or the shared-table layout for that queue",
        )),
        _ => Ok(()),
    }
}

/// `schema` (`None`: the database's default) as a script for `dialect` names it.
fn script_schema(dialect: &crate::sql::Dialect, schema: Option<&str>) -> Result<SchemaName> {
    let default_schema = dialect.only_schema.unwrap_or(match dialect.folder {
        "postgres" => "public",
        _ => "dbo",
    });
    let schema = SchemaName::new(schema.unwrap_or(default_schema))?;
    schema.check_len(dialect.max_schema_name)?;
    Ok(schema)
}

/// `queue`, checked against `dialect`'s longest name.
fn script_queue(dialect: &crate::sql::Dialect, queue: &str) -> Result<QueueName> {
    let queue = QueueName::new(queue)?;
    queue.check_len(dialect.max_queue_name)?;
    Ok(queue)
}

impl Database {
    /// Connects with the default schema and the table-per-queue layout.
    pub async fn connect(url: &str) -> Result<Database> {
        Self::connect_with(url, ConnectOptions::default()).await
    }

    /// Connects with `options`. Nothing is created: use [`Database::create_schema`].
    pub async fn connect_with(url: &str, options: ConnectOptions) -> Result<Database> {
        Self::connect_with_pool(url, options, 2).await
    }

    /// [`Database::connect_with`] with a pool of `pool_size` connections (the bridge's sides:
    /// each of its routes holds one side's connection while it writes to the other).
    pub(crate) async fn connect_with_pool(
        url: &str,
        options: ConnectOptions,
        pool_size: usize,
    ) -> Result<Database> {
        let database = DatabaseUrl::parse(url)?;
        #[cfg(feature = "sqlserver")]
        let database = database.with_sql_server_token(options.sql_server_token)?;
        let dialect = database.dialect();
        crate::transport::check_layout(dialect, options.layout)?;
        let schema = SchemaName::new(
            options
                .schema
                .unwrap_or_else(|| database.default_schema().to_string()),
        )?;
        schema.check_len(dialect.max_schema_name)?;
        let message_ids = if database.is_sql_server() {
            crate::envelope::MessageIds::SqlServerOrdered
        } else {
            crate::envelope::MessageIds::TimeOrdered
        };
        let database_connect_timeout = database.connect_timeout();
        let transport = crate::transport::connect(TransportSettings {
            message_ids,
            database,
            schema: schema.clone(),
            auto_create: false,
            create_on_send: false,
            idle_seconds: i64::try_from(
                crate::subscriptions::DEFAULT_AUTO_DELETE_ON_IDLE.as_secs(),
            )
            .unwrap_or(i64::MAX),
            layout: options.layout,
            body_string: None,
            pool_size,
            connection_limit: None,
            deadlines: crate::driver::Deadlines {
                connect: database_connect_timeout,
                statement: crate::driver::DEFAULT_DATABASE_TIMEOUT,
            },
            leases: false,
            sagas: false,
            schedules: false,
            inbox: false,
            limits: false,
            bodies: false,
            stores: Default::default(),
            nservicebus_subscriptions: None,
        })
        .await?;
        Ok(Database {
            transport,
            schema,
            dialect,
            layout: options.layout,
        })
    }

    /// Connects to the schema a queue's address names (`Billing@[sales]`, `"sales"."Billing"`,
    /// the forms endpoints take; `options`' schema for a plain name) and returns the handle with
    /// the queue's name in that schema, for the methods that take a queue.
    ///
    /// An address naming another database (`Billing@[sales]@[other]`) is refused: connect to
    /// that database instead.
    ///
    /// ```
    /// # actix_rt::System::new().block_on(async {
    /// let file = std::env::temp_dir().join(format!("nimbus-doc-{}.db", uuid::Uuid::new_v4()));
    /// let url = format!("sqlite://{}", file.display());
    /// let options = nimbus::admin::ConnectOptions::new();
    /// let (db, queue) = nimbus::admin::Database::connect_for(&url, options, "Billing").await?;
    /// db.create_schema(&[&queue]).await?;
    /// assert_eq!(db.queue_depth(&queue).await?, 0);
    /// # drop(db);
    /// # let _ = std::fs::remove_file(&file);
    /// # Ok::<(), nimbus::NimbusError>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect_for(
        url: &str,
        mut options: ConnectOptions,
        address: &str,
    ) -> Result<(Database, String)> {
        let queue = QueueName::parse(address)?;
        if let Some(catalog) = queue.catalog() {
            return Err(NimbusError::config(
                format!(
                    "the address {address:?} names database {:?}: an admin handle works in the \
                     database of its URL",
                    catalog.as_str()
                ),
                "connect with the URL of that database and name the queue as Name@[schema]",
            ));
        }
        if let Some(schema) = queue.schema() {
            options.schema = Some(schema.as_str().to_string());
        }
        let database = Self::connect_with(url, options).await?;
        Ok((database, queue.as_str().to_string()))
    }

    /// The queue `name` names: a plain name, or an address of this handle's own schema. An
    /// address of another schema or database is refused, pointing at
    /// [`Database::connect_for`].
    fn queue(&self, name: &str) -> Result<QueueName> {
        let queue = QueueName::parse(name)?;
        let resolved =
            crate::transport::resolve_address(self.dialect, &self.schema, self.layout, &queue)?;
        if resolved.schema().is_some() || resolved.catalog().is_some() {
            return Err(NimbusError::config(
                format!(
                    "the address {name:?} names another schema or database than this handle's \
                     schema {:?}",
                    self.schema.as_str()
                ),
                "open a handle there with nimbus::admin::Database::connect_for(url, options, \
                 address), which returns the queue's name in it",
            ));
        }
        Ok(resolved)
    }

    /// The database's name ("PostgreSQL", "SQL Server", "SQLite").
    pub fn database_name(&self) -> &'static str {
        self.transport.name()
    }

    /// The transport under this handle, for the bridge.
    pub(crate) fn transport(&self) -> &Arc<dyn Admin> {
        &self.transport
    }

    /// Subscribes `queue` to the events of `topic` (refreshes the subscription's heartbeat).
    pub(crate) async fn subscribe_queue(&self, topic: &str, queue: &QueueName) -> Result<()> {
        self.transport.subscribe(topic, queue).await
    }

    /// Creates the common tables, the layout's tables and the tables of `queues` where missing.
    pub async fn create_schema(&self, queues: &[&str]) -> Result<()> {
        let queues = queues
            .iter()
            .map(|q| self.queue(q))
            .collect::<Result<Vec<_>>>()?;
        self.transport.create_schema(&queues).await?;
        // In the shared-table layout a queue is known by its record, not a table: recorded
        // whether or not the schema was complete already.
        self.transport.register_queues(&queues).await
    }

    /// Checks that the tables exist; the error quotes the statement that creates what is missing.
    pub async fn verify_schema(&self, queues: &[&str]) -> Result<()> {
        let queues = queues
            .iter()
            .map(|q| self.queue(q))
            .collect::<Result<Vec<_>>>()?;
        self.transport.verify_schema(&queues).await
    }

    /// The seed's indexes `queue` lacks or has defined otherwise (compared by type, key and
    /// included columns, not by name alone: an `Index_RowVersion` that is clustered, or on
    /// another column, is listed), as (name, statements that fix it: the `CREATE`, after a
    /// `DROP` of the wrong index where there is one).
    pub async fn missing_indexes(&self, queue: &str) -> Result<Vec<(String, String)>> {
        Ok(self
            .transport
            .index_problems(&self.queue(queue)?)
            .await?
            .into_iter()
            .map(|p| (p.name, p.fix))
            .collect())
    }

    /// The warnings a bus receiving from `queue` logs at start about its indexes (the text of
    /// [`crate::Bus::warnings`]), each quoting the statements that fix it.
    pub async fn index_warnings(&self, queue: &str) -> Result<Vec<String>> {
        let name = self.transport.name();
        Ok(self
            .transport
            .index_problems(&self.queue(queue)?)
            .await?
            .iter()
            .map(|p| p.warning(queue, name))
            .collect())
    }

    /// The number of messages in `queue`, counted exactly (every row, delayed ones included in
    /// the shared table).
    pub async fn queue_depth(&self, queue: &str) -> Result<i64> {
        self.transport.count(&self.queue(queue)?).await
    }

    /// The estimate receivers use to decide how many receives to start.
    pub async fn queue_estimate(&self, queue: &str) -> Result<i64> {
        self.transport.peek(&self.queue(queue)?).await
    }

    /// `queue`, when it exists; else [`NimbusError::UnknownQueue`] naming the closest queues
    /// (a name in the wrong case, a typo).
    async fn known_queue(&self, queue: &str) -> Result<QueueName> {
        let target = self.queue(queue)?;
        let known = self.transport.queues().await?;
        if !known
            .iter()
            .any(|q| self.transport.same_queue_name(q, queue))
        {
            return Err(NimbusError::UnknownQueue {
                queue: queue.to_string(),
                closest: crate::names::closest(queue, known.iter().map(String::as_str)),
            });
        }
        Ok(target)
    }

    /// Up to `limit` messages of `queue` in the order they would be received, without removing
    /// them. A queue that does not exist is [`NimbusError::UnknownQueue`], naming the closest.
    pub async fn peek(&self, queue: &str, limit: i64) -> Result<Vec<QueuedMessage>> {
        Ok(self
            .transport
            .browse(&self.known_queue(queue).await?, limit)
            .await?
            .into_iter()
            .map(|row| QueuedMessage {
                id: row.id,
                headers: row.headers,
                body: row.body,
                expires: row.expires,
                unreadable: row.undecodable,
            })
            .collect())
    }

    /// Up to `limit` dead letters, oldest first.
    pub async fn dead_letters(&self, limit: i64) -> Result<Vec<DeadLetterInfo>> {
        self.dead_letters_matching(&DeadLetterQuery::default(), None, limit)
            .await
    }

    /// One page of the dead letters `query` matches, oldest first (by failure time, then id):
    /// up to `limit` of them, starting after `after` (the last letter of the previous page;
    /// `None` for the first). Filtered and paged by the database, so a console or a bulk
    /// operation over many dead letters reads one page at a time, and a filter finds its
    /// matches however many others there are.
    pub async fn dead_letters_matching(
        &self,
        query: &DeadLetterQuery,
        after: Option<&DeadLetterInfo>,
        limit: i64,
    ) -> Result<Vec<DeadLetterInfo>> {
        let after = match after {
            None => None,
            Some(letter) => {
                let id = Uuid::parse_str(&letter.message_id).map_err(|e| {
                    NimbusError::config(
                        format!("dead letter id {:?} is not a UUID: {e}", letter.message_id),
                        "page after a dead letter this database listed",
                    )
                })?;
                let failed_at = letter.failed_at.ok_or_else(|| {
                    NimbusError::config(
                        format!("dead letter {} has no failure time", letter.message_id),
                        "page after a dead letter this database listed",
                    )
                })?;
                Some((failed_at, id))
            }
        };
        let page = crate::driver::statements::DeadLetterPage {
            queue: query.queue.as_deref(),
            failed_at_or_before: query.failed_at_or_before,
            failed_at_or_after: query.failed_at_or_after,
            after,
            limit,
        };
        Ok(self
            .transport
            .dead_letters(&page)
            .await?
            .into_iter()
            .map(DeadLetterInfo::from)
            .collect())
    }

    /// The dead letter `id`, left in place; `None` when there is none (replayed or purged).
    pub async fn dead_letter(&self, id: Uuid) -> Result<Option<DeadLetterInfo>> {
        Ok(self
            .transport
            .dead_letter(id)
            .await?
            .map(DeadLetterInfo::from))
    }

    /// Moves the dead letter `id` back to its queue, with the failure headers removed so it gets
    /// a full retry budget. `false` when there is no such dead letter.
    pub async fn replay_dead_letter(&self, id: Uuid) -> Result<bool> {
        self.transport
            .replay_dead_letter(id, crate::dead_letter::replay_message)
            .await
    }

    /// Every queue with its exact depth, the send time of its oldest message and whether it is
    /// paused.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        let paused = self.transport.paused_queues().await?.unwrap_or_default();
        let mut out = Vec::new();
        for name in self.transport.queues().await? {
            let is_paused = paused
                .iter()
                .any(|p| self.transport.same_queue_name(&p.queue, &name));
            let queue = self.queue(&name)?;
            let depth = self.transport.count(&queue).await?;
            let oldest_sent_at = self
                .transport
                .browse(&queue, 1)
                .await?
                .first()
                .and_then(|m| serde_json::from_str::<crate::Headers>(&m.headers).ok())
                .and_then(|h| {
                    h.get(crate::headers::TIME_SENT)
                        .and_then(|t| crate::headers::parse_time(t))
                });
            out.push(QueueInfo {
                name,
                depth,
                oldest_sent_at,
                paused: is_paused,
            });
        }
        Ok(out)
    }

    /// Sends one message whose body is JSON text, with the headers an endpoint writes
    /// (`NServiceBus.MessageId`, `EnclosedMessageTypes` = `message_type`, `ContentType`,
    /// `MessageIntent` = `Send`, `TimeSent`, conversation and correlation ids = the new id,
    /// `OriginatingEndpoint` = `sender`) plus `extra_headers` (which cannot replace those), to
    /// `queue`, which must exist
    /// ([`NimbusError::UnknownQueue`] names the closest ones otherwise). Returns the message id.
    /// A body that is not JSON is refused before anything is written.
    pub async fn send_json(
        &self,
        queue: &str,
        message_type: &str,
        body: &str,
        sender: &str,
        extra_headers: &[(String, String)],
    ) -> Result<Uuid> {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(body) {
            return Err(NimbusError::config(
                format!("the body is not JSON: {e}"),
                "pass the message as JSON text, e.g. '{\"orderId\":42}'",
            ));
        }
        if message_type.trim().is_empty() {
            return Err(NimbusError::config(
                "the message type is empty",
                "name the type receivers dispatch on, e.g. Shop.Messages.PlaceOrder",
            ));
        }
        let target = self.known_queue(queue).await?;
        let id = Uuid::now_v7();
        let id_text = id.to_string();
        let mut headers = crate::Headers::new();
        for (name, value) in extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        let fixed = [
            (crate::headers::MESSAGE_ID, id_text.clone()),
            (
                crate::headers::ENCLOSED_MESSAGE_TYPES,
                message_type.to_string(),
            ),
            (
                crate::headers::CONTENT_TYPE,
                crate::headers::JSON_CONTENT_TYPE.to_string(),
            ),
            (crate::headers::MESSAGE_INTENT, "Send".to_string()),
            (
                crate::headers::TIME_SENT,
                crate::headers::format_time(chrono::Utc::now()),
            ),
            (crate::headers::CONVERSATION_ID, id_text.clone()),
            (crate::headers::CORRELATION_ID, id_text),
            (crate::headers::ORIGINATING_ENDPOINT, sender.to_string()),
        ];
        for (name, value) in fixed {
            headers.insert(name.to_string(), value);
        }
        let headers_json =
            serde_json::to_string(&headers).map_err(|source| NimbusError::Serialize {
                type_name: "headers",
                source,
            })?;
        self.transport
            .insert_raw(
                &target,
                &RawRow {
                    id,
                    headers: headers_json,
                    body: body.as_bytes().to_vec(),
                    time_to_be_received_ms: None,
                },
            )
            .await?;
        Ok(id)
    }

    /// Deletes the dead letter `id` for good; `false` when there is none.
    pub async fn purge_dead_letter(&self, id: Uuid) -> Result<bool> {
        self.transport.purge_dead_letter(id).await
    }

    /// Every subscription.
    pub async fn subscriptions(&self) -> Result<Vec<SubscriptionInfo>> {
        Ok(self
            .transport
            .subscriptions()
            .await?
            .into_iter()
            .map(|s| SubscriptionInfo {
                topic: s.topic,
                queue: s.queue,
                last_seen_at: s.last_seen_at,
                idle_seconds: s.idle_seconds,
            })
            .collect())
    }

    /// Deletes the subscription of `queue` to the event type `topic`, so publishes stop
    /// reaching it; `false` when there was none. An endpoint that still runs and handles that
    /// event writes its subscription again at its next heartbeat (and at its next start): stop
    /// it, or remove its handler, first.
    pub async fn unsubscribe(&self, topic: &str, queue: &str) -> Result<bool> {
        self.transport.unsubscribe(topic, queue).await
    }

    /// Pauses `queue`: every endpoint receiving from it, in every process, stops taking its
    /// messages within one peek delay (handlers already running finish); sends to it still go
    /// in. The pause is kept in the database (`NimbusPausedQueues`), so it survives restarts,
    /// until [`Database::resume_queue`]. `by` says who paused it, for other operators. `false`
    /// when it was paused already. A queue that does not exist is
    /// [`NimbusError::UnknownQueue`], naming the closest.
    pub async fn pause_queue(&self, queue: &str, by: &str) -> Result<bool> {
        let queue = self.known_queue(queue).await?;
        self.transport.pause(queue.as_str(), by).await
    }

    /// Up to `limit` delayed messages not delivered yet, soonest due first.
    pub async fn delayed_messages(&self, limit: i64) -> Result<Vec<crate::DelayedMessage>> {
        self.transport.delayed_messages(limit).await
    }

    /// Cancels the delayed message `id` while it is pending: `true` when it was, and it will
    /// never be delivered; `false` when it was delivered already (or no pending delayed message
    /// has that id). See [`Bus::cancel_delayed`](crate::Bus::cancel_delayed).
    pub async fn cancel_delayed(&self, id: Uuid) -> Result<bool> {
        self.transport.cancel_delayed(id).await
    }

    /// Moves the due time of the delayed message `id` while it is pending; `false` when it was
    /// delivered already (or no pending delayed message has that id).
    pub async fn reschedule_delayed(&self, id: Uuid, due: crate::Due) -> Result<bool> {
        self.transport.reschedule_delayed(id, due).await
    }

    /// Resumes a paused `queue`: its endpoints take its messages again within one peek delay.
    /// `false` when it was not paused.
    pub async fn resume_queue(&self, queue: &str) -> Result<bool> {
        let queue = self.queue(queue)?;
        self.transport.resume(queue.as_str()).await
    }

    /// Up to `limit` running saga instances of `saga_type` (or of every type), oldest first;
    /// none where no endpoint with sagas has run yet.
    pub async fn sagas(&self, saga_type: Option<&str>, limit: i64) -> Result<Vec<SagaInfo>> {
        Ok(self
            .transport
            .sagas(saga_type, limit)
            .await?
            .into_iter()
            .map(|s| SagaInfo {
                saga_type: s.saga_type,
                correlation: s.correlation,
                state: s.state,
                version: s.version,
                started_at: s.started_at,
                updated_at: s.updated_at,
                id: s.id,
            })
            .collect())
    }

    /// The instance of the saga `saga_type` for `correlation`: its state (JSON text), version
    /// and id; `None` when there is none (it never started, or it completed).
    pub async fn saga(&self, saga_type: &str, correlation: &str) -> Result<Option<SagaState>> {
        Ok(self
            .transport
            .saga(saga_type, correlation)
            .await?
            .map(|row| SagaState {
                id: row.id,
                state: row.state,
                version: row.version,
                completed: row.completed,
            }))
    }

    /// Marks the running instance of saga `saga_type` for `correlation` completed, as its own
    /// `mark_complete()` would: messages of it that come later are ignored, and it is deleted
    /// once `completed_sagas_kept` has passed. `false` when there is no running instance.
    pub async fn complete_saga(&self, saga_type: &str, correlation: &str) -> Result<bool> {
        self.transport.end_saga(saga_type, correlation, false).await
    }

    /// Deletes the instance of saga `saga_type` for `correlation`, running or completed: a
    /// message that may start it starts it anew. `false` when there is none.
    pub async fn delete_saga(&self, saga_type: &str, correlation: &str) -> Result<bool> {
        self.transport.end_saga(saga_type, correlation, true).await
    }

    /// Every start of a bus registered in `NimbusInstances` (live, not responding, or stopped
    /// within the last day), by application and instance, newest start first; `None` where the
    /// table does not exist (no bus of this version has started with auto-create, and nobody
    /// ran `nimbus schema apply`).
    pub async fn instances(&self) -> Result<Option<Vec<InstanceInfo>>> {
        Ok(self
            .transport
            .instances()
            .await?
            .map(|rows| rows.into_iter().map(InstanceInfo::from).collect()))
    }

    /// The monitoring reports of the last `window`, combined into a series per queue and per
    /// endpoint ([`crate::monitoring`]); `None` where `NimbusMonitoring` does not exist.
    pub async fn monitoring(
        &self,
        window: std::time::Duration,
    ) -> Result<Option<crate::monitoring::MonitoringView>> {
        Ok(self
            .transport
            .monitoring_reports(window)
            .await?
            .map(|reports| crate::monitoring::combine(&reports, window)))
    }

    /// The paused queues (none where `NimbusPausedQueues` does not exist yet).
    pub async fn paused_queues(&self) -> Result<Vec<PausedQueue>> {
        Ok(self
            .transport
            .paused_queues()
            .await?
            .unwrap_or_default()
            .into_iter()
            .map(|row| PausedQueue {
                name: row.queue,
                paused_at: row.paused_at,
                paused_by: row.paused_by,
            })
            .collect())
    }

    /// Deletes the subscriptions not seen for `idle`, and the per-instance queues left without
    /// one.
    pub async fn sweep_subscriptions(&self, idle: std::time::Duration) -> Result<SweepReport> {
        let seconds = i64::try_from(idle.as_secs()).map_err(|_| {
            NimbusError::config("the idle period is too long", "use at most a few years")
        })?;
        self.transport.sweep_idle(seconds).await
    }

    /// Whether `table` exists in the schema.
    pub async fn table_exists(&self, table: &str) -> Result<bool> {
        self.transport.table_exists(table).await
    }

    /// The names of `table`'s indexes.
    pub async fn index_names(&self, table: &str) -> Result<Vec<String>> {
        self.transport.index_names(table).await
    }

    /// Drops `queue` with every message in it (in the shared table: deletes its rows).
    pub async fn drop_queue(&self, queue: &str) -> Result<()> {
        self.transport.drop_queue(&self.queue(queue)?).await
    }

    /// Writes `message` into `queue` exactly as given.
    pub async fn insert_raw(&self, queue: &str, message: &RawMessage) -> Result<()> {
        self.transport
            .insert_raw(
                &self.queue(queue)?,
                &RawRow {
                    id: message.id,
                    headers: message.headers.clone(),
                    body: message.body.clone(),
                    time_to_be_received_ms: message.time_to_be_received_ms,
                },
            )
            .await
    }

    /// Runs SQL text in the database's own dialect (several statements allowed, no
    /// parameters): maintenance by hand, at your own risk.
    pub async fn execute(&self, sql: &str) -> Result<()> {
        self.transport.run_sql(sql).await
    }

    /// Drops `schema` and every table in it (PostgreSQL, SQL Server): what a test bus made.
    /// SQLite has no schemas: nothing to do.
    pub(crate) async fn drop_schema_with_everything(&self, schema: &str) -> Result<()> {
        let schema = SchemaName::new(schema)?;
        let quoted = self.dialect.quote(schema.as_str());
        let sql = match self.dialect.folder {
            "postgres" => format!("DROP SCHEMA IF EXISTS {quoted} CASCADE"),
            "sqlserver" => format!(
                // One table at a time: Babelfish keeps only the last row of `SELECT @s += …`.
                "DECLARE @schema sysname = N'{name}';
DECLARE @table sysname, @sql nvarchar(max);
WHILE 1 = 1
BEGIN
    SET @table = NULL;
    SELECT TOP (1) @table = t.name
    FROM sys.tables AS t JOIN sys.schemas AS s ON s.schema_id = t.schema_id
    WHERE s.name = @schema;
    IF @table IS NULL BREAK;
    SET @sql = N'DROP TABLE ' + QUOTENAME(@schema) + N'.' + QUOTENAME(@table);
    EXEC sys.sp_executesql @sql;
END;
SET @sql = N'DROP SCHEMA ' + QUOTENAME(@schema);
IF SCHEMA_ID(@schema) IS NOT NULL EXEC sys.sp_executesql @sql;",
                name = schema.as_str().replace('\'', "''")
            ),
            _ => return Ok(()),
        };
        self.transport.run_sql(&sql).await
    }

    /// Runs a query and returns the integer in its first column of its first row (0 when it
    /// returns no row). `params` are bound as text, in order. An SQL error is an error.
    pub async fn query_scalar(&self, sql: &str, params: &[&str]) -> Result<i64> {
        self.transport.scalar(sql, params).await
    }

    /// `table` quoted and schema-qualified for SQL text in this database's dialect.
    pub fn qualified_table(&self, table: &str) -> String {
        self.transport.qualified(table)
    }

    /// `identifier` quoted in this database's dialect.
    pub fn quote(&self, identifier: &str) -> String {
        self.transport.quote(identifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letter(reason: &str) -> DeadLetterInfo {
        DeadLetterInfo {
            message_id: "01a2".into(),
            original_destination: Some("Sales".into()),
            body: serde_json::to_vec(&serde_json::json!({ "reason": reason })).unwrap_or_default(),
            delivery_attempts: 1,
            failed_at: None,
        }
    }

    #[test]
    fn debug_shows_the_envelope_as_text_cut_short() {
        let letter = DeadLetterInfo {
            body: format!(r#"{{"reason":"declined","body":"{}"}}"#, "x".repeat(5_000)).into_bytes(),
            ..DeadLetterInfo::default()
        };
        let debug = format!("{letter:?}");
        assert!(debug.contains(r#"{\"reason\":\"declined\""#), "{debug}");
        assert!(
            debug.contains("bytes in all") && debug.len() < 1_300,
            "{debug}"
        );
    }

    #[test]
    fn letters_that_failed_the_same_way_read_the_same_without_their_ids() {
        let a = letter("message 01a2 (Shop.Order): the handler failed: boom");
        let b = letter("message 9f3c-77 (Shop.Order): the handler failed: boom");
        assert_eq!(
            a.reason_without_message().as_deref(),
            Some("the handler failed: boom")
        );
        assert_eq!(a.reason_without_message(), b.reason_without_message());
        let other = letter("the body is not JSON (line 1): oops");
        assert_eq!(
            other.reason_without_message().as_deref(),
            Some("the body is not JSON (line 1): oops"),
            "a reason without the prefix stays whole"
        );
    }
}
