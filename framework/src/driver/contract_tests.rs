//! The driver-level suite: every driver runs every statement against its real database and must
//! keep each statement's contract (what it writes, what it returns, in which order), and must
//! turn every odd value a column can hold into an error or an undecodable cell, never a panic.
//!
//! SQLite runs on a fresh file; PostgreSQL on a fresh schema at 127.0.0.1:5432 (it must be
//! reachable: the test fails, never skips); SQL Server when `NIMBUS_SQLSERVER` holds a connection
//! string (ignored otherwise: `cargo test -p nimbus-bus --all-features contract -- --include-ignored`).
//!
//! This file is over 1,000 lines because every statement runs in one test per driver, each step on
//! the rows the previous one left.

use std::sync::Arc;

use uuid::Uuid;

use super::statements::{DeadLetterRow, DelayedRow, LeaseRow, QueueRow, SharedRow};
use super::{Deadlines, Driver, Held, Param};

const DEADLINES: Deadlines = Deadlines {
    connect: std::time::Duration::from_secs(10),
    statement: std::time::Duration::from_secs(10),
};
use crate::names::{QueueName, SchemaName};
use crate::sql::{QueueSql, SchemaSql};

fn unique() -> String {
    Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// A row of NimbusMessages for `destination`, visible after `delay_ms`.
fn shared_row(id: Uuid, destination: &str, delay_ms: Option<i64>) -> SharedRow<'_> {
    SharedRow {
        message_id: id,
        destination,
        body: b"{}",
        time_to_be_received_ms: None,
        expires_at: None,
        delay_ms,
        visible_after: None,
    }
}

fn row<'a>(id: Uuid, headers: &'a str, body: &'a [u8]) -> QueueRow<'a> {
    QueueRow {
        id,
        correlation_id: None,
        reply_to_address: None,
        time_to_be_received_ms: None,
        headers,
        body,
        expires_at: None,
    }
}

/// Creates the tables the statements need (the scripts, as auto-create runs them).
async fn create<D: Driver>(
    c: &mut Held<D>,
    s: &SchemaSql,
    q: &QueueSql,
    schema: &str,
    queue: &str,
) {
    if let Some(create) = &s.schema {
        c.run_script(create, &[schema]).await.expect("schema");
    }
    for script in [
        &s.subscriptions,
        &s.dead_letters,
        &s.delayed_messages,
        &s.shared_messages,
        &s.leases,
        // Twice: creating what exists must do nothing.
        &s.leases,
        &s.paused_queues,
        &s.paused_queues,
        &s.instances,
        &s.instances,
        &s.monitoring,
        &s.monitoring,
        &s.sagas,
        &s.sagas,
        &s.schedules,
        &s.schedules,
        &s.deduplication,
        &s.deduplication,
        &s.limits,
        &s.limits,
        &s.bodies,
        &s.bodies,
    ] {
        c.run_script(script, &[schema]).await.expect("common table");
    }
    c.run_script(&s.upgrade_subscriptions_idle_seconds, &[schema])
        .await
        .expect("IdleSeconds");
    let dequeue = &s.shared_messages_index_dequeue;
    for _ in 0..2 {
        c.run_script(
            &dequeue.create_if_missing,
            &dequeue.guard_names(schema, "NimbusMessages"),
        )
        .await
        .expect("dequeue index");
    }
    c.run_script(&q.create_table, &[schema, queue])
        .await
        .expect("queue table");
    for index in q.indexes() {
        // Twice: creating an index that exists must do nothing.
        for _ in 0..2 {
            c.run_script(&index.create_if_missing, &index.guard_names(schema, queue))
                .await
                .expect("queue index");
        }
    }
}

