//! Queue-table maintenance on PostgreSQL: an endpoint reclaims the dead rows its receives leave
//! (VACUUM) where the server's autovacuum does not look after the table, and reports it. (Where
//! autovacuum is on and keeps up the endpoint leaves the work to it: the unit tests of
//! `table_maintenance::decide` cover that, since a test cannot turn a server's autovacuum on.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>);

impl Handler<Numbered> for Count {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn dead_rows_are_reclaimed(layout: StorageLayout) {
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout,
    })
    .await;
    let queue = format!("Churn{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let handled = Count::default();
    let bus = db
        .builder(&queue, "churn-1")
        .concurrency(8)
        .table_maintenance_interval(Duration::from_millis(500))
        .handler(handled.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let table = if layout == StorageLayout::SharedTable {
        db.table("NimbusMessages")
    } else {
        db.table(&queue)
    };
    db.execute(&format!(
        "ALTER TABLE {table} SET (autovacuum_enabled = false)"
    ))
    .await;
    // 1,500 received messages leave 1,500 dead rows, past the 1,000 that start a vacuum.
    for chunk in (0..1_500).collect::<Vec<u32>>().chunks(500) {
        let batch: Vec<Numbered> = chunk.iter().map(|&n| Numbered { n }).collect();
        let mut sends = bus.in_transaction();
        for m in batch {
            sends.send_to(&queue, m).unwrap();
        }
        let mut client = nimbus_conformance::db::pg_client().await;
        let tx = client.transaction().await.unwrap();
        sends.write_postgres(&tx).await.unwrap();
        tx.commit().await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    while handled.0.load(Ordering::SeqCst) < 1_500 || bus.metrics().table_vacuums == 0 {
        assert!(
            Instant::now() < deadline,
            "the queue table is vacuumed once its dead rows pass 1,000 (handled {}, vacuums {})",
            handled.0.load(Ordering::SeqCst),
            bus.metrics().table_vacuums
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bus.stop().await.unwrap();
    let vacuumed = db
        .scalar(
            "SELECT COUNT(*) FROM pg_stat_user_tables WHERE relid = to_regclass($1) \
             AND last_vacuum IS NOT NULL",
            &[table.as_str()],
        )
        .await;
    assert_eq!(vacuumed, 1, "PostgreSQL records the vacuum of {table}");
}

#[actix_rt::test]
async fn dead_rows_of_a_queue_table_are_reclaimed_on_postgres() {
    dead_rows_are_reclaimed(StorageLayout::TablePerQueue).await;
}

#[actix_rt::test]
async fn dead_rows_of_the_shared_table_are_reclaimed_on_postgres() {
    dead_rows_are_reclaimed(StorageLayout::SharedTable).await;
}
