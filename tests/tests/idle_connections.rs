//! An endpoint that went quiet closes the pooled connections a busy spell opened
//! (`connection_idle_timeout`), counted by the server itself (`pg_stat_activity`), and keeps
//! working: the next message opens what it needs.

use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError};
use nimbus_conformance::eventually;
use nimbus_conformance::suite::Numbered;

struct Slowish;

impl Handler<Numbered> for Slowish {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(())
    }
}

#[actix_rt::test]
async fn a_quiet_endpoint_closes_the_connections_a_busy_spell_opened_on_postgres() {
    let base = nimbus_conformance::db::postgres_url();
    let sessions = nimbus_conformance::db::NamedSessions::new(&base, "nimbus_idle").await;
    let (name, url) = (sessions.name().to_string(), sessions.url.clone());
    let admin = nimbus::admin::Database::connect(&base).await.unwrap();
    let held = async || sessions.count().await;
    let queue = format!("Idle{}", &name[12..]);
    let bus = nimbus::Bus::builder()
        .names(&queue, "idle-1")
        .database_url(&url)
        .schema(&name)
        .concurrency(8)
        .connection_idle_timeout(Duration::from_secs(2))
        .route::<Numbered>(&queue)
        .handler(Slowish)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    futures::future::join_all((0..400).map(|n| bus.send(Numbered { n })))
        .await
        .into_iter()
        .for_each(|sent| sent.unwrap());
    eventually("400 handled", async || bus.metrics().handled == 400).await;
    let busy = held().await;
    assert!(
        busy >= 4,
        "a busy spell with 8 receivers opened {busy} connections"
    );
    eventually(
        "the quiet endpoint closed what the busy spell opened",
        async || held().await <= 3,
    )
    .await;
    // It still works: the next message takes what it needs.
    bus.send(Numbered { n: 400 }).await.unwrap();
    eventually("the next message is handled", async || {
        bus.metrics().handled == 401
    })
    .await;
    bus.stop().await.unwrap();
    admin
        .execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
        .await
        .unwrap();
}
