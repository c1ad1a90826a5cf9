//! Business data and messages in one transaction, both ways:
//!
//! 1. The web side saves an order in its own transaction on its own connection and publishes
//!    `OrderPlaced` in the same transaction (`bus.in_transaction()`): both commit, or neither —
//!    the second order below is rolled back and its event never exists.
//! 2. Billing handles `OrderPlaced` and writes an invoice through the handler's context
//!    (`ctx.sqlite(..)` / `ctx.postgres()` / `ctx.sql_server()`), inside the transaction that
//!    removes the message: the
//!    invoice exists exactly once per event, even if the process dies mid-way or the handler
//!    fails and is retried.
//!
//! ```sh
//! cargo run --example orders                       # SQLite file orders.db
//! cargo run --example orders --features postgres -- postgres://postgres@127.0.0.1/postgres
//! cargo run --example orders --features sqlserver -- "Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;Password=…;TrustServerCertificate=true"
//! ```
//!
//! The example builds only the databases its features name (SQLite always).

use std::time::Duration;

use nimbus::{Bus, Event, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

#[derive(Debug, Serialize, Deserialize, Event)]
#[nimbus(type_name = "Shop.Messages.OrderPlaced")]
struct OrderPlaced {
    order_id: i64,
    total_cents: i64,
}

/// The database the example runs on, told by its URL.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Database {
    Sqlite,
    Postgres,
    /// An ADO.NET connection string (`Server=…`).
    SqlServer,
}

/// The error of a database this build of the example leaves out.
#[allow(dead_code)] // Unused when every database is compiled in.
fn not_compiled(feature: &str) -> Box<dyn std::error::Error + Send + Sync> {
    format!(
        "this build of the example has no {feature}: run it with \
         `cargo run --example orders --features {feature} -- <url>`"
    )
    .into()
}

impl Database {
    fn of(url: &str) -> Database {
        if url.starts_with("postgres") {
            Database::Postgres
        } else if url.starts_with("sqlite:") {
            Database::Sqlite
        } else {
            Database::SqlServer
        }
    }
}

/// Billing: one invoice per `OrderPlaced`, in the receive's transaction.
struct Invoicing {
    database: Database,
    done: mpsc::UnboundedSender<i64>,
}

impl Handler<OrderPlaced> for Invoicing {
    async fn handle(
        &self,
        event: OrderPlaced,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        let message_id = ctx.message_id().to_string();
        match self.database {
            Database::Postgres => {
                #[cfg(feature = "postgres")]
                ctx.postgres()
                    .await?
                    .execute(
                        "INSERT INTO invoices (message_id, order_id, total_cents) \
                         VALUES ($1, $2, $3)",
                        &[&message_id, &event.order_id, &event.total_cents],
                    )
                    .await?;
                #[cfg(not(feature = "postgres"))]
                return Err(not_compiled("postgres"));
            }
            Database::SqlServer => {
                #[cfg(feature = "sqlserver")]
                ctx.sql_server()
                    .await?
                    .execute(
                        "INSERT INTO invoices (message_id, order_id, total_cents) \
                         VALUES (@P1, @P2, @P3)",
                        &[&message_id, &event.order_id, &event.total_cents],
                    )
                    .await?;
                #[cfg(not(feature = "sqlserver"))]
                return Err(not_compiled("sqlserver"));
            }
            Database::Sqlite => {
                ctx.sqlite(move |db| {
                    db.execute(
                        "INSERT INTO invoices (message_id, order_id, total_cents) \
                         VALUES (?1, ?2, ?3)",
                        (message_id, event.order_id, event.total_cents),
                    )
                })
                .await?;
            }
        }
        // Commits with the invoice and the message's removal; a failure here undoes the invoice.
        self.done.send(event.order_id)?;
        Ok(())
    }
}

const TABLES: &str = "CREATE TABLE IF NOT EXISTS orders (order_id bigint PRIMARY KEY, total_cents bigint NOT NULL);
CREATE TABLE IF NOT EXISTS invoices (message_id varchar(64) PRIMARY KEY, order_id bigint NOT NULL, total_cents bigint NOT NULL);";

/// Says what became of an order and its event.
fn report(order_id: i64, committed: bool) {
    if committed {
        println!("1. order {order_id} saved and OrderPlaced published, in one transaction");
    } else {
        println!("1. order {order_id} rolled back: neither the order nor its event exists");
    }
}

