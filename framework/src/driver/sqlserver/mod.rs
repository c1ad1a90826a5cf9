//! SQL Server and Azure SQL: tiberius (TDS 7.3, TLS by rustls) over a deadpool pool. Connect,
//! bind, decode; nothing else.
//!
//! Transactions are TDS transaction-manager requests (`begin_transaction`), so a receive's
//! transaction spans the statements of its handler. A connection whose statement failed is
//! discarded, never pooled again: after an outage tiberius refuses to reuse it.

mod auth;
mod connection_string;
mod nulls;

use std::borrow::Cow;

use async_trait::async_trait;
use deadpool::managed::{self, Object, Pool};
use tiberius::ColumnData;

pub(crate) use auth::Login;
pub use auth::SqlServerToken;
pub(crate) use connection_string::{
    parse_connection_string, Client, ConnectionManager, ConnectionSettings, OpenError,
};
pub(crate) use nulls::bindable;

use super::{Driver, DriverError, DriverResult, FailureKind, Param, Row, Value};
use crate::sql::{Dialect, SQLSERVER};

/// A pooled SQL Server connection.
pub(crate) type Connection = Object<ConnectionManager>;

/// A SQL Server database.
pub(crate) struct SqlServerDriver {
    pools: super::home::ShardedPools<Pool<ConnectionManager>>,
    target: String,
    /// The database and login (see `budget::key_of`).
    key: String,
    /// How connections log in, for advice when a login fails.
    login: Login,
    /// How long opening one connection may take (`Connect Timeout`).
    connect_timeout: std::time::Duration,
}

/// The code of a [`DriverError`] for a token provider that failed.
const TOKEN_CODE: &str = "nimbus:token";

impl std::fmt::Debug for SqlServerDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlServerDriver")
            .field("target", &self.target)
            .finish()
    }
}

pub(crate) fn error(e: tiberius::error::Error) -> DriverError {
    let code = e.code();
    let kind = classify(&e, code);
    DriverError::new(code.map(|n| n.to_string()), kind, e)
}

/// Whether `e` may pass when tried again.
pub(crate) fn kind_of(e: &tiberius::error::Error) -> FailureKind {
    classify(e, e.code())
}

/// Server errors that may pass when tried again: a deadlock victim (1205), a lock timeout (1222),
/// Azure SQL's transient errors (the list ADO.NET's and EF Core's retry strategies use), and any
/// failure of the connection itself (I/O, TLS, protocol: no server error number).
fn classify(e: &tiberius::error::Error, code: Option<u32>) -> FailureKind {
    const TRANSIENT: [u32; 16] = [
        1205, 1222, 233, 64, 10053, 10054, 10060, 10928, 10929, 40143, 40197, 40501, 40540, 40613,
        49918, 49919,
    ];
    match (e, code) {
        (tiberius::error::Error::Server(_), Some(code)) if TRANSIENT.contains(&code) => {
            FailureKind::Transient
        }
        (tiberius::error::Error::Server(_), _) => FailureKind::Permanent,
        _ => FailureKind::Transient,
    }
}

/// The error of a connection that could not be opened.
fn open_error(e: OpenError) -> DriverError {
    match e {
        OpenError::Server(e) => error(e),
        token @ OpenError::Token(_) => {
            DriverError::new(Some(TOKEN_CODE.into()), FailureKind::Transient, token)
        }
        OpenError::TimedOut(timeout) => {
            DriverError::timed_out("opening a database connection", timeout)
        }
    }
}

/// What to tell the user for a server error met while connecting.
fn advice(error: &DriverError, target: &str, login: &Login) -> String {
    let text = error.to_string();
    if error.is_timeout() {
        return "the server accepted the connection and did not finish the login in time: check \
                that it runs and is not frozen or overloaded (a failover, a stuck proxy), or \
                raise Connect Timeout in the connection string"
            .into();
    }
    match error.code() {
        Some(TOKEN_CODE) => "check the credentials the application's token provider uses (its \
            error is above) and that it asks for the scope https://database.windows.net/.default"
            .into(),
        Some("18456") => match login {
            Login::Integrated => "the server refused the process's own identity: check that \
                its Windows account (or Kerberos principal: klist) has a login on the server, \
                and that the server's SPN MSSQLSvc/host:port is registered"
                .into(),
            Login::EntraToken { .. } => "the server refused the Entra ID token: check that the \
                identity has a user in the database (CREATE USER [name] FROM EXTERNAL \
                PROVIDER), that the server has an Entra ID admin, and that the token's audience \
                is https://database.windows.net/"
                .into(),
            Login::SqlPassword | Login::Unspecified => {
                "the login failed: check User Id and Password".into()
            }
        },
        _ if text.contains("GSSAPI") || text.contains("gssapi") || text.contains("Kerberos") => {
            "Kerberos failed: obtain a ticket (kinit, or a keytab in KRB5_CLIENT_KTNAME), check \
                /etc/krb5.conf, and use the server's DNS name in Server= so that its SPN \
                MSSQLSvc/host:port matches"
                .into()
        }
        Some("4060") => format!(
            "the database in {target} does not exist or the login may not open it: create it \
             or fix Database= in the connection string"
        ),
        Some("262") | Some("2760") | Some("15247") => "the login may not create tables: grant it \
            CREATE TABLE (and CREATE SCHEMA for a new schema), or turn auto_create_schema off and \
            have a DBA run the scripts in schema/sqlserver"
            .into(),
        _ if text.contains("TLS") || text.contains("tls") => {
            "TLS failed: for a server with a self-signed certificate add \
             TrustServerCertificate=true, otherwise install its CA"
                .into()
        }
        _ => "check that the server runs and accepts TCP connections on that port, and the \
              connection string"
            .into(),
    }
}

