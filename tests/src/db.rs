//! Test databases: a unique SQLite file, PostgreSQL schema or SQL Server schema per test, dropped
//! afterwards. Schema names are full of quotes, brackets and spaces, so every test also proves
//! that names are quoted and never spliced into SQL.

use std::io::Write;
use std::path::PathBuf;

use nimbus::{BusBuilder, StorageLayout};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

/// Which backend a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fresh SQLite file in the temp directory.
    Sqlite,
    /// A fresh schema on the PostgreSQL server of `NIMBUS_POSTGRES`
    /// (default `postgres://postgres@127.0.0.1:5432/postgres`).
    Postgres,
    /// A fresh schema in the SQL Server database of `NIMBUS_SQLSERVER` (an ADO.NET connection
    /// string); skipped with a notice when it is not set.
    SqlServer,
}

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
    /// The shared-table layout (seed 003).
    pub fn shared_table(&self) -> bool {
        self.layout == StorageLayout::SharedTable
    }
}

/// The PostgreSQL server the suite uses.
pub fn postgres_url() -> String {
    std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The SQL Server connection string, if one is configured.
pub fn sqlserver_connection_string() -> Option<String> {
    std::env::var("NIMBUS_SQLSERVER")
        .ok()
        .filter(|s| !s.trim().is_empty())
}

/// True when the backend cannot be reached in this environment by design (SQL Server without
/// `NIMBUS_SQLSERVER`); prints a notice that the test was skipped. PostgreSQL is never skipped.
pub fn skip(kind: Kind, test: &str) -> bool {
    if kind == Kind::SqlServer && sqlserver_connection_string().is_none() {
        // Written to the process's stderr directly, so the notice shows even when the test
        // harness captures output.
        let _ = writeln!(
            std::io::stderr(),
            "notice: NIMBUS_SQLSERVER is not set: skipped the SQL Server conformance test {test}"
        );
        return true;
    }
    false
}

/// A row of `NimbusDeadLetters`.
#[derive(Debug, Clone)]
pub struct DeadLetterRow {
    pub message_id: String,
    pub original_destination: Option<String>,
    pub body: Vec<u8>,
    pub delivery_attempts: i32,
}

/// One test's database. Dropping it deletes the file or the schema.
pub struct TestDatabase {
    pub kind: Kind,
    pub layout: StorageLayout,
    target: Target,
}

enum Target {
    Sqlite(PathBuf),
    Postgres { schema: String },
    SqlServer { schema: String, connection: String },
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Quotes an identifier for PostgreSQL and SQLite.
pub fn pg_quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// Quotes an identifier for SQL Server.
pub fn mssql_quote(identifier: &str) -> String {
    format!("[{}]", identifier.replace(']', "]]"))
}

impl TestDatabase {
    /// Creates an empty database for one test. PostgreSQL must be reachable: the test fails
    /// (never skips) when it is not.
    pub async fn new(setup: Setup) -> Self {
        let (kind, layout) = (setup.kind, setup.layout);
        // Quotes, brackets, spaces.
        let schema = format!("nimbus t\"st [{}] o'k", unique());
        let target = match kind {
            Kind::Sqlite => {
                Target::Sqlite(std::env::temp_dir().join(format!("nimbus-test-{}.db", unique())))
            }
            Kind::Postgres => {
                pg_client()
                    .await
                    .batch_execute(&format!("CREATE SCHEMA {}", pg_quote(&schema)))
                    .await
                    .expect("create test schema");
                Target::Postgres { schema }
            }
            Kind::SqlServer => {
                let connection =
                    sqlserver_connection_string().expect("NIMBUS_SQLSERVER (checked by skip)");
                let mut client = mssql_client(&connection).await;
                client
                    .execute(format!("CREATE SCHEMA {}", mssql_quote(&schema)), &[])
                    .await
                    .expect("create test schema");
                Target::SqlServer { schema, connection }
            }
        };
        TestDatabase {
            kind,
            layout,
            target,
        }
    }

    /// The shared-table layout (seed 003).
    pub fn shared_table(&self) -> bool {
        self.layout == StorageLayout::SharedTable
    }

    /// The database URL (or connection string) for the bus.
    pub fn url(&self) -> String {
        match &self.target {
            Target::Sqlite(path) => format!("sqlite://{}", path.display()),
            Target::Postgres { .. } => postgres_url(),
            Target::SqlServer { connection, .. } => connection.clone(),
        }
    }

    /// The schema the bus should use, where the backend has schemas.
    pub fn schema(&self) -> Option<&str> {
        match &self.target {
            Target::Sqlite(_) => None,
            Target::Postgres { schema } | Target::SqlServer { schema, .. } => Some(schema),
        }
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
        match &self.target {
            Target::Sqlite(_) => pg_quote(table),
            Target::Postgres { schema } => format!("{}.{}", pg_quote(schema), pg_quote(table)),
            Target::SqlServer { schema, .. } => {
                format!("{}.{}", mssql_quote(schema), mssql_quote(table))
            }
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
        (
            queue.to_string(),
            vec![
                self.index_name(queue, "Index_RowVersion"),
                self.index_name(queue, "Index_Expires"),
            ],
        )
    }

    /// Whether `queue` still has its storage: its table, or in the shared-table layout any
    /// message or subscription.
    pub async fn queue_exists(&self, queue: &str) -> bool {
        if self.shared_table() {
            return self.count(queue).await > 0 || self.subscriptions_of(queue).await > 0;
        }
        self.table_exists(queue).await
    }

    /// How many rows of the queue table `queue` have both version-1 columns (`CorrelationId`,
    /// `ReplyToAddress`) filled. Table-per-queue layout only.
    pub async fn rows_with_v1_columns(&self, queue: &str) -> i64 {
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} IS NOT NULL AND {} IS NOT NULL AND {} <> {}",
            self.table(queue),
            self.column("CorrelationId"),
            self.column("ReplyToAddress"),
            self.column("ReplyToAddress"),
            self.param(1)
        );
        self.scalar(sql, Some(String::new())).await
    }

    /// How many subscription rows name `queue`.
    pub async fn subscriptions_of(&self, queue: &str) -> i64 {
        let t = self.table("NimbusSubscriptions");
        let sql = format!(
            "SELECT count(*) FROM {t} WHERE {} = {}",
            self.column("SubscriberQueue"),
            self.param(1)
        );
        self.scalar(sql, Some(queue.to_string())).await
    }

    fn param(&self, n: usize) -> String {
        match self.kind {
            Kind::Sqlite => format!("?{n}"),
            Kind::Postgres => format!("${n}"),
            Kind::SqlServer => format!("@P{n}"),
        }
    }

    /// Runs a query returning one integer, with at most one text parameter.
    async fn scalar(&self, sql: String, value: Option<String>) -> i64 {
        let values: Vec<String> = value.into_iter().collect();
        match &self.target {
            Target::Sqlite(_) => {
                self.with_sqlite(move |c| {
                    c.query_row(&sql, rusqlite::params_from_iter(values), |r| r.get(0))
                        .unwrap_or(0)
                })
                .await
            }
            Target::Postgres { .. } => {
                let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = values
                    .iter()
                    .map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync))
                    .collect();
                match pg_client().await.query_one(&sql, &params).await {
                    Ok(row) => row.get(0),
                    Err(_) => 0,
                }
            }
            Target::SqlServer { connection, .. } => {
                let mut client = mssql_client(connection).await;
                let params: Vec<&dyn tiberius::ToSql> =
                    values.iter().map(|v| v as &dyn tiberius::ToSql).collect();
                let Ok(stream) = client.query(sql, &params).await else {
                    return 0;
                };
                match stream.into_row().await {
                    Ok(Some(row)) => row.get::<i32, _>(0).map(i64::from).unwrap_or(0),
                    _ => 0,
                }
            }
        }
    }

    /// The catalog name of a seed index (`Index_RowVersion`, `Index_Expires`) on `table`:
    /// PostgreSQL and SQLite prefix it with the table name, SQL Server does not.
    pub fn index_name(&self, table: &str, index: &str) -> String {
        match self.kind {
            Kind::SqlServer => index.to_string(),
            Kind::Sqlite | Kind::Postgres => format!("{table}_{index}"),
        }
    }

    /// Runs `f` with a connection of its own to the SQLite file, on a blocking thread: waiting for
    /// the file's write lock must not block the runtime that runs the endpoint holding it.
    async fn with_sqlite<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> T + Send + 'static,
    ) -> T {
        let Target::Sqlite(path) = &self.target else {
            unreachable!("only called for SQLite")
        };
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path).expect("open sqlite");
            conn.busy_timeout(std::time::Duration::from_secs(30))
                .expect("busy timeout");
            f(&conn)
        })
        .await
        .expect("sqlite task")
    }

    /// Runs raw SQL statements (no results).
    pub async fn execute(&self, sql: &str) {
        match &self.target {
            Target::Sqlite(_) => {
                let sql = sql.to_string();
                self.with_sqlite(move |c| c.execute_batch(&sql).expect("raw sql"))
                    .await
            }
            Target::Postgres { .. } => pg_client().await.batch_execute(sql).await.expect("raw sql"),
            Target::SqlServer { connection, .. } => {
                mssql_client(connection)
                    .await
                    .simple_query(sql)
                    .await
                    .expect("raw sql")
                    .into_results()
                    .await
                    .expect("raw sql results");
            }
        }
    }

    /// Messages waiting in `queue` (0 when it does not exist yet), or rows in a `Nimbus…`
    /// table. In the shared-table layout a queue is its visible rows of `NimbusMessages`, and
    /// `NimbusDelayedMessages` counts the rows not visible yet.
    pub async fn count(&self, table: &str) -> i64 {
        if self.shared_table() && !["NimbusDeadLetters", "NimbusSubscriptions"].contains(&table) {
            let now = match self.kind {
                Kind::Sqlite => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
                Kind::Postgres => "(now() AT TIME ZONE 'utc')",
                Kind::SqlServer => "SYSUTCDATETIME()",
            };
            let messages = self.table("NimbusMessages");
            let visible = self.column("VisibleAfter");
            if table == "NimbusDelayedMessages" {
                let sql = format!("SELECT count(*) FROM {messages} WHERE {visible} > {now}");
                return self.scalar(sql, None).await;
            }
            let sql = format!(
                "SELECT count(*) FROM {messages} WHERE {} = {} AND {visible} <= {now}",
                self.column("Destination"),
                self.param(1)
            );
            return self.scalar(sql, Some(table.to_string())).await;
        }
        let sql = format!("SELECT count(*) FROM {}", self.table(table));
        match &self.target {
            Target::Sqlite(_) => {
                self.with_sqlite(move |c| c.query_row(&sql, [], |r| r.get(0)).unwrap_or(0))
                    .await
            }
            Target::Postgres { .. } => match pg_client().await.query_one(&sql, &[]).await {
                Ok(row) => row.get(0),
                Err(_) => 0,
            },
            Target::SqlServer { connection, .. } => {
                let mut client = mssql_client(connection).await;
                let Ok(stream) = client.query(sql, &[]).await else {
                    return 0;
                };
                match stream.into_row().await {
                    Ok(Some(row)) => row.get::<i32, _>(0).map(i64::from).unwrap_or(0),
                    _ => 0,
                }
            }
        }
    }

    /// The `Body` column of every row of a queue table, oldest first.
    pub async fn bodies(&self, table: &str) -> Vec<Vec<u8>> {
        if self.shared_table() {
            return self.shared_bodies(table).await;
        }
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            self.column("Body"),
            self.table(table),
            self.column("RowVersion")
        );
        match &self.target {
            Target::Sqlite(_) => {
                self.with_sqlite(move |conn| {
                    let mut stmt = conn.prepare(&sql).expect("prepare");
                    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
                        .expect("query")
                        .collect::<Result<_, _>>()
                        .expect("rows")
                })
                .await
            }
            Target::Postgres { .. } => pg_client()
                .await
                .query(&sql, &[])
                .await
                .expect("query")
                .iter()
                .map(|r| r.get::<_, Vec<u8>>(0))
                .collect(),
            Target::SqlServer { connection, .. } => mssql_client(connection)
                .await
                .query(sql, &[])
                .await
                .expect("query")
                .into_first_result()
                .await
                .expect("rows")
                .iter()
                .map(|r| r.get::<&[u8], _>(0).unwrap_or_default().to_vec())
                .collect(),
        }
    }

    /// The message bodies of `queue` in `NimbusMessages`, in receive order, out of their
    /// envelopes.
    async fn shared_bodies(&self, queue: &str) -> Vec<Vec<u8>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = {} ORDER BY {}, {}",
            self.column("Body"),
            self.table("NimbusMessages"),
            self.column("Destination"),
            self.param(1),
            self.column("VisibleAfter"),
            self.column("MessageId"),
        );
        let queue = queue.to_string();
        let envelopes: Vec<Vec<u8>> = match &self.target {
            Target::Sqlite(_) => {
                self.with_sqlite(move |conn| {
                    let mut stmt = conn.prepare(&sql).expect("prepare");
                    stmt.query_map([queue], |r| r.get::<_, Vec<u8>>(0))
                        .expect("query")
                        .collect::<Result<_, _>>()
                        .expect("rows")
                })
                .await
            }
            Target::Postgres { .. } => pg_client()
                .await
                .query(&sql, &[&queue])
                .await
                .expect("query")
                .iter()
                .map(|r| r.get::<_, Vec<u8>>(0))
                .collect(),
            Target::SqlServer { connection, .. } => mssql_client(connection)
                .await
                .query(sql, &[&queue.as_str()])
                .await
                .expect("query")
                .into_first_result()
                .await
                .expect("rows")
                .iter()
                .map(|r| r.get::<&[u8], _>(0).unwrap_or_default().to_vec())
                .collect(),
        };
        envelopes
            .iter()
            .map(|e| nimbus::shared_envelope::unwrap_body(e))
            .collect()
    }

    fn column(&self, name: &str) -> String {
        match self.kind {
            Kind::SqlServer => mssql_quote(name),
            Kind::Sqlite | Kind::Postgres => pg_quote(name),
        }
    }

    /// Names of the indexes on `table`.
    pub async fn indexes(&self, table: &str) -> Vec<String> {
        match &self.target {
            Target::Sqlite(_) => {
                let table = table.to_string();
                self.with_sqlite(move |conn| {
                    let mut stmt = conn
                        .prepare(
                            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1",
                        )
                        .expect("prepare");
                    stmt.query_map([table], |r| r.get::<_, String>(0))
                        .expect("query")
                        .collect::<Result<_, _>>()
                        .expect("rows")
                })
                .await
            }
            Target::Postgres { schema } => pg_client()
                .await
                .query(
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND tablename = $2",
                    &[schema, &table],
                )
                .await
                .expect("query")
                .iter()
                .map(|r| r.get(0))
                .collect(),
            Target::SqlServer { schema, connection } => mssql_client(connection)
                .await
                .query(
                    "SELECT i.name FROM sys.indexes AS i JOIN sys.tables AS t ON t.object_id = i.object_id \
                     WHERE t.schema_id = SCHEMA_ID(@P1) AND t.name = @P2 AND i.name IS NOT NULL",
                    &[&schema.as_str(), &table],
                )
                .await
                .expect("query")
                .into_first_result()
                .await
                .expect("rows")
                .iter()
                .filter_map(|r| r.get::<&str, _>(0).map(str::to_string))
                .collect(),
        }
    }

    /// Inserts a row into a queue table by hand, as another program (or a bug) might: `headers`
    /// and `body` verbatim, and an `Expires` one hour in the past when `expired`.
    pub async fn insert_raw(&self, table: &str, headers: &str, body: &[u8], expired: bool) {
        if self.shared_table() {
            return self.insert_raw_shared(table, headers, body, expired).await;
        }
        let id = uuid::Uuid::new_v4();
        let t = self.table(table);
        match &self.target {
            Target::Sqlite(_) => {
                let expires = if expired {
                    "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour')"
                } else {
                    "NULL"
                };
                let sql = format!(
                    "INSERT INTO {t} (\"Id\", \"CorrelationId\", \"ReplyToAddress\", \"Recoverable\", \"Expires\", \"Headers\", \"Body\") \
                     VALUES (?1, NULL, NULL, 1, {expires}, ?2, ?3)"
                );
                let (headers, body) = (headers.to_string(), body.to_vec());
                self.with_sqlite(move |c| {
                    c.execute(&sql, rusqlite::params![id.to_string(), headers, body])
                        .expect("raw insert")
                })
                .await;
            }
            Target::Postgres { .. } => {
                let expires = if expired {
                    "(now() AT TIME ZONE 'utc') - interval '1 hour'"
                } else {
                    "NULL"
                };
                pg_client()
                    .await
                    .execute(
                        &format!(
                            "INSERT INTO {t} (\"Id\", \"CorrelationId\", \"ReplyToAddress\", \"Recoverable\", \"Expires\", \"Headers\", \"Body\") \
                             VALUES ($1, NULL, NULL, TRUE, {expires}, $2, $3)"
                        ),
                        &[&id, &headers, &body],
                    )
                    .await
                    .expect("raw insert");
            }
            Target::SqlServer { connection, .. } => {
                let expires = if expired {
                    "DATEADD(hour, -1, GETUTCDATE())"
                } else {
                    "NULL"
                };
                mssql_client(connection)
                    .await
                    .execute(
                        format!(
                            "INSERT INTO {t} ([Id], [CorrelationId], [ReplyToAddress], [Recoverable], [Expires], [Headers], [Body]) \
                             VALUES (@P1, NULL, NULL, 1, {expires}, @P2, @P3)"
                        ),
                        &[&id, &headers, &body],
                    )
                    .await
                    .expect("raw insert");
            }
        }
    }

    /// `insert_raw` for the shared-table layout: headers that are JSON go into a `Body`
    /// envelope with the body; headers that are not make the whole `Body` (not an envelope).
    async fn insert_raw_shared(&self, queue: &str, headers: &str, body: &[u8], expired: bool) {
        let id = uuid::Uuid::now_v7();
        let envelope = if serde_json::from_str::<serde_json::Value>(headers).is_ok() {
            let mut e = format!("{{\"headers\":{headers},\"body\":").into_bytes();
            e.extend_from_slice(body);
            e.push(b'}');
            e
        } else {
            headers.as_bytes().to_vec()
        };
        let t = self.table("NimbusMessages");
        match &self.target {
            Target::Sqlite(_) => {
                let expires = if expired {
                    "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour')"
                } else {
                    "NULL"
                };
                let sql = format!(
                    "INSERT INTO {t} (\"MessageId\", \"Destination\", \"Body\", \"VisibleAfter\", \"ExpiresAt\") \
                     VALUES (?1, ?2, ?3, strftime('%Y-%m-%d %H:%M:%f', 'now'), {expires})"
                );
                let queue = queue.to_string();
                self.with_sqlite(move |c| {
                    c.execute(&sql, rusqlite::params![id.to_string(), queue, envelope])
                        .expect("raw insert")
                })
                .await;
            }
            Target::Postgres { .. } => {
                let now = "(now() AT TIME ZONE 'utc')";
                let expires = if expired {
                    "(now() AT TIME ZONE 'utc') - interval '1 hour'"
                } else {
                    "NULL"
                };
                pg_client()
                    .await
                    .execute(
                        &format!(
                            "INSERT INTO {t} (\"MessageId\", \"Destination\", \"Body\", \"VisibleAfter\", \"ExpiresAt\") \
                             VALUES ($1, $2, $3, {now}, {expires})"
                        ),
                        &[&id, &queue, &envelope],
                    )
                    .await
                    .expect("raw insert");
            }
            Target::SqlServer { connection, .. } => {
                let expires = if expired {
                    "DATEADD(hour, -1, SYSUTCDATETIME())"
                } else {
                    "NULL"
                };
                mssql_client(connection)
                    .await
                    .execute(
                        format!(
                            "INSERT INTO {t} ([MessageId], [Destination], [Body], [VisibleAfter], [ExpiresAt]) \
                             VALUES (@P1, @P2, @P3, SYSUTCDATETIME(), {expires})"
                        ),
                        &[&id, &queue, &envelope],
                    )
                    .await
                    .expect("raw insert");
            }
        }
    }

    /// Every row of `NimbusDeadLetters`: MessageId, OriginalDestination, Body, DeliveryAttempts.
    pub async fn dead_letters(&self) -> Vec<DeadLetterRow> {
        let t = self.table("NimbusDeadLetters");
        match &self.target {
            Target::Sqlite(_) => {
                let sql = format!(
                    "SELECT \"MessageId\", \"OriginalDestination\", \"Body\", \"DeliveryAttempts\" FROM {t}"
                );
                self.with_sqlite(move |conn| {
                    let Ok(mut stmt) = conn.prepare(&sql) else {
                        return Vec::new();
                    };
                    stmt.query_map([], |r| {
                        Ok(DeadLetterRow {
                            message_id: r.get(0)?,
                            original_destination: r.get(1)?,
                            body: r.get(2)?,
                            delivery_attempts: r.get(3)?,
                        })
                    })
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("rows")
                })
                .await
            }
            Target::Postgres { .. } => pg_client()
                .await
                .query(
                    &format!(
                        "SELECT \"MessageId\"::text, \"OriginalDestination\", \"Body\", \"DeliveryAttempts\" FROM {t}"
                    ),
                    &[],
                )
                .await
                .expect("query")
                .iter()
                .map(|r| DeadLetterRow {
                    message_id: r.get(0),
                    original_destination: r.get(1),
                    body: r.get(2),
                    delivery_attempts: r.get(3),
                })
                .collect(),
            Target::SqlServer { connection, .. } => mssql_client(connection)
                .await
                .query(
                    format!(
                        "SELECT CAST([MessageId] AS nvarchar(36)), [OriginalDestination], [Body], [DeliveryAttempts] FROM {t}"
                    ),
                    &[],
                )
                .await
                .expect("query")
                .into_first_result()
                .await
                .expect("rows")
                .iter()
                .map(|r| DeadLetterRow {
                    message_id: r.get::<&str, _>(0).unwrap_or_default().to_lowercase(),
                    original_destination: r.get::<&str, _>(1).map(str::to_string),
                    body: r.get::<&[u8], _>(2).unwrap_or_default().to_vec(),
                    delivery_attempts: r.get::<i32, _>(3).unwrap_or_default(),
                })
                .collect(),
        }
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
                Some((
                    format!("postgres://{user}{password}@{proxy}/{db}?connect_timeout=2"),
                    format!("{host}:{port}"),
                ))
            }
            Target::SqlServer { connection, .. } => {
                let config =
                    tiberius::Config::from_ado_string(connection).expect("NIMBUS_SQLSERVER");
                let upstream = config.get_addr();
                let rest: Vec<&str> = connection
                    .split(';')
                    .filter(|pair| {
                        let key = pair
                            .split('=')
                            .next()
                            .unwrap_or("")
                            .trim()
                            .to_ascii_lowercase();
                        ![
                            "server",
                            "data source",
                            "address",
                            "addr",
                            "network address",
                            "connect timeout",
                        ]
                        .contains(&key.as_str())
                    })
                    .collect();
                Some((
                    format!(
                        "Server=tcp:{},{};Connect Timeout=2;{}",
                        proxy.ip(),
                        proxy.port(),
                        rest.join(";")
                    ),
                    upstream,
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

    /// Whether `table` exists in the test's schema.
    pub async fn table_exists(&self, table: &str) -> bool {
        match &self.target {
            Target::Sqlite(_) => {
                let table = table.to_string();
                self.with_sqlite(move |c| {
                    c.query_row(
                        "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                        [table],
                        |r| r.get::<_, i64>(0),
                    )
                    .expect("query")
                        == 1
                })
                .await
            }
            Target::Postgres { schema } => pg_client()
                .await
                .query_opt(
                    "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
                    &[schema, &table],
                )
                .await
                .expect("query")
                .is_some(),
            Target::SqlServer { schema, connection } => mssql_client(connection)
                .await
                .query(
                    "SELECT 1 FROM sys.tables WHERE schema_id = SCHEMA_ID(@P1) AND name = @P2",
                    &[&schema.as_str(), &table],
                )
                .await
                .expect("query")
                .into_row()
                .await
                .expect("row")
                .is_some(),
        }
    }

    /// Moves the `LastSeenAt` of every subscription of `queue` ten days back: longer than the
    /// default `auto_delete_on_idle` of 4 days, as if the instance had stopped heartbeating then.
    pub async fn age_subscriptions(&self, queue: &str) {
        let t = self.table("NimbusSubscriptions");
        match &self.target {
            Target::Sqlite(_) => {
                let sql = format!(
                    "UPDATE {t} SET \"LastSeenAt\" = strftime('%Y-%m-%d %H:%M:%f', 'now', '-10 days') \
                     WHERE \"SubscriberQueue\" = ?1"
                );
                let queue = queue.to_string();
                self.with_sqlite(move |c| c.execute(&sql, [queue]).expect("age"))
                    .await;
            }
            Target::Postgres { .. } => {
                pg_client()
                    .await
                    .execute(
                        &format!(
                            "UPDATE {t} SET \"LastSeenAt\" = (now() AT TIME ZONE 'utc') - interval '10 days' \
                             WHERE \"SubscriberQueue\" = $1"
                        ),
                        &[&queue],
                    )
                    .await
                    .expect("age");
            }
            Target::SqlServer { connection, .. } => {
                mssql_client(connection)
                    .await
                    .execute(
                        format!(
                            "UPDATE {t} SET [LastSeenAt] = DATEADD(day, -10, SYSUTCDATETIME()) \
                             WHERE [SubscriberQueue] = @P1"
                        ),
                        &[&queue],
                    )
                    .await
                    .expect("age");
            }
        }
    }

    /// Creates `NimbusSubscriptions` as seed 003 first had it, without `LastSeenAt`, holding one
    /// subscription.
    pub async fn create_subscriptions_without_last_seen_at(&self, topic: &str, queue: &str) {
        let t = self.table("NimbusSubscriptions");
        match &self.target {
            Target::Sqlite(_) => {
                let (topic, queue) = (topic.to_string(), queue.to_string());
                self.with_sqlite(move |c| {
                    c.execute_batch(&format!(
                        "CREATE TABLE {t} (\"TopicName\" TEXT NOT NULL, \"SubscriberQueue\" TEXT NOT NULL, \
                         PRIMARY KEY (\"TopicName\", \"SubscriberQueue\"))"
                    ))
                    .expect("old table");
                    c.execute(&format!("INSERT INTO {t} VALUES (?1, ?2)"), [topic, queue])
                        .expect("old row");
                })
                .await;
            }
            Target::Postgres { .. } => {
                let client = pg_client().await;
                client
                    .batch_execute(&format!(
                        "CREATE TABLE {t} (\"TopicName\" varchar(255) NOT NULL, \"SubscriberQueue\" varchar(255) NOT NULL, \
                         PRIMARY KEY (\"TopicName\", \"SubscriberQueue\"))"
                    ))
                    .await
                    .expect("old table");
                client
                    .execute(
                        &format!("INSERT INTO {t} VALUES ($1, $2)"),
                        &[&topic, &queue],
                    )
                    .await
                    .expect("old row");
            }
            Target::SqlServer { connection, .. } => {
                let mut client = mssql_client(connection).await;
                client
                    .execute(
                        format!(
                            "CREATE TABLE {t} ([TopicName] NVARCHAR(255) NOT NULL, [SubscriberQueue] NVARCHAR(255) NOT NULL, \
                             PRIMARY KEY ([TopicName], [SubscriberQueue]))"
                        ),
                        &[],
                    )
                    .await
                    .expect("old table");
                client
                    .execute(
                        format!("INSERT INTO {t} VALUES (@P1, @P2)"),
                        &[&topic, &queue],
                    )
                    .await
                    .expect("old row");
            }
        }
    }

    /// Drops an index of `table` by its catalog name.
    pub async fn drop_index(&self, table: &str, index: &str) {
        let sql = match &self.target {
            Target::Sqlite(_) => format!("DROP INDEX {}", pg_quote(index)),
            Target::Postgres { schema } => {
                format!("DROP INDEX {}.{}", pg_quote(schema), pg_quote(index))
            }
            Target::SqlServer { .. } => {
                format!("DROP INDEX {} ON {}", mssql_quote(index), self.table(table))
            }
        };
        self.execute(&sql).await;
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let cleanup: Option<Box<dyn FnOnce() + Send>> = match &self.target {
            Target::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
                None
            }
            Target::Postgres { schema } => {
                let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", pg_quote(schema));
                Some(Box::new(move || {
                    block_on(async move {
                        if let Ok((client, conn)) =
                            tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls).await
                        {
                            tokio::spawn(conn);
                            let _ = client.batch_execute(&sql).await;
                        }
                    })
                }))
            }
            Target::SqlServer { schema, connection } => {
                let (schema, connection) = (schema.clone(), connection.clone());
                Some(Box::new(move || {
                    block_on(async move {
                        let mut client = mssql_client(&connection).await;
                        let drop_all = "DECLARE @sql nvarchar(max) = N'';
SELECT @sql += N'DROP TABLE ' + QUOTENAME(s.name) + N'.' + QUOTENAME(t.name) + N';'
FROM sys.tables AS t JOIN sys.schemas AS s ON s.schema_id = t.schema_id
WHERE s.name = @P1;
EXEC sys.sp_executesql @sql;
DECLARE @drop nvarchar(max) = N'DROP SCHEMA ' + QUOTENAME(@P1);
EXEC sys.sp_executesql @drop;";
                        let _ = client.execute(drop_all, &[&schema.as_str()]).await;
                    })
                }))
            }
        };
        // Drop runs inside the test's runtime; clean up on a runtime of our own.
        if let Some(cleanup) = cleanup {
            let _ = std::thread::spawn(cleanup).join();
        }
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

async fn pg_client() -> tokio_postgres::Client {
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

async fn mssql_client(connection: &str) -> tiberius::Client<Compat<TcpStream>> {
    let config = tiberius::Config::from_ado_string(connection).expect("NIMBUS_SQLSERVER parses");
    let tcp = TcpStream::connect(config.get_addr())
        .await
        .expect("SQL Server of NIMBUS_SQLSERVER is reachable");
    tcp.set_nodelay(true).expect("nodelay");
    tiberius::Client::connect(config, tcp.compat_write())
        .await
        .expect("log in to the SQL Server of NIMBUS_SQLSERVER")
}
