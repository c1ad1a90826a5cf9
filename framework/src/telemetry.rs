//! Traces: a `tracing` span for every send or publish and for every processing attempt, with the
//! attributes of OpenTelemetry's messaging conventions, and the W3C trace context carried in the
//! message headers so that one trace follows a message from service to service.
//!
//! # Spans
//!
//! | span (`otel.name`) | kind | when | attributes |
//! |---|---|---|---|
//! | `send <queue>` / `publish <event type>` | producer | `Bus::send*`, `Bus::publish`, `Bus::request*`, and `ctx.send*`/`ctx.publish`/`ctx.reply` in a handler | `messaging.system` = `nimbus`, `messaging.operation.type` = `send`, `messaging.operation.name` = `send`/`publish`/`reply`, `messaging.destination.name`, `messaging.message.id`, `messaging.message.conversation_id`, `messaging.batch.message_count` (batches), `nimbus.message.type`, `nimbus.message.correlation_id` |
//! | `process <queue>` | consumer | each attempt at a received message | `messaging.system`, `messaging.operation.type` = `process`, `messaging.destination.name`, `messaging.message.id`, `messaging.message.conversation_id`, `messaging.message.body.size`, `nimbus.message.type`, `nimbus.message.correlation_id`, `nimbus.attempt` (1 for the first), `nimbus.outcome` |
//!
//! Without the `opentelemetry` feature the spans carry only what tells messages apart in a log
//! line (`messaging.destination.name`, `messaging.message.id`, `nimbus.message.type`, and
//! `nimbus.attempt` or `messaging.batch.message_count`), since every line an attempt logs shows
//! them; with it, every attribute above.
//!
//! `nimbus.outcome` is one of `handled`, `expired`, `retried` (at once), `retried_later`,
//! `dead_lettered` or `database_error` (rolled back; the message stays where it was). A failed
//! attempt sets `otel.status_code` = `ERROR` and `error.type`. A send that a handler makes is
//! written when the receive commits: its span ends when the message is queued for that commit.
//!
//! The spans are plain `tracing` spans, at `INFO`: any subscriber shows them. To export them to
//! OpenTelemetry, install `tracing-opentelemetry`'s layer (see `examples/otlp.rs`).
//!
//! # Propagation
//!
//! With the `opentelemetry` feature, every message sent inside a span that has an OpenTelemetry
//! context carries that context as W3C Trace Context headers ([`TRACEPARENT`], and
//! [`TRACESTATE`] when there is one); the `process` span of each attempt takes it as its parent,
//! so sender and receiver share one trace, across processes and databases, and with NServiceBus
//! endpoints, which use the same header. Retries keep the header of the message they retry.
//! Without the feature the spans are the same but no header is written or read.

use tracing::field::Empty;
use tracing::Span;

use crate::envelope::{Destination, Incoming, Intent, OutgoingMessage};
use crate::headers::Headers;

pub use crate::headers::{TRACEPARENT, TRACESTATE};
/// The `messaging.system` attribute of every span.
pub const MESSAGING_SYSTEM: &str = "nimbus";

/// The producer span of one send, publish or reply of `count` messages of `message_type`.
pub(crate) fn send_span(
    intent: Intent,
    destination: &Destination,
    message_type: &str,
    count: usize,
) -> Span {
    let operation = match intent {
        Intent::Send => "send",
        Intent::Publish => "publish",
        Intent::Reply => "reply",
    };
    let destination_name = match destination {
        Destination::Queue(queue) => queue.as_str(),
        Destination::Topic(topic) => topic,
    };
    let verb = if matches!(intent, Intent::Publish) {
        "publish"
    } else {
        "send"
    };
    #[cfg(not(feature = "opentelemetry"))]
    let span = {
        // Without OpenTelemetry the span is read in log lines: only what tells messages apart.
        let _ = (verb, operation);
        tracing::info_span!(
            "send",
            messaging.destination.name = %destination_name,
            messaging.batch.message_count = Empty,
            messaging.message.id = Empty,
            nimbus.message.type = %message_type,
        )
    };
    #[cfg(feature = "opentelemetry")]
    let span = tracing::info_span!(
        "send",
        otel.name = %format_args!("{verb} {destination_name}"),
        otel.kind = "producer",
        otel.status_code = Empty,
        error.type = Empty,
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.type = "send",
        messaging.operation.name = operation,
        messaging.destination.name = %destination_name,
        messaging.batch.message_count = Empty,
        messaging.message.id = Empty,
        messaging.message.conversation_id = Empty,
        nimbus.message.type = %message_type,
        nimbus.message.correlation_id = Empty,
    );
    if count > 1 {
        // As i64: OpenTelemetry has no unsigned attributes (a u64 would arrive as text).
        span.record(
            "messaging.batch.message_count",
            i64::try_from(count).unwrap_or(i64::MAX),
        );
    }
    span
}

