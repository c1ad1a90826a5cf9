//! The bridge between databases: commands moved from a queue of one database to a queue of
//! another and back, events published on one handled by the subscribers of the other, exactly
//! once, also when the bridge is SIGKILLed between its two commits. The side under test is the
//! suite's database and layout; the other side is a PostgreSQL schema of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::bridge::{Bridge, BridgeConfig, BridgeSide, CROSSED};
use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};

use crate::db::{Kind, Setup};
use crate::payloads::Document;
use crate::suite::{Numbered, SomethingHappened};
use crate::{eventually, TestDatabase};

/// The other side: a PostgreSQL schema of its own, one table per queue.
async fn other_side() -> TestDatabase {
    TestDatabase::new(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await
}

/// `db` as a bridge's side.
fn side(db: &TestDatabase) -> BridgeSide {
    serde_json::from_value(side_json(db)).expect("a side")
}

/// Counts the documents it reads whole, by number.
#[derive(Clone, Default)]
struct Shelf(Arc<Mutex<Vec<(u32, usize)>>>);

#[nimbus::handler]
impl Handler<Document> for Shelf {
    async fn handle(&self, m: Document, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.lock().unwrap().push((m.n, m.text.len()));
        Ok(())
    }
}

/// Records the events it handles.
#[derive(Clone, Default)]
struct Listener(Arc<Mutex<Vec<u32>>>);

#[nimbus::handler]
impl Handler<SomethingHappened> for Listener {
    async fn handle(
        &self,
        m: SomethingHappened,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        self.0.lock().unwrap().push(m.n);
        Ok(())
    }
}

/// Documents sent to a queue of this side reach a queue of the other through the bridge, with
/// their ids, headers (and the bridge named in `Nimbus.Bridge.Crossed`) and a body stored apart
/// stored apart again; an event published on the other side reaches this side's subscriber.
pub async fn a_bridge_moves_commands_and_events_between_databases(kind: Setup) {
    let here = TestDatabase::new(kind).await;
    let there = other_side().await;
    // This side's subscriber first: its subscription is what the bridge's publish finds.
    let listener = Listener::default();
    let subscriber = here
        .builder("Listener", "listener-1")
        .handler::<SomethingHappened, _>(listener.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let config = BridgeConfig::new("test-bridge")
        .side("here", side(&here))
        .side("there", side(&there))
        .queue("here", "ToThere", "there", "Archive")
        .event("there", "Conformance.SomethingHappened", "here");
    let bridge = Bridge::start(config).await.unwrap();
    let sender = here
        .builder("Scanner", "scanner-1")
        .route::<Document>("ToThere")
        .claim_check(nimbus::ClaimCheck::in_database().above(1024))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // A row that can never cross (its headers are not JSON) goes to this side's dead letters
    // and holds nothing up.
    here.insert_raw("ToThere", "not json", b"{}", false).await;
    sender.send(crate::payloads::document(0, 5)).await.unwrap();
    sender
        .send(crate::payloads::document(1, 500))
        .await
        .unwrap();
    eventually("both documents cross", async || {
        there.count("Archive").await == 2
    })
    .await;
    let letters = here.dead_letters_within(1, Duration::from_secs(60)).await;
    let letter = String::from_utf8_lossy(&letters[0].body).to_string();
    assert!(letter.contains("cannot carry it"), "{letter}");
    let crossed = there.admin().peek("Archive", 10).await.unwrap();
    for message in &crossed {
        let headers: HashMap<String, String> = serde_json::from_str(&message.headers).unwrap();
        assert_eq!(
            headers.get(CROSSED).map(String::as_str),
            Some("test-bridge")
        );
    }
    let shelf = Shelf::default();
    let archive = there
        .builder("Archive", "archive-1")
        .handler::<Document, _>(shelf.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("both documents are read on the other side", async || {
        shelf.0.lock().unwrap().len() == 2
    })
    .await;
    let mut read = shelf.0.lock().unwrap().clone();
    read.sort_unstable();
    assert_eq!(
        read,
        vec![
            (0, crate::payloads::document(0, 5).text.len()),
            (1, crate::payloads::document(1, 500).text.len())
        ]
    );
    eventually("no body is left on either side", async || {
        here.admin().bodies().await.unwrap().is_empty()
            && there.admin().bodies().await.unwrap().is_empty()
    })
    .await;
    // An event published there reaches the subscriber here.
    let publisher = there
        .builder("Publisher", "publisher-1")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    publisher.publish(SomethingHappened { n: 7 }).await.unwrap();
    eventually("the event crosses to the subscriber", async || {
        listener.0.lock().unwrap().as_slice() == [7]
    })
    .await;
    assert_eq!(bridge.counts().crossed(), 3);
    assert_eq!(bridge.counts().duplicates(), 0);
    bridge.stop().await;
    for bus in [subscriber, sender, archive, publisher] {
        bus.stop().await.unwrap();
    }
}

/// A question the other side answers across the bridge.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.BridgeQuestion")]
pub struct Question {
    pub n: u32,
}

/// The answer to a [`Question`], with the reply address the answering handler saw.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, nimbus::Message)]
#[nimbus(type_name = "Conformance.BridgeAnswer")]
pub struct Answer {
    pub n: u32,
    pub reply_to: String,
}

/// Answers questions.
struct Answerer;

#[nimbus::handler]
impl Handler<Question> for Answerer {
    async fn handle(&self, m: Question, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let reply_to = ctx
            .headers()
            .get(nimbus::headers::REPLY_TO_ADDRESS)
            .cloned()
            .unwrap_or_default();
        ctx.reply(Answer { n: m.n, reply_to })?;
        Ok(())
    }
}

/// An endpoint on `here` that asks [`Question`]s, routed to the bridge's queue `Questions`.
async fn start_asker(here: &TestDatabase) -> nimbus::Bus {
    here.builder("Asker", "asker-1")
        .enable_requests()
        .route::<Question>("Questions")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

/// Waits until the replies queue of the bridge `name` on `there` is empty: the bridge commits
/// the take of an answer after the asker may have it.
async fn replies_drained(there: &TestDatabase, name: &str) {
    let queue = nimbus::bridge::replies_queue(name);
    eventually("the replies queue is empty", async || {
        there.count(&queue).await == 0
    })
    .await;
}

/// A request sent on this side is handled on the other, and its reply comes back through the
/// bridge's replies queue to the requester; a message in that queue that does not say where it
/// goes back to is dead-lettered there with the reason.
pub async fn a_reply_crosses_back_over_the_bridge(kind: Setup) {
    let here = TestDatabase::new(kind).await;
    let there = other_side().await;
    let config = BridgeConfig::new("reply-bridge")
        .side("here", side(&here))
        .side("there", side(&there))
        .queue("here", "Questions", "there", "Answerer");
    let bridge = Bridge::start(config).await.unwrap();
    let answerer = there
        .builder("Answerer", "answerer-1")
        .handler::<Question, _>(Answerer)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let asker = start_asker(&here).await;
    for n in [1, 2] {
        let answer: Answer = asker.request(Question { n }).await.unwrap();
        assert_eq!(answer.n, n);
        // The handler saw the bridge's replies queue on its side, not the asker's queue.
        assert!(
            answer.reply_to.contains("Bridge.reply-bridge.Replies"),
            "{}",
            answer.reply_to
        );
    }
    // Two questions and two answers (counted once the other side committed them, which the
    // asker may see first).
    eventually("four messages crossed", async || {
        bridge.counts().crossed() == 4
    })
    .await;
    replies_drained(&there, "reply-bridge").await;
    // A message that reached the replies queue without the way back goes to that side's dead
    // letters, saying why.
    there
        .insert_raw("Bridge.reply-bridge.Replies", "{}", b"{}", false)
        .await;
    let letters = there.dead_letters_within(1, Duration::from_secs(60)).await;
    let letter = letters[0].reason().unwrap_or_default();
    assert!(
        letter.contains("Nimbus.Bridge.ReturnTo.reply-bridge"),
        "{letter}"
    );
    bridge.stop().await;
    for bus in [asker, answerer] {
        bus.stop().await.unwrap();
    }
}

/// A request answered by an endpoint that does not copy the bridge's header to its reply, as an
/// NServiceBus endpoint does not: the reply, written to the bridge's replies queue as NServiceBus
/// writes one (`NServiceBus.RelatedTo` naming the request, its correlation id, intent `Reply`),
/// finds its way back to the requester by the way back the bridge kept when the request crossed.
pub async fn a_reply_without_the_bridges_header_finds_its_way_back(kind: Setup) {
    let here = TestDatabase::new(kind).await;
    let there = other_side().await;
    let config = BridgeConfig::new("nsb-bridge")
        .side("here", side(&here))
        .side("there", side(&there))
        .queue("here", "Questions", "there", "NsbAnswerer")
        .keep_ways_back();
    let bridge = Bridge::start(config).await.unwrap();
    let asker = start_asker(&here).await;
    let asking = {
        let asker = asker.clone();
        tokio::spawn(async move { asker.request::<Question, Answer>(Question { n: 7 }).await })
    };
    // The "NServiceBus endpoint": reads the request as it landed on its side, and writes its
    // reply to the address the request names, with NServiceBus's headers only.
    let mut landed = None;
    eventually("the request reaches the other side", async || {
        landed = there
            .admin()
            .peek("NsbAnswerer", 1)
            .await
            .unwrap()
            .into_iter()
            .next();
        landed.is_some()
    })
    .await;
    let request = landed.unwrap();
    let sent: HashMap<String, String> = serde_json::from_str(&request.headers).unwrap();
    let reply_to = sent["NServiceBus.ReplyToAddress"].clone();
    assert!(reply_to.contains("Bridge.nsb-bridge.Replies"), "{reply_to}");
    let reply_headers = serde_json::json!({
        "NServiceBus.MessageId": uuid::Uuid::new_v4().to_string(),
        "NServiceBus.MessageIntent": "Reply",
        "NServiceBus.CorrelationId": sent["NServiceBus.CorrelationId"],
        "NServiceBus.RelatedTo": sent["NServiceBus.MessageId"],
        "NServiceBus.ConversationId": sent.get("NServiceBus.ConversationId").cloned().unwrap_or_default(),
        "NServiceBus.EnclosedMessageTypes": "Conformance.BridgeAnswer",
        "NServiceBus.ContentType": "application/json",
    });
    let body = serde_json::json!({"n": 7, "reply_to": reply_to}).to_string();
    there
        .insert_raw(
            &reply_to,
            &reply_headers.to_string(),
            body.as_bytes(),
            false,
        )
        .await;
    let answer = tokio::time::timeout(Duration::from_secs(60), asking)
        .await
        .expect("the reply came back within a minute")
        .unwrap()
        .unwrap();
    assert_eq!(answer.n, 7);
    replies_drained(&there, "nsb-bridge").await;
    eventually("the question and its answer crossed", async || {
        bridge.counts().crossed() == 2
    })
    .await;
    assert!(
        there.dead_letters().await.is_empty(),
        "nothing dead-lettered"
    );
    bridge.stop().await;
    asker.stop().await.unwrap();
}

/// 10,000 messages cross between this side and the other, 5,000 each way, while the bridge's
/// process is SIGKILLed every half second or so (8 times, or until everything crossed) and
/// started again: every message reaches its destination queue exactly once.
pub fn sigkill_of_the_bridge_loses_nothing_and_doubles_nothing(kind: Setup, worker: &str) {
    const EACH_WAY: u32 = 5_000;
    crate::run_actix(async {
        let here = TestDatabase::new(kind).await;
        let there = other_side().await;
        let config = serde_json::json!({
            "name": "killed-bridge",
            "sides": {
                "here": side_json(&here),
                "there": side_json(&there),
            },
            "queues": [
                {"from": "here", "queue": "Outbox", "to": "there", "to_queue": "Inbox"},
                {"from": "there", "queue": "Outbox", "to": "here", "to_queue": "Inbox"},
            ],
        });
        let file = std::env::temp_dir().join(crate::unique("nimbus-bridge-config-"));
        std::fs::write(&file, config.to_string()).unwrap();
        let senders = [
            fill(&here, "Outbox", 0..EACH_WAY).await,
            fill(&there, "Outbox", EACH_WAY..2 * EACH_WAY).await,
        ];
        let spawn = || {
            crate::suite::Worker::spawn(
                std::process::Command::new(worker)
                    .arg(&file)
                    .stdout(std::process::Stdio::null()),
            )
        };
        let mut bridge = spawn();
        let mut progress = Vec::new();
        let crossed = async || here.count("Inbox").await + there.count("Inbox").await;
        for round in 0..8u64 {
            let before = crossed().await;
            if before >= i64::from(2 * EACH_WAY) {
                break; // everything crossed before this round's kill
            }
            crate::suite::wait_until("the bridge moves a message", || async {
                crossed().await > before
            })
            .await;
            tokio::time::sleep(Duration::from_millis(100 + (round * 97) % 400)).await;
            bridge.kill(); // SIGKILL, wherever it was
            progress.push(crossed().await);
            bridge = spawn();
        }
        println!("crossed after each kill: {progress:?}");
        crate::suite::wait_while_progressing("the bridge moves every message", || async {
            let done = crossed().await;
            (done, done >= i64::from(2 * EACH_WAY))
        })
        .await;
        bridge.kill();
        let mut seen: HashMap<u32, usize> = HashMap::new();
        for db in [&here, &there] {
            for body in db.bodies("Inbox").await {
                let n = serde_json::from_slice::<Numbered>(&body).unwrap().n;
                *seen.entry(n).or_default() += 1;
            }
        }
        let twice = seen.values().filter(|count| **count > 1).count();
        let lost = (0..2 * EACH_WAY).filter(|n| !seen.contains_key(n)).count();
        println!(
            "crossed {} messages: {lost} lost, {twice} twice",
            seen.len()
        );
        assert_eq!((lost, twice), (0, 0), "every message crossed exactly once");
        assert_eq!(here.count("Outbox").await + there.count("Outbox").await, 0);
        assert!(
            progress
                .iter()
                .any(|&p| p > 0 && p < i64::from(2 * EACH_WAY)),
            "a kill came in the middle of the work: {progress:?}"
        );
        for sender in senders {
            sender.stop().await.unwrap();
        }
        let _ = std::fs::remove_file(&file);
    });
}

/// `db` as the JSON of a side.
fn side_json(db: &TestDatabase) -> serde_json::Value {
    serde_json::json!({
        "database_url": db.url(),
        "schema": db.schema(),
        "storage_layout": match (db.shared_table(), db.nservicebus_shape()) {
            (true, _) => "shared_table",
            (_, true) => "nservicebus_postgresql",
            _ => "table_per_queue",
        },
    })
}

/// Sends `numbers` to `queue` of `db` from a bus of its own, which it returns.
async fn fill(db: &TestDatabase, queue: &str, numbers: std::ops::Range<u32>) -> nimbus::Bus {
    let sender = db
        .builder("Filler", "filler-1")
        .route::<Numbered>(queue)
        .create_queues_on_send(true)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for chunk in numbers.collect::<Vec<_>>().chunks(500) {
        sender
            .send_batch(chunk.iter().map(|&n| Numbered { n }))
            .await
            .unwrap();
    }
    sender
}
