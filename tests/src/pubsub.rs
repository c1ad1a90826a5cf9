//! Publish/subscribe lifecycle and request/response in the conformance suite: competing and
//! multicast events, heartbeats and the idle sweep, the `LastSeenAt` upgrade, requests. Part of
//! [`crate::suite`].

use std::time::Duration;

use nimbus::{Command, Handler, HandlerContext, HandlerError, Message, NimbusError};
use serde::{Deserialize, Serialize};

use crate::db::{Setup, TestDatabase};
use crate::suite::{count_of, seen_list, sender, wait_until, Recorder, SomethingHappened};

async fn instance(
    db: &TestDatabase,
    app: &str,
    instance: &str,
    multicast: bool,
    seen: &std::sync::Arc<std::sync::Mutex<Vec<(String, u32)>>>,
) -> nimbus::Bus {
    let recorder = Recorder::new(instance, seen);
    let builder = db.builder(app, instance);
    let builder = if multicast {
        builder.multicast_handler::<SomethingHappened, _>(recorder)
    } else {
        builder.handler::<SomethingHappened, _>(recorder)
    };
    builder.build().unwrap().start().await.unwrap()
}

fn per_instance(
    seen: &std::sync::Arc<std::sync::Mutex<Vec<(String, u32)>>>,
    who: &str,
) -> Vec<u32> {
    let mut got: Vec<u32> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(w, _)| w == who)
        .map(|(_, n)| *n)
        .collect();
    got.sort();
    got
}

