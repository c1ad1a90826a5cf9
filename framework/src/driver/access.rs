//! The connection the framework holds, typed per database, for statements it does not write: a
//! handler's own, inside the receive's transaction. Each function answers `None` when the
//! connection belongs to another database.

use std::any::Any;

/// The client of a PostgreSQL connection.
#[cfg(feature = "postgres")]
pub(crate) fn postgres_client(
    connection: &mut (dyn Any + Send),
) -> Option<&tokio_postgres::Client> {
    connection
        .downcast_ref::<deadpool_postgres::Object>()
        .map(|object| &***object)
}

/// Runs `f` with an SQLite connection, on a blocking thread (rusqlite blocks); its statements
/// are interrupted once `deadline` has passed.
#[cfg(feature = "sqlite")]
pub(crate) async fn with_sqlite<T, F>(
    connection: &mut (dyn Any + Send),
    deadline: std::time::Duration,
    f: F,
) -> Option<super::DriverResult<T>>
where
    T: Send + 'static,
    F: FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
{
    let connection = connection.downcast_mut::<super::sqlite::SqliteConnection>()?;
    Some(
        super::sqlite::blocking_within(
            connection,
            deadline,
            "the handler's own statements",
            move |c| f(c),
        )
        .await,
    )
}

/// The first database error in `error`'s chain of causes, classified as the framework's own
/// statements are: whether it may pass when tried again, and whether its transaction gave way
/// to another.
struct DatabaseFailure {
    kind: super::FailureKind,
    conflict: bool,
    lock_timeout: bool,
}

fn first_database_failure(error: &(dyn std::error::Error + 'static)) -> Option<DatabaseFailure> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(driver) = e.downcast_ref::<super::DriverError>() {
            return Some(DatabaseFailure {
                kind: driver.kind(),
                conflict: driver.is_conflict(),
                lock_timeout: driver.is_lock_timeout(),
            });
        }
        #[cfg(feature = "postgres")]
        if let Some(pg) = e.downcast_ref::<tokio_postgres::Error>() {
            let code = pg.code().map(|c| c.code());
            return Some(DatabaseFailure {
                kind: super::postgres::kind_of(pg),
                conflict: super::is_conflict_code(code),
                lock_timeout: super::is_lock_timeout_code(code),
            });
        }
        #[cfg(feature = "sqlite")]
        if let Some(sqlite) = e.downcast_ref::<rusqlite::Error>() {
            return Some(DatabaseFailure {
                kind: super::sqlite::kind_of(sqlite),
                conflict: false,
                lock_timeout: false,
            });
        }
        #[cfg(feature = "sqlserver")]
        if let Some(tds) = e.downcast_ref::<tiberius::error::Error>() {
            let code = match tds {
                tiberius::error::Error::Server(token) => Some(token.code().to_string()),
                _ => None,
            };
            return Some(DatabaseFailure {
                kind: super::sqlserver::kind_of(tds),
                conflict: super::is_conflict_code(code.as_deref()),
                lock_timeout: super::is_lock_timeout_code(code.as_deref()),
            });
        }
        cause = e.source();
    }
    None
}

/// Whether `error` or one of its causes is a database failure that may pass when tried again
/// (a statement past its deadline, a lost connection, a deadlock victim): `Some` with the
/// first database error found in its chain, classified as the framework's own statements are.
pub(crate) fn failure_kind_in(
    error: &(dyn std::error::Error + 'static),
) -> Option<super::FailureKind> {
    first_database_failure(error).map(|f| f.kind)
}

/// Whether `error` or one of its causes says a transaction gave way to another (a deadlock
/// victim, a serialization failure, a saga race): tried again at once, not after a back-off.
pub(crate) fn is_conflict_in(error: &(dyn std::error::Error + 'static)) -> bool {
    first_database_failure(error).is_some_and(|f| f.conflict)
}

/// Whether `error` or one of its causes says a statement waited for a row lock longer than its
/// transaction allowed (PostgreSQL's `lock_timeout`, SQL Server's `LOCK_TIMEOUT`).
pub(crate) fn is_lock_timeout_in(error: &(dyn std::error::Error + 'static)) -> bool {
    first_database_failure(error).is_some_and(|f| f.lock_timeout)
}

/// The tiberius client of a SQL Server connection.
#[cfg(feature = "sqlserver")]
pub(crate) fn sql_server_client(
    connection: &mut (dyn Any + Send),
) -> Option<&mut super::sqlserver::Client> {
    connection
        .downcast_mut::<super::sqlserver::Connection>()
        .map(|object| &mut ***object)
}

/// Runs `statements` in the application's own PostgreSQL transaction.
#[cfg(feature = "postgres")]
pub(crate) async fn run_in_postgres(
    transaction: &tokio_postgres::Transaction<'_>,
    statements: &[super::Statement],
) -> super::DriverResult<()> {
    for statement in statements {
        let params = statement.params();
        // Unnamed and typed: one round trip each, and nothing left on the server connection
        // (a pooler in transaction mode may hand the next transaction another).
        transaction
            .execute_typed(statement.sql.as_str(), &super::postgres::typed(&params))
            .await
            .map_err(super::postgres::error)?;
    }
    Ok(())
}

/// Runs `statements` in the application's own SQLite transaction (blocking, as rusqlite does).
#[cfg(feature = "sqlite")]
pub(crate) fn run_in_sqlite(
    transaction: &rusqlite::Transaction<'_>,
    statements: &[super::Statement],
) -> super::DriverResult<()> {
    for statement in statements {
        let params = statement.params();
        transaction
            .execute(&statement.sql, rusqlite::params_from_iter(params.iter()))
            .map_err(super::sqlite::error)?;
    }
    Ok(())
}

/// Runs `statements` on the application's own SQL Server connection, inside the transaction
/// it opened there.
#[cfg(feature = "sqlserver")]
pub(crate) async fn run_in_sql_server<S>(
    client: &mut tiberius::Client<S>,
    statements: &[super::Statement],
) -> super::DriverResult<()>
where
    S: futures::AsyncRead + futures::AsyncWrite + Unpin + Send,
{
    for statement in statements {
        let params = statement.params();
        // No NULL tiberius would send untyped: Babelfish refuses those.
        let (sql, refs) = super::sqlserver::bindable(&statement.sql, &params);
        client
            .execute(sql, &refs)
            .await
            .map_err(super::sqlserver::error)?;
    }
    Ok(())
}
