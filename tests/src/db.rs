//! Test databases: a unique SQLite file or PostgreSQL schema per test, dropped afterwards.

use std::path::PathBuf;

use nimbus::BusBuilder;

/// Which backend a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fresh SQLite file in the temp directory.
    Sqlite,
    /// A fresh schema on the PostgreSQL server of `NIMBUS_POSTGRES`
    /// (default `postgres://postgres@127.0.0.1:5432/postgres`).
    Postgres,
}

/// The PostgreSQL server the suite uses.
pub fn postgres_url() -> String {
    std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// One test's database. Dropping it deletes the file or the schema.
pub struct TestDatabase {
    pub kind: Kind,
    target: Target,
}

enum Target {
    Sqlite(PathBuf),
    Postgres { schema: String },
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

impl TestDatabase {
    /// Creates an empty database for one test. PostgreSQL must be reachable: the test fails
    /// (never skips) when it is not.
    pub async fn new(kind: Kind) -> Self {
        let target = match kind {
            Kind::Sqlite => {
                Target::Sqlite(std::env::temp_dir().join(format!("nimbus-test-{}.db", unique())))
            }
            Kind::Postgres => {
                // Quotes, brackets, spaces: every test proves names are never spliced into SQL.
                let schema = format!("nimbus t\"st [{}] o'k", unique());
                let client = pg_client().await;
                client
                    .batch_execute(&format!("CREATE SCHEMA {}", pg_quote(&schema)))
                    .await
                    .expect("create test schema");
                Target::Postgres { schema }
            }
        };
        TestDatabase { kind, target }
    }

    /// The database URL for the bus.
    pub fn url(&self) -> String {
        match &self.target {
            Target::Sqlite(path) => format!("sqlite://{}", path.display()),
            Target::Postgres { .. } => postgres_url(),
        }
    }

    /// The schema the bus should use, where the backend has schemas.
    pub fn schema(&self) -> Option<&str> {
        match &self.target {
            Target::Sqlite(_) => None,
            Target::Postgres { schema } => Some(schema),
        }
    }

    /// A builder pointed at this database, with a short peek delay so tests run quickly.
    pub fn builder(&self, application: &str, instance: &str) -> BusBuilder {
        let builder = nimbus::Bus::builder()
            .names(application, instance)
            .database_url(self.url())
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
        }
    }

    /// Runs raw SQL statements (no results).
    pub async fn execute(&self, sql: &str) {
        match &self.target {
            Target::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("open sqlite");
                conn.busy_timeout(std::time::Duration::from_secs(30))
                    .expect("busy timeout");
                conn.execute_batch(sql).expect("raw sql");
            }
            Target::Postgres { .. } => pg_client().await.batch_execute(sql).await.expect("raw sql"),
        }
    }

    /// Rows in `table` (0 when it does not exist yet).
    pub async fn count(&self, table: &str) -> i64 {
        let sql = format!("SELECT count(*) FROM {}", self.table(table));
        match &self.target {
            Target::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("open sqlite");
                conn.busy_timeout(std::time::Duration::from_secs(30))
                    .expect("busy timeout");
                conn.query_row(&sql, [], |r| r.get(0)).unwrap_or(0)
            }
            Target::Postgres { .. } => match pg_client().await.query_one(&sql, &[]).await {
                Ok(row) => row.get(0),
                Err(_) => 0,
            },
        }
    }

    /// The `Body` column of every row of a queue table, oldest first.
    pub async fn bodies(&self, table: &str) -> Vec<Vec<u8>> {
        let sql = format!(
            "SELECT \"Body\" FROM {} ORDER BY \"RowVersion\"",
            self.table(table)
        );
        match &self.target {
            Target::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("open sqlite");
                conn.busy_timeout(std::time::Duration::from_secs(30))
                    .expect("busy timeout");
                let mut stmt = conn.prepare(&sql).expect("prepare");
                stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("rows")
            }
            Target::Postgres { .. } => pg_client()
                .await
                .query(&sql, &[])
                .await
                .expect("query")
                .iter()
                .map(|r| r.get::<_, Vec<u8>>(0))
                .collect(),
        }
    }

    /// Names of the indexes on `table`.
    pub async fn indexes(&self, table: &str) -> Vec<String> {
        match &self.target {
            Target::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("open sqlite");
                let mut stmt = conn
                    .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1")
                    .expect("prepare");
                stmt.query_map([table], |r| r.get::<_, String>(0))
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("rows")
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
        }
    }

    /// Drops an index by name.
    pub async fn drop_index(&self, index: &str) {
        let sql = match &self.target {
            Target::Sqlite(_) => format!("DROP INDEX {}", pg_quote(index)),
            Target::Postgres { schema } => {
                format!("DROP INDEX {}.{}", pg_quote(schema), pg_quote(index))
            }
        };
        self.execute(&sql).await;
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.target {
            Target::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            Target::Postgres { schema } => {
                let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", pg_quote(schema));
                // Drop runs inside the test's runtime; use a runtime of our own on another thread.
                let _ = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    rt.block_on(async {
                        if let Ok((client, conn)) =
                            tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls).await
                        {
                            tokio::spawn(conn);
                            let _ = client.batch_execute(&sql).await;
                        }
                    });
                })
                .join();
            }
        }
    }
}

/// Quotes an identifier for PostgreSQL and SQLite.
pub fn pg_quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
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
    actix_rt::spawn(async move {
        let _ = conn.await;
    });
    client
}
