//! PostgreSQL: tokio-postgres over a deadpool pool, TLS by rustls ([`tls`]). Connect, bind,
//! decode; nothing else.

pub(crate) mod notify;
pub(crate) mod tls;

use async_trait::async_trait;
use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use futures::future::BoxFuture;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Driver, DriverError, DriverResult, FailureKind, Param, Row, Value};
use crate::sql::{Dialect, POSTGRES};

/// What stands between the bus and the PostgreSQL server, as the URL says (`pooler`,
/// `listen_host`, `listen_port`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Pooling {
    /// `pooler=transaction`: the URL reaches the server through a pooler in transaction mode
    /// (PgBouncer's `pool_mode = transaction`), which may hand each transaction, and each
    /// statement outside one, to another server connection. Statements are then sent unnamed
    /// (parsed with each call; named prepared statements would be missing on the next server
    /// connection), and wake-ups do not LISTEN through it.
    pub transaction_mode: bool,
    /// Where wake-ups LISTEN instead: the server itself, by `listen_host`/`listen_port`.
    pub listen: Option<Box<tokio_postgres::Config>>,
}

/// A PostgreSQL database.
pub(crate) struct PostgresDriver {
    /// What the process's drivers on the same database and credentials share (see
    /// [`super::budget::key_of`]).
    key: String,
    pools: super::home::ShardedPools<Pool>,
    /// For the LISTEN connection, which lives outside the pool.
    config: tokio_postgres::Config,
    connector: MakeRustlsConnect,
    target: String,
    /// The URL's TLS settings, to explain a failed handshake.
    tls: tls::TlsSettings,
    /// The host name the URL names (the one a certificate is checked against).
    host: String,
    pooling: Pooling,
}

impl std::fmt::Debug for PostgresDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDriver")
            .field("target", &self.target)
            .finish()
    }
}

/// Opens pooled connections, and runs their connection tasks, on the home runtime (see
/// [`super::home`]), wherever the code that asked for one runs; each within the database's
/// budget, its slot given back when its connection task ends.
struct ConnectAtHome {
    connector: MakeRustlsConnect,
    home: super::home::Home,
    budget: std::sync::Arc<super::budget::Budget>,
}

impl deadpool_postgres::Connect for ConnectAtHome {
    fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> BoxFuture<
        '_,
        Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
    > {
        let (config, connector) = (config.clone(), self.connector.clone());
        Box::pin(async move {
            let slot = self.budget.slot().await;
            let (opened_tx, opened) = tokio::sync::oneshot::channel();
            let (home_config, home_connector) = (config.clone(), connector.clone());
            // The slot goes with the connection task and is given back when it ends; a task
            // the home runtime never ran gives it back when dropped.
            let task = self.home.spawn(async move {
                match home_config.connect(home_connector).await {
                    Ok((client, connection)) => {
                        if opened_tx.send(Ok(client)).is_ok() {
                            report_closed(connection.await);
                        }
                    }
                    Err(e) => {
                        let _ = opened_tx.send(Err(e));
                    }
                }
                drop(slot);
            });
            match opened.await {
                Ok(Ok(client)) => Ok((client, task)),
                Ok(Err(e)) => Err(e),
                // The home runtime has shut down: open it here instead, in a slot of its own.
                Err(_) => {
                    let slot = self.budget.slot().await;
                    let (client, connection) = config.connect(connector).await?;
                    let task = tokio::spawn(async move {
                        report_closed(connection.await);
                        drop(slot);
                    });
                    Ok((client, task))
                }
            }
        })
    }
}

/// Opens a connection of the application's own with the bus's connection settings and TLS
/// set-up; its connection task runs on the current tokio runtime.
pub(crate) async fn connect_client(
    config: &tokio_postgres::Config,
    connector: MakeRustlsConnect,
    target: &str,
) -> crate::error::Result<tokio_postgres::Client> {
    let (client, connection) = config.connect(connector).await.map_err(|e| {
        crate::error::NimbusError::connect(
            crate::sql::POSTGRES.name,
            target,
            "check that the server runs and accepts TCP connections, and the user, password, \
             database and sslmode in the URL",
            error(e),
        )
    })?;
    tokio::spawn(async move { report_closed(connection.await) });
    Ok(client)
}

/// Logs how a pooled connection's task ended, if by an error (the pool then discards it).
fn report_closed(ended: Result<(), tokio_postgres::Error>) {
    if let Err(e) = ended {
        tracing::warn!(error = %e, "a PostgreSQL connection closed with an error");
    }
}

