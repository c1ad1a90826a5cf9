//! Delayed messages taken back or moved: `Bus::send_delayed`, `cancel_delayed`,
//! `reschedule_delayed` and the admin listing, in every layout.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::{Due, SendOptions};

use crate::suite::{count_of, seen_list, sender, Numbered, Recorder};
use crate::{eventually, Setup, TestDatabase};

const AN_HOUR: Duration = Duration::from_secs(3600);

/// A delayed message is listed until it is due; cancelled while pending it is never delivered,
/// and a second cancel says it was not pending; rescheduled to now it is delivered, after
/// which neither a cancel nor a reschedule finds it.
pub async fn a_delayed_message_can_be_cancelled_or_rescheduled(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let queue = "Reminders";
    let sender = sender(&db, queue).await;
    let later = || SendOptions::new().delay(AN_HOUR);
    let cancelled = sender
        .send_delayed(Numbered { n: 1 }, later())
        .await
        .unwrap();
    let moved = sender
        .send_delayed(Numbered { n: 2 }, later())
        .await
        .unwrap();
    let refused = sender
        .send_delayed(Numbered { n: 3 }, SendOptions::new())
        .await
        .expect_err("a delayed send without a delay");
    assert!(refused.to_string().contains("no delay"), "{refused}");

    let listed = db.admin().delayed_messages(10).await.unwrap();
    let ids: BTreeSet<String> = listed.iter().map(|m| m.id.to_lowercase()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([cancelled.to_string(), moved.to_string()]),
        "{listed:?}"
    );
    assert!(listed.iter().all(|m| m.destination == queue
        && m.message_type.as_deref() == Some("Conformance.Numbered")
        && m.due.is_some()));

    assert!(sender.cancel_delayed(cancelled).await.unwrap());
    assert!(
        !sender.cancel_delayed(cancelled).await.unwrap(),
        "a second cancel finds nothing pending"
    );
    assert!(sender
        .reschedule_delayed(moved, Due::In(Duration::ZERO))
        .await
        .unwrap());

    let seen = seen_list();
    let receiver = db
        .builder(queue, "reminders-1")
        .handler::<Numbered, _>(Recorder::new("reminders-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("the rescheduled message is handled", async || {
        count_of(&seen) >= 1
    })
    .await;
    assert!(
        !sender.cancel_delayed(moved).await.unwrap(),
        "delivered: nothing to cancel"
    );
    assert!(!sender
        .reschedule_delayed(moved, Due::In(AN_HOUR))
        .await
        .unwrap());
    assert!(db.admin().delayed_messages(10).await.unwrap().is_empty());
    // The cancelled one never comes: the admin listing no longer holds it, and only the
    // rescheduled one was handled.
    let handled: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    assert_eq!(handled, vec![2]);
    receiver.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// Cancels racing the delivery: each message is either cancelled and never handled, or
/// handled once and its cancel said it was not pending; never both, never neither.
pub async fn a_cancel_racing_the_delivery_has_one_outcome(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let queue = "Racing";
    let sender = sender(&db, queue).await;
    let seen = seen_list();
    let receiver = db
        .builder(queue, "racing-1")
        .handler::<Numbered, _>(Recorder::new("racing-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let total: u32 = 40;
    let mut ids = Vec::new();
    for n in 0..total {
        // Each due 300 ms after it is sent, and cancelled about then (the delivery runs every
        // peek delay, so some are delivered first and some are not).
        let delay = Duration::from_millis(300);
        let due = std::time::Instant::now() + delay;
        let id = sender
            .send_delayed(Numbered { n }, SendOptions::new().delay(delay))
            .await
            .unwrap();
        ids.push((n, id, due));
    }
    let cancelled: Arc<Mutex<BTreeSet<u32>>> = Arc::default();
    for (n, id, due) in ids {
        // Cancels alternate between just before and just after the due time.
        let at = if n % 2 == 0 {
            due.checked_sub(Duration::from_millis(20)).unwrap_or(due)
        } else {
            due + Duration::from_millis(30)
        };
        tokio::time::sleep_until(at.into()).await;
        if sender.cancel_delayed(id).await.unwrap() {
            cancelled.lock().unwrap().insert(n);
        }
    }
    println!(
        "{} of {total} cancelled before their delivery",
        cancelled.lock().unwrap().len()
    );
    let expected = total as usize - cancelled.lock().unwrap().len();
    eventually("every message not cancelled is handled", async || {
        count_of(&seen) >= expected
    })
    .await;
    // Nothing is left to come: no delayed message waits, and the queue is empty.
    assert!(db.admin().delayed_messages(100).await.unwrap().is_empty());
    eventually("the queue is empty", async || db.count(queue).await == 0).await;
    let handled: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    let unique: BTreeSet<u32> = handled.iter().copied().collect();
    assert_eq!(unique.len(), handled.len(), "a message was handled twice");
    let cancelled = cancelled.lock().unwrap().clone();
    assert!(
        unique.is_disjoint(&cancelled),
        "handled after a cancel said it would not be: {:?}",
        unique.intersection(&cancelled).collect::<Vec<_>>()
    );
    assert_eq!(
        unique.len() + cancelled.len(),
        total as usize,
        "every message is handled or cancelled"
    );
    receiver.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// A database whose `NimbusDelayedMessages` was made before its `Id` index existed gains the
/// index when an endpoint starts, and cancels work there (table layouts; the shared table
/// finds a message by its primary key).
pub async fn the_delayed_id_index_is_added_to_an_existing_table(kind: Setup) {
    if kind.shared_table() {
        return;
    }
    let db = TestDatabase::new(kind).await;
    let index = "NimbusDelayedMessages_Index_Id";
    let first = sender(&db, "Upgraded").await;
    first.stop().await.unwrap();
    assert!(db.has_index("NimbusDelayedMessages", index).await);
    db.drop_index("NimbusDelayedMessages", index).await;
    let again = sender(&db, "Upgraded").await;
    assert!(
        db.has_index("NimbusDelayedMessages", index).await,
        "the start made the missing index"
    );
    let id = again
        .send_delayed(Numbered { n: 1 }, SendOptions::new().delay(AN_HOUR))
        .await
        .unwrap();
    assert!(again.cancel_delayed(id).await.unwrap());
    again.stop().await.unwrap();
}