/// Builds one outgoing message inside a producer span of its own (so the message carries that
/// span's trace context), and records on the span the message's ids, or the error that stopped
/// it.
pub(crate) fn build_traced(
    intent: Intent,
    destination: Destination,
    message_type: &str,
    build: impl FnOnce(Destination) -> crate::error::Result<OutgoingMessage>,
) -> crate::error::Result<OutgoingMessage> {
    let span = send_span(intent, &destination, message_type, 1);
    let out = span
        .in_scope(|| build(destination))
        .inspect_err(|e| record_send_error(&span, e))?;
    record_sent(&span, std::slice::from_ref(&out));
    Ok(out)
}

/// Records on `span` the ids of a message it sends (for a batch, those of its first message:
/// they share a conversation).
pub(crate) fn record_sent(span: &Span, messages: &[OutgoingMessage]) {
    let Some(first) = messages.first() else {
        return;
    };
    if span.is_disabled() {
        return;
    }
    if messages.len() == 1 {
        span.record("messaging.message.id", tracing::field::display(first.id));
    }
    // Only the two ids, without building the whole header map again.
    if let Ok(ids) = serde_json::from_str::<SentIds<'_>>(&first.headers_json) {
        if let Some(conversation) = ids.conversation {
            span.record(
                "messaging.message.conversation_id",
                tracing::field::display(conversation),
            );
        }
        if let Some(correlation) = ids.correlation {
            span.record(
                "nimbus.message.correlation_id",
                tracing::field::display(correlation),
            );
        }
    }
}

/// The ids a send span records, read from the headers just written.
#[derive(serde::Deserialize)]
struct SentIds<'a> {
    #[serde(rename = "NServiceBus.ConversationId", borrow)]
    conversation: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "NServiceBus.CorrelationId", borrow)]
    correlation: Option<std::borrow::Cow<'a, str>>,
}

/// The consumer span of one attempt at the message `row_id` of `queue`; its parent is the trace
/// context in `headers`, when there is one.
pub(crate) fn process_span(queue: &str, row_id: &str) -> Span {
    // Without OpenTelemetry the span is read in log lines, as the prefix of every line an
    // attempt logs: only what tells messages apart (the attributes below are recorded only
    // where declared).
    #[cfg(not(feature = "opentelemetry"))]
    return tracing::info_span!(
        "process",
        messaging.destination.name = %queue,
        messaging.message.id = %row_id,
        nimbus.message.type = Empty,
        nimbus.attempt = Empty,
    );
    #[cfg(feature = "opentelemetry")]
    tracing::info_span!(
        "process",
        otel.name = %format_args!("process {queue}"),
        otel.kind = "consumer",
        otel.status_code = Empty,
        error.type = Empty,
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.type = "process",
        messaging.operation.name = "process",
        messaging.destination.name = %queue,
        messaging.message.id = %row_id,
        messaging.message.conversation_id = Empty,
        messaging.message.body.size = Empty,
        nimbus.message.type = Empty,
        nimbus.message.correlation_id = Empty,
        nimbus.attempt = Empty,
        nimbus.outcome = Empty,
    )
}

/// Records what is known once a received message decodes: its id (where its headers name
/// another than its row's, which the span has from the start: recorded twice, a log line would
/// show it twice), type, ids, attempt number and size.
pub(crate) fn record_incoming(
    span: &Span,
    incoming: &Incoming,
    row_id: &str,
    attempt: u32,
    body_size: usize,
) {
    if incoming.message_id != row_id {
        span.record(
            "messaging.message.id",
            tracing::field::display(&incoming.message_id),
        );
    }
    span.record(
        "nimbus.message.type",
        tracing::field::display(&incoming.type_name),
    );
    // As i64: OpenTelemetry has no unsigned attributes (a u64 would arrive as text).
    span.record("nimbus.attempt", i64::from(attempt));
    span.record(
        "messaging.message.body.size",
        i64::try_from(body_size).unwrap_or(i64::MAX),
    );
    record_ids(span, &incoming.headers);
}

fn record_ids(span: &Span, headers: &crate::incoming_headers::IncomingHeaders) {
    if let Some(conversation) = headers.get(crate::headers::CONVERSATION_ID) {
        span.record(
            "messaging.message.conversation_id",
            tracing::field::display(conversation),
        );
    }
    if let Some(correlation) = headers.get(crate::headers::CORRELATION_ID) {
        span.record(
            "nimbus.message.correlation_id",
            tracing::field::display(correlation),
        );
    }
}

