//! The claim check: bodies above a size are stored apart from their queue row, in
//! `NimbusBodies` of the same database, and fetched when their message is handled. The queue row
//! keeps an empty body and the stored body's id in its [`headers::CLAIM_CHECK`] header.
//!
//! The body is written in the transaction that writes its queue row, and deleted in the one that
//! removes the message's last row (handled, or discarded), so a body is never orphaned and never
//! lost: a retry's copy, a message held back by a limit and a dead letter keep it (a dead
//! letter's until the dead letters' retention ends), and a replay gives it back. A publish to
//! several subscribers stores one body per subscriber's row, as the rows themselves would hold.
//!
//! With the `object-store` feature, bodies can go to an object store instead
//! ([`ClaimCheck::object_store`]): the bytes are uploaded before the send's transaction commits,
//! and `NimbusBodies` keeps a row that names the store, written and deleted as above. The row is
//! transactional, the upload is not: an object whose row never committed (the send failed or
//! its process died) or is gone (the message was handled) is an orphan, deleted by the idle
//! sweep once older than [`ClaimCheck::orphans_after`].

use std::collections::BTreeSet;
use std::time::Duration;

use uuid::Uuid;

use crate::headers;

/// The size above which [`ClaimCheck::in_database`] stores a body apart: 1 MiB.
pub const DEFAULT_CLAIM_CHECK_THRESHOLD: usize = 1024 * 1024;

/// How old an object store's body without its row must be before the sweep deletes it: an
/// hour, far more than any send takes between its upload and its commit.
pub const DEFAULT_ORPHANS_AFTER: Duration = Duration::from_secs(3600);

/// The folder of an object store where bodies go, under which one folder per schema.
#[cfg(feature = "object-store")]
const OBJECT_FOLDER: &str = "nimbus-bodies";

/// Which bodies a bus stores apart from their queue rows, and where (see
/// [`BusBuilder::claim_check`](crate::BusBuilder::claim_check)).
///
/// ```
/// use nimbus::ClaimCheck;
/// // Bodies above 256 KiB (after compression and encryption) go to NimbusBodies.
/// let claim_check = ClaimCheck::in_database().above(256 * 1024);
/// assert_eq!(claim_check.threshold(), Some(256 * 1024));
/// assert_eq!(ClaimCheck::off().threshold(), None);
/// ```
#[derive(Clone, Debug)]
pub struct ClaimCheck {
    threshold: Option<usize>,
    only: Option<BTreeSet<&'static str>>,
    stores: Stores,
}

impl Default for ClaimCheck {
    /// [`ClaimCheck::in_database`]: bodies above 1 MiB are stored apart.
    fn default() -> Self {
        ClaimCheck::in_database()
    }
}

impl ClaimCheck {
    /// Bodies above [`DEFAULT_CLAIM_CHECK_THRESHOLD`] bytes go to `NimbusBodies`, a table of the
    /// same database: written with their queue row, deleted with its last copy.
    pub fn in_database() -> Self {
        ClaimCheck {
            threshold: Some(DEFAULT_CLAIM_CHECK_THRESHOLD),
            only: None,
            stores: Stores::default(),
        }
    }

    /// Every body stays in its queue row, whatever its size (up to `max_body_size`). Messages
    /// others stored apart are still read.
    pub fn off() -> Self {
        ClaimCheck {
            threshold: None,
            only: None,
            stores: Stores::default(),
        }
    }

