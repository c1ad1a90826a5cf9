//! Batched receives (`receive_batch(n)`), as every database must keep them: each message of a
//! batch keeps its own handler SQL, sends, retry or dead letter; the batch commits once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError};

use crate::suite::Numbered;
use crate::{Kind, Setup, TestDatabase};

/// Writes a row keyed by message id, then: n % 7 == 3 fails its first attempt, n == 13 always
/// fails, n == 21 panics on its first attempt; everything else succeeds.
#[derive(Clone)]
struct Mixed {
    kind: Kind,
    table: String,
    attempts: Arc<Mutex<HashMap<u32, usize>>>,
    handled: Arc<AtomicUsize>,
}

impl Handler<Numbered> for Mixed {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap();
            let count = attempts.entry(m.n).or_default();
            *count += 1;
            *count
        };
        let id = ctx.message_id().to_string();
        match self.kind {
            Kind::Postgres => {
                let sql = format!("INSERT INTO {} (message_id) VALUES ($1)", self.table);
                ctx.postgres().await?.execute(&sql, &[&id]).await?;
            }
            Kind::SqlServer => {
                let sql = format!("INSERT INTO {} (message_id) VALUES (@P1)", self.table);
                ctx.sql_server().await?.execute(sql, &[&id]).await?;
            }
            Kind::Sqlite => {
                let sql = format!("INSERT INTO {} (message_id) VALUES (?1)", self.table);
                ctx.sqlite(move |db| db.execute(&sql, [id])).await?;
            }
        }
        ctx.send_to("BatchDone", Numbered { n: m.n })?;
        if m.n == 13 {
            return Err("message 13 always fails".into());
        }
        if attempt == 1 && m.n % 7 == 3 {
            return Err("fails its first attempt".into());
        }
        if attempt == 1 && m.n == 21 {
            panic!("panics on its first attempt");
        }
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// 57 messages through batches of 10 with handler SQL, sends, first-attempt failures, a panic
/// and one message that always fails: every handled message leaves exactly one row and one
/// forwarded copy, the failing one a dead letter and nothing else.
pub async fn each_message_of_a_batch_keeps_its_own_outcome(setup: Setup) {
    let kind = setup.kind;
    let db = TestDatabase::new(setup).await;
    let table = db.table(&format!(
        "Rows{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    db.execute(&format!(
        "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
    ))
    .await;
    let queue = format!("Batched{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handler = Mixed {
        kind,
        table: table.clone(),
        attempts: Arc::default(),
        handled: Arc::default(),
    };
    let total: u32 = 57;
    let bus = db
        .builder(&queue, "batched-1")
        .receive_batch(10)
        // Batches are handled on a handler thread, away from the bus's: whatever the machine's
        // CPUs, and on SQLite too (whose default is one thread).
        .handler_threads(2)
        .concurrency(2)
        .immediate_retries(2)
        .delayed_retries(0, Duration::from_secs(1))
        .create_queues_on_send(true)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..total {
        bus.send_to(&queue, Numbered { n }).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    while handler.handled.load(Ordering::SeqCst) < (total - 1) as usize
        || bus.metrics().dead_lettered < 1
    {
        assert!(
            Instant::now() < deadline,
            "all but message 13 are handled and 13 is dead-lettered (handled {}, dead {})",
            handler.handled.load(Ordering::SeqCst),
            bus.metrics().dead_lettered
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
        (i64::from(total - 1), i64::from(total - 1)),
        "one row per handled message; failed attempts and the dead letter left none"
    );
    assert_eq!(
        db.count("BatchDone").await,
        i64::from(total - 1),
        "one forwarded copy per handled message"
    );
    assert_eq!(db.count(&queue).await, 0);
    assert_eq!(db.dead_letters().await.len(), 1);
}

/// Counts what it handles, taking `pause` over each message; with `statements`, it also runs
/// a statement of its own on the receive's connection (of that database).
#[derive(Clone)]
struct Paced {
    handled: Arc<AtomicUsize>,
    pause: Duration,
    statements: Option<Kind>,
}

impl Handler<Numbered> for Paced {
    async fn handle(&self, _: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        tokio::time::sleep(self.pause).await;
        match self.statements {
            Some(Kind::Postgres) => {
                ctx.postgres().await?.execute("SELECT 1", &[]).await?;
            }
            Some(Kind::SqlServer) => {
                ctx.sql_server().await?.execute("SELECT 1", &[]).await?;
            }
            Some(Kind::Sqlite) => {
                ctx.sqlite(|db| db.execute_batch("SELECT 1")).await?;
            }
            None => {}
        }
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Sends `total` messages, then starts an endpoint (`fixed`: `receive_batch(n)`; `None`: the
/// default) whose handler takes `pause` each, and waits until it has handled them all; returns
/// how many receives took them (each one transaction).
async fn receives_for_backlog(
    setup: Setup,
    total: u32,
    pause: Duration,
    fixed: Option<usize>,
) -> u64 {
    receives_for_backlog_of(setup, total, pause, fixed, false).await
}

/// [`receives_for_backlog`], with a handler that runs a statement of its own when `statements`.
async fn receives_for_backlog_of(
    setup: Setup,
    total: u32,
    pause: Duration,
    fixed: Option<usize>,
    statements: bool,
) -> u64 {
    let db = TestDatabase::new(setup).await;
    let queue = format!("Backlog{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let sender = crate::suite::sender(&db, &queue).await;
    sender
        .send_batch((0..total).map(|n| Numbered { n }))
        .await
        .unwrap();
    sender.stop().await.unwrap();
    let handler = Paced {
        handled: Arc::default(),
        pause,
        statements: statements.then_some(setup.kind),
    };
    let builder = db.builder(&queue, "backlog-1").handler(handler.clone());
    let builder = match fixed {
        Some(messages) => builder.receive_batch(messages),
        None => builder,
    };
    let bus = builder.build().unwrap().start().await.unwrap();
    // Counted once committed: the handler's own count comes first.
    crate::suite::wait_while_progressing("the endpoint commits the whole backlog", || async {
        let committed = bus.metrics().handled;
        (committed as i64, committed >= u64::from(total))
    })
    .await;
    let metrics = bus.metrics();
    bus.stop().await.unwrap();
    assert_eq!(
        handler.handled.load(Ordering::SeqCst),
        total as usize,
        "each message handled once"
    );
    assert_eq!(db.count(&queue).await, 0);
    metrics.receives
}

/// With the default settings, a backlog of fast messages is taken several at a time: fewer
/// receives (transactions) than messages.
pub async fn a_backlog_of_fast_messages_is_received_several_at_a_time(setup: Setup) {
    let total = 300;
    let receives = receives_for_backlog(setup, total, Duration::ZERO, None).await;
    assert!(
        receives < u64::from(total),
        "{receives} receives for {total} messages: the default should have taken several at once"
    );
}

/// With the default settings, messages whose handler takes longer than a batch may are taken
/// one at a time, however many wait: none waits behind another's slow handler.
pub async fn slow_messages_are_received_one_at_a_time(setup: Setup) {
    let total = 12;
    let receives = receives_for_backlog(setup, total, Duration::from_millis(40), None).await;
    assert_eq!(receives, u64::from(total), "one receive per slow message");
}

/// With the default settings, handlers that run statements of their own in the receive's
/// transaction take one message per receive on SQL Server, however many wait (several per
/// transaction would take their row locks in orders that deadlock with other receivers', which
/// SQL Server finds only every few seconds); a fixed `receive_batch(n)` batches them anyway. On
/// SQLite, where a receive holds the file's one write lock, and on PostgreSQL, where a batch
/// gives way after a short wait for a row lock, a backlog is taken several at a time as for any
/// fast handler.
pub async fn handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock(
    setup: Setup,
) {
    let total = 200;
    let receives = receives_for_backlog_of(setup, total, Duration::ZERO, None, true).await;
    if setup.kind == Kind::SqlServer {
        assert_eq!(receives, u64::from(total), "one receive per message");
    } else {
        assert!(
            receives < u64::from(total),
            "{receives} receives for {total} messages: the default should have taken several \
             at once, handlers' own statements or not"
        );
    }
    let batched = receives_for_backlog_of(setup, total, Duration::ZERO, Some(10), true).await;
    assert!(
        batched < u64::from(total),
        "{batched} receives: receive_batch(10) batches them anyway"
    );
}

/// `receive_batch(1)` takes one message per receive whatever the backlog.
pub async fn receive_batch_one_takes_one_message_per_receive(setup: Setup) {
    let total = 100;
    let receives = receives_for_backlog(setup, total, Duration::ZERO, Some(1)).await;
    assert_eq!(receives, u64::from(total), "one receive per message");
}
