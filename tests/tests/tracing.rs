//! Traces through OpenTelemetry: a `send` span per send, a `process` span per attempt, with the
//! messaging conventions' attributes, and the W3C trace context carried in the `traceparent`
//! header from one endpoint to the next, through the database. Spans are read back from the
//! OpenTelemetry SDK's in-memory exporter behind `tracing-opentelemetry`'s layer, installed once
//! for this test binary; each test reads only the spans of its own trace.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};
use opentelemetry::trace::{SpanId, SpanKind, TraceContextExt, TraceId, TracerProvider};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracer = provider.tracer("nimbus-conformance");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::set_global_default(subscriber)
            .expect("the only subscriber of this test binary");
        exporter
    })
}

fn spans_of(trace: TraceId) -> Vec<SpanData> {
    exporter()
        .get_finished_spans()
        .expect("the in-memory exporter keeps every span")
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key).map_or_else(String::new, |v| v.as_str().into_owned())
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// Forwards every message to `next`, through the handler's context.
#[derive(Clone)]
struct Forward {
    next: String,
}

impl Handler<Numbered> for Forward {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send_to(&self.next, m)?;
        Ok(())
    }
}

/// Fails the first attempt, then counts.
#[derive(Clone, Default)]
struct FailOnce {
    attempts: Arc<AtomicUsize>,
}

impl Handler<Numbered> for FailOnce {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err("the first attempt fails".into());
        }
        Ok(())
    }
}

