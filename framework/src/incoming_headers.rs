//! A received message's headers, read once for the few the framework looks at on every message,
//! and parsed into a map only when something asks for all of them (a handler's
//! [`HandlerContext::headers`](crate::HandlerContext::headers), a retry copy, a dead letter).
//!
//! The `Headers` column holds about half a kilobyte of JSON. Parsing all of it into a map of
//! owned strings costs two allocations per header and a tree to build and free again, on every
//! message, where the receive path needs eight of them. The first read checks the whole text
//! (a JSON object whose values are all strings, as before) while keeping only those eight.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use crate::headers::{self, Headers};
use crate::headers::{FAILED_ATTEMPTS, TRACEPARENT, TRACESTATE};

/// The headers the framework reads on every received message.
const KEPT: [&str; 10] = [
    headers::MESSAGE_ID,
    headers::ENCLOSED_MESSAGE_TYPES,
    headers::CORRELATION_ID,
    headers::CONVERSATION_ID,
    headers::REPLY_TO_ADDRESS,
    headers::MESSAGE_INTENT,
    headers::TIME_SENT,
    FAILED_ATTEMPTS,
    TRACEPARENT,
    TRACESTATE,
];

/// The values of the [`KEPT`] headers, in its order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Known([Option<String>; KEPT.len()]);

impl Known {
    /// The place of the header `name` among the kept ones, if it is one of them.
    fn slot(name: &str) -> Option<usize> {
        KEPT.iter().position(|kept| *kept == name)
    }

    fn get(&self, name: &str) -> Option<&Option<String>> {
        Self::slot(name).map(|i| &self.0[i])
    }

    fn set(&mut self, name: &str, value: impl FnOnce() -> String) {
        if let Some(i) = Self::slot(name) {
            self.0[i] = Some(value());
        }
    }

    /// The kept headers of a map.
    fn of(map: &Headers) -> Known {
        let mut known = Known::default();
        for (name, value) in map {
            known.set(name, || value.clone());
        }
        known
    }
}

/// A received message's headers (see the module's documentation). The version-1 columns
/// `CorrelationId` and `ReplyToAddress` stand in for their headers when a sender filled only
/// the columns.
#[derive(Clone)]
pub(crate) struct IncomingHeaders {
    /// The column's text, as received (empty when made from a map).
    json: String,
    known: Known,
    /// Every header, parsed on first use, the columns' stand-ins included.
    all: OnceLock<Headers>,
}

impl fmt::Debug for IncomingHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.all(), f)
    }
}

impl IncomingHeaders {
    /// Reads the `Headers` column's text: a JSON object of strings, or the error that says why
    /// it is not one. `correlation_column` and `reply_to_column` (the version-1 columns) fill
    /// their headers where those are missing.
    pub fn read(
        json: String,
        correlation_column: Option<&str>,
        reply_to_column: Option<&str>,
    ) -> Result<IncomingHeaders, serde_json::Error> {
        let mut reader = serde_json::Deserializer::from_str(&json);
        let mut known = reader.deserialize_map(KeepKnown)?;
        reader.end()?;
        for (name, column) in [
            (headers::CORRELATION_ID, correlation_column),
            (headers::REPLY_TO_ADDRESS, reply_to_column),
        ] {
            match column.filter(|c| !c.is_empty()) {
                Some(c) if known.get(name).is_some_and(Option::is_none) => {
                    known.set(name, || c.to_string())
                }
                _ => {}
            }
        }
        Ok(IncomingHeaders {
            json,
            known,
            all: OnceLock::new(),
        })
    }

    /// Headers made from a map (a test context's).
    pub fn from_map(map: Headers) -> IncomingHeaders {
        IncomingHeaders {
            json: String::new(),
            known: Known::of(&map),
            all: OnceLock::from(map),
        }
    }

    /// Every header, parsed the first time it is asked for.
    pub fn all(&self) -> &Headers {
        self.all.get_or_init(|| {
            // The text was read as an object of strings already: this parse cannot fail (an
            // empty map is what it would give if it could).
            let mut map: Headers = serde_json::from_str(&self.json).unwrap_or_default();
            // The version-1 columns' stand-ins, as `read` kept them.
            for name in [headers::CORRELATION_ID, headers::REPLY_TO_ADDRESS] {
                if let Some(Some(value)) = self.known.get(name) {
                    map.entry(name.to_string()).or_insert_with(|| value.clone());
                }
            }
            map
        })
    }

