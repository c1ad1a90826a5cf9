//! What a bus does to message bodies between serializing and writing them, and back before a
//! handler reads them: compression ([`BodyCompression`], gzip, or zstd with the `zstd` feature)
//! and encryption
//! ([`BodyEncryption`], AES-256-GCM with key ids, so keys can rotate). Compression comes first
//! (encrypted bytes do not compress). Each is marked in a header of the message, so a receiver
//! knows what to undo, and one that cannot (no key of that id, a changed body) sends the message
//! to the dead letters with the reason instead of handing a handler garbage.

use std::collections::BTreeSet;
use std::fmt;
use std::io::Read;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key, Nonce};

use crate::error::{NimbusError, Result};
use crate::headers::{self, Headers};
use crate::message::Message;

/// The value of [`headers::CONTENT_ENCODING`] for a gzip-compressed body.
pub const GZIP: &str = "gzip";

/// The value of [`headers::CONTENT_ENCODING`] for a zstd-compressed body (a zstd frame, RFC 8878).
pub const ZSTD: &str = "zstd";

/// The value of [`headers::ENCRYPTION`] for a body encrypted by [`BodyEncryption`].
pub const AES_256_GCM: &str = "aes-256-gcm";

/// The bytes of an AES-GCM nonce, written before the ciphertext.
const NONCE_LEN: usize = 12;

/// The bytes of an AES-GCM tag, at the end of the ciphertext.
const TAG_LEN: usize = 16;

/// The longest key id a header carries.
pub const MAX_KEY_ID_LEN: usize = 64;

/// Which message types a codec applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Scope {
    /// Every message the bus sends.
    #[default]
    All,
    /// Only these types (their [`Message::TYPE_NAME`]s).
    Types(BTreeSet<&'static str>),
    /// None: the bus only undoes it on what it receives.
    Nothing,
}

impl Scope {
    fn covers(&self, type_name: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Types(types) => types.contains(type_name),
            Scope::Nothing => false,
        }
    }

    fn add(&mut self, type_name: &'static str) {
        match self {
            Scope::Types(types) => {
                types.insert(type_name);
            }
            _ => *self = Scope::Types(BTreeSet::from([type_name])),
        }
    }
}

/// Compresses the bodies a bus sends (see
/// [`BusBuilder::body_compression`](crate::BusBuilder::body_compression)) with gzip
/// ([`gzip`](Self::gzip)) or, with the crate's `zstd` feature, zstd (`zstd()`):
/// every message's, or only those of the types named with [`only`](Self::only), and only bodies
/// of at least [`min_bytes`](Self::min_bytes) (1,024 by default) whose compressed form is
/// smaller. A compressed body carries the header `Nimbus.ContentEncoding: gzip` (or `zstd`);
/// every Nimbus receiver decompresses gzip, whether or not it compresses its own sends, and zstd
/// when it is built with the `zstd` feature (one without it dead-letters the message with a
/// reason that says to enable it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyCompression {
    min_bytes: usize,
    format: Format,
    level: i32,
    scope: Scope,
}

/// A compression format [`BodyCompression`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Gzip,
    #[cfg(feature = "zstd")]
    Zstd,
}

/// gzip's level when none is given: its fastest, which leaves a body of JSON text a little
/// larger than level 6 does in a fraction of the time.
pub const DEFAULT_GZIP_LEVEL: u32 = 1;

/// zstd's level when none is given: its fastest standard level.
#[cfg(feature = "zstd")]
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// The highest level zstd has.
#[cfg(feature = "zstd")]
const MAX_ZSTD_LEVEL: i32 = 22;

impl BodyCompression {
    /// gzip, at level [`DEFAULT_GZIP_LEVEL`] (the fastest), for bodies of 1,024 bytes or more.
    pub fn gzip() -> Self {
        BodyCompression {
            min_bytes: 1024,
            format: Format::Gzip,
            level: DEFAULT_GZIP_LEVEL as i32,
            scope: Scope::All,
        }
    }

    /// zstd, at level [`DEFAULT_ZSTD_LEVEL`], for bodies of 1,024 bytes or more: smaller bodies
    /// than gzip's, in less time. Its receivers need the `zstd` feature too (a receiver built
    /// without it dead-letters what it cannot read, saying so): switch receivers first, then
    /// senders.
    ///
    /// ```
    /// use nimbus::BodyCompression;
    /// let compression = BodyCompression::zstd().level(3).min_bytes(4096);
    /// # let _ = compression;
    /// ```
    #[cfg(feature = "zstd")]
    pub fn zstd() -> Self {
        BodyCompression {
            min_bytes: 1024,
            format: Format::Zstd,
            level: DEFAULT_ZSTD_LEVEL,
            scope: Scope::All,
        }
    }

