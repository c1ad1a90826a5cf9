//! Limits across instances: at most N handlers at once for a message type or for each key of
//! it, and at most N messages per period for a type, held by three instances of one endpoint;
//! messages over a limit wait in their queue and are neither failed nor dead-lettered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nimbus::{Bus, BusBuilder, Handler, HandlerContext, HandlerError, Limit};
use serde::{Deserialize, Serialize};

use crate::suite::Numbered;
use crate::{eventually, Kind, Setup, TestDatabase};

/// How many instances of the endpoint each test runs.
const INSTANCES: usize = 3;

/// A command with a key for the limit per key.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.Keyed")]
pub struct Keyed {
    pub key: String,
    pub n: u32,
}

/// What the handlers of every instance saw: how many ran at once (per key too), when each
/// started, and which numbers were handled how often.
#[derive(Clone, Default)]
struct Watch {
    running: Arc<Mutex<HashMap<String, usize>>>,
    most: Arc<Mutex<HashMap<String, usize>>>,
    starts: Arc<Mutex<Vec<Instant>>>,
    handled: Arc<Mutex<HashMap<u32, usize>>>,
    /// Handlers wait while this is set.
    gate: Arc<AtomicBool>,
    /// Handlers waiting at the gate.
    at_gate: Arc<AtomicUsize>,
}

impl Watch {
    async fn run(&self, key: &str, n: u32, work: Duration) {
        self.starts.lock().unwrap().push(Instant::now());
        {
            let mut running = self.running.lock().unwrap();
            let now = running.entry(key.to_string()).or_default();
            *now += 1;
            let mut most = self.most.lock().unwrap();
            let most = most.entry(key.to_string()).or_default();
            *most = (*most).max(*now);
        }
        if self.gate.load(Ordering::SeqCst) {
            self.at_gate.fetch_add(1, Ordering::SeqCst);
            // Bounded, so that a test that failed meanwhile ends instead of hanging.
            let deadline = Instant::now() + Duration::from_secs(120);
            while self.gate.load(Ordering::SeqCst) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        tokio::time::sleep(work).await;
        *self.running.lock().unwrap().get_mut(key).unwrap() -= 1;
        *self.handled.lock().unwrap().entry(n).or_default() += 1;
    }

    fn most(&self, key: &str) -> usize {
        self.most.lock().unwrap().get(key).copied().unwrap_or(0)
    }

    fn handled_once(&self, count: u32) -> bool {
        let handled = self.handled.lock().unwrap();
        (0..count).all(|n| handled.get(&n) == Some(&1))
    }
}

#[nimbus::handler]
impl Handler<Numbered> for Watch {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.run("all", m.n, Duration::from_millis(20)).await;
        Ok(())
    }
}

#[nimbus::handler]
impl Handler<Keyed> for Watch {
    async fn handle(&self, m: Keyed, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.run(&m.key, m.n, Duration::from_millis(20)).await;
        Ok(())
    }
}

/// Starts the three instances of `Partners`, each made by `endpoint`.
async fn instances(db: &TestDatabase, endpoint: impl Fn(BusBuilder) -> BusBuilder) -> Vec<Bus> {
    let mut buses = Vec::new();
    for i in 1..=INSTANCES {
        let builder = db
            .builder("Partners", &format!("partners-{i}"))
            .concurrency(4);
        buses.push(endpoint(builder).build().unwrap().start().await.unwrap());
    }
    buses
}

