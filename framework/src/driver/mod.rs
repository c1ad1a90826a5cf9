//! Drivers: one per database, each behind its cargo feature (`sqlite`, `postgres`, `sqlserver`).
//!
//! A driver connects, pools, binds [`Param`]s and decodes rows into [`Value`]s; nothing else.
//! It runs statements it is given and never builds SQL or decides anything about messages: the
//! transport (written once, in `crate::transport`) does that through [`statements`], whose
//! methods are one statement each with typed parameters and rows.
//!
//! Connections are handed out inside a [`Held`] guard: dropped without [`Held::release`] or
//! [`Held::commit`] (an error, a cancelled future), the connection is discarded, never pooled
//! again, so no later user finds a broken connection or a transaction left open.

#[cfg(test)]
mod contract_tests;
pub(crate) mod statements;
mod value;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
#[cfg(feature = "sqlserver")]
pub(crate) mod sqlserver;

use std::sync::Arc;

use async_trait::async_trait;

pub(crate) use value::{Param, Row, Value};

use crate::sql::Dialect;

/// What a driver reports when a statement or a connection fails: the database's own message
/// (with every cause) and, where the database has one, its error code (SQLSTATE on PostgreSQL,
/// the error number on SQL Server, the extended result code on SQLite).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DriverError {
    message: String,
    code: Option<String>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl DriverError {
    /// Wraps a driver's error, keeping its message, causes and code.
    pub(crate) fn new(
        code: Option<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        DriverError {
            message: crate::error::error_chain(&source),
            code,
            source: Some(Box::new(source)),
        }
    }

    /// An error the framework itself detected while talking to the database.
    pub(crate) fn other(message: impl Into<String>) -> Self {
        DriverError {
            message: message.into(),
            code: None,
            source: None,
        }
    }

    /// The database's error code, when it gave one.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

/// Shorthand for a driver's results.
pub(crate) type DriverResult<T> = std::result::Result<T, DriverError>;

/// A database connection pool and the few primitives every statement needs.
#[async_trait]
pub(crate) trait Driver: Send + Sync + Sized + 'static {
    /// A connection taken from the pool.
    type Connection: Send + 'static;

    /// The database's SQL.
    fn dialect(&self) -> &'static Dialect;

    /// Where it connects, for messages (host and database, or a file); never a password.
    fn target(&self) -> &str;

    /// What to tell the user when opening a connection failed with `error`.
    fn connect_advice(&self, _error: &DriverError) -> String {
        "check that the server runs and accepts TCP connections, and that the user, password \
         and database in the connection settings are right"
            .into()
    }

    /// Takes a connection from the pool, opening one if needed.
    async fn connection(&self) -> DriverResult<Self::Connection>;

    /// Gives a connection with no transaction open back to the pool.
    fn release(&self, connection: Self::Connection);

    /// Closes a connection that failed or may have a transaction open: the server rolls back,
    /// and the pool never hands it out again.
    fn discard(&self, connection: Self::Connection);

    /// Opens a transaction.
    async fn begin(&self, connection: &mut Self::Connection) -> DriverResult<()>;

    /// Commits the open transaction.
    async fn commit(&self, connection: &mut Self::Connection) -> DriverResult<()>;

    /// Runs one statement; returns how many rows it affected.
    async fn execute(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<u64>;

    /// Runs one statement and returns its rows, every value decoded without panicking.
    async fn query(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>>;

    /// Opens a transaction and runs `sql` in it. Drivers that can send both in one round trip
    /// override this.
    async fn begin_and_query(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        params: &[Param<'_>],
    ) -> DriverResult<Vec<Row>> {
        self.begin(connection).await?;
        self.query(connection, sql, params).await
    }

    /// Runs a DDL script (several statements). Where the dialect's scripts look names up in the
    /// catalog as values (SQL Server), `names` are bound in order (`@P1` the schema, `@P2` the
    /// table, `@P3` an index); other dialects ignore them.
    async fn run_script(
        &self,
        connection: &mut Self::Connection,
        sql: &str,
        names: &[&str],
    ) -> DriverResult<()>;
}

/// A pooled connection, possibly with a transaction open. Dropped without [`Held::release`] or
/// [`Held::commit`], it is discarded ([`Driver::discard`]).
pub(crate) struct Held<D: Driver> {
    driver: Arc<D>,
    connection: Option<D::Connection>,
}

impl<D: Driver> Held<D> {
    /// Takes a connection from `driver`'s pool.
    pub async fn take(driver: &Arc<D>) -> DriverResult<Self> {
        let connection = driver.connection().await?;
        Ok(Held {
            driver: driver.clone(),
            connection: Some(connection),
        })
    }

    /// Gives the connection back to the pool: call only when no transaction is open.
    pub fn release(mut self) {
        if let Some(connection) = self.connection.take() {
            self.driver.release(connection);
        }
    }

    /// Commits the open transaction and gives the connection back; on failure the connection
    /// is discarded (the server rolls back).
    pub async fn commit(mut self) -> DriverResult<()> {
        let driver = self.driver.clone();
        let mut connection = self
            .connection
            .take()
            .ok_or_else(|| DriverError::other("the connection was already given back"))?;
        match driver.commit(&mut connection).await {
            Ok(()) => {
                driver.release(connection);
                Ok(())
            }
            Err(e) => {
                driver.discard(connection);
                Err(e)
            }
        }
    }
}

impl<D: Driver> Drop for Held<D> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            self.driver.discard(connection);
        }
    }
}