    /// The level: for gzip 1 (fastest) to 9 (smallest), for zstd 1 (fastest) to 22
    /// (smallest); values outside count as the nearest end.
    pub fn level(mut self, level: u32) -> Self {
        let highest = match self.format {
            Format::Gzip => 9,
            #[cfg(feature = "zstd")]
            Format::Zstd => MAX_ZSTD_LEVEL,
        };
        self.level = i32::try_from(level).unwrap_or(i32::MAX).clamp(1, highest);
        self
    }

    /// Compresses only bodies of at least `bytes` (as JSON): small bodies gain nothing.
    pub fn min_bytes(mut self, bytes: usize) -> Self {
        self.min_bytes = bytes;
        self
    }

    /// Compresses only the bodies of `M` and of the other types named this way (repeatable);
    /// without it, every body.
    pub fn only<M: Message>(mut self) -> Self {
        self.scope.add(M::TYPE_NAME);
        self
    }

    /// The value of the `Nimbus.ContentEncoding` header this compression writes.
    pub fn content_encoding(&self) -> &'static str {
        match self.format {
            Format::Gzip => GZIP,
            #[cfg(feature = "zstd")]
            Format::Zstd => ZSTD,
        }
    }

    /// `body` compressed, when it is worth it: `None` to send it as it is.
    fn compress(&self, type_name: &str, body: &[u8]) -> Option<Vec<u8>> {
        if body.len() < self.min_bytes || !self.scope.covers(type_name) {
            return None;
        }
        let compressed = match self.format {
            Format::Gzip => gzip(body, self.level.unsigned_abs())?,
            #[cfg(feature = "zstd")]
            Format::Zstd => zstd_frame(body, self.level)?,
        };
        (compressed.len() < body.len()).then_some(compressed)
    }
}

thread_local! {
    /// Each thread's deflate state and its level, reset between bodies: making one allocates
    /// and clears hundreds of kilobytes, which cost more than compressing a small body.
    static DEFLATE: std::cell::RefCell<Option<(u32, flate2::Compress)>> =
        const { std::cell::RefCell::new(None) };
}

/// `body` in the gzip format (RFC 1952) at `level`: a header, the deflate stream, its CRC-32 and
/// length. `None` if deflate fails (it does not on memory it is given).
fn gzip(body: &[u8], level: u32) -> Option<Vec<u8>> {
    /// No name, no time, no extra fields; "unknown" operating system.
    const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut out = Vec::with_capacity(body.len() / 2 + 64);
    out.extend_from_slice(&HEADER);
    DEFLATE.with(|state| {
        let mut state = state.borrow_mut();
        if state.as_ref().is_none_or(|(kept, _)| *kept != level) {
            let fresh = flate2::Compress::new(flate2::Compression::new(level), false);
            *state = Some((level, fresh));
        }
        let (_, deflate) = state.as_mut()?;
        deflate.reset();
        let start = deflate.total_in();
        loop {
            let read = usize::try_from(deflate.total_in() - start).ok()?;
            if out.capacity() - out.len() < 64 {
                out.reserve(out.capacity().max(1024));
            }
            let status = deflate
                .compress_vec(&body[read..], &mut out, flate2::FlushCompress::Finish)
                .ok()?;
            if status == flate2::Status::StreamEnd {
                return Some(());
            }
        }
    })?;
    let mut crc = flate2::Crc::new();
    crc.update(body);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE: the length modulo 2^32, as the format defines it.
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    Some(out)
}

#[cfg(feature = "zstd")]
thread_local! {
    /// Each thread's zstd compression context and its level, reused between bodies as gzip's
    /// state is.
    static ZSTD_CONTEXT: std::cell::RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

/// `body` as one zstd frame (with its size, so a reader can allocate once) at `level`. `None`
/// if zstd fails (it does not on memory it is given).
#[cfg(feature = "zstd")]
fn zstd_frame(body: &[u8], level: i32) -> Option<Vec<u8>> {
    ZSTD_CONTEXT.with(|context| {
        let mut context = context.borrow_mut();
        if context.as_ref().is_none_or(|(kept, _)| *kept != level) {
            *context = Some((level, zstd::bulk::Compressor::new(level).ok()?));
        }
        let (_, compressor) = context.as_mut()?;
        compressor.compress(body).ok()
    })
}

/// A 256-bit key of [`BodyEncryption`]. Never printed: its `Debug` shows only that it is one.
#[derive(Clone, PartialEq, Eq)]
struct SecretKey([u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

/// Encrypts the bodies a bus sends with AES-256-GCM, and decrypts the ones it receives (see
/// [`BusBuilder::body_encryption`](crate::BusBuilder::body_encryption)).
///
/// Keys have ids. The key given to [`new`](Self::new) encrypts; keys added with
/// [`with_old_key`](Self::with_old_key) only decrypt, so messages sent before a rotation are
/// still read: to rotate, give every receiver the new key as an old one first, then make it the
/// current one on the senders. An encrypted body carries the headers `Nimbus.Encryption:
/// aes-256-gcm` and `Nimbus.EncryptionKeyId: <id>`; its bytes are a random 12-byte nonce, the
/// ciphertext and the 16-byte tag. Headers are not encrypted.
///
/// The keys come from the application (a secret store, an environment variable): they are never
/// logged, printed (`Debug` shows the ids only) or shown by the console.
///
/// ```
/// use nimbus::BodyEncryption;
/// let keys = BodyEncryption::from_base64("2026-12", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")?
///     .with_old_key("2026-06", [7u8; 32]);
/// assert_eq!(format!("{keys:?}"), r#"BodyEncryption { current: "2026-12", keys: ["2026-06", "2026-12"], encrypts: All }"#);
/// # Ok::<(), nimbus::NimbusError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BodyEncryption {
    current: String,
    keys: Vec<(String, SecretKey)>,
    scope: Scope,
}

impl fmt::Debug for BodyEncryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        f.debug_struct("BodyEncryption")
            .field("current", &self.current)
            .field("keys", &ids)
            .field("encrypts", &format_args!("{}", self.scope_words()))
            .finish()
    }
}

