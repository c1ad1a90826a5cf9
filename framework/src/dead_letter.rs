//! The dead-letter envelope: what `NimbusDeadLetters.Body` holds, so that a dead letter can be
//! read by people and tools and replayed without loss.
//!
//! `Body` is UTF-8 JSON:
//!
//! ```json
//! {
//!   "format": "nimbus-dead-letter/1",
//!   "id": "…the queue row's Id…",
//!   "destination": "Sales",
//!   "reason": "the handler failed: …",
//!   "deliveryAttempts": 9,
//!   "headers": { "NServiceBus.MessageId": "…", "NServiceBus.ExceptionInfo.Message": "…", … },
//!   "rawHeaders": null,
//!   "body": { …the message body, verbatim, when it is JSON… },
//!   "bodyBase64": null,
//!   "correlationId": null,
//!   "replyToAddress": null,
//!   "expires": null
//! }
//! ```
//!
//! `headers` is null and `rawHeaders` holds the column's text when the headers were not JSON;
//! `bodyBase64` holds the body when it is not JSON. Replaying writes the message back to
//! `destination` with the original headers (without the failure and retry headers) and the body
//! byte for byte.

use base64::Engine;
use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage};
use crate::error::{NimbusError, Result};
use crate::headers::Headers;
use crate::names::QueueName;
use crate::recoverability::{
    DELAYED_RETRIES, EXCEPTION_MESSAGE, FAILED_ATTEMPTS, FAILED_QUEUE, TIME_OF_FAILURE,
};

const FORMAT: &str = "nimbus-dead-letter/1";
const EXPIRES_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.f";

/// The JSON stored in `NimbusDeadLetters.Body`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeadLetterEnvelope {
    pub format: String,
    pub id: String,
    pub destination: String,
    pub reason: String,
    pub delivery_attempts: u32,
    pub headers: Option<Headers>,
    pub raw_headers: Option<String>,
    pub body: Option<Box<RawValue>>,
    pub body_base64: Option<String>,
    pub correlation_id: Option<String>,
    pub reply_to_address: Option<String>,
    pub expires: Option<String>,
}

/// The id of the body stored apart (the claim check) that a dead letter's envelope `letter`
/// names in its headers.
pub(crate) fn stored_body_of(letter: &[u8]) -> Option<Uuid> {
    let envelope = serde_json::from_slice::<DeadLetterEnvelope>(letter).ok()?;
    crate::claim_check::claim_in(envelope.headers.as_ref()?)
}

/// A row for `NimbusDeadLetters`.
#[derive(Debug)]
pub(crate) struct DeadLetter {
    pub message_id: Uuid,
    pub original_destination: String,
    pub body: Vec<u8>,
    pub delivery_attempts: i32,
}

/// The dead letter of `row`, received from `queue`, that failed `attempts` times for `reason`.
/// `headers` are the parsed headers when they could be parsed.
pub(crate) fn dead_letter(
    row: &ReceivedMessage,
    headers: Option<&Headers>,
    queue: &QueueName,
    reason: &str,
    attempts: u32,
) -> DeadLetter {
    build(row, headers, queue.as_str(), reason, attempts)
}

/// The dead letter of a row that never reached a handler (its headers parsed if they can be),
/// bound for `destination`.
pub(crate) fn dead_letter_raw(
    row: &ReceivedMessage,
    destination: &str,
    reason: &str,
    attempts: u32,
) -> DeadLetter {
    let headers = serde_json::from_str::<Headers>(&row.headers_json).ok();
    build(row, headers.as_ref(), destination, reason, attempts)
}

fn build(
    row: &ReceivedMessage,
    headers: Option<&Headers>,
    queue: &str,
    reason: &str,
    attempts: u32,
) -> DeadLetter {
    let headers = headers.map(|h| {
        let mut h = h.clone();
        h.insert(EXCEPTION_MESSAGE.into(), reason.to_string());
        h.insert(FAILED_QUEUE.into(), queue.to_string());
        h.insert(
            TIME_OF_FAILURE.into(),
            crate::headers::format_time(chrono::Utc::now()),
        );
        h.insert(FAILED_ATTEMPTS.into(), attempts.to_string());
        h
    });
    let json_body = std::str::from_utf8(&row.body)
        .ok()
        .and_then(|text| RawValue::from_string(text.to_string()).ok());
    let body_base64 = json_body
        .is_none()
        .then(|| base64::engine::general_purpose::STANDARD.encode(&row.body));
    let envelope = DeadLetterEnvelope {
        format: FORMAT.into(),
        id: row.row_id.clone(),
        destination: queue.to_string(),
        reason: reason.to_string(),
        delivery_attempts: attempts,
        raw_headers: headers.is_none().then(|| row.headers_json.clone()),
        headers,
        body: json_body,
        body_base64,
        correlation_id: row.correlation_id.clone(),
        reply_to_address: row.reply_to_address.clone(),
        expires: row.expires.map(|e| e.format(EXPIRES_FORMAT).to_string()),
    };
    // Serializing strings, maps of strings and raw JSON cannot fail; fall back to the reason.
    let body = serde_json::to_vec(&envelope).unwrap_or_else(|_| reason.as_bytes().to_vec());
    DeadLetter {
        message_id: Uuid::parse_str(&row.row_id).unwrap_or_else(|_| Uuid::new_v4()),
        original_destination: queue.to_string(),
        body,
        delivery_attempts: i32::try_from(attempts).unwrap_or(i32::MAX),
    }
}

