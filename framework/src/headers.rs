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

/// `Nimbus.ContentEncoding`: how the body was compressed (`gzip` or `zstd`; see
/// [`BodyCompression`](crate::BodyCompression)); absent when it was not.
pub const CONTENT_ENCODING: &str = "Nimbus.ContentEncoding";
/// `Nimbus.Encryption`: how the body was encrypted (`aes-256-gcm`; see
/// [`BodyEncryption`](crate::BodyEncryption)); absent when it was not.
pub const ENCRYPTION: &str = "Nimbus.Encryption";
/// `Nimbus.EncryptionKeyId`: the id of the key that decrypts the body.
pub const ENCRYPTION_KEY_ID: &str = "Nimbus.EncryptionKeyId";

/// The id of the body stored apart from the queue row by the claim check (the row's own body
/// is then empty). NServiceBus's claim check names properties, not whole bodies, so its
/// endpoints do not read this header.
pub const CLAIM_CHECK: &str = "Nimbus.ClaimCheck";

/// The size in bytes of the body stored apart ([`CLAIM_CHECK`]).
pub const CLAIM_CHECK_SIZE: &str = "Nimbus.ClaimCheck.Size";

/// Failed attempts so far (this framework's header; durable across restarts).
pub const FAILED_ATTEMPTS: &str = "Nimbus.FailedAttempts";
/// The schedule whose tick sent the message (this framework's header; see
/// [`Schedule`](crate::Schedule)).
pub const SCHEDULE: &str = "Nimbus.Schedule";
/// The tick a scheduled message was sent for, in the wire format of times (UTC, database time).
pub const SCHEDULED_FOR: &str = "Nimbus.ScheduledFor";
/// The ordered group a message belongs to (this framework's header; see
/// [`SendOptions::group`](crate::SendOptions::group)). It travels beside the queue table's
/// `GroupKey` column, so that a replayed dead letter rejoins its group.
pub const GROUP: &str = "Nimbus.Group";
/// A message's priority (this framework's header; see
/// [`SendOptions::priority`](crate::SendOptions::priority)): higher is received first. It
/// travels beside the queue table's `Priority` column, so that retries, delayed deliveries and
/// replayed dead letters keep it.
pub const PRIORITY: &str = "Nimbus.Priority";
/// The limit that last held a message back because it was full (this framework's header; its
/// scope, as `nimbus limits` lists it; see [`Limit`](crate::Limit)).
pub const LIMIT_HELD_BY: &str = "Nimbus.Limit.HeldBy";
/// How many times limits held a message back so far (this framework's header): each hold
/// waits longer, up to a few seconds.
pub const LIMIT_HOLDS: &str = "Nimbus.Limit.Holds";
/// `Nimbus.Bridge.ReturnTo.<bridge>`: where a reply to the message goes back to, written by the
/// bridge named `<bridge>` when the message crossed it (`<side>|<address>`; see
/// [`bridge`](crate::bridge)). A handler's [`reply`](crate::HandlerContext::reply) carries every
/// such header of the message it answers, so the bridge can take the reply back.
pub const BRIDGE_RETURN_TO_PREFIX: &str = "Nimbus.Bridge.ReturnTo.";
/// The W3C Trace Context header holding the trace id and the sending span's id
/// (`00-<trace id>-<span id>-<flags>`), as NServiceBus writes it.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C Trace Context header with vendor-specific trace state, written when not empty.
pub const TRACESTATE: &str = "tracestate";

/// Where the wire format of times puts its separators: `yyyy-MM-dd HH:mm:ss:ffffff`.
const TIME_SEPARATORS: [(usize, u8); 6] = [
    (4, b'-'),
    (7, b'-'),
    (10, b' '),
    (13, b':'),
    (16, b':'),
    (19, b':'),
];

/// NServiceBus's `DateTimeOffsetHelper` wire format, e.g. `2026-11-30 07:15:02:123456 Z`.
pub fn format_time(time: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let year = time.year();
    if !(0..=9999).contains(&year) {
        return time.format("%Y-%m-%d %H:%M:%S:%6f Z").to_string();
    }
    // Every send writes one: digits by hand, not through a format string.
    let mut out = [0u8; 28];
    let mut put = |at: usize, width: usize, mut value: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year.unsigned_abs());
    put(5, 2, time.month());
    put(8, 2, time.day());
    put(11, 2, time.hour());
    put(14, 2, time.minute());
    put(17, 2, time.second());
    // A leap second's nanoseconds run past 1e9: chrono prints it as second 59 plus that much.
    put(20, 6, (time.nanosecond() / 1_000).min(999_999));
    for (at, separator) in TIME_SEPARATORS {
        out[at] = separator;
    }
    out[26] = b' ';
    out[27] = b'Z';
    out.iter().map(|&b| b as char).collect()
}

/// Reads a time written by [`format_time`] (NServiceBus's wire format).
pub fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = text.trim_end_matches(" Z");
    parse_time_fast(text).or_else(|| {
        chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S:%6f")
            .ok()
            .map(|t| t.and_utc())
    })
}

/// `yyyy-MM-dd HH:mm:ss:ffffff` read digit by digit (every received message has one); `None`
/// for any other shape, which the caller reads the slow way.
fn parse_time_fast(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let b = text.as_bytes();
    if b.len() != 26 {
        return None;
    }
    if TIME_SEPARATORS
        .iter()
        .any(|&(at, separator)| b[at] != separator)
    {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(
        i32::try_from(number(0, 4)?).ok()?,
        number(5, 7)?,
        number(8, 10)?,
    )?;
    let time = chrono::NaiveTime::from_hms_micro_opt(
        number(11, 13)?,
        number(14, 16)?,
        number(17, 19)?,
        number(20, 26)?,
    )?;
    Some(date.and_time(time).and_utc())
}

/// The message type a receiver should dispatch on: the first entry of
/// `NServiceBus.EnclosedMessageTypes`, without a .NET assembly qualification
/// (`Sales.OrderPlaced, Sales.Messages, Version=1.0.0.0` becomes `Sales.OrderPlaced`).
pub fn enclosed_type(headers: &Headers) -> Option<&str> {
    first_enclosed_type(headers.get(ENCLOSED_MESSAGE_TYPES)?)
}

/// The first type of an `NServiceBus.EnclosedMessageTypes` value (see [`enclosed_type`]).
pub(crate) fn first_enclosed_type(value: &str) -> Option<&str> {
    let first = value.split(';').next()?;
    let name = first.split(',').next()?.trim();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_back_as_written_and_as_chrono_writes_them() {
        use chrono::TimeZone;
        let times = [
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 30, 7, 15, 2)
                .unwrap()
                + chrono::Duration::microseconds(123_456),
            chrono::Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap(),
            chrono::Utc
                .with_ymd_and_hms(9999, 12, 31, 23, 59, 59)
                .unwrap()
                + chrono::Duration::microseconds(999_999),
        ];
        for time in times {
            let written = format_time(time);
            assert_eq!(written, time.format("%Y-%m-%d %H:%M:%S:%6f Z").to_string());
            assert_eq!(parse_time(&written), Some(time));
        }
        assert_eq!(format_time(times[0]), "2026-11-30 07:15:02:123456 Z");
        // Other shapes still go through chrono's parser; nonsense is refused.
        assert_eq!(parse_time("2026-11-30 07:15:02:123456"), Some(times[0]));
        for bad in [
            "",
            "2026-13-30 07:15:02:123456 Z",
            "2026-11-30T07:15:02:123456 Z",
            "x",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

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