pub async fn multicast_events_reach_every_instance(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let a = instance(&db, "Dashboard", "d-1", true, &seen).await;
    let b = instance(&db, "Dashboard", "d-2", true, &seen).await;
    let publisher = sender(&db, "Nowhere").await;
    for n in 0..5 {
        publisher.publish(SomethingHappened { n }).await.unwrap();
    }
    wait_until("each instance handles all five", || async {
        count_of(&seen) == 10
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.stop().await.unwrap();
    b.stop().await.unwrap();
    assert_eq!(per_instance(&seen, "d-1"), vec![0, 1, 2, 3, 4]);
    assert_eq!(per_instance(&seen, "d-2"), vec![0, 1, 2, 3, 4]);
    assert!(db.queue_exists("Dashboard.d-1").await && db.queue_exists("Dashboard.d-2").await);
}

pub async fn competing_events_reach_one_instance(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let a = instance(&db, "Ledger", "l-1", false, &seen).await;
    let b = instance(&db, "Ledger", "l-2", false, &seen).await;
    let publisher = sender(&db, "Nowhere").await;
    for n in 0..20 {
        publisher.publish(SomethingHappened { n }).await.unwrap();
    }
    wait_until("all twenty are handled", || async { count_of(&seen) >= 20 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.stop().await.unwrap();
    b.stop().await.unwrap();
    let mut all: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    all.sort();
    assert_eq!(
        all,
        (0..20).collect::<Vec<_>>(),
        "each event handled once by the application"
    );
    assert!(
        !db.queue_exists("Ledger.l-1").await,
        "competing handlers need no instance queue"
    );
}

pub async fn lapsed_instance_is_swept_with_its_queue(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let live = instance(&db, "Screens", "s-1", true, &seen).await;
    let gone = instance(&db, "Screens", "s-2", true, &seen).await;
    // s-2 dies without a word; an event still reaches its queue while its heartbeat is fresh.
    gone.stop().await.unwrap();
    let publisher = sender(&db, "Nowhere").await;
    publisher.publish(SomethingHappened { n: 1 }).await.unwrap();
    wait_until("s-1 handles it", || async { count_of(&seen) == 1 }).await;
    assert_eq!(
        db.count("Screens.s-2").await,
        1,
        "queued for the stopped instance"
    );
    // Its heartbeat lapses (moved back ten days, by SQL, instead of waiting four).
    db.age_subscriptions("Screens.s-2").await;
    // Publishers skip the lapsed subscription at once, before any sweep.
    publisher.publish(SomethingHappened { n: 2 }).await.unwrap();
    wait_until("s-1 handles the second", || async { count_of(&seen) == 2 }).await;
    assert_eq!(
        db.count("Screens.s-2").await,
        1,
        "nothing more written for s-2"
    );
    let report = live.sweep_idle_subscriptions().await.unwrap();
    assert_eq!(report.queues_dropped, vec!["Screens.s-2".to_string()]);
    assert!(report.subscriptions.contains(&(
        "Conformance.SomethingHappened".to_string(),
        "Screens.s-2".to_string()
    )));
    assert!(
        !db.queue_exists("Screens.s-2").await,
        "the queue went with its messages"
    );
    assert!(
        db.queue_exists("Screens.s-1").await,
        "the live instance keeps its queue"
    );
    // The live instance is untouched and still gets events.
    publisher.publish(SomethingHappened { n: 3 }).await.unwrap();
    wait_until("s-1 handles the third", || async { count_of(&seen) == 3 }).await;
    live.stop().await.unwrap();
    assert_eq!(per_instance(&seen, "s-2"), Vec::<u32>::new());
}

pub async fn concurrent_sweeps_do_not_fail(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let a = instance(&db, "Sweeper", "a", true, &seen).await;
    let b = instance(&db, "Sweeper", "b", true, &seen).await;
    let mut gone = Vec::new();
    for i in 0..3 {
        gone.push(instance(&db, "Kiosk", &format!("k-{i}"), true, &seen).await);
    }
    for bus in &gone {
        bus.stop().await.unwrap();
    }
    for i in 0..3 {
        db.age_subscriptions(&format!("Kiosk.k-{i}")).await;
    }
    let (ra, rb) = futures::join!(a.sweep_idle_subscriptions(), b.sweep_idle_subscriptions());
    let (ra, rb) = (ra.expect("sweep a"), rb.expect("sweep b"));
    a.stop().await.unwrap();
    b.stop().await.unwrap();
    // Whoever swept a row dropped its queue; no row or queue was handled twice.
    let mut dropped = [ra.queues_dropped, rb.queues_dropped].concat();
    let before = dropped.len();
    dropped.sort();
    dropped.dedup();
    assert_eq!(dropped.len(), before, "each queue dropped once");
    let swept = [ra.subscriptions, rb.subscriptions].concat();
    let unique: std::collections::HashSet<_> = swept.iter().collect();
    assert_eq!(unique.len(), swept.len(), "each subscription deleted once");
    for i in 0..3 {
        assert!(
            !db.queue_exists(&format!("Kiosk.k-{i}")).await,
            "k-{i} is gone"
        );
    }
    assert!(db.queue_exists("Sweeper.a").await && db.queue_exists("Sweeper.b").await);
}

/// A request.
#[derive(Debug, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.GetQuote")]
pub struct GetQuote {
    pub sku: String,
    pub quantity: u32,
}

/// Its reply.
#[derive(Debug, PartialEq, Serialize, Deserialize, Message)]
#[nimbus(type_name = "Conformance.Quote")]
pub struct Quote {
    pub sku: String,
    pub cents: u64,
    pub correlation_id: String,
}

struct Pricing;

#[nimbus::handler]
impl Handler<GetQuote> for Pricing {
    async fn handle(&self, m: GetQuote, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let correlation_id = ctx
            .headers()
            .get(nimbus::headers::CORRELATION_ID)
            .cloned()
            .unwrap_or_default();
        ctx.reply(Quote {
            sku: m.sku,
            cents: 150 * u64::from(m.quantity),
            correlation_id,
        })?;
        Ok(())
    }
}

pub async fn request_gets_its_reply(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let pricing = db
        .builder("Pricing", "pricing-1")
        .handler(Pricing)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let shop = db
        .builder("Shop", "shop-1")
        .enable_requests()
        .route::<GetQuote>("Pricing")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let (a, b) = futures::join!(
        shop.request::<_, Quote>(GetQuote {
            sku: "duck".into(),
            quantity: 3
        }),
        shop.request::<_, Quote>(GetQuote {
            sku: "goose".into(),
            quantity: 1
        }),
    );
    let (a, b) = (a.expect("a reply"), b.expect("a reply"));
    assert_eq!((a.sku.as_str(), a.cents), ("duck", 450));
    assert_eq!((b.sku.as_str(), b.cents), ("goose", 150));
    assert_ne!(
        a.correlation_id, b.correlation_id,
        "each reply matched to its request"
    );
    shop.stop().await.unwrap();
    pricing.stop().await.unwrap();
    assert_eq!(db.count("Shop.shop-1").await, 0, "replies consumed");
    assert!(db.dead_letters().await.is_empty());
}

pub async fn request_times_out(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let shop = db
        .builder("Shop", "shop-2")
        .enable_requests()
        .request_timeout(Duration::from_millis(500))
        // The queue exists, but nobody answers from it.
        .create_queues_on_send(true)
        .route::<GetQuote>("NobodyAnswers")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let result = shop
        .request::<_, Quote>(GetQuote {
            sku: "duck".into(),
            quantity: 1,
        })
        .await;
    assert!(
        matches!(result, Err(NimbusError::Timeout { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
    // The reply that comes too late is not lost: it goes to the dead letters with the reason.
    let pricing = db
        .builder("NobodyAnswers", "late-1")
        .handler(Pricing)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_until("the late reply is dead-lettered", || async {
        db.dead_letters().await.len() == 1
    })
    .await;
    pricing.stop().await.unwrap();
    shop.stop().await.unwrap();
    let body = String::from_utf8(db.dead_letters().await[0].body.clone()).unwrap();
    assert!(body.contains("nobody waits for any more"), "{body}");
    // Without an instance queue, a request is refused with the fix.
    let plain = sender(&db, "Pricing").await;
    let refused = plain
        .request::<_, Quote>(GetQuote {
            sku: "x".into(),
            quantity: 1,
        })
        .await;
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("enable_requests")),
        "{refused:?}"
    );
}

pub async fn old_subscriptions_table_is_upgraded(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    db.create_subscriptions_without_last_seen_at("Conformance.SomethingHappened", "Archive")
        .await;
    // Without auto-create, start names the upgrade statement.
    let refused = db
        .builder("Archive", "archive-1")
        .auto_create_schema(false)
        .handler::<SomethingHappened, _>(Recorder::default())
        .build()
        .unwrap()
        .start()
        .await;
    match refused {
        Err(e @ NimbusError::MissingSchema { .. }) => {
            let text = e.to_string();
            assert!(text.contains("LastSeenAt"), "{text}");
        }
        Err(other) => panic!("expected MissingSchema, got {other}"),
        Ok(_) => panic!("the old table lacks LastSeenAt"),
    }
    // With auto-create, the table is upgraded and the old subscription keeps working.
    let seen = seen_list();
    let archive = db
        .builder("Archive", "archive-1")
        .handler::<SomethingHappened, _>(Recorder::new("archive-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sender(&db, "Nowhere")
        .await
        .publish(SomethingHappened { n: 7 })
        .await
        .unwrap();
    wait_until("the upgraded subscription gets the event", || async {
        count_of(&seen) == 1
    })
    .await;
    archive.stop().await.unwrap();
}

/// `auto_delete_on_idle` is each subscriber's promise and travels with its subscription row: an
/// endpoint with a shorter setting neither skips nor sweeps a subscriber that is live by its
/// own (here: the default 4 days, heartbeating hourly, last seen 10 minutes ago).
pub async fn each_subscription_lapses_by_its_own_subscribers_idle_period(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let archive = db
        .builder("Archive", "archive-1")
        .handler::<SomethingHappened, _>(Recorder::new("archive-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    db.age_subscriptions_by("Archive", 10).await;
    let hasty = db
        .builder("Hasty", "hasty-1")
        .auto_delete_on_idle(Duration::from_secs(300))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let report = hasty.sweep_idle_subscriptions().await.unwrap();
    assert!(
        report.subscriptions.is_empty(),
        "a 5-minute sweeper leaves a 4-day subscriber alone: {report:?}"
    );
    hasty.publish(SomethingHappened { n: 1 }).await.unwrap();
    wait_until("the live subscriber gets the event", || async {
        count_of(&seen) == 1
    })
    .await;
    // A subscriber that promised 5 minutes and was last seen 10 minutes ago has lapsed, for
    // everyone, whatever their own setting.
    let brief = db
        .builder("Brief", "brief-1")
        .auto_delete_on_idle(Duration::from_secs(300))
        .handler::<SomethingHappened, _>(Recorder::new("brief-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    brief.stop().await.unwrap();
    db.age_subscriptions_by("Brief", 10).await;
    let report = archive.sweep_idle_subscriptions().await.unwrap();
    assert_eq!(
        report.subscriptions,
        vec![(
            "Conformance.SomethingHappened".to_string(),
            "Brief".to_string()
        )],
        "a 4-day sweeper sweeps a lapsed 5-minute subscriber"
    );
    hasty.stop().await.unwrap();
    archive.stop().await.unwrap();
}

/// An idle sweep of an instance's old rows that races with the instance's restart can drop the
/// queue table after the restart made it, leaving a live subscription without a queue. The
/// heartbeat repairs it: the queue is made again and events reach the instance.
pub async fn the_heartbeat_repairs_a_queue_a_sweep_dropped(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let seen = seen_list();
    let instance = db
        .builder("Screens", "screen-1")
        .multicast_handler::<SomethingHappened, _>(Recorder::new("screen-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let queue = "Screens.screen-1";
    // What the raced sweep leaves: the subscription rows, no queue.
    db.drop_queue(queue).await;
    instance.heartbeat_now().await.unwrap();
    assert!(
        db.queue_exists(queue).await,
        "the heartbeat made the queue again"
    );
    let publisher = sender(&db, "Nowhere").await;
    publisher.publish(SomethingHappened { n: 4 }).await.unwrap();
    wait_until("the instance gets the event", || async {
        count_of(&seen) == 1
    })
    .await;
    publisher.stop().await.unwrap();
    instance.stop().await.unwrap();
}
