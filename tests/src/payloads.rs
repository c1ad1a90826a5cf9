//! Body compression and encryption: what a bus writes is compressed and encrypted (no plaintext
//! in the table or the dead letters), what it receives is decrypted with any of its keys (a
//! rotation reads old messages), and a body it cannot decrypt goes to the dead letters with the
//! reason, to be replayed once the endpoint has the key.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nimbus::{BodyCompression, BodyEncryption, Handler, HandlerContext, HandlerError, SendOptions};

use crate::{eventually, Setup, TestDatabase};

/// A message with text worth hiding and compressing.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.Secret")]
pub struct Secret {
    pub text: String,
}

/// What every test sends: recognizable, and long enough to compress.
fn secret(n: u32) -> Secret {
    Secret {
        text: format!("TOP-SECRET-{n}-{}", "classified ".repeat(100)),
    }
}

const OLD_KEY: [u8; 32] = [0x11; 32];
const NEW_KEY: [u8; 32] = [0x22; 32];
const STRAY_KEY: [u8; 32] = [0x33; 32];

/// Records the numbers of the secrets it reads in full.
#[derive(Clone, Default)]
struct Reader(Arc<Mutex<Vec<String>>>);

#[nimbus::handler]
impl Handler<Secret> for Reader {
    async fn handle(&self, m: Secret, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let n = m
            .text
            .strip_prefix("TOP-SECRET-")
            .and_then(|rest| rest.split('-').next())
            .ok_or("a garbled secret reached the handler")?;
        self.0.lock().unwrap().push(n.to_string());
        Ok(())
    }
}

async fn sender(db: &TestDatabase, instance: &str, key_id: &str, key: [u8; 32]) -> nimbus::Bus {
    db.builder("Vaulter", instance)
        .route::<Secret>("Vault")
        .body_compression(BodyCompression::gzip().min_bytes(64))
        .body_encryption(BodyEncryption::new(key_id, key))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
}

fn vault(db: &TestDatabase, reader: &Reader, keys: BodyEncryption) -> nimbus::BusBuilder {
    db.builder("Vault", "vault-1")
        .body_encryption(keys.decrypt_only())
        .handler::<Secret, _>(reader.clone())
}

/// Two senders, one on the key before a rotation and one on the key after, write compressed,
/// encrypted bodies: no plaintext in the queue, headers that say how; a receiver holding both
/// keys reads both.
pub async fn encrypted_bodies_are_read_across_a_key_rotation(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let reader = Reader::default();
    let keys = BodyEncryption::new("2026-12", NEW_KEY).with_old_key("2026-06", OLD_KEY);
    // The queue exists before the senders write to it.
    let first = vault(&db, &reader, keys.clone()).build().unwrap();
    first.start().await.unwrap().stop().await.unwrap();
    let before = sender(&db, "before-rotation", "2026-06", OLD_KEY).await;
    let after = sender(&db, "after-rotation", "2026-12", NEW_KEY).await;
    before.send(secret(1)).await.unwrap();
    after.send(secret(2)).await.unwrap();
    let queued = db.admin().peek("Vault", 10).await.unwrap();
    assert_eq!(queued.len(), 2);
    for message in &queued {
        assert!(
            !message.body.windows(10).any(|w| w == b"TOP-SECRET"),
            "no plaintext in the queue"
        );
        assert!(
            message.body.len() < 600,
            "compressed: {} bytes",
            message.body.len()
        );
        assert!(
            message.headers.contains("aes-256-gcm"),
            "{}",
            message.headers
        );
        assert!(message.headers.contains("gzip"), "{}", message.headers);
    }
    let bus = vault(&db, &reader, keys)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("both secrets are read", async || {
        reader.0.lock().unwrap().len() == 2
    })
    .await;
    let mut read = reader.0.lock().unwrap().clone();
    read.sort();
    assert_eq!(read, ["1", "2"]);
    bus.stop().await.unwrap();
    before.stop().await.unwrap();
    after.stop().await.unwrap();
}