/// Every statement's contract, on one driver.
async fn contract<D: Driver>(driver: Arc<D>, schema: SchemaName) {
    let dialect = driver.dialect();
    // Quotes and brackets, but no right bracket on SQL Server: Babelfish for PostgreSQL cannot
    // parse `]]` inside a bracketed name (the SQL Server suite names that gap), and this test
    // is about every statement's contract, not that one.
    let name = if driver.dialect().names_ignore_case {
        format!("Q it's [{}", unique())
    } else {
        format!("Q it's [{}]", unique())
    };
    let queue = QueueName::new(name).expect("a valid name");
    let s = dialect.schema_sql(&schema);
    let q = dialect.queue_sql(&schema, &queue);
    let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
    create(&mut c, &s, &q, schema.as_str(), queue.as_str()).await;

    // Catalog.
    let table_params = |t: &'static str| [Param::Text(Some(schema.as_str())), Param::Text(Some(t))];
    assert!(c
        .exists(
            &s.catalog_table_exists,
            &table_params("NimbusSubscriptions")
        )
        .await
        .expect("table check"));
    assert!(!c
        .exists(&s.catalog_table_exists, &table_params("NoSuchTable"))
        .await
        .expect("table check"));
    assert!(c
        .exists(
            &s.catalog_has_last_seen_at,
            &[Param::Text(Some(schema.as_str()))]
        )
        .await
        .expect("column check"));
    let indexes = c
        .index_names(&s.catalog_list_indexes, schema.as_str(), queue.as_str())
        .await
        .expect("index list");
    for index in q.indexes() {
        // SQL Server compares names regardless of case; Babelfish lists them in lower case.
        assert!(
            indexes.iter().any(|name| name == &index.name
                || (dialect.names_ignore_case && name.eq_ignore_ascii_case(&index.name))),
            "{} lacks {} in {indexes:?}",
            dialect.name,
            index.name
        );
    }
    // The catalog's definitions of the indexes the scripts made pass the definition check
    // (type, key columns, included columns), on both tables.
    for (table, expected) in [
        (
            queue.as_str(),
            q.indexes().into_iter().cloned().collect::<Vec<_>>(),
        ),
        (
            "NimbusMessages",
            vec![s.shared_messages_index_dequeue.clone()],
        ),
    ] {
        let columns = c
            .index_columns(&s.catalog_index_definitions, schema.as_str(), table)
            .await
            .expect("index definitions");
        let found = crate::transport::index_check::group(columns);
        for index in &expected {
            assert!(
                found.iter().any(|f| f.name == index.name
                    || (dialect.names_ignore_case && f.name.eq_ignore_ascii_case(&index.name))),
                "{}: {} not among {found:?}",
                dialect.name,
                index.name
            );
        }
        let problems = crate::transport::index_check::check(&expected, &found, dialect.index_type);
        assert!(problems.is_empty(), "{}: {problems:?}", dialect.name);
    }

    // The watch of idle queues (SQL Server), on the still empty queue table.
    if let (Some(wait), Some(part)) = (&s.watch_wait, &q.ready) {
        let watch = crate::sql::watch_sql(dialect.placeholder, wait, &[part]);
        c = watch_ends_at_a_commit(&driver, c, &q, &watch).await;
    }

    // Queue table: insert, count, browse, peek, FIFO receive.
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (i, id) in ids.iter().enumerate() {
        let body = format!("{{\"n\":{i}}}");
        let inserted = c
            .insert_queue_row(&q.insert, &row(*id, "{}", body.as_bytes()))
            .await
            .expect("insert");
        assert_eq!(inserted, 1);
    }
    assert_eq!(c.count(&q.count, &[]).await.expect("count"), 3);
    assert_eq!(c.count(&q.peek, &[]).await.expect("peek"), 3);
    let browsed = c.browse_queue(&q.browse, 2).await.expect("browse");
    assert_eq!(browsed.len(), 2);
    assert_eq!(browsed[0].id, ids[0].to_string());
    let first = c
        .begin_and_receive(&q.receive, &[])
        .await
        .expect("receive")
        .expect("a message");
    assert_eq!(first.id, ids[0].to_string(), "FIFO by RowVersion");
    assert_eq!(first.body, b"{\"n\":0}");
    assert!(!first.expired && first.undecodable.is_none());
    c = commit(c).await;
    assert_eq!(c.count(&q.count, &[]).await.expect("count"), 2);

    // A commit and the next receive together (one round trip where the driver pipelines
    // them): the first transaction commits, the next message is held by a new one, and a
    // connection dropped with it gives it back.
    let second = c
        .begin_and_receive(&q.receive, &[])
        .await
        .expect("receive")
        .expect("a message");
    assert_eq!(second.id, ids[1].to_string());
    let third = c
        .commit_and_receive(&q.receive, &[])
        .await
        .expect("the commit")
        .expect("the receive after it")
        .expect("a message");
    assert_eq!(third.id, ids[2].to_string(), "FIFO after the commit");
    drop(c);
    c = Held::take(&driver, DEADLINES).await.expect("a connection");
    assert_eq!(
        c.count(&q.count, &[]).await.expect("count"),
        1,
        "the second committed, the third back in its queue"
    );
    let third_again = c
        .begin_and_receive(&q.receive, &[])
        .await
        .expect("receive")
        .expect("the third again");
    assert_eq!(third_again.id, ids[2].to_string());
    let nothing = c
        .commit_and_receive(&q.receive, &[])
        .await
        .expect("the commit")
        .expect("the receive after it");
    assert!(nothing.is_none(), "an empty queue: {nothing:?}");
    c = commit(c).await;
    assert_eq!(c.count(&q.count, &[]).await.expect("count"), 0);
    for (i, id) in ids.iter().enumerate().skip(1) {
        let body = format!("{{\"n\":{i}}}");
        c.insert_queue_row(&q.insert, &row(*id, "{}", body.as_bytes()))
            .await
            .expect("insert again");
    }

    // Expiry: a message already expired is returned as expired, and purged.
    let mut expired = row(Uuid::new_v4(), "{}", b"x");
    expired.time_to_be_received_ms = Some(-60_000);
    c.insert_queue_row(&q.insert, &expired)
        .await
        .expect("insert expired");
    assert_eq!(
        c.execute(&q.purge_expired, &[Param::BigInt(Some(10))])
            .await
            .expect("purge"),
        1
    );

    // Delayed messages: due ones are taken, others stay.
    let delayed = |id, delay| DelayedRow {
        message: row(id, "{\"h\":1}", b"later"),
        destination: queue.as_str(),
        delay_ms: Some(delay),
        due_at: None,
    };
    let (due, not_due) = (Uuid::new_v4(), Uuid::new_v4());
    c.insert_delayed_row(&s.delayed_insert, &delayed(due, -1_000))
        .await
        .expect("delayed insert");
    c.insert_delayed_row(&s.delayed_insert, &delayed(not_due, 3_600_000))
        .await
        .expect("delayed insert");
    c.begin().await.expect("begin");
    let taken = c
        .take_due_delayed(&s.delayed_take_due, 10)
        .await
        .expect("take due");
    c = commit(c).await;
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].id, due.to_string());
    assert_eq!(taken[0].destination.as_deref(), Some(queue.as_str()));
    assert_eq!(taken[0].headers, "{\"h\":1}");

    // Leases: an expired one is taken back whole, a live one is renewed and ended, and a
    // lease that is gone is neither.
    let lease = |lease_id, lease_ms, expires| LeaseRow {
        lease_id,
        queue: queue.as_str(),
        lease_ms,
        leased_by: "instance-1",
        id: "0192d0c1-7b1e-7c4e-9a37-2d3b4c5d6e7f",
        correlation_id: Some("corr"),
        reply_to_address: None,
        expires,
        headers: "{\"NServiceBus.MessageId\":\"m\"}",
        body: b"leased",
    };
    let (lapsed, live) = (Uuid::new_v4(), Uuid::new_v4());
    let past = chrono::NaiveDate::from_ymd_opt(2001, 2, 3).and_then(|d| d.and_hms_opt(4, 5, 6));
    assert_eq!(
        c.insert_lease(&s.lease_insert, &lease(lapsed, -1_000, None))
            .await
            .expect("lease insert"),
        1
    );
    c.insert_lease(&s.lease_insert, &lease(live, 3_600_000, past))
        .await
        .expect("lease insert");
    assert!(c
        .renew_lease(&s.lease_renew, live, 3_600_000)
        .await
        .expect("renew"));
    assert!(!c
        .renew_lease(&s.lease_renew, Uuid::new_v4(), 1_000)
        .await
        .expect("renew of nothing"));
    let taken = c
        .begin_and_take_expired_lease(&s.lease_take_expired, queue.as_str())
        .await
        .expect("take an expired lease")
        .expect("the expired lease");
    c = commit(c).await;
    assert_eq!(taken.id, "0192d0c1-7b1e-7c4e-9a37-2d3b4c5d6e7f");
    assert_eq!(taken.correlation_id.as_deref(), Some("corr"));
    assert_eq!(taken.headers, "{\"NServiceBus.MessageId\":\"m\"}");
    assert_eq!(taken.body, b"leased");
    assert!(!taken.expired, "no Expires: not expired");
    assert_eq!(taken.undecodable, None);
    assert!(
        c.begin_and_take_expired_lease(&s.lease_take_expired, queue.as_str())
            .await
            .expect("take")
            .is_none(),
        "the live lease is not taken back"
    );
    c = commit(c).await;
    c.begin().await.expect("begin");
    assert!(c.end_lease(&s.lease_end, live).await.expect("end"));
    assert!(!c.end_lease(&s.lease_end, live).await.expect("end again"));
    c = commit(c).await;
    // A message past its Expires comes back marked expired.
    let stale = Uuid::new_v4();
    c.insert_lease(&s.lease_insert, &lease(stale, -1_000, past))
        .await
        .expect("lease insert");
    let taken = c
        .begin_and_take_expired_lease(&s.lease_take_expired, queue.as_str())
        .await
        .expect("take")
        .expect("the stale lease");
    c = commit(c).await;
    assert!(taken.expired, "past its Expires");
    assert_eq!(taken.expires, past);

    // Dead letters: a duplicate id inserts nothing; take returns and deletes.
    let letter_id = Uuid::new_v4();
    let letter = DeadLetterRow {
        message_id: letter_id,
        original_destination: queue.as_str(),
        body: b"{\"reason\":\"x\"}",
        delivery_attempts: 3,
    };
    assert!(c
        .insert_dead_letter(&s.dead_letter_insert, &letter)
        .await
        .expect("dead letter"));
    assert!(!c
        .insert_dead_letter(&s.dead_letter_insert, &letter)
        .await
        .expect("duplicate dead letter"));
    let listed = c
        .list_dead_letters(
            &s.dead_letter_list,
            &crate::driver::statements::DeadLetterPage {
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].delivery_attempts, 3);
    let got = c
        .dead_letter(&s.dead_letter_get, letter_id)
        .await
        .expect("get a dead letter")
        .expect("the dead letter, by id");
    assert_eq!(
        (got.message_id.to_lowercase(), got.body.as_slice()),
        (letter_id.to_string(), &b"{\"reason\":\"x\"}"[..])
    );
    assert!(c
        .dead_letter(&s.dead_letter_get, Uuid::new_v4())
        .await
        .expect("get a dead letter")
        .is_none());
    let (destination, body) = c
        .take_dead_letter(&s.dead_letter_take, letter_id)
        .await
        .expect("take")
        .expect("the dead letter");
    assert_eq!(destination.as_deref(), Some(queue.as_str()));
    assert_eq!(body, b"{\"reason\":\"x\"}");
    assert!(c
        .take_dead_letter(&s.dead_letter_take, letter_id)
        .await
        .expect("take")
        .is_none());

    // Dead letters page by (FailedAt, MessageId) and filter by queue in the statement: three
    // letters of this queue and one of another, read two at a time.
    let other = format!("{}Other", queue.as_str());
    let ids: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
    for (i, id) in ids.iter().enumerate() {
        let destination = if i == 1 {
            other.as_str()
        } else {
            queue.as_str()
        };
        c.insert_dead_letter(
            &s.dead_letter_insert,
            &DeadLetterRow {
                message_id: *id,
                original_destination: destination,
                body: b"{}",
                delivery_attempts: 1,
            },
        )
        .await
        .expect("dead letter");
    }
    let page =
        |after: Option<(chrono::NaiveDateTime, Uuid)>| crate::driver::statements::DeadLetterPage {
            queue: Some(queue.as_str()),
            after,
            limit: 2,
            ..Default::default()
        };
    let first = c
        .list_dead_letters(&s.dead_letter_list, &page(None))
        .await
        .expect("first page");
    assert_eq!(first.len(), 2);
    let last = first.last().expect("a last letter");
    let after = (
        last.failed_at.expect("a failure time"),
        Uuid::parse_str(&last.message_id).expect("an id"),
    );
    let second = c
        .list_dead_letters(&s.dead_letter_list, &page(Some(after)))
        .await
        .expect("second page");
    let mut seen: Vec<String> = first
        .iter()
        .chain(&second)
        .map(|d| d.message_id.to_lowercase())
        .collect();
    seen.sort();
    let mut expected: Vec<String> = [ids[0], ids[2], ids[3]]
        .iter()
        .map(|id| id.to_string())
        .collect();
    expected.sort();
    assert_eq!(
        seen, expected,
        "each letter of the queue once, none of the other"
    );
    for id in ids {
        c.take_dead_letter(&s.dead_letter_take, id)
            .await
            .expect("take");
    }

    // Subscriptions: upsert twice, list live ones, refresh, sweep with a negative idle period.
    for _ in 0..2 {
        c.subscribe(&s.subscription_upsert, "Topic.A", queue.as_str(), 3600)
            .await
            .expect("subscribe");
    }
    assert_eq!(
        c.subscribers(&s.subscription_list, "Topic.A", 3600)
            .await
            .expect("subscribers"),
        vec![queue.as_str().to_string()]
    );
    assert!(c
        .on_subscription(&s.subscription_refresh, "Topic.A", queue.as_str())
        .await
        .expect("refresh"));
    assert!(!c
        .on_subscription(&s.subscription_refresh, "Topic.B", queue.as_str())
        .await
        .expect("refresh of nothing"));
    assert_eq!(
        c.count(
            &s.subscription_count_for_queue,
            &[Param::Text(Some(queue.as_str()))]
        )
        .await
        .expect("count subscriptions"),
        1
    );
    assert_eq!(
        c.all_subscriptions(&s.subscription_all)
            .await
            .expect("all")
            .len(),
        1
    );
    assert!(c
        .sweep_subscriptions(&s.subscription_sweep, 3600)
        .await
        .expect("sweep of nothing")
        .is_empty());
    // The idle period the subscriber promised wins over the sweeper's, both ways.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(c
        .sweep_subscriptions(&s.subscription_sweep, 0)
        .await
        .expect("a shorter sweeper")
        .is_empty());
    c.subscribe(&s.subscription_upsert, "Topic.A", queue.as_str(), 0)
        .await
        .expect("subscribe with a short idle period");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(c
        .subscribers(&s.subscription_list, "Topic.A", 3600)
        .await
        .expect("subscribers")
        .is_empty());
    assert_eq!(
        c.sweep_subscriptions(&s.subscription_sweep, 3600)
            .await
            .expect("sweep"),
        vec![("Topic.A".to_string(), queue.as_str().to_string())]
    );
    // An operator's unsubscribe: the row goes, and a second one finds nothing.
    c.subscribe(&s.subscription_upsert, "Topic.C", queue.as_str(), 3600)
        .await
        .expect("subscribe");
    assert!(c
        .on_subscription(&s.subscription_delete, "Topic.C", queue.as_str())
        .await
        .expect("unsubscribe"));
    assert!(!c
        .on_subscription(&s.subscription_delete, "Topic.C", queue.as_str())
        .await
        .expect("unsubscribe again"));

    // Shared table: visible after the delay, FIFO, headers travel in the body.
    let shared = |id, delay| SharedRow {
        message_id: id,
        destination: queue.as_str(),
        body: b"env",
        time_to_be_received_ms: None,
        expires_at: None,
        delay_ms: Some(delay),
        visible_after: None,
    };
    let (now, later) = (Uuid::new_v4(), Uuid::new_v4());
    c.insert_shared_row(&s.messages_insert, &shared(later, 3_600_000))
        .await
        .expect("shared insert");
    c.insert_shared_row(&s.messages_insert, &shared(now, 0))
        .await
        .expect("shared insert");
    let destination = [Param::Text(Some(queue.as_str()))];
    assert_eq!(
        c.count(&s.messages_count, &destination)
            .await
            .expect("count"),
        2
    );
    assert_eq!(
        c.count(&s.messages_peek, &destination).await.expect("peek"),
        1
    );
    if let (Some(wait), Some(shared)) = (&s.watch_wait, &s.messages_ready) {
        // Watched together: this destination of the shared table (place 0) and another one (1).
        // Only this destination holds a visible message.
        let watch = crate::sql::watch_sql(dialect.placeholder, wait, &[shared, shared]);
        let names = [queue.as_str(), "NoSuchQueue"];
        assert_eq!(
            look(&mut c, &watch.look, 1, "00:00:00.001", &names).await,
            vec![0]
        );
        // The wait answers at once (waiting out its hours of looks would run into the
        // statement deadline).
        match c
            .query(
                &watch.wait,
                &watch_params(1_000_000, "00:00:00.010", &names),
            )
            .await
        {
            Err(e) if lacks_waitfor(&e) => println!("{WAITFOR_GAP}: {e}"),
            ready => assert_eq!(places(ready.expect("the watch")), vec![0]),
        }
    }
    let received = c
        .begin_and_receive(&s.messages_receive, &destination)
        .await
        .expect("receive")
        .expect("the visible message");
    assert_eq!(received.id, now.to_string());
    c = commit(c).await;
    assert!(c
        .begin_and_receive(&s.messages_receive, &destination)
        .await
        .expect("receive")
        .is_none());
    c = commit(c).await;
    // Dropping the destination deletes its messages a batch at a time: the delayed one left
    // and two more, in batches of two.
    for _ in 0..2 {
        c.insert_shared_row(&s.messages_insert, &shared(Uuid::new_v4(), 3_600_000))
            .await
            .expect("shared insert");
    }
    let batch_of_two = [destination[0], Param::BigInt(Some(2))];
    for expected in [2, 1, 0] {
        assert_eq!(
            c.execute(&s.messages_delete_destination, &batch_of_two)
                .await
                .expect("delete destination"),
            expected
        );
    }

    // Sagas: read nothing, start, read, update at the version read (and not at another),
    // refuse a second start with a unique-key error the transport recognises, delete.
    let saga_id = Uuid::new_v4();
    let correlation = format!("{}-order", queue.as_str());
    assert!(c
        .saga_get(&s.saga_get, "Contract.Saga", &correlation)
        .await
        .expect("get a saga")
        .is_none());
    c.saga_insert(
        &s.saga_insert,
        saga_id,
        "Contract.Saga",
        &correlation,
        "{\"n\":1}",
    )
    .await
    .expect("start a saga");
    let row = c
        .saga_get(&s.saga_get, "Contract.Saga", &correlation)
        .await
        .expect("get a saga")
        .expect("the saga");
    assert_eq!(
        (row.id, row.state.as_str(), row.version),
        (saga_id, "{\"n\":1}", 1)
    );
    let listed = c
        .saga_list(&s.saga_list, Some("Contract.Saga"), 10)
        .await
        .expect("list sagas");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].correlation.as_str(), listed[0].version),
        (correlation.as_str(), 1)
    );
    assert!(listed[0].started_at.is_some());
    assert!(c
        .saga_list(&s.saga_list, Some("Contract.Other"), 10)
        .await
        .expect("list sagas")
        .is_empty());
    assert!(!c
        .saga_write(&s.saga_update, saga_id, 7, Some("{}"))
        .await
        .expect("update at a stale version"));
    assert!(c
        .saga_write(&s.saga_update, saga_id, 1, Some("{\"n\":2}"))
        .await
        .expect("update"));
    let duplicate = c
        .saga_insert(
            &s.saga_insert,
            Uuid::new_v4(),
            "Contract.Saga",
            &correlation,
            "{}",
        )
        .await
        .expect_err("a second start of the same saga");
    assert!(
        duplicate.is_unique_violation(),
        "a unique-key error the transport recognises: {:?} {duplicate}",
        duplicate.code()
    );
    // PostgreSQL aborts the transaction at an error: this test runs without one.
    assert!(!c
        .saga_write(&s.saga_delete, saga_id, 1, None)
        .await
        .expect("delete at a stale version"));
    assert!(c
        .saga_write(&s.saga_delete, saga_id, 2, None)
        .await
        .expect("delete"));

    // Pausing: a second pause and a resume of what is not paused change nothing.
    let paused = queue.as_str();
    assert!(c
        .pause_queue(&s.queue_pause, paused, "contract")
        .await
        .expect("pause"));
    assert!(!c
        .pause_queue(&s.queue_pause, paused, "again")
        .await
        .expect("pause again"));
    let listed = c.paused_queues(&s.paused_list).await.expect("list paused");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].queue.as_str(), listed[0].paused_by.as_str()),
        (paused, "contract")
    );
    assert!(listed[0].paused_at.is_some());
    assert!(c
        .resume_queue(&s.queue_resume, paused)
        .await
        .expect("resume"));
    assert!(!c
        .resume_queue(&s.queue_resume, paused)
        .await
        .expect("resume again"));
    assert!(c
        .paused_queues(&s.paused_list)
        .await
        .expect("list paused")
        .is_empty());

    // Deduplication keys: claimed once per scope within the window; another scope is another
    // key; the cleanup deletes keys whose window ended (here: a window ending within the hour,
    // counted as ended by asking for an hour before now), and the key can be claimed again.
    let claim = &s.deduplication_claim;
    assert!(c
        .claim_key(claim, "send:Q", "k", 60_000)
        .await
        .expect("claim"));
    assert!(!c
        .claim_key(claim, "send:Q", "k", 60_000)
        .await
        .expect("claim again"));
    assert!(c
        .claim_key(claim, "inbox:Q", "k", 60_000)
        .await
        .expect("other scope"));
    assert_eq!(
        c.delete_older_than(&s.deduplication_cleanup, 0, 10)
            .await
            .expect("cleanup of nothing expired"),
        0
    );
    assert_eq!(
        c.delete_older_than(&s.deduplication_cleanup, -3600, 1)
            .await
            .expect("cleanup, a batch of one"),
        1
    );
    assert_eq!(
        c.delete_older_than(&s.deduplication_cleanup, -3600, 10)
            .await
            .expect("cleanup of the rest"),
        1
    );
    assert!(c
        .claim_key(claim, "send:Q", "k", 60_000)
        .await
        .expect("claim after cleanup"));
    c.release_key(&s.deduplication_release, "send:Q", "k")
        .await
        .expect("give back");
    assert!(c
        .claim_key(claim, "send:Q", "k", 60_000)
        .await
        .expect("claim after giving back"));
    // Several keys in one statement: those not seen are claimed, the one seen is not.
    let many = (
        s.deduplication_expire_many.as_deref(),
        s.deduplication_claim_many.as_str(),
    );
    assert_eq!(
        c.claim_keys(many, "send:Q", &["k", "a", "b it's"], 60_000)
            .await
            .expect("claim several"),
        std::collections::HashSet::from(["a".to_string(), "b it's".to_string()])
    );
    assert!(c
        .claim_keys(many, "send:Q", &["a", "b it's"], 60_000)
        .await
        .expect("claim several again")
        .is_empty());
    assert!(!c
        .claim_key(claim, "send:Q", "a", 60_000)
        .await
        .expect("a key claimed among several is seen alone"));
    // The keys of one scope within their window, in key order; none of another scope, none
    // of a scope whose keys all ended (a window that ended at once).
    assert_eq!(
        c.keys_of(&s.deduplication_keys, "send:Q")
            .await
            .expect("keys of a scope"),
        ["a", "b it's", "k"]
    );
    assert!(c
        .claim_key(claim, "ended:Q", "gone", -1_000)
        .await
        .expect("claim with a window that ended"));
    assert!(c
        .keys_of(&s.deduplication_keys, "ended:Q")
        .await
        .expect("keys of an ended scope")
        .is_empty());
    // A key whose window ended is claimed again among several.
    assert!(c
        .claim_key(claim, "send:Q", "gone", -60_000)
        .await
        .expect("a key whose window ended a minute ago"));
    assert_eq!(
        c.claim_keys(many, "send:Q", &["gone", "a"], 60_000)
            .await
            .expect("claim an expired key among several"),
        std::collections::HashSet::from(["gone".to_string()])
    );

    // Schedules: declared once; fired by a compare-and-set on Version; paused and resumed.
    let due = chrono::DateTime::from_timestamp(1_800_000_000, 0)
        .expect("a time")
        .naive_utc();
    let definition = super::schedule_statements::ScheduleDefinition {
        endpoint: "Clock",
        name: "pulse",
        cron: None,
        every_ms: Some(1000),
        target: "send Q",
        missed: "fire-once",
        next_due: due,
    };
    assert!(c
        .declare_schedule(&s.schedule_declare, &definition)
        .await
        .expect("declare"));
    assert!(!c
        .declare_schedule(&s.schedule_declare, &definition)
        .await
        .expect("declare again"));
    let listed = c
        .list_schedules(&s.schedule_list, Some("Clock"))
        .await
        .expect("list");
    assert_eq!(listed.rows.len(), 1);
    let row = &listed.rows[0];
    assert_eq!(
        (row.name.as_str(), row.every_ms, row.next_due, row.version),
        ("pulse", Some(1000), due, 1)
    );
    let next = due + chrono::Duration::seconds(1);
    let firing = super::schedule_statements::ScheduleFiring {
        endpoint: "Clock",
        name: "pulse",
        version: 1,
        next_due: next,
        sent: 1,
        missed: 2,
        last_due: Some(due),
        fired_by: "clock-1",
    };
    assert!(c
        .fire_schedule(&s.schedule_fire, &firing)
        .await
        .expect("fire"));
    assert!(!c
        .fire_schedule(&s.schedule_fire, &firing)
        .await
        .expect("fire at a stale version"));
    let row = c
        .list_schedules(&s.schedule_list, None)
        .await
        .expect("list all")
        .rows
        .remove(0);
    assert_eq!(
        (
            row.version,
            row.next_due,
            row.fired,
            row.missed_ticks,
            row.last_due,
            row.last_fired_by.as_deref()
        ),
        (2, next, 1, 2, Some(due), Some("clock-1"))
    );
    assert!(row.last_fired_at.is_some());
    assert!(c
        .pause_schedule(&s.schedule_pause, "Clock", "pulse", "ops")
        .await
        .expect("pause"));
    assert!(!c
        .pause_schedule(&s.schedule_pause, "Clock", "pulse", "ops")
        .await
        .expect("pause again"));
    let paused = super::schedule_statements::ScheduleFiring {
        version: 3,
        ..firing
    };
    assert!(!c
        .fire_schedule(&s.schedule_fire, &paused)
        .await
        .expect("a paused schedule does not fire"));
    assert!(c
        .resume_schedule(&s.schedule_resume, "Clock", "pulse", next)
        .await
        .expect("resume"));
    let redefined = super::schedule_statements::ScheduleDefinition {
        every_ms: Some(2000),
        ..definition
    };
    assert!(c
        .redefine_schedule(&s.schedule_redefine, &redefined, 4)
        .await
        .expect("redefine"));
    assert!(c
        .retire_schedule(&s.schedule_retire, "Clock", "pulse")
        .await
        .expect("retire"));
    let empty = c
        .list_schedules(&s.schedule_list, Some("Clock"))
        .await
        .expect("list none");
    assert!(
        empty.rows.is_empty(),
        "the database's time comes without rows too"
    );

    let c = ordered_groups(c, &schema).await;
    let c = bounded_group_receive(c, &schema).await;
    let c = priorities(c, &schema).await;
    let c = shared_groups_and_priorities(c, &schema).await;
    let c = limits(c, &schema).await;
    let mut c = bodies(c, &schema).await;

    // Dropping a queue twice is fine.
    for _ in 0..2 {
        c.run_script(&q.drop, &[]).await.expect("drop queue");
    }
    assert!(!c
        .exists(
            &s.catalog_table_exists,
            &[
                Param::Text(Some(schema.as_str())),
                Param::Text(Some(queue.as_str()))
            ]
        )
        .await
        .expect("table check"));
    c.release();
}

