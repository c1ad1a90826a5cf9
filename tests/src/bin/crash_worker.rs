//! A worker process for the SIGKILL tests: handles `Numbered` messages from the `Worker` queue and,
//! in the same transaction, sends each number on to the `Done` queue and, when
//! `NIMBUS_BUSINESS_TABLE` names a table, inserts a row keyed by the message id into it through
//! the handler's own connection (`NIMBUS_RECEIVE_BATCH` messages per transaction when set).
//! Runs until killed.
//!
//! Usage: `crash_worker <database-url> <table|shared> [schema]`

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;

struct Forward {
    /// The business table (quoted and qualified) and the database's parameter style.
    business: Option<(String, Database)>,
}

#[derive(Clone, Copy)]
enum Database {
    Sqlite,
    Postgres,
    SqlServer,
}

#[nimbus::handler]
impl Handler<Numbered> for Forward {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if let Some((table, database)) = &self.business {
            let id = ctx.message_id().to_string();
            match database {
                Database::Postgres => {
                    let sql = format!("INSERT INTO {table} (message_id) VALUES ($1)");
                    ctx.postgres().await?.execute(&sql, &[&id]).await?;
                }
                Database::Sqlite => {
                    let sql = format!("INSERT INTO {table} (message_id) VALUES (?1)");
                    ctx.sqlite(move |db| db.execute(&sql, [id])).await?;
                }
                Database::SqlServer => {
                    let sql = format!("INSERT INTO {table} (message_id) VALUES (@P1)");
                    ctx.sql_server().await?.execute(sql, &[&id]).await?;
                }
            }
        }
        ctx.send_to("Done", m)?;
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: crash_worker <database-url> <table|shared> [schema]";
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(usage)?;
    let layout = match args.next().as_deref() {
        Some("table") => StorageLayout::TablePerQueue,
        Some("shared") => StorageLayout::SharedTable,
        _ => return Err(usage.into()),
    };
    let database = if url.starts_with("sqlite:") {
        Database::Sqlite
    } else if url.starts_with("postgres") {
        Database::Postgres
    } else {
        Database::SqlServer
    };
    let business = std::env::var("NIMBUS_BUSINESS_TABLE")
        .ok()
        .map(|table| (table, database));
    let mut builder = nimbus::Bus::builder()
        .names("Worker", format!("worker-{}", std::process::id()))
        .database_url(url)
        .storage_layout(layout)
        .peek_delay(std::time::Duration::from_millis(100))
        .concurrency(8)
        // Nobody receives from Done: the worker makes it.
        .create_queues_on_send(true)
        .handler(Forward { business });
    if let Some(batch) = std::env::var("NIMBUS_RECEIVE_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        builder = builder.receive_batch(batch);
    }
    if let Some(schema) = args.next() {
        builder = builder.schema(schema);
    }
    let _bus = builder.build()?.start().await?;
    std::future::pending::<()>().await;
    Ok(())
}
