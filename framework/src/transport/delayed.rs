//! Delayed messages that have not been delivered yet: listing them, cancelling one, moving its
//! due time. The table-per-queue layouts keep them in `NimbusDelayedMessages` until they are
//! due; the shared table keeps them in `NimbusMessages` with a `VisibleAfter` in the future.
//! Either way one row is the whole message, so a cancel or a reschedule is one statement on
//! one row, and a delivery racing it either takes the row first (the cancel finds nothing) or
//! finds it gone.

use chrono::NaiveDateTime;

use crate::driver::statements::DelayedListRow;

/// When a rescheduled delayed message becomes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Due {
    /// This long from now, by the database's clock.
    In(std::time::Duration),
    /// At this time (UTC).
    At(chrono::DateTime<chrono::Utc>),
}

impl Due {
    /// The statement parameters: a delay in milliseconds, or an absolute time (which wins).
    pub(crate) fn params(&self) -> (Option<i64>, Option<NaiveDateTime>) {
        match self {
            Due::In(delay) => (
                Some(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)),
                None,
            ),
            Due::At(at) => (None, Some(at.naive_utc())),
        }
    }
}

/// A delayed message that has not been delivered yet, as
/// [`Database::delayed_messages`](crate::admin::Database::delayed_messages) and
/// `nimbus delayed list` show it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DelayedMessage {
    /// Its message id: what [`Bus::cancel_delayed`](crate::Bus::cancel_delayed) and
    /// [`Bus::reschedule_delayed`](crate::Bus::reschedule_delayed) take.
    pub id: String,
    /// The queue it goes to when due.
    pub destination: String,
    /// When it is due (database time, UTC).
    pub due: Option<NaiveDateTime>,
    /// Its message type (the first of `NServiceBus.EnclosedMessageTypes`), when its headers
    /// name one.
    pub message_type: Option<String>,
}

impl DelayedMessage {
    /// Reads a listed row: `in_envelope` when its headers are inside the body's envelope (the
    /// shared table) rather than a column of their own.
    pub(crate) fn from_row(row: DelayedListRow, in_envelope: bool) -> Self {
        let headers_json = if in_envelope {
            crate::shared_envelope::unwrap(&row.headers_or_envelope).0
        } else {
            String::from_utf8_lossy(&row.headers_or_envelope).into_owned()
        };
        let message_type = serde_json::from_str::<crate::headers::Headers>(&headers_json)
            .ok()
            .and_then(|headers| crate::headers::enclosed_type(&headers).map(str::to_string));
        DelayedMessage {
            id: row.id,
            destination: row.destination,
            due: row.due,
            message_type,
        }
    }
}

/// Counts a cancel or a reschedule (`operation`) and whether it found the message waiting, in
/// `nimbus_delayed_changes_total`, and logs it at INFO.
pub(crate) fn record_change(operation: &'static str, id: uuid::Uuid, found: bool) {
    metrics::counter!(
        "nimbus_delayed_changes_total",
        "operation" => operation,
        "found" => if found { "true" } else { "false" }
    )
    .increment(1);
    if found {
        tracing::info!(message_id = %id, operation, "{operation}: the delayed message was waiting, and is changed");
    } else {
        tracing::info!(message_id = %id, operation, "{operation}: nothing waiting to change; the delayed message was delivered already, or no waiting one has this id");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_time_wins_over_a_delay_and_a_delay_is_in_milliseconds() {
        assert_eq!(
            Due::In(std::time::Duration::from_secs(90)).params(),
            (Some(90_000), None)
        );
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("a time");
        assert_eq!(Due::At(at).params(), (None, Some(at.naive_utc())));
    }

    #[test]
    fn the_message_type_is_read_from_the_headers_of_either_layout() {
        let headers = r#"{"NServiceBus.EnclosedMessageTypes":"Sales.Remind, Sales"}"#;
        let row = |bytes: Vec<u8>| DelayedListRow {
            id: "id".into(),
            destination: "Sales".into(),
            due: None,
            headers_or_envelope: bytes,
        };
        let table = DelayedMessage::from_row(row(headers.as_bytes().to_vec()), false);
        assert_eq!(table.message_type.as_deref(), Some("Sales.Remind"));
        let shared =
            DelayedMessage::from_row(row(crate::shared_envelope::wrap(headers, b"{}")), true);
        assert_eq!(shared.message_type.as_deref(), Some("Sales.Remind"));
        let unreadable = DelayedMessage::from_row(row(b"not json".to_vec()), false);
        assert_eq!(unreadable.message_type, None);
    }
}
