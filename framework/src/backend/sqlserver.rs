//! SQL Server driver: tiberius (TDS 7.3, TLS by rustls) with a deadpool pool.
//!
//! A receive opens a transaction (`TM_BEGIN_XACT`), runs the dialect's
//! `DELETE … WITH (UPDLOCK, READPAST, ROWLOCK) … OUTPUT deleted.…`, and keeps the connection
//! until the handler is done; the handler's sends are inserted on the same connection before the
//! commit. A connection whose transaction did not finish cleanly is closed, never pooled, so the
//! server rolls it back. The structure is the PostgreSQL driver's, statement for statement.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Object, Pool, RecycleResult};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use uuid::Uuid;

use super::catalog::QueueEntry;
use super::{
    instance_queues, single_plain_insert, Backend, Catalog, CatalogSettings, RebuildDeadLetter,
    ReceiveTransaction, SweepReport, TxGuard,
};
use crate::dead_letter::DeadLetter;
use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::names::{QueueName, SchemaName};
use crate::sql::sqlserver::{SqlServer, SCHEMA_LOCK};
use crate::sql::{Dialect, IndexStatement};

const NAME: &str = SqlServer::NAME;
/// ADO.NET's default `Connect Timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How many Azure SQL gateway redirects to follow when connecting.
const MAX_REDIRECTS: usize = 3;

type Client = tiberius::Client<Compat<TcpStream>>;

/// A parsed ADO.NET connection string.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionSettings {
    pub config: tiberius::Config,
    /// `server/database` for messages, never a password.
    pub target: String,
    pub connect_timeout: Duration,
}

/// Parses an ADO.NET connection string such as
/// `Server=tcp:host,1433;Database=Orders;User Id=app;Password=…;TrustServerCertificate=true`.
pub(crate) fn parse_connection_string(text: &str) -> Result<ConnectionSettings> {
    let pairs: Vec<(String, String)> = text
        .split(';')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let get = |keys: &[&str]| {
        pairs
            .iter()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
    };
    let fix = "write it as Server=tcp:host,1433;Database=Name;User Id=user;Password=secret;\
               TrustServerCertificate=true";
    let integrated = get(&[
        "integrated security",
        "integratedsecurity",
        "trusted_connection",
    ])
    .map(|v| v.to_ascii_lowercase())
    .is_some_and(|v| matches!(v.as_str(), "true" | "yes" | "sspi"));
    if integrated {
        return Err(NimbusError::config(
            "Integrated (Windows) authentication to SQL Server is not supported yet",
            "use SQL authentication: User Id=...;Password=... in the connection string",
        ));
    }
    if let Some(mode) = get(&["authentication"]) {
        return Err(NimbusError::config(
            format!("Authentication={mode} is not supported yet"),
            "use SQL authentication: User Id=...;Password=... in the connection string",
        ));
    }
    let connect_timeout = match get(&["connect timeout", "connection timeout", "timeout"]) {
        None => DEFAULT_CONNECT_TIMEOUT,
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .ok_or_else(|| {
                NimbusError::config(
                    format!("Connect Timeout={v:?} is not a positive number of seconds"),
                    "use e.g. Connect Timeout=15",
                )
            })?,
    };
    let mut config = tiberius::Config::from_ado_string(text).map_err(|e| {
        NimbusError::config(
            format!("cannot parse the SQL Server connection string: {e}"),
            fix,
        )
    })?;
    config.application_name("nimbus");
    config.handshake_timeout(Some(connect_timeout));
    let server = get(&[
        "server",
        "data source",
        "address",
        "addr",
        "network address",
    ])
    .unwrap_or_else(|| "localhost".into());
    let database = get(&["database", "initial catalog"]).unwrap_or_else(|| "master".into());
    Ok(ConnectionSettings {
        config,
        target: format!("{server}/{database}"),
        connect_timeout,
    })
}

/// Opens one connection: TCP, then TDS login (following Azure SQL gateway redirects), all within
/// the connect timeout.
async fn open(
    settings: &ConnectionSettings,
) -> std::result::Result<Client, tiberius::error::Error> {
    let attempt = async {
        let mut config = settings.config.clone();
        let mut redirects = 0;
        loop {
            let tcp = TcpStream::connect(config.get_addr()).await?;
            tcp.set_nodelay(true)?;
            // Boxed: the login future is large, and callers may poll it on a small stack.
            match Box::pin(tiberius::Client::connect(
                config.clone(),
                tcp.compat_write(),
            ))
            .await
            {
                Err(tiberius::error::Error::Routing { host, port })
                    if redirects < MAX_REDIRECTS =>
                {
                    redirects += 1;
                    config.host(&host);
                    config.port(port);
                }
                other => return other,
            }
        }
    };
    match tokio::time::timeout(settings.connect_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no connection within the connect timeout of {:?}",
                settings.connect_timeout
            ),
        )
        .into()),
    }
}