impl SqlServerDriver {
    /// Builds the pools; connections open on first use, each within the connect timeout and
    /// the process's budget for the database, which `budget` asks for.
    pub fn new(
        settings: ConnectionSettings,
        pool_size: usize,
        budget: super::budget::Request,
    ) -> crate::Result<Self> {
        let target = settings.target.clone();
        let login = settings.login.clone();
        let timeout = settings.connect_timeout;
        // The token provider is part of who logs in: buses with providers of their own do not
        // share connections.
        let provider = settings
            .token
            .as_ref()
            .map(|t| format!("{:p}", t.identity()))
            .unwrap_or_default();
        let key = super::budget::key_of(
            "sqlserver",
            &[
                format!("{:?}", settings.config).as_bytes(),
                provider.as_bytes(),
            ],
        );
        let budget = super::budget::budget_for(&key, &target, budget)
            .map_err(|e| crate::NimbusError::config(e.to_string(), e.fix()))?;
        let pool_budget = budget.clone();
        // Every bus of the process on the database shares one pool for its peeks, sends and
        // background jobs; its idle queues wait for other processes' messages together, in one
        // statement (see `transport::watcher`), not with a waiting statement each.
        let pools = super::home::ShardedPools::new(&key, pool_size, budget, move |home| {
            Pool::builder(ConnectionManager {
                settings: settings.clone(),
                home,
                budget: pool_budget.clone(),
            })
            .max_size(pool_size)
            // The connection given back last is taken first: a quiet endpoint keeps reusing one
            // or two, and the rest go unused long enough to be closed.
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .create_timeout(Some(timeout))
            .build()
            .map_err(|e| DriverError::new(None, FailureKind::Transient, e))
        })
        .map_err(|e| {
            crate::NimbusError::connect(SQLSERVER.name, &target, "check the connection string", e)
        })?;
        Ok(SqlServerDriver {
            pools,
            target,
            key,
            login,
            connect_timeout: timeout,
        })
    }
}

/// Opens one connection of the application's own, logged in as the bus logs in (the same
/// ADO.NET connection string: TLS, Azure SQL redirects, the connect timeout), for statements
/// and transactions the application writes, such as `PreparedSends::write_sql_server`.
pub(crate) async fn connect_client(connection_string: &str) -> crate::Result<Client> {
    let settings = parse_connection_string(connection_string)?;
    let (target, login) = (settings.target.clone(), settings.login.clone());
    connection_string::open(&settings).await.map_err(|e| {
        let e = open_error(e);
        let fix = advice(&e, &target, &login);
        crate::NimbusError::connect(SQLSERVER.name, target, fix, e)
    })
}

impl tiberius::ToSql for Param<'_> {
    fn to_sql(&self) -> ColumnData<'_> {
        match self {
            Param::Uuid(id) => ColumnData::Guid(Some(*id)),
            Param::Text(text) => ColumnData::String(text.map(Cow::Borrowed)),
            Param::Bytes(bytes) => ColumnData::Binary(bytes.map(Cow::Borrowed)),
            Param::BigInt(n) => ColumnData::I64(*n),
            Param::Int(n) => ColumnData::I32(Some(*n)),
            Param::Time(t) => t.to_sql(),
        }
    }
}