async fn one_trace_across_two_endpoints(kind: Kind) {
    exporter();
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let front = format!("Front{suffix}");
    let back = format!("Back{suffix}");
    let finisher = FailOnce::default();
    let back_bus = db
        .builder(&back, "back-1")
        .handler(finisher.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let front_bus = db
        .builder(&front, "front-1")
        .create_queues_on_send(true)
        .handler(Forward { next: back.clone() })
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();

    let checkout = tracing::info_span!("checkout");
    let trace = checkout.context().span().span_context().trace_id();
    assert_ne!(
        trace,
        TraceId::INVALID,
        "the OpenTelemetry layer is installed"
    );
    front_bus
        .send_to(&front, Numbered { n: 7 })
        .instrument(checkout.clone())
        .await
        .unwrap();
    drop(checkout);

    // The second attempt at the back is the last span to end: wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let spans = loop {
        let spans = spans_of(trace);
        let done = named(&spans, &format!("process {back}"))
            .iter()
            .any(|s| text(s, "nimbus.outcome") == "handled");
        if done {
            break spans;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the message reaches the back endpoint; spans so far: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    front_bus.stop().await.unwrap();
    back_bus.stop().await.unwrap();

    let root = named(&spans, "checkout")[0];
    let send_front = named(&spans, &format!("send {front}"));
    assert_eq!(send_front.len(), 1, "one send span for Bus::send_to");
    let send_front = send_front[0];
    assert_eq!(send_front.span_kind, SpanKind::Producer);
    assert_eq!(send_front.parent_span_id, root.span_context.span_id());
    assert_eq!(text(send_front, "messaging.system"), "nimbus");
    assert_eq!(text(send_front, "messaging.operation.type"), "send");
    assert_eq!(text(send_front, "messaging.destination.name"), front);
    assert_eq!(
        text(send_front, "nimbus.message.type"),
        "Conformance.Numbered"
    );
    let message_id = text(send_front, "messaging.message.id");
    assert!(uuid::Uuid::parse_str(&message_id).is_ok(), "{message_id:?}");

    let process_front = named(&spans, &format!("process {front}"));
    assert_eq!(process_front.len(), 1);
    let process_front = process_front[0];
    assert_eq!(process_front.span_kind, SpanKind::Consumer);
    assert_eq!(
        process_front.parent_span_id,
        send_front.span_context.span_id(),
        "the receiver continues the sender's span, read from the traceparent header"
    );
    assert!(process_front.parent_span_is_remote);
    assert_eq!(text(process_front, "messaging.operation.type"), "process");
    assert_eq!(text(process_front, "messaging.message.id"), message_id);
    assert_eq!(
        text(process_front, "messaging.message.conversation_id"),
        message_id,
        "a first message starts its conversation"
    );
    assert_eq!(
        attribute(process_front, "nimbus.attempt"),
        Some(Value::I64(1))
    );
    assert_eq!(text(process_front, "nimbus.outcome"), "handled");

    let send_back = named(&spans, &format!("send {back}"));
    assert_eq!(send_back.len(), 1, "the handler's ctx.send_to has its span");
    let send_back = send_back[0];
    assert_eq!(
        send_back.parent_span_id,
        process_front.span_context.span_id()
    );
    assert_eq!(
        text(send_back, "messaging.message.conversation_id"),
        message_id,
        "the conversation goes on"
    );

    let mut attempts = named(&spans, &format!("process {back}"));
    attempts.sort_by_key(|s| s.start_time);
    assert_eq!(attempts.len(), 2, "one process span per attempt");
    for attempt in &attempts {
        assert_eq!(attempt.parent_span_id, send_back.span_context.span_id());
        assert_ne!(attempt.parent_span_id, SpanId::INVALID);
    }
    assert_eq!(
        attribute(attempts[0], "nimbus.attempt"),
        Some(Value::I64(1))
    );
    assert_eq!(text(attempts[0], "nimbus.outcome"), "retried");
    assert_eq!(text(attempts[0], "error.type"), "handler_error");
    assert!(matches!(
        attempts[0].status,
        opentelemetry::trace::Status::Error { .. }
    ));
    assert_eq!(
        attribute(attempts[1], "nimbus.attempt"),
        Some(Value::I64(2))
    );
    assert_eq!(text(attempts[1], "nimbus.outcome"), "handled");
    assert_eq!(attempts[1].status, opentelemetry::trace::Status::Ok);
}

async fn traceparent_header_on_the_wire(kind: Kind) {
    exporter();
    let db = TestDatabase::new(Setup {
        kind,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let queue = format!("Traced{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bus = db
        .builder(&format!("{queue}Sender"), "sender-1")
        .create_queues_on_send(true)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let request = tracing::info_span!("request");
    let trace = request.context().span().span_context().trace_id();
    bus.send_to(&queue, Numbered { n: 1 })
        .instrument(request)
        .await
        .unwrap();
    // Sent outside any span: its send span starts a trace of its own.
    bus.send_to(&queue, Numbered { n: 2 }).await.unwrap();
    bus.stop().await.unwrap();

    let queued = db.admin().peek(&queue, 10).await.unwrap();
    assert_eq!(queued.len(), 2);
    let untraced: nimbus::Headers = serde_json::from_str(&queued[1].headers).unwrap();
    let own_trace = &untraced[nimbus::telemetry::TRACEPARENT][3..35];
    assert_ne!(own_trace, format!("{trace:032x}"));
    let own_trace = TraceId::from_hex(own_trace).unwrap();
    let root_send = named(&spans_of(own_trace), &format!("send {queue}"))[0].clone();
    assert_eq!(root_send.parent_span_id, SpanId::INVALID, "a root span");
    let headers: nimbus::Headers = serde_json::from_str(&queued[0].headers).unwrap();
    let traceparent = &headers[nimbus::telemetry::TRACEPARENT];
    let send = named(&spans_of(trace), &format!("send {queue}"))[0].clone();
    assert_eq!(
        traceparent,
        &format!("00-{:032x}-{:016x}-01", trace, send.span_context.span_id()),
        "W3C Trace Context: version, trace id, the send span's id, sampled"
    );
}

#[actix_rt::test]
async fn one_trace_follows_a_message_across_endpoints_on_sqlite() {
    one_trace_across_two_endpoints(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn one_trace_follows_a_message_across_endpoints_on_postgres() {
    one_trace_across_two_endpoints(Kind::Postgres).await;
}

#[actix_rt::test]
async fn the_traceparent_header_is_w3c_trace_context_on_sqlite() {
    traceparent_header_on_the_wire(Kind::Sqlite).await;
}

#[actix_rt::test]
async fn the_traceparent_header_is_w3c_trace_context_on_postgres() {
    traceparent_header_on_the_wire(Kind::Postgres).await;
}