/// Records how an attempt ended; `error_type` marks it failed.
pub(crate) fn record_outcome(span: &Span, outcome: &str, error_type: Option<&str>) {
    span.record("nimbus.outcome", outcome);
    match error_type {
        Some(error) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", error);
        }
        None => {
            span.record("otel.status_code", "OK");
        }
    }
}

/// Marks a send span failed with the error that stopped it.
pub(crate) fn record_send_error(span: &Span, error: &crate::error::NimbusError) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error.kind_name());
}

/// Writes the trace context of the current span into `headers`, so that the receiver's
/// `process` span continues the trace. Does nothing without the `opentelemetry` feature or
/// outside a span with an OpenTelemetry context.
pub(crate) fn inject_current(headers: &mut Headers) {
    #[cfg(feature = "opentelemetry")]
    w3c::inject(&Span::current(), headers);
    #[cfg(not(feature = "opentelemetry"))]
    let _ = headers;
}

/// Makes the trace context in a received message's headers (if there is one, and valid) the
/// parent of `span`, which must not have been entered yet.
pub(crate) fn continue_trace(span: &Span, headers: &crate::incoming_headers::IncomingHeaders) {
    #[cfg(feature = "opentelemetry")]
    if let Some(traceparent) = headers.get(TRACEPARENT) {
        w3c::set_parent(span, traceparent, headers.get(TRACESTATE));
    }
    #[cfg(not(feature = "opentelemetry"))]
    let _ = (span, headers);
}

#[cfg(feature = "opentelemetry")]
mod w3c {
    //! W3C Trace Context (`traceparent`, `tracestate`), written and read directly: the format is
    //! fixed by the standard, and it must not depend on which global propagator an application
    //! happened to install.

    use std::str::FromStr;

    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry::Context;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::{TRACEPARENT, TRACESTATE};
    use crate::headers::Headers;

    pub(super) fn inject(span: &Span, headers: &mut Headers) {
        let context = span.context();
        let span_ref = context.span();
        let span_context = span_ref.span_context();
        if !span_context.is_valid() {
            return;
        }
        headers.insert(TRACEPARENT.into(), traceparent(span_context));
        let state = span_context.trace_state().header();
        if !state.is_empty() {
            headers.insert(TRACESTATE.into(), state);
        }
    }

    pub(super) fn set_parent(span: &Span, value: &str, tracestate: Option<&str>) {
        let Some(remote) = parse(value, tracestate) else {
            tracing::debug!(traceparent = %value, "ignoring an unreadable traceparent header");
            return;
        };
        let parent = Context::new().with_remote_span_context(remote);
        if let Err(e) = span.set_parent(parent) {
            // No OpenTelemetry layer, or the span is filtered out: nothing to continue.
            tracing::trace!(error = %e, "the process span cannot continue the sender's trace");
        }
    }

    /// `00-<trace id>-<span id>-<flags>`.
    pub(super) fn traceparent(context: &SpanContext) -> String {
        format!(
            "00-{:032x}-{:016x}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    }

    /// Reads a `traceparent` (and `tracestate`) as the standard says: version `ff` is invalid, a
    /// higher version than `00` may append fields, all-zero ids are invalid.
    pub(super) fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
        let mut parts = traceparent.trim().split('-');
        let version = parts.next()?;
        let trace_id = parts.next()?;
        let span_id = parts.next()?;
        let flags = parts.next()?;
        let well_formed = version.len() == 2
            && version != "ff"
            && (version != "00" || parts.next().is_none())
            && trace_id.len() == 32
            && span_id.len() == 16
            && flags.len() == 2
            && [version, trace_id, span_id, flags].iter().all(|p| {
                p.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
        if !well_formed {
            return None;
        }
        let trace_id = TraceId::from_hex(trace_id).ok()?;
        let span_id = SpanId::from_hex(span_id).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        let state = tracestate
            .and_then(|s| TraceState::from_str(s).ok())
            .unwrap_or_default();
        let context = SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::new(flags) & TraceFlags::SAMPLED,
            true,
            state,
        );
        context.is_valid().then_some(context)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn traceparent_round_trips() {
            let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            let context = parse(text, Some("congo=t61rcWkgMzE")).expect("valid");
            assert!(context.is_remote());
            assert!(context.is_sampled());
            assert_eq!(traceparent(&context), text);
            assert_eq!(context.trace_state().header(), "congo=t61rcWkgMzE");
        }

        #[test]
        fn invalid_traceparents_are_ignored() {
            for bad in [
                "",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            ] {
                assert!(parse(bad, None).is_none(), "{bad:?} must be refused");
            }
        }

        #[test]
        fn a_later_version_may_append_fields() {
            let text = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes";
            let context = parse(text, None).expect("a future version with more fields");
            assert!(!context.is_sampled());
        }
    }
}
