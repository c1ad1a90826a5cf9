//! Dead-letter retention on every database and layout: a receiving endpoint deletes the dead
//! letters that failed longer ago than `dead_letter_retention` and keeps the newer ones; with
//! `None` it keeps them all.

use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout, Unrecoverable};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

struct Declines;

impl Handler<Numbered> for Declines {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Err(Unrecoverable::new(format!("declined {}", m.n)).into())
    }
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn old_dead_letters_expire(setup: Setup) {
    nimbus_conformance::capture_logs();
    let db = TestDatabase::new(setup).await;
    // Kept for ever: two dead letters.
    let keeper = db
        .builder("Retained", "retained-1")
        .dead_letter_retention(None)
        .route::<Numbered>("Retained")
        .handler(Declines)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    keeper.send(Numbered { n: 1 }).await.unwrap();
    keeper.send(Numbered { n: 2 }).await.unwrap();
    wait_for("both messages are dead letters", async || {
        db.dead_letters().await.len() == 2
    })
    .await;
    let letters = db.dead_letters().await;
    let (old, new) = (&letters[0].message_id, &letters[1].message_id);
    db.age_dead_letter(old, 40).await;
    keeper.stop().await.unwrap();
    // A restart without retention keeps the 40-day-old one.
    let keeper = db
        .builder("Retained", "retained-1")
        .dead_letter_retention(None)
        .handler(Declines)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    keeper.sweep_idle_subscriptions().await.unwrap();
    assert_eq!(
        db.dead_letters().await.len(),
        2,
        "None keeps every dead letter"
    );
    keeper.stop().await.unwrap();

    // The default retention (30 days) deletes it at start, and keeps the new one.
    let bus = db
        .builder("Retained", "retained-1")
        .handler(Declines)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_for("the old dead letter is deleted", async || {
        db.dead_letters().await.len() == 1
    })
    .await;
    let left = db.dead_letters().await;
    assert_eq!(&left[0].message_id, new, "the newer dead letter stays");
    assert_eq!(bus.metrics().handled, 0);
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn old_dead_letters_expire_on_sqlite() {
    old_dead_letters_expire(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
    old_dead_letters_expire(Setup::new(Kind::Sqlite, StorageLayout::SharedTable)).await;
}

#[actix_rt::test]
async fn old_dead_letters_expire_on_postgres() {
    old_dead_letters_expire(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    old_dead_letters_expire(Setup::new(Kind::Postgres, StorageLayout::SharedTable)).await;
    old_dead_letters_expire(Setup::new(
        Kind::Postgres,
        StorageLayout::NServiceBusPostgreSql,
    ))
    .await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test retention -- --include-ignored"]
async fn old_dead_letters_expire_on_sql_server() {
    old_dead_letters_expire(Setup::new(Kind::SqlServer, StorageLayout::TablePerQueue)).await;
    old_dead_letters_expire(Setup::new(Kind::SqlServer, StorageLayout::SharedTable)).await;
}
