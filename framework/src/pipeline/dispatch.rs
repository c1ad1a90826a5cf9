//! Handlers as actors: where a received message's handler code runs.
//!
//! Every async [`Handler`] gets one [`HandlerActor`] on each of the endpoint's handler threads
//! (one actix `Arbiter` per thread; with one thread, the bus's own), where the receivers live
//! too. A receiver lends the message's [`HandlerContext`], with the receive's open transaction
//! in it, to the actor on its own thread and gets it back when the handler is done, so what the handler writes and
//! sends still commits or rolls back with the message. Every [`BlockingHandler`] runs on one
//! pool of plain threads (an actix `SyncArbiter`); the receive's transaction stays with the
//! receiver meanwhile. Panics and timeouts are caught where the handler runs, so a failing
//! handler never takes its actor or thread down, and a panic prints its backtrace on a message's
//! first attempt only (see `panic_output`).

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures::FutureExt;
use tracing::Instrument;

use crate::error::NimbusError;
use crate::message::Message as NimbusMessage;
use crate::pipeline::handler::{BlockingHandler, Handler, HandlerContext, InvokeError};
use crate::pipeline::panic_output::{poll_quietly_if, run_quietly_if};
use crate::pipeline::IN_HANDLER;

/// How one handler's run ended.
pub(crate) enum Invoked {
    /// It returned (`Ok`, or the body did not deserialize, or the handler's error).
    Done(Result<(), InvokeError>),
    /// It panicked, with the panic's message.
    Panicked(String),
    /// It ran past the handler timeout.
    TimedOut,
}

/// A handler's run and the context it was lent, given back.
pub(crate) struct Invocation {
    pub invoked: Invoked,
    pub ctx: HandlerContext,
}

/// One handler of the endpoint, with its message type erased.
pub(crate) struct RegisteredHandler {
    /// Its index in the registry (which actors run it).
    pub id: usize,
    /// The message type it handles, for logs.
    pub type_name: &'static str,
    pub kind: HandlerKind,
}

/// How a handler runs.
pub(crate) enum HandlerKind {
    /// An async handler, run by its actors on the handler threads.
    Async(Box<dyn StartHandlerActor>),
    /// A blocking handler, run on the blocking pool.
    Blocking(Arc<dyn ErasedBlocking>),
}

impl HandlerKind {
    pub fn of_async<M: NimbusMessage, H: Handler<M>>(handler: H) -> Self {
        HandlerKind::Async(Box::new(AsyncHandler::<M, H> {
            handler: Arc::new(handler),
            _message: PhantomData,
        }))
    }

    pub fn of_blocking<M: NimbusMessage, H: BlockingHandler<M>>(handler: H) -> Self {
        HandlerKind::Blocking(Arc::new(SyncHandler::<M, H> {
            handler,
            _message: PhantomData,
        }))
    }
}

/// Runs a handler with a message: what a handler actor receives.
#[derive(actix::Message)]
#[rtype(result = "Invocation")]
pub(crate) struct Invoke {
    body: Arc<Vec<u8>>,
    ctx: HandlerContext,
    timeout: Duration,
    /// The database whose receive is open, for [`crate::pipeline::inside_handler_on`].
    database_target: Arc<str>,
    /// The receive's `process` span, which the handler's own spans belong to.
    span: tracing::Span,
}

/// Starts the actors of one async handler.
pub(crate) trait StartHandlerActor: Send + Sync {
    /// Starts an actor for the handler on `arbiter`, or on the calling thread's.
    fn start(&self, arbiter: Option<&ArbiterHandle>) -> Recipient<Invoke>;
}

struct AsyncHandler<M, H> {
    handler: Arc<H>,
    _message: PhantomData<fn() -> M>,
}

impl<M: NimbusMessage, H: Handler<M>> StartHandlerActor for AsyncHandler<M, H> {
    fn start(&self, arbiter: Option<&ArbiterHandle>) -> Recipient<Invoke> {
        let handler = self.handler.clone();
        let make = move |_: &mut Context<HandlerActor<M, H>>| HandlerActor {
            handler,
            _message: PhantomData,
        };
        match arbiter {
            Some(arbiter) => HandlerActor::start_in_arbiter(arbiter, make).recipient(),
            None => HandlerActor::create(make).recipient(),
        }
    }
}