impl BodyEncryption {
    /// Encrypts with `key` (32 bytes), named `key_id` in the header of every body it encrypts.
    pub fn new(key_id: impl Into<String>, key: [u8; 32]) -> Self {
        let current = key_id.into();
        BodyEncryption {
            keys: vec![(current.clone(), SecretKey(key))],
            current,
            scope: Scope::All,
        }
    }

    /// As [`new`](Self::new), with the key given as standard base64 (44 characters for 32
    /// bytes), as secret stores and environment variables hold it. The error never quotes the
    /// text.
    pub fn from_base64(key_id: impl Into<String>, key: &str) -> Result<Self> {
        Ok(Self::new(key_id, decode_key(key)?))
    }

    /// Adds a key that only decrypts: bodies encrypted with it before a rotation are still read.
    pub fn with_old_key(mut self, key_id: impl Into<String>, key: [u8; 32]) -> Self {
        self.keys.push((key_id.into(), SecretKey(key)));
        self
    }

    /// Adds every key of `other` as a key that only decrypts.
    pub fn with_old_keys_of(mut self, other: BodyEncryption) -> Self {
        for (id, key) in other.keys {
            if !self.keys.iter().any(|(known, _)| *known == id) {
                self.keys.push((id, key));
            }
        }
        self
    }

    /// Encrypts only the bodies of `M` and of the other types named this way (repeatable);
    /// without it, every body the bus sends.
    pub fn only<M: Message>(mut self) -> Self {
        self.scope.add(M::TYPE_NAME);
        self
    }

    /// Encrypts nothing the bus sends; only decrypts what it receives.
    pub fn decrypt_only(mut self) -> Self {
        self.scope = Scope::Nothing;
        self
    }

    /// What it encrypts, as `Debug` says it.
    fn scope_words(&self) -> String {
        match &self.scope {
            Scope::All => "All".to_string(),
            Scope::Types(types) => format!("Only({types:?})"),
            Scope::Nothing => "Nothing".to_string(),
        }
    }

    /// The key ids, in the order given.
    fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Checks the key ids: each 1 to [`MAX_KEY_ID_LEN`] visible characters, none twice.
    pub(crate) fn check(&self) -> Result<()> {
        let ids = self.ids();
        for id in &ids {
            if id.is_empty()
                || id.len() > MAX_KEY_ID_LEN
                || id.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(NimbusError::config(
                    format!(
                        "the body encryption key id {id:?} cannot be carried in a header: it must \
                         be 1 to {MAX_KEY_ID_LEN} characters without spaces"
                    ),
                    "name keys like \"2026-12\" or \"orders-v3\"",
                ));
            }
        }
        let unique: BTreeSet<&&str> = ids.iter().collect();
        if unique.len() != ids.len() {
            return Err(NimbusError::config(
                format!(
                    "two body encryption keys share an id (ids: {})",
                    ids.join(", ")
                ),
                "give every key its own id: a message names the key that decrypts it by its id",
            ));
        }
        Ok(())
    }

    fn key(&self, id: &str) -> Option<&SecretKey> {
        self.keys.iter().find(|(k, _)| k == id).map(|(_, key)| key)
    }
}

/// A 32-byte key from standard base64; the error never quotes the text.
fn decode_key(text: &str) -> Result<[u8; 32]> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| {
            NimbusError::config(
                "the body encryption key is not valid base64",
                "give the 32-byte key in standard base64 (44 characters, e.g. from `openssl rand \
                 -base64 32`)",
            )
        })?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        NimbusError::config(
            format!(
                "the body encryption key is {} bytes long; AES-256 needs 32",
                bytes.len()
            ),
            "give a 32-byte key in standard base64 (44 characters, e.g. from `openssl rand \
             -base64 32`)",
        )
    })
}