/// What the run prints where the server refuses to wait.
const WAITFOR_GAP: &str = "the watch's wait is not run here: this server has no WAITFOR DELAY \
    (Babelfish for PostgreSQL lacks it; the transport then repeats the one look from the client), \
    so only SQL Server runs this part";

/// Whether `error` is a server refusing `WAITFOR` (Babelfish: "'WAITFOR' is not currently
/// supported").
fn lacks_waitfor(error: &super::DriverError) -> bool {
    let text = error.to_string();
    text.contains("WAITFOR") && text.contains("not currently supported")
}

/// The parameters of a watch statement: its looks and their delay, then the names its shared
/// table's parts compare with.
fn watch_params<'a>(looks: i64, every: &'a str, names: &[&'a str]) -> Vec<Param<'a>> {
    let mut params = vec![Param::BigInt(Some(looks)), Param::Text(Some(every))];
    params.extend(names.iter().map(|n| Param::Text(Some(*n))));
    params
}

/// The places a watch statement named.
fn places(rows: Vec<super::Row>) -> Vec<i64> {
    rows.iter()
        .map(|row| match row.0.first() {
            Some(super::Value::Int(place)) => *place,
            other => panic!("a place, not {other:?}"),
        })
        .collect()
}

/// Runs a watch statement's one look.
async fn look<D: Driver>(
    c: &mut Held<D>,
    sql: &str,
    looks: i64,
    every: &str,
    names: &[&str],
) -> Vec<i64> {
    places(
        c.query(sql, &watch_params(looks, every, names))
            .await
            .expect("a look"),
    )
}

/// The watch of an empty queue table: its one look names nothing; its wait looks its few times
/// and names nothing; while it waits (for hours, were nothing to come), a message another
/// connection commits ends the wait at its next look, and it names the queue. Returns the
/// connection it was given, or a new one.
async fn watch_ends_at_a_commit<D: Driver>(
    driver: &Arc<D>,
    mut c: Held<D>,
    q: &QueueSql,
    watch: &crate::sql::WatchSql,
) -> Held<D> {
    assert!(look(&mut c, &watch.look, 1, "00:00:00.001", &[])
        .await
        .is_empty());
    match c
        .query(&watch.wait, &watch_params(2, "00:00:00.001", &[]))
        .await
    {
        Err(e) if lacks_waitfor(&e) => {
            println!("{WAITFOR_GAP}: {e}");
            // The one look sees a committed message.
            c.begin().await.expect("begin");
            c.insert_queue_row(&q.insert, &row(Uuid::new_v4(), "{}", b"{}"))
                .await
                .expect("insert");
            c = commit(c).await;
            assert_eq!(
                look(&mut c, &watch.look, 1, "00:00:00.001", &[]).await,
                vec![0]
            );
            c.begin_and_receive(&q.receive, &[])
                .await
                .expect("receive")
                .expect("the message the look saw");
            return commit(c).await;
        }
        ready => assert!(places(ready.expect("a brief watch")).is_empty()),
    }
    // The message is written in a transaction that stays open until the watch has been sent,
    // so that (short of the server running the commit first) the watch starts waiting before
    // the message is there; a commit that ends nothing would leave it looking for hours, into
    // the statement deadline.
    c.begin().await.expect("begin");
    c.insert_queue_row(&q.insert, &row(Uuid::new_v4(), "{}", b"{}"))
        .await
        .expect("insert");
    let mut waiter = Held::take(driver, DEADLINES)
        .await
        .expect("a second connection");
    let for_hours = watch_params(1_000_000, "00:00:00.010", &[]);
    let (ready, committed) = tokio::join!(waiter.query(&watch.wait, &for_hours), async {
        tokio::task::yield_now().await;
        c.commit().await
    });
    committed.expect("commit");
    assert_eq!(places(ready.expect("the watch")), vec![0]);
    // Taken again, so that the queue table is empty for what follows.
    waiter
        .begin_and_receive(&q.receive, &[])
        .await
        .expect("receive")
        .expect("the message that ended the wait");
    commit(waiter).await
}

/// The statements of ordered groups on a table of their own: the columns and indexes are added
/// to a seed 000 table; a batch takes the first message of each group (and ungrouped ones),
/// never two of one group; a retry copy keeps its place and, waiting, holds its group; the list
/// shows the group held.
async fn ordered_groups<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    let dialect = c.driver.dialect();
    let queue = QueueName::new(format!("G it's {}", unique())).expect("a valid name");
    let q = dialect.queue_sql(schema, &queue);
    let (name, table) = (schema.as_str(), queue.as_str());
    // Each index twice: creating an index that exists must do nothing.
    make_grouped_table(&mut c, &q, name, table, 2).await;
    let grouped = |id: Uuid, group: &'static str, position: Option<i64>, wait: Option<i64>| {
        super::statements::grouped_row_statement(
            &q.groups.insert,
            &row(id, "{}", b"{}"),
            group,
            position,
            wait,
            None,
        )
    };
    let (g1, g2, h1, u1, g3) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    c.run(&grouped(g1, "g", None, None)).await.expect("g1");
    c.run(&grouped(g2, "g", None, None)).await.expect("g2");
    c.run(&grouped(h1, "h", None, None)).await.expect("h1");
    c.insert_queue_row(&q.insert, &row(u1, "{}", b"{}"))
        .await
        .expect("an ungrouped row");
    let batch = q.groups.receive_batch.clone().expect("a grouped batch");
    let taken = c
        .begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], None)
        .await
        .expect("a grouped batch");
    let ids: Vec<&str> = taken.iter().map(|m| m.id.as_str()).collect();
    let wanted = [g1, h1, u1].map(|id| id.to_string());
    assert_eq!(
        ids.len(),
        3,
        "one of each group and the ungrouped one: {ids:?}"
    );
    for id in &wanted {
        assert!(
            ids.iter().any(|i| i.eq_ignore_ascii_case(id)),
            "{id} in {ids:?}"
        );
    }
    let first = taken.iter().find(|m| m.id.eq_ignore_ascii_case(&wanted[0]));
    assert!(
        matches!(first.and_then(|m| m.group.clone()), Some((g, _)) if g == "g"),
        "{first:?}"
    );
    let ungrouped = taken.iter().find(|m| m.id.eq_ignore_ascii_case(&wanted[2]));
    assert_eq!(ungrouped.and_then(|m| m.group.clone()), None);
    let mut c = commit(c).await;
    let second = c
        .begin_and_receive(&q.groups.receive, &[])
        .await
        .expect("a grouped receive")
        .expect("g2, first of its group now");
    assert!(second.id.eq_ignore_ascii_case(&g2.to_string()));
    let (_, place) = second.group.clone().expect("its group and place");
    // Its failed attempt: the copy keeps its place and waits a minute; a later send of the
    // group queues behind it.
    c.run(&grouped(g2, "g", Some(place), Some(60_000)))
        .await
        .expect("a retry copy");
    let mut c = commit(c).await;
    c.run(&grouped(g3, "g", None, None)).await.expect("g3");
    let none = c
        .begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], None)
        .await
        .expect("a grouped batch");
    assert!(
        none.is_empty(),
        "the waiting copy holds its group: {none:?}"
    );
    let mut c = commit(c).await;
    let groups = c
        .groups(&q.groups.list, &[Param::BigInt(Some(10))])
        .await
        .expect("the groups");
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!((groups[0].key.as_str(), groups[0].waiting), ("g", 2));
    assert!(groups[0].held_until.is_some(), "held: {groups:?}");
    c.run_script(&q.drop, &[]).await.expect("drop queue");
    c
}