    /// Bodies above [`DEFAULT_CLAIM_CHECK_THRESHOLD`] bytes go to the object store `store`
    /// (S3, Azure Blob Storage, Google Cloud Storage or a local folder, as the `object_store`
    /// crate builds them), under `nimbus-bodies/<schema>/<id>`, and `NimbusBodies` keeps a row
    /// naming `name`. Every endpoint that receives them needs the store under the same name
    /// (this, or [`ClaimCheck::reads_store`]); one without it sends the message to the dead
    /// letters with the reason. Give each database its own bucket or prefix: the sweep deletes
    /// the objects of the folder that its database has no row for.
    ///
    /// ```
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// let folder = std::env::temp_dir().join("nimbus-doc-bodies");
    /// std::fs::create_dir_all(&folder)?;
    /// let store = object_store::local::LocalFileSystem::new_with_prefix(&folder)?;
    /// let claim_check = nimbus::ClaimCheck::object_store("archive", Arc::new(store));
    /// assert_eq!(claim_check.threshold(), Some(nimbus::DEFAULT_CLAIM_CHECK_THRESHOLD));
    /// # Ok(()) }
    /// # run().unwrap();
    /// ```
    #[cfg(feature = "object-store")]
    pub fn object_store(name: &str, store: std::sync::Arc<dyn object_store::ObjectStore>) -> Self {
        let mut claim_check = ClaimCheck::in_database().reads_store(name, store);
        claim_check.stores.write_to = Some(name.to_string());
        claim_check
    }

    /// Also reads bodies other endpoints put in the object store `store` under `name` (see
    /// [`ClaimCheck::object_store`]), without writing there; repeatable.
    #[cfg(feature = "object-store")]
    pub fn reads_store(
        mut self,
        name: &str,
        store: std::sync::Arc<dyn object_store::ObjectStore>,
    ) -> Self {
        self.stores.list.retain(|(known, _)| known != name);
        self.stores.list.push((name.to_string(), store));
        self
    }

    /// How old an object of a store this endpoint knows, without its row in `NimbusBodies`,
    /// must be before the idle sweep deletes it (default [`DEFAULT_ORPHANS_AFTER`]): longer
    /// than any send takes between its upload and its commit. Bodies of handled messages stay
    /// in the store that long too.
    pub fn orphans_after(mut self, age: Duration) -> Self {
        self.stores.orphans_after = age;
        self
    }

    /// Stores bodies larger than `bytes` apart (measured as written: after compression and
    /// encryption). `0` stores every non-empty body apart.
    pub fn above(mut self, bytes: usize) -> Self {
        self.threshold = Some(bytes);
        self
    }

    /// Stores apart only the bodies of `M` (call once per type); other types stay in their
    /// rows whatever their size.
    pub fn only<M: crate::Message>(mut self) -> Self {
        self.only
            .get_or_insert_with(BTreeSet::new)
            .insert(M::TYPE_NAME);
        self
    }

    /// The size above which bodies are stored apart; `None` when off.
    pub fn threshold(&self) -> Option<usize> {
        self.threshold
    }

    /// The object stores this claim check writes to and reads from.
    pub(crate) fn stores(&self) -> &Stores {
        &self.stores
    }

    /// Whether a body of `len` bytes of `type_name` is stored apart.
    pub(crate) fn claims(&self, type_name: &str, len: usize) -> bool {
        let Some(threshold) = self.threshold else {
            return false;
        };
        len > threshold
            && len > 0
            && self
                .only
                .as_ref()
                .is_none_or(|types| types.contains(type_name))
    }
}

/// The object stores of a claim check, by name: the one bodies are written to (if any) and
/// those they are read from. Empty without the `object-store` feature.
#[derive(Clone)]
pub(crate) struct Stores {
    #[cfg(feature = "object-store")]
    list: Vec<(String, std::sync::Arc<dyn object_store::ObjectStore>)>,
    #[cfg(feature = "object-store")]
    write_to: Option<String>,
    orphans_after: Duration,
}

impl Default for Stores {
    fn default() -> Self {
        Stores {
            #[cfg(feature = "object-store")]
            list: Vec::new(),
            #[cfg(feature = "object-store")]
            write_to: None,
            orphans_after: DEFAULT_ORPHANS_AFTER,
        }
    }
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("names", &self.names())
            .field("write_to", &self.write_to())
            .field("orphans_after", &self.orphans_after)
            .finish()
    }
}

/// Why an object store could not take or give a body.
#[derive(Debug)]
pub(crate) struct StoreError {
    /// What went wrong, and what to do.
    pub text: String,
    /// The body is not there, or not in a store this endpoint knows: trying again will not
    /// help (a message goes to the dead letters). Otherwise the store failed, which may pass.
    pub lasting: bool,
}