/// Runs one async handler on one handler thread. It handles several messages at once (each
/// run is a future of its own on the thread); the endpoint's concurrency limit bounds them.
pub(crate) struct HandlerActor<M, H> {
    handler: Arc<H>,
    _message: PhantomData<fn() -> M>,
}

impl<M: NimbusMessage, H: Handler<M>> Actor for HandlerActor<M, H> {
    type Context = Context<Self>;
}

impl<M: NimbusMessage, H: Handler<M>> actix::Handler<Invoke> for HandlerActor<M, H> {
    type Result = ResponseFuture<Invocation>;

    fn handle(&mut self, invoke: Invoke, _ctx: &mut Self::Context) -> Self::Result {
        let handler = self.handler.clone();
        Box::pin(async move {
            let Invoke {
                body,
                mut ctx,
                timeout,
                database_target,
                span,
            } = invoke;
            let quiet = ctx.attempt() > 1;
            let run = async {
                let message: M =
                    serde_json::from_slice(&body).map_err(|source| InvokeError::Body {
                        type_name: M::TYPE_NAME,
                        source,
                    })?;
                handler
                    .handle(message, &mut ctx)
                    .await
                    .map_err(InvokeError::Handler)
            };
            let run = poll_quietly_if(quiet, IN_HANDLER.scope(database_target, run));
            let invoked = guarded(timeout, run).instrument(span).await;
            Invocation { invoked, ctx }
        })
    }
}

/// Runs `run` with the handler timeout, catching a panic. A handler that blocked its thread
/// past the timeout (so the timer could not interrupt it) has still run too long: its attempt
/// fails too.
async fn guarded(timeout: Duration, run: impl Future<Output = Result<(), InvokeError>>) -> Invoked {
    let started = Instant::now();
    match tokio::time::timeout(timeout, AssertUnwindSafe(run).catch_unwind()).await {
        Ok(_) if started.elapsed() > timeout => Invoked::TimedOut,
        Ok(Ok(result)) => Invoked::Done(result),
        Ok(Err(panic)) => Invoked::Panicked(panic_message(panic.as_ref())),
        Err(_) => Invoked::TimedOut,
    }
}

/// The text a panic carried.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// A blocking handler with its message type erased.
pub(crate) trait ErasedBlocking: Send + Sync {
    fn invoke(&self, body: &[u8], ctx: &mut HandlerContext) -> Result<(), InvokeError>;
}

struct SyncHandler<M, H> {
    handler: H,
    _message: PhantomData<fn() -> M>,
}

impl<M: NimbusMessage, H: BlockingHandler<M>> ErasedBlocking for SyncHandler<M, H> {
    fn invoke(&self, body: &[u8], ctx: &mut HandlerContext) -> Result<(), InvokeError> {
        let message: M = serde_json::from_slice(body).map_err(|source| InvokeError::Body {
            type_name: M::TYPE_NAME,
            source,
        })?;
        self.handler
            .handle(message, ctx)
            .map_err(InvokeError::Handler)
    }
}

/// Runs a blocking handler on a pool thread.
#[derive(actix::Message)]
#[rtype(result = "Invocation")]
struct InvokeBlocking {
    handler: Arc<dyn ErasedBlocking>,
    body: Arc<Vec<u8>>,
    /// The context without the receive's transaction.
    ctx: HandlerContext,
    span: tracing::Span,
}

/// One thread of the blocking pool.
struct BlockingWorker;

impl Actor for BlockingWorker {
    type Context = SyncContext<Self>;
}

impl actix::Handler<InvokeBlocking> for BlockingWorker {
    type Result = MessageResult<InvokeBlocking>;

    fn handle(&mut self, invoke: InvokeBlocking, _ctx: &mut Self::Context) -> Self::Result {
        let InvokeBlocking {
            handler,
            body,
            mut ctx,
            span,
        } = invoke;
        let quiet = ctx.attempt() > 1;
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run_quietly_if(quiet, || span.in_scope(|| handler.invoke(&body, &mut ctx)))
        }));
        let invoked = match run {
            Ok(result) => Invoked::Done(result),
            Err(panic) => Invoked::Panicked(panic_message(panic.as_ref())),
        };
        MessageResult(Invocation { invoked, ctx })
    }
}

/// How often the receiver reports a handler that keeps its thread past its timeout; the first
/// report comes once it has held it for twice the timeout, or 10 s past it if that is sooner.
const STALL_REPORT_EVERY: Duration = Duration::from_secs(10);

