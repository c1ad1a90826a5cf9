//! Values crossing the driver boundary: parameters in, decoded cells out.

use chrono::NaiveDateTime;
use uuid::Uuid;

/// One statement parameter, typed as the statement's column expects it. `None` binds SQL NULL
/// of that type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param<'a> {
    /// A `uniqueidentifier` / `uuid` (text on SQLite).
    Uuid(Uuid),
    /// Text (`varchar`, `nvarchar`, `text`).
    Text(Option<&'a str>),
    /// Bytes (`varbinary`, `bytea`, `blob`).
    Bytes(Option<&'a [u8]>),
    /// A 64-bit integer (`bigint`).
    BigInt(Option<i64>),
    /// A 32-bit integer (`int`).
    Int(i32),
    /// A UTC time without zone (`datetime2`, `timestamp`; text on SQLite).
    Time(Option<NaiveDateTime>),
}

/// An owned copy of a [`Param`]: to move a statement onto a blocking thread, or to hand it to a
/// connection the framework does not hold (the application's own transaction).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedParam {
    Uuid(Uuid),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
    BigInt(Option<i64>),
    Int(i32),
    Time(Option<NaiveDateTime>),
}

impl OwnedParam {
    pub fn of(param: &Param<'_>) -> Self {
        match *param {
            Param::Uuid(v) => OwnedParam::Uuid(v),
            Param::Text(v) => OwnedParam::Text(v.map(str::to_string)),
            Param::Bytes(v) => OwnedParam::Bytes(v.map(<[u8]>::to_vec)),
            Param::BigInt(v) => OwnedParam::BigInt(v),
            Param::Int(v) => OwnedParam::Int(v),
            Param::Time(v) => OwnedParam::Time(v),
        }
    }

    pub fn as_param(&self) -> Param<'_> {
        match self {
            OwnedParam::Uuid(v) => Param::Uuid(*v),
            OwnedParam::Text(v) => Param::Text(v.as_deref()),
            OwnedParam::Bytes(v) => Param::Bytes(v.as_deref()),
            OwnedParam::BigInt(v) => Param::BigInt(*v),
            OwnedParam::Int(v) => Param::Int(*v),
            OwnedParam::Time(v) => Param::Time(*v),
        }
    }
}

/// One statement with its parameters, owned: what the framework would run, for a connection it
/// does not hold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Statement {
    pub sql: String,
    pub params: Vec<OwnedParam>,
}

impl Statement {
    pub fn new(sql: &str, params: &[Param<'_>]) -> Self {
        Statement {
            sql: sql.to_string(),
            params: params.iter().map(OwnedParam::of).collect(),
        }
    }

    /// The parameters, borrowed for binding.
    pub fn params(&self) -> Vec<Param<'_>> {
        self.params.iter().map(OwnedParam::as_param).collect()
    }
}

/// One decoded cell. Decoding never fails as a whole: a value the framework cannot read becomes
/// [`Value::Undecodable`], and the code that needs it decides (a message becomes a bad-input dead
/// letter, a catalog row is skipped with a warning).
#[derive(Clone, Debug, PartialEq)]
// Each driver produces the variants its database has: with one database feature, some are unused.
#[allow(dead_code)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    Bytes(Vec<u8>),
    Uuid(Uuid),
    Time(NaiveDateTime),
    /// The database holds a value this driver cannot represent; the text says what and why.
    Undecodable(String),
}

fn parse_time(text: &str) -> Option<NaiveDateTime> {
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
}

/// A row of decoded cells, read by position with typed getters that say what was wrong instead
/// of panicking.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row(pub Vec<Value>);

impl Row {
    fn cell(&self, index: usize) -> Result<&Value, String> {
        self.0
            .get(index)
            .ok_or_else(|| format!("the row has no column {index}"))
    }

    fn mismatch(&self, index: usize, wanted: &str) -> String {
        match self.0.get(index) {
            Some(Value::Undecodable(why)) => format!("column {index}: {why}"),
            Some(other) => format!("column {index} holds {other:?} where {wanted} was expected"),
            None => format!("the row has no column {index}"),
        }
    }

