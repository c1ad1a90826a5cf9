//! A worker process for the SIGKILL tests: handles `Numbered` messages from the `Worker` queue and,
//! in the same transaction, sends each number on to the `Done` queue and, when
//! `NIMBUS_BUSINESS_TABLE` names a table, inserts a row keyed by the message id into it through
//! the handler's own connection (`NIMBUS_RECEIVE_BATCH` messages per transaction when set).
//! `NIMBUS_DONE_ADDRESS` sends the numbers to that address instead of `Done` (a queue of another
//! schema, which may live on another node of a Citus cluster).
//! With `NIMBUS_LEASE_MS`, the messages are handled under a lease of that many milliseconds:
//! the business row is then written through a connection of the worker's own, committed at
//! once, as an application's handler under a lease would (at least once). `NIMBUS_HANDLER_MS`
//! makes each handler take that long first. With `NIMBUS_SAGA` set, the messages are handled by
//! a saga instead (`Conformance.CrashTally`, five instances by `n % 5`, each counting and summing
//! its numbers), which forwards each number to `Done` too. With `NIMBUS_ORDERED_GROUPS` set, the
//! `Worker` queue keeps ordered groups. With `NIMBUS_LIMIT_CONCURRENCY=n`, at most n messages
//! are handled at once over every worker (`Limit::concurrency`). With `NIMBUS_CLAIM_CHECK_ABOVE=n`,
//! the worker handles `Padded` messages instead, whose bodies above n bytes are stored apart: it
//! forwards each number to `Done` (small) and the padded message to `Archive` (stored apart
//! again), in the object store of the folder `NIMBUS_CLAIM_CHECK_DIR` when set. Runs until
//! killed.
//!
//! Usage: `crash_worker <database-url> <table|shared> [schema]`

use nimbus::{Handler, HandlerContext, HandlerError};
use nimbus_conformance::payloads::Padded;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::WorkerArgs;

struct Forward {
    /// The business table (quoted and qualified) and the database's parameter style.
    business: Option<(String, Database)>,
    /// Under a lease: the worker's own connection, where the business rows are written.
    own: Option<tokio::sync::Mutex<Own>>,
    /// How long each handler works before writing anything.
    work: std::time::Duration,
    /// Where the numbers go: `Done`, or the address `NIMBUS_DONE_ADDRESS` gives (a queue of
    /// another schema).
    done: String,
}

/// A connection of the worker's own, outside the bus.
enum Own {
    /// The file: each insert opens it on a blocking thread, so that waiting for its one writer
    /// never blocks the thread the bus's own transactions need to finish.
    Sqlite(std::path::PathBuf),
    Postgres(nimbus::tokio_postgres::Client),
    SqlServer(Box<nimbus::SqlServerClient>),
}

impl Own {
    async fn open(url: &str, database: Database) -> Result<Own, Box<dyn std::error::Error>> {
        Ok(match database {
            Database::Sqlite => Own::Sqlite(url.trim_start_matches("sqlite://").into()),
            Database::Postgres => {
                // The bus's URL, which may say it reaches the server through a pooler.
                Own::Postgres(nimbus::connect_postgres(url).await?)
            }
            Database::SqlServer => Own::SqlServer(Box::new(nimbus::connect_sql_server(url).await?)),
        })
    }

    /// Inserts `id` into `table`, committed at once.
    async fn insert(&mut self, table: &str, id: &str) -> Result<(), HandlerError> {
        match self {
            Own::Sqlite(path) => {
                let (path, id) = (path.clone(), id.to_string());
                let sql = format!("INSERT INTO {table} (message_id) VALUES (?1)");
                tokio::task::spawn_blocking(move || {
                    let db = nimbus::rusqlite::Connection::open(path)?;
                    db.busy_timeout(std::time::Duration::from_secs(60))?;
                    db.execute(&sql, [id])
                })
                .await??;
            }
            Own::Postgres(client) => {
                let sql = format!("INSERT INTO {table} (message_id) VALUES ($1)");
                // Unnamed, typed: it works through a pooler in transaction mode too.
                let text = nimbus::tokio_postgres::types::Type::TEXT;
                client.execute_typed(&sql, &[(&id, text)]).await?;
            }
            Own::SqlServer(client) => {
                let sql = format!("INSERT INTO {table} (message_id) VALUES (@P1)");
                client.execute(sql, &[&id]).await?;
            }
        }
        Ok(())
    }
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
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        if let (Some((table, _)), Some(own)) = (&self.business, &self.own) {
            let id = ctx.message_id().to_string();
            own.lock().await.insert(table, &id).await?;
        } else if let Some((table, database)) = &self.business {
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
        ctx.send_to(&self.done, m)?;
        Ok(())
    }
}