/// How often each handler thread shows it is responsive.
const PULSE_EVERY: Duration = Duration::from_millis(50);

/// A handler thread that has not shown a pulse for this long is held by blocking code: new
/// messages go to the other threads while any of them is responsive.
const HELD_AFTER: Duration = Duration::from_millis(250);

/// Hands handlers their messages: picks the thread, lends the context, gets it back.
pub(crate) struct Dispatcher {
    /// Per handler id: its actor on each handler thread (empty for blocking handlers).
    actors: Vec<Vec<Recipient<Invoke>>>,
    /// Per handler thread: the handler runs in flight on it.
    in_flight: Vec<AtomicUsize>,
    /// Per handler thread: the id + 1 of the handler started last on it (0: none yet). A thread
    /// held by blocking code is held by that one: nothing else starts there after it.
    started_last: Vec<AtomicUsize>,
    /// Per handler id: the message type it handles, for reports.
    type_names: Vec<&'static str>,
    /// Where the search for the least busy thread starts, so ties spread.
    next: AtomicUsize,
    /// Per handler thread: when it last ran its pulse (milliseconds since `clock`); empty when
    /// handlers run on the bus's thread.
    pulses: Arc<Vec<AtomicU64>>,
    clock: Instant,
    blocking: Option<Addr<BlockingWorker>>,
    /// The handler threads this dispatcher started (none when handlers run on the bus's).
    arbiters: Mutex<Vec<Arbiter>>,
}

impl Dispatcher {
    /// Starts `threads` handler threads (1: handlers run on the calling thread) with an actor
    /// of every async handler on each, and a pool of `blocking_threads` if any handler blocks.
    pub fn start(
        handlers: &[Arc<RegisteredHandler>],
        threads: usize,
        blocking_threads: usize,
    ) -> Self {
        let arbiters: Vec<Arbiter> = if threads > 1 {
            (0..threads).map(|_| Arbiter::new()).collect()
        } else {
            Vec::new()
        };
        let actors = handlers
            .iter()
            .map(|handler| match &handler.kind {
                HandlerKind::Async(start) if arbiters.is_empty() => vec![start.start(None)],
                HandlerKind::Async(start) => arbiters
                    .iter()
                    .map(|arbiter| start.start(Some(&arbiter.handle())))
                    .collect(),
                HandlerKind::Blocking(_) => Vec::new(),
            })
            .collect();
        let has_blocking = handlers
            .iter()
            .any(|h| matches!(h.kind, HandlerKind::Blocking(_)));
        let blocking =
            has_blocking.then(|| SyncArbiter::start(blocking_threads.max(1), || BlockingWorker));
        let clock = Instant::now();
        let pulses: Arc<Vec<AtomicU64>> =
            Arc::new(arbiters.iter().map(|_| AtomicU64::new(0)).collect());
        for (thread, arbiter) in arbiters.iter().enumerate() {
            let pulses = pulses.clone();
            // Connections taken on this thread come from its own pool (see `driver::home`).
            arbiter.spawn_fn(move || crate::driver::shard::enter_shard(thread));
            // Ends when the arbiter stops.
            arbiter.spawn(async move {
                loop {
                    pulses[thread].store(millis_since(clock), Ordering::Relaxed);
                    tokio::time::sleep(PULSE_EVERY).await;
                }
            });
        }
        Dispatcher {
            actors,
            in_flight: (0..threads.max(1)).map(|_| AtomicUsize::new(0)).collect(),
            started_last: (0..threads.max(1)).map(|_| AtomicUsize::new(0)).collect(),
            type_names: handlers.iter().map(|h| h.type_name).collect(),
            next: AtomicUsize::new(0),
            pulses,
            clock,
            blocking,
            arbiters: Mutex::new(arbiters),
        }
    }

    /// The number of handler threads.
    pub fn threads(&self) -> usize {
        self.in_flight.len()
    }

