//! Priorities: messages sent with `SendOptions::priority` to a queue that keeps priorities are
//! received highest first, the oldest first within a priority; retries keep their priority.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use nimbus::{Handler, HandlerContext, HandlerError, SendOptions, StorageLayout};

use crate::suite::Numbered;
use crate::{eventually, Setup, TestDatabase};

/// The priority of message `n` in the ordering test.
const PRIORITIES: [i16; 9] = [0, 5, -1, 5, 10, 0, -1, 10, 0];

/// Records the numbers it handles in order; fails the first attempt of number 7.
#[derive(Clone, Default)]
struct InOrder {
    handled: Arc<Mutex<Vec<u32>>>,
    failed: Arc<Mutex<HashSet<u32>>>,
}

#[nimbus::handler]
impl Handler<Numbered> for InOrder {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 7 && self.failed.lock().unwrap().insert(m.n) {
            return Err("the first attempt of 7 fails".into());
        }
        self.handled.lock().unwrap().push(m.n);
        Ok(())
    }
}

fn receiver(db: &TestDatabase, recorder: &InOrder) -> nimbus::BusBuilder {
    db.builder("Mail", "mail-1")
        .priorities()
        .concurrency(1)
        .receive_batch(1)
        .immediate_retries(1)
        .handler::<Numbered, _>(recorder.clone())
}

