//! A handler's own SQL in the receive's transaction (`ctx.postgres()`, `ctx.sqlite(..)`,
//! `ctx.sql_server()`): what it writes commits with the message's removal, and goes away with a
//! failed attempt (error, panic, timeout), so a business table keyed by message id ends with
//! exactly one row per message. Business tables have no unique key: a duplicate would show.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

/// What the first attempt at each message does after writing its row.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FirstAttempt {
    Succeeds,
    Fails,
    Panics,
    TimesOut,
}

/// Writes a row keyed by the message id into the business table, in the receive's transaction.
#[derive(Clone)]
struct SaveOrder {
    kind: Kind,
    table: String,
    first: FirstAttempt,
    attempts: Arc<AtomicUsize>,
}

async fn insert_row(ctx: &mut HandlerContext, kind: Kind, table: &str) -> Result<(), HandlerError> {
    let id = ctx.message_id().to_string();
    // The handler can tell which accessor its endpoint's database takes.
    let expected = match kind {
        Kind::Postgres => nimbus::DatabaseKind::Postgres,
        Kind::Sqlite => nimbus::DatabaseKind::Sqlite,
        Kind::SqlServer => nimbus::DatabaseKind::SqlServer,
    };
    if ctx.database() != Some(expected) {
        return Err(format!("ctx.database() says {:?}, not {expected:?}", ctx.database()).into());
    }
    match kind {
        Kind::Postgres => {
            let client = ctx.postgres().await?;
            let sql = format!("INSERT INTO {table} (message_id) VALUES ($1)");
            client.execute(&sql, &[&id]).await?;
        }
        Kind::Sqlite => {
            let sql = format!("INSERT INTO {table} (message_id) VALUES (?1)");
            ctx.sqlite(move |db| db.execute(&sql, [id])).await?;
        }
        Kind::SqlServer => {
            let mut client = ctx.sql_server().await?;
            let sql = format!("INSERT INTO {table} (message_id) VALUES (@P1)");
            client.execute(sql, &[&id]).await?;
        }
    }
    Ok(())
}

impl Handler<Numbered> for SaveOrder {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst);
        insert_row(ctx, self.kind, &self.table).await?;
        if attempt == 0 {
            match self.first {
                FirstAttempt::Succeeds => {}
                FirstAttempt::Fails => return Err("the first attempt fails after writing".into()),
                FirstAttempt::Panics => panic!("the first attempt panics after writing"),
                FirstAttempt::TimesOut => tokio::time::sleep(Duration::from_secs(30)).await,
            }
        }
        Ok(())
    }
}