pub(crate) fn error(e: tokio_postgres::Error) -> DriverError {
    let code = e.code().map(|c| c.code().to_string());
    let kind = classify(code.as_deref());
    let mut error = DriverError::new(code, kind, e);
    if lost_prepared_statement(&error) {
        error.message.push_str(
            ". The URL seems to reach the server through a pooler in transaction mode \
             (PgBouncer's pool_mode = transaction), which hands each transaction to another \
             server connection: add pooler=transaction to the URL",
        );
    }
    error
}

/// Whether a named prepared statement was missing, or already there (SQLSTATE 26000, 42P05):
/// the sign of a pooler in transaction mode that the URL does not mention.
fn lost_prepared_statement(error: &DriverError) -> bool {
    matches!(error.code(), Some("26000" | "42P05")) && error.message.contains("prepared statement")
}

/// Whether `e` may pass when tried again.
pub(crate) fn kind_of(e: &tokio_postgres::Error) -> FailureKind {
    classify(e.code().map(|c| c.code()))
}

/// SQLSTATE classes that may pass when tried again: connection exceptions (08), transaction
/// rollbacks such as serialization failures and deadlocks (40), insufficient resources (53),
/// operator intervention such as an admin shutdown or a cancelled statement (57), system errors
/// (58), and a lock not available (55P03). No SQLSTATE at all means the connection itself failed.
fn classify(code: Option<&str>) -> FailureKind {
    match code {
        None => FailureKind::Transient,
        Some("55P03") => FailureKind::Transient,
        Some(code)
            if ["08", "40", "53", "57", "58"]
                .iter()
                .any(|c| code.starts_with(c)) =>
        {
            FailureKind::Transient
        }
        Some(_) => FailureKind::Permanent,
    }
}

impl PostgresDriver {
    /// Builds the pools; connections open on first use, over TLS as `tls` says (`config`'s
    /// `ssl_mode` must be `tls.mode.negotiation()`, as the URL parser sets it), within the
    /// process's budget for the database, which `budget` asks for.
    pub fn new(
        config: tokio_postgres::Config,
        target: String,
        pool_size: usize,
        budget: super::budget::Request,
        tls: tls::TlsSettings,
        pooling: Pooling,
        connector: MakeRustlsConnect,
    ) -> crate::Result<Self> {
        let host = config
            .get_hosts()
            .first()
            .map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_else(|| "localhost".into());
        let key = super::budget::key_of(
            "postgres",
            &[
                format!("{config:?}").as_bytes(),
                config.get_password().unwrap_or_default(),
                format!("{tls:?}").as_bytes(),
            ],
        );
        let budget = super::budget::budget_for(&key, &target, budget)
            .map_err(|e| crate::NimbusError::config(e.to_string(), e.fix()))?;
        let (pool_config, pool_connector) = (config.clone(), connector.clone());
        let pool_budget = budget.clone();
        let pools = super::home::ShardedPools::new(&key, pool_size, budget, move |home| {
            let manager = Manager::from_connect(
                pool_config.clone(),
                ConnectAtHome {
                    connector: pool_connector.clone(),
                    home,
                    budget: pool_budget.clone(),
                },
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            Pool::builder(manager)
                .max_size(pool_size)
                // The connection given back last is taken first: a quiet endpoint keeps
                // reusing one or two, and the rest go unused long enough to be closed.
                .queue_mode(deadpool_postgres::QueueMode::Lifo)
                .build()
                .map_err(|e| DriverError::new(None, FailureKind::Transient, e))
        })
        .map_err(|e| {
            crate::NimbusError::connect(crate::sql::POSTGRES.name, &target, "check the URL", e)
        })?;
        Ok(PostgresDriver {
            key,
            pools,
            config,
            connector,
            target,
            tls,
            host,
            pooling,
        })
    }

    /// Whether statements go unnamed (through a pooler in transaction mode).
    fn unnamed(&self) -> bool {
        self.pooling.transaction_mode
    }
}

/// The PostgreSQL type each parameter is sent as, for unnamed statements (which are parsed with
/// the types given, not those the server would infer).
pub(crate) fn typed<'a>(params: &'a [Param<'a>]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|p| {
            let ty = match p {
                Param::Uuid(_) => Type::UUID,
                Param::Text(_) => Type::TEXT,
                Param::Bytes(_) => Type::BYTEA,
                Param::BigInt(_) => Type::INT8,
                Param::Int(_) => Type::INT4,
                Param::Time(_) => Type::TIMESTAMP,
            };
            (p as &(dyn ToSql + Sync), ty)
        })
        .collect()
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Uuid(v) => v.to_sql(ty, out),
            Param::Text(v) => v.to_sql(ty, out),
            Param::Bytes(v) => v.to_sql(ty, out),
            Param::BigInt(v) => v.to_sql(ty, out),
            Param::Int(v) => v.to_sql(ty, out),
            Param::Time(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Checked per value in `to_sql_checked`, by the type each variant holds.
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Uuid(v) => v.to_sql_checked(ty, out),
            Param::Text(v) => v.to_sql_checked(ty, out),
            Param::Bytes(v) => v.to_sql_checked(ty, out),
            Param::BigInt(v) => v.to_sql_checked(ty, out),
            Param::Int(v) => v.to_sql_checked(ty, out),
            Param::Time(v) => v.to_sql_checked(ty, out),
        }
    }
}

