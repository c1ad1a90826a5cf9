//! Messages as the transport sees them: headers serialized as JSON, a body of bytes, and the
//! seed-000 columns that exist for NServiceBus SQL Server transport version 1.

use std::sync::Arc;

use uuid::Uuid;

use crate::error::{NimbusError, Result};
use crate::headers::{self, Headers};
use crate::message::Message;
use crate::names::QueueName;

/// Where an outgoing message goes.
#[derive(Clone, Debug)]
pub(crate) enum Destination {
    /// One queue.
    Queue(QueueName),
    /// Every queue subscribed to this topic (an event type name) when the message is written.
    Topic(&'static str),
}

/// A message ready to be inserted: everything serialized, nothing left to compute per row.
#[derive(Clone, Debug)]
pub(crate) struct OutgoingMessage {
    pub destination: Destination,
    pub id: Uuid,
    pub headers_json: String,
    pub body: Vec<u8>,
    /// `CorrelationId` column; `None` (NULL) unless version-1 columns are filled.
    pub correlation_id: Option<String>,
    /// `ReplyToAddress` column; `None` (NULL) unless version-1 columns are filled.
    pub reply_to_address: Option<String>,
    /// Time to be received in milliseconds; the database turns it into `Expires`.
    pub time_to_be_received_ms: Option<i64>,
}

/// A row taken from a queue table by a receive.
#[derive(Clone, Debug)]
pub(crate) struct ReceivedMessage {
    /// The `Id` column as text.
    pub row_id: String,
    pub headers_json: String,
    pub body: Vec<u8>,
    pub correlation_id: Option<String>,
    pub reply_to_address: Option<String>,
    /// `Expires` is in the past by database time: the message must not be handled.
    pub expired: bool,
}

/// Who is sending: the endpoint's names, used to fill the origin headers.
#[derive(Debug)]
pub(crate) struct EndpointIdentity {
    pub application: String,
    pub instance: String,
    pub input_queue: QueueName,
    /// Write `CorrelationId`/`ReplyToAddress` columns too, for version-1 receivers.
    pub fill_v1_columns: bool,
}

/// The message being handled, when a send happens inside a handler.
#[derive(Clone, Debug)]
pub(crate) struct Causation {
    pub message_id: String,
    pub conversation_id: Option<String>,
    pub correlation_id: Option<String>,
}

/// What the message is doing, for `NServiceBus.MessageIntent`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Intent {
    Send,
    Publish,
}

impl Intent {
    fn header_value(self) -> &'static str {
        match self {
            Intent::Send => "Send",
            Intent::Publish => "Publish",
        }
    }
}

/// Serializes `message` and its headers into an [`OutgoingMessage`].
pub(crate) fn build_outgoing<M: Message>(
    message: &M,
    intent: Intent,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    causation: Option<&Causation>,
) -> Result<OutgoingMessage> {
    let body = serde_json::to_vec(message).map_err(|source| NimbusError::Serialize {
        type_name: M::TYPE_NAME,
        source,
    })?;
    let id = Uuid::new_v4();
    let id_text = id.to_string();
    let correlation_id = causation
        .and_then(|c| c.correlation_id.clone())
        .unwrap_or_else(|| id_text.clone());
    let conversation_id = causation
        .and_then(|c| c.conversation_id.clone())
        .unwrap_or_else(|| id_text.clone());
    let reply_to = origin.input_queue.as_str().to_string();

    let mut h = Headers::new();
    h.insert(headers::MESSAGE_ID.into(), id_text);
    h.insert(headers::ENCLOSED_MESSAGE_TYPES.into(), M::TYPE_NAME.into());
    h.insert(
        headers::CONTENT_TYPE.into(),
        headers::JSON_CONTENT_TYPE.into(),
    );
    h.insert(headers::MESSAGE_INTENT.into(), intent.header_value().into());
    h.insert(
        headers::TIME_SENT.into(),
        headers::format_time(chrono::Utc::now()),
    );
    h.insert(
        headers::ORIGINATING_ENDPOINT.into(),
        origin.application.clone(),
    );
    h.insert(headers::ORIGINATING_MACHINE.into(), origin.instance.clone());
    h.insert(headers::REPLY_TO_ADDRESS.into(), reply_to.clone());
    h.insert(headers::CORRELATION_ID.into(), correlation_id.clone());
    h.insert(headers::CONVERSATION_ID.into(), conversation_id);
    if let Some(c) = causation {
        h.insert(headers::RELATED_TO.into(), c.message_id.clone());
    }
    // A map of strings always serializes.
    let headers_json = serde_json::to_string(&h).map_err(|source| NimbusError::Serialize {
        type_name: M::TYPE_NAME,
        source,
    })?;

    let (correlation_column, reply_to_column) = if origin.fill_v1_columns {
        (Some(correlation_id), Some(reply_to))
    } else {
        (None, None)
    };
    Ok(OutgoingMessage {
        destination,
        id,
        headers_json,
        body,
        correlation_id: correlation_column,
        reply_to_address: reply_to_column,
        time_to_be_received_ms: None,
    })
}