/// Makes the grouped queue table of `q` (table, group columns, group indexes, each index
/// `index_runs` times).
async fn make_grouped_table<D: Driver>(
    c: &mut Held<D>,
    q: &crate::sql::QueueSql,
    name: &str,
    table: &str,
    index_runs: usize,
) {
    c.run_script(&q.create_table, &[name, table])
        .await
        .expect("queue table");
    c.run_script(&q.groups.columns, &[name, table])
        .await
        .expect("group columns");
    for index in [&q.groups.index_group, &q.groups.index_group_position] {
        for _ in 0..index_runs {
            c.run_script(&index.create_if_missing, &index.guard_names(name, table))
                .await
                .expect("group index");
        }
    }
}

/// Inserts `ids` into the grouped table of `q` in order: all but the last in group "long", the
/// last in group "short"; the first waits `first_waits_ms` when given.
async fn insert_long_and_short<D: Driver>(
    c: &mut Held<D>,
    q: &crate::sql::QueueSql,
    ids: &[Uuid],
    first_waits_ms: Option<i64>,
) {
    for (n, id) in ids.iter().enumerate() {
        let group = if n + 1 < ids.len() { "long" } else { "short" };
        let insert = super::statements::grouped_row_statement(
            &q.groups.insert,
            &row(*id, "{}", b"{}"),
            group,
            None,
            first_waits_ms.filter(|_| n == 0),
            None,
        );
        c.run(&insert).await.expect("a grouped row");
    }
}

