//! Pausing a queue (`nimbus pause`, [`nimbus::admin::Database::pause_queue`]) in the
//! conformance suite: a running endpoint stops taking the queue's messages, keeps accepting
//! sends and keeps its depth current; a pause survives a restart; resuming lets the messages
//! through. Part of [`crate::suite`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use nimbus::{Handler, HandlerContext, HandlerError};

use crate::db::{Setup, TestDatabase};
use crate::suite::{sender, wait_until, Numbered};

/// Counts what it handles.
#[derive(Clone, Default)]
struct Counting {
    handled: Arc<AtomicUsize>,
}

#[nimbus::handler]
impl Handler<Numbered> for Counting {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Starts the `Paused` endpoint with `handler`.
async fn start(db: &TestDatabase, handler: &Counting, instance: &str) -> nimbus::Bus {
    db.builder("Paused", instance)
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

/// Waits until `bus` has peeked `Paused` twice more and seen at least `depth` messages there:
/// it looked at the queue while paused, with the messages in it, and received none of them.
async fn wait_for_paused_peeks(bus: &nimbus::Bus, depth: u64) {
    let peeks = bus.metrics().peeks;
    wait_until(
        "the paused queue is peeked twice more with its messages in it",
        || async {
            let m = bus.metrics();
            m.peeks >= peeks + 2 && m.queue_depths.get("Paused").copied().unwrap_or(0) >= depth
        },
    )
    .await;
}

pub async fn a_paused_queue_stops_receiving_until_resumed(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let handler = Counting::default();
    let bus = start(&db, &handler, "paused-1").await;
    let sender = sender(&db, "Paused").await;
    sender.send(Numbered { n: 0 }).await.unwrap();
    wait_until("the first message is handled", || async {
        handler.handled.load(Ordering::SeqCst) == 1
    })
    .await;

    assert!(db
        .admin()
        .pause_queue("Paused", "the conformance suite")
        .await
        .unwrap());
    assert!(
        !db.admin().pause_queue("Paused", "again").await.unwrap(),
        "a second pause changes nothing"
    );
    let listed = db.admin().paused_queues().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].name.as_str(), listed[0].paused_by.as_str()),
        ("Paused", "the conformance suite"),
        "the first pause's author stays"
    );
    wait_until("the endpoint sees the pause", || async {
        bus.metrics().paused_queues.contains("Paused")
    })
    .await;

    // Sends still go in; nothing is received.
    for n in 1..=5 {
        sender.send(Numbered { n }).await.unwrap();
    }
    wait_for_paused_peeks(&bus, 5).await;
    assert_eq!(
        handler.handled.load(Ordering::SeqCst),
        1,
        "nothing received while paused"
    );
    let queues = db.admin().queues().await.unwrap();
    // (Babelfish lists catalog names in lower case.)
    let paused = queues
        .iter()
        .find(|q| q.name.eq_ignore_ascii_case("Paused"))
        .unwrap();
    assert!(paused.paused, "the queue is listed as paused: {paused:?}");
    assert_eq!(
        paused.depth, 5,
        "the paused queue keeps every message sent while paused: {paused:?}"
    );

    // A pause is kept in the database: a restarted instance does not receive either.
    bus.stop().await.unwrap();
    let bus = start(&db, &handler, "paused-2").await;
    assert!(
        bus.metrics().paused_queues.contains("Paused"),
        "a queue paused before start is paused from the start"
    );
    wait_for_paused_peeks(&bus, 5).await;
    assert_eq!(
        handler.handled.load(Ordering::SeqCst),
        1,
        "nothing received after a restart"
    );

    assert!(db.admin().resume_queue("Paused").await.unwrap());
    assert!(
        !db.admin().resume_queue("Paused").await.unwrap(),
        "resumed already"
    );
    wait_until("every message is handled after the resume", || async {
        handler.handled.load(Ordering::SeqCst) == 6
    })
    .await;
    assert!(!bus.metrics().paused_queues.contains("Paused"));
    // The handler counts before its receive commits: the last row goes with that commit.
    wait_until(
        "the queue is empty once the last receive commits",
        || async { db.count("Paused").await == 0 },
    )
    .await;

    let unknown = db.admin().pause_queue("Pasued", "typo").await.unwrap_err();
    assert!(
        matches!(unknown, nimbus::NimbusError::UnknownQueue { .. }),
        "{unknown}"
    );
    bus.stop().await.unwrap();
    sender.stop().await.unwrap();
}