impl StoreError {
    fn lasting(text: impl Into<String>) -> Self {
        StoreError {
            text: text.into(),
            lasting: true,
        }
    }

    #[cfg(feature = "object-store")]
    fn failed(text: impl Into<String>) -> Self {
        StoreError {
            text: text.into(),
            lasting: false,
        }
    }
}

impl Stores {
    /// The names of the stores known.
    pub fn names(&self) -> Vec<&str> {
        #[cfg(feature = "object-store")]
        return self.list.iter().map(|(name, _)| name.as_str()).collect();
        #[cfg(not(feature = "object-store"))]
        Vec::new()
    }

    /// The store bodies are written to, if any.
    pub fn write_to(&self) -> Option<&str> {
        #[cfg(feature = "object-store")]
        return self.write_to.as_deref();
        #[cfg(not(feature = "object-store"))]
        None
    }

    #[cfg(feature = "object-store")]
    fn store(&self, name: &str) -> Result<&dyn object_store::ObjectStore, StoreError> {
        self.list
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, store)| store.as_ref())
            .ok_or_else(|| {
                StoreError::lasting(format!(
                    "the body is in the object store {name:?}, which this endpoint does not \
                     know: give it ClaimCheck::object_store({name:?}, ..) or \
                     .reads_store({name:?}, ..), then replay the dead letter"
                ))
            })
    }

    /// Where body `id` of `schema` lives in a store.
    #[cfg(feature = "object-store")]
    fn path(schema: &str, id: Uuid) -> object_store::path::Path {
        object_store::path::Path::from_iter([OBJECT_FOLDER, schema, &id.to_string()])
    }

    /// Uploads `body` as body `id` of `schema` to the store bodies are written to.
    pub async fn put(&self, schema: &str, id: Uuid, body: &[u8]) -> Result<(), StoreError> {
        #[cfg(feature = "object-store")]
        {
            use object_store::ObjectStoreExt;
            let name = self
                .write_to()
                .ok_or_else(|| StoreError::lasting("no object store to write to"))?;
            let store = self.store(name)?;
            store
                .put(
                    &Self::path(schema, id),
                    object_store::PutPayload::from(body.to_vec()),
                )
                .await
                .map_err(|e| {
                    StoreError::failed(format!(
                        "uploading body {id} to the object store {name:?}: {e}"
                    ))
                })?;
            Ok(())
        }
        #[cfg(not(feature = "object-store"))]
        {
            let _ = (schema, id, body);
            Err(StoreError::lasting(
                "this build has no object stores (the `object-store` feature)",
            ))
        }
    }

    /// Downloads body `id` of `schema` from the store `name`.
    pub async fn get(&self, name: &str, schema: &str, id: Uuid) -> Result<Vec<u8>, StoreError> {
        #[cfg(feature = "object-store")]
        {
            use object_store::ObjectStoreExt;
            let store = self.store(name)?;
            let failed = |e: object_store::Error| {
                let text = format!("reading body {id} from the object store {name:?}: {e}");
                match e {
                    object_store::Error::NotFound { .. } => StoreError::lasting(text),
                    _ => StoreError::failed(text),
                }
            };
            let got = store.get(&Self::path(schema, id)).await.map_err(failed)?;
            let bytes = got.bytes().await.map_err(failed)?;
            Ok(Vec::from(bytes))
        }
        #[cfg(not(feature = "object-store"))]
        {
            let _ = (schema, id);
            Err(StoreError::lasting(format!(
                "the body is in the object store {name:?}, and this build has no object stores \
                 (the `object-store` feature)"
            )))
        }
    }

    /// The bodies in store `name` under `schema`'s folder older than `orphans_after`: their
    /// ids, for the sweep to check against `NimbusBodies`.
    pub async fn old_objects(&self, name: &str, schema: &str) -> Result<Vec<Uuid>, StoreError> {
        #[cfg(feature = "object-store")]
        {
            use futures::StreamExt;
            let store = self.store(name)?;
            let folder = object_store::path::Path::from_iter([OBJECT_FOLDER, schema]);
            let cutoff = chrono::Utc::now()
                - chrono::Duration::from_std(self.orphans_after).unwrap_or(chrono::Duration::MAX);
            let mut listed = store.list(Some(&folder));
            let mut old = Vec::new();
            while let Some(meta) = listed.next().await {
                let meta = meta.map_err(|e| {
                    StoreError::failed(format!("listing the object store {name:?}: {e}"))
                })?;
                let id = meta
                    .location
                    .filename()
                    .and_then(|f| Uuid::parse_str(f).ok());
                if let (Some(id), true) = (id, meta.last_modified <= cutoff) {
                    old.push(id);
                }
            }
            Ok(old)
        }
        #[cfg(not(feature = "object-store"))]
        {
            let _ = (name, schema);
            Ok(Vec::new())
        }
    }

    /// Deletes body `id` of `schema` from store `name`.
    pub async fn delete(&self, name: &str, schema: &str, id: Uuid) -> Result<(), StoreError> {
        #[cfg(feature = "object-store")]
        {
            use object_store::ObjectStoreExt;
            let store = self.store(name)?;
            match store.delete(&Self::path(schema, id)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(StoreError::failed(format!(
                    "deleting body {id} from the object store {name:?}: {e}"
                ))),
            }
        }
        #[cfg(not(feature = "object-store"))]
        {
            let _ = (schema, id);
            Err(StoreError::lasting(format!(
                "no object store {name:?} in this build"
            )))
        }
    }
}