/// The bounded receive of ordered groups (`queue_receive_batch_grouped_bounded.sql`): it takes
/// the oldest message first; when the front's only group waits behind its first message (a
/// retry copy not due yet), it finds the first message of a group further back than the front's
/// 256 rows, one per group, where the usual statement would read the whole queue; and on
/// PostgreSQL it does the same while that first message is held by another transaction.
/// (SQLite's one writer keeps a second receive from running beside the first. On SQL Server a
/// receive waits for the holder of an older message of a group it looks at, under locking
/// `READ COMMITTED`, and Babelfish ignores `READPAST`: the part beside a holder runs on
/// PostgreSQL only.)
async fn bounded_group_receive<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    let dialect = c.driver.dialect();
    let queue = QueueName::new(format!("B it's {}", unique())).expect("a valid name");
    let q = dialect.queue_sql(schema, &queue);
    let (name, table) = (schema.as_str(), queue.as_str());
    make_grouped_table(&mut c, &q, name, table, 1).await;
    // The long group's first message waits an hour, its second is the oldest due; then 300
    // more of the long group, and one of the short group (the last id).
    let ids: Vec<Uuid> = (0..303).map(|_| Uuid::new_v4()).collect();
    insert_long_and_short(&mut c, &q, &ids, Some(3_600_000)).await;
    // Where the dialect has no bounded statement, its queues keep the usual one.
    let has_bounded = q.groups.receive_batch_bounded.is_some();
    let bounded = q
        .groups
        .receive_batch_bounded
        .clone()
        .or_else(|| q.groups.receive_batch.clone())
        .expect("a grouped batch");
    // At most this many, looking at the heads of the groups too (or at the front alone).
    let take = |n: i64, heads: bool| -> Vec<Param<'static>> {
        match has_bounded {
            true => vec![Param::BigInt(Some(n)), Param::Int(i32::from(heads))],
            false => vec![Param::BigInt(Some(n))],
        }
    };
    let ids_of = |taken: &[super::statements::MessageRow]| -> Vec<String> {
        taken.iter().map(|m| m.id.to_ascii_lowercase()).collect()
    };
    if has_bounded {
        let front_only = c
            .begin_and_receive_many(&bounded, &take(4, false), None)
            .await
            .expect("a bounded receive of the front alone");
        assert_eq!(
            ids_of(&front_only),
            Vec::<String>::new(),
            "the front alone holds no group that can go: the short group is beyond it"
        );
        c = commit(c).await;
    }
    let behind_the_wait = c
        .begin_and_receive_many(&bounded, &take(4, true), None)
        .await
        .expect("a bounded receive behind a waiting first message");
    assert_eq!(
        ids_of(&behind_the_wait),
        [ids[302].to_string()],
        "only the short group's message: the long group waits behind its first"
    );
    let mut c = commit(c).await;
    c.run_script(&q.drop, &[]).await.expect("drop queue");
    make_grouped_table(&mut c, &q, name, table, 1).await;
    insert_long_and_short(&mut c, &q, &ids[..301], None).await;
    let mut holder = c;
    let first = holder
        .begin_and_receive_many(&bounded, &take(1, true), None)
        .await
        .expect("a bounded receive");
    assert_eq!(ids_of(&first), [ids[0].to_string()], "the oldest message");
    if dialect.name == "PostgreSQL" {
        let driver = holder.driver.clone();
        let mut other = Held::take(&driver, DEADLINES).await.expect("a connection");
        let behind = other
            .begin_and_receive_many(&bounded, &take(4, true), None)
            .await
            .expect("a bounded receive beside the first");
        assert_eq!(
            ids_of(&behind),
            [ids[300].to_string()],
            "the short group's first message"
        );
        other.commit().await.expect("commit");
    }
    let mut c = commit(holder).await;
    c.run_script(&q.drop, &[]).await.expect("drop queue");
    c
}

/// The statements of priorities on a table of their own: the column and index are added to a
/// seed 000 table; a plain insert gets priority 0; receives take the highest first, the oldest
/// first within one; the list counts per priority.
async fn priorities<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    let dialect = c.driver.dialect();
    let queue = QueueName::new(format!("P it's {}", unique())).expect("a valid name");
    let q = dialect.queue_sql(schema, &queue);
    let (name, table) = (schema.as_str(), queue.as_str());
    c.run_script(&q.create_table, &[name, table])
        .await
        .expect("queue table");
    c.run_script(&q.priorities.column, &[name, table])
        .await
        .expect("the Priority column");
    let index = &q.priorities.index;
    for _ in 0..2 {
        c.run_script(&index.create_if_missing, &index.guard_names(name, table))
            .await
            .expect("the priority index");
    }
    let ids: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
    c.insert_queue_row(&q.insert, &row(ids[0], "{}", b"{}"))
        .await
        .expect("a plain row, at 0");
    for (id, priority) in [(ids[1], 5), (ids[2], -3), (ids[3], 5)] {
        let statement = super::statements::priority_row_statement(
            &q.priorities.insert,
            &row(id, "{}", b"{}"),
            priority,
        );
        c.run(&statement).await.expect("a row at a priority");
    }
    let counts = c
        .priority_counts(&q.priorities.list, &[])
        .await
        .expect("the counts");
    let counted: Vec<(i64, i64)> = counts.iter().map(|p| (p.priority, p.waiting)).collect();
    assert_eq!(counted, [(5, 2), (0, 1), (-3, 1)]);
    let first = c
        .begin_and_receive(&q.priorities.receive, &[])
        .await
        .expect("a receive")
        .expect("a row");
    assert!(
        first.id.eq_ignore_ascii_case(&ids[1].to_string()),
        "{first:?}"
    );
    let mut c = commit(c).await;
    let batch = q.priorities.receive_batch.clone().expect("a batch");
    let rest = c
        .begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], None)
        .await
        .expect("a batch");
    let order: Vec<String> = rest.iter().map(|m| m.id.to_lowercase()).collect();
    let wanted: Vec<String> = [ids[3], ids[0], ids[2]]
        .iter()
        .map(Uuid::to_string)
        .collect();
    if dialect.folder == "sqlite" {
        // SQLite's RETURNING promises no order: the batch holds the rows, in any order.
        let (mut got, mut want) = (order.clone(), wanted.clone());
        got.sort();
        want.sort();
        assert_eq!(got, want);
    } else {
        assert_eq!(
            order, wanted,
            "the highest first, the oldest first within one"
        );
    }
    let mut c = commit(c).await;
    c.run_script(&q.drop, &[]).await.expect("drop queue");
    c
}

