//! Sagas ([`nimbus::saga`]) in the conformance suite: many messages for one instance, handled
//! at once by two instances of an endpoint, each change applied exactly once; concurrent starts
//! make one instance; a failed attempt leaves the state as it was; a completed instance is kept,
//! completed, and later messages for it are ignored, even those that may start one; operators
//! can complete or delete an instance. Part of [`crate::suite`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nimbus::saga::{Saga, SagaHandler, SagaInstance};
use nimbus::{HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

use crate::db::{Setup, TestDatabase};
use crate::suite::wait_until;

/// One number for the tally of `key`; starts the tally.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.Tally")]
pub struct Tally {
    pub key: String,
    pub n: u32,
}

/// Ends the tally of `key`: it sends its summary and completes.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.CloseTally")]
pub struct CloseTally {
    pub key: String,
}

/// What a closed tally saw.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.TallySummary")]
pub struct TallySummary {
    pub seen: Vec<u32>,
}

#[derive(Default, Serialize, Deserialize)]
struct TallyState {
    seen: Vec<u32>,
}

/// Keeps every number of its key; fails the first attempt at 13 after changing its state.
#[derive(Clone, Default)]
struct Tallies {
    failed_once: Arc<AtomicBool>,
}

impl Saga for Tallies {
    type State = TallyState;
    const NAME: &'static str = "Conformance.Tallies";
}

impl SagaHandler<Tally> for Tallies {
    const STARTS: bool = true;

    fn correlation(m: &Tally) -> String {
        m.key.clone()
    }

    async fn handle(
        &self,
        m: Tally,
        saga: &mut SagaInstance<TallyState>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state.seen.push(m.n);
        if m.n == 13 && !self.failed_once.swap(true, Ordering::SeqCst) {
            return Err("13 fails once, after changing the state".into());
        }
        Ok(())
    }
}

impl SagaHandler<CloseTally> for Tallies {
    fn correlation(m: &CloseTally) -> String {
        m.key.clone()
    }

    async fn handle(
        &self,
        _m: CloseTally,
        saga: &mut SagaInstance<TallyState>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        ctx.send(TallySummary {
            seen: std::mem::take(&mut saga.state.seen),
        })?;
        saga.mark_complete();
        Ok(())
    }
}

async fn tally_endpoint(db: &TestDatabase, saga: &Tallies, instance: &str) -> nimbus::Bus {
    db.builder("Tallies", instance)
        .concurrency(8)
        .route::<TallySummary>("TallySummaries")
        .create_queues_on_send(true)
        .saga_handler::<Tally, _>(saga.clone())
        .saga_handler::<CloseTally, _>(saga.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

pub async fn a_saga_applies_each_message_once_under_concurrency(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let saga = Tallies::default();
    // Two instances with 8 receivers each: 16 receives at once for one saga instance.
    let first = tally_endpoint(&db, &saga, "tallies-1").await;
    let second = tally_endpoint(&db, &saga, "tallies-2").await;
    let sender = db
        .builder("Sender", "sender-1")
        .route::<Tally>("Tallies")
        .route::<CloseTally>("Tallies")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let numbers = 0..40u32;
    futures::future::join_all(numbers.clone().map(|n| {
        sender.send(Tally {
            key: "order-7".into(),
            n,
        })
    }))
    .await
    .into_iter()
    .for_each(|sent| sent.unwrap());
    wait_until("all 40 numbers are handled", || async {
        first.metrics().handled + second.metrics().handled == 40
    })
    .await;
    assert!(saga.failed_once.load(Ordering::SeqCst), "13 failed once");
    let instances = db
        .scalar(
            &format!("SELECT COUNT(*) FROM {}", db.table("NimbusSagas")),
            &[],
        )
        .await;
    assert_eq!(instances, 1, "concurrent starts made one instance");

    sender
        .send(CloseTally {
            key: "order-7".into(),
        })
        .await
        .unwrap();
    wait_until("the summary is sent", || async {
        db.count("TallySummaries").await == 1
    })
    .await;
    let summary: TallySummary =
        serde_json::from_slice(&db.bodies("TallySummaries").await[0]).unwrap();
    let mut seen = summary.seen.clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        numbers.collect::<Vec<_>>(),
        "each number applied exactly once (13 too, after its failed attempt): {:?}",
        summary.seen
    );
    let admin = db.admin();
    assert!(
        admin.sagas(None, 10).await.unwrap().is_empty(),
        "a completed saga is no longer running"
    );
    let kept = admin
        .saga("Conformance.Tallies", "order-7")
        .await
        .unwrap()
        .expect("a completed saga is kept a while");
    assert!(kept.completed);

    // Messages for a completed saga are ignored, also one that may start one (a dead letter
    // replayed, a sender that comes late): no instance starts again to wait for ever.
    let handled = first.metrics().handled + second.metrics().handled;
    sender
        .send(CloseTally {
            key: "order-7".into(),
        })
        .await
        .unwrap();
    sender
        .send(Tally {
            key: "order-7".into(),
            n: 99,
        })
        .await
        .unwrap();
    wait_until("the late messages are consumed", || async {
        first.metrics().handled + second.metrics().handled == handled + 2
    })
    .await;
    assert_eq!(db.count("TallySummaries").await, 1, "nothing more was sent");
    assert!(
        admin.sagas(None, 10).await.unwrap().is_empty(),
        "the late Tally started nothing"
    );

    // An operator ends a saga by hand: delete lets a starting message start it anew, complete
    // ends the new one as mark_complete() does.
    assert!(admin
        .delete_saga("Conformance.Tallies", "order-7")
        .await
        .unwrap());
    assert!(admin
        .saga("Conformance.Tallies", "order-7")
        .await
        .unwrap()
        .is_none());
    sender
        .send(Tally {
            key: "order-7".into(),
            n: 100,
        })
        .await
        .unwrap();
    wait_until("a new instance starts", || async {
        admin.sagas(None, 10).await.unwrap().len() == 1
    })
    .await;
    assert!(admin
        .complete_saga("Conformance.Tallies", "order-7")
        .await
        .unwrap());
    assert!(
        !admin
            .complete_saga("Conformance.Tallies", "order-7")
            .await
            .unwrap(),
        "completed already"
    );
    assert!(admin.sagas(None, 10).await.unwrap().is_empty());

    // What sagas cannot do yet is refused when the endpoint is built, saying so.
    let refused =
        |b: nimbus::BusBuilder| b.build().err().map(|e| e.to_string()).unwrap_or_default();
    let batched = refused(
        db.builder("Tallies", "tallies-3")
            .saga_handler::<Tally, _>(saga.clone())
            .receive_batch(10),
    );
    assert!(batched.contains("not supported yet"), "{batched}");
    let leased = refused(
        db.builder("Tallies", "tallies-3")
            .saga_handler::<Tally, _>(saga.clone())
            .lease::<Tally>(nimbus::Lease::of(std::time::Duration::from_secs(30))),
    );
    assert!(
        leased.contains("not supported yet") && leased.contains("Conformance.Tally"),
        "{leased}"
    );
    assert_eq!(db.dead_letters().await.len(), 0);
    for bus in [first, second, sender] {
        bus.stop().await.unwrap();
    }
}

/// An order that must be paid before its timeout.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.OrderOpened")]
pub struct OrderOpened {
    pub id: u32,
}

/// The payment of an order.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.OrderPaid")]
pub struct OrderPaid {
    pub id: u32,
}

/// The timeout an order asks for when it opens.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.PaymentDue")]
pub struct PaymentDue {
    pub id: u32,
}

/// What an unpaid order becomes.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.OrderCancelled")]
pub struct OrderCancelled {
    pub id: u32,
}

#[derive(Clone)]
struct Payments;

impl Saga for Payments {
    type State = u32;
    const NAME: &'static str = "Conformance.Payments";
}

impl SagaHandler<OrderOpened> for Payments {
    const STARTS: bool = true;
    fn correlation(m: &OrderOpened) -> String {
        m.id.to_string()
    }
    async fn handle(
        &self,
        m: OrderOpened,
        saga: &mut SagaInstance<u32>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state = m.id;
        saga.request_timeout(
            ctx,
            std::time::Duration::from_secs(2),
            PaymentDue { id: m.id },
        )?;
        Ok(())
    }
}

impl SagaHandler<OrderPaid> for Payments {
    fn correlation(m: &OrderPaid) -> String {
        m.id.to_string()
    }
    async fn handle(
        &self,
        _m: OrderPaid,
        saga: &mut SagaInstance<u32>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.mark_complete();
        Ok(())
    }
}

impl nimbus::saga::SagaTimeout<PaymentDue> for Payments {
    async fn timeout(
        &self,
        due: PaymentDue,
        saga: &mut SagaInstance<u32>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        ctx.send(OrderCancelled { id: due.id })?;
        saga.mark_complete();
        Ok(())
    }
}

pub async fn a_saga_timeout_reaches_its_instance_or_is_dropped(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    // One receiver: the queue is handled in order, so the payment of order 1 (sent at once)
    // is handled before its timeout, which becomes visible two seconds after order 1 opened.
    let bus = db
        .builder("Payments", "payments-1")
        .concurrency(1)
        .route::<OrderOpened>("Payments")
        .route::<OrderPaid>("Payments")
        .route::<OrderCancelled>("Cancellations")
        .create_queues_on_send(true)
        .saga_handler::<OrderOpened, _>(Payments)
        .saga_handler::<OrderPaid, _>(Payments)
        .saga_timeout::<PaymentDue, _>(Payments)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(OrderOpened { id: 1 }).await.unwrap();
    bus.send(OrderOpened { id: 2 }).await.unwrap();
    bus.send(OrderPaid { id: 1 }).await.unwrap();
    // Two opened, one paid, and two timeouts: one cancels order 2, one finds order 1 gone.
    wait_until("both timeouts came due", || async {
        bus.metrics().handled == 5
    })
    .await;
    let cancelled = db.admin().peek("Cancellations", 10).await.unwrap();
    assert_eq!(cancelled.len(), 1, "only the unpaid order is cancelled");
    let body: OrderCancelled = serde_json::from_slice(&cancelled[0].body).unwrap();
    assert_eq!(body.id, 2);
    let headers: nimbus::Headers = serde_json::from_str(&cancelled[0].headers).unwrap();
    assert_eq!(
        headers
            .get(nimbus::saga::ORIGINATING_SAGA_TYPE)
            .map(String::as_str),
        Some("Conformance.Payments"),
        "what a saga sends names it: {headers:?}"
    );
    assert!(headers.contains_key(nimbus::saga::ORIGINATING_SAGA_ID));
    assert!(
        db.admin().sagas(None, 10).await.unwrap().is_empty(),
        "both orders' sagas completed"
    );
    assert_eq!(db.dead_letters().await.len(), 0);
    bus.stop().await.unwrap();
}

/// Sets a reminder (a saga with a timeout an hour away); `cancel_now` takes it back at once.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.ReminderSet")]
pub struct ReminderSet {
    pub id: u32,
    pub cancel_now: bool,
}

/// Ends a reminder before its timeout: the saga takes the timeout back.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.ReminderDone")]
pub struct ReminderDone {
    pub id: u32,
}

/// The reminder's timeout, which never comes in the test.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.ReminderDue")]
pub struct ReminderDue {
    pub id: u32,
}

/// Keeps each reminder's timeout id, and says what each cancel found.
#[derive(Clone, Default)]
struct Reminders {
    cancels: std::sync::Arc<std::sync::Mutex<Vec<(u32, bool)>>>,
}

impl Saga for Reminders {
    type State = Option<nimbus::uuid::Uuid>;
    const NAME: &'static str = "Conformance.Reminders";
}

impl SagaHandler<ReminderSet> for Reminders {
    const STARTS: bool = true;
    fn correlation(m: &ReminderSet) -> String {
        m.id.to_string()
    }
    async fn handle(
        &self,
        m: ReminderSet,
        saga: &mut SagaInstance<Option<nimbus::uuid::Uuid>>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        let timeout = saga.request_timeout(
            ctx,
            std::time::Duration::from_secs(3600),
            ReminderDue { id: m.id },
        )?;
        saga.state = Some(timeout);
        if m.cancel_now {
            let found = saga.cancel_timeout(ctx, timeout).await?;
            self.cancels.lock().unwrap().push((m.id, found));
            saga.state = None;
        }
        Ok(())
    }
}

impl SagaHandler<ReminderDone> for Reminders {
    fn correlation(m: &ReminderDone) -> String {
        m.id.to_string()
    }
    async fn handle(
        &self,
        m: ReminderDone,
        saga: &mut SagaInstance<Option<nimbus::uuid::Uuid>>,
        ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        if let Some(timeout) = saga.state.take() {
            let found = saga.cancel_timeout(ctx, timeout).await?;
            self.cancels.lock().unwrap().push((m.id, found));
        }
        saga.mark_complete();
        Ok(())
    }
}

impl nimbus::saga::SagaTimeout<ReminderDue> for Reminders {
    async fn timeout(
        &self,
        _due: ReminderDue,
        saga: &mut SagaInstance<Option<nimbus::uuid::Uuid>>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.mark_complete();
        Ok(())
    }
}

/// A saga takes back a timeout it asked for: in the same message (it is never written), or in
/// a later one (deleted in that message's transaction); either way no delayed message is left.
pub async fn a_saga_cancels_its_timeout(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let reminders = Reminders::default();
    let bus = db
        .builder("Reminding", "reminding-1")
        .route::<ReminderSet>("Reminding")
        .route::<ReminderDone>("Reminding")
        .saga_handler::<ReminderSet, _>(reminders.clone())
        .saga_handler::<ReminderDone, _>(reminders.clone())
        .saga_timeout::<ReminderDue, _>(reminders.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(ReminderSet {
        id: 1,
        cancel_now: false,
    })
    .await
    .unwrap();
    bus.send(ReminderSet {
        id: 2,
        cancel_now: true,
    })
    .await
    .unwrap();
    wait_until("both reminders are set", || async {
        bus.metrics().handled == 2
    })
    .await;
    let waiting = db.admin().delayed_messages(10).await.unwrap();
    assert_eq!(
        waiting.len(),
        1,
        "the timeout taken back in its own message was never written: {waiting:?}"
    );
    assert_eq!(
        waiting[0].message_type.as_deref(),
        Some("Conformance.ReminderDue")
    );
    bus.send(ReminderDone { id: 1 }).await.unwrap();
    wait_until("the reminder is done", || async {
        bus.metrics().handled == 3
    })
    .await;
    assert!(
        db.admin().delayed_messages(10).await.unwrap().is_empty(),
        "the timeout was taken back with the message that ended the reminder"
    );
    let mut cancels = reminders.cancels.lock().unwrap().clone();
    cancels.sort();
    assert_eq!(cancels, vec![(1, true), (2, true)]);
    assert_eq!(db.dead_letters().await.len(), 0);
    bus.stop().await.unwrap();
}

/// Workers handling 1,000 numbers with a saga (five instances, each counting and summing its
/// numbers, and forwarding each to `Done`) are killed with SIGKILL at random moments; a last
/// worker drains the queue. Every number was forwarded once, and the saga states count each
/// number exactly once: a kill left each state as its last committed message left it.
pub fn sigkill_keeps_saga_state_exactly_once(kind: Setup, worker: &str) {
    const TOTAL: u32 = 1_000;
    let system = actix_rt::System::new();
    system.block_on(async {
        let db = TestDatabase::new(kind).await;
        let sender = crate::suite::fill_worker_queue(&db, TOTAL).await;
        let spawn = || crate::suite::start_worker(&db, worker, &[("NIMBUS_SAGA", "1")]);
        crate::suite::kill_then_drain(&db, TOTAL, 4, spawn).await;
        assert_eq!(
            db.count("Done").await,
            i64::from(TOTAL),
            "each number forwarded once"
        );
        let sagas = db
            .admin()
            .sagas(Some("Conformance.CrashTally"), 10)
            .await
            .unwrap();
        assert_eq!(sagas.len(), 5, "five tallies");
        let (mut count, mut sum) = (0u64, 0u64);
        for saga in &sagas {
            let state: serde_json::Value = serde_json::from_str(&saga.state).unwrap();
            count += state["count"].as_u64().unwrap();
            sum += state["sum"].as_u64().unwrap();
        }
        assert_eq!(
            (count, sum),
            (u64::from(TOTAL), (0..u64::from(TOTAL)).sum()),
            "each number counted exactly once in the saga states"
        );
        assert!(db.dead_letters().await.is_empty());
        sender.stop().await.unwrap();
    });
}
