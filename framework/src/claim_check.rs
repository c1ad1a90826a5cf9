//! The claim check: bodies above a size are stored apart from their queue row, in
//! `NimbusBodies` of the same database, and fetched when their message is handled. The queue row
//! keeps an empty body and the stored body's id in its [`headers::CLAIM_CHECK`] header.
//!
//! The body is written in the transaction that writes its queue row, and deleted in the one that
//! removes the message's last row (handled, or discarded), so a body is never orphaned and never
//! lost: a retry's copy, a message held back by a limit and a dead letter keep it (a dead
//! letter's until the dead letters' retention ends), and a replay gives it back. A publish to
//! several subscribers stores one body per subscriber's row, as the rows themselves would hold.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::headers;

/// The size above which [`ClaimCheck::in_database`] stores a body apart: 1 MiB.
pub const DEFAULT_CLAIM_CHECK_THRESHOLD: usize = 1024 * 1024;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimCheck {
    threshold: Option<usize>,
    only: Option<BTreeSet<&'static str>>,
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
        }
    }

    /// Every body stays in its queue row, whatever its size (up to `max_body_size`). Messages
    /// others stored apart are still read.
    pub fn off() -> Self {
        ClaimCheck {
            threshold: None,
            only: None,
        }
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
