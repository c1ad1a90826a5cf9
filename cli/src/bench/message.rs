//! The benchmark's messages (a ping; a request and its reply for the latency mode), their
//! handlers, and the tally of what was handled.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use nimbus::{Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

/// The benchmark's message: when it was sent, and padding up to the body size.
#[derive(Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Bench.Ping")]
pub struct Ping {
    sent_at_us: u64,
    padding: String,
}

/// Microseconds since the Unix epoch (the sender and the receivers share this machine's clock,
/// in one process or two).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or_default()
}

impl Ping {
    /// When it was sent, in microseconds since the Unix epoch.
    pub fn sent_at_us(&self) -> u64 {
        self.sent_at_us
    }
}

/// A ping sent now, whose JSON body is about `body_size` bytes.
pub fn ping(body_size: usize) -> Ping {
    Ping {
        sent_at_us: now_us(),
        padding: "x".repeat(body_size.saturating_sub(40)),
    }
}

/// A ping sent now whose padding is words (about `body_size` bytes of JSON), which compress
/// about as ordinary text and JSON do, unlike [`ping`]'s one repeated letter.
pub fn ping_of_words(body_size: usize) -> Ping {
    const WORDS: [&str; 16] = [
        "order",
        "customer",
        "amount",
        "currency",
        "shipped",
        "2026-12-07",
        "warehouse",
        "quantity",
        "invoice",
        "status",
        "pending",
        "Berlin",
        "sku-41822",
        "true",
        "priority",
        "note",
    ];
    let wanted = body_size.saturating_sub(40);
    let mut padding = String::with_capacity(wanted + 16);
    let mut state: u32 = 0x9e37_79b9;
    while padding.len() < wanted {
        // A small linear congruential sequence: the same words every run, in no pattern gzip
        // could exploit beyond the words themselves.
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        padding.push_str(WORDS[(state >> 28) as usize]);
        padding.push(' ');
    }
    padding.truncate(wanted);
    Ping {
        sent_at_us: now_us(),
        padding,
    }
}

/// A ping sent now, as the JSON body the bare SQL inserts.
pub fn ping_body(body_size: usize) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&ping(body_size))
}

/// What a [`Tally`] has seen so far.
#[derive(Default)]
struct Seen {
    latencies_us: Vec<u64>,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Counts handled messages, their send→handled latencies, and when the first and the last were
/// handled. Clones share the same counts.
#[derive(Clone, Default)]
pub struct Tally(Arc<Mutex<Seen>>);

impl Tally {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        // A poisoned lock only means a handler panicked while recording; the counts are intact.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One message sent at `sent_at_us` was handled now.
    pub fn record(&self, sent_at_us: u64) {
        self.record_latency_us(now_us().saturating_sub(sent_at_us));
    }

    /// One message was handled now, `latency` microseconds after it was sent (measured
    /// elsewhere: another process).
    pub fn record_latency_us(&self, latency: u64) {
        let now = Instant::now();
        let mut seen = self.seen();
        seen.latencies_us.push(latency);
        seen.first.get_or_insert(now);
        seen.last = Some(now);
    }

    /// One message with this JSON body was handled now (bare SQL receives bodies, not pings).
    pub fn record_body(&self, body: &[u8]) {
        let sent = serde_json::from_slice::<Ping>(body)
            .map(|p| p.sent_at_us)
            .unwrap_or_else(|_| now_us());
        self.record(sent);
    }

    /// How many messages were handled.
    pub fn count(&self) -> usize {
        self.seen().latencies_us.len()
    }

    /// When the last message was handled (`None` before the first).
    pub fn last(&self) -> Option<Instant> {
        self.seen().last
    }

    /// The throughput once the first message is handled: the messages after the first over the
    /// time from the first to the last, which leaves out an endpoint's start-up. With fewer than
    /// two messages, the count over the time since `started`.
    pub fn rate_after_first(&self, started: Instant) -> f64 {
        let seen = self.seen();
        let count = seen.latencies_us.len();
        match (seen.first, seen.last) {
            (Some(first), Some(last)) if count >= 2 && last > first => {
                (count - 1) as f64 / (last - first).as_secs_f64()
            }
            (_, Some(last)) => super::stats::per_second(count, last - started),
            _ => 0.0,
        }
    }

    /// Every latency recorded, in microseconds.
    pub fn latencies_us(&self) -> Vec<u64> {
        self.seen().latencies_us.clone()
    }
}

/// The latency mode's request: the responder answers with a [`Reply`] of the same padding.
#[derive(Serialize, Deserialize, nimbus::Command)]
#[nimbus(type_name = "Bench.Request")]
pub struct Request {
    padding: String,
}

/// A request whose JSON body is about `body_size` bytes.
pub fn request(body_size: usize) -> Request {
    Request {
        padding: "x".repeat(body_size.saturating_sub(20)),
    }
}

/// The reply to a [`Request`].
#[derive(Serialize, Deserialize, nimbus::Message)]
#[nimbus(type_name = "Bench.Reply")]
pub struct Reply {
    padding: String,
}

/// A handler that replies to every request.
pub struct Responder;

#[nimbus::handler]
impl Handler<Request> for Responder {
    async fn handle(&self, m: Request, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.reply(Reply { padding: m.padding })?;
        Ok(())
    }
}

/// A handler that does nothing but count.
pub struct Empty(pub Tally);

#[nimbus::handler]
impl Handler<Ping> for Empty {
    async fn handle(&self, m: Ping, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.record(m.sent_at_us);
        Ok(())
    }
}
