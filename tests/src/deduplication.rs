//! Deduplication at both ends: `Bus::send_deduplicated` drops a second send of a key to a queue
//! within its window; an endpoint's inbox runs the handlers of a message id once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, SendOptions};

use crate::suite::{count_of, seen_list, Numbered, Recorder};
use crate::{eventually, Setup, TestDatabase};

async fn deduplicating_sender(db: &TestDatabase, window: Duration) -> nimbus::Bus {
    db.builder("Sender", "sender-1")
        .create_queues_on_send(true)
        .route::<Numbered>("Orders")
        .deduplication_window(window)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

/// A second send of a key to a queue within the window is dropped and says so; another key,
/// or the same key to another queue, is sent; after the window the key sends again; sends
/// racing with one key write one message.
pub async fn a_send_with_a_seen_key_is_dropped_within_its_window(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = deduplicating_sender(&db, Duration::from_secs(1)).await;
    let to = |queue: &str| SendOptions::new().to(queue);
    assert!(sender
        .send_deduplicated("order-1", Numbered { n: 1 }, to("Orders"))
        .await
        .unwrap());
    assert!(
        !sender
            .send_deduplicated("order-1", Numbered { n: 2 }, to("Orders"))
            .await
            .unwrap(),
        "the same key within the window"
    );
    assert!(sender
        .send_deduplicated("order-2", Numbered { n: 3 }, to("Orders"))
        .await
        .unwrap());
    assert!(
        sender
            .send_deduplicated("order-1", Numbered { n: 4 }, to("Audit"))
            .await
            .unwrap(),
        "the same key to another queue"
    );
    // The window is a second: the key sends again once it has passed.
    eventually("the key is free after its window", async || {
        sender
            .send_deduplicated("order-1", Numbered { n: 5 }, to("Orders"))
            .await
            .unwrap()
    })
    .await;
    let refused = sender
        .send_deduplicated("", Numbered { n: 6 }, to("Orders"))
        .await
        .expect_err("an empty key");
    assert!(refused.to_string().contains("1 to 255"), "{refused}");

    // Ten sends racing with one key: one message. From a bus whose window (an hour) outlasts
    // the race on a slow server, where the second's would not.
    sender.stop().await.unwrap();
    let sender = deduplicating_sender(&db, Duration::from_secs(3600)).await;
    let racing = (0..10).map(|n| {
        let sender = sender.clone();
        async move {
            sender
                .send_deduplicated("racing", Numbered { n: 100 + n }, to("Orders"))
                .await
                .unwrap()
        }
    });
    let sent = futures::future::join_all(racing).await;
    assert_eq!(sent.iter().filter(|s| **s).count(), 1, "{sent:?}");

    let seen = seen_list();
    let receiver = db
        .builder("Orders", "orders-1")
        .handler::<Numbered, _>(Recorder::new("orders-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("the sent messages are handled", async || {
        count_of(&seen) >= 4
    })
    .await;
    // The last handler has run; its receive commits just after.
    eventually("the queue is empty", async || {
        db.admin().queue_depth("Orders").await.unwrap() == 0
    })
    .await;
    let mut handled: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    handled.sort();
    assert_eq!(handled.len(), 4, "{handled:?}");
    assert_eq!(&handled[..3], &[1, 3, 5], "{handled:?}");
    assert!(handled[3] >= 100, "{handled:?}");
    receiver.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// Records what it handles by number, and fails the first attempt of number 3.
#[derive(Clone, Default)]
struct CountingOnce {
    handled: Arc<Mutex<BTreeMap<u32, usize>>>,
    failed_once: Arc<AtomicBool>,
}

/// Runs a statement through the handler's own connection, which marks the savepoint a failed
/// attempt rolls back to.
async fn own_statement(ctx: &mut HandlerContext) -> Result<(), HandlerError> {
    match ctx.database() {
        Some(nimbus::DatabaseKind::Postgres) => {
            ctx.postgres().await?.execute("SELECT 1", &[]).await?;
        }
        Some(nimbus::DatabaseKind::SqlServer) => {
            ctx.sql_server().await?.execute("SELECT 1", &[]).await?;
        }
        _ => {
            ctx.sqlite(|db| db.query_row("SELECT 1", [], |row| row.get::<_, i64>(0)))
                .await?;
        }
    }
    Ok(())
}

#[nimbus::handler]
impl Handler<Numbered> for CountingOnce {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 3 && !self.failed_once.swap(true, Ordering::SeqCst) {
            // After statements of its own: the failed attempt's savepoint must not bring the
            // inbox's claim back.
            own_statement(ctx).await?;
            return Err("the first attempt of 3 fails".into());
        }
        *self.handled.lock().unwrap().entry(m.n).or_default() += 1;
        Ok(())
    }
}

/// Ids of the ten messages the inbox test sends twice each.
fn fixed_ids() -> Vec<uuid::Uuid> {
    (0..10).map(|_| uuid::Uuid::new_v4()).collect()
}

/// An endpoint with an inbox runs the handlers of each message id once: a second copy sent
/// after the first was handled is removed unhandled; a failed attempt does not keep the id, so
/// its retry runs. Where the layout lets two copies wait at once (not the shared table nor
/// NServiceBus's PostgreSQL shape, whose key is the id), copies taken by several receivers at
/// once run once too.
pub async fn the_inbox_runs_handlers_once_per_message_id(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = crate::suite::sender(&db, "Inbox").await;
    let ids = fixed_ids();
    let send_copies = async |from: u32| {
        for (n, id) in ids.iter().enumerate() {
            let options = SendOptions::new().to("Inbox").message_id(*id);
            sender
                .send_with(Numbered { n: from + n as u32 }, options)
                .await
                .unwrap();
        }
    };
    let counting = CountingOnce::default();
    let start = async |instance: &str| {
        db.builder("Inbox", instance)
            .inbox(Duration::from_secs(3600))
            .concurrency(8)
            .handler::<Numbered, _>(counting.clone())
            .build()
            .unwrap()
            .start()
            .await
            .unwrap()
    };
    let total = |c: &CountingOnce| c.handled.lock().unwrap().values().sum::<usize>();

    if !kind.keys_rows_by_id() {
        // Two copies of each id waiting at once, taken by three receivers.
        send_copies(0).await;
        send_copies(0).await;
        let receivers = vec![
            start("inbox-1").await,
            start("inbox-2").await,
            start("inbox-3").await,
        ];
        eventually("both copies of each id are taken", async || {
            db.admin().queue_depth("Inbox").await.unwrap() == 0 && total(&counting) >= 10
        })
        .await;
        for receiver in receivers {
            receiver.stop().await.unwrap();
        }
        let handled = counting.handled.lock().unwrap().clone();
        assert_eq!(handled.len(), 10, "{handled:?}");
        assert!(handled.values().all(|times| *times == 1), "{handled:?}");
        assert!(
            counting.failed_once.load(Ordering::SeqCst),
            "the retry of 3 ran"
        );
        counting.handled.lock().unwrap().clear();
    }

    // A second copy of each id (numbered apart) after the first was handled: removed unhandled.
    let receiver = start("inbox-4").await;
    if kind.keys_rows_by_id() {
        send_copies(0).await;
        eventually("the first copies are handled", async || {
            total(&counting) >= 10
        })
        .await;
        assert!(
            counting.failed_once.load(Ordering::SeqCst),
            "the retry of 3 ran"
        );
    }
    send_copies(40).await;
    eventually("the second copies are taken", async || {
        db.admin().queue_depth("Inbox").await.unwrap() == 0
    })
    .await;
    receiver.stop().await.unwrap();
    let handled = counting.handled.lock().unwrap().clone();
    if kind.keys_rows_by_id() {
        assert_eq!(
            handled.keys().copied().collect::<Vec<_>>(),
            (0..10).collect::<Vec<u32>>(),
            "only the first copies ran"
        );
        assert!(handled.values().all(|times| *times == 1), "{handled:?}");
    } else {
        assert!(
            handled.is_empty(),
            "every id was handled before: {handled:?}"
        );
    }
    sender.stop().await.unwrap();
}
