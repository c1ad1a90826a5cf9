//! The peek actor: estimates how many messages wait in a queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::error::Result;
use crate::names::QueueName;
use crate::pipeline::EndpointState;

/// How often a non-empty queue's oldest message is read for its age (one row, by index).
const AGE_INTERVAL: Duration = Duration::from_secs(5);

/// Estimates the depth of one queue on request, and keeps its oldest message's age current.
///
/// The age is read after the depth is answered, never before: the supervisor hands out receives
/// only once the peek answers, and the age is a report, so the messages a peek finds do not
/// wait for one more statement (on a server that compiles each statement once per connection,
/// such as Babelfish, the first age read on a connection costs a compile).
pub(crate) struct Peeker {
    endpoint: Arc<EndpointState>,
    queue: QueueName,
    age_read_at: Option<Instant>,
    /// An age read is running: another one does not start beside it.
    reading_age: bool,
}

impl Peeker {
    pub fn new(endpoint: Arc<EndpointState>, queue: QueueName) -> Self {
        Peeker {
            endpoint,
            queue,
            age_read_at: None,
            reading_age: false,
        }
    }

    /// Reads the age of the queue's oldest message in the background, unless one was read less
    /// than [`AGE_INTERVAL`] ago or a read is still running.
    fn read_age_soon(&mut self, ctx: &mut Context<Self>) {
        let due = self
            .age_read_at
            .is_none_or(|at| at.elapsed() >= AGE_INTERVAL);
        if self.reading_age || !due {
            return;
        }
        self.reading_age = true;
        self.age_read_at = Some(Instant::now());
        let (endpoint, queue) = (self.endpoint.clone(), self.queue.clone());
        let read = async move {
            // The age is a report, not a reason to stop peeking: a failure is logged only.
            match endpoint.transport.first_headers(&queue).await {
                Ok(Some(headers)) => {
                    if let Some(age) = age_of(&headers) {
                        endpoint.counters.set_oldest_age(queue.as_str(), age);
                    }
                }
                Ok(None) => endpoint
                    .counters
                    .set_oldest_age(queue.as_str(), Duration::ZERO),
                Err(e) => {
                    tracing::warn!(queue = %queue, error = %e, "could not read the age of the oldest message")
                }
            }
        };
        ctx.spawn(
            read.into_actor(self)
                .map(|(), act, _| act.reading_age = false),
        );
    }
}

impl Actor for Peeker {
    type Context = Context<Self>;
}

impl Supervised for Peeker {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        self.reading_age = false;
        tracing::warn!(queue = %self.queue, "peek actor restarted");
    }
}

/// Asks for a depth estimate.
#[derive(Message)]
#[rtype(result = "Result<i64>")]
pub(crate) struct Peek;

impl Handler<Peek> for Peeker {
    type Result = ResponseActFuture<Self, Result<i64>>;

    fn handle(&mut self, _msg: Peek, _ctx: &mut Self::Context) -> Self::Result {
        let endpoint = self.endpoint.clone();
        let queue = self.queue.clone();
        let peek = async move {
            crate::pipeline::metrics::count_peek(&endpoint.counters, queue.as_str());
            endpoint.transport.peek(&queue).await
        };
        Box::pin(peek.into_actor(self).map(|depth, act, ctx| {
            match depth {
                Ok(empty) if empty <= 0 => act
                    .endpoint
                    .counters
                    .set_oldest_age(act.queue.as_str(), Duration::ZERO),
                Ok(_) => act.read_age_soon(ctx),
                Err(_) => {}
            }
            depth
        }))
    }
}

/// How long ago a message was sent, by its `NServiceBus.TimeSent` header (the sender's clock;
/// a sender whose clock runs ahead counts as zero). `None` without a readable header.
fn age_of(headers_json: &str) -> Option<Duration> {
    let headers: crate::headers::Headers = serde_json::from_str(headers_json).ok()?;
    let sent = crate::headers::parse_time(headers.get(crate::headers::TIME_SENT)?)?;
    Some(
        (chrono::Utc::now() - sent)
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}
