//! Test databases: a unique SQLite file, PostgreSQL schema or SQL Server schema per test, dropped
//! afterwards. PostgreSQL schema names are full of quotes, brackets and spaces, so every test also
//! proves that names are quoted and never spliced into SQL; SQL Server schema names are plain
//! (letters, digits, underscores) so that the suite runs on any SQL Server-compatible server, and
//! one SQL Server test probes a hostile name ([`TestDatabase::with_hostile_schema`]).
//!
//! The fixtures read and write Nimbus data through the library's admin API
//! ([`nimbus::admin::Database`]), written once for every database; an SQL error fails the test.
//! Only test-only manipulations with no product statement (aging heartbeats, an old table, a
//! dropped index) are SQL text per database, and they too run through that API.

use std::path::PathBuf;

use nimbus::admin::{ConnectOptions, Database, DeadLetterInfo, RawMessage};
use nimbus::{BusBuilder, StorageLayout};

/// Which backend a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fresh SQLite file in the temp directory.
    Sqlite,
    /// A fresh schema on the PostgreSQL server of `NIMBUS_POSTGRES`
    /// (default `postgres://postgres@127.0.0.1:5432/postgres`).
    Postgres,
    /// A fresh schema in the SQL Server database of `NIMBUS_SQLSERVER` (an ADO.NET connection
    /// string). Its suite is `#[ignore]`d: see [`SQLSERVER_HOW_TO_RUN`].
    SqlServer,
}

/// How to run the SQL Server suite, whose tests are ignored by default.
pub const SQLSERVER_HOW_TO_RUN: &str = "set NIMBUS_SQLSERVER to an ADO.NET connection string and \
    run the ignored tests: NIMBUS_SQLSERVER='Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;\
    Password=…;TrustServerCertificate=true' cargo test -p nimbus-conformance --test sqlserver -- \
    --include-ignored";

/// A backend and a storage layout: what one run of the suite is against.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub kind: Kind,
    pub layout: StorageLayout,
}

impl PartialEq<Kind> for Setup {
    fn eq(&self, other: &Kind) -> bool {
        self.kind == *other
    }
}

impl Setup {
    /// `kind` in `layout`.
    pub const fn new(kind: Kind, layout: StorageLayout) -> Self {
        Setup { kind, layout }
    }

    /// The shared-table layout (seed 003).
    pub fn shared_table(&self) -> bool {
        self.layout == StorageLayout::SharedTable
    }

    /// NServiceBus's PostgreSQL queue table shape (`Id, Expires, Headers, Body, Seq`).
    pub fn nservicebus_shape(&self) -> bool {
        self.layout == StorageLayout::NServiceBusPostgreSql
    }

    /// Whether a queue's rows are keyed by their message id, so that the database refuses a
    /// second copy of one id while the first waits (the shared table, NServiceBus's PostgreSQL
    /// table).
    pub fn keys_rows_by_id(&self) -> bool {
        self.shared_table() || self.nservicebus_shape()
    }
}