/// The deadpool manager: connects on `create`; a connection that failed is never returned to the
/// pool (callers take it out), so recycling checks nothing and costs no round trip.
pub(crate) struct ConnectionManager {
    settings: ConnectionSettings,
}

impl managed::Manager for ConnectionManager {
    type Type = Client;
    type Error = tiberius::error::Error;

    async fn create(&self) -> std::result::Result<Client, tiberius::error::Error> {
        open(&self.settings).await
    }

    async fn recycle(
        &self,
        _client: &mut Client,
        _metrics: &Metrics,
    ) -> RecycleResult<Self::Error> {
        Ok(())
    }
}

type Connection = Object<ConnectionManager>;

/// What to tell the user for a server error number met while connecting or creating the schema.
fn advice(error: &tiberius::error::Error, target: &str) -> String {
    match error.code() {
        Some(18456) => "the login failed: check User Id and Password".into(),
        Some(4060) => format!(
            "the database in {target} does not exist or the login may not open it: create it \
             or fix Database= in the connection string"
        ),
        Some(262) | Some(2760) | Some(15247) => "the login may not create tables: grant it CREATE TABLE \
            (and CREATE SCHEMA for a new schema), or turn auto_create_schema off and have a DBA run \
            the scripts in schema/sqlserver"
            .into(),
        _ => match error {
            tiberius::error::Error::Tls(_) => "TLS failed: for a server with a self-signed \
                certificate add TrustServerCertificate=true, otherwise install its CA"
                .into(),
            _ => "check that the server runs and accepts TCP connections on that port, and the \
                  connection string"
                .into(),
        },
    }
}

fn db_err(operation: impl Into<String>) -> impl FnOnce(tiberius::error::Error) -> NimbusError {
    let operation = operation.into();
    move |e| NimbusError::database(NAME, operation, e)
}

/// A SQL Server database holding queues in one schema.
pub(crate) struct SqlServerBackend {
    shared: Arc<Shared>,
}

struct Shared {
    pool: Pool<ConnectionManager>,
    target: String,
    catalog: Catalog<SqlServer>,
    body_string: bool,
}

impl SqlServerBackend {
    /// Builds the pool and opens one connection, so that an unreachable server, a refused login
    /// or a missing database fails here, naming server and database.
    pub async fn connect(
        settings: ConnectionSettings,
        schema: SchemaName,
        catalog_settings: CatalogSettings,
        body_string: bool,
        pool_size: usize,
    ) -> Result<Self> {
        let target = settings.target.clone();
        let timeout = settings.connect_timeout;
        let pool = Pool::builder(ConnectionManager { settings })
            .max_size(pool_size)
            .runtime(deadpool::Runtime::Tokio1)
            .create_timeout(Some(timeout))
            .build()
            .map_err(|e| NimbusError::connect(NAME, &target, "check the connection string", e))?;
        let shared = Shared {
            pool,
            target,
            catalog: Catalog::new(&catalog_settings, schema),
            body_string,
        };
        drop(shared.connection("connecting").await?);
        Ok(SqlServerBackend {
            shared: Arc::new(shared),
        })
    }
}

impl Shared {
    async fn connection(&self, operation: &str) -> Result<Connection> {
        self.pool.get().await.map_err(|e| match e {
            managed::PoolError::Backend(e) => {
                let fix = advice(&e, &self.target);
                NimbusError::connect(NAME, &self.target, format!("{fix} (while {operation})"), e)
            }
            other => NimbusError::connect(
                NAME,
                &self.target,
                format!(
                    "the server did not answer in time while {operation}; check that it runs and \
                     that Connect Timeout suits the network"
                ),
                other,
            ),
        })
    }

    fn schema_params(&self) -> &str {
        self.catalog.schema.as_str()
    }