    /// Runs `handler` with `body`, lending it `ctx`. `Err` when the handler's thread or pool is
    /// gone (the bus is stopping): the context, and with it the receive's transaction, was
    /// dropped, which rolled the receive back.
    pub async fn invoke(
        &self,
        handler: &RegisteredHandler,
        body: &Arc<Vec<u8>>,
        ctx: HandlerContext,
        timeout: Duration,
        database_target: &Arc<str>,
    ) -> Result<Invocation, NimbusError> {
        match &handler.kind {
            HandlerKind::Async(_) => {
                let invoke = Invoke {
                    body: body.clone(),
                    ctx,
                    timeout,
                    database_target: database_target.clone(),
                    span: tracing::Span::current(),
                };
                self.invoke_async(handler, invoke).await
            }
            HandlerKind::Blocking(blocking) => {
                self.invoke_blocking(handler, blocking.clone(), body.clone(), ctx, timeout)
                    .await
            }
        }
    }

    async fn invoke_async(
        &self,
        handler: &RegisteredHandler,
        invoke: Invoke,
    ) -> Result<Invocation, NimbusError> {
        let timeout = invoke.timeout;
        // A receiver on a handler thread runs its handlers there: no hop per message.
        let thread = crate::driver::shard::current_shard()
            .filter(|thread| *thread < self.in_flight.len())
            .unwrap_or_else(|| self.least_busy());
        let _busy = Busy::on(&self.in_flight[thread]);
        self.started_last[thread].store(handler.id + 1, Ordering::Relaxed);
        let actor = self
            .actors
            .get(handler.id)
            .and_then(|on_threads| on_threads.get(thread))
            .ok_or_else(|| stopped("the handler's actor was never started"))?;
        let request = actor.send(invoke);
        tokio::pin!(request);
        let started = Instant::now();
        let mut report_at = started + timeout + timeout.min(STALL_REPORT_EVERY);
        loop {
            match tokio::time::timeout_at(report_at.into(), &mut request).await {
                Ok(Ok(invocation)) => return Ok(invocation),
                Ok(Err(e)) => return Err(stopped(&format!("the handler thread is gone ({e})"))),
                Err(_) => {
                    // The timeout inside the actor cannot fire while the handler holds its
                    // thread: blocking code in an async handler. Say so, and keep waiting (the
                    // receive's transaction is with the handler).
                    tracing::error!(
                        message_type = handler.type_name,
                        thread,
                        running_for = ?started.elapsed(),
                        ?timeout,
                        "a handler has held its thread past the handler timeout: it blocks \
                         instead of awaiting; make it a BlockingHandler or move the blocking \
                         work into tokio::task::spawn_blocking"
                    );
                    report_at += STALL_REPORT_EVERY;
                }
            }
        }
    }

    async fn invoke_blocking(
        &self,
        handler: &RegisteredHandler,
        blocking: Arc<dyn ErasedBlocking>,
        body: Arc<Vec<u8>>,
        mut ctx: HandlerContext,
        timeout: Duration,
    ) -> Result<Invocation, NimbusError> {
        let pool = self
            .blocking
            .as_ref()
            .ok_or_else(|| stopped("the blocking pool was never started"))?;
        let transaction = ctx.take_transaction();
        let spare = ctx.spare();
        let request = pool.send(InvokeBlocking {
            handler: blocking,
            body,
            ctx,
            span: tracing::Span::current(),
        });
        let mut invocation = match tokio::time::timeout(timeout, request).await {
            Ok(Ok(invocation)) => invocation,
            Ok(Err(e)) => return Err(stopped(&format!("the blocking pool is gone ({e})"))),
            Err(_) => {
                tracing::warn!(
                    message_type = handler.type_name,
                    ?timeout,
                    "a blocking handler ran past the handler timeout: the attempt failed and \
                     the receive went on without it; its thread stays busy until it returns"
                );
                Invocation {
                    invoked: Invoked::TimedOut,
                    ctx: spare,
                }
            }
        };
        invocation.ctx.restore_transaction(transaction);
        Ok(invocation)
    }

    /// The handler thread receiver `index` of a queue lives on, and its arbiter: receivers are
    /// spread over the handler threads in turn, so that each message is received, handled and
    /// committed on one thread. `None` with one handler thread (the bus's own).
    pub fn receiver_home(&self, index: usize) -> Option<(usize, ArbiterHandle)> {
        let arbiters = self.arbiters.lock().unwrap_or_else(|p| p.into_inner());
        if arbiters.is_empty() {
            return None;
        }
        let thread = index % arbiters.len();
        arbiters.get(thread).map(|a| (thread, a.handle()))
    }

    /// The handler thread receiver `index` lives on (see [`Dispatcher::receiver_home`]), without
    /// its arbiter.
    pub fn receiver_home_index(&self, index: usize) -> Option<usize> {
        let threads = self.pulses.len();
        (threads > 0).then(|| index % threads)
    }

