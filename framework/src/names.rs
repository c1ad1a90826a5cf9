//! Validated names of queues and schemas, and addresses of queues in other schemas.
//!
//! A name is checked once, when it enters the framework, and from then on it can only be written
//! into SQL through a dialect's identifier quoting. Values never go into SQL text at all: they are
//! always bound as parameters.
//!
//! An address names a queue and, optionally, the schema (and on SQL Server the database) its
//! table is in, in NServiceBus's forms: `Sales@[billing]`, `Sales@[billing]@[Orders]` (its SQL
//! Server transport) and `"billing"."Sales"` (its PostgreSQL transport). See
//! [`QueueName::parse`].

use std::fmt;

use crate::error::{NimbusError, Result};

/// The longest queue name any backend accepts. Backends may accept less (PostgreSQL: 46 bytes,
/// because index names carry the queue name and identifiers are limited to 63 bytes).
pub const MAX_NAME_LEN: usize = 128;

/// A queue: its name — 1 to 128 characters, no control characters, no `@`, no leading or
/// trailing spaces; quotes, brackets, dots and spaces inside are allowed, every backend quotes
/// names — and, when it was parsed from an address that names them ([`QueueName::parse`]), the
/// schema and database its table is in. A queue without them is in the bus's own schema.
/// Its `Debug` form is the quoted address (`"Sales"`, `"Sales@[billing]"`), as error messages
/// show it; its `Display` form is the address, which [`QueueName::parse`] reads back.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName {
    name: String,
    place: Option<Box<Place>>,
}

/// Where a queue named by an address lives: a schema, a database, or both.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Place {
    schema: Option<SchemaName>,
    catalog: Option<SchemaName>,
}

impl fmt::Debug for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// A database schema name, with the same rules as [`QueueName`] (`@` included).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

fn validate_queue(name: &str, max_len: usize) -> Result<()> {
    validate("queue", name, max_len)?;
    if name.contains('@') {
        return Err(NimbusError::InvalidName {
            kind: "queue",
            name: name.to_string(),
            reason: "it contains '@', which joins a queue to its schema in an address \
                     (Sales@[billing]): to name a queue in another schema, pass the address to \
                     send_to, route or SendOptions::to"
                .into(),
            max_len,
        });
    }
    Ok(())
}

impl QueueName {
    /// Checks `name` (a queue in the bus's own schema) against the rules above and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        validate_queue(&name, MAX_NAME_LEN)?;
        Ok(QueueName { name, place: None })
    }

    /// Reads an address: a queue, optionally with the schema (and on SQL Server the database)
    /// its table is in, in the forms NServiceBus writes into `NServiceBus.ReplyToAddress`:
    ///
    /// * `Sales`: the queue `Sales` in the bus's own schema;
    /// * `Sales@billing` or `Sales@[billing]`: in schema `billing` (brackets, with `]` written
    ///   `]]`, let a schema name hold `@`);
    /// * `Sales@[billing]@[Orders]`: in schema `billing` of database `Orders` on the same SQL
    ///   Server; `Sales@[]@[Orders]` leaves the schema the bus's own;
    /// * `"billing"."Sales"`: NServiceBus's PostgreSQL form (`""` for a quote inside a name).
    ///
    /// Whether the bus's database can reach that place is checked when a message is written: a
    /// schema on PostgreSQL and SQL Server, a database only on SQL Server; on SQLite only the
    /// bus's own schema.
    ///
    /// ```
    /// use nimbus::QueueName;
    /// let queue = QueueName::parse("Invoices@[billing]")?;
    /// assert_eq!(queue.as_str(), "Invoices");
    /// assert_eq!(queue.schema().map(|s| s.as_str()), Some("billing"));
    /// assert_eq!(QueueName::parse(r#""billing"."Invoices""#)?, queue);
    /// assert_eq!(QueueName::parse("Invoices")?.schema(), None);
    /// # Ok::<(), nimbus::NimbusError>(())
    /// ```
    pub fn parse(address: &str) -> Result<Self> {
        if let Some(queue) = parse_postgres_form(address)? {
            return Ok(queue);
        }
        let Some((name, rest)) = address.split_once('@') else {
            return QueueName::new(address);
        };
        let (schema, rest) = next_part(rest);
        let (catalog, rest) = match rest {
            Some(rest) => next_part(rest),
            None => (String::new(), None),
        };
        if let Some(extra) = rest {
            return Err(NimbusError::config(
                format!("the address {address:?} has more parts than queue@schema@database (left over: {extra:?})"),
                "write a queue as Name, Name@[schema] or Name@[schema]@[database], with brackets around a part that holds '@'",
            ));
        }
        let part = |kind: &'static str, text: String| -> Result<Option<SchemaName>> {
            let text = unbracket(&text);
            if text.is_empty() {
                return Ok(None);
            }
            validate(kind, &text, MAX_NAME_LEN)?;
            Ok(Some(SchemaName(text)))
        };
        let place = Place {
            schema: part("schema", schema)?,
            catalog: part("database", catalog)?,
        };
        let mut queue = QueueName::new(name)?;
        if place.schema.is_some() || place.catalog.is_some() {
            queue.place = Some(Box::new(place));
        }
        Ok(queue)
    }

    /// A name written into the framework's own code, which the unit tests check against the
    /// rules (`constant_names_are_valid`).
    pub(crate) fn constant(name: &'static str) -> Self {
        debug_assert!(validate_queue(name, MAX_NAME_LEN).is_ok(), "{name}");
        QueueName {
            name: name.to_string(),
            place: None,
        }
    }

    /// Checks that the name also fits a backend's shorter limit.
    pub(crate) fn check_len(&self, max_len: usize) -> Result<()> {
        validate_queue(&self.name, max_len)
    }

    /// The queue's name (its table's, in the table-per-queue layout), without schema or
    /// database.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The schema the address names, if it names one.
    pub fn schema(&self) -> Option<&SchemaName> {
        self.place.as_ref().and_then(|p| p.schema.as_ref())
    }

    /// The database the address names (SQL Server), if it names one.
    pub fn catalog(&self) -> Option<&SchemaName> {
        self.place.as_ref().and_then(|p| p.catalog.as_ref())
    }

    /// The same queue in the bus's own schema and database: the address without its place.
    pub(crate) fn unqualified(&self) -> QueueName {
        QueueName {
            name: self.name.clone(),
            place: None,
        }
    }

    /// The queue `name` in schema `schema` (and database `catalog`).
    pub(crate) fn in_place(
        name: QueueName,
        schema: Option<SchemaName>,
        catalog: Option<SchemaName>,
    ) -> QueueName {
        let place =
            (schema.is_some() || catalog.is_some()).then(|| Box::new(Place { schema, catalog }));
        QueueName {
            name: name.name,
            place,
        }
    }
}