/// Why a received row cannot be dispatched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("the Headers column is not a JSON object of strings: {0}")]
    Headers(serde_json::Error),
    #[error("the message has no {} header", headers::ENCLOSED_MESSAGE_TYPES)]
    NoType,
}

/// A received message with its headers parsed and the version-1 rules applied.
#[derive(Clone, Debug)]
pub(crate) struct Incoming {
    pub headers: Headers,
    pub type_name: String,
    pub message_id: String,
    pub body: Vec<u8>,
}

impl Incoming {
    /// Parses the headers; `CorrelationId`/`ReplyToAddress` come from the headers, falling back
    /// to the columns when a version-1 sender filled only those.
    pub fn decode(row: ReceivedMessage) -> std::result::Result<Self, DecodeError> {
        let mut headers: Headers =
            serde_json::from_str(&row.headers_json).map_err(DecodeError::Headers)?;
        if let Some(c) = row.correlation_id.filter(|c| !c.is_empty()) {
            headers.entry(headers::CORRELATION_ID.into()).or_insert(c);
        }
        if let Some(r) = row.reply_to_address.filter(|r| !r.is_empty()) {
            headers.entry(headers::REPLY_TO_ADDRESS.into()).or_insert(r);
        }
        let type_name = headers::enclosed_type(&headers)
            .ok_or(DecodeError::NoType)?
            .to_string();
        let message_id = headers
            .get(headers::MESSAGE_ID)
            .cloned()
            .unwrap_or(row.row_id);
        Ok(Incoming {
            headers,
            type_name,
            message_id,
            body: row.body,
        })
    }

    pub fn causation(&self) -> Causation {
        Causation {
            message_id: self.message_id.clone(),
            conversation_id: self.headers.get(headers::CONVERSATION_ID).cloned(),
            correlation_id: self.headers.get(headers::CORRELATION_ID).cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(headers: &str, correlation: Option<&str>, reply_to: Option<&str>) -> ReceivedMessage {
        ReceivedMessage {
            row_id: "9f1c2b9e-0000-0000-0000-000000000001".into(),
            headers_json: headers.into(),
            body: b"{}".to_vec(),
            correlation_id: correlation.map(Into::into),
            reply_to_address: reply_to.map(Into::into),
            expired: false,
        }
    }

    #[test]
    fn v1_columns_fill_missing_headers_only() {
        let msg = Incoming::decode(row(
            r#"{"NServiceBus.EnclosedMessageTypes":"A","NServiceBus.CorrelationId":"from-header"}"#,
            Some("from-column"),
            Some("ReplyQueue"),
        ))
        .unwrap();
        assert_eq!(msg.headers[headers::CORRELATION_ID], "from-header");
        assert_eq!(msg.headers[headers::REPLY_TO_ADDRESS], "ReplyQueue");
        assert_eq!(msg.message_id, "9f1c2b9e-0000-0000-0000-000000000001");
    }

    #[test]
    fn malformed_headers_and_missing_type_are_errors() {
        assert!(matches!(
            Incoming::decode(row("not json", None, None)),
            Err(DecodeError::Headers(_))
        ));
        assert!(matches!(
            Incoming::decode(row("{}", None, None)),
            Err(DecodeError::NoType)
        ));
    }
}