async fn sender(db: &TestDatabase) -> Bus {
    db.builder("PartnersSender", "partners-sender-1")
        .route::<Numbered>("Partners")
        .route::<Keyed>("Partners")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

/// The limit's scope as `nimbus limits` lists it, with how many messages it held back.
async fn held_by(db: &TestDatabase, scope: &str) -> i64 {
    let limits = db.admin().limits().await.unwrap();
    limits
        .iter()
        .find(|l| l.scope == scope)
        .map_or(0, |l| l.held)
}

async fn stop(buses: Vec<Bus>) {
    for bus in buses {
        bus.stop().await.unwrap();
    }
}

/// Three instances × 4 receivers, `Limit::concurrency(2)` on the type: the first two handlers
/// wait at a gate, so every other message finds the limit full; the limit counts the messages
/// it held back while the gate is shut, and then every message is handled exactly once, never
/// more than two at a time, with nothing failed or dead-lettered.
pub async fn a_limit_of_handlers_at_once_holds_across_instances(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let watch = Watch::default();
    watch.gate.store(true, Ordering::SeqCst);
    let buses = instances(&db, |b| {
        b.handler::<Numbered, _>(watch.clone())
            .limit::<Numbered>(Limit::concurrency(2))
    })
    .await;
    let sender = sender(&db).await;
    sender
        .send_batch((0..30).map(|n| Numbered { n }))
        .await
        .unwrap();
    let scope = "Partners|concurrency|Conformance.Numbered";
    if kind.kind == Kind::Sqlite {
        // A SQLite file's handlers run one at a time (each inside the file's one write
        // transaction): one reaches the gate, and the others wait for the file, not the limit.
        eventually("one handler at the gate", async || {
            watch.at_gate.load(Ordering::SeqCst) == 1
        })
        .await;
    } else {
        eventually(
            "the two slots are held and the limit holds messages back",
            async || watch.at_gate.load(Ordering::SeqCst) == 2 && held_by(&db, scope).await >= 3,
        )
        .await;
    }
    watch.gate.store(false, Ordering::SeqCst);
    eventually("all 30 are handled", async || watch.handled_once(30)).await;
    stop(buses).await;
    sender.stop().await.unwrap();
    let most = watch.most("all");
    let allowed = if kind.kind == Kind::Sqlite { 1 } else { 2 };
    assert_eq!(most, allowed, "at most {allowed} at once, and that many");
    assert!(watch.handled_once(30), "each handled once");
    assert!(db.dead_letters().await.is_empty(), "nothing dead-lettered");
    let listed = db.admin().limits().await.unwrap();
    let limit = listed.iter().find(|l| l.scope == scope).expect("listed");
    assert_eq!(limit.slots, 2);
}

/// `Limit::concurrency(1)` per key over three instances: the first handler of each of three
/// keys waits at a gate, so the three keys run at once (where the database lets receivers run
/// side by side) while every other message of theirs finds its key's limit full; then each
/// message is handled exactly once, one at a time per key, nothing dead-lettered.
pub async fn a_limit_per_key_holds_each_key_and_lets_others_run(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let watch = Watch::default();
    watch.gate.store(true, Ordering::SeqCst);
    let buses = instances(&db, |b| {
        b.handler::<Keyed, _>(watch.clone())
            .limit_per_key::<Keyed>(Limit::concurrency(1), |m| m.key.clone())
    })
    .await;
    let sender = sender(&db).await;
    let keys = ["a", "b", "c"];
    sender
        .send_batch((0..30).map(|n| Keyed {
            key: keys[n as usize % keys.len()].to_string(),
            n,
        }))
        .await
        .unwrap();
    let running_at_once = if kind.kind == Kind::Sqlite { 1 } else { 3 };
    eventually(
        "a handler of each key at the gate, and messages held back",
        async || {
            if watch.at_gate.load(Ordering::SeqCst) != running_at_once {
                return false;
            }
            // (This process's one connection to a SQLite file is the gated handler's.)
            if kind.kind == Kind::Sqlite {
                return true;
            }
            let limits = db.admin().limits().await.unwrap();
            limits.iter().map(|l| l.held).sum::<i64>() >= 3
        },
    )
    .await;
    watch.gate.store(false, Ordering::SeqCst);
    eventually("all 30 are handled", async || watch.handled_once(30)).await;
    stop(buses).await;
    sender.stop().await.unwrap();
    for key in keys {
        assert_eq!(watch.most(key), 1, "one at a time for key {key}");
    }
    assert!(db.dead_letters().await.is_empty(), "nothing dead-lettered");
    let listed = db.admin().limits().await.unwrap();
    for key in keys {
        let scope = format!("Partners|concurrency|Conformance.Keyed|{key}");
        assert!(
            listed.iter().any(|l| l.scope == scope && l.slots == 1),
            "{scope} in {listed:?}"
        );
    }
}

/// Stops at message 1 until told: the rest of its batch waits behind it.
#[derive(Clone, Default)]
struct StopsAtOne {
    watch: Watch,
    go: Arc<AtomicBool>,
}

#[nimbus::handler]
impl Handler<Numbered> for StopsAtOne {
    async fn handle(&self, m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 1 {
            self.watch.at_gate.fetch_add(1, Ordering::SeqCst);
            // Bounded, so that a test that failed meanwhile ends instead of hanging.
            let deadline = Instant::now() + Duration::from_secs(120);
            while !self.go.load(Ordering::SeqCst) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        self.watch.run("all", m.n, Duration::ZERO).await;
        Ok(())
    }
}

/// Under `Limit::concurrency(2)`, a batch runs its messages one after another under one slot:
/// instance A takes messages 0 to 9 in one batch and stops inside message 1 (after 0 ran under
/// a slot); instance B then handles messages 10 to 39 under the second slot while A's batch is
/// open, and no message is held back. (A batch that took a slot per message would hold both,
/// and B's messages would wait.) On SQLite, whose one writer is A's batch, A goes on alone.
pub async fn a_batch_runs_its_messages_under_one_slot(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = db
        .builder("PartnersSender", "partners-sender-1")
        .route::<Numbered>("Partners")
        .create_queues_on_send(true)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sender
        .send_batch((0..40).map(|n| Numbered { n }))
        .await
        .unwrap();
    let handler = StopsAtOne::default();
    let start = |instance: &str| {
        db.builder("Partners", instance)
            .concurrency(1)
            .receive_batch(10)
            .handler::<Numbered, _>(handler.clone())
            .limit::<Numbered>(Limit::concurrency(2))
            .build()
            .unwrap()
            .start()
    };
    let a = start("partners-a").await.unwrap();
    eventually("A stops inside message 1", async || {
        handler.watch.at_gate.load(Ordering::SeqCst) == 1
    })
    .await;
    let mut buses = vec![a];
    if kind.kind != Kind::Sqlite {
        buses.push(start("partners-b").await.unwrap());
        eventually(
            "B handles messages 10 to 39 beside A's open batch",
            async || {
                let handled = handler.watch.handled.lock().unwrap();
                (10..40).all(|n| handled.contains_key(&n))
            },
        )
        .await;
        assert_eq!(
            held_by(&db, "Partners|concurrency|Conformance.Numbered").await,
            0,
            "no message held back"
        );
    }
    handler.go.store(true, Ordering::SeqCst);
    eventually("all 40 are handled", async || {
        handler.watch.handled_once(40)
    })
    .await;
    stop(buses).await;
    sender.stop().await.unwrap();
    assert!(handler.watch.most("all") <= 2);
}

/// `Limit::rate(5, 1 s)` over three instances: 20 messages sent at once are handled over at
/// least three seconds, never more than 5 starting within half a second (a window shorter than
/// the period, as the handlers' clocks start a little after their slots were taken), each
/// exactly once, with the messages held back counted and nothing dead-lettered.
pub async fn a_rate_limit_holds_across_instances(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let watch = Watch::default();
    let buses = instances(&db, |b| {
        b.handler::<Numbered, _>(watch.clone())
            .limit::<Numbered>(Limit::rate(5, Duration::from_secs(1)))
    })
    .await;
    let sender = sender(&db).await;
    sender
        .send_batch((0..20).map(|n| Numbered { n }))
        .await
        .unwrap();
    eventually("all 20 are handled", async || watch.handled_once(20)).await;
    stop(buses).await;
    sender.stop().await.unwrap();
    let mut starts = watch.starts.lock().unwrap().clone();
    starts.sort();
    let span = starts[starts.len() - 1] - starts[0];
    assert!(
        span >= Duration::from_millis(2_500),
        "20 at 5 a second start over 3 s or more, took {span:?}"
    );
    for (i, first) in starts.iter().enumerate() {
        let within = starts[i..]
            .iter()
            .take_while(|s| **s - *first < Duration::from_millis(500))
            .count();
        assert!(within <= 5, "{within} started within 500 ms");
    }
    assert!(db.dead_letters().await.is_empty(), "nothing dead-lettered");
    assert!(
        held_by(&db, "Partners|rate|Conformance.Numbered").await > 0,
        "the rate held messages back"
    );
}

/// Three worker processes × 8 receivers share `Limit::concurrency(2)` on their message type
/// while one of them is killed (SIGKILL) at random moments and started again, 6 times: a killed
/// process's slots are freed with its transactions (a slot held by a dead process would stop
/// the type for good), so the workers drain the queue, every message forwarded exactly once,
/// nothing dead-lettered.
pub fn sigkill_frees_the_slots_of_a_limit(kind: Setup, worker: &str) {
    const TOTAL: u32 = 300;
    crate::run_actix(async {
        let db = TestDatabase::new(kind).await;
        let sender = crate::suite::fill_worker_queue(&db, TOTAL).await;
        let env = [
            ("NIMBUS_LIMIT_CONCURRENCY", "2"),
            ("NIMBUS_HANDLER_MS", "5"),
        ];
        let spawn = || crate::suite::start_worker(&db, worker, &env);
        crate::suite::kill_among_three_then_drain(&db, TOTAL, 6, spawn).await;
        let mut forwarded: HashMap<u32, usize> = HashMap::new();
        for body in db.bodies("Done").await {
            let n = serde_json::from_slice::<Numbered>(&body).unwrap().n;
            *forwarded.entry(n).or_default() += 1;
        }
        assert!(
            (0..TOTAL).all(|n| forwarded.get(&n) == Some(&1)) && forwarded.len() == TOTAL as usize,
            "every message forwarded exactly once"
        );
        assert!(db.dead_letters().await.is_empty(), "nothing dead-lettered");
        let limits = db.admin().limits().await.unwrap();
        let scope = "Worker|concurrency|Conformance.Numbered";
        println!(
            "limit {scope}: {:?}",
            limits.iter().find(|l| l.scope == scope)
        );
        sender.stop().await.unwrap();
    });
}