/// The headers that say what was done to a body: name and value.
pub(crate) type BodyMarks = Vec<(&'static str, String)>;

/// A bus's body codecs: what it applies to the bodies it sends, and the keys it decrypts with.
#[derive(Clone, Debug, Default)]
pub(crate) struct BodyCodecs {
    pub compression: Option<BodyCompression>,
    pub encryption: Option<BodyEncryption>,
}

/// Why a received body cannot be read, for the dead letter's reason and the metric's label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// A short label: `unknown_key`, `no_keys`, `tampered`, `unsupported`, `too_large`,
    /// `corrupt`.
    pub kind: &'static str,
    /// What went wrong and what to do, for the dead letter.
    pub reason: String,
}

impl BodyCodecs {
    /// Whether the bus does anything to bodies.
    pub fn is_empty(&self) -> bool {
        self.compression.is_none() && self.encryption.is_none()
    }

    /// `body` (a `type_name` as JSON) as the bus writes it, with the headers that say what was
    /// done to it.
    pub fn encode(&self, type_name: &str, body: Vec<u8>) -> Result<(Vec<u8>, BodyMarks)> {
        let mut marks = Vec::new();
        let mut body = body;
        if let Some(compressed) = self
            .compression
            .as_ref()
            .and_then(|c| c.compress(type_name, &body))
        {
            body = compressed;
            marks.push((
                headers::CONTENT_ENCODING,
                self.compression
                    .as_ref()
                    .map_or(GZIP, BodyCompression::content_encoding)
                    .to_string(),
            ));
        }
        if let Some(encryption) = self
            .encryption
            .as_ref()
            .filter(|e| e.scope.covers(type_name))
        {
            let key = encryption.key(&encryption.current).ok_or_else(|| {
                NimbusError::config(
                    "the current body encryption key is missing",
                    "report it: BodyEncryption::new always holds its key",
                )
            })?;
            let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key.0));
            let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
            let sealed = cipher.encrypt(&nonce, body.as_slice()).map_err(|_| {
                NimbusError::config(
                    format!(
                        "a {type_name} could not be encrypted (its body is too large for AES-GCM)"
                    ),
                    "send a smaller body",
                )
            })?;
            let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
            out.extend_from_slice(&nonce);
            out.extend_from_slice(&sealed);
            body = out;
            marks.push((headers::ENCRYPTION, AES_256_GCM.to_string()));
            marks.push((headers::ENCRYPTION_KEY_ID, encryption.current.clone()));
        }
        Ok((body, marks))
    }

    /// The body a handler reads, from `body` as received with `headers`: `Ok(None)` when
    /// nothing was done to it, `Ok(Some(..))` decrypted and decompressed (at most `limit`
    /// bytes), or why it cannot be read.
    pub fn decode(
        &self,
        headers: &Headers,
        body: &[u8],
        limit: usize,
    ) -> std::result::Result<Option<Vec<u8>>, Unreadable> {
        let encryption = headers.get(headers::ENCRYPTION);
        let encoding = headers.get(headers::CONTENT_ENCODING);
        if encryption.is_none() && encoding.is_none() {
            return Ok(None);
        }
        let decrypted = match encryption {
            Some(scheme) => Some(self.decrypt(headers, scheme, body)?),
            None => None,
        };
        let body = decrypted.as_deref().unwrap_or(body);
        match encoding.map(String::as_str) {
            None => Ok(decrypted),
            Some(GZIP) => gunzip(body, limit).map(Some),
            Some(ZSTD) => unzstd(body, limit).map(Some),
            Some(other) => Err(Unreadable {
                kind: "unsupported",
                reason: format!(
                    "its body is compressed as {other:?} (header {}), which this version of \
                     Nimbus cannot read (it reads {READS}); upgrade the receiver, or send it \
                     without that compression",
                    headers::CONTENT_ENCODING
                ),
            }),
        }
    }

    fn decrypt(
        &self,
        headers: &Headers,
        scheme: &str,
        body: &[u8],
    ) -> std::result::Result<Vec<u8>, Unreadable> {
        if scheme != AES_256_GCM {
            return Err(Unreadable {
                kind: "unsupported",
                reason: format!(
                    "its body is encrypted as {scheme:?} (header {}), which this version of \
                     Nimbus cannot read (it reads {AES_256_GCM})",
                    headers::ENCRYPTION
                ),
            });
        }
        let id = headers
            .get(headers::ENCRYPTION_KEY_ID)
            .map(String::as_str)
            .unwrap_or_default();
        let Some(encryption) = &self.encryption else {
            return Err(Unreadable {
                kind: "no_keys",
                reason: format!(
                    "its body is encrypted with key {id:?} and this endpoint has no body \
                     encryption keys: give it that key with BusBuilder::body_encryption \
                     (BodyEncryption::new(..).decrypt_only() to decrypt without encrypting), then \
                     replay the dead letter"
                ),
            });
        };
        let Some(key) = encryption.key(id) else {
            return Err(Unreadable {
                kind: "unknown_key",
                reason: format!(
                    "its body is encrypted with key {id:?}, which is not one of this endpoint's \
                     body encryption keys ({}): add it with BodyEncryption::with_old_key, then \
                     replay the dead letter",
                    encryption.ids().join(", ")
                ),
            });
        };
        let tampered = || Unreadable {
            kind: "tampered",
            reason: format!(
                "its body does not decrypt with key {id:?}: it was changed after it was \
                 encrypted, or encrypted with another key of the same id. It is kept as it came"
            ),
        };
        if body.len() < NONCE_LEN + TAG_LEN {
            return Err(tampered());
        }
        let (nonce, sealed) = body.split_at(NONCE_LEN);
        let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key.0));
        cipher
            .decrypt(Nonce::from_slice(nonce), sealed)
            .map_err(|_| tampered())
    }
}