/// The statements of ordered groups and priorities in NimbusMessages (shared-table layout): the
/// columns and indexes are added to the table; a grouped batch takes the first message of each
/// group of its destination (and ungrouped ones), never two of one group, and a group of
/// another destination does not hold it; a retry copy keeps its place and, waiting, holds its
/// group, which the list shows held; a delayed first send takes its place when due, so a later
/// send of its group goes first; priorities are received highest first, in send order within
/// one, and counted per destination.
async fn shared_groups_and_priorities<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    let dialect = c.driver.dialect();
    let s = dialect.schema_sql(schema);
    let (name, table) = (schema.as_str(), "NimbusMessages");
    c.run_script(&s.shared_groups.columns, &[name, table])
        .await
        .expect("group columns");
    c.run_script(&s.shared_priorities.column, &[name, table])
        .await
        .expect("the Priority column");
    for index in [&s.shared_groups.index, &s.shared_priorities.index] {
        // Twice: creating an index that exists must do nothing.
        for _ in 0..2 {
            c.run_script(&index.create_if_missing, &index.guard_names(name, table))
                .await
                .expect("a shared-table index");
        }
    }
    // Time-ordered ids, as the shared table's FIFO (and a tie within one clock tick) needs.
    let ids = match dialect.folder {
        "sqlserver" => crate::envelope::MessageIds::SqlServerOrdered,
        _ => crate::envelope::MessageIds::TimeOrdered,
    };
    let (here, elsewhere) = (format!("SG {}", unique()), format!("SG {}", unique()));
    let (here, elsewhere) = (here.as_str(), elsewhere.as_str());
    let grouped = |id: Uuid, to: &str, group: &str, place: Option<i64>, delay: Option<i64>| {
        super::statements::shared_grouped_row_statement(
            &s.shared_groups.insert,
            &shared_row(id, to, delay),
            group,
            place,
            None,
        )
    };
    let [other, g1, g2, h1, u1, g3, k1, k2] = [(); 8].map(|_| ids.next());
    c.run(&grouped(other, elsewhere, "g", None, None))
        .await
        .expect("a group of another destination");
    c.run(&grouped(g1, here, "g", None, None))
        .await
        .expect("g1");
    c.run(&grouped(g2, here, "g", None, None))
        .await
        .expect("g2");
    c.run(&grouped(h1, here, "h", None, None))
        .await
        .expect("h1");
    let plain =
        super::statements::shared_row_statement(&s.messages_insert, &shared_row(u1, here, None));
    c.run(&plain).await.expect("an ungrouped row");
    let batch = s
        .shared_groups
        .receive_batch
        .clone()
        .expect("a grouped batch");
    let ten = |to| [Param::Text(Some(to)), Param::BigInt(Some(10))];
    let taken = c
        .begin_and_receive_many(&batch, &ten(here), None)
        .await
        .expect("a grouped batch");
    let mut got: Vec<String> = taken.iter().map(|m| m.id.to_lowercase()).collect();
    let mut wanted: Vec<String> = [g1, h1, u1].iter().map(Uuid::to_string).collect();
    got.sort();
    wanted.sort();
    assert_eq!(got, wanted, "one of each group and the ungrouped one");
    let first = taken
        .iter()
        .find(|m| m.id.eq_ignore_ascii_case(&g1.to_string()));
    assert!(
        matches!(first.and_then(|m| m.group.clone()), Some((g, _)) if g == "g"),
        "{first:?}"
    );
    let mut c = commit(c).await;
    let second = c
        .begin_and_receive(&s.shared_groups.receive, &[Param::Text(Some(here))])
        .await
        .expect("a grouped receive")
        .expect("g2, first of its group now");
    assert!(
        second.id.eq_ignore_ascii_case(&g2.to_string()),
        "{second:?}"
    );
    let (_, place) = second.group.clone().expect("its group and place");
    // Its failed attempt: the copy keeps its place and waits a minute; a later send of the
    // group queues behind it.
    c.run(&grouped(g2, here, "g", Some(place), Some(60_000)))
        .await
        .expect("a retry copy");
    let mut c = commit(c).await;
    c.run(&grouped(g3, here, "g", None, None))
        .await
        .expect("g3");
    // A first send delayed a minute takes its place when due: k2, sent after it at once, is
    // not held by it.
    c.run(&grouped(k1, here, "k", None, Some(60_000)))
        .await
        .expect("k1, delayed");
    c.run(&grouped(k2, here, "k", None, None))
        .await
        .expect("k2");
    let next = c
        .begin_and_receive_many(&batch, &ten(here), None)
        .await
        .expect("a grouped batch");
    let ids_taken: Vec<String> = next.iter().map(|m| m.id.to_lowercase()).collect();
    assert_eq!(
        ids_taken,
        [k2.to_string()],
        "the waiting copy holds group g; the delayed k1 does not hold k2"
    );
    let mut c = commit(c).await;
    let groups = c
        .groups(&s.shared_groups.list, &ten(here))
        .await
        .expect("the groups");
    let listed: Vec<(&str, i64, bool)> = groups
        .iter()
        .map(|g| (g.key.as_str(), g.waiting, g.held_until.is_some()))
        .collect();
    assert_eq!(listed, [("g", 2, true), ("k", 1, false)], "{groups:?}");
    // Priorities, in a destination of their own.
    let (p0, p5a, pm3, p5b) = (ids.next(), ids.next(), ids.next(), ids.next());
    let prioritized = format!("SP {}", unique());
    let prioritized = prioritized.as_str();
    c.run(&super::statements::shared_row_statement(
        &s.messages_insert,
        &shared_row(p0, prioritized, None),
    ))
    .await
    .expect("a plain row, at 0");
    for (id, priority) in [(p5a, 5), (pm3, -3), (p5b, 5)] {
        let statement = super::statements::shared_priority_row_statement(
            &s.shared_priorities.insert,
            &shared_row(id, prioritized, None),
            priority,
        );
        c.run(&statement).await.expect("a row at a priority");
    }
    let counts = c
        .priority_counts(&s.shared_priorities.list, &[Param::Text(Some(prioritized))])
        .await
        .expect("the counts");
    let counted: Vec<(i64, i64)> = counts.iter().map(|p| (p.priority, p.waiting)).collect();
    assert_eq!(counted, [(5, 2), (0, 1), (-3, 1)]);
    let top = c
        .begin_and_receive(
            &s.shared_priorities.receive,
            &[Param::Text(Some(prioritized))],
        )
        .await
        .expect("a receive")
        .expect("a row");
    assert!(top.id.eq_ignore_ascii_case(&p5a.to_string()), "{top:?}");
    let mut c = commit(c).await;
    let batch = s.shared_priorities.receive_batch.clone().expect("a batch");
    let rest = c
        .begin_and_receive_many(&batch, &ten(prioritized), None)
        .await
        .expect("a batch");
    let mut order: Vec<String> = rest.iter().map(|m| m.id.to_lowercase()).collect();
    let mut wanted: Vec<String> = [p5b, p0, pm3].iter().map(Uuid::to_string).collect();
    if dialect.folder == "sqlite" {
        // SQLite's RETURNING promises no order: the batch holds the rows, in any order.
        order.sort();
        wanted.sort();
    }
    assert_eq!(
        order, wanted,
        "the highest first, the oldest first within one"
    );
    let mut c = commit(c).await;
    // Both: priorities choose among the first messages of the groups (and the ungrouped ones);
    // a group's own order holds whatever the priorities of its later messages.
    let both = format!("SB {}", unique());
    let both = both.as_str();
    let [a1, a2, b1, u] = [(); 4].map(|_| ids.next());
    for (id, group, priority) in [(a1, "a", 0), (a2, "a", 9), (b1, "b", 5)] {
        let statement = super::statements::shared_grouped_row_statement(
            &s.shared_groups.prioritized.insert,
            &shared_row(id, both, None),
            group,
            None,
            Some(priority),
        );
        c.run(&statement)
            .await
            .expect("a grouped row at a priority");
    }
    let statement = super::statements::shared_priority_row_statement(
        &s.shared_priorities.insert,
        &shared_row(u, both, None),
        1,
    );
    c.run(&statement)
        .await
        .expect("an ungrouped row at a priority");
    let batch = s
        .shared_groups
        .prioritized
        .receive_batch
        .clone()
        .expect("a batch");
    let heads = c
        .begin_and_receive_many(&batch, &ten(both), None)
        .await
        .expect("a batch");
    let mut order: Vec<String> = heads.iter().map(|m| m.id.to_lowercase()).collect();
    let mut wanted: Vec<String> = [b1, u, a1].iter().map(Uuid::to_string).collect();
    if dialect.folder == "sqlite" {
        order.sort();
        wanted.sort();
    }
    assert_eq!(
        order, wanted,
        "the first of each group, the highest priority first"
    );
    let mut c = commit(c).await;
    let last = c
        .begin_and_receive(
            &s.shared_groups.prioritized.receive,
            &[Param::Text(Some(both))],
        )
        .await
        .expect("a receive")
        .expect("a2, first of its group now");
    assert!(last.id.eq_ignore_ascii_case(&a2.to_string()), "{last:?}");
    let mut c = commit(c).await;
    for destination in [here, elsewhere, prioritized] {
        c.execute(
            &s.messages_delete_destination,
            &[Param::Text(Some(destination)), Param::BigInt(Some(1000))],
        )
        .await
        .expect("empty the destination");
    }
    c
}

/// The slots of a limit: none until added; a rate's slot stays taken for its period (so a
/// third take of two slots finds the limit full, and says how soon one is ready); a held
/// message is counted; the list shows it all; the cleanup deletes what is untouched.
async fn limits<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    let s = c.driver.dialect().schema_sql(schema);
    let scope = format!("Q|rate|T|{}", unique());
    let take = async |c: &mut Held<D>| c.take_limit_slot(&s.limit_take, &scope, 2, 60_000).await;
    assert!(!take(&mut c).await.expect("take before any slot"));
    assert_eq!(
        c.limit_state(&s.limit_state, &scope, 2)
            .await
            .expect("state"),
        (0, None)
    );
    for _ in 0..2 {
        c.add_limit_slots(&s.limit_slots, &scope, 2)
            .await
            .expect("add the slots (again)");
    }
    assert!(take(&mut c).await.expect("first slot"));
    assert!(take(&mut c).await.expect("second slot"));
    assert!(!take(&mut c).await.expect("a full rate"));
    let (slots, ready_in) = c
        .limit_state(&s.limit_state, &scope, 2)
        .await
        .expect("state when full");
    assert_eq!(slots, 2);
    let ready_in = ready_in.expect("a full rate says when");
    assert!((1..=60_000).contains(&ready_in), "{ready_in} ms");
    // A limit of handlers at once: its slot is free again as soon as it is taken, for this
    // transaction (others skip it while this one holds it).
    let at_once = format!("Q|concurrency|T|{}", unique());
    c.add_limit_slots(&s.limit_slots, &at_once, 1)
        .await
        .expect("add a slot");
    for _ in 0..2 {
        assert!(c
            .take_limit_slot(&s.limit_take, &at_once, 1, 0)
            .await
            .expect("take a slot of handlers at once"));
    }
    c.count_limit_held(&s.limit_held, &scope)
        .await
        .expect("count a held message");
    let listed = c.limits(&s.limits_list).await.expect("list");
    let mine = listed
        .iter()
        .find(|l| l.scope == scope)
        .expect("the rate is listed");
    assert_eq!((mine.slots, mine.taken, mine.held), (2, 2, 1));
    assert!(mine.last_taken.is_some() && mine.last_held.is_some());
    let other = listed
        .iter()
        .find(|l| l.scope == at_once)
        .expect("the limit of handlers at once is listed");
    assert_eq!((other.slots, other.taken, other.held), (1, 0, 0));
    assert_eq!(other.last_held, None);
    assert_eq!(
        c.delete_older_than(&s.limits_cleanup, 60, 100)
            .await
            .expect("cleanup of nothing old"),
        0
    );
    // An hour from now: every row is older than that; 3 of the rate, 2 of the other.
    assert_eq!(
        c.delete_older_than(&s.limits_cleanup, -3600, 100)
            .await
            .expect("cleanup"),
        5
    );
    c
}