    /// Creates a queue table and its indexes inside the caller's transaction, under the schema
    /// lock. The caller marks the queue as existing once the transaction commits.
    async fn create_queue_in_tx(
        &self,
        client: &mut Connection,
        entry: &QueueEntry,
        queue: &QueueName,
    ) -> Result<()> {
        client
            .execute(SCHEMA_LOCK, &[])
            .await
            .map_err(db_err("taking the schema lock"))?;
        let schema = self.schema_params();
        let q = &entry.statements;
        client
            .execute(q.create_queue.as_str(), &[&schema, &queue.as_str()])
            .await
            .map_err(|e| self.ddl_error(format!("creating queue table {queue:?}"), e))?;
        if self.body_string {
            if let Some(add) = &q.add_body_string {
                client
                    .execute(add.as_str(), &[&schema, &queue.as_str()])
                    .await
                    .map_err(|e| self.ddl_error(format!("adding BodyString to {queue:?}"), e))?;
            }
        }
        Ok(())
    }

    fn ddl_error(&self, operation: String, e: tiberius::error::Error) -> NimbusError {
        let fix = advice(&e, &self.target);
        NimbusError::database(NAME, format!("{operation} in {} ({fix})", self.target), e)
    }

    /// Inserts `messages` on `client`, inside its open transaction. Topics are resolved to their
    /// subscribers in the same transaction. Returns the queues this call created.
    async fn write(
        &self,
        client: &mut Connection,
        messages: Vec<OutgoingMessage>,
    ) -> Result<Vec<Arc<QueueEntry>>> {
        let mut created = Vec::new();
        for message in messages {
            let queues = match &message.destination {
                Destination::Queue(queue) => vec![queue.clone()],
                Destination::Topic(topic) => {
                    let rows = client
                        .query(
                            self.catalog.shared.subscribers.as_str(),
                            &[topic, &self.catalog.idle_seconds],
                        )
                        .await
                        .map_err(db_err(format!("reading the subscribers of {topic}")))?
                        .into_first_result()
                        .await
                        .map_err(db_err(format!("reading the subscribers of {topic}")))?;
                    let mut queues = Vec::with_capacity(rows.len());
                    for row in rows {
                        let name: Option<&str> = row
                            .try_get(0)
                            .map_err(db_err("reading a subscriber queue name"))?;
                        if let Some(name) = name {
                            queues.push(QueueName::new(name)?);
                        }
                    }
                    queues
                }
            };
            for queue in queues {
                if self.catalog.shared_table() {
                    // Each copy of a published message is its own row, with its own key.
                    let row_id = match message.destination {
                        Destination::Topic(_) => self.catalog.message_ids.next(),
                        Destination::Queue(_) => message.id,
                    };
                    self.insert_shared(client, &queue, &message, row_id).await?;
                    continue;
                }
                if message.delivery != Delivery::Immediate {
                    self.insert_delayed(client, &queue, &message).await?;
                    continue;
                }
                let entry = self.catalog.queue(&queue);
                if !entry.is_known_to_exist() {
                    // Usually another endpoint made it: look before taking the schema lock.
                    if self.catalog.auto_create
                        && !self.table_exists(client, queue.as_str()).await?
                    {
                        self.create_queue_in_tx(client, &entry, &queue).await?;
                    }
                    // Known to exist once this transaction commits its insert.
                    created.push(entry.clone());
                }
                client
                    .execute(
                        entry.statements.insert.as_str(),
                        &[
                            &message.id,
                            &message.correlation_id,
                            &message.reply_to_address,
                            &message.time_to_be_received_ms,
                            &message.headers_json,
                            &message.body,
                            &message.expires_at,
                        ],
                    )
                    .await
                    .map_err(|e| {
                        entry.forget_exists();
                        NimbusError::database(NAME, format!("sending to queue {queue:?}"), e)
                    })?;
            }
        }
        Ok(created)
    }

    /// Inserts `message` for `queue` into `NimbusMessages` (shared-table layout), its headers
    /// in the body's envelope, visible after its delay.
    async fn insert_shared(
        &self,
        client: &mut Connection,
        queue: &QueueName,
        message: &OutgoingMessage,
        row_id: Uuid,
    ) -> Result<()> {
        let (delay_ms, due_at) = message.delivery.delay_and_due();
        client
            .execute(
                self.catalog.shared.messages.insert.as_str(),
                &[
                    &row_id,
                    &queue.as_str(),
                    &crate::shared_envelope::wrap(&message.headers_json, &message.body),
                    &message.time_to_be_received_ms,
                    &message.expires_at,
                    &delay_ms,
                    &due_at,
                ],
            )
            .await
            .map_err(db_err(format!("sending to queue {queue:?}")))?;
        Ok(())
    }