/// A body encrypted with a key the receiver lacks, and one changed in the table, go to the dead
/// letters with reasons that say so, still encrypted; replayed once the receiver has the key,
/// the first is read.
pub async fn a_body_that_cannot_be_decrypted_is_dead_lettered(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let reader = Reader::default();
    let keys = BodyEncryption::new("2026-12", NEW_KEY);
    let bus = vault(&db, &reader, keys.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let stray = sender(&db, "stray", "stray", STRAY_KEY).await;
    stray.send(secret(3)).await.unwrap();
    let letters = db.dead_letters_within(1, Duration::from_secs(60)).await;
    let letter = String::from_utf8_lossy(&letters[0].body).into_owned();
    assert!(
        letter.contains("\\\"stray\\\"") || letter.contains("\"stray\""),
        "the reason names the key: {letter}"
    );
    assert!(letter.contains("with_old_key"), "says what to do: {letter}");
    assert!(!letter.contains("TOP-SECRET"), "still encrypted: {letter}");
    assert!(reader.0.lock().unwrap().is_empty(), "no handler ran");
    bus.stop().await.unwrap();
    // With the stray key as an old one, the replayed message is read.
    let id = letters[0].message_id.parse().unwrap();
    assert!(db.admin().replay_dead_letter(id).await.unwrap());
    let bus = vault(&db, &reader, keys.with_old_key("stray", STRAY_KEY))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually("the replayed secret is read", async || {
        reader.0.lock().unwrap().as_slice() == ["3"]
    })
    .await;
    bus.stop().await.unwrap();
    stray.stop().await.unwrap();
}

/// A plain bus reads gzip and zstd bodies without being told, and its own sends stay plain.
pub async fn compressed_bodies_are_read_by_any_receiver(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let reader = Reader::default();
    let plain = db
        .builder("Vault", "vault-1")
        .handler::<Secret, _>(reader.clone());
    // The queue exists before the senders write to it.
    plain
        .build()
        .unwrap()
        .start()
        .await
        .unwrap()
        .stop()
        .await
        .unwrap();
    let mut compressing = Vec::new();
    for (name, compression) in [
        ("Packer", BodyCompression::gzip()),
        ("Zipper", BodyCompression::zstd()),
    ] {
        compressing.push(
            db.builder(name, name)
                .route::<Secret>("Vault")
                .body_compression(compression)
                .build()
                .unwrap()
                .start()
                .await
                .unwrap(),
        );
    }
    compressing[0].send(secret(4)).await.unwrap();
    compressing[1].send(secret(6)).await.unwrap();
    let mut encodings: Vec<String> = Vec::new();
    for message in db.admin().peek("Vault", 10).await.unwrap() {
        assert!(
            message.body.len() < 600,
            "compressed: {} bytes",
            message.body.len()
        );
        let headers: std::collections::HashMap<String, String> =
            serde_json::from_str(&message.headers).unwrap();
        encodings.extend(headers.get("Nimbus.ContentEncoding").cloned());
    }
    encodings.sort();
    assert_eq!(encodings, ["gzip", "zstd"]);
    let plain = db
        .builder("Vault", "vault-1")
        .handler::<Secret, _>(reader.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    plain
        .send_with(secret(5), SendOptions::new().to("Vault"))
        .await
        .unwrap();
    eventually("all three are read", async || {
        reader.0.lock().unwrap().len() == 3
    })
    .await;
    let mut read = reader.0.lock().unwrap().clone();
    read.sort();
    assert_eq!(read, ["4", "5", "6"]);
    plain.stop().await.unwrap();
    for bus in compressing {
        bus.stop().await.unwrap();
    }
}

/// A document large enough for a claim check of 1 KiB.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.Document")]
pub struct Document {
    pub n: u32,
    pub text: String,
}

pub(crate) fn document(n: u32, words: usize) -> Document {
    Document {
        n,
        text: format!("doc-{n} {}", "paragraph ".repeat(words)),
    }
}

/// Files documents: fails document 1's first attempt, refuses document 2 for good until
/// `accept_all` is set, and records the number and size of each document it files.
#[derive(Clone, Default)]
struct Filer {
    filed: Arc<Mutex<Vec<(u32, usize)>>>,
    attempts: Arc<Mutex<Vec<u32>>>,
    accept_all: Arc<std::sync::atomic::AtomicBool>,
}

#[nimbus::handler]
impl Handler<Document> for Filer {
    async fn handle(&self, m: Document, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let tries = {
            let mut attempts = self.attempts.lock().unwrap();
            attempts.push(m.n);
            attempts.iter().filter(|n| **n == m.n).count()
        };
        let accept_all = self.accept_all.load(std::sync::atomic::Ordering::SeqCst);
        if m.n == 1 && tries == 1 {
            return Err("the first attempt at document 1 fails".into());
        }
        if m.n == 2 && !accept_all {
            return Err(nimbus::Unrecoverable::new("document 2 is refused").into());
        }
        assert!(m.text.starts_with(&format!("doc-{} ", m.n)));
        self.filed.lock().unwrap().push((m.n, m.text.len()));
        Ok(())
    }
}

/// Bodies stored apart, counted over every queue.
async fn stored_bodies(db: &TestDatabase) -> (i64, i64) {
    let summary = db.admin().bodies().await.unwrap();
    (
        summary.iter().map(|s| s.bodies).sum(),
        summary.iter().map(|s| s.dead_lettered).sum(),
    )
}

/// The claim check: a body above the threshold is stored apart (its row's body is empty), read
/// by the handler whole, kept for a retry and for a dead letter, given back to a replay, and
/// deleted with the message's last row; a small body stays in its row.
pub async fn large_bodies_are_stored_apart_and_removed_with_their_message(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let sender = db
        .builder("Scanner", "scanner-1")
        .route::<Document>("Archive")
        .create_queues_on_send(true)
        .claim_check(nimbus::ClaimCheck::in_database().above(1024))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    // Written before anything receives them: three large, one small.
    for n in 0..3 {
        sender.send(document(n, 500)).await.unwrap();
    }
    sender.send(document(3, 5)).await.unwrap();
    let rows = db.bodies("Archive").await;
    assert_eq!(rows.len(), 4, "four messages wait");
    assert_eq!(
        rows.iter().filter(|body| body.is_empty()).count(),
        3,
        "the three large bodies are not in their rows"
    );
    assert_eq!(
        stored_bodies(&db).await,
        (3, 0),
        "three bodies stored apart"
    );

    let filer = Filer::default();
    let archive = db
        .builder("Archive", "archive-1")
        .handler::<Document, _>(filer.clone())
        .immediate_retries(1)
        .delayed_retries(0, Duration::from_millis(10))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    eventually(
        "documents 0, 1 and 3 are filed, 2 is a dead letter",
        async || filer.filed.lock().unwrap().len() == 3 && db.dead_letters().await.len() == 1,
    )
    .await;
    let mut filed = filer.filed.lock().unwrap().clone();
    filed.sort();
    let large = document(0, 500).text.len();
    assert_eq!(
        filed,
        vec![(0, large), (1, large), (3, document(3, 5).text.len())]
    );
    eventually("only the dead letter's body is kept", async || {
        stored_bodies(&db).await == (1, 1)
    })
    .await;

    // The dead letter is replayed with its body, which goes once it is handled.
    filer
        .accept_all
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let letter = db.dead_letters().await.remove(0);
    assert!(
        !String::from_utf8_lossy(&letter.body).contains("paragraph paragraph"),
        "the dead letter holds the claim, not the body"
    );
    let id = letter.message_id.parse().unwrap();
    assert!(db.admin().replay_dead_letter(id).await.unwrap());
    eventually("the replayed document is filed", async || {
        filer.filed.lock().unwrap().iter().any(|(n, _)| *n == 2)
    })
    .await;
    eventually("no body is left", async || {
        stored_bodies(&db).await == (0, 0)
    })
    .await;
    archive.stop().await.unwrap();
    sender.stop().await.unwrap();
}

/// A numbered message padded to a size: the SIGKILL test's large message.
#[derive(Debug, serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Conformance.Padded")]
pub struct Padded {
    pub n: u32,
    pub pad: String,
}

impl Padded {
    /// Message `n`, its pad `bytes` long and made of its number, so that a body mixed up with
    /// another's shows.
    pub fn new(n: u32, bytes: usize) -> Self {
        let unit = format!("{n:08}");
        Padded {
            n,
            pad: unit.repeat(bytes / unit.len()),
        }
    }

    /// Its pad is its own number's.
    pub fn is_whole(&self) -> bool {
        let unit = format!("{:08}", self.n);
        !self.pad.is_empty() && self.pad.len().is_multiple_of(unit.len()) && {
            self.pad
                .as_bytes()
                .chunks(unit.len())
                .all(|chunk| chunk == unit.as_bytes())
        }
    }
}

/// Records the numbers of the padded messages it reads whole.
#[derive(Clone, Default)]
struct PaddedReader(Arc<Mutex<Vec<u32>>>);

#[nimbus::handler]
impl Handler<Padded> for PaddedReader {
    async fn handle(&self, m: Padded, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if !m.is_whole() {
            return Err(
                nimbus::Unrecoverable::new(format!("padded message {} is garbled", m.n)).into(),
            );
        }
        self.0.lock().unwrap().push(m.n);
        Ok(())
    }
}

/// Large messages, their bodies stored apart, are received and sent again (stored apart again)
/// by three worker processes while one of them is SIGKILLed at random moments: at the end every
/// message was forwarded exactly once, no body of a handled message is left (none orphaned), and
/// every forwarded message's body is there and whole (none lost).
pub fn sigkill_loses_no_body_stored_apart(kind: Setup, worker: &str) {
    sigkill_with_bodies_apart(kind, worker, None);
}

/// [`sigkill_loses_no_body_stored_apart`] with the bodies in an object store (a local folder):
/// uploads whose sends a kill cut short are orphans, counted and deleted by the sweep, which
/// leaves exactly the bodies the waiting messages name.
pub fn sigkill_loses_no_body_in_an_object_store(kind: Setup, worker: &str) {
    let folder = std::env::temp_dir().join(crate::unique("nimbus-sigkill-bodies-"));
    std::fs::create_dir_all(&folder).unwrap();
    sigkill_with_bodies_apart(kind, worker, Some(&folder));
    let _ = std::fs::remove_dir_all(&folder);
}

fn sigkill_with_bodies_apart(kind: Setup, worker: &str, folder: Option<&std::path::Path>) {
    const TOTAL: u32 = 300;
    const PAD: usize = 96 * 1024;
    crate::run_actix(async {
        let db = TestDatabase::new(kind).await;
        let claim_check = match folder {
            Some(folder) => nimbus::ClaimCheck::object_store(
                "files",
                Arc::new(object_store::local::LocalFileSystem::new_with_prefix(folder).unwrap()),
            )
            .orphans_after(Duration::ZERO),
            None => nimbus::ClaimCheck::in_database(),
        }
        .above(64 * 1024);
        let sender = db
            .builder("Scanner", "scanner-1")
            .route::<Padded>("Worker")
            .create_queues_on_send(true)
            .claim_check(claim_check.clone())
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        for n in 0..TOTAL {
            sender.send(Padded::new(n, PAD)).await.unwrap();
        }
        let worker_queue = db.admin().bodies().await.unwrap();
        assert_eq!(
            worker_queue.iter().map(|b| b.bodies).sum::<i64>(),
            i64::from(TOTAL),
            "every body is stored apart"
        );
        let above = (64 * 1024).to_string();
        let folder_text = folder.map(|f| f.display().to_string()).unwrap_or_default();
        let mut env = vec![("NIMBUS_CLAIM_CHECK_ABOVE", above.as_str())];
        if folder.is_some() {
            env.push(("NIMBUS_CLAIM_CHECK_DIR", folder_text.as_str()));
        }
        let spawn = || crate::suite::start_worker(&db, worker, &env);
        crate::suite::kill_among_three_then_drain(&db, TOTAL, 6, spawn).await;
        let mut forwarded = std::collections::HashMap::<u32, usize>::new();
        for body in db.bodies("Done").await {
            let n = serde_json::from_slice::<crate::suite::Numbered>(&body)
                .unwrap()
                .n;
            *forwarded.entry(n).or_default() += 1;
        }
        assert!(
            (0..TOTAL).all(|n| forwarded.get(&n) == Some(&1)),
            "every message forwarded exactly once"
        );
        assert!(db.dead_letters().await.is_empty(), "nothing dead-lettered");
        let stored = db.admin().bodies().await.unwrap();
        println!("bodies stored apart after the kills: {stored:?}");
        let of = |queue: &str| {
            stored
                .iter()
                .filter(|b| b.queue == queue)
                .map(|b| b.bodies)
                .sum::<i64>()
        };
        assert_eq!(
            of("Worker"),
            0,
            "no body of a handled message is left: none orphaned"
        );
        assert_eq!(
            of("Archive"),
            i64::from(TOTAL),
            "one body per archived message"
        );
        assert_eq!(db.count("Archive").await, i64::from(TOTAL));
        if let Some(folder) = folder {
            // Handled messages' bodies and cut-short uploads, swept; the archived ones stay.
            let files = files_under(folder).len();
            let swept = db.admin().sweep_object_stores(&claim_check).await.unwrap();
            let orphans = (files as u64).saturating_sub(2 * u64::from(TOTAL));
            println!(
                "object store after the kills: {files} files; swept {swept} (the {TOTAL} \
                 handled messages' bodies and {orphans} uploads whose sends were cut short)"
            );
            assert_eq!(
                files_under(folder).len(),
                TOTAL as usize,
                "the archived bodies stay"
            );
            assert_eq!(swept, files as u64 - u64::from(TOTAL));
        }
        // Every archived message's body is there and whole: none lost.
        let reader = PaddedReader::default();
        let archive = db
            .builder("Archive", "archive-1")
            .handler::<Padded, _>(reader.clone())
            .claim_check(claim_check.clone())
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        crate::eventually_within(
            "every archived message is read whole",
            Duration::from_secs(300),
            async || reader.0.lock().unwrap().len() >= TOTAL as usize,
        )
        .await;
        let mut read = reader.0.lock().unwrap().clone();
        read.sort_unstable();
        assert_eq!(read, (0..TOTAL).collect::<Vec<_>>());
        eventually("no body is left", async || {
            db.admin().bodies().await.unwrap().is_empty()
        })
        .await;
        if let Some(folder) = folder {
            db.admin().sweep_object_stores(&claim_check).await.unwrap();
            assert!(files_under(folder).is_empty(), "nothing left in the store");
        }
        archive.stop().await.unwrap();
        sender.stop().await.unwrap();
    });
}

/// The bodies under `folder`, at any depth: files named by an id (a local folder's store also
/// leaves `<id>#<n>` files of uploads a kill cut short, which it never lists).
fn files_under(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(next) = folders.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            let named_by_id = path
                .file_name()
                .and_then(|name| uuid::Uuid::parse_str(&name.to_string_lossy()).ok())
                .is_some();
            match path.is_dir() {
                true => folders.push(path),
                false if named_by_id => found.push(path),
                false => {}
            }
        }
    }
    found
}

