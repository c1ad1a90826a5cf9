//! The receive's connection as a handler gets it: the driver's client, with its usual
//! statement methods bounded by the endpoint's `database_timeout`, so that a frozen connection
//! or a statement stuck behind a lock fails at that deadline as a transient database error
//! (the message goes back to its queue without spending its retry budget) instead of hanging
//! until the handler timeout and counting as a failed attempt.

#[cfg(any(feature = "postgres", feature = "sqlserver"))]
use std::time::Duration;

#[cfg(any(feature = "postgres", feature = "sqlserver"))]
use crate::driver::DriverError;

/// Runs `call`, failing with a timeout (transient) once `deadline` has passed.
#[cfg(any(feature = "postgres", feature = "sqlserver"))]
async fn bounded<T, E>(
    deadline: Duration,
    call: impl std::future::Future<Output = Result<T, E>>,
    error: impl FnOnce(E) -> DriverError,
) -> Result<T, DriverError> {
    match tokio::time::timeout(deadline, call).await {
        Ok(result) => result.map_err(error),
        Err(_) => Err(DriverError::timed_out("the handler's statement", deadline)),
    }
}

/// The receive's PostgreSQL connection, lent to a handler by
/// [`HandlerContext::postgres`](crate::HandlerContext::postgres), inside the transaction that
/// removes the message.
///
/// `execute`, `query`, `query_one`, `query_opt` and `batch_execute` are the client's own, each
/// bounded by the endpoint's [`database_timeout`](crate::BusBuilder::database_timeout); their
/// errors are [`DriverError`]s that keep the server's text, its SQLSTATE
/// ([`DriverError::code`]) and the `tokio_postgres::Error` as their source. Every other method of
/// the client is reachable through `Deref`, without that deadline.
#[cfg(feature = "postgres")]
pub struct HandlerPostgres<'a> {
    client: &'a tokio_postgres::Client,
    deadline: Duration,
}

#[cfg(feature = "postgres")]
impl<'a> HandlerPostgres<'a> {
    pub(crate) fn new(client: &'a tokio_postgres::Client, deadline: Duration) -> Self {
        HandlerPostgres { client, deadline }
    }

    /// [`tokio_postgres::Client::execute`], within the deadline: the rows it affected.
    pub async fn execute<T>(
        &self,
        statement: &T,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, DriverError>
    where
        T: ?Sized + tokio_postgres::ToStatement,
    {
        bounded(
            self.deadline,
            self.client.execute(statement, params),
            crate::driver::postgres::error,
        )
        .await
    }

    /// [`tokio_postgres::Client::query`], within the deadline.
    pub async fn query<T>(
        &self,
        statement: &T,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, DriverError>
    where
        T: ?Sized + tokio_postgres::ToStatement,
    {
        bounded(
            self.deadline,
            self.client.query(statement, params),
            crate::driver::postgres::error,
        )
        .await
    }

    /// [`tokio_postgres::Client::query_one`], within the deadline.
    pub async fn query_one<T>(
        &self,
        statement: &T,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<tokio_postgres::Row, DriverError>
    where
        T: ?Sized + tokio_postgres::ToStatement,
    {
        bounded(
            self.deadline,
            self.client.query_one(statement, params),
            crate::driver::postgres::error,
        )
        .await
    }

    /// [`tokio_postgres::Client::query_opt`], within the deadline.
    pub async fn query_opt<T>(
        &self,
        statement: &T,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<tokio_postgres::Row>, DriverError>
    where
        T: ?Sized + tokio_postgres::ToStatement,
    {
        bounded(
            self.deadline,
            self.client.query_opt(statement, params),
            crate::driver::postgres::error,
        )
        .await
    }

    /// [`tokio_postgres::Client::batch_execute`], within the deadline.
    pub async fn batch_execute(&self, query: &str) -> Result<(), DriverError> {
        bounded(
            self.deadline,
            self.client.batch_execute(query),
            crate::driver::postgres::error,
        )
        .await
    }
}

#[cfg(feature = "postgres")]
impl std::ops::Deref for HandlerPostgres<'_> {
    type Target = tokio_postgres::Client;

    fn deref(&self) -> &tokio_postgres::Client {
        self.client
    }
}

#[cfg(feature = "postgres")]
impl std::fmt::Debug for HandlerPostgres<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerPostgres")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// The receive's SQL Server connection (a tiberius client), lent to a handler by
/// [`HandlerContext::sql_server`](crate::HandlerContext::sql_server), inside the transaction
/// that removes the message.
///
/// `execute`, `query` and `simple_query` are the client's own, bounded by the endpoint's
/// [`database_timeout`](crate::BusBuilder::database_timeout) until the server's first answer
/// (rows read from a query's stream afterwards are not); their errors are [`DriverError`]s
/// that keep the server's error number ([`DriverError::code`]) and the tiberius error as their
/// source. Every other method of the client is reachable through `Deref`/`DerefMut`, without
/// that deadline.
#[cfg(feature = "sqlserver")]
pub struct HandlerSqlServer<'a> {
    client: &'a mut crate::SqlServerClient,
    deadline: Duration,
}

#[cfg(feature = "sqlserver")]
impl<'a> HandlerSqlServer<'a> {
    pub(crate) fn new(client: &'a mut crate::SqlServerClient, deadline: Duration) -> Self {
        HandlerSqlServer { client, deadline }
    }

    /// [`tiberius::Client::execute`], within the deadline.
    pub async fn execute<'b>(
        &mut self,
        query: impl Into<std::borrow::Cow<'b, str>>,
        params: &[&dyn tiberius::ToSql],
    ) -> Result<tiberius::ExecuteResult, DriverError> {
        bounded(
            self.deadline,
            self.client.execute(query, params),
            crate::driver::sqlserver::error,
        )
        .await
    }

    /// [`tiberius::Client::query`], within the deadline until the server answers.
    pub async fn query<'s, 'b>(
        &'s mut self,
        query: impl Into<std::borrow::Cow<'b, str>>,
        params: &'b [&'b dyn tiberius::ToSql],
    ) -> Result<tiberius::QueryStream<'s>, DriverError>
    where
        's: 'b,
    {
        bounded(
            self.deadline,
            self.client.query(query, params),
            crate::driver::sqlserver::error,
        )
        .await
    }

    /// [`tiberius::Client::simple_query`], within the deadline until the server answers.
    pub async fn simple_query<'s, 'b>(
        &'s mut self,
        query: impl Into<std::borrow::Cow<'b, str>>,
    ) -> Result<tiberius::QueryStream<'s>, DriverError>
    where
        's: 'b,
    {
        bounded(
            self.deadline,
            self.client.simple_query(query),
            crate::driver::sqlserver::error,
        )
        .await
    }
}

#[cfg(feature = "sqlserver")]
impl std::ops::Deref for HandlerSqlServer<'_> {
    type Target = crate::SqlServerClient;

    fn deref(&self) -> &crate::SqlServerClient {
        self.client
    }
}

#[cfg(feature = "sqlserver")]
impl std::ops::DerefMut for HandlerSqlServer<'_> {
    fn deref_mut(&mut self) -> &mut crate::SqlServerClient {
        self.client
    }
}

#[cfg(feature = "sqlserver")]
impl std::fmt::Debug for HandlerSqlServer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerSqlServer")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
