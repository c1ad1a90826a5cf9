//! Monitoring reports on every database and layout: a receiving bus writes what it handled,
//! failed and dead-lettered per queue into `NimbusMonitoring`, with processing and critical
//! times and the queue length; `Database::monitoring` combines them into the console's series;
//! reports past `monitoring_retention` are deleted; `None` writes none.

use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout, Unrecoverable};
use nimbus_conformance::eventually;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

/// Handles every message in a few milliseconds, but declines those numbered 1000 and up.
struct Works;

impl Handler<Numbered> for Works {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n >= 1000 {
            return Err(Unrecoverable::new(format!("declined {}", m.n)).into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok(())
    }
}

async fn reports_reach_the_charts(setup: Setup) {
    nimbus_conformance::capture_logs();
    let db = TestDatabase::new(setup).await;
    let window = Duration::from_secs(900);
    let bus = db
        .builder("Monitored", "monitored-1")
        .monitoring_interval(Some(Duration::from_secs(1)))
        .route::<Numbered>("Monitored")
        .handler(Works)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..20 {
        bus.send(Numbered { n }).await.unwrap();
    }
    for n in [1000, 1001] {
        bus.send(Numbered { n }).await.unwrap();
    }
    eventually(
        "the reports hold 20 handled and 2 dead-lettered",
        async || {
            let view = db.monitoring(window).await;
            view.queues.iter().any(|q| {
                q.name == "Monitored" && q.totals.handled == 20 && q.totals.dead_lettered == 2
            })
        },
    )
    .await;
    let view = db.monitoring(window).await;
    assert_eq!(view.window, window);
    assert_eq!(view.step, Duration::from_secs(15));
    let queue = view
        .queues
        .iter()
        .find(|q| q.name == "Monitored")
        .expect("the input queue's series");
    assert_eq!(queue.instances, ["monitored-1"]);
    assert_eq!(queue.related, ["Monitored"]);
    assert_eq!(queue.totals.failed, 2, "{:?}", queue.totals);
    assert!(queue.totals.handled_per_second > 0.0);
    let p50 = queue.totals.processing_p50.expect("processing times");
    assert!(p50 >= Duration::from_millis(2), "{p50:?}");
    let critical = queue.totals.critical_p95.expect("critical times");
    assert!(critical >= p50, "{critical:?} < {p50:?}");
    assert!(queue.totals.queue_length.is_some());
    let drawn: Vec<_> = queue.points.iter().flatten().collect();
    assert!(!drawn.is_empty() && drawn.iter().map(|p| p.handled).sum::<u64>() == 20);
    assert_eq!(queue.points.len(), 60);
    let endpoint = view
        .endpoints
        .iter()
        .find(|e| e.name == "Monitored")
        .expect("the endpoint's series");
    assert!(endpoint.totals.handled >= 20);
    assert!(endpoint.related.iter().any(|q| q == "Monitored"));
    bus.stop().await.unwrap();

    // Reports past the retention period are deleted by the next start's sweep.
    assert!(db.monitoring_rows().await > 0);
    db.age_monitoring_reports(7).await;
    let bus = db
        .builder("Monitored", "monitored-1")
        .monitoring_interval(Some(Duration::from_secs(3600)))
        .handler(Works)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("the aged reports are deleted", async || {
        db.monitoring_rows().await == 0
    })
    .await;
    bus.stop().await.unwrap();

    // `None` writes no report.
    let bus = db
        .builder("Monitored", "monitored-1")
        .monitoring_interval(None)
        .route::<Numbered>("Monitored")
        .handler(Works)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(Numbered { n: 1 }).await.unwrap();
    eventually("the message is handled", async || {
        bus.metrics().handled == 1
    })
    .await;
    // The bus ran several of the shortest intervals a report could have (1 s) meanwhile.
    let ran = std::time::Instant::now();
    eventually("three seconds pass", async || {
        ran.elapsed() >= Duration::from_secs(3)
    })
    .await;
    assert_eq!(
        db.monitoring_rows().await,
        0,
        "monitoring off writes nothing"
    );
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn reports_reach_the_charts_on_sqlite() {
    reports_reach_the_charts(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
    reports_reach_the_charts(Setup::new(Kind::Sqlite, StorageLayout::SharedTable)).await;
}

#[actix_rt::test]
async fn reports_reach_the_charts_on_postgres() {
    reports_reach_the_charts(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    reports_reach_the_charts(Setup::new(Kind::Postgres, StorageLayout::SharedTable)).await;
    reports_reach_the_charts(Setup::new(
        Kind::Postgres,
        StorageLayout::NServiceBusPostgreSql,
    ))
    .await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test monitoring -- --include-ignored"]
async fn reports_reach_the_charts_on_sql_server() {
    reports_reach_the_charts(Setup::new(Kind::SqlServer, StorageLayout::TablePerQueue)).await;
    reports_reach_the_charts(Setup::new(Kind::SqlServer, StorageLayout::SharedTable)).await;
}