/// Bodies in an object store (a local folder): uploaded with the send, named by a row of
/// `NimbusBodies`, read by a receiver that knows the store, dead-lettered with the reason by one
/// that does not; the sweep deletes an upload whose send never committed and, once handled, the
/// bodies no row names any more, never one a waiting message names.
pub async fn bodies_in_an_object_store_are_swept_once_no_message_names_them(kind: Setup) {
    use nimbus::ClaimCheck;
    let db = TestDatabase::new(kind).await;
    let filer = Filer::default();
    filer
        .accept_all
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let folder = std::env::temp_dir().join(crate::unique("nimbus-object-bodies-"));
    std::fs::create_dir_all(&folder).unwrap();
    let store: Arc<dyn object_store::ObjectStore> =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&folder).unwrap());
    let claim_check = ClaimCheck::object_store("files", store.clone())
        .above(1024)
        .orphans_after(Duration::ZERO);
    let sender = db
        .builder("Scanner", "scanner-1")
        .route::<Document>("Archive")
        .create_queues_on_send(true)
        .claim_check(claim_check.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for n in 0..3 {
        sender.send(document(n, 500)).await.unwrap();
    }
    let uploaded = files_under(&folder);
    assert_eq!(uploaded.len(), 3, "three bodies uploaded: {uploaded:?}");
    let summary = db.admin().bodies().await.unwrap();
    assert_eq!(
        summary
            .iter()
            .map(|b| (b.bodies, b.in_object_store))
            .collect::<Vec<_>>(),
        vec![(3, 3)],
        "their rows name the store"
    );
    assert!(db.bodies("Archive").await.iter().all(Vec::is_empty));
    // An upload whose send never committed (its process died before the commit).
    let orphan = uploaded[0].with_file_name(uuid::Uuid::new_v4().to_string());
    std::fs::write(&orphan, b"never sent").unwrap();
    assert_eq!(
        db.admin().sweep_object_stores(&claim_check).await.unwrap(),
        1,
        "only the orphan is swept: the waiting messages name the others"
    );
    assert!(!orphan.exists());
    assert_eq!(files_under(&folder).len(), 3);

    // A receiver that does not know the store sends the first to the dead letters, saying so.
    let unaware = db
        .builder("Archive", "archive-1")
        .handler::<Document, _>(filer.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    db.dead_letters_within(1, Duration::from_secs(60)).await;
    unaware.stop().await.unwrap();
    let letters = db.dead_letters().await;
    let reason = String::from_utf8_lossy(&letters[0].body).to_string();
    assert!(
        reason.contains("object store")
            && reason.contains("files")
            && reason.contains("reads_store"),
        "{reason}"
    );
    // One that reads it handles the rest, and the replayed dead letter.
    let reading = db
        .builder("Archive", "archive-1")
        .handler::<Document, _>(filer.clone())
        .claim_check(ClaimCheck::off().reads_store("files", store.clone()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for letter in &letters {
        let id = letter.message_id.parse().unwrap();
        assert!(db.admin().replay_dead_letter(id).await.unwrap());
    }
    eventually("the three documents are filed", async || {
        let mut numbers: Vec<u32> = filer
            .filed
            .lock()
            .unwrap()
            .iter()
            .map(|(n, _)| *n)
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers.len() == 3
    })
    .await;
    eventually("no row names a body", async || {
        db.admin().bodies().await.unwrap().is_empty()
    })
    .await;
    assert_eq!(
        db.admin().sweep_object_stores(&claim_check).await.unwrap(),
        3,
        "the handled messages' bodies are swept"
    );
    assert!(files_under(&folder).is_empty());
    reading.stop().await.unwrap();
    sender.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&folder);
}
