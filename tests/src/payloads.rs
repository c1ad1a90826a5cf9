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

/// A plain bus reads compressed bodies without being told, and its own sends stay plain.
pub async fn compressed_bodies_are_read_by_any_receiver(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    let reader = Reader::default();
    let plain = db
        .builder("Vault", "vault-1")
        .handler::<Secret, _>(reader.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let compressing = db
        .builder("Packer", "packer-1")
        .route::<Secret>("Vault")
        .body_compression(BodyCompression::gzip())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    compressing.send(secret(4)).await.unwrap();
    plain
        .send_with(secret(5), SendOptions::new().to("Vault"))
        .await
        .unwrap();
    eventually("both are read", async || {
        reader.0.lock().unwrap().len() == 2
    })
    .await;
    plain.stop().await.unwrap();
    compressing.stop().await.unwrap();
}
