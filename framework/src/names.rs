//! Validated names of queues and schemas.
//!
//! A name is checked once, when it enters the framework, and from then on it can only be written
//! into SQL through a dialect's identifier quoting. Values never go into SQL text at all: they are
//! always bound as parameters.

use std::fmt;

use crate::error::{NimbusError, Result};

/// The longest queue name any backend accepts. Backends may accept less (PostgreSQL: 46 bytes,
/// because index names carry the queue name and identifiers are limited to 63 bytes).
pub const MAX_NAME_LEN: usize = 128;

/// A queue name: 1 to 128 characters, no control characters, no leading or trailing spaces.
/// Quotes, brackets, dots and spaces inside the name are allowed: every backend quotes names.
/// Its `Debug` form is the quoted name (`"Sales"`), as error messages show it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName(String);

impl fmt::Debug for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// A database schema name, with the same rules as [`QueueName`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SchemaName(String);

fn validate(kind: &'static str, name: &str, max_len: usize) -> Result<()> {
    let refuse = |reason: &str| NimbusError::InvalidName {
        kind,
        name: name.to_string(),
        reason: reason.to_string(),
        max_len,
    };
    if name.is_empty() {
        return Err(refuse("it is empty"));
    }
    if name.len() > max_len {
        return Err(refuse(&format!(
            "it is {} bytes long, more than the {max_len} this backend accepts",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(refuse("it contains a control character"));
    }
    if name.trim() != name {
        return Err(refuse("it starts or ends with white space"));
    }
    Ok(())
}

/// The names among `known` closest to `name`: the same but for case first, then those within a
/// small edit distance (a typo), at most three.
pub(crate) fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let wanted = name.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .filter(|k| *k != name)
        .map(|k| (edit_distance(&wanted, &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, k)| k.to_string())
        .collect()
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

impl QueueName {
    /// Checks `name` against the rules above and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        validate("queue", &name, MAX_NAME_LEN)?;
        Ok(QueueName(name))
    }

    /// A name written into the framework's own code, which the unit tests check against the
    /// rules (`constant_names_are_valid`).
    pub(crate) fn constant(name: &'static str) -> Self {
        debug_assert!(validate("queue", name, MAX_NAME_LEN).is_ok(), "{name}");
        QueueName(name.to_string())
    }

    /// Checks that the name also fits a backend's shorter limit.
    pub(crate) fn check_len(&self, max_len: usize) -> Result<()> {
        validate("queue", &self.0, max_len)
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl SchemaName {
    /// Checks `name` against the rules of [`QueueName`] and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        validate("schema", &name, MAX_NAME_LEN)?;
        Ok(SchemaName(name))
    }

    pub(crate) fn check_len(&self, max_len: usize) -> Result<()> {
        validate("schema", &self.0, max_len)
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for SchemaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_name_shows_as_the_quoted_name_in_messages() {
        let queue = QueueName::new("orders").unwrap();
        assert_eq!(format!("queue {queue:?}"), "queue \"orders\"");
        assert_eq!(format!("queue {queue}"), "queue orders");
    }

    #[test]
    fn constant_names_are_valid() {
        let name = crate::testing::TEST_ENDPOINT;
        assert!(validate("queue", name, MAX_NAME_LEN).is_ok(), "{name}");
    }

    #[test]
    fn accepts_quotes_brackets_and_spaces() {
        for name in [
            "Sales",
            "it's",
            "a]b[c",
            "with space",
            "dq\"x",
            "dots.are.ok",
        ] {
            assert_eq!(QueueName::new(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn refuses_empty_control_padded_and_long_names() {
        let long = "x".repeat(MAX_NAME_LEN + 1);
        for name in ["", "a\nb", "nul\0", " padded", "padded ", long.as_str()] {
            let err = QueueName::new(name).unwrap_err();
            assert!(
                matches!(err, NimbusError::InvalidName { .. }),
                "{name:?}: {err}"
            );
        }
    }

    #[test]
    fn backend_limit_is_checked_in_bytes() {
        let name = QueueName::new("é".repeat(30)).unwrap();
        assert!(name.check_len(46).is_err());
        assert!(name.check_len(60).is_ok());
    }

    #[test]
    fn closest_names_put_case_first_then_typos() {
        let known = ["Billing", "Shipping", "Sales", "billing.audit"];
        assert_eq!(closest("billing", known), vec!["Billing"]);
        assert_eq!(closest("Billling", known), vec!["Billing"]);
        assert_eq!(closest("Invoices", known), Vec::<String>::new());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