    /// Drops a queue's table, or in the shared-table layout deletes its rows.
    async fn drop_queue_in(&self, client: &mut Connection, queue: &QueueName) -> Result<()> {
        let operation = format!("dropping queue {queue:?}");
        if self.catalog.shared_table() {
            client
                .execute(
                    self.catalog.shared.messages.delete_destination.as_str(),
                    &[&queue.as_str()],
                )
                .await
                .map_err(db_err(operation))?;
            return Ok(());
        }
        let entry = self.catalog.queue(queue);
        client
            .execute(entry.statements.drop_queue.as_str(), &[])
            .await
            .map_err(db_err(operation))?;
        Ok(())
    }

    /// Inserts `message` for `queue` into `NimbusDelayedMessages`, due after its delay.
    async fn insert_delayed(
        &self,
        client: &mut Connection,
        queue: &QueueName,
        message: &OutgoingMessage,
    ) -> Result<()> {
        let (delay_ms, due_at) = message.delivery.delay_and_due();
        client
            .execute(
                self.catalog.shared.insert_delayed.as_str(),
                &[
                    &message.id,
                    &queue.as_str(),
                    &message.correlation_id,
                    &message.reply_to_address,
                    &message.time_to_be_received_ms,
                    &message.headers_json,
                    &message.body,
                    &message.expires_at,
                    &delay_ms,
                    &due_at,
                ],
            )
            .await
            .map_err(db_err(format!("sending a delayed message to {queue:?}")))?;
        Ok(())
    }

    /// Inserts `letter`, under a fresh id if its id is taken.
    async fn insert_dead_letter(&self, client: &mut Connection, letter: &DeadLetter) -> Result<()> {
        for id in [letter.message_id, Uuid::new_v4()] {
            let result = client
                .execute(
                    self.catalog.shared.insert_dead_letter.as_str(),
                    &[
                        &id,
                        &letter.original_destination.as_str(),
                        &letter.body,
                        &letter.delivery_attempts,
                    ],
                )
                .await
                .map_err(db_err("writing a dead letter"))?;
            if result.total() == 1 {
                return Ok(());
            }
        }
        Err(NimbusError::NotRunning(
            "a dead letter could not be written under two different ids".into(),
        ))
    }

    async fn has_last_seen_at(&self, client: &mut Connection) -> Result<bool> {
        let row = client
            .query(
                self.catalog.shared.has_last_seen_at.as_str(),
                &[&self.schema_params()],
            )
            .await
            .map_err(db_err("checking NimbusSubscriptions for LastSeenAt"))?
            .into_row()
            .await
            .map_err(db_err("checking NimbusSubscriptions for LastSeenAt"))?;
        Ok(row.is_some())
    }

    async fn table_exists(&self, client: &mut Connection, table: &str) -> Result<bool> {
        let row = client
            .query(
                self.catalog.shared.table_exists.as_str(),
                &[&self.schema_params(), &table],
            )
            .await
            .map_err(db_err("checking the schema"))?
            .into_row()
            .await
            .map_err(db_err("checking the schema"))?;
        Ok(row.is_some())
    }
}

/// Takes a connection out of the pool and closes it: the server rolls back whatever it had open.
fn detach(connection: Connection) {
    let _ = Object::take(connection);
}

/// Commits (or rolls back) `client`'s transaction, or closes the connection so the server rolls
/// it back.
async fn finish(mut client: Connection, commit: bool, operation: &str) -> Result<()> {
    let result = if commit {
        client.commit_transaction().await
    } else {
        client.rollback_transaction().await
    };
    result.map_err(|e| {
        let _ = Object::take(client);
        NimbusError::database(NAME, operation.to_string(), e)
    })
}