/// Decodes one cell by the type the server sent; never panics.
fn cell(data: &ColumnData<'static>) -> Value {
    use tiberius::FromSql;
    let time = |data: &ColumnData<'static>| match chrono::NaiveDateTime::from_sql(data) {
        Ok(Some(t)) => Value::Time(t),
        Ok(None) => Value::Null,
        Err(e) => Value::Undecodable(e.to_string()),
    };
    match data {
        ColumnData::U8(v) => v.map_or(Value::Null, |v| Value::Int(v.into())),
        ColumnData::I16(v) => v.map_or(Value::Null, |v| Value::Int(v.into())),
        ColumnData::I32(v) => v.map_or(Value::Null, |v| Value::Int(v.into())),
        ColumnData::I64(v) => v.map_or(Value::Null, Value::Int),
        ColumnData::F32(v) => v.map_or(Value::Null, |v| Value::Float(v.into())),
        ColumnData::F64(v) => v.map_or(Value::Null, Value::Float),
        ColumnData::Bit(v) => v.map_or(Value::Null, Value::Bool),
        ColumnData::String(v) => v
            .as_ref()
            .map_or(Value::Null, |s| Value::Text(s.to_string())),
        ColumnData::Guid(v) => v.map_or(Value::Null, Value::Uuid),
        ColumnData::Binary(v) => v.as_ref().map_or(Value::Null, |b| Value::Bytes(b.to_vec())),
        ColumnData::Xml(v) => v
            .as_ref()
            .map_or(Value::Null, |x| Value::Text(x.to_string())),
        ColumnData::DateTime(_) | ColumnData::SmallDateTime(_) | ColumnData::DateTime2(_) => {
            time(data)
        }
        ColumnData::DateTimeOffset(v) => match v {
            None => Value::Null,
            Some(_) => match chrono::DateTime::<chrono::Utc>::from_sql(data) {
                Ok(Some(t)) => Value::Time(t.naive_utc()),
                Ok(None) => Value::Null,
                Err(e) => Value::Undecodable(e.to_string()),
            },
        },
        other => Value::Undecodable(format!("values like {other:?} are not read by nimbus")),
    }
}

#[async_trait]
impl Driver for SqlServerDriver {
    type Connection = Connection;

    fn dialect(&self) -> &'static Dialect {
        &SQLSERVER
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn share_key(&self) -> &str {
        &self.key
    }

    fn permission_denied(&self, error: &DriverError) -> bool {
        // CREATE TABLE / CREATE SCHEMA / ALTER permission denied, object permission denied.
        matches!(
            error.code(),
            Some("262" | "2760" | "15247" | "229" | "230" | "1088")
        )
    }

    fn connect_advice(&self, error: &DriverError) -> String {
        advice(error, &self.target, &self.login)
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

    async fn connection(&self) -> DriverResult<Connection> {
        let pool = self.pools.here()?;
        pool.get().await.map_err(|e| match e {
            managed::PoolError::Backend(e) => open_error(e),
            // The same words as every other deadline: the server accepted TCP and then said
            // nothing (a frozen server or proxy), or the login took longer than Connect Timeout.
            managed::PoolError::Timeout(_) => {
                DriverError::timed_out("opening a database connection", self.connect_timeout)
            }
            other => DriverError::other(
                FailureKind::Transient,
                format!(
                    "the server did not answer in time ({other}); check that it runs and that \
                     Connect Timeout suits the network"
                ),
            ),
        })
    }

    fn release(&self, connection: Connection) {
        drop(connection);
    }

    fn discard(&self, connection: Connection) {
        let _ = Object::take(connection);
    }

    fn forget_idle(&self) {
        self.pools.forget_idle();
    }

    fn close_unused(&self, unused_for: std::time::Duration) -> usize {
        self.pools.close_unused(unused_for)
    }

    fn keeps_large_buffers(&self) -> bool {
        // tiberius's packet buffers grow with what the connection moves.
        true
    }

    async fn begin(&self, connection: &mut Connection) -> DriverResult<()> {
        connection.begin_transaction().await.map_err(error)
    }

    async fn commit(&self, connection: &mut Connection) -> DriverResult<()> {
        connection.commit_transaction().await.map_err(error)
    }

    async fn execute(
        &self,
        connection: &mut Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64> {
        let (sql, params) = bindable(sql, params);
        let result = connection.execute(sql, &params).await.map_err(error)?;
        Ok(result.total())
    }

    async fn query(
        &self,
        connection: &mut Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        let (sql, params) = bindable(sql, params);
        let rows = connection
            .query(sql, &params)
            .await
            .map_err(error)?
            .into_first_result()
            .await
            .map_err(error)?;
        Ok(rows
            .iter()
            .map(|row| Row(row.cells().map(|(_, data)| cell(data)).collect()))
            .collect())
    }

    async fn run_script(
        &self,
        connection: &mut Connection,
        sql: &str,
        names: &[&str],
    ) -> DriverResult<()> {
        let params: Vec<Param<'_>> = names.iter().map(|n| Param::Text(Some(n))).collect();
        let (sql, params) = bindable(sql, &params);
        connection
            .execute(sql, &params)
            .await
            .map_err(error)
            .map(drop)
    }
}