/// Which places a database's addresses can name, and how it writes its own queues' addresses
/// (the `NServiceBus.ReplyToAddress` of what it sends), as NServiceBus's transport for that
/// database writes them, so that a reply finds its way back from any schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddressForm {
    /// SQLite: one database file, one schema (`main`); a queue's address is its name.
    OwnSchemaOnly,
    /// PostgreSQL: schemas of the same database, written `"schema"."queue"`.
    Schemas,
    /// SQL Server: schemas and other databases on the same server, written `queue@[schema]`.
    SchemasAndCatalogs,
}

impl AddressForm {
    /// The address of `queue` (in the bus's own schema `own`) as other endpoints read it.
    pub(crate) fn address_of(self, own: &SchemaName, queue: &QueueName) -> String {
        match self {
            AddressForm::OwnSchemaOnly => queue.as_str().to_string(),
            AddressForm::Schemas => format!(
                "\"{}\".\"{}\"",
                own.as_str().replace('"', "\"\""),
                queue.as_str().replace('"', "\"\"")
            ),
            AddressForm::SchemasAndCatalogs => {
                QueueName::in_place(queue.unqualified(), Some(own.clone()), None).to_string()
            }
        }
    }
}

/// NServiceBus's PostgreSQL address, `"schema"."table"` or `"table"`: read only when the text
/// starts with a quote and is made of quoted (or plain) identifiers joined by one dot, so that
/// a plain name with quotes or dots in it stays a plain name.
fn parse_postgres_form(address: &str) -> Result<Option<QueueName>> {
    if !address.starts_with('"') {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let mut rest = address;
    loop {
        let Some((part, after)) = quoted_identifier(rest) else {
            return Ok(None);
        };
        parts.push(part);
        match after.strip_prefix('.') {
            Some(next) if parts.len() < 2 && next.starts_with('"') => rest = next,
            Some(next) if parts.len() < 2 && !next.is_empty() && !next.contains(['"', '.']) => {
                parts.push(next.to_string());
                break;
            }
            None if after.is_empty() => break,
            _ => return Ok(None),
        }
    }
    let table = parts.pop().unwrap_or_default();
    let schema = match parts.pop() {
        Some(schema) if !schema.is_empty() => {
            validate("schema", &schema, MAX_NAME_LEN)?;
            Some(SchemaName(schema))
        }
        _ => None,
    };
    Ok(Some(QueueName::in_place(
        QueueName::new(table)?,
        schema,
        None,
    )))
}

/// A `"…"` identifier at the start of `text` (`""` inside for a quote), and what follows it.
fn quoted_identifier(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut name = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            if body[i + 1..].starts_with('"') {
                name.push('"');
                chars.next();
            } else {
                return Some((name, &body[i + 1..]));
            }
        } else {
            name.push(c);
        }
    }
    None
}

/// The next `@`-separated part of an address (NServiceBus's rule: a part that starts with `[`
/// runs to the `@` after its closing bracket, so it may hold `@`), and the rest after that `@`.
fn next_part(text: &str) -> (String, Option<&str>) {
    let bracketed = text.starts_with('[');
    let mut closing = 0usize;
    for (i, c) in text.char_indices().skip(1) {
        if c == '@' && (!bracketed || closing % 2 == 1) {
            return (text[..i].to_string(), Some(&text[i + 1..]));
        }
        if c == ']' {
            closing += 1;
        }
    }
    (text.to_string(), None)
}

