//! How a message travels in the shared-table layout, where `NimbusMessages` has no `Headers`
//! column: `Body` holds a UTF-8 JSON envelope with the headers and the message body.
//!
//! ```json
//! {"headers":{"NServiceBus.MessageId":"…","NServiceBus.EnclosedMessageTypes":"Sales.OrderPlaced",…},
//!  "body":{"order_id":7}}
//! ```
//!
//! `body` is the message body verbatim when it is JSON (it always is for messages this framework
//! sends); a body that is not JSON travels as base64 text in `bodyBase64` instead. Other tools can
//! read and write rows in this format.

use base64::Engine;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Wraps headers (a JSON object, already serialized) and a body into the envelope.
pub(crate) fn wrap(headers_json: &str, body: &[u8]) -> Vec<u8> {
    let json_body = serde_json::from_slice::<&RawValue>(body).is_ok();
    let mut out = Vec::with_capacity(headers_json.len() + body.len() + 32);
    out.extend_from_slice(b"{\"headers\":");
    out.extend_from_slice(headers_json.as_bytes());
    if json_body {
        out.extend_from_slice(b",\"body\":");
        out.extend_from_slice(body);
    } else {
        out.extend_from_slice(b",\"bodyBase64\":\"");
        out.extend_from_slice(
            base64::engine::general_purpose::STANDARD
                .encode(body)
                .as_bytes(),
        );
        out.push(b'"');
    }
    out.push(b'}');
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(borrow)]
    headers: &'a RawValue,
    #[serde(borrow)]
    body: Option<&'a RawValue>,
    body_base64: Option<String>,
}

/// Splits an envelope into (headers JSON, body). A `Body` that is not an envelope comes back as
/// its own text for headers (which then fail to parse, so the row is dead-lettered with
/// everything it held) and itself as the body.
pub(crate) fn unwrap(bytes: &[u8]) -> (String, Vec<u8>) {
    let parsed = serde_json::from_slice::<Envelope>(bytes)
        .ok()
        .and_then(|e| match (e.body, e.body_base64) {
            (Some(body), _) => Some((e.headers.get().to_string(), body.get().as_bytes().to_vec())),
            (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .ok()
                .map(|body| (e.headers.get().to_string(), body)),
            (None, None) => Some((e.headers.get().to_string(), Vec::new())),
        });
    parsed.unwrap_or_else(|| (String::from_utf8_lossy(bytes).into_owned(), bytes.to_vec()))
}

/// The message body inside an envelope (for tools and tests reading `NimbusMessages`).
pub fn unwrap_body(bytes: &[u8]) -> Vec<u8> {
    unwrap(bytes).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_travel_verbatim() {
        let wrapped = wrap(r#"{"a":"b"}"#, br#"{"n": 1}"#);
        assert_eq!(
            wrapped,
            br#"{"headers":{"a":"b"},"body":{"n": 1}}"#.to_vec()
        );
        assert_eq!(
            unwrap(&wrapped),
            (r#"{"a":"b"}"#.to_string(), br#"{"n": 1}"#.to_vec())
        );
    }

    #[test]
    fn other_bodies_travel_as_base64() {
        let wrapped = wrap("{}", &[0xff, 0x00]);
        assert!(String::from_utf8_lossy(&wrapped).contains("bodyBase64"));
        assert_eq!(unwrap(&wrapped), ("{}".to_string(), vec![0xff, 0x00]));
    }

    #[test]
    fn a_foreign_body_is_kept_whole() {
        let (headers, body) = unwrap(b"not an envelope");
        assert_eq!(headers, "not an envelope");
        assert_eq!(body, b"not an envelope".to_vec());
    }
}