/// The id of the body stored apart that the serialized headers `json` name
/// ([`headers::CLAIM_CHECK`]), read only when the text names the header.
pub(crate) fn claim_in_json(json: &str) -> Option<Uuid> {
    if !json.contains(headers::CLAIM_CHECK) {
        return None;
    }
    let parsed = serde_json::from_str::<headers::Headers>(json).ok()?;
    claim_in(&parsed)
}

/// The id of the body stored apart that `headers` name.
pub(crate) fn claim_in(headers: &headers::Headers) -> Option<Uuid> {
    Uuid::parse_str(headers.get(headers::CLAIM_CHECK)?).ok()
}

/// A claimed header whose value is not an id: what a receiver says of it.
pub(crate) fn unreadable_claim(headers: &headers::Headers) -> Option<String> {
    let value = headers.get(headers::CLAIM_CHECK)?;
    Uuid::parse_str(value).is_err().then(|| {
        format!(
            "its {} header ({value:?}) is not the id of a body stored apart",
            headers::CLAIM_CHECK
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodies_above_the_threshold_are_claimed() {
        let check = ClaimCheck::in_database().above(10);
        assert!(!check.claims("A", 10));
        assert!(check.claims("A", 11));
        assert!(!ClaimCheck::off().claims("A", usize::MAX));
        assert!(!ClaimCheck::in_database().above(0).claims("A", 0));
        assert!(ClaimCheck::in_database().above(0).claims("A", 1));
    }

    #[test]
    fn a_claim_check_for_some_types_leaves_the_others_inline() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Big;
        impl crate::Message for Big {
            const TYPE_NAME: &'static str = "Big";
            const KIND: crate::MessageKind = crate::MessageKind::Command;
        }
        let check = ClaimCheck::in_database().above(1).only::<Big>();
        assert!(check.claims("Big", 2));
        assert!(!check.claims("Small", 2));
    }

    #[test]
    fn the_claim_is_read_from_the_headers_text() {
        let id = Uuid::new_v4();
        let json = format!(r#"{{"{}":"{id}","x":"y"}}"#, headers::CLAIM_CHECK);
        assert_eq!(claim_in_json(&json), Some(id));
        assert_eq!(claim_in_json(r#"{"x":"y"}"#), None);
        let bad: headers::Headers =
            serde_json::from_str(&format!(r#"{{"{}":"nope"}}"#, headers::CLAIM_CHECK)).unwrap();
        assert!(unreadable_claim(&bad).unwrap().contains("nope"));
    }
}