/// The web side on PostgreSQL: the order and its event in the application's own transaction.
#[cfg(feature = "postgres")]
async fn place_on_postgres(
    bus: &Bus,
    url: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // The bus's URL, TLS (sslmode, sslrootcert) included.
    let mut client = nimbus::connect_postgres(url).await?;
    client.batch_execute(TABLES).await?;
    for (order_id, total_cents, commit) in [(1001_i64, 2500_i64, true), (1002, 990, false)] {
        let tx = client.transaction().await?;
        tx.execute(
            "INSERT INTO orders (order_id, total_cents) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&order_id, &total_cents],
        )
        .await?;
        let mut sends = bus.in_transaction();
        sends.publish(OrderPlaced {
            order_id,
            total_cents,
        })?;
        sends.write_postgres(&tx).await?;
        if commit {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        report(order_id, commit);
    }
    Ok(())
}

/// The tables on SQL Server.
#[cfg(feature = "sqlserver")]
const SQL_SERVER_TABLES: &str = "IF OBJECT_ID(N'orders') IS NULL
    CREATE TABLE orders (order_id bigint PRIMARY KEY, total_cents bigint NOT NULL);
IF OBJECT_ID(N'invoices') IS NULL
    CREATE TABLE invoices (message_id varchar(64) PRIMARY KEY, order_id bigint NOT NULL, total_cents bigint NOT NULL);";

/// The web side on SQL Server: its own connection (`nimbus::connect_sql_server`, logged in as
/// the bus), the order and its event in one transaction there.
#[cfg(feature = "sqlserver")]
async fn place_on_sql_server(
    bus: &Bus,
    connection_string: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut client = nimbus::connect_sql_server(connection_string).await?;
    for (order_id, total_cents, commit) in [(1001_i64, 2500_i64, true), (1002, 990, false)] {
        client
            .simple_query("BEGIN TRANSACTION")
            .await?
            .into_results()
            .await?;
        client
            .execute(
                "IF NOT EXISTS (SELECT 1 FROM orders WHERE order_id = @P1)
                 INSERT INTO orders (order_id, total_cents) VALUES (@P1, @P2)",
                &[&order_id, &total_cents],
            )
            .await?;
        let mut sends = bus.in_transaction();
        sends.publish(OrderPlaced {
            order_id,
            total_cents,
        })?;
        sends.write_sql_server(&mut client).await?;
        let end = if commit { "COMMIT" } else { "ROLLBACK" };
        client.simple_query(end).await?.into_results().await?;
        report(order_id, commit);
    }
    Ok(())
}

/// The web side on SQLite: prepare first (the file has one writer), then write inside the
/// application's own transaction.
async fn place_on_sqlite(
    bus: &Bus,
    path: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut db = nimbus::rusqlite::Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(30))?;
    db.execute_batch(TABLES)?;
    for (order_id, total_cents, commit) in [(1001_i64, 2500_i64, true), (1002, 990, false)] {
        let mut sends = bus.in_transaction();
        sends.publish(OrderPlaced {
            order_id,
            total_cents,
        })?;
        let prepared = sends.prepare().await?;
        let tx = db.transaction()?;
        tx.execute(
            "INSERT OR IGNORE INTO orders (order_id, total_cents) VALUES (?1, ?2)",
            (order_id, total_cents),
        )?;
        prepared.write_sqlite(&tx)?;
        if commit {
            tx.commit()?;
        } else {
            tx.rollback()?;
        }
        report(order_id, commit);
    }
    Ok(())
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sqlite://orders.db".to_string());
    let database = Database::of(&url);
    // The tables exist before Billing's first receive.
    match database {
        Database::Sqlite => {
            let path = url.trim_start_matches("sqlite://");
            nimbus::rusqlite::Connection::open(path)?.execute_batch(TABLES)?;
        }
        #[cfg(feature = "sqlserver")]
        Database::SqlServer => {
            nimbus::connect_sql_server(&url)
                .await?
                .simple_query(SQL_SERVER_TABLES)
                .await?
                .into_results()
                .await?;
        }
        #[cfg(not(feature = "sqlserver"))]
        Database::SqlServer => return Err(not_compiled("sqlserver")),
        // place_on_postgres makes them on its connection.
        #[cfg(feature = "postgres")]
        Database::Postgres => {}
        #[cfg(not(feature = "postgres"))]
        Database::Postgres => return Err(not_compiled("postgres")),
    }
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let billing = Bus::builder()
        .names("Billing", "billing-1")
        .database_url(&url)
        .peek_delay(Duration::from_millis(100))
        .handler(Invoicing {
            database,
            done: done_tx,
        })
        .build()?
        .start()
        .await?;
    let web = Bus::builder()
        .names("Web", "web-1")
        .database_url(&url)
        .build()?
        .start()
        .await?;

    match database {
        #[cfg(feature = "postgres")]
        Database::Postgres => place_on_postgres(&web, &url).await?,
        #[cfg(feature = "sqlserver")]
        Database::SqlServer => place_on_sql_server(&web, &url).await?,
        Database::Sqlite => place_on_sqlite(&web, url.trim_start_matches("sqlite://")).await?,
        #[allow(unreachable_patterns)] // Refused above when not compiled in.
        _ => return Err("this database is not compiled into the example".into()),
    }
    let invoiced = tokio::time::timeout(Duration::from_secs(20), done_rx.recv()).await;
    // Had the rolled-back order's event existed, it would arrive now.
    let late = tokio::time::timeout(Duration::from_millis(500), done_rx.recv()).await;
    web.stop().await?;
    billing.stop().await?;
    match (invoiced, late) {
        (Ok(Some(order_id)), Err(_)) => {
            println!(
                "2. Billing wrote the invoice of order {order_id} in the receive's transaction"
            );
            println!(
                "3. done: one order, one event, one invoice; the rolled-back order left nothing"
            );
            Ok(())
        }
        (Ok(Some(_)), Ok(other)) => Err(format!("an unexpected second invoice: {other:?}").into()),
        _ => Err("Billing did not invoice the order within 20 s".into()),
    }
}