/// Rows as the driver-neutral [`Row`]s.
fn decoded(rows: &[tokio_postgres::Row]) -> Vec<Row> {
    rows.iter()
        .map(|row| Row((0..row.len()).map(|i| cell(row, i)).collect()))
        .collect()
}

fn refs<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// Decodes one cell by its column type; never panics.
fn cell(row: &tokio_postgres::Row, index: usize) -> Value {
    fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
        row: &'a tokio_postgres::Row,
        index: usize,
        wrap: impl FnOnce(T) -> Value,
    ) -> Value {
        match row.try_get::<_, Option<T>>(index) {
            Ok(Some(v)) => wrap(v),
            Ok(None) => Value::Null,
            Err(e) => Value::Undecodable(crate::error::error_chain(&e)),
        }
    }
    let ty = row.columns()[index].type_().clone();
    match ty {
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get::<String>(row, index, Value::Text)
        }
        Type::BYTEA => get::<Vec<u8>>(row, index, Value::Bytes),
        Type::INT8 => get::<i64>(row, index, Value::Int),
        Type::INT4 => get::<i32>(row, index, |v| Value::Int(v.into())),
        Type::INT2 => get::<i16>(row, index, |v| Value::Int(v.into())),
        Type::OID => get::<u32>(row, index, |v| Value::Int(v.into())),
        Type::BOOL => get::<bool>(row, index, Value::Bool),
        Type::FLOAT8 => get::<f64>(row, index, Value::Float),
        Type::FLOAT4 => get::<f32>(row, index, |v| Value::Float(v.into())),
        Type::UUID => get::<uuid::Uuid>(row, index, Value::Uuid),
        Type::TIMESTAMP => get::<chrono::NaiveDateTime>(row, index, Value::Time),
        Type::TIMESTAMPTZ => {
            get::<chrono::DateTime<chrono::Utc>>(row, index, |v| Value::Time(v.naive_utc()))
        }
        other => Value::Undecodable(format!("values of type {other} are not read by nimbus")),
    }
}

#[async_trait]
impl Driver for PostgresDriver {
    type Connection = Object;

    fn dialect(&self) -> &'static Dialect {
        &POSTGRES
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn share_key(&self) -> &str {
        &self.key
    }

    fn permission_denied(&self, error: &DriverError) -> bool {
        // insufficient_privilege
        error.code() == Some("42501")
    }

    fn connect_advice(&self, error: &DriverError) -> String {
        let mut cause = std::error::Error::source(error);
        while let Some(e) = cause {
            if let Some(failure) = e.downcast_ref::<tls::TlsFailure>() {
                return failure.fix.clone();
            }
            cause = e.source();
        }
        "check that the server runs and accepts TCP connections, and that the user, password \
         and database in the URL are right"
            .into()
    }

    fn wake_channel(
        &self,
        listen: &str,
        announce: &str,
        deadlines: super::Deadlines,
    ) -> Option<super::WakeChannel> {
        let config = match (&self.pooling.listen, self.pooling.transaction_mode) {
            (Some(direct), _) => (**direct).clone(),
            (None, false) => self.config.clone(),
            (None, true) => {
                tracing::info!(
                    database = %self.target,
                    "through a pooler in transaction mode (pooler=transaction), this bus does \
                     not LISTEN: idle queues look for other processes' messages by polling, \
                     every idle_poll at first and up to 1 s apart while they stay empty; add \
                     listen_host and listen_port (the server's own address) to the URL to be \
                     woken instead"
                );
                return None;
            }
        };
        Some(notify::start(
            &self.key,
            config,
            self.connector.clone(),
            notify::Statements {
                listen: listen.to_string(),
                announce: announce.to_string(),
                deadlines,
            },
        ))
    }

