//! Batched receives (`receive_batch(n)`): a receiver takes up to n messages in one transaction
//! and handles each under its own savepoint. Each message's handler SQL, sends, retry or dead
//! letter stay with it; the batch commits once; a killed process returns the whole batch.

use nimbus::StorageLayout;
use nimbus_conformance::batch::each_message_of_a_batch_keeps_its_own_outcome;
use nimbus_conformance::{Kind, Setup};

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