/// Forwards a padded message's number to `Done` and the message itself to `Archive`.
struct Archive;

#[nimbus::handler]
impl Handler<Padded> for Archive {
    async fn handle(&self, m: Padded, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if !m.is_whole() {
            return Err(
                nimbus::Unrecoverable::new(format!("padded message {} is garbled", m.n)).into(),
            );
        }
        ctx.send_to("Done", Numbered { n: m.n })?;
        ctx.send_to("Archive", m)?;
        Ok(())
    }
}

/// Five tallies, by `n % 5`: each counts its numbers and adds them up.
#[derive(Clone)]
struct CrashTally;

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct TallyState {
    count: u64,
    sum: u64,
}

impl nimbus::saga::Saga for CrashTally {
    type State = TallyState;
    const NAME: &'static str = "Conformance.CrashTally";
}

impl nimbus::saga::SagaHandler<Numbered> for CrashTally {
    const STARTS: bool = true;
    fn correlation(m: &Numbered) -> String {
        (m.n % 5).to_string()
    }
    async fn handle(
        &self,
        m: Numbered,
        saga: &mut nimbus::saga::SagaInstance<TallyState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state.count += 1;
        saga.state.sum += u64::from(m.n);
        ctx.send_to("Done", m)?;
        Ok(())
    }
}

#[actix_rt::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let WorkerArgs {
        url,
        layout,
        schema,
    } = WorkerArgs::read("usage: crash_worker <database-url> <table|shared|nservicebus> [schema]")?;
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
    let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let lease = number("NIMBUS_LEASE_MS").map(std::time::Duration::from_millis);
    let own = match (lease, &business) {
        (Some(_), Some(_)) => Some(tokio::sync::Mutex::new(Own::open(&url, database).await?)),
        _ => None,
    };
    let work = std::time::Duration::from_millis(number("NIMBUS_HANDLER_MS").unwrap_or(0));
    let mut builder = nimbus::Bus::builder()
        .names("Worker", format!("worker-{}", std::process::id()))
        .database_url(url)
        .storage_layout(layout)
        .peek_delay(std::time::Duration::from_millis(100))
        .concurrency(8)
        // Nobody receives from Done: the worker makes it.
        .create_queues_on_send(true);
    builder = if let Some(above) = number("NIMBUS_CLAIM_CHECK_ABOVE") {
        let claim_check = match std::env::var_os("NIMBUS_CLAIM_CHECK_DIR") {
            Some(folder) => nimbus::ClaimCheck::object_store(
                "files",
                std::sync::Arc::new(object_store::local::LocalFileSystem::new_with_prefix(
                    folder,
                )?),
            ),
            None => nimbus::ClaimCheck::in_database(),
        };
        builder
            .claim_check(claim_check.above(usize::try_from(above)?))
            .handler(Archive)
    } else if std::env::var_os("NIMBUS_SAGA").is_some() {
        builder.saga_handler::<Numbered, _>(CrashTally)
    } else {
        builder.handler(Forward {
            business,
            own,
            work,
            done: std::env::var("NIMBUS_DONE_ADDRESS").unwrap_or_else(|_| "Done".into()),
        })
    };
    if let Some(lease) = lease {
        builder = builder.lease::<Numbered>(nimbus::Lease::of(lease));
    }
    if std::env::var_os("NIMBUS_ORDERED_GROUPS").is_some() {
        builder = builder.ordered_groups();
    }
    if let Some(handlers) = number("NIMBUS_LIMIT_CONCURRENCY") {
        let handlers = u32::try_from(handlers)?;
        builder = builder.limit::<Numbered>(nimbus::Limit::concurrency(handlers));
    }
    if let Some(batch) = std::env::var("NIMBUS_RECEIVE_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        builder = builder.receive_batch(batch);
    }
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let _bus = builder.build()?.start().await?;
    std::future::pending::<()>().await;
    Ok(())
}