/// A message body as an operator may see it (the CLI, the console): never the plaintext of an
/// encrypted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShownBody {
    /// The body as a handler reads it: as it is, or decompressed.
    Readable(Vec<u8>),
    /// Encrypted with the key `key_id`: its `bytes` are not shown.
    Encrypted {
        /// The id of the key that decrypts it.
        key_id: String,
        /// Its size as stored.
        bytes: usize,
    },
    /// Marked compressed but unreadable: why.
    Unreadable(String),
    /// Stored apart by the claim check (`NimbusBodies`): the row's body is empty; its `bytes`
    /// are not read.
    StoredApart {
        /// The id its `Nimbus.ClaimCheck` header names.
        id: String,
        /// Its size as stored, from `Nimbus.ClaimCheck.Size`.
        bytes: u64,
    },
}

/// What of `body` (with the headers `headers_json`, a JSON object) an operator may see: an
/// encrypted body is named as such with its key id, a compressed one is decompressed (up to
/// 16 MiB), one stored apart is named with its id and size.
///
/// ```
/// use nimbus::admin::{shown_body, ShownBody};
/// let headers = r#"{"Nimbus.Encryption":"aes-256-gcm","Nimbus.EncryptionKeyId":"2026-12"}"#;
/// assert_eq!(
///     shown_body(headers, &[1, 2, 3]),
///     ShownBody::Encrypted { key_id: "2026-12".into(), bytes: 3 }
/// );
/// assert_eq!(shown_body("{}", b"{}"), ShownBody::Readable(b"{}".to_vec()));
/// ```
pub fn shown_body(headers_json: &str, body: &[u8]) -> ShownBody {
    const SHOWN_LIMIT: usize = 16 * 1024 * 1024;
    let Ok(headers) = serde_json::from_str::<Headers>(headers_json) else {
        return ShownBody::Readable(body.to_vec());
    };
    if let Some(id) = headers.get(headers::CLAIM_CHECK) {
        return ShownBody::StoredApart {
            id: id.clone(),
            bytes: headers
                .get(headers::CLAIM_CHECK_SIZE)
                .and_then(|size| size.parse().ok())
                .unwrap_or_default(),
        };
    }
    if headers.contains_key(headers::ENCRYPTION) {
        return ShownBody::Encrypted {
            key_id: headers
                .get(headers::ENCRYPTION_KEY_ID)
                .cloned()
                .unwrap_or_default(),
            bytes: body.len(),
        };
    }
    match BodyCodecs::default().decode(&headers, body, SHOWN_LIMIT) {
        Ok(Some(plain)) => ShownBody::Readable(plain),
        Ok(None) => ShownBody::Readable(body.to_vec()),
        Err(unreadable) => ShownBody::Unreadable(unreadable.reason),
    }
}

/// [`shown_body`], decrypting with `keys` when the body is encrypted with one of them: for an
/// operator who was given the key explicitly (`nimbus peek --key-file`). A body encrypted with
/// another key is still only named.
///
/// ```
/// use nimbus::admin::{shown_body_decrypted, ShownBody};
/// use nimbus::BodyEncryption;
/// let headers = r#"{"Nimbus.Encryption":"aes-256-gcm","Nimbus.EncryptionKeyId":"other"}"#;
/// let keys = BodyEncryption::new("2026-12", [7; 32]);
/// assert!(matches!(
///     shown_body_decrypted(headers, &[1, 2, 3], &keys),
///     ShownBody::Encrypted { .. }
/// ));
/// ```
pub fn shown_body_decrypted(headers_json: &str, body: &[u8], keys: &BodyEncryption) -> ShownBody {
    const SHOWN_LIMIT: usize = 16 * 1024 * 1024;
    let shown = shown_body(headers_json, body);
    let ShownBody::Encrypted { key_id, .. } = &shown else {
        return shown;
    };
    if !keys.keys.iter().any(|(id, _)| id == key_id) {
        return shown;
    }
    let Ok(headers) = serde_json::from_str::<Headers>(headers_json) else {
        return shown;
    };
    let codecs = BodyCodecs {
        compression: None,
        encryption: Some(keys.clone()),
    };
    match codecs.decode(&headers, body, SHOWN_LIMIT) {
        Ok(Some(plain)) => ShownBody::Readable(plain),
        Ok(None) => ShownBody::Readable(body.to_vec()),
        Err(unreadable) => ShownBody::Unreadable(unreadable.reason),
    }
}

