//! Batched receives (`receive_batch(n)`): a receiver takes up to n messages in one transaction
//! and handles each under its own savepoint. Each message's handler SQL, sends, retry or dead
//! letter stay with it; the batch commits once; a killed process returns the whole batch.

use nimbus::StorageLayout;
use nimbus_conformance::batch::{
    a_backlog_of_fast_messages_is_received_several_at_a_time,
    each_message_of_a_batch_keeps_its_own_outcome,
    handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock,
    receive_batch_one_takes_one_message_per_receive, slow_messages_are_received_one_at_a_time,
};
use nimbus_conformance::{Kind, Setup};

const SQLITE: Setup = Setup {
    kind: Kind::Sqlite,
    layout: StorageLayout::TablePerQueue,
};
const POSTGRES: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::TablePerQueue,
};
const POSTGRES_SHARED: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::SharedTable,
};

#[actix_rt::test]
async fn a_backlog_of_fast_messages_is_received_several_at_a_time_on_sqlite() {
    a_backlog_of_fast_messages_is_received_several_at_a_time(SQLITE).await;
}

#[actix_rt::test]
async fn a_backlog_of_fast_messages_is_received_several_at_a_time_on_postgres() {
    a_backlog_of_fast_messages_is_received_several_at_a_time(POSTGRES).await;
}

#[actix_rt::test]
async fn a_backlog_of_fast_messages_is_received_several_at_a_time_in_the_shared_table_on_postgres()
{
    a_backlog_of_fast_messages_is_received_several_at_a_time(POSTGRES_SHARED).await;
}

#[actix_rt::test]
async fn slow_messages_are_received_one_at_a_time_on_sqlite() {
    slow_messages_are_received_one_at_a_time(SQLITE).await;
}

#[actix_rt::test]
async fn slow_messages_are_received_one_at_a_time_on_postgres() {
    slow_messages_are_received_one_at_a_time(POSTGRES).await;
}

#[actix_rt::test]
async fn receive_batch_one_takes_one_message_per_receive_on_sqlite() {
    receive_batch_one_takes_one_message_per_receive(SQLITE).await;
}

#[actix_rt::test]
async fn receive_batch_one_takes_one_message_per_receive_on_postgres() {
    receive_batch_one_takes_one_message_per_receive(POSTGRES_SHARED).await;
}

#[actix_rt::test]
async fn each_message_of_a_batch_keeps_its_own_outcome_on_sqlite() {
    each_message_of_a_batch_keeps_its_own_outcome(Setup {
        kind: Kind::Sqlite,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
}

#[actix_rt::test]
async fn each_message_of_a_batch_keeps_its_own_outcome_on_postgres() {
    each_message_of_a_batch_keeps_its_own_outcome(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
}

#[actix_rt::test]
async fn each_message_of_a_batch_keeps_its_own_outcome_in_the_shared_table_on_postgres() {
    each_message_of_a_batch_keeps_its_own_outcome(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::SharedTable,
    })
    .await;
}

#[test]
fn a_killed_batch_worker_leaves_business_data_exactly_once_on_postgres() {
    nimbus_conformance::suite::sigkill_keeps_business_data_exactly_once_with(
        Setup {
            kind: Kind::Postgres,
            layout: StorageLayout::TablePerQueue,
        },
        env!("CARGO_BIN_EXE_crash_worker"),
        10,
    );
}

#[test]
fn a_killed_batch_worker_leaves_business_data_exactly_once_on_sqlite() {
    nimbus_conformance::suite::sigkill_keeps_business_data_exactly_once_with(
        Setup {
            kind: Kind::Sqlite,
            layout: StorageLayout::SharedTable,
        },
        env!("CARGO_BIN_EXE_crash_worker"),
        10,
    );
}

mod counted_after_commit {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout, Unrecoverable};
    use nimbus_conformance::suite::Numbered;
    use nimbus_conformance::{unique, wait_for, Kind, Setup, TestDatabase};

    /// Message 1 is unrecoverable (a dead letter inside the batch); message 2 writes a row whose
    /// deferred foreign key fails at COMMIT, so the batch never commits.
    #[derive(Clone)]
    struct FailsAtCommit {
        table: String,
        commits_tried: Arc<AtomicUsize>,
    }

    impl Handler<Numbered> for FailsAtCommit {
        async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
            match m.n {
                1 => Err(Unrecoverable::new("not for this endpoint").into()),
                _ => {
                    self.commits_tried.fetch_add(1, Ordering::SeqCst);
                    let sql = format!("INSERT INTO {} (parent) VALUES (999)", self.table);
                    ctx.postgres().await?.execute(&sql, &[]).await?;
                    Ok(())
                }
            }
        }
    }

    /// What a batch counted (a dead letter, a failed attempt) and logged did not happen when
    /// the batch rolls back: counters move only after the batch's commit.
    #[actix_rt::test]
    async fn a_rolled_back_batch_counts_no_dead_letter() {
        let db = TestDatabase::new(Setup {
            kind: Kind::Postgres,
            layout: StorageLayout::TablePerQueue,
        })
        .await;
        let (parents, children) = (db.table("parents"), db.table("children"));
        db.execute(&format!(
            "CREATE TABLE {parents} (id int PRIMARY KEY); \
             CREATE TABLE {children} (parent int REFERENCES {parents} (id) \
             DEFERRABLE INITIALLY DEFERRED)"
        ))
        .await;
        let queue = unique("RolledBack");
        let handler = FailsAtCommit {
            table: children,
            commits_tried: Arc::default(),
        };
        let sender = db
            .builder("RolledBackSender", "1")
            .create_queues_on_send(true)
            .route::<Numbered>(&queue)
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        sender
            .send_batch([Numbered { n: 1 }, Numbered { n: 2 }])
            .await
            .unwrap();
        let bus = db
            .builder(&queue, "rolled-back-1")
            .receive_batch(10)
            .handler(handler.clone())
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        wait_for(
            "the batch was tried and rolled back twice",
            Duration::from_secs(60),
            || handler.commits_tried.load(Ordering::SeqCst) >= 3,
        )
        .await;
        bus.stop().await.unwrap();
        sender.stop().await.unwrap();
        let metrics = bus.metrics();
        assert_eq!(
            db.dead_letters().await.len(),
            0,
            "no dead letter was committed"
        );
        assert_eq!(metrics.dead_lettered, 0, "so none is counted");
        assert_eq!(metrics.failed, 0, "nor the failed attempt that led to it");
        assert_eq!(metrics.handled, 0);
        assert_eq!(db.count(&queue).await, 2, "both messages are still queued");
    }
}

#[actix_rt::test]
async fn handlers_with_statements_of_their_own_are_batched_on_sqlite() {
    handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock(SQLITE).await;
}

#[actix_rt::test]
async fn handlers_with_statements_of_their_own_are_batched_on_postgres() {
    handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock(POSTGRES).await;
}
