//! Message headers, with the names NServiceBus uses so that a Rust endpoint and a .NET endpoint
//! can exchange messages on the same tables.

use std::collections::BTreeMap;

/// Headers of one message: name to value, serialized as a JSON object in the `Headers` column.
pub type Headers = BTreeMap<String, String>;

/// `NServiceBus.MessageId`: the message's unique id.
pub const MESSAGE_ID: &str = "NServiceBus.MessageId";
/// `NServiceBus.CorrelationId`: the id of the message this one belongs to.
pub const CORRELATION_ID: &str = "NServiceBus.CorrelationId";
/// `NServiceBus.ConversationId`: shared by every message caused by one first message.
pub const CONVERSATION_ID: &str = "NServiceBus.ConversationId";
/// `NServiceBus.RelatedTo`: the id of the message being handled when this one was sent.
pub const RELATED_TO: &str = "NServiceBus.RelatedTo";
/// `NServiceBus.ReplyToAddress`: the queue that replies go to.
pub const REPLY_TO_ADDRESS: &str = "NServiceBus.ReplyToAddress";
/// `NServiceBus.EnclosedMessageTypes`: the message type name (the first of a `;` list).
pub const ENCLOSED_MESSAGE_TYPES: &str = "NServiceBus.EnclosedMessageTypes";
/// `NServiceBus.ContentType`: always `application/json` here.
pub const CONTENT_TYPE: &str = "NServiceBus.ContentType";
/// `NServiceBus.MessageIntent`: `Send`, `Publish` or `Reply`.
pub const MESSAGE_INTENT: &str = "NServiceBus.MessageIntent";
/// `NServiceBus.TimeSent`: when the message was sent, in NServiceBus's wire format.
pub const TIME_SENT: &str = "NServiceBus.TimeSent";
/// `NServiceBus.TimeToBeReceived`: how long the message may wait (`hh:mm:ss`).
pub const TIME_TO_BE_RECEIVED: &str = "NServiceBus.TimeToBeReceived";
/// `NServiceBus.OriginatingEndpoint`: the application that sent the message.
pub const ORIGINATING_ENDPOINT: &str = "NServiceBus.OriginatingEndpoint";
/// `NServiceBus.OriginatingMachine`: the instance that sent the message.
pub const ORIGINATING_MACHINE: &str = "NServiceBus.OriginatingMachine";

/// The content type of every body this framework writes.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// NServiceBus's `DateTimeOffsetHelper` wire format, e.g. `2026-11-30 07:15:02:123456 Z`.
pub fn format_time(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%d %H:%M:%S:%6f Z").to_string()
}

/// Reads a time written by [`format_time`] (NServiceBus's wire format).
pub fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::NaiveDateTime::parse_from_str(text.trim_end_matches(" Z"), "%Y-%m-%d %H:%M:%S:%6f")
        .ok()
        .map(|t| t.and_utc())
}

/// The message type a receiver should dispatch on: the first entry of
/// `NServiceBus.EnclosedMessageTypes`, without a .NET assembly qualification
/// (`Sales.OrderPlaced, Sales.Messages, Version=1.0.0.0` becomes `Sales.OrderPlaced`).
pub fn enclosed_type(headers: &Headers) -> Option<&str> {
    let value = headers.get(ENCLOSED_MESSAGE_TYPES)?;
    let first = value.split(';').next()?;
    let name = first.split(',').next()?.trim();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enclosed_type_strips_assembly_and_takes_first() {
        let mut h = Headers::new();
        h.insert(
            ENCLOSED_MESSAGE_TYPES.into(),
            "Sales.OrderPlaced, Sales.Messages, Version=1.0.0.0;Sales.IOrderEvent, Sales".into(),
        );
        assert_eq!(enclosed_type(&h), Some("Sales.OrderPlaced"));
        h.insert(ENCLOSED_MESSAGE_TYPES.into(), "  ".into());
        assert_eq!(enclosed_type(&h), None);
    }

    #[test]
    fn time_format_matches_nservicebus() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-30T07:15:02.123456Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(format_time(t), "2026-11-30 07:15:02:123456 Z");
    }

    #[test]
    fn times_read_back_as_written() {
        let now = chrono::Utc::now();
        let read = parse_time(&format_time(now)).expect("a time");
        assert!((read - now).num_milliseconds().abs() < 1);
    }
}