/// The PostgreSQL server the suite uses: the Citus coordinator [`use_citus`] named, or
/// `NIMBUS_POSTGRES`, or 127.0.0.1:5432.
pub fn postgres_url() -> String {
    if let Some(coordinator) = CITUS_COORDINATOR.get() {
        return coordinator.clone();
    }
    std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The Citus coordinator this process's PostgreSQL tests run against, when [`use_citus`] named
/// one.
static CITUS_COORDINATOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Runs this process's PostgreSQL tests on the Citus cluster whose coordinator is at `url`: every
/// test schema is made a distributed schema (Citus's schema-based sharding), so its tables live
/// on one worker node, which Citus picks. Once per process, before any test.
pub fn use_citus(url: String) {
    let _ = CITUS_COORDINATOR.set(url);
}

/// Whether this process's PostgreSQL tests run on a Citus cluster ([`use_citus`]).
pub fn on_citus() -> bool {
    CITUS_COORDINATOR.get().is_some()
}

/// Where this process's test databases point their PostgreSQL buses and admin API, when not at
/// the server itself: see [`route_postgres_through`].
static POSTGRES_BUS_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Points the buses and the admin API of every PostgreSQL test database this process makes at
/// `url` (a connection pooler in front of the server of [`postgres_url`]); schemas are still
/// made, checked and dropped through the server itself. Once per process, before any test.
pub fn route_postgres_through(url: String) {
    let _ = POSTGRES_BUS_URL.set(url);
}

/// The URL PostgreSQL test databases give their buses: [`postgres_url`], or what
/// [`route_postgres_through`] said.
pub fn postgres_bus_url() -> String {
    POSTGRES_BUS_URL.get().cloned().unwrap_or_else(postgres_url)
}

/// A PostgreSQL URL or SQL Server connection string whose sessions name themselves `name`
/// (`application_name`, `Application Name`), and what counts them on the server: for tests that
/// count the connections one bus or process holds.
pub struct NamedSessions {
    /// `base` naming its sessions `name`: the URL for the buses under test.
    pub url: String,
    name: String,
    admin: Database,
}

impl NamedSessions {
    /// Names the sessions of `base` `prefix` and a unique suffix; counts them through a
    /// connection of its own to `base`.
    pub async fn new(base: &str, prefix: &str) -> Self {
        let name = format!(
            "{prefix}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let admin = must("connect to count sessions", Database::connect(base).await);
        let url = if base.starts_with("postgres") {
            let separator = if base.contains('?') { '&' } else { '?' };
            format!("{base}{separator}application_name={name}")
        } else {
            // An ADO.NET connection string (SQL Server).
            format!("{};Application Name={name}", base.trim_end_matches(';'))
        };
        NamedSessions { url, name, admin }
    }

    /// The unique name the sessions carry.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sessions open now under the name, as the server counts them (`pg_stat_activity`,
    /// SQL Server's `sys.dm_exec_sessions`).
    pub async fn count(&self) -> i64 {
        let sql = if self.url.starts_with("postgres") {
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1"
        } else {
            "SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE program_name = @P1"
        };
        must(
            "count the sessions of the name",
            self.admin.query_scalar(sql, &[&self.name]).await,
        )
    }
}

/// The SQL Server connection string, if one is configured.
pub fn sqlserver_connection_string() -> Option<String> {
    std::env::var("NIMBUS_SQLSERVER")
        .ok()
        .filter(|s| !s.trim().is_empty())
}

/// Quotes an identifier for PostgreSQL and SQLite.
pub fn pg_quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// Enough rows to list everything a test writes.
const EVERY_ROW: i64 = i32::MAX as i64;

/// The value of an admin call; an error fails the test, naming what was being done.
fn must<T>(what: impl std::fmt::Display, result: nimbus::Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// One test's database. Dropping it deletes the file or the schema.
pub struct TestDatabase {
    pub kind: Kind,
    pub layout: StorageLayout,
    admin: Database,
    /// Declared after `admin`, so that its connections are closed before the cleanup.
    target: Target,
}

/// Where a test's data lives; dropping it deletes the file or the schema.
enum Target {
    Sqlite(PathBuf),
    Postgres { schema: String },
    SqlServer { schema: String, connection: String },
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// A unique schema name with quotes, brackets and spaces.
fn hostile_schema_name() -> String {
    format!("nimbus t\"st [{}] o'k", unique())
}

impl TestDatabase {
    /// Creates an empty database for one test. PostgreSQL must be reachable: the test fails
    /// (never skips) when it is not. So must SQL Server, whose tests are ignored unless asked for.
    pub async fn new(setup: Setup) -> Self {
        let schema = match setup.kind {
            // Letters, digits and underscores: a name every SQL Server-compatible server accepts
            // (Babelfish refuses `]` in schema names). One test probes hostile names there:
            // [`TestDatabase::with_hostile_schema`].
            Kind::SqlServer => format!("nimbus_test_{}", unique()),
            Kind::Sqlite | Kind::Postgres => hostile_schema_name(),
        };
        Self::in_schema(setup, schema).await
    }

    /// Like [`TestDatabase::new`], with a schema name full of quotes, brackets and spaces on
    /// every database (SQLite has one schema, `main`: there the queue names carry the test).
    pub async fn with_hostile_schema(setup: Setup) -> Self {
        Self::in_schema(setup, hostile_schema_name()).await
    }

    async fn in_schema(setup: Setup, schema: String) -> Self {
        let (kind, layout) = (setup.kind, setup.layout);
        let target = match kind {
            Kind::Sqlite => {
                Target::Sqlite(std::env::temp_dir().join(format!("nimbus-test-{}.db", unique())))
            }
            Kind::Postgres => {
                // On Citus, a distributed schema: its tables are placed on a worker node.
                let sharding = if on_citus() {
                    "SET citus.enable_schema_based_sharding TO on; "
                } else {
                    ""
                };
                pg_client()
                    .await
                    .batch_execute(&format!("{sharding}CREATE SCHEMA {}", pg_quote(&schema)))
                    .await
                    .expect("create test schema");
                Target::Postgres { schema }
            }
            Kind::SqlServer => {
                let connection = sqlserver_connection_string().unwrap_or_else(|| {
                    panic!("NIMBUS_SQLSERVER is not set: {SQLSERVER_HOW_TO_RUN}")
                });
                let server = must(
                    "connect to the SQL Server of NIMBUS_SQLSERVER",
                    Database::connect(&connection).await,
                );
                let create = format!("CREATE SCHEMA {}", server.quote(&schema));
                must("create test schema", server.execute(&create).await);
                Target::SqlServer { schema, connection }
            }
        };
        let url = target.url();
        let mut options = ConnectOptions::new().layout(layout);
        if let Some(schema) = target.schema() {
            options = options.schema(schema);
        }
        // On a panic here, `target` is dropped and cleans up.
        let admin = must(
            format!("connect the admin API to {url}"),
            Database::connect_with(&url, options).await,
        );
        TestDatabase {
            kind,
            layout,
            admin,
            target,
        }
    }

    /// The library's admin API on this test's database (schema and layout included).
    pub fn admin(&self) -> &Database {
        &self.admin
    }

    /// The shared-table layout (seed 003).
    pub fn shared_table(&self) -> bool {
        self.layout == StorageLayout::SharedTable
    }

    /// NServiceBus's PostgreSQL queue table shape.
    pub fn nservicebus_shape(&self) -> bool {
        self.layout == StorageLayout::NServiceBusPostgreSql
    }

    /// The database URL (or connection string) for the bus.
    pub fn url(&self) -> String {
        self.target.url()
    }

    /// The SQLite file, for tests that open their own connection to it.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match &self.target {
            Target::Sqlite(path) => Some(path),
            _ => None,
        }
    }

    /// The schema the bus should use, where the backend has schemas.
    pub fn schema(&self) -> Option<&str> {
        self.target.schema()
    }

    /// A builder pointed at this database, with a short peek delay so tests run quickly.
    pub fn builder(&self, application: &str, instance: &str) -> BusBuilder {
        let builder = nimbus::Bus::builder()
            .names(application, instance)
            .database_url(self.url())
            .storage_layout(self.layout)
            .peek_delay(std::time::Duration::from_millis(100));
        match self.schema() {
            Some(schema) => builder.schema(schema),
            None => builder,
        }
    }

    /// `table` quoted and qualified for raw SQL in tests.
    pub fn table(&self, table: &str) -> String {
        self.admin.qualified_table(table)
    }

    /// The table that holds `queue`'s messages in this layout.
    fn storage_table<'a>(&self, queue: &'a str) -> &'a str {
        if self.shared_table() {
            "NimbusMessages"
        } else {
            queue
        }
    }

    /// The table holding `queue`'s messages and the seed indexes it must have: the queue table
    /// with `Index_RowVersion` and `Index_Expires`, or `NimbusMessages` with
    /// `IX_NimbusMessages_Dequeue`.
    pub fn seed_indexes(&self, queue: &str) -> (String, Vec<String>) {
        if self.shared_table() {
            return (
                "NimbusMessages".into(),
                vec!["IX_NimbusMessages_Dequeue".into()],
            );
        }
        if self.nservicebus_shape() {
            // The index of the table's UNIQUE constraint on Seq, as PostgreSQL names it.
            return (queue.to_string(), vec![format!("{queue}_seq_key")]);
        }
        (
            queue.to_string(),
            vec![
                self.index_name(queue, "Index_RowVersion"),
                self.index_name(queue, "Index_Expires"),
            ],
        )
    }

    /// The catalog name of a seed index (`Index_RowVersion`, `Index_Expires`) on `table`:
    /// PostgreSQL and SQLite prefix it with the table name, SQL Server does not.
    pub fn index_name(&self, table: &str, index: &str) -> String {
        match self.kind {
            Kind::SqlServer => index.to_string(),
            Kind::Sqlite | Kind::Postgres => format!("{table}_{index}"),
        }
    }

    /// Whether `queue` still has its storage: its table, or in the shared-table layout any
    /// message or subscription.
    pub async fn queue_exists(&self, queue: &str) -> bool {
        if self.shared_table() {
            return self.count(queue).await > 0 || self.subscriptions_of(queue).await > 0;
        }
        self.table_exists(queue).await
    }

    /// Messages in `queue`, delayed ones included in the shared table (0 when its table does not
    /// exist yet); or, for `NimbusDelayedMessages`, the delayed messages not due yet.
    pub async fn count(&self, queue: &str) -> i64 {
        if queue == "NimbusDelayedMessages" {
            return self.delayed_messages().await;
        }
        if !self.table_exists(self.storage_table(queue)).await {
            return 0;
        }
        must(
            format!("counting the messages of {queue:?}"),
            self.admin.queue_depth(queue).await,
        )
    }

    /// Delayed messages not delivered yet: the rows of `NimbusDelayedMessages`, or in the shared
    /// table the rows not visible yet (no product statement counts those).
    async fn delayed_messages(&self) -> i64 {
        let table = if self.shared_table() {
            "NimbusMessages"
        } else {
            "NimbusDelayedMessages"
        };
        if !self.table_exists(table).await {
            return 0;
        }
        let mut sql = format!("SELECT count(*) FROM {}", self.table(table));
        if self.shared_table() {
            let now = match self.kind {
                Kind::Sqlite => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
                Kind::Postgres => "(now() AT TIME ZONE 'utc')",
                Kind::SqlServer => "SYSUTCDATETIME()",
            };
            sql += &format!(" WHERE {} > {now}", self.admin.quote("VisibleAfter"));
        }
        self.scalar(&sql, &[]).await
    }

    /// The bodies of the messages in `queue` (out of their envelopes in the shared table), in
    /// the order they would be received.
    pub async fn bodies(&self, queue: &str) -> Vec<Vec<u8>> {
        must(
            format!("browsing queue {queue:?}"),
            self.admin.peek(queue, EVERY_ROW).await,
        )
        .into_iter()
        .map(|message| message.body)
        .collect()
    }

    /// Every dead letter, oldest first.
    pub async fn dead_letters(&self) -> Vec<DeadLetterInfo> {
        must(
            "listing the dead letters",
            self.admin.dead_letters(EVERY_ROW).await,
        )
    }

    /// The dead letters, once there are at least `count`; panics after `within`.
    pub async fn dead_letters_within(
        &self,
        count: usize,
        within: std::time::Duration,
    ) -> Vec<DeadLetterInfo> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let letters = self.dead_letters().await;
            if letters.len() >= count {
                return letters;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{count} dead letter(s) within {within:?} (have {})",
                letters.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// How many subscriptions name `queue`.
    pub async fn subscriptions_of(&self, queue: &str) -> i64 {
        let subscriptions = must("listing subscriptions", self.admin.subscriptions().await);
        subscriptions.iter().filter(|s| s.queue == queue).count() as i64
    }

    /// Names of the indexes on `table`.
    pub async fn indexes(&self, table: &str) -> Vec<String> {
        must(
            format!("listing the indexes of {table:?}"),
            self.admin.index_names(table).await,
        )
    }

    /// Whether `table` has an index named `index`, as the database compares names (regardless
    /// of case on SQL Server, whose default collations do so; Babelfish lists them in lower
    /// case).
    pub async fn has_index(&self, table: &str, index: &str) -> bool {
        let names = self.indexes(table).await;
        names.iter().any(|name| match self.kind {
            Kind::SqlServer => name.eq_ignore_ascii_case(index),
            Kind::Sqlite | Kind::Postgres => name == index,
        })
    }

    /// Whether `table` exists in the test's schema.
    pub async fn table_exists(&self, table: &str) -> bool {
        must(
            format!("looking for table {table:?}"),
            self.admin.table_exists(table).await,
        )
    }

    /// Writes a message row by hand, as another program (or a bug) might: `headers` and `body`
    /// verbatim (in the shared table, wrapped into the `Body` envelope as the library writes
    /// it), already expired when `expired`.
    pub async fn insert_raw(&self, queue: &str, headers: &str, body: &[u8], expired: bool) {
        let mut message = RawMessage::new(headers, body);
        if expired {
            message = message.expires_in_ms(-60_000);
        }
        must(
            format!("writing a raw row to {queue:?}"),
            self.admin.insert_raw(queue, &message).await,
        );
    }

    /// Drops `queue` with its messages behind the back of every running endpoint, as an idle
    /// sweep in another process or a DBA would.
    pub async fn drop_queue(&self, queue: &str) {
        must(
            format!("dropping queue {queue:?}"),
            self.admin.drop_queue(queue).await,
        );
    }

    /// Runs raw SQL statements (no results).
    pub async fn execute(&self, sql: &str) {
        must(format!("running {sql}"), self.admin.execute(sql).await);
    }

    /// Runs a statement with text parameters (`?1`, `$1` or `@P1`, see [`Self::param`]) and
    /// returns the integer of its first row, 0 when it returns none (an `UPDATE`, an `INSERT`).
    pub async fn scalar(&self, sql: &str, params: &[&str]) -> i64 {
        must(
            format!("running {sql}"),
            self.admin.query_scalar(sql, params).await,
        )
    }

    /// Parameter `n` in the database's SQL.
    pub fn param(&self, n: usize) -> String {
        match self.kind {
            Kind::Sqlite => format!("?{n}"),
            Kind::Postgres => format!("${n}"),
            Kind::SqlServer => format!("@P{n}"),
        }
    }

    /// How many rows of the queue table `queue` have both version-1 columns (`CorrelationId`,
    /// `ReplyToAddress`) filled. Table-per-queue layout only.
    pub async fn rows_with_v1_columns(&self, queue: &str) -> i64 {
        let q = |column| self.admin.quote(column);
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} IS NOT NULL AND {reply_to} IS NOT NULL \
             AND {reply_to} <> {}",
            self.table(queue),
            q("CorrelationId"),
            self.param(1),
            reply_to = q("ReplyToAddress"),
        );
        self.scalar(&sql, &[""]).await
    }

    /// Moves the `LastSeenAt` of every subscription of `queue` ten days back: longer than the
    /// default `auto_delete_on_idle` of 4 days, as if the instance had stopped heartbeating then.
    pub async fn age_subscriptions(&self, queue: &str) {
        self.age_subscriptions_by(queue, 10 * 24 * 60).await;
    }

    /// Sets the last heartbeat of every subscription of `queue` to `minutes` ago.
    /// Moves the `FailedAt` of dead letter `id` back by `days`, as if it had failed that long
    /// ago.
    pub async fn age_dead_letter(&self, id: &str, days: u32) {
        let (ago, id_param) = match self.kind {
            Kind::Sqlite => (
                format!("strftime('%Y-%m-%d %H:%M:%f', 'now', '-{days} days')"),
                self.param(1),
            ),
            Kind::Postgres => (
                format!("(now() AT TIME ZONE 'utc') - interval '{days} days'"),
                format!("CAST(CAST({} AS text) AS uuid)", self.param(1)),
            ),
            Kind::SqlServer => (
                format!("DATEADD(day, -{days}, SYSUTCDATETIME())"),
                self.param(1),
            ),
        };
        let sql = format!(
            "UPDATE {} SET {} = {ago} WHERE {} = {id_param}",
            self.table("NimbusDeadLetters"),
            self.admin.quote("FailedAt"),
            self.admin.quote("MessageId"),
        );
        self.scalar(&sql, &[id]).await;
    }

    /// Moves every monitoring report `hours` back in time (by its `ReportedAt`).
    pub async fn age_monitoring_reports(&self, hours: u32) {
        let col = self.admin.quote("ReportedAt");
        let ago = match self.kind {
            Kind::Sqlite => format!("strftime('%Y-%m-%d %H:%M:%f', {col}, '-{hours} hours')"),
            Kind::Postgres => format!("{col} - interval '{hours} hours'"),
            Kind::SqlServer => format!("DATEADD(hour, -{hours}, {col})"),
        };
        let sql = format!(
            "UPDATE {} SET {col} = {ago}",
            self.table("NimbusMonitoring")
        );
        self.scalar(&sql, &[]).await;
    }

    /// How many monitoring reports `NimbusMonitoring` holds.
    pub async fn monitoring_rows(&self) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {}", self.table("NimbusMonitoring"));
        self.scalar(&sql, &[]).await
    }

    /// The monitoring reports of the last `window`, combined.
    pub async fn monitoring(
        &self,
        window: std::time::Duration,
    ) -> nimbus::monitoring::MonitoringView {
        must(
            "reading the monitoring reports",
            self.admin.monitoring(window).await,
        )
        .expect("NimbusMonitoring exists")
    }

    pub async fn age_subscriptions_by(&self, queue: &str, minutes: u32) {
        let ago = match self.kind {
            Kind::Sqlite => format!("strftime('%Y-%m-%d %H:%M:%f', 'now', '-{minutes} minutes')"),
            Kind::Postgres => {
                format!("(now() AT TIME ZONE 'utc') - interval '{minutes} minutes'")
            }
            Kind::SqlServer => format!("DATEADD(minute, -{minutes}, SYSUTCDATETIME())"),
        };
        let sql = format!(
            "UPDATE {} SET {} = {ago} WHERE {} = {}",
            self.table("NimbusSubscriptions"),
            self.admin.quote("LastSeenAt"),
            self.admin.quote("SubscriberQueue"),
            self.param(1)
        );
        self.scalar(&sql, &[queue]).await;
        let limit =
            chrono::Utc::now().naive_utc() - chrono::Duration::minutes(i64::from(minutes) - 1);
        let subscriptions = must("listing subscriptions", self.admin.subscriptions().await);
        let of_queue: Vec<_> = subscriptions.iter().filter(|s| s.queue == queue).collect();
        assert!(
            !of_queue.is_empty()
                && of_queue
                    .iter()
                    .all(|s| s.last_seen_at.is_some_and(|t| t < limit)),
            "the subscriptions of {queue:?} were aged: {of_queue:?}"
        );
    }

    /// Creates `NimbusSubscriptions` as seed 003 first had it, without `LastSeenAt`, holding one
    /// subscription.
    pub async fn create_subscriptions_without_last_seen_at(&self, topic: &str, queue: &str) {
        let text = match self.kind {
            Kind::Sqlite => "TEXT",
            Kind::Postgres => "varchar(255)",
            Kind::SqlServer => "NVARCHAR(255)",
        };
        let t = self.table("NimbusSubscriptions");
        let (topic_name, subscriber_queue) = (
            self.admin.quote("TopicName"),
            self.admin.quote("SubscriberQueue"),
        );
        self.execute(&format!(
            "CREATE TABLE {t} ({topic_name} {text} NOT NULL, {subscriber_queue} {text} NOT NULL, \
             PRIMARY KEY ({topic_name}, {subscriber_queue}))"
        ))
        .await;
        let insert = format!(
            "INSERT INTO {t} ({topic_name}, {subscriber_queue}) VALUES ({}, {})",
            self.param(1),
            self.param(2)
        );
        self.scalar(&insert, &[topic, queue]).await;
        let rows = self.scalar(&format!("SELECT count(*) FROM {t}"), &[]).await;
        assert_eq!(rows, 1, "the old subscription was written");
    }

    /// Drops an index of `table` by its catalog name.
    pub async fn drop_index(&self, table: &str, index: &str) {
        let sql = match self.kind {
            Kind::SqlServer => format!(
                "DROP INDEX {} ON {}",
                self.admin.quote(index),
                self.table(table)
            ),
            // The index of a UNIQUE constraint (NServiceBus's Seq) goes with its constraint.
            Kind::Postgres if self.nservicebus_shape() && index.ends_with("_seq_key") => format!(
                "ALTER TABLE {} DROP CONSTRAINT IF EXISTS {}; DROP INDEX IF EXISTS {}",
                self.table(table),
                self.admin.quote(index),
                self.table(index)
            ),
            // Indexes live in the schema: qualified like a table (SQLite has no schemas).
            Kind::Sqlite | Kind::Postgres => format!("DROP INDEX {}", self.table(index)),
        };
        self.execute(&sql).await;
        assert!(!self.has_index(table, index).await, "{index} is dropped");
    }

    /// Creates a plain (on SQL Server: non-clustered) index `index` on `column` of `table`.
    pub async fn create_index(&self, table: &str, index: &str, column: &str) {
        self.create_index_of_type(table, index, column, "").await;
    }

    /// SQL Server only: creates `index` on `column` of `table` as a CLUSTERED index, as
    /// NServiceBus SQL Server transports before the 3.1.5, 4.3.2, 5.0.3 and 6.0.1 patches made
    /// `Index_RowVersion`.
    pub async fn create_clustered_index(&self, table: &str, index: &str, column: &str) {
        assert_eq!(
            self.kind,
            Kind::SqlServer,
            "clustered indexes are SQL Server's"
        );
        self.create_index_of_type(table, index, column, "CLUSTERED ")
            .await;
    }

    async fn create_index_of_type(&self, table: &str, index: &str, column: &str, kind: &str) {
        // PostgreSQL and SQLite name the index alone (it lives in the table's schema).
        let sql = format!(
            "CREATE {kind}INDEX {} ON {} ({})",
            self.admin.quote(index),
            self.table(table),
            self.admin.quote(column)
        );
        self.execute(&sql).await;
    }

    /// The database URL (or connection string) with the server's address replaced by `proxy`,
    /// and the server's own address, for the outage tests. `None` for SQLite (no network).
    pub fn url_through(&self, proxy: std::net::SocketAddr) -> Option<(String, String)> {
        match &self.target {
            Target::Sqlite(_) => None,
            Target::Postgres { .. } => {
                let config: tokio_postgres::Config =
                    postgres_url().parse().expect("NIMBUS_POSTGRES");
                let host = match config.get_hosts().first() {
                    Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
                    _ => "127.0.0.1".into(),
                };
                let port = config.get_ports().first().copied().unwrap_or(5432);
                let user = config.get_user().unwrap_or("postgres");
                let db = config.get_dbname().unwrap_or("postgres");
                let password = config
                    .get_password()
                    .map(|p| format!(":{}", String::from_utf8_lossy(p)))
                    .unwrap_or_default();
                // The server's TLS setting goes through the proxy too (a Citus node's
                // certificate is its own, self-signed: the suite's URL turns TLS off).
                let tls = match config.get_ssl_mode() {
                    tokio_postgres::config::SslMode::Disable => "&sslmode=disable",
                    _ => "",
                };
                Some((
                    format!("postgres://{user}{password}@{proxy}/{db}?connect_timeout=2{tls}"),
                    format!("{host}:{port}"),
                ))
            }
            Target::SqlServer { connection, .. } => {
                let is_address = |key: &str| {
                    [
                        "server",
                        "data source",
                        "address",
                        "addr",
                        "network address",
                    ]
                    .contains(&key)
                };
                let mut upstream = None;
                let mut rest = Vec::new();
                for pair in connection.split(';') {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    let key = key.trim().to_ascii_lowercase();
                    if is_address(&key) {
                        upstream = Some(sqlserver_address(value));
                    } else if key != "connect timeout" {
                        rest.push(pair);
                    }
                }
                Some((
                    format!(
                        "Server=tcp:{},{};Connect Timeout=2;{}",
                        proxy.ip(),
                        proxy.port(),
                        rest.join(";")
                    ),
                    upstream.expect("NIMBUS_SQLSERVER names its server"),
                ))
            }
        }
    }

    /// SQLite only: from a connection of its own on another thread (as another process would),
    /// takes the file's write lock, holds it for `duration`, and releases it. The handle resolves
    /// to `true` once it was taken and released.
    pub fn hold_write_lock(&self, duration: std::time::Duration) -> tokio::task::JoinHandle<bool> {
        let Target::Sqlite(path) = &self.target else {
            unreachable!("only called for SQLite")
        };
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path).expect("open sqlite");
            conn.busy_timeout(std::time::Duration::from_secs(30))
                .expect("busy timeout");
            let taken = conn.execute_batch("BEGIN EXCLUSIVE").is_ok();
            std::thread::sleep(duration);
            taken && conn.execute_batch("COMMIT").is_ok()
        })
    }
}