async fn business_table(db: &TestDatabase) -> String {
    let table = db.table(&format!(
        "Orders{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    db.execute(&format!(
        "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
    ))
    .await;
    table
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done().await {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn one_row_per_message(kind: Kind, first: FirstAttempt) {
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let table = business_table(&db).await;
    let queue = format!("Orders{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handler = SaveOrder {
        kind,
        table: table.clone(),
        first,
        attempts: Arc::default(),
    };
    let bus = db
        .builder(&queue, "orders-1")
        .handler_timeout(Duration::from_millis(500))
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let messages = 5;
    for n in 0..messages {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    wait_for("every message is handled", async || {
        bus.metrics().handled == u64::from(messages)
    })
    .await;
    let metrics = bus.metrics();
    bus.stop().await.unwrap();

    let rows = db
        .scalar(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .await;
    let distinct = db
        .scalar(
            &format!("SELECT COUNT(DISTINCT message_id) FROM {table}"),
            &[],
        )
        .await;
    assert_eq!(
        (rows, distinct),
        (i64::from(messages), i64::from(messages)),
        "one row per message ({first:?} first attempt)"
    );
    assert_eq!(db.count(&queue).await, 0);
    if first != FirstAttempt::Succeeds {
        assert_eq!(
            metrics.failed, 1,
            "the first attempt failed and was counted"
        );
        assert_eq!(
            handler.attempts.load(Ordering::SeqCst),
            usize::from(u8::try_from(messages).unwrap()) + 1
        );
    }
}

/// A handler that swallows its own failed statement cannot commit a half-done transaction:
/// PostgreSQL aborted it, so the attempt fails (and is counted) instead of committing nothing.
#[derive(Clone)]
struct SwallowsItsError {
    attempts: Arc<AtomicUsize>,
}

impl Handler<Numbered> for SwallowsItsError {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let client = ctx.postgres().await?;
        let refused = client
            .execute("INSERT INTO no_such_table_anywhere (x) VALUES (1)", &[])
            .await;
        assert!(refused.is_err());
        Ok(())
    }
}

#[actix_rt::test]
async fn an_aborted_postgres_transaction_fails_the_attempt_instead_of_looping() {
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Aborted{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handler = SwallowsItsError {
        attempts: Arc::default(),
    };
    let bus = db
        .builder(&queue, "aborted-1")
        .immediate_retries(1)
        .delayed_retries(0, Duration::from_secs(1))
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    wait_for("the message ends in the dead letters", async || {
        bus.metrics().dead_lettered == 1
    })
    .await;
    bus.stop().await.unwrap();
    assert_eq!(
        handler.attempts.load(Ordering::SeqCst),
        2,
        "two attempts, no loop"
    );
    let letters = db.dead_letters().await;
    assert_eq!(letters.len(), 1);
    let envelope = String::from_utf8_lossy(&letters[0].body);
    assert!(
        envelope.contains("handler's own statements"),
        "the reason says what happened: {envelope}"
    );
}

/// A handler whose statement the database refuses, returning the error with `?`.
#[derive(Clone)]
struct RefusedStatement;

impl Handler<Numbered> for RefusedStatement {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let client = ctx.postgres().await?;
        client
            .execute("INSERT INTO no_such_table_anywhere (x) VALUES (1)", &[])
            .await?;
        Ok(())
    }
}

/// `tokio_postgres::Error` displays as "db error"; the dead letter's reason must say what the
/// server said, with its SQLSTATE.
#[actix_rt::test]
async fn a_handlers_database_error_is_reported_with_the_servers_text_and_sqlstate() {
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Refused{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bus = db
        .builder(&queue, "refused-1")
        .immediate_retries(0)
        .delayed_retries(0, Duration::from_secs(1))
        .handler(RefusedStatement)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    wait_for("the message ends in the dead letters", async || {
        bus.metrics().dead_lettered == 1
    })
    .await;
    bus.stop().await.unwrap();
    let letters = db.dead_letters().await;
    assert_eq!(letters.len(), 1);
    let envelope = String::from_utf8_lossy(&letters[0].body);
    for needle in ["no_such_table_anywhere", "does not exist", "SQLSTATE 42P01"] {
        assert!(
            envelope.contains(needle),
            "the reason says {needle:?}: {envelope}"
        );
    }
}

/// Records what asking for another database's connection says.
#[derive(Clone, Default)]
struct AsksForPostgres(Arc<std::sync::Mutex<Option<String>>>);

impl Handler<Numbered> for AsksForPostgres {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let error = ctx.postgres().await.err().map(|e| e.to_string());
        *self.0.lock().unwrap() = error;
        Ok(())
    }
}

#[actix_rt::test]
async fn asking_for_another_databases_connection_is_a_clear_error() {
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Wrong{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handler = AsksForPostgres::default();
    let bus = db
        .builder(&queue, "wrong-1")
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    wait_for("handled", async || bus.metrics().handled == 1).await;
    bus.stop().await.unwrap();
    let error = handler.0.lock().unwrap().clone().expect("an error");
    assert!(
        error.contains("not PostgreSQL") && error.contains("ctx.sqlite"),
        "{error}"
    );
}

macro_rules! per_database {
    ($($name:ident: $kind:expr, $first:expr;)*) => {$(
        #[actix_rt::test]
        async fn $name() {
            one_row_per_message($kind, $first).await;
        }
    )*};
}

per_database! {
    handler_sql_commits_with_the_message_on_sqlite: Kind::Sqlite, FirstAttempt::Succeeds;
    handler_sql_commits_with_the_message_on_postgres: Kind::Postgres, FirstAttempt::Succeeds;
    handler_sql_is_undone_when_the_handler_fails_on_sqlite: Kind::Sqlite, FirstAttempt::Fails;
    handler_sql_is_undone_when_the_handler_fails_on_postgres: Kind::Postgres, FirstAttempt::Fails;
    handler_sql_is_undone_when_the_handler_panics_on_sqlite: Kind::Sqlite, FirstAttempt::Panics;
    handler_sql_is_undone_when_the_handler_panics_on_postgres: Kind::Postgres, FirstAttempt::Panics;
    handler_sql_is_undone_when_the_handler_times_out_on_sqlite: Kind::Sqlite, FirstAttempt::TimesOut;
    handler_sql_is_undone_when_the_handler_times_out_on_postgres: Kind::Postgres, FirstAttempt::TimesOut;
}

/// Runs a statement that takes far longer than the endpoint's `database_timeout` on its first
/// attempt (and records the error it got), then succeeds.
#[derive(Clone)]
struct SlowFirstStatement {
    kind: Kind,
    /// SQL Server: a table whose one row the test holds locked.
    blocker: Option<String>,
    attempts: Arc<AtomicUsize>,
    first_error: Arc<std::sync::Mutex<Option<String>>>,
}

impl Handler<Numbered> for SlowFirstStatement {
    async fn handle(&self, _m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) > 0 {
            return Ok(());
        }
        let slow: Result<(), HandlerError> = match self.kind {
            Kind::Postgres => ctx
                .postgres()
                .await?
                .batch_execute("SELECT pg_sleep(30)")
                .await
                .map_err(Into::into),
            Kind::Sqlite => ctx
                .sqlite(|db| {
                    db.query_row(
                        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c \
                         WHERE x < 10000000000) SELECT count(*) FROM c",
                        [],
                        |row| row.get::<_, i64>(0),
                    )
                })
                .await
                .map(|_| ())
                .map_err(Into::into),
            // Babelfish has no WAITFOR DELAY: wait for a row lock the test holds instead.
            Kind::SqlServer => {
                let blocker = self.blocker.clone().unwrap_or_default();
                ctx.sql_server()
                    .await?
                    .execute(format!("UPDATE {blocker} SET id = 3"), &[])
                    .await
                    .map(|_| ())
                    .map_err(Into::into)
            }
        };
        if let Err(e) = &slow {
            *self.first_error.lock().unwrap() = Some(e.to_string());
        }
        slow
    }
}

/// A handler's own statement is bounded by `database_timeout`, not by the (much longer)
/// handler timeout, and its timeout is a transient database failure: the message goes back to
/// its queue without a failed attempt counted, and is handled by the next attempt.
async fn a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted(kind: Kind) {
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Slow{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    // SQL Server: a row the test's own connection holds in an open transaction until the
    // handler's statement on it has given up.
    let (blocker, mut holder) = if kind == Kind::SqlServer {
        let table = db.table("Blocker");
        db.execute(&format!("CREATE TABLE {table} (id int NOT NULL)"))
            .await;
        db.execute(&format!("INSERT INTO {table} (id) VALUES (1)"))
            .await;
        let mut client = nimbus::connect_sql_server(&db.url()).await.unwrap();
        client
            .simple_query(format!("BEGIN TRANSACTION; UPDATE {table} SET id = 2"))
            .await
            .unwrap()
            .into_results()
            .await
            .unwrap();
        (Some(table), Some(client))
    } else {
        (None, None)
    };
    let handler = SlowFirstStatement {
        kind,
        blocker,
        attempts: Arc::default(),
        first_error: Arc::default(),
    };
    let bus = db
        .builder(&queue, "slow-1")
        .database_timeout(Duration::from_secs(2))
        .handler_timeout(Duration::from_secs(300))
        .immediate_retries(0)
        .delayed_retries(0, Duration::from_secs(1))
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send_to(&queue, Numbered { n: 1 }).await.unwrap();
    if let Some(client) = holder.as_mut() {
        wait_for("the first attempt gives up", async || {
            handler.first_error.lock().unwrap().is_some()
        })
        .await;
        // The abandoned statement gets the row, then finds its connection gone and rolls back.
        client
            .simple_query("COMMIT")
            .await
            .unwrap()
            .into_results()
            .await
            .unwrap();
    }
    wait_for("the message is handled", async || {
        bus.metrics().handled == 1
    })
    .await;
    let metrics = bus.metrics();
    bus.stop().await.unwrap();
    let error = handler.first_error.lock().unwrap().clone();
    assert!(
        error
            .as_deref()
            // The client's deadline, or the server's own (PostgreSQL), whichever fires first.
            .is_some_and(
                |e| e.contains("did not finish within 2s") || e.contains("statement timeout")
            ),
        "the first attempt's statement was cut at the deadline: {error:?}"
    );
    assert_eq!(handler.attempts.load(Ordering::SeqCst), 2);
    assert_eq!(
        metrics.failed, 0,
        "a transient failure is not a failed attempt"
    );
    assert_eq!(metrics.dead_lettered, 0);
    assert_eq!(db.dead_letters().await.len(), 0);
}

#[actix_rt::test]
async fn a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted_on_postgres() {
    a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted(Kind::Postgres).await;
}

#[actix_rt::test]
async fn a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted_on_sqlite() {
    a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted(Kind::Sqlite).await;
}

mod sql_server {
    use super::*;

    #[actix_rt::test]
    #[ignore = "needs a SQL Server: set NIMBUS_SQLSERVER and run with --include-ignored"]
    async fn a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted_on_sql_server() {
        if !skip() {
            a_slow_handler_statement_is_cut_at_the_deadline_and_not_counted(Kind::SqlServer).await;
        }
    }

    fn skip() -> bool {
        if nimbus_conformance::db::sqlserver_connection_string().is_none() {
            eprintln!("notice: NIMBUS_SQLSERVER is not set: SQL Server business-data test skipped");
            return true;
        }
        false
    }

    #[actix_rt::test]
    #[ignore = "needs a SQL Server: set NIMBUS_SQLSERVER and run with --include-ignored"]
    async fn handler_sql_commits_with_the_message_on_sql_server() {
        if !skip() {
            one_row_per_message(Kind::SqlServer, FirstAttempt::Succeeds).await;
        }
    }

    #[actix_rt::test]
    #[ignore = "needs a SQL Server: set NIMBUS_SQLSERVER and run with --include-ignored"]
    async fn handler_sql_is_undone_when_the_handler_fails_on_sql_server() {
        if !skip() {
            one_row_per_message(Kind::SqlServer, FirstAttempt::Fails).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sends in the application's own transaction (`bus.in_transaction()`).

/// Counts what it handles.
#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>);

impl Handler<Numbered> for Count {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The application saves an order and sends a message in one transaction of its own; commits
/// the first, rolls back the second: the committed message is handled, the rolled-back one
/// never exists, and neither does its order.
async fn own_transaction(kind: Kind) {
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let table = business_table(&db).await;
    let queue = format!("Billing{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handled = Count::default();
    let receiver = db
        .builder(&queue, "billing-1")
        .handler(handled.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let web = db
        .builder(&format!("{queue}Web"), "web-1")
        .route::<Numbered>(&queue)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();

    for (n, commit) in [(1, true), (2, false)] {
        match kind {
            Kind::Postgres => {
                let mut client = nimbus_conformance::db::pg_client().await;
                let tx = client.transaction().await.unwrap();
                tx.execute(
                    &format!("INSERT INTO {table} (message_id) VALUES ($1)"),
                    &[&format!("order-{n}")],
                )
                .await
                .unwrap();
                let mut sends = web.in_transaction();
                sends.send(Numbered { n }).unwrap();
                sends.write_postgres(&tx).await.unwrap();
                if commit {
                    tx.commit().await.unwrap();
                } else {
                    tx.rollback().await.unwrap();
                }
            }
            Kind::Sqlite => {
                let mut sends = web.in_transaction();
                sends.send(Numbered { n }).unwrap();
                let prepared = sends.prepare().await.unwrap();
                let mut conn = rusqlite::Connection::open(db.sqlite_path().unwrap()).unwrap();
                conn.busy_timeout(Duration::from_secs(30)).unwrap();
                let tx = conn.transaction().unwrap();
                tx.execute(
                    &format!("INSERT INTO {table} (message_id) VALUES (?1)"),
                    [format!("order-{n}")],
                )
                .unwrap();
                prepared.write_sqlite(&tx).unwrap();
                if commit {
                    tx.commit().unwrap();
                } else {
                    tx.rollback().unwrap();
                }
            }
            Kind::SqlServer => unreachable!("covered by the SQL Server suite"),
        }
    }
    wait_for("the committed message is handled", async || {
        handled.0.load(Ordering::SeqCst) >= 1
    })
    .await;
    // Give a rolled-back message, had it existed, time to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    web.stop().await.unwrap();
    receiver.stop().await.unwrap();
    assert_eq!(
        handled.0.load(Ordering::SeqCst),
        1,
        "only the committed one"
    );
    assert_eq!(db.count(&queue).await, 0);
    let orders = db
        .scalar(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .await;
    assert_eq!(orders, 1, "only the committed order");
}

#[actix_rt::test]
async fn sends_commit_and_roll_back_with_the_applications_transaction_on_postgres() {
    own_transaction(Kind::Postgres).await;
}

#[actix_rt::test]
async fn sends_commit_and_roll_back_with_the_applications_transaction_on_sqlite() {
    own_transaction(Kind::Sqlite).await;
}

/// A publish in the application's transaction reaches every live subscriber once it commits.
#[actix_rt::test]
async fn a_publish_in_the_applications_transaction_fans_out_on_postgres() {
    use nimbus_conformance::suite::SomethingHappened;
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let handled = Arc::new(AtomicUsize::new(0));
    let mut subscribers = Vec::new();
    for name in ["Audit", "Mail"] {
        subscribers.push(
            db.builder(&format!("{name}{suffix}"), "s-1")
                .handler(CountAnnounced(handled.clone()))
                .build()
                .unwrap()
                .start()
                .await
                .unwrap(),
        );
    }
    let publisher = db
        .builder(&format!("Shop{suffix}"), "shop-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut client = nimbus_conformance::db::pg_client().await;
    let tx = client.transaction().await.unwrap();
    let mut sends = publisher.in_transaction();
    sends.publish(SomethingHappened { n: 1 }).unwrap();
    let prepared = sends.prepare().await.unwrap();
    assert_eq!(prepared.rows(), 2, "one row per subscriber");
    prepared.write_postgres(&tx).await.unwrap();
    tx.commit().await.unwrap();
    wait_for("both subscribers handle the event", async || {
        handled.load(Ordering::SeqCst) == 2
    })
    .await;
    publisher.stop().await.unwrap();
    for s in subscribers {
        s.stop().await.unwrap();
    }
}

#[derive(Clone)]
struct CountAnnounced(Arc<AtomicUsize>);

impl Handler<nimbus_conformance::suite::SomethingHappened> for CountAnnounced {
    async fn handle(
        &self,
        _m: nimbus_conformance::suite::SomethingHappened,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Writing with another database's method is refused, and nothing is written.
#[actix_rt::test]
async fn writing_with_another_databases_method_is_a_clear_error() {
    let db = TestDatabase::new(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Wrong{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bus = db
        .builder(&queue, "wrong-1")
        .handler(Count::default())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut client = nimbus_conformance::db::pg_client().await;
    let tx = client.transaction().await.unwrap();
    let mut sends = bus.in_transaction();
    sends.send_to(&queue, Numbered { n: 1 }).unwrap();
    let error = sends.write_postgres(&tx).await.unwrap_err().to_string();
    assert!(
        error.contains("write_postgres") && error.contains("SQLite"),
        "{error}"
    );
    bus.stop().await.unwrap();
    assert_eq!(db.count(&queue).await, 0);
}

/// On PostgreSQL the announcement rides in the application's transaction: an endpoint whose peek
/// delay is 10 s handles the message as soon as that transaction commits.
#[actix_rt::test]
async fn a_commit_of_the_applications_transaction_wakes_receivers_on_postgres() {
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Woken{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handled = Count::default();
    let receiver = db
        .builder(&queue, "woken-1")
        .peek_delay(Duration::from_secs(10))
        .handler(handled.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let web = db
        .builder(&format!("{queue}Web"), "web-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Let the receiver's first peek find nothing and its 10 s wait begin.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client = nimbus_conformance::db::pg_client().await;
    let tx = client.transaction().await.unwrap();
    let mut sends = web.in_transaction();
    sends.send_to(&queue, Numbered { n: 1 }).unwrap();
    sends.write_postgres(&tx).await.unwrap();
    tx.commit().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while handled.0.load(Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the commit wakes the receiver before its 10 s peek delay"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    web.stop().await.unwrap();
    receiver.stop().await.unwrap();
}