#[async_trait]
impl Backend for SqlServerBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn create_schema(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.shared;
        let mut client = TxGuard::new(s.connection("creating the schema").await?, detach);
        let result = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err("creating the schema"))?;
            client
                .execute(SCHEMA_LOCK, &[])
                .await
                .map_err(db_err("taking the schema lock"))?;
            let shared = &s.catalog.shared;
            let schema = s.schema_params();
            for (what, ddl) in [
                ("creating the schema", shared.create_schema.as_deref()),
                (
                    "creating NimbusSubscriptions",
                    Some(&shared.create_subscriptions),
                ),
                (
                    "creating NimbusDeadLetters",
                    Some(&shared.create_dead_letters),
                ),
                if s.catalog.shared_table() {
                    ("creating NimbusMessages", Some(&shared.messages.create))
                } else {
                    ("creating NimbusDelayedMessages", Some(&shared.create_delayed))
                },
            ] {
                if let Some(ddl) = ddl {
                    client
                        .execute(ddl, &[&schema])
                        .await
                        .map_err(|e| s.ddl_error(format!("{what} {schema:?}"), e))?;
                }
            }
            if !s.has_last_seen_at(&mut client).await? {
                tracing::warn!(schema = %s.catalog.schema, "upgrading NimbusSubscriptions: adding LastSeenAt");
                client
                    .execute(shared.upgrade_last_seen_at.as_str(), &[&schema])
                    .await
                    .map_err(|e| s.ddl_error("adding LastSeenAt to NimbusSubscriptions".into(), e))?;
            }
            let mut entries = Vec::new();
            for queue in queues {
                let entry = s.catalog.queue(queue);
                if !s.catalog.shared_table() {
                    s.create_queue_in_tx(&mut client, &entry, queue).await?;
                }
                entries.push(entry);
            }
            Ok::<_, NimbusError>(entries)
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let entries = result?;
        finish(client.into_inner(), true, "committing the schema").await?;
        entries.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn verify_schema(&self, queues: &[QueueName]) -> Result<()> {
        let s = &self.shared;
        let mut client = s.connection("checking the schema").await?;
        let shared = &s.catalog.shared;
        for (table, statement) in [
            ("NimbusSubscriptions", &shared.create_subscriptions),
            ("NimbusDeadLetters", &shared.create_dead_letters),
            if s.catalog.shared_table() {
                ("NimbusMessages", &shared.messages.create)
            } else {
                ("NimbusDelayedMessages", &shared.create_delayed)
            },
        ] {
            if !s.table_exists(&mut client, table).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: format!(
                        "table {table} in schema {:?} of {}",
                        s.schema_params(),
                        s.target
                    ),
                    statement: statement.clone(),
                });
            }
            if table == "NimbusSubscriptions" && !s.has_last_seen_at(&mut client).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: "column LastSeenAt of NimbusSubscriptions (added for heartbeats)"
                        .into(),
                    statement: shared.upgrade_last_seen_at.clone(),
                });
            }
        }
        for queue in queues {
            let entry = s.catalog.queue(queue);
            if !s.catalog.shared_table() && !s.table_exists(&mut client, queue.as_str()).await? {
                return Err(NimbusError::MissingSchema {
                    backend: NAME,
                    object: format!(
                        "queue table {:?} in schema {:?} of {}",
                        queue.as_str(),
                        s.schema_params(),
                        s.target
                    ),
                    statement: entry.statements.create_queue.clone(),
                });
            }
            entry.mark_exists();
        }
        Ok(())
    }

    async fn missing_indexes(&self, queue: &QueueName) -> Result<Vec<IndexStatement>> {
        let s = &self.shared;
        let mut client = s.connection("checking indexes").await?;
        let (table, expected) = if s.catalog.shared_table() {
            (
                "NimbusMessages",
                vec![s.catalog.shared.messages.index.clone()],
            )
        } else {
            (
                queue.as_str(),
                s.catalog.queue(queue).statements.indexes.clone(),
            )
        };
        let rows = client
            .query(
                s.catalog.shared.list_indexes.as_str(),
                &[&s.schema_params(), &table],
            )
            .await
            .map_err(db_err("listing indexes"))?
            .into_first_result()
            .await
            .map_err(db_err("listing indexes"))?;
        let present: Vec<String> = rows
            .iter()
            .filter_map(|r| r.try_get::<&str, _>(0).ok().flatten().map(str::to_string))
            .collect();
        Ok(expected
            .into_iter()
            .filter(|i| !present.contains(&i.name))
            .collect())
    }

    async fn peek(&self, queue: &QueueName) -> Result<i64> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let mut client = s.connection("peeking").await?;
        let operation = format!("peeking at queue {queue:?}");
        let destination = queue.as_str();
        let stream = if s.catalog.shared_table() {
            client
                .query(s.catalog.shared.messages.peek.as_str(), &[&destination])
                .await
        } else {
            client.query(entry.statements.peek.as_str(), &[]).await
        };
        let row = stream
            .map_err(db_err(operation.clone()))?
            .into_row()
            .await
            .map_err(db_err(operation.clone()))?;
        Ok(row
            .and_then(|r| r.try_get::<i64, _>(0).ok().flatten())
            .unwrap_or(0))
    }

    async fn receive(
        &self,
        queue: &QueueName,
    ) -> Result<Option<(ReceivedMessage, Box<dyn ReceiveTransaction>)>> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let mut client = TxGuard::new(s.connection("receiving").await?, detach);
        let operation = format!("receiving from queue {queue:?}");
        let shared_table = s.catalog.shared_table();
        let received = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err(operation.clone()))?;
            let destination = queue.as_str();
            let stream = if shared_table {
                client
                    .query(s.catalog.shared.messages.receive.as_str(), &[&destination])
                    .await
            } else {
                client.query(entry.statements.receive.as_str(), &[]).await
            };
            let row = stream
                .map_err(db_err(operation.clone()))?
                .into_row()
                .await
                .map_err(db_err(operation.clone()))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let read = db_err(format!("reading a message from queue {queue:?}"));
            let message = (|| {
                Ok::<_, tiberius::error::Error>(
                    ReceivedMessage {
                        row_id: row
                            .try_get::<Uuid, _>(0)?
                            .map(|id| id.to_string())
                            .unwrap_or_default(),
                        correlation_id: row.try_get::<&str, _>(1)?.map(str::to_string),
                        reply_to_address: row.try_get::<&str, _>(2)?.map(str::to_string),
                        headers_json: row
                            .try_get::<&str, _>(3)?
                            .map(str::to_string)
                            .unwrap_or_default(),
                        body: row
                            .try_get::<&[u8], _>(4)?
                            .map(<[u8]>::to_vec)
                            .unwrap_or_default(),
                        expired: row.try_get::<bool, _>(5)?.unwrap_or(false),
                        expires: row.try_get::<chrono::NaiveDateTime, _>(6)?,
                    }
                    .unwrap_envelope(shared_table),
                )
            })()
            .map_err(read)?;
            Ok(Some(message))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        match received? {
            None => {
                finish(client.into_inner(), true, &operation).await?;
                Ok(None)
            }
            Some(message) => Ok(Some((
                message,
                Box::new(SqlServerTransaction {
                    client,
                    shared: s.clone(),
                }),
            ))),
        }
    }

    async fn send(&self, messages: Vec<OutgoingMessage>) -> Result<()> {
        let s = &self.shared;
        let mut client = TxGuard::new(s.connection("sending").await?, detach);
        if let ([message], true) = (messages.as_slice(), s.catalog.shared_table()) {
            if let Destination::Queue(queue) = &message.destination {
                // One row of NimbusMessages: one autocommitted INSERT, no transaction needed.
                s.insert_shared(&mut client, queue, message, message.id)
                    .await?;
                drop(client.into_inner());
                return Ok(());
            }
        }
        if let Some((queue, entry)) =
            single_plain_insert(&s.catalog, &messages).filter(|_| !s.catalog.shared_table())
        {
            // One row into a queue known to exist: one autocommitted statement is as atomic as
            // a transaction around it, at a third of the round trips.
            let m = &messages[0];
            client
                .execute(
                    entry.statements.insert.as_str(),
                    &[
                        &m.id,
                        &m.correlation_id,
                        &m.reply_to_address,
                        &m.time_to_be_received_ms,
                        &m.headers_json,
                        &m.body,
                        &m.expires_at,
                    ],
                )
                .await
                .map_err(|e| {
                    entry.forget_exists();
                    NimbusError::database(NAME, format!("sending to queue {queue:?}"), e)
                })?;
            // No transaction was opened: the connection goes back to the pool.
            drop(client.into_inner());
            return Ok(());
        }
        let written = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err("sending"))?;
            s.write(&mut client, messages).await
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let created = written?;
        finish(client.into_inner(), true, "committing a send").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn subscribe(&self, topic: &str, queue: &QueueName) -> Result<()> {
        let s = &self.shared;
        let mut client = s.connection("subscribing").await?;
        client
            .execute(
                s.catalog.shared.subscribe.as_str(),
                &[&topic, &queue.as_str()],
            )
            .await
            .map_err(db_err(format!("subscribing queue {queue:?} to {topic}")))?;
        Ok(())
    }

    async fn heartbeat(&self, subscriptions: &[(String, QueueName)]) -> Result<Vec<usize>> {
        let s = &self.shared;
        let mut client = s.connection("heartbeating").await?;
        let mut missing = Vec::new();
        for (i, (topic, queue)) in subscriptions.iter().enumerate() {
            let result = client
                .execute(
                    s.catalog.shared.refresh_subscription.as_str(),
                    &[topic, &queue.as_str()],
                )
                .await
                .map_err(db_err("heartbeating subscriptions"))?;
            if result.total() == 0 {
                missing.push(i);
            }
        }
        Ok(missing)
    }

    async fn sweep_idle(&self, idle_seconds: i64) -> Result<SweepReport> {
        let s = &self.shared;
        let mut client = TxGuard::new(s.connection("sweeping idle subscriptions").await?, detach);
        let swept = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err("sweeping idle subscriptions"))?;
            let rows = client
                .query(
                    s.catalog.shared.sweep_subscriptions.as_str(),
                    &[&idle_seconds],
                )
                .await
                .map_err(db_err("sweeping idle subscriptions"))?
                .into_first_result()
                .await
                .map_err(db_err("sweeping idle subscriptions"))?;
            let mut report = SweepReport::default();
            for row in &rows {
                let topic = row
                    .try_get::<&str, _>(0)
                    .map_err(db_err("reading a swept row"))?;
                let queue = row
                    .try_get::<&str, _>(1)
                    .map_err(db_err("reading a swept row"))?;
                if let (Some(topic), Some(queue)) = (topic, queue) {
                    report
                        .subscriptions
                        .push((topic.to_string(), queue.to_string()));
                }
            }
            for queue in instance_queues(&report) {
                let left = client
                    .query(
                        s.catalog.shared.queue_subscriptions.as_str(),
                        &[&queue.as_str()],
                    )
                    .await
                    .map_err(db_err("counting subscriptions"))?
                    .into_row()
                    .await
                    .map_err(db_err("counting subscriptions"))?
                    .and_then(|r| r.try_get::<i64, _>(0).ok().flatten())
                    .unwrap_or(0);
                if left == 0 {
                    s.drop_queue_in(&mut client, &queue).await?;
                    report.queues_dropped.push(queue.as_str().to_string());
                }
            }
            Ok::<_, NimbusError>(report)
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let report = swept?;
        finish(client.into_inner(), true, "committing a sweep").await?;
        Ok(report)
    }

    async fn drop_queue(&self, queue: &QueueName) -> Result<()> {
        let s = &self.shared;
        let mut client = s.connection("dropping a queue").await?;
        s.drop_queue_in(&mut client, queue).await
    }

    async fn purge_expired(&self, queue: &QueueName, batch: i64) -> Result<u64> {
        let s = &self.shared;
        let entry = s.catalog.queue(queue);
        let mut client = s.connection("purging expired messages").await?;
        let destination = queue.as_str();
        let result = if s.catalog.shared_table() {
            client
                .execute(
                    s.catalog.shared.messages.purge_expired.as_str(),
                    &[&destination, &batch],
                )
                .await
        } else {
            client
                .execute(entry.statements.purge_expired.as_str(), &[&batch])
                .await
        };
        let result = result.map_err(db_err(format!("purging expired messages of {queue:?}")))?;
        Ok(result.total())
    }

    async fn deliver_due(&self, batch: i64) -> Result<u64> {
        let s = &self.shared;
        if s.catalog.shared_table() {
            // Delayed messages wait in NimbusMessages until their VisibleAfter: nothing to move.
            return Ok(0);
        }
        let mut client = TxGuard::new(s.connection("delivering delayed messages").await?, detach);
        let moved = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err("delivering delayed messages"))?;
            let rows = client
                .query(s.catalog.shared.take_due_delayed.as_str(), &[&batch])
                .await
                .map_err(db_err("taking due delayed messages"))?
                .into_first_result()
                .await
                .map_err(db_err("taking due delayed messages"))?;
            let mut messages = Vec::with_capacity(rows.len());
            for row in &rows {
                let read = || {
                    Ok::<_, tiberius::error::Error>((
                        row.try_get::<Uuid, _>(0)?.unwrap_or_else(Uuid::new_v4),
                        row.try_get::<&str, _>(1)?.unwrap_or_default().to_string(),
                        row.try_get::<&str, _>(2)?.map(str::to_string),
                        row.try_get::<&str, _>(3)?.map(str::to_string),
                        row.try_get::<chrono::NaiveDateTime, _>(4)?,
                        row.try_get::<&str, _>(5)?.unwrap_or_default().to_string(),
                        row.try_get::<&[u8], _>(6)?
                            .map(<[u8]>::to_vec)
                            .unwrap_or_default(),
                    ))
                };
                let (id, destination, correlation_id, reply_to_address, expires_at, headers, body) =
                    read().map_err(db_err("reading a due delayed message"))?;
                messages.push(OutgoingMessage {
                    destination: Destination::Queue(QueueName::new(destination)?),
                    id,
                    correlation_id,
                    reply_to_address,
                    expires_at,
                    headers_json: headers,
                    body,
                    time_to_be_received_ms: None,
                    delivery: Delivery::Immediate,
                });
            }
            let count = messages.len() as u64;
            let created = s.write(&mut client, messages).await?;
            Ok::<_, NimbusError>((count, created))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let (count, created) = moved?;
        finish(client.into_inner(), true, "committing delayed deliveries").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(count)
    }

    async fn replay_dead_letter(&self, id: Uuid, rebuild: RebuildDeadLetter) -> Result<bool> {
        let s = &self.shared;
        let mut client = TxGuard::new(s.connection("replaying a dead letter").await?, detach);
        let replayed = async {
            client
                .begin_transaction()
                .await
                .map_err(db_err("replaying a dead letter"))?;
            let row = client
                .query(s.catalog.shared.take_dead_letter.as_str(), &[&id])
                .await
                .map_err(db_err(format!("taking dead letter {id}")))?
                .into_row()
                .await
                .map_err(db_err(format!("taking dead letter {id}")))?;
            let Some(row) = row else {
                return Ok((false, Vec::new()));
            };
            let destination = row
                .try_get::<&str, _>(0)
                .map_err(db_err("reading a dead letter"))?
                .unwrap_or_default()
                .to_string();
            let body = row
                .try_get::<&[u8], _>(1)
                .map_err(db_err("reading a dead letter"))?
                .unwrap_or_default()
                .to_vec();
            let message = rebuild(&destination, &body)?;
            let created = s.write(&mut client, vec![message]).await?;
            Ok::<_, NimbusError>((true, created))
        }
        .await;
        // On an error the guard closes the connection: the server rolls back.
        let (found, created) = replayed?;
        finish(client.into_inner(), true, "committing a replay").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(found)
    }
}