    async fn wait_for_room(&self) {
        self.pools.wait_for_room().await;
    }

    fn has_room(&self) -> bool {
        self.pools.has_room()
    }

    fn can_connect_now(&self) -> bool {
        self.pools.can_connect_now()
    }

    async fn connection(&self) -> DriverResult<Object> {
        let pool = self.pools.here()?;
        pool.get().await.map_err(|e| match e {
            // A failed TLS handshake or a server without TLS: said in words, with what to do.
            PoolError::Backend(e) => match self.tls.diagnose(e, &self.host) {
                Ok(failure) => DriverError::new(None, FailureKind::Transient, failure),
                Err(e) => DriverError::new(None, FailureKind::Transient, PoolError::Backend(e)),
            },
            other => DriverError::new(None, FailureKind::Transient, other),
        })
    }

    fn release(&self, connection: Object) {
        drop(connection);
    }

    fn discard(&self, connection: Object) {
        let _ = Object::take(connection);
    }

    fn forget_idle(&self) {
        self.pools.forget_idle();
    }

    fn close_unused(&self, unused_for: std::time::Duration) -> usize {
        self.pools.close_unused(unused_for)
    }

    fn keeps_large_buffers(&self) -> bool {
        // tokio-postgres's read and write buffers grow to the largest message and stay so.
        true
    }

    async fn begin(&self, connection: &mut Object) -> DriverResult<()> {
        connection.batch_execute("BEGIN").await.map_err(error)
    }

    async fn commit(&self, connection: &mut Object) -> DriverResult<()> {
        connection.batch_execute("COMMIT").await.map_err(error)
    }