/// `body` gunzipped, refused once it grows past `limit` bytes (a small body that would inflate
/// past what the bus accepts).
fn gunzip(body: &[u8], limit: usize) -> std::result::Result<Vec<u8>, Unreadable> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
    let read = flate2::read::GzDecoder::new(body)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut out);
    match read {
        Err(e) => Err(Unreadable {
            kind: "corrupt",
            reason: format!(
                "its body is marked gzip ({}) but does not decompress: {e}",
                headers::CONTENT_ENCODING
            ),
        }),
        Ok(_) if out.len() > limit => Err(too_large(limit)),
        Ok(_) => Ok(out),
    }
}

/// The compressions this build reads, for the reason of one it does not.
#[cfg(feature = "zstd")]
const READS: &str = "gzip and zstd";
/// The compressions this build reads, for the reason of one it does not.
#[cfg(not(feature = "zstd"))]
const READS: &str = "gzip";

#[cfg(feature = "zstd")]
thread_local! {
    /// Each thread's zstd decompression context, reused between bodies: making one allocates
    /// its window, which cost more than decompressing a small body.
    static UNZSTD_CONTEXT: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `body` (one or more zstd frames) decompressed, refused once it grows past `limit` bytes. A
/// single frame that states its size (as Nimbus writes them) is decompressed in one call into
/// a buffer of that size, with the thread's context; anything else is streamed.
#[cfg(feature = "zstd")]
fn unzstd(body: &[u8], limit: usize) -> std::result::Result<Vec<u8>, Unreadable> {
    let declared = zstd::zstd_safe::get_frame_content_size(body)
        .ok()
        .flatten()
        .and_then(|size| usize::try_from(size).ok());
    if let Some(size) = declared {
        if size > limit {
            return Err(too_large(limit));
        }
        let whole = UNZSTD_CONTEXT.with(|context| {
            let mut context = context.borrow_mut();
            if context.is_none() {
                *context = zstd::bulk::Decompressor::new().ok();
            }
            context.as_mut()?.decompress(body, size).ok()
        });
        if let Some(whole) = whole.filter(|whole| whole.len() == size) {
            return Ok(whole);
        }
    }
    let corrupt = |e: std::io::Error| Unreadable {
        kind: "corrupt",
        reason: format!(
            "its body is marked zstd ({}) but does not decompress: {e}",
            headers::CONTENT_ENCODING
        ),
    };
    let mut out = Vec::with_capacity(declared.unwrap_or(body.len().saturating_mul(4)).min(limit));
    zstd::stream::read::Decoder::with_buffer(body)
        .map_err(corrupt)?
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

/// A zstd body, in a build without the `zstd` feature: what to enable.
#[cfg(not(feature = "zstd"))]
fn unzstd(_body: &[u8], _limit: usize) -> std::result::Result<Vec<u8>, Unreadable> {
    Err(Unreadable {
        kind: "unsupported",
        reason: format!(
            "its body is compressed with zstd (header {}), and this build of Nimbus reads zstd \
             only with the `zstd` feature of the nimbus-bus crate: enable it \
             (nimbus-bus = {{ version = \"…\", features = [\"zstd\"] }}), then replay the dead \
             letter",
            headers::CONTENT_ENCODING
        ),
    })
}

/// A body that decompresses past `limit`: what to raise.
fn too_large(limit: usize) -> Unreadable {
    Unreadable {
        kind: "too_large",
        reason: format!(
            "its body decompresses to more than {limit} bytes, this endpoint's \
             max_body_size: raise BusBuilder::max_body_size to handle it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Ping;
    impl Message for Ping {
        const TYPE_NAME: &'static str = "Tests.Ping";
        const KIND: crate::MessageKind = crate::MessageKind::Command;
    }

    fn headers_of(marks: &[(&'static str, String)]) -> Headers {
        marks
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn a_body_compressed_and_encrypted_comes_back_as_it_was() {
        let codecs = BodyCodecs {
            compression: Some(BodyCompression::gzip().min_bytes(10)),
            encryption: Some(BodyEncryption::new("k1", [1; 32])),
        };
        let body = br#"{"text":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#.to_vec();
        let (sealed, marks) = codecs.encode("Tests.Ping", body.clone()).unwrap();
        assert_ne!(sealed, body);
        assert!(!sealed.windows(4).any(|w| w == b"aaaa"), "no plaintext");
        let headers = headers_of(&marks);
        assert_eq!(headers[headers::CONTENT_ENCODING], GZIP);
        assert_eq!(headers[headers::ENCRYPTION_KEY_ID], "k1");
        assert_eq!(
            codecs.decode(&headers, &sealed, 1 << 20).unwrap(),
            Some(body)
        );
    }

    #[test]
    fn rotation_reads_old_keys_and_refuses_unknown_ones_and_changed_bodies() {
        let old = BodyCodecs {
            encryption: Some(BodyEncryption::new("old", [2; 32])),
            ..BodyCodecs::default()
        };
        let (sealed, marks) = old.encode("Tests.Ping", b"{}".to_vec()).unwrap();
        let headers = headers_of(&marks);
        let rotated = BodyCodecs {
            encryption: Some(BodyEncryption::new("new", [3; 32]).with_old_key("old", [2; 32])),
            ..BodyCodecs::default()
        };
        assert_eq!(
            rotated.decode(&headers, &sealed, 100).unwrap(),
            Some(b"{}".to_vec())
        );
        let without = BodyCodecs {
            encryption: Some(BodyEncryption::new("new", [3; 32])),
            ..BodyCodecs::default()
        };
        let unknown = without.decode(&headers, &sealed, 100).unwrap_err();
        assert_eq!(unknown.kind, "unknown_key", "{unknown:?}");
        assert!(unknown.reason.contains("\"old\""), "{unknown:?}");
        let none = BodyCodecs::default()
            .decode(&headers, &sealed, 100)
            .unwrap_err();
        assert_eq!(none.kind, "no_keys");
        let mut changed = sealed.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert_eq!(
            rotated.decode(&headers, &changed, 100).unwrap_err().kind,
            "tampered"
        );
        let same_id_other_key = BodyCodecs {
            encryption: Some(BodyEncryption::new("old", [9; 32])),
            ..BodyCodecs::default()
        };
        assert_eq!(
            same_id_other_key
                .decode(&headers, &sealed, 100)
                .unwrap_err()
                .kind,
            "tampered"
        );
    }

    #[test]
    fn only_named_types_and_large_enough_bodies_are_encoded() {
        let codecs = BodyCodecs {
            compression: Some(BodyCompression::gzip().min_bytes(1000).only::<Ping>()),
            encryption: Some(BodyEncryption::new("k", [4; 32]).only::<Ping>()),
        };
        let big = vec![b'a'; 2000];
        let (_, marks) = codecs.encode("Tests.Other", big.clone()).unwrap();
        assert!(marks.is_empty(), "another type is sent as it is");
        let (_, marks) = codecs.encode("Tests.Ping", b"{}".to_vec()).unwrap();
        assert_eq!(
            headers_of(&marks).get(headers::CONTENT_ENCODING),
            None,
            "too small"
        );
        let (_, marks) = codecs.encode("Tests.Ping", big).unwrap();
        assert_eq!(marks.len(), 3, "{marks:?}");
        let clear = BodyCodecs {
            encryption: Some(BodyEncryption::new("k", [4; 32]).decrypt_only()),
            ..BodyCodecs::default()
        };
        assert!(clear
            .encode("Tests.Ping", b"{}".to_vec())
            .unwrap()
            .1
            .is_empty());
    }

    #[test]
    fn a_body_that_inflates_past_the_limit_is_refused() {
        let codecs = BodyCodecs {
            compression: Some(BodyCompression::gzip()),
            ..BodyCodecs::default()
        };
        let (packed, marks) = codecs.encode("Tests.Ping", vec![b' '; 100_000]).unwrap();
        let headers = headers_of(&marks);
        assert!(packed.len() < 1000);
        let refused = codecs.decode(&headers, &packed, 50_000).unwrap_err();
        assert_eq!(refused.kind, "too_large", "{refused:?}");
        assert_eq!(
            codecs
                .decode(&headers, &packed, 100_000)
                .unwrap()
                .map(|b| b.len()),
            Some(100_000)
        );
    }

    #[test]
    fn gzip_output_is_read_by_a_standard_decoder_at_any_size() {
        let mut state = 1u32;
        for size in [0usize, 1, 1000, 300_000] {
            let body: Vec<u8> = (0..size)
                .map(|_| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (state >> 24) as u8
                })
                .collect();
            // Twice: the thread's deflate state is reused.
            for _ in 0..2 {
                let packed = gzip(&body, 6).unwrap();
                let mut unpacked = Vec::new();
                flate2::read::GzDecoder::new(packed.as_slice())
                    .read_to_end(&mut unpacked)
                    .unwrap();
                assert_eq!(unpacked, body, "{size} bytes");
            }
        }
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_bodies_come_back_as_they_were_and_are_limited() {
        let codecs = BodyCodecs {
            compression: Some(BodyCompression::zstd().min_bytes(10)),
            encryption: Some(BodyEncryption::new("k1", [1; 32])),
        };
        let body = br#"{"text":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}"#.to_vec();
        // Twice: the thread's zstd context is reused.
        for _ in 0..2 {
            let (sealed, marks) = codecs.encode("Tests.Ping", body.clone()).unwrap();
            let headers = headers_of(&marks);
            assert_eq!(headers[headers::CONTENT_ENCODING], ZSTD);
            assert_eq!(
                codecs.decode(&headers, &sealed, 1 << 20).unwrap(),
                Some(body.clone())
            );
        }
        let plain = BodyCodecs {
            compression: Some(BodyCompression::zstd().level(19)),
            ..BodyCodecs::default()
        };
        let (packed, marks) = plain.encode("Tests.Ping", vec![b' '; 100_000]).unwrap();
        let headers = headers_of(&marks);
        assert!(packed.len() < 1000, "{} bytes", packed.len());
        // Read by the standard decoder, and by a receiver that does not compress.
        assert_eq!(
            zstd::stream::decode_all(packed.as_slice()).unwrap().len(),
            100_000
        );
        let receiver = BodyCodecs::default();
        assert_eq!(
            receiver
                .decode(&headers, &packed, 100_000)
                .unwrap()
                .map(|b| b.len()),
            Some(100_000)
        );
        let refused = receiver.decode(&headers, &packed, 50_000).unwrap_err();
        assert_eq!(refused.kind, "too_large", "{refused:?}");
        let corrupt = receiver.decode(&headers, b"not zstd", 100).unwrap_err();
        assert_eq!(corrupt.kind, "corrupt", "{corrupt:?}");
        // Two frames one after the other (another writer's): the first states only its own
        // size, so they are streamed, and read whole.
        let mut two = zstd::bulk::compress(b"first ", 3).unwrap();
        two.extend(zstd::bulk::compress(b"second", 3).unwrap());
        assert_eq!(
            receiver.decode(&headers, &two, 100).unwrap().as_deref(),
            Some(&b"first second"[..])
        );
        // A frame without its size (a stream's) is streamed too, and limited.
        let mut unsized_frame = Vec::new();
        let mut encoder = zstd::stream::write::Encoder::new(&mut unsized_frame, 3).unwrap();
        std::io::Write::write_all(&mut encoder, &[b'x'; 5000]).unwrap();
        encoder.finish().unwrap();
        assert_eq!(
            receiver
                .decode(&headers, &unsized_frame, 5000)
                .unwrap()
                .map(|b| b.len()),
            Some(5000)
        );
        assert_eq!(
            receiver
                .decode(&headers, &unsized_frame, 4999)
                .unwrap_err()
                .kind,
            "too_large"
        );
    }

    #[cfg(not(feature = "zstd"))]
    #[test]
    fn a_zstd_body_without_the_feature_says_what_to_enable() {
        let headers = headers_of(&[(headers::CONTENT_ENCODING, ZSTD.to_string())]);
        let refused = BodyCodecs::default()
            .decode(&headers, b"(\xb5/\xfd", 100)
            .unwrap_err();
        assert_eq!(refused.kind, "unsupported");
        assert!(
            refused.reason.contains("`zstd` feature"),
            "{}",
            refused.reason
        );
    }

    #[test]
    fn an_unknown_compression_names_what_this_build_reads() {
        let headers = headers_of(&[(headers::CONTENT_ENCODING, "br".to_string())]);
        let refused = BodyCodecs::default()
            .decode(&headers, b"x", 100)
            .unwrap_err();
        assert_eq!(refused.kind, "unsupported");
        assert!(refused.reason.contains(READS), "{}", refused.reason);
    }

    #[test]
    fn keys_are_checked_and_never_printed() {
        let bad = BodyEncryption::from_base64("k", "c2hvcnQ=")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("5 bytes") && !bad.contains("c2hvcnQ"), "{bad}");
        let not_base64 = BodyEncryption::from_base64("k", "secret!!")
            .unwrap_err()
            .to_string();
        assert!(!not_base64.contains("secret"), "{not_base64}");
        let twice = BodyEncryption::new("a", [5; 32]).with_old_key("a", [6; 32]);
        assert!(twice.check().is_err());
        assert!(BodyEncryption::new("has space", [5; 32]).check().is_err());
        let printed = format!("{:?}", BodyEncryption::new("a", [0x41; 32]));
        assert!(
            !printed.contains("65") && !printed.contains("AAAA"),
            "{printed}"
        );
    }
}