/// `[name]` without its brackets (`]]` inside read as `]`); a part without brackets as it is.
fn unbracket(part: &str) -> String {
    match part.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
        Some(inner) => inner.replace("]]", "]"),
        None => part.to_string(),
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

    /// A schema name written into the framework's own code.
    pub(crate) fn constant(name: &'static str) -> Self {
        debug_assert!(validate("schema", name, MAX_NAME_LEN).is_ok(), "{name}");
        SchemaName(name.to_string())
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The address: the name alone, or `name@[schema]`, `name@[schema]@[database]`,
/// `name@[]@[database]`, which [`QueueName::parse`] reads back.
impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        let Some(place) = &self.place else {
            return Ok(());
        };
        let bracket = |name: Option<&SchemaName>| {
            format!("[{}]", name.map_or("", |n| n.as_str()).replace(']', "]]"))
        };
        write!(f, "@{}", bracket(place.schema.as_ref()))?;
        if let Some(catalog) = &place.catalog {
            write!(f, "@{}", bracket(Some(catalog)))?;
        }
        Ok(())
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
    fn reads_nservicebus_sql_server_addresses() {
        let plain = QueueName::parse("Sales").unwrap();
        assert_eq!(
            (plain.as_str(), plain.schema(), plain.catalog()),
            ("Sales", None, None)
        );
        let cases = [
            ("Sales@billing", Some("billing"), None),
            ("Sales@[billing]", Some("billing"), None),
            ("Sales@[bill@ing]", Some("bill@ing"), None),
            ("Sales@[a]]b]", Some("a]b"), None),
            ("Sales@[billing]@[Orders]", Some("billing"), Some("Orders")),
            ("Sales@billing@Orders", Some("billing"), Some("Orders")),
            ("Sales@[]@[Orders]", None, Some("Orders")),
            ("Sales@[dbo]@[nimbus db]", Some("dbo"), Some("nimbus db")),
        ];
        for (address, schema, catalog) in cases {
            let queue = QueueName::parse(address).unwrap();
            assert_eq!(queue.as_str(), "Sales", "{address}");
            assert_eq!(queue.schema().map(SchemaName::as_str), schema, "{address}");
            assert_eq!(
                queue.catalog().map(SchemaName::as_str),
                catalog,
                "{address}"
            );
            // The address written back reads as the same queue.
            assert_eq!(
                QueueName::parse(&queue.to_string()).unwrap(),
                queue,
                "{address}"
            );
        }
        assert_eq!(QueueName::parse("Sales@").unwrap(), plain);
        assert_eq!(
            QueueName::parse("Sales@[billing]@[Orders]")
                .unwrap()
                .to_string(),
            "Sales@[billing]@[Orders]"
        );
    }

    #[test]
    fn reads_nservicebus_postgres_addresses_and_keeps_plain_names_plain() {
        let queue = QueueName::parse(r#""billing"."Sales""#).unwrap();
        assert_eq!(queue.as_str(), "Sales");
        assert_eq!(queue.schema().map(SchemaName::as_str), Some("billing"));
        let quoted = QueueName::parse(r#""my ""odd"" schema"."Sa.les""#).unwrap();
        assert_eq!(quoted.as_str(), "Sa.les");
        assert_eq!(
            quoted.schema().map(SchemaName::as_str),
            Some(r#"my "odd" schema"#)
        );
        let table_only = QueueName::parse(r#""Sales""#).unwrap();
        assert_eq!((table_only.as_str(), table_only.schema()), ("Sales", None));
        // Dots and quotes inside a plain name keep it one name.
        for name in ["billing.audit", r#"dq"x"#, r#""unclosed"#, r#""a"b"#] {
            let queue = QueueName::parse(name).unwrap();
            assert_eq!((queue.as_str(), queue.schema()), (name, None), "{name}");
        }
    }

    #[test]
    fn own_addresses_are_written_as_each_databases_nservicebus_transport_writes_them() {
        let schema = SchemaName::new("sales \"eu\"").unwrap();
        let queue = QueueName::new("Orders.instance-1").unwrap();
        let cases = [
            (AddressForm::OwnSchemaOnly, "Orders.instance-1"),
            (
                AddressForm::Schemas,
                r#""sales ""eu"""."Orders.instance-1""#,
            ),
            (
                AddressForm::SchemasAndCatalogs,
                "Orders.instance-1@[sales \"eu\"]",
            ),
        ];
        for (form, expected) in cases {
            let address = form.address_of(&schema, &queue);
            assert_eq!(address, expected);
            let back = QueueName::parse(&address).unwrap();
            assert_eq!(back.as_str(), queue.as_str());
            if form != AddressForm::OwnSchemaOnly {
                assert_eq!(back.schema(), Some(&schema));
            }
        }
    }

    #[test]
    fn refuses_addresses_that_cannot_be_a_queue() {
        for address in ["@billing", "Sales@[a]@[b]@[c]", "Sales@[\n]", "a@b\n"] {
            assert!(QueueName::parse(address).is_err(), "{address:?}");
        }
        let err = QueueName::new("Sales@billing").unwrap_err().to_string();
        assert!(err.contains("address"), "{err}");
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
