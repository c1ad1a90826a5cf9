//! A send to a queue whose name belongs to a table of another shape (a business table beside
//! the queues) says so, naming the columns it lacks, instead of "queue … does not exist"; with
//! `create_on_send` too, and nothing is written to that table.

use nimbus::StorageLayout;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

async fn a_send_to_a_business_table_names_what_it_lacks(setup: Setup) {
    let db = TestDatabase::new(setup).await;
    let table = db.table("Ledger");
    let int = match setup.kind {
        Kind::Sqlite => "INTEGER",
        _ => "int",
    };
    db.execute(&format!(
        "CREATE TABLE {table} (EntryNo {int} NOT NULL, Amount {int} NOT NULL)"
    ))
    .await;
    for create_on_send in [false, true] {
        let bus = db
            .builder("Sender", "sender-1")
            .create_queues_on_send(create_on_send)
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        let error = bus
            .send_to("Ledger", Numbered { n: 1 })
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("exists but is not a queue table")
                && error.contains("Id, Headers, Body, RowVersion")
                && error.to_lowercase().contains("entryno")
                && !error.contains("does not exist"),
            "{error}"
        );
        bus.stop().await.unwrap();
    }
    let rows = db
        .scalar(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .await;
    assert_eq!(rows, 0, "nothing was written to the business table");
}

#[actix_rt::test]
async fn a_send_to_a_business_table_names_what_it_lacks_on_sqlite() {
    a_send_to_a_business_table_names_what_it_lacks(Setup::new(
        Kind::Sqlite,
        StorageLayout::TablePerQueue,
    ))
    .await;
}

#[actix_rt::test]
async fn a_send_to_a_business_table_names_what_it_lacks_on_postgres() {
    a_send_to_a_business_table_names_what_it_lacks(Setup::new(
        Kind::Postgres,
        StorageLayout::TablePerQueue,
    ))
    .await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test misshapen_queue -- --include-ignored"]
async fn a_send_to_a_business_table_names_what_it_lacks_on_sql_server() {
    a_send_to_a_business_table_names_what_it_lacks(Setup::new(
        Kind::SqlServer,
        StorageLayout::TablePerQueue,
    ))
    .await;
}