/// `host:port` of an ADO.NET `Server` value (`tcp:host,port`, `host,port`, `host\instance`).
fn sqlserver_address(server: &str) -> String {
    let server = server.trim();
    let server = match server.get(..4) {
        Some(prefix) if prefix.eq_ignore_ascii_case("tcp:") => &server[4..],
        _ => server,
    };
    let (host, port) = server.split_once(',').unwrap_or((server, "1433"));
    let host = host.split('\\').next().unwrap_or(host).trim();
    let host = if host == "." || host.eq_ignore_ascii_case("(local)") {
        "localhost"
    } else {
        host
    };
    format!("{host}:{}", port.trim())
}

impl Target {
    fn url(&self) -> String {
        match self {
            Target::Sqlite(path) => format!("sqlite://{}", path.display()),
            Target::Postgres { .. } => postgres_bus_url(),
            Target::SqlServer { connection, .. } => connection.clone(),
        }
    }

    fn schema(&self) -> Option<&str> {
        match self {
            Target::Sqlite(_) => None,
            Target::Postgres { schema } | Target::SqlServer { schema, .. } => Some(schema),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let cleanup: Box<dyn FnOnce() + Send> = match self {
            Target::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
                return;
            }
            Target::Postgres { schema } => {
                let mut sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", pg_quote(schema));
                if std::thread::panicking() {
                    // A failed test's endpoints still hold row locks in open receives, and they
                    // run on the very thread this drop blocks: end their sessions, or the
                    // DROP would wait for them forever.
                    sql = format!(
                        "SELECT pg_terminate_backend(l.pid) FROM pg_locks AS l \
                         JOIN pg_class AS c ON c.oid = l.relation \
                         JOIN pg_namespace AS n ON n.oid = c.relnamespace \
                         WHERE n.nspname = '{}' AND l.pid <> pg_backend_pid(); {sql}",
                        schema.replace('\'', "''")
                    );
                }
                Box::new(move || {
                    block_on(async move {
                        if let Ok((client, conn)) =
                            tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls).await
                        {
                            tokio::spawn(conn);
                            let _ = client.batch_execute(&sql).await;
                        }
                    })
                })
            }
            Target::SqlServer { schema, connection } => {
                let connection = connection.clone();
                // A failed test's endpoints may still hold locks in the schema, on the thread
                // this drop blocks: give up after a while rather than wait for them forever.
                let drop_all = format!(
                    "SET LOCK_TIMEOUT 10000;
DECLARE @schema sysname = N'{}';
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
EXEC sys.sp_executesql @sql;",
                    schema.replace('\'', "''")
                );
                Box::new(move || {
                    block_on(async move {
                        if let Ok(server) = Database::connect(&connection).await {
                            let _ = server.execute(&drop_all).await;
                        }
                    })
                })
            }
        };
        // Drop runs inside the test's runtime; clean up on a runtime of our own.
        let _ = std::thread::spawn(cleanup).join();
    }
}

fn block_on(future: impl std::future::Future<Output = ()>) {
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        rt.block_on(future);
    }
}

/// A new connection to the test server (PostgreSQL), its connection task spawned.
pub async fn pg_client() -> tokio_postgres::Client {
    let url = postgres_url();
    let (client, conn) = match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        Ok(c) => c,
        Err(e) => panic!(
            "PostgreSQL at {url} is unreachable ({e}). The PostgreSQL suite never skips: start the \
             server (pg_ctlcluster <version> main start) or set NIMBUS_POSTGRES"
        ),
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}
