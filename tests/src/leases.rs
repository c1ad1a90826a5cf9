//! Messages handled under a lease ([`nimbus::Lease`]) in the conformance suite: nothing is held
//! while the handler runs, the lease is renewed past its duration, what the handler sends
//! commits once, and a worker killed in the middle loses nothing and repeats only what it was
//! handling. Part of [`crate::suite`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, Lease};

use crate::db::{Setup, TestDatabase};
use crate::suite::{business_rows, sender, wait_until, wait_while_progressing, Numbered};

/// Forwards each number to `LeasedDone`; number 0 first waits until released. Records what the
/// receive-connection accessor said under the lease.
#[derive(Clone, Default)]
struct GatedForward {
    released: Arc<AtomicBool>,
    gated_started: Arc<AtomicUsize>,
    handled: Arc<AtomicUsize>,
    accessor_error: Arc<std::sync::Mutex<Option<String>>>,
    /// Which attempt each handling was (`ctx.attempt()`).
    attempts: Arc<std::sync::Mutex<Vec<u32>>>,
}

#[nimbus::handler]
impl Handler<Numbered> for GatedForward {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.attempts.lock().unwrap().push(ctx.attempt());
        if m.n == 0 {
            self.gated_started.fetch_add(1, Ordering::SeqCst);
            // Under a lease there is no receive connection to lend, whatever the database.
            let lent = ctx.sqlite(|_| Ok(())).await;
            *self.accessor_error.lock().unwrap() = lent.err().map(|e| e.to_string());
            while !self.released.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        ctx.send_to("LeasedDone", m)?;
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Lets the gated handler go when the test ends, passed or failed.
struct ReleaseOnDrop(Arc<AtomicBool>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// While a handler under a lease runs: its message is out of its queue and in `NimbusLeases`,
/// nothing is held (another message is received and handled meanwhile, on SQLite too, whose one
/// writer a receive would otherwise hold), the lease is renewed past its own duration without
/// another instance taking it back, and the handler's send commits exactly once when it ends.
pub async fn a_handler_under_a_lease_holds_nothing_and_outlives_its_lease(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let handler = GatedForward::default();
    let _release = ReleaseOnDrop(handler.released.clone());
    let lease = Lease::of(Duration::from_secs(4));
    let start = |instance: &str| {
        db.builder("Leased", instance)
            .concurrency(2)
            .create_queues_on_send(true)
            .handler(handler.clone())
            .lease::<Numbered>(lease)
            .build()
            .unwrap()
            .start()
    };
    let holder = start("leased-1").await.unwrap();
    let sender = sender(&db, "Leased").await;
    sender.send(Numbered { n: 0 }).await.unwrap();
    wait_until("the gated handler runs under its lease", || async {
        handler.gated_started.load(Ordering::SeqCst) == 1
    })
    .await;
    // A second instance, whose reclaimer looks for expired leases twice per lease.
    let other = start("leased-2").await.unwrap();
    let leases = db.table("NimbusLeases");
    let leased = || async {
        db.scalar(&format!("SELECT COUNT(*) FROM {leases}"), &[])
            .await
    };
    assert_eq!(leased().await, 1, "the message waits in NimbusLeases");
    assert_eq!(db.count("Leased").await, 0, "and is out of its queue");
    let error = handler.accessor_error.lock().unwrap().clone();
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("under a lease")),
        "the receive connection is not lent under a lease: {error:?}"
    );
    sender.send(Numbered { n: 1 }).await.unwrap();
    wait_until(
        "another message is handled while the leased one runs",
        || async {
            handler.handled.load(Ordering::SeqCst) == 1 && db.count("LeasedDone").await == 1
        },
    )
    .await;
    // Renewed every third of the lease: after three renewals the handler has outlived the
    // lease it started with.
    wait_until("the lease is renewed three times", || async {
        holder.metrics().leases_renewed >= 3
    })
    .await;
    assert_eq!(leased().await, 1, "still held by its handler");
    handler.released.store(true, Ordering::SeqCst);
    wait_until("the leased message is handled", || async {
        handler.handled.load(Ordering::SeqCst) == 2
    })
    .await;
    let (held, took_back) = (holder.metrics(), other.metrics());
    for bus in [holder, other, sender] {
        bus.stop().await.unwrap();
    }
    assert_eq!(held.leases_taken + took_back.leases_taken, 2);
    assert_eq!(
        held.leases_expired + took_back.leases_expired,
        0,
        "no lease was taken back"
    );
    assert_eq!(held.leases_lost + took_back.leases_lost, 0);
    assert_eq!(handler.gated_started.load(Ordering::SeqCst), 1, "run once");
    assert_eq!(leased().await, 0, "the lease ended with the handler");
    assert_eq!(
        db.count("LeasedDone").await,
        2,
        "each send committed once, with the end of its lease"
    );
    assert_eq!(db.count("Leased").await, 0);
}

/// Stopping an endpoint whose handler under a lease still runs does not wait for it (it may run
/// for an hour): the message goes back to its queue as it came, no attempt counted, the lease
/// ends, and the next instance handles it.
pub async fn stop_hands_a_leased_message_back_without_counting_an_attempt(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let handler = GatedForward::default();
    let _release = ReleaseOnDrop(handler.released.clone());
    let start = |instance: &str, handler: GatedForward| {
        db.builder("HandBack", instance)
            .create_queues_on_send(true)
            .handler(handler)
            .lease::<Numbered>(Lease::of(Duration::from_secs(60)))
            .build()
            .unwrap()
            .start()
    };
    let first = start("hand-back-1", handler.clone()).await.unwrap();
    let sender = sender(&db, "HandBack").await;
    sender.send(Numbered { n: 0 }).await.unwrap();
    wait_until("the gated handler runs under its lease", || async {
        handler.gated_started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Returns although the handler is still held (the test's patience bounds a hang).
    tokio::time::timeout(crate::suite::PATIENCE, first.stop())
        .await
        .expect("stop() does not wait for a handler under a lease")
        .unwrap();
    let metrics = first.metrics();
    assert_eq!(metrics.failed, 0, "no attempt counted");
    assert_eq!(handler.handled.load(Ordering::SeqCst), 0, "still running");
    let leases = db.table("NimbusLeases");
    assert_eq!(
        db.scalar(&format!("SELECT COUNT(*) FROM {leases}"), &[])
            .await,
        0,
        "the lease ended"
    );
    assert_eq!(
        db.count("HandBack").await,
        1,
        "the message is back in its queue"
    );
    // The next instance handles it, as its first attempt still.
    let next_handler = GatedForward::default();
    next_handler.released.store(true, Ordering::SeqCst);
    let attempts = next_handler.attempts.clone();
    let next = start("hand-back-2", next_handler.clone()).await.unwrap();
    wait_until("the next instance handles it", || async {
        next_handler.handled.load(Ordering::SeqCst) == 1
    })
    .await;
    for bus in [next, sender] {
        bus.stop().await.unwrap();
    }
    assert_eq!(
        *attempts.lock().unwrap(),
        vec![1],
        "handled on its first attempt"
    );
    assert_eq!(db.count("LeasedDone").await, 1);
}

/// Workers handle messages under a short lease (each handler writing a business row through a
/// connection of its own, committed at once, and forwarding its number to `Done`) and are
/// killed (SIGKILL) in the middle, twice; the leases they held run out and the next worker takes
/// them back. At the end no message is lost, each is forwarded exactly once (the sends commit
/// with the end of the lease), and a message was handled twice only if a kill caught it in
/// flight: the business rows exceed the messages by at most the leases left behind by kills.
pub fn sigkill_under_a_lease_loses_nothing_and_repeats_only_what_was_in_flight(
    kind: Setup,
    worker: &str,
) {
    const TOTAL: u32 = 300;
    let system = actix_rt::System::new();
    system.block_on(async {
        let db = TestDatabase::new(kind).await;
        let table = db.table("LeasedOrders");
        db.execute(&format!(
            "CREATE TABLE {table} (message_id varchar(64) NOT NULL)"
        ))
        .await;
        let sender = sender(&db, "Worker").await;
        sender
            .send_batch((0..TOTAL).map(|n| Numbered { n }))
            .await
            .unwrap();
        let leases = db.table("NimbusLeases");
        let spawn = || {
            crate::suite::start_worker(
                &db,
                worker,
                &[
                    ("NIMBUS_BUSINESS_TABLE", table.as_str()),
                    ("NIMBUS_LEASE_MS", "2000"),
                    ("NIMBUS_HANDLER_MS", "20"),
                ],
            )
        };
        let mut left_in_flight = 0;
        for kill in 1..=2 {
            let target = i64::from(TOTAL) * kill / 3;
            let mut worker = spawn();
            wait_while_progressing("a worker handles a third of the messages", || async {
                let done = db.count("Done").await;
                (done, done >= target)
            })
            .await;
            worker.kill(); // SIGKILL, wherever it was
                           // What the killed worker held: the only messages that may be handled twice.
            left_in_flight += db
                .scalar(&format!("SELECT COUNT(*) FROM {leases}"), &[])
                .await;
        }
        println!("leases left behind by the kills: {left_in_flight}");
        let mut last = spawn();
        wait_while_progressing(
            "the last worker drains the queue and the leases",
            || async {
                let done = db.count("Done").await;
                let leased = db
                    .scalar(&format!("SELECT COUNT(*) FROM {leases}"), &[])
                    .await;
                (
                    done - leased,
                    db.count("Worker").await == 0 && leased == 0 && done >= i64::from(TOTAL),
                )
            },
        )
        .await;
        last.kill();
        let (rows, distinct) = business_rows(&db, &table).await;
        let forwarded: Vec<u32> = db
            .bodies("Done")
            .await
            .iter()
            .map(|b| serde_json::from_slice::<Numbered>(b).unwrap().n)
            .collect();
        let unique: std::collections::HashSet<u32> = forwarded.iter().copied().collect();
        println!("business rows {rows} for {TOTAL} messages, {left_in_flight} in flight at kills");
        assert_eq!(
            unique.len(),
            TOTAL as usize,
            "every message forwarded: none lost"
        );
        assert_eq!(forwarded.len(), TOTAL as usize, "forwarded exactly once");
        assert_eq!(
            distinct,
            i64::from(TOTAL),
            "every message handled: none lost"
        );
        assert!(
            rows - i64::from(TOTAL) <= left_in_flight,
            "handled twice only after a kill caught it in flight: {rows} rows, \
             {left_in_flight} leases left by kills"
        );
        assert_eq!(db.dead_letters().await.len(), 0, "nothing dead-lettered");
    });
}