    /// Text; a UUID as its text; bytes that are UTF-8 (SQLite may store text as a blob).
    pub fn text(&self, index: usize) -> Result<Option<String>, String> {
        match self.cell(index)? {
            Value::Null => Ok(None),
            Value::Text(text) => Ok(Some(text.clone())),
            Value::Uuid(id) => Ok(Some(id.to_string())),
            Value::Bytes(bytes) => String::from_utf8(bytes.clone())
                .map(Some)
                .map_err(|_| format!("column {index} holds bytes that are not UTF-8 text")),
            _ => Err(self.mismatch(index, "text")),
        }
    }

    /// Bytes; text as its UTF-8 bytes (SQLite may store a body as text).
    pub fn bytes(&self, index: usize) -> Result<Option<Vec<u8>>, String> {
        match self.cell(index)? {
            Value::Null => Ok(None),
            Value::Bytes(bytes) => Ok(Some(bytes.clone())),
            Value::Text(text) => Ok(Some(text.clone().into_bytes())),
            _ => Err(self.mismatch(index, "bytes")),
        }
    }

    /// Bytes moved out of the row (its cell becomes NULL), so a large value is not copied; text
    /// as its UTF-8 bytes.
    pub fn take_bytes(&mut self, index: usize) -> Result<Option<Vec<u8>>, String> {
        let cell = self
            .0
            .get_mut(index)
            .ok_or_else(|| format!("the row has no column {index}"))?;
        match std::mem::replace(cell, Value::Null) {
            Value::Null => Ok(None),
            Value::Bytes(bytes) => Ok(Some(bytes)),
            Value::Text(text) => Ok(Some(text.into_bytes())),
            other => {
                *cell = other;
                Err(self.mismatch(index, "bytes"))
            }
        }
    }

    /// An integer.
    pub fn int(&self, index: usize) -> Result<Option<i64>, String> {
        match self.cell(index)? {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            Value::Bool(b) => Ok(Some(i64::from(*b))),
            _ => Err(self.mismatch(index, "an integer")),
        }
    }

    /// A truth value; an integer is true when it is not 0.
    pub fn bool(&self, index: usize) -> Result<Option<bool>, String> {
        match self.cell(index)? {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            Value::Int(n) => Ok(Some(*n != 0)),
            _ => Err(self.mismatch(index, "a truth value")),
        }
    }

    /// A UTC time; text in SQLite's time format.
    pub fn time(&self, index: usize) -> Result<Option<NaiveDateTime>, String> {
        match self.cell(index)? {
            Value::Null => Ok(None),
            Value::Time(t) => Ok(Some(*t)),
            Value::Text(text) => parse_time(text)
                .map(Some)
                .ok_or_else(|| format!("column {index} holds {text:?}, which is not a time")),
            _ => Err(self.mismatch(index, "a time")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getters_convert_what_the_databases_store() {
        let id = Uuid::new_v4();
        let row = Row(vec![
            Value::Uuid(id),
            Value::Bytes(b"{}".to_vec()),
            Value::Text("body".into()),
            Value::Int(1),
            Value::Text("2026-01-02 03:04:05.678".into()),
            Value::Null,
        ]);
        assert_eq!(row.text(0), Ok(Some(id.to_string())));
        assert_eq!(row.text(1), Ok(Some("{}".into())));
        assert_eq!(row.bytes(2), Ok(Some(b"body".to_vec())));
        assert_eq!(row.bool(3), Ok(Some(true)));
        assert_eq!(
            row.time(4).map(|t| t.map(|t| t.to_string())),
            Ok(Some("2026-01-02 03:04:05.678".into()))
        );
        assert_eq!(row.text(5), Ok(None));
    }

    #[test]
    fn wrong_or_undecodable_values_are_errors_not_panics() {
        let row = Row(vec![
            Value::Bytes(vec![0xff, 0xfe]),
            Value::Undecodable("timestamp 'infinity' is out of range".into()),
            Value::Text("yesterday".into()),
        ]);
        assert!(row.text(0).is_err());
        assert!(row
            .time(1)
            .unwrap_err()
            .contains("infinity' is out of range"));
        assert!(row.time(2).is_err());
        assert!(row.int(7).is_err());
    }
}