/// Nine messages at priorities 10, 5, 0 and -1, sent while no receiver runs, are handled
/// highest first and in send order within a priority, by one receiver; the message at 10 whose
/// first attempt fails comes back at 10, ahead of the lower ones. In NServiceBus's PostgreSQL
/// table shape, `priorities()` is refused by `build()` with the reason.
pub async fn priorities_hand_out_the_highest_first(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let recorder = InOrder::default();
    if db.layout == StorageLayout::NServiceBusPostgreSql {
        let refused = match receiver(&db, &recorder).build() {
            Ok(_) => panic!("build() accepted priorities in the {:?} layout", db.layout),
            Err(e) => e,
        };
        assert!(
            refused.to_string().contains("not supported yet"),
            "{refused}"
        );
        return;
    }
    let admin = db.admin();
    // The schema is complete before Mail is made: Mail must still be recorded (the shared
    // table knows its queues by their records).
    admin.create_schema(&["Outbox"]).await.unwrap();
    admin.create_schema(&["Mail"]).await.unwrap();
    admin.create_priorities("Mail").await.unwrap();
    let sender = db
        .builder("MailSender", "mail-sender-1")
        .route::<Numbered>("Mail")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for (n, priority) in PRIORITIES.iter().enumerate() {
        let n = u32::try_from(n).unwrap();
        let options = SendOptions::new().priority(*priority);
        sender.send_with(Numbered { n }, options).await.unwrap();
    }
    let counts = admin.priorities("Mail").await.unwrap();
    let counted: Vec<(i64, i64)> = counts.iter().map(|c| (c.priority, c.waiting)).collect();
    assert_eq!(counted, [(10, 2), (5, 2), (0, 3), (-1, 2)]);
    let bus = receiver(&db, &recorder)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("the nine are handled", async || {
        recorder.handled.lock().unwrap().len() == PRIORITIES.len()
    })
    .await;
    // 4 and 7 are at 10; 7 fails once and comes back at 10, after 4 (its copy is newer).
    assert_eq!(
        *recorder.handled.lock().unwrap(),
        [4, 7, 1, 3, 0, 5, 8, 2, 6],
        "highest priority first, send order within one"
    );
    bus.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// A send with a priority to a queue whose table has no Priority column is refused and writes
/// nothing; the endpoint's next start with `priorities()` gives the existing table the column,
/// and the send then goes through.
pub async fn a_prioritized_send_needs_a_queue_that_keeps_priorities(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let recorder = InOrder::default();
    let plain = db
        .builder("Mail", "plain-1")
        .handler::<Numbered, _>(recorder.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let sender = db
        .builder("MailSender", "mail-sender-1")
        .route::<Numbered>("Mail")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let urgent = || SendOptions::new().priority(3);
    let refused = sender
        .send_with(Numbered { n: 1 }, urgent())
        .await
        .expect_err("the table keeps no priorities");
    let wanted = match db.layout {
        StorageLayout::NServiceBusPostgreSql => "not supported yet",
        _ => "does not keep priorities",
    };
    assert!(refused.to_string().contains(wanted), "{refused}");
    // Again, to a queue this process now knows exists: still refused, never written without.
    let again = sender
        .send_with(Numbered { n: 1 }, urgent())
        .await
        .expect_err("still no priorities");
    assert!(again.to_string().contains(wanted), "{again}");
    assert_eq!(db.count("Mail").await, 0, "nothing written");
    let both = sender
        .send_with(Numbered { n: 2 }, urgent().group("g"))
        .await
        .expect_err("a priority and a group, to a queue that keeps neither");
    let keeps_neither = match db.layout {
        StorageLayout::NServiceBusPostgreSql => "not supported yet",
        _ => "does not keep",
    };
    assert!(both.to_string().contains(keeps_neither), "{both}");
    plain.stop().await.unwrap();
    if db.layout == StorageLayout::NServiceBusPostgreSql {
        sender.stop().await.unwrap();
        return;
    }
    let upgraded = db
        .builder("Mail", "mail-1")
        .priorities()
        .handler::<Numbered, _>(recorder.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sender.send_with(Numbered { n: 1 }, urgent()).await.unwrap();
    eventually("the prioritized message is handled", async || {
        !recorder.handled.lock().unwrap().is_empty()
    })
    .await;
    db.admin().verify_priorities("Mail").await.unwrap();
    let warnings = db.admin().index_warnings("Mail").await.unwrap();
    assert!(
        warnings.is_empty(),
        "the priority index exists: {warnings:?}"
    );
    upgraded.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// A queue that keeps both ordered groups and priorities: six messages sent while no receiver
/// runs (two groups, each with a later message at another priority, and two ungrouped ones)
/// are handled by one receiver with the highest priority first among the first message of each
/// group and the ungrouped ones, and each group's messages in send order whatever their
/// priorities. In NServiceBus's PostgreSQL table shape, `build()` refuses it.
pub async fn groups_and_priorities_share_one_queue(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let recorder = InOrder::default();
    let both = || receiver(&db, &recorder).ordered_groups();
    if db.layout == StorageLayout::NServiceBusPostgreSql {
        let refused = match both().build() {
            Ok(_) => panic!("build() accepted groups and priorities in NServiceBus's shape"),
            Err(e) => e,
        };
        assert!(
            refused.to_string().contains("not supported yet"),
            "{refused}"
        );
        return;
    }
    // The queue gains both from a first start of its endpoint.
    let first = both().build().unwrap().start().await.unwrap();
    first.stop().await.unwrap();
    let sender = db
        .builder("MailSender", "mail-sender-1")
        .route::<Numbered>("Mail")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // n: group, priority. Sent in this order.
    let messages: [(u32, Option<&str>, i16); 6] = [
        (0, Some("a"), 0),
        (1, Some("a"), 9),
        (2, Some("b"), 5),
        (3, Some("b"), 0),
        (4, None, 1),
        (5, None, 9),
    ];
    for (n, group, priority) in messages {
        let mut options = SendOptions::new().priority(priority);
        if let Some(group) = group {
            options = options.group(group);
        }
        sender.send_with(Numbered { n }, options).await.unwrap();
    }
    let bus = both().build().unwrap().start().await.unwrap();
    eventually("the six are handled", async || {
        recorder.handled.lock().unwrap().len() == messages.len()
    })
    .await;
    // First of each group and the ungrouped: 0 (0), 2 (5), 4 (1), 5 (9) → 5; then 2; then 4
    // (1) over 0 and 3 (both 0); 0 before 3 (sent first); then 1 (9) over 3; then 3.
    assert_eq!(
        *recorder.handled.lock().unwrap(),
        [5, 2, 4, 0, 1, 3],
        "the highest priority first among each group's first message; each group in send order"
    );
    bus.stop().await.unwrap();
    sender.stop().await.unwrap();
}