    /// Every header, as a map of its own.
    pub fn into_map(self) -> Headers {
        self.all();
        self.all.into_inner().unwrap_or_default()
    }

    /// The header `name`'s value, from those kept without parsing the rest where it is one of
    /// them.
    pub fn get(&self, name: &str) -> Option<&str> {
        match self.known.get(name) {
            Some(kept) => kept.as_deref(),
            None => self.all().get(name).map(String::as_str),
        }
    }
}

/// A JSON string, borrowed from the text where it has no escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Reads a JSON object of strings, keeping the [`Known`] headers (the last of a name repeated,
/// as a map would).
struct KeepKnown;

impl<'de> Visitor<'de> for KeepKnown {
    type Value = Known;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of header names to strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Known, A::Error> {
        let mut known = Known::default();
        while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
            let Text(value) = map.next_value::<Text<'de>>()?;
            known.set(&name, || value.into_owned());
        }
        Ok(known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<IncomingHeaders, serde_json::Error> {
        IncomingHeaders::read(json.to_string(), None, None)
    }

    #[test]
    fn kept_headers_and_others_read_as_a_map_would() {
        let json = r#"{"NServiceBus.MessageId":"m-1","NServiceBus.EnclosedMessageTypes":"A.B, A",
            "Custom":"x\"y\u00e9","NServiceBus.CorrelationId":"c\\1","NServiceBus.TimeSent":"t",
            "Nimbus.FailedAttempts":"2","NServiceBus.MessageId":"m-2"}"#;
        let headers = read(json).expect("reads");
        let map: Headers = serde_json::from_str(json).expect("map");
        for name in [
            headers::MESSAGE_ID,
            headers::ENCLOSED_MESSAGE_TYPES,
            headers::CORRELATION_ID,
            headers::CONVERSATION_ID,
            headers::TIME_SENT,
            FAILED_ATTEMPTS,
            "Custom",
            "Missing",
        ] {
            assert_eq!(
                headers.get(name),
                map.get(name).map(String::as_str),
                "{name}"
            );
        }
        assert_eq!(
            headers.get(headers::MESSAGE_ID),
            Some("m-2"),
            "the last one wins"
        );
        assert_eq!(headers.all(), &map);
    }

    #[test]
    fn anything_but_an_object_of_strings_is_refused() {
        for bad in [
            r#"{"a":1}"#,
            r#"{"a":null}"#,
            r#"{"a":"b""#,
            r#"["a"]"#,
            r#"{"a":"b"} x"#,
            "",
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
            assert!(
                serde_json::from_str::<Headers>(bad).is_err(),
                "{bad:?} (map)"
            );
        }
    }

    #[test]
    fn version_1_columns_fill_missing_headers_only() {
        let headers = IncomingHeaders::read(
            r#"{"NServiceBus.CorrelationId":"from-header"}"#.to_string(),
            Some("from-column"),
            Some("ReplyQueue"),
        )
        .expect("reads");
        assert_eq!(headers.get(headers::CORRELATION_ID), Some("from-header"));
        assert_eq!(headers.get(headers::REPLY_TO_ADDRESS), Some("ReplyQueue"));
        assert_eq!(
            headers
                .all()
                .get(headers::REPLY_TO_ADDRESS)
                .map(String::as_str),
            Some("ReplyQueue")
        );
        let empty_column = IncomingHeaders::read("{}".to_string(), Some(""), None).expect("reads");
        assert_eq!(empty_column.get(headers::CORRELATION_ID), None);
        assert!(empty_column.all().is_empty());
    }

    #[test]
    fn headers_from_a_map_answer_from_it() {
        let mut map = Headers::new();
        map.insert(headers::MESSAGE_ID.into(), "m".into());
        map.insert("Other".into(), "o".into());
        let headers = IncomingHeaders::from_map(map.clone());
        assert_eq!(headers.get(headers::MESSAGE_ID), Some("m"));
        assert_eq!(headers.get("Other"), Some("o"));
        assert_eq!(headers.all(), &map);
    }
}