    async fn execute(
        &self,
        connection: &mut Object,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64> {
        if self.unnamed() {
            return connection
                .execute_typed(sql, &typed(params))
                .await
                .map_err(error);
        }
        let statement = connection.prepare_cached(sql).await.map_err(error)?;
        connection
            .execute(&statement, &refs(params))
            .await
            .map_err(error)
    }

    async fn query(
        &self,
        connection: &mut Object,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        if self.unnamed() {
            let rows = connection
                .query_typed(sql, &typed(params))
                .await
                .map_err(error)?;
            return Ok(decoded(&rows));
        }
        let statement = connection.prepare_cached(sql).await.map_err(error)?;
        let rows = connection
            .query(&statement, &refs(params))
            .await
            .map_err(error)?;
        Ok(decoded(&rows))
    }

    async fn begin_and_query(
        &self,
        connection: &mut Object,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        if self.unnamed() {
            let typed = typed(params);
            let (begun, rows) = futures::join!(
                connection.batch_execute("BEGIN"),
                connection.query_typed(sql, &typed)
            );
            begun.map_err(error)?;
            return Ok(decoded(&rows.map_err(error)?));
        }
        let statement = connection.prepare_cached(sql).await.map_err(error)?;
        let params = refs(params);
        // Pipelined: tokio-postgres sends requests in the order they are first polled, so BEGIN
        // goes first and both travel in one round trip.
        let (begun, rows) = futures::join!(
            connection.batch_execute("BEGIN"),
            connection.query(&statement, &params)
        );
        begun.map_err(error)?;
        let rows = rows.map_err(error)?;
        Ok(decoded(&rows))
    }

    fn pipelines_commit(&self) -> bool {
        true
    }

    async fn commit_then_begin_and_query(
        &self,
        connection: &mut Object,
        sql: &str,
        params: &[Param<'_>],
    ) -> (DriverResult<()>, Option<DriverResult<Vec<Row>>>) {
        if self.unnamed() {
            let typed = typed(params);
            let (committed, begun, rows) = futures::join!(
                connection.batch_execute("COMMIT"),
                connection.batch_execute("BEGIN"),
                connection.query_typed(sql, &typed)
            );
            if let Err(e) = committed {
                return (Err(error(e)), None);
            }
            let rows = begun.and(rows).map(|rows| decoded(&rows)).map_err(error);
            return (Ok(()), Some(rows));
        }
        let statement = match connection.prepare_cached(sql).await {
            Ok(statement) => statement,
            // Nothing was sent yet: commit alone, and let the receive's failure be the query's.
            Err(e) => {
                let committed = self.commit(connection).await;
                return match committed {
                    Ok(()) => (Ok(()), Some(Err(error(e)))),
                    Err(c) => (Err(c), None),
                };
            }
        };
        let params = refs(params);
        // Pipelined as in `begin_and_query`: COMMIT, BEGIN and the query leave in this order in
        // one write, and their answers come back in one. A failed COMMIT ends its transaction
        // (rolled back) and the BEGIN after it opens the next one as usual: the caller drops the
        // connection then, which rolls back whatever the query took.
        let (committed, begun, rows) = futures::join!(
            connection.batch_execute("COMMIT"),
            connection.batch_execute("BEGIN"),
            connection.query(&statement, &params)
        );
        if let Err(e) = committed {
            return (Err(error(e)), None);
        }
        let rows = begun.and(rows).map(|rows| decoded(&rows)).map_err(error);
        (Ok(()), Some(rows))
    }

    /// A prepared statement (parsed once per connection) whose plan is made with sequential
    /// scans disabled and then kept (a generic plan): planned while the table was empty, it
    /// would otherwise scan the whole table on every later call, once the table holds rows,
    /// and planning it afresh on every call costs more than running it. Both settings are local
    /// to the transaction and restored before the call returns, so the handlers' own statements
    /// in the same transaction plan as usual. BEGIN, the settings, the query and the restore
    /// travel in one round trip.
    async fn begin_and_query_by_index(
        &self,
        connection: &mut Object,
        sql: &str,
        params: &[Param<'_>],
        lock_wait: Option<std::time::Duration>,
    ) -> DriverResult<Vec<Row>> {
        // Local to the transaction, and sent with BEGIN in the same round trip.
        let bound = match lock_wait {
            Some(wait) => format!("; SET LOCAL lock_timeout = '{}ms'", wait.as_millis().max(1)),
            None => String::new(),
        };
        if self.unnamed() {
            // An unnamed statement is planned for its parameters at each call: the index is
            // chosen without help once the table holds rows, and with none it costs nothing.
            let typed = typed(params);
            let begin = format!("BEGIN{bound}");
            let (begun, rows) = futures::join!(
                connection.batch_execute(&begin),
                connection.query_typed(sql, &typed)
            );
            begun.map_err(error)?;
            return Ok(decoded(&rows.map_err(error)?));
        }
        let statement = connection.prepare_cached(sql).await.map_err(error)?;
        let params = refs(params);
        let begin = format!(
            "BEGIN; SET LOCAL enable_seqscan = off; \
             SET LOCAL plan_cache_mode = force_generic_plan{bound}"
        );
        let (begun, rows, restored) = futures::join!(
            connection.batch_execute(&begin),
            connection.query(&statement, &params),
            connection.batch_execute(
                "SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL plan_cache_mode TO DEFAULT"
            )
        );
        begun.map_err(error)?;
        let rows = rows.map_err(error)?;
        restored.map_err(error)?;
        Ok(decoded(&rows))
    }

    async fn run_script(
        &self,
        connection: &mut Object,
        sql: &str,
        _names: &[&str],
    ) -> DriverResult<()> {
        connection.batch_execute(sql).await.map_err(error)
    }

    async fn run_sql_alone(&self, connection: &mut Object, sql: &str) -> DriverResult<()> {
        let statements = crate::sql::statements_of(sql);
        if statements.len() < 2 {
            return connection.batch_execute(sql).await.map_err(error);
        }
        connection.batch_execute("BEGIN").await.map_err(error)?;
        for statement in statements {
            if let Err(e) = connection.batch_execute(statement).await {
                // The connection goes back to its pool: end the failed transaction first.
                let _ = connection.batch_execute("ROLLBACK").await;
                return Err(error(e));
            }
        }
        connection.batch_execute("COMMIT").await.map_err(error)
    }

    async fn run_creation_script(
        &self,
        connection: &mut Object,
        sql: &str,
        _names: &[&str],
    ) -> DriverResult<()> {
        // `CREATE … IF NOT EXISTS` of what exists says so in a NOTICE, which tokio-postgres logs
        // at INFO: several lines per start of an endpoint that found something missing. Only
        // warnings and errors of the script are sent back, for the rest of the transaction the
        // framework runs its creation scripts in.
        connection
            .batch_execute("SELECT set_config('client_min_messages', 'warning', true)")
            .await
            .map_err(error)?;
        // One statement at a time: Citus sends the text of a `CREATE INDEX` on a distributed
        // table to its worker nodes as it came, and a worker refuses several commands in one.
        for statement in crate::sql::statements_of(sql) {
            connection.batch_execute(statement).await.map_err(error)?;
        }
        Ok(())
    }
}