/// Turns a dead letter back into the message it was, addressed to its original queue, with the
/// failure and retry headers removed so it gets a full retry budget.
pub(crate) fn replay_message(original_destination: &str, body: &[u8]) -> Result<OutgoingMessage> {
    let envelope: DeadLetterEnvelope = serde_json::from_slice(body).map_err(|e| {
        NimbusError::config(
            format!("the dead letter's Body is not a {FORMAT} envelope: {e}"),
            "replay only dead letters written by nimbus; others must be moved by hand",
        )
    })?;
    let headers_json = match (&envelope.headers, &envelope.raw_headers) {
        (Some(h), _) => {
            let mut h = h.clone();
            for name in [
                EXCEPTION_MESSAGE,
                FAILED_QUEUE,
                TIME_OF_FAILURE,
                FAILED_ATTEMPTS,
                DELAYED_RETRIES,
            ] {
                h.remove(name);
            }
            serde_json::to_string(&h).map_err(|source| NimbusError::Serialize {
                type_name: "headers",
                source,
            })?
        }
        (None, Some(raw)) => raw.clone(),
        (None, None) => "{}".into(),
    };
    let body = match (&envelope.body, &envelope.body_base64) {
        (Some(raw), _) => raw.get().as_bytes().to_vec(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
                NimbusError::config(
                    format!("the dead letter's bodyBase64 is not base64: {e}"),
                    "fix the row by hand",
                )
            })?,
        (None, None) => Vec::new(),
    };
    let destination = if envelope.destination.is_empty() {
        original_destination
    } else {
        &envelope.destination
    };
    Ok(OutgoingMessage {
        destination: Destination::Queue(QueueName::parse(destination)?),
        id: Uuid::parse_str(&envelope.id).unwrap_or_else(|_| Uuid::new_v4()),
        headers_json,
        body,
        correlation_id: envelope.correlation_id,
        reply_to_address: envelope.reply_to_address,
        time_to_be_received_ms: None,
        expires_at: envelope
            .expires
            .and_then(|e| NaiveDateTime::parse_from_str(&e, EXPIRES_FORMAT).ok()),
        delivery: Delivery::Immediate,
        // A replayed message of a group rejoins its group, behind the messages waiting there.
        group: envelope
            .headers
            .as_ref()
            .and_then(|h| h.get(crate::headers::GROUP))
            .map(|key| crate::envelope::GroupPlace {
                key: key.clone(),
                position: None,
            }),
        // And a prioritized one its priority.
        priority: envelope
            .headers
            .as_ref()
            .and_then(crate::envelope::priority_in),
        // Its body stored apart, if any, is still there: the headers name it.
        stored_apart: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(headers: &str, body: &[u8]) -> ReceivedMessage {
        ReceivedMessage {
            row_id: "0b1f4a57-9a3e-4a5e-8d0a-1b2c3d4e5f60".into(),
            headers_json: headers.into(),
            body: body.to_vec(),
            correlation_id: Some("c".into()),
            reply_to_address: None,
            expired: false,
            expires: NaiveDateTime::parse_from_str("2030-01-02 03:04:05.678", EXPIRES_FORMAT).ok(),
            undecodable: None,
            group: None,
        }
    }

    #[test]
    fn json_bodies_and_headers_round_trip_exactly() {
        let body = br#"{ "n" : 1,  "s":"x" }"#;
        let mut headers = Headers::new();
        headers.insert("NServiceBus.MessageId".into(), "m-1".into());
        headers.insert(FAILED_ATTEMPTS.into(), "4".into());
        let queue = QueueName::new("Sales").unwrap();
        let letter = dead_letter(&row("{}", body), Some(&headers), &queue, "boom", 9);
        assert_eq!(letter.delivery_attempts, 9);
        let text = String::from_utf8(letter.body.clone()).unwrap();
        assert!(text.contains(r#""reason":"boom""#), "{text}");
        assert!(
            text.contains(r#""NServiceBus.ExceptionInfo.Message":"boom""#),
            "{text}"
        );
        let replay = replay_message("Sales", &letter.body).unwrap();
        assert_eq!(replay.body, body.to_vec(), "byte for byte");
        let replayed: Headers = serde_json::from_str(&replay.headers_json).unwrap();
        assert_eq!(replayed.get("NServiceBus.MessageId").unwrap(), "m-1");
        assert!(!replayed.contains_key(FAILED_ATTEMPTS));
        assert!(!replayed.contains_key(EXCEPTION_MESSAGE));
        assert_eq!(replay.id, letter.message_id);
        assert_eq!(replay.correlation_id.as_deref(), Some("c"));
        assert_eq!(replay.expires_at, row("{}", body).expires);
    }

    #[test]
    fn malformed_headers_and_binary_bodies_are_kept_verbatim() {
        let body = [0xff, 0x00, 0x7b];
        let queue = QueueName::new("Q").unwrap();
        let letter = dead_letter(&row("{not json", &body), None, &queue, "bad headers", 1);
        let replay = replay_message("Q", &letter.body).unwrap();
        assert_eq!(replay.headers_json, "{not json");
        assert_eq!(replay.body, body.to_vec());
    }
}