/// `NimbusBodies`: a body stored, read back byte for byte, kept for a dead letter past its
/// message's expiry, given back to a replay, deleted; the cleanups by expiry and retention, the
/// drop of a queue's bodies and the summary.
async fn bodies<D: Driver>(mut c: Held<D>, schema: &SchemaName) -> Held<D> {
    use crate::driver::body_statements::{BodyRow, FetchedBody};
    let s = c.driver.dialect().schema_sql(schema);
    let queue = format!("Bodies it's [{}", unique());
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let row = |id, ttbr| BodyRow {
        id,
        queue: &queue,
        body: Some(&bytes),
        store: None,
        size: 70_000,
        time_to_be_received_ms: ttbr,
        expires_at: None,
    };
    let (kept, expired, dropped) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    c.insert_body(&s.body_insert, &row(kept, Some(-60_000)))
        .await
        .expect("store a body that expired a minute ago");
    c.insert_body(&s.body_insert, &row(expired, Some(-60_000)))
        .await
        .expect("store another");
    c.insert_body(&s.body_insert, &row(dropped, None))
        .await
        .expect("store one that never expires");
    c.insert_body(
        &s.body_insert,
        &BodyRow {
            id: Uuid::new_v4(),
            store: Some("s3://bucket"),
            body: None,
            ..row(Uuid::new_v4(), None)
        },
    )
    .await
    .expect("store a body kept elsewhere");
    assert_eq!(
        c.fetch_body(&s.body_fetch, kept).await.expect("fetch"),
        Some(FetchedBody::Here(bytes.clone())),
        "read back byte for byte"
    );
    assert_eq!(
        c.fetch_body(&s.body_fetch, Uuid::new_v4())
            .await
            .expect("fetch"),
        None
    );
    let missing = Uuid::new_v4();
    assert_eq!(
        c.bodies_present(&s.bodies_present, &[missing, kept, expired])
            .await
            .expect("which are present"),
        std::collections::HashSet::from([kept, expired]),
        "the two with rows, not the one without"
    );
    assert!(c
        .bodies_present(&s.bodies_present, &[])
        .await
        .expect("none asked")
        .is_empty());
    assert!(c
        .body_by_id(&s.body_dead_lettered, kept)
        .await
        .expect("kept for a dead letter"));
    let summary = c.bodies_summary(&s.bodies_summary).await.expect("summary");
    let mine = summary.iter().find(|b| b.queue == queue).expect("listed");
    assert_eq!(
        (
            mine.bodies,
            mine.bytes,
            mine.dead_lettered,
            mine.in_object_store
        ),
        (4, 280_000, 1, 1)
    );
    assert!(mine.oldest.is_some());
    // Expired 60 s ago: past a grace of 30 s, within one of 120 s; the dead letter's is kept.
    assert_eq!(
        c.delete_older_than(&s.bodies_expire, 120, 100)
            .await
            .expect("expire nothing"),
        0
    );
    assert_eq!(
        c.delete_older_than(&s.bodies_expire, 30, 100)
            .await
            .expect("expire"),
        1
    );
    assert_eq!(
        c.fetch_body(&s.body_fetch, expired).await.expect("fetch"),
        None
    );
    assert_eq!(
        c.execute(&s.bodies_drop_queue, &[Param::Text(Some(&queue))])
            .await
            .expect("drop the queue's bodies"),
        2,
        "the queue's bodies go, not its dead letter's"
    );
    assert!(c
        .replay_body(&s.body_replayed, kept, "Elsewhere")
        .await
        .expect("replayed"));
    assert_eq!(
        c.delete_older_than(&s.bodies_dead_letter_expire, -3600, 100)
            .await
            .expect("a replayed body is no dead letter's"),
        0
    );
    c.body_by_id(&s.body_dead_lettered, kept)
        .await
        .expect("a dead letter again");
    assert_eq!(
        c.delete_older_than(&s.bodies_dead_letter_expire, -3600, 100)
            .await
            .expect("past the retention"),
        1
    );
    assert!(!c
        .body_by_id(&s.body_delete, kept)
        .await
        .expect("delete what is gone"));
    c
}

async fn commit<D: Driver>(c: Held<D>) -> Held<D> {
    let driver = c.driver.clone();
    c.commit().await.expect("commit");
    Held::take(&driver, DEADLINES).await.expect("a connection")
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use crate::driver::sqlite::SqliteDriver;

    async fn open() -> (SqliteDriver, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("nimbus-driver-{}.db", unique()));
        (SqliteDriver::open(&path).await.expect("open"), path)
    }

    #[tokio::test]
    async fn every_statement_keeps_its_contract() {
        let (driver, path) = open().await;
        contract(Arc::new(driver), SchemaName::new("main").expect("main")).await;
        let _ = std::fs::remove_file(path);
    }

    /// Rows of another storage class than the statements write (a text body, blob or invalid
    /// UTF-8 headers, a blob id) are read or reported, never a panic, and never block the queue.
    #[tokio::test]
    async fn odd_storage_classes_are_read_or_reported() {
        let (driver, path) = open().await;
        let driver = Arc::new(driver);
        let schema = SchemaName::new("main").expect("main");
        let queue = QueueName::new("Odd").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, "main", "Odd").await;
        c.run_script(
            r#"INSERT INTO "Odd" ("Id", "Recoverable", "Headers", "Body") VALUES
                ('00000000-0000-0000-0000-000000000001', 1, '{}', 'a text body'),
                ('00000000-0000-0000-0000-000000000002', 1, X'7B7D', X'00'),
                ('00000000-0000-0000-0000-000000000003', 1, X'FFFE', X'00'),
                (X'FF01', 1, '{}', X'00'),
                ('00000000-0000-0000-0000-000000000005', 1, '{}', X'00');
               UPDATE "Odd" SET "Expires" = 'not a time' WHERE "RowVersion" = 5;"#,
            &[],
        )
        .await
        .expect("odd rows");
        let mut outcomes = Vec::new();
        for _ in 0..5 {
            let message = c
                .begin_and_receive(&q.receive, &[])
                .await
                .expect("a receive never fails on a value")
                .expect("a row");
            outcomes.push(message);
            c = commit(c).await;
        }
        assert_eq!(outcomes[0].body, b"a text body");
        assert!(outcomes[0].undecodable.is_none());
        assert_eq!(
            outcomes[1].headers, "{}",
            "headers stored as a blob of UTF-8"
        );
        assert!(outcomes[2]
            .undecodable
            .as_deref()
            .is_some_and(|why| why.contains("Headers")));
        assert!(outcomes[3]
            .undecodable
            .as_deref()
            .is_some_and(|why| why.contains("Id")));
        assert!(outcomes[4]
            .undecodable
            .as_deref()
            .is_some_and(|why| why.contains("Expires")));
        c.release();
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use crate::driver::postgres::PostgresDriver;

    fn url() -> String {
        std::env::var("NIMBUS_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
    }

    /// A driver on a fresh schema; PostgreSQL must be reachable.
    async fn fresh() -> (PostgresDriver, SchemaName) {
        // Parsed as the library parses it, TLS settings included.
        let (config, tls, pooling) =
            match crate::transport::DatabaseUrl::parse(&url()).expect("a URL") {
                crate::transport::DatabaseUrl::Postgres {
                    config,
                    tls,
                    pooling,
                    ..
                } => (*config, tls, pooling),
                #[allow(unreachable_patterns)]
                other => panic!("not a PostgreSQL URL: {other:?}"),
            };
        let connector = tls.connector().expect("a TLS connector");
        let driver = PostgresDriver::new(
            config,
            "test".into(),
            2,
            crate::driver::budget::Request {
                limit: None,
                concurrency: 0,
                default_limit: crate::driver::budget::DEFAULT_CONNECTION_LIMIT,
            },
            tls,
            pooling,
            connector,
        )
        .expect("a pool");
        let schema =
            SchemaName::new(format!("nimbus driver \"{}\"", unique())).expect("a valid name");
        (driver, schema)
    }

    async fn drop_schema(driver: &Arc<PostgresDriver>, schema: &SchemaName) {
        let mut c = Held::take(driver, DEADLINES).await.expect("a connection");
        c.run_script(
            &format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                driver.dialect().quote(schema.as_str())
            ),
            &[],
        )
        .await
        .expect("drop the test schema");
        c.release();
    }

    /// The server process behind `c`.
    async fn backend(c: &mut Held<PostgresDriver>) -> i64 {
        let rows = c
            .query("SELECT pg_backend_pid()::bigint", &[])
            .await
            .expect("the backend's pid");
        rows[0].int(0).expect("an integer").expect("a pid")
    }

    /// A call past its deadline closes its connection and every idle pooled one (they may be
    /// frozen too: a network freeze, a failover behind a virtual IP); the next call opens a new
    /// connection instead of spending a deadline on each old one.
    #[tokio::test]
    async fn a_call_past_its_deadline_closes_the_idle_connections_too() {
        let (driver, _schema) = fresh().await;
        let driver = Arc::new(driver);
        let mut first = Held::take(&driver, DEADLINES).await.expect("a connection");
        let mut second = Held::take(&driver, DEADLINES).await.expect("a connection");
        let idle = backend(&mut second).await;
        second.release();
        let short = Deadlines {
            connect: DEADLINES.connect,
            statement: std::time::Duration::from_millis(300),
        };
        first.deadlines = short;
        let error = first
            .query("SELECT pg_sleep(5)", &[])
            .await
            .expect_err("a call past its deadline");
        assert!(error.is_timeout(), "{error}");
        first.release();
        let mut next = Held::take(&driver, DEADLINES).await.expect("a connection");
        assert_ne!(
            backend(&mut next).await,
            idle,
            "the idle connection given back before the freeze was closed, not handed out"
        );
        next.release();
    }

    /// A connection that read or wrote a value past `LARGE_VALUE` is closed when given back
    /// (its buffers grew to that size and would stay so in the pool); others are pooled.
    #[tokio::test]
    async fn a_connection_that_moved_a_large_value_is_closed_not_pooled() {
        let (driver, _schema) = fresh().await;
        let driver = Arc::new(driver);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        let first = backend(&mut c).await;
        c.release();
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        assert_eq!(
            backend(&mut c).await,
            first,
            "a small query's connection is pooled"
        );
        let large = crate::driver::LARGE_VALUE + 1;
        c.query(&format!("SELECT repeat('x', {large})"), &[])
            .await
            .expect("a large value");
        c.release();
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        let second = backend(&mut c).await;
        assert_ne!(second, first, "the connection that read it was closed");
        let body = vec![b'y'; large];
        c.query(
            "SELECT length($1::bytea)::bigint",
            &[Param::Bytes(Some(&body))],
        )
        .await
        .expect("a large parameter");
        c.release();
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        assert_ne!(
            backend(&mut c).await,
            second,
            "the connection that sent it was closed"
        );
        c.release();
    }

    #[tokio::test]
    async fn every_statement_keeps_its_contract() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        contract(driver.clone(), schema.clone()).await;
        drop_schema(&driver, &schema).await;
    }

    /// Valid PostgreSQL values chrono cannot hold (`infinity`, a year past its range) are
    /// reported as undecodable, never a panic.
    #[tokio::test]
    async fn out_of_range_times_are_reported_not_panics() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        let queue = QueueName::new("Odd").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, schema.as_str(), "Odd").await;
        let table = driver.dialect().table(&schema, &queue);
        c.run_script(
            &format!(
                r#"INSERT INTO {table} ("Id", "Recoverable", "Expires", "Headers", "Body") VALUES
                    (gen_random_uuid(), TRUE, 'infinity', '{{}}', '\x00'),
                    (gen_random_uuid(), TRUE, '294000-01-01', '{{}}', '\x00')"#
            ),
            &[],
        )
        .await
        .expect("odd rows");
        for _ in 0..2 {
            let message = c
                .begin_and_receive(&q.receive, &[])
                .await
                .expect("a receive never fails on a value")
                .expect("a row");
            assert!(
                message
                    .undecodable
                    .as_deref()
                    .is_some_and(|why| why.contains("Expires")),
                "{message:?}"
            );
            c = commit(c).await;
        }
        c.release();
        drop_schema(&driver, &schema).await;
    }
    /// A commit that fails when it travels with the next receive: the error is the commit's,
    /// and the message the receive took in the transaction after it is in its queue again
    /// (its connection is discarded, which rolls it back) — none is lost, none is held.
    #[tokio::test]
    async fn a_failed_commit_gives_back_what_the_receive_after_it_took() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        assert!(
            driver.pipelines_commit(),
            "PostgreSQL sends both in one round trip"
        );
        let queue = QueueName::new("Pipelined").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, schema.as_str(), "Pipelined").await;
        let ids: Vec<Uuid> = (0..2).map(|_| Uuid::new_v4()).collect();
        for id in &ids {
            c.insert_queue_row(&q.insert, &row(*id, "{}", b"{}"))
                .await
                .expect("insert");
        }
        // A constraint checked at COMMIT, broken inside the first receive's transaction.
        let checked_at_commit = format!("{}.\"Deferred\"", driver.dialect().quote(schema.as_str()));
        c.execute(
            &format!(
                "CREATE TABLE {checked_at_commit} (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)"
            ),
            &[],
        )
        .await
        .expect("table");
        let first = c
            .begin_and_receive(&q.receive, &[])
            .await
            .expect("receive")
            .expect("a message");
        assert_eq!(first.id, ids[0].to_string());
        c.execute(
            &format!("INSERT INTO {checked_at_commit} VALUES (1), (1)"),
            &[],
        )
        .await
        .expect("deferred: accepted until COMMIT");
        let failed = c.commit_and_receive(&q.receive, &[]).await;
        let error = failed.expect_err("the commit breaks the constraint");
        assert_eq!(error.code(), Some("23505"), "{error}");
        assert!(c.connection_mut().is_none(), "the connection is discarded");
        drop(c);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        assert_eq!(
            c.count(&q.count, &[]).await.expect("count"),
            2,
            "the first rolled back with its commit, the second given back"
        );
        c.release();
        drop_schema(&driver, &schema).await;
    }

    /// A batch begun with a bound on lock waits gives up on a row another transaction holds
    /// after that long, with an error that says so, and the bound ends with its transaction:
    /// the next transaction on the pooled connection waits as the server's settings say.
    #[tokio::test]
    async fn a_batch_bounds_its_lock_waits_for_its_transaction_alone() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        let queue = QueueName::new("Bounded").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let batch = q
            .receive_batch
            .clone()
            .expect("PostgreSQL has batched receives");
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, schema.as_str(), "Bounded").await;
        let hot = format!("{}.\"Hot\"", driver.dialect().quote(schema.as_str()));
        c.run_script(
            &format!(
                "CREATE TABLE {hot} (id int PRIMARY KEY, n int); INSERT INTO {hot} VALUES (1, 0)"
            ),
            &[],
        )
        .await
        .expect("a table of business rows");
        // The other transaction on a connection of its own, outside the pool (which the other
        // tests of this process share, two connections at most).
        let (holder, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
            .await
            .expect("a second connection");
        let connection = tokio::spawn(connection);
        holder
            .batch_execute(&format!("BEGIN; UPDATE {hot} SET n = n + 1 WHERE id = 1"))
            .await
            .expect("the row is locked");
        c.begin_and_receive_many(
            &batch,
            &[Param::BigInt(Some(10))],
            Some(std::time::Duration::from_millis(50)),
        )
        .await
        .expect("a batched receive");
        let waited = c
            .execute(&format!("UPDATE {hot} SET n = n + 1 WHERE id = 1"), &[])
            .await
            .expect_err("the row is held past the bound");
        assert!(waited.is_lock_timeout(), "{waited}");
        c.run_script("ROLLBACK", &[]).await.expect("a rollback");
        holder.batch_execute("COMMIT").await.expect("commit");
        drop(holder);
        let _ = connection.await;
        for bound in [Some(std::time::Duration::from_millis(50)), None] {
            c.begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], bound)
                .await
                .expect("a batched receive");
            let wait = c
                .query("SELECT current_setting('lock_timeout')", &[])
                .await
                .expect("the setting");
            let shown = wait
                .first()
                .map(|row| row.text(0).expect("text"))
                .unwrap_or_default()
                .unwrap_or_default();
            assert_eq!(
                shown == "50ms",
                bound.is_some(),
                "lock_timeout is {shown:?}"
            );
            c = commit(c).await;
        }
        c.release();
        drop_schema(&driver, &schema).await;
    }

    /// The single receive (run once per message) stays a prepared statement, parsed and
    /// planned once per connection; only the batched receive is planned on every call.
    #[tokio::test]
    async fn the_single_receive_is_prepared_once_per_connection() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        let queue = QueueName::new("Single").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, schema.as_str(), "Single").await;
        for _ in 0..2 {
            let message = c
                .begin_and_receive(&q.receive, &[])
                .await
                .expect("a receive of an empty table");
            assert!(message.is_none());
        }
        let prepared = c
            .count(
                "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement = $1",
                &[Param::Text(Some(&q.receive))],
            )
            .await
            .expect("the connection's prepared statements");
        assert_eq!(prepared, 1, "the receive is prepared once and reused");
        c.release();
        drop_schema(&driver, &schema).await;
    }

    /// A batched receive first run while its table was empty (when PostgreSQL would cache a
    /// generic plan that joins over a sequential scan) still takes its rows without scanning
    /// the table once the table is large: it deletes by ctid, with a plan made without
    /// sequential scans. That plan is kept rather than made again on every call, and the
    /// handlers' statements after the receive plan with the usual settings.
    #[tokio::test]
    async fn a_batched_receive_never_scans_the_whole_table() {
        let (driver, schema) = fresh().await;
        let driver = Arc::new(driver);
        let queue = QueueName::new("Batched").expect("a valid name");
        let s = driver.dialect().schema_sql(&schema);
        let q = driver.dialect().queue_sql(&schema, &queue);
        let batch = q
            .receive_batch
            .clone()
            .expect("PostgreSQL has batched receives");
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        create(&mut c, &s, &q, schema.as_str(), "Batched").await;
        let table = driver.dialect().table(&schema, &queue);
        // Everything below runs in one transaction on one connection, so that the counters of
        // pg_stat_xact_user_tables are this test's alone and read without delay.
        for _ in 0..8 {
            let rows = c
                .begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], None)
                .await
                .expect("a receive of an empty table");
            assert!(rows.is_empty());
        }
        c.run_script(
            &format!(
                r#"INSERT INTO {table} ("Id", "Recoverable", "Headers", "Body")
                   SELECT gen_random_uuid(), TRUE, '{{}}', '\x00' FROM generate_series(1, 50000)"#
            ),
            &[],
        )
        .await
        .expect("50,000 rows");
        let seq_scans =
            "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = $1::text::regclass";
        let before = c
            .count(seq_scans, &[Param::Text(Some(&table))])
            .await
            .expect("the table's scans");
        for _ in 0..3 {
            let rows = c
                .begin_and_receive_many(&batch, &[Param::BigInt(Some(10))], None)
                .await
                .expect("a batched receive");
            assert_eq!(rows.len(), 10);
        }
        let after = c
            .count(seq_scans, &[Param::Text(Some(&table))])
            .await
            .expect("the table's scans");
        assert_eq!(
            after - before,
            0,
            "a batched receive scanned the whole table instead of taking its rows by index"
        );
        let generic_plans = c
            .count(
                "SELECT COALESCE(SUM(generic_plans), 0)::bigint FROM pg_prepared_statements \
                 WHERE statement = $1",
                &[Param::Text(Some(&batch))],
            )
            .await
            .expect("the connection's prepared statements");
        assert!(
            generic_plans >= 10,
            "the batched receive was planned again on {} of its 11 calls",
            11 - generic_plans
        );
        let restored = c
            .count(
                "SELECT COUNT(*) FROM pg_settings WHERE name IN ('enable_seqscan', \
                 'plan_cache_mode') AND setting IN ('on', 'auto')",
                &[],
            )
            .await
            .expect("the settings");
        assert_eq!(
            restored, 2,
            "the receive left its planner settings to the statements after it"
        );
        // Committed before it goes back: a pooled connection left in a transaction would hand
        // that transaction to the next test that takes it.
        commit(c).await.release();
        drop_schema(&driver, &schema).await;
    }
}