/// The open transaction of a message received from SQL Server. Dropped unfinished (a cancelled
/// future), its guard closes the connection so the server rolls back.
struct SqlServerTransaction {
    client: TxGuard<Connection>,
    shared: Arc<Shared>,
}

#[async_trait]
impl ReceiveTransaction for SqlServerTransaction {
    async fn commit(self: Box<Self>, outgoing: Vec<OutgoingMessage>) -> Result<()> {
        let SqlServerTransaction { mut client, shared } = *self;
        // On an error the guard closes the connection: the server rolls back.
        let created = shared.write(&mut client, outgoing).await?;
        finish(client.into_inner(), true, "committing a handled message").await?;
        created.iter().for_each(|e| e.mark_exists());
        Ok(())
    }

    async fn dead_letter(self: Box<Self>, letter: DeadLetter) -> Result<()> {
        let SqlServerTransaction { mut client, shared } = *self;
        shared.insert_dead_letter(&mut client, &letter).await?;
        finish(client.into_inner(), true, "committing a dead letter").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_ado_net_connection_string() {
        let s = parse_connection_string(
            "Server=tcp:db.example.com,1533;Database=Orders;User Id=app;Password=s3cret;\
             TrustServerCertificate=true;Connect Timeout=7",
        )
        .unwrap();
        assert_eq!(s.target, "tcp:db.example.com,1533/Orders");
        assert_eq!(s.connect_timeout, Duration::from_secs(7));
        assert_eq!(s.config.get_addr(), "db.example.com:1533");
        assert!(!s.target.contains("s3cret"));
    }

    #[test]
    fn defaults_and_refusals() {
        let s = parse_connection_string("Server=localhost;User Id=sa;Password=x").unwrap();
        assert_eq!(s.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(s.target, "localhost/master");
        for bad in [
            "Server=localhost;Integrated Security=true",
            "Server=localhost;Trusted_Connection=yes",
            "Server=localhost;Authentication=ActiveDirectoryDefault",
            "Server=localhost;Connect Timeout=soon",
        ] {
            let err = parse_connection_string(bad).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{bad}: {err}");
        }
    }
}