    /// Whether handler thread `thread` showed its pulse lately (is not held by blocking code).
    pub fn is_responsive(&self, thread: usize) -> bool {
        self.held_for(thread) < HELD_AFTER
    }

    /// The runs in flight on handler thread `thread`.
    pub fn load(&self, thread: usize) -> usize {
        self.in_flight
            .get(thread)
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }

    /// Awaits `run`, a receive running on handler thread `thread`, counted as in flight there.
    /// Meanwhile, from the calling thread (the bus's, which runs no handler), a handler that
    /// holds that thread past `handler_timeout` (blocking code in an async handler, which no
    /// timer on its own thread can interrupt) is reported every 10 s.
    pub async fn watched<F: Future>(
        &self,
        thread: usize,
        handler_timeout: Duration,
        run: F,
    ) -> F::Output {
        let _busy = self.in_flight.get(thread).map(Busy::on);
        tokio::pin!(run);
        let started = Instant::now();
        let held_too_long = handler_timeout + handler_timeout.min(STALL_REPORT_EVERY);
        let mut reported_at: Option<Instant> = None;
        loop {
            let Ok(output) = tokio::time::timeout(PULSE_EVERY * 4, &mut run).await else {
                let held = self.held_for(thread);
                let due = reported_at.is_none_or(|at| at.elapsed() >= STALL_REPORT_EVERY);
                if held >= held_too_long && due {
                    reported_at = Some(Instant::now());
                    let message_type = self.started_last[thread]
                        .load(Ordering::Relaxed)
                        .checked_sub(1)
                        .and_then(|id| self.type_names.get(id))
                        .copied()
                        .unwrap_or("unknown");
                    tracing::error!(
                        message_type,
                        thread,
                        held_for = ?held,
                        receive_running_for = ?started.elapsed(),
                        ?handler_timeout,
                        "a handler has held its thread past the handler timeout: it blocks \
                         instead of awaiting; make it a BlockingHandler or move the blocking \
                         work into tokio::task::spawn_blocking"
                    );
                }
                continue;
            };
            return output;
        }
    }

    /// How long handler thread `thread` has gone without its pulse (held by blocking code).
    fn held_for(&self, thread: usize) -> Duration {
        let Some(pulse) = self.pulses.get(thread) else {
            return Duration::ZERO;
        };
        let last = pulse.load(Ordering::Relaxed);
        Duration::from_millis(millis_since(self.clock).saturating_sub(last))
    }

    /// The handler thread with the fewest runs in flight among those that are responsive (all,
    /// if none is): a thread held by blocking code gets no new message while another can take it.
    fn least_busy(&self) -> usize {
        let threads = self.in_flight.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % threads;
        let now = millis_since(self.clock);
        let held_after = u64::try_from(HELD_AFTER.as_millis()).unwrap_or(u64::MAX);
        let responsive = |thread: &usize| {
            self.pulses
                .get(*thread)
                .is_none_or(|pulse| now.saturating_sub(pulse.load(Ordering::Relaxed)) < held_after)
        };
        let by_load = |&thread: &usize| self.in_flight[thread].load(Ordering::Relaxed);
        let in_order = || (0..threads).map(|offset| (start + offset) % threads);
        in_order()
            .filter(responsive)
            .min_by_key(by_load)
            .or_else(|| in_order().min_by_key(by_load))
            .unwrap_or(0)
    }

    /// Stops the handler threads and the blocking pool (call when no receive runs any more).
    pub fn stop(&self) {
        let arbiters =
            std::mem::take(&mut *self.arbiters.lock().unwrap_or_else(|p| p.into_inner()));
        for arbiter in arbiters {
            arbiter.stop();
        }
    }
}

impl Drop for Dispatcher {
    /// A bus dropped without `stop` still ends its handler threads.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Milliseconds from `clock` to now.
fn millis_since(clock: Instant) -> u64 {
    u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Counts a run in flight on a thread for as long as it lives.
struct Busy<'a>(&'a AtomicUsize);

impl<'a> Busy<'a> {
    fn on(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Busy(counter)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn stopped(what: &str) -> NimbusError {
    NimbusError::NotRunning(format!(
        "{what}; the receive was rolled back and the message stays in its queue"
    ))
}