#[cfg(feature = "sqlserver")]
mod sqlserver {
    use super::*;
    use crate::driver::sqlserver::{parse_connection_string, SqlServerDriver};

    #[tokio::test]
    #[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-bus --all-features contract -- --include-ignored"]
    async fn every_statement_keeps_its_contract() {
        let connection = std::env::var("NIMBUS_SQLSERVER")
            .expect("NIMBUS_SQLSERVER must hold an ADO.NET connection string for this test");
        let settings = parse_connection_string(&connection).expect("a connection string");
        let driver = Arc::new(
            SqlServerDriver::new(
                settings,
                2,
                crate::driver::budget::Request {
                    limit: None,
                    concurrency: 0,
                    default_limit: crate::driver::budget::DEFAULT_CONNECTION_LIMIT,
                },
            )
            .expect("a pool"),
        );
        let schema = SchemaName::new(format!("nimbus_driver_{}", unique())).expect("a name");
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        c.run_script(
            &format!("CREATE SCHEMA {}", driver.dialect().quote(schema.as_str())),
            &[],
        )
        .await
        .expect("create the test schema");
        c.release();
        contract(driver.clone(), schema.clone()).await;
        // Each table dropped by its name quoted here: Babelfish's QUOTENAME quotes a name with
        // ' differently from SQL Server.
        let mut c = Held::take(&driver, DEADLINES).await.expect("a connection");
        let dialect = driver.dialect();
        let tables = c
            .query(
                "SELECT [name] FROM sys.tables WHERE [schema_id] = SCHEMA_ID(@P1)",
                &[Param::Text(Some(schema.as_str()))],
            )
            .await
            .expect("list the test schema's tables");
        for row in &tables {
            let table = row.text(0).ok().flatten().expect("a table name");
            c.run_script(
                &format!(
                    "DROP TABLE {}.{}",
                    dialect.quote(schema.as_str()),
                    dialect.quote(&table)
                ),
                &[],
            )
            .await
            .expect("drop a table of the test schema");
        }
        c.run_script(
            &format!("DROP SCHEMA {}", dialect.quote(schema.as_str())),
            &[],
        )
        .await
        .expect("drop the test schema");
        c.release();
    }
}
