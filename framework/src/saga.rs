//! Sagas: long-running processes whose state commits with the message that changed it.
//!
//! A saga is an ordinary Rust type: [`Saga`] names it and its state (any serde type with a
//! `Default`), and one [`SagaHandler`] implementation per message type it handles says which
//! instance a message belongs to (its correlation value), whether that message may start a new
//! instance, and what to do with it. Register it with
//! [`BusBuilder::saga_handler`](crate::BusBuilder::saga_handler) once per message type.
//!
//! For each message, in the receive's transaction: the instance is read (its row locked until
//! the transaction ends where the database can: PostgreSQL `FOR UPDATE`, SQL Server
//! `UPDLOCK, ROWLOCK, HOLDLOCK`; SQLite's receive already holds the file's one write lock), the
//! handler changes its state, sends and publishes, and the new state is written at the next
//! version — all of it committing with the message's removal, or none of it. The state is JSON in
//! the `NimbusSagas` table, one row per instance, with a unique index on its saga type and
//! correlation value.
//!
//! * **Concurrency.** Two messages for one instance never both commit a change made from the
//!   same state: the row lock makes the second wait for the first, and the version check
//!   catches what a lock cannot (a database that ignores the hint). Two messages that start the
//!   same instance at once create one: the unique index refuses the second insert. The loser's
//!   receive is rolled back and received again without spending a retry (as a transient
//!   database error is), and then finds the instance. Such conflicts are counted in
//!   `nimbus_saga_conflicts_total{saga}`.
//! * **Failure.** A handler that fails follows the usual retries and dead letters; what it
//!   changed in the state is undone with the attempt (to the savepoint taken before the saga
//!   was read).
//! * **Completion.** [`SagaInstance::mark_complete`] deletes the instance when the message
//!   commits; later messages for it find nothing.
//! * **Not found.** A message that finds no instance and may not start one is ignored with a
//!   log line (as NServiceBus does), or fails, as [`SagaHandler::not_found`] says.
//!
//! * **Timeouts.** [`SagaInstance::request_timeout`] sends a message back to the instance after
//!   a delay (by the database's clock, through delayed delivery to the endpoint's own queue),
//!   handled by the saga's [`SagaTimeout`]; one that comes due after its instance completed is
//!   dropped with a log line.
//! * **Headers.** What a saga sends carries `NServiceBus.OriginatingSagaId` and
//!   `NServiceBus.OriginatingSagaType`; its timeouts carry `NServiceBus.IsSagaTimeoutMessage`,
//!   `NServiceBus.SagaId` and `NServiceBus.SagaType` (and Nimbus's own correlation header).
//!
//! Not supported yet: `nimbus sagas` in the tool, sagas in batched receives or under a lease.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use crate::error::{HandlerError, NimbusError};
use crate::message::Message;
use crate::pipeline::handler::{Handler, HandlerContext};
use crate::transport::SagaChange;

/// A saga: a name stored with each instance and the state each instance keeps.
pub trait Saga: Clone + Send + Sync + 'static {
    /// The state of one instance, stored as JSON; a new instance starts from `Default`.
    type State: Serialize + DeserializeOwned + Default + Send + Sync + 'static;
    /// The saga's name, stored with each instance: keep it stable once instances exist.
    const NAME: &'static str;
}

/// What a saga does with messages of type `M`.
pub trait SagaHandler<M: Message>: Saga {
    /// Whether a message of this type starts a new instance when none exists for its
    /// correlation value.
    const STARTS: bool = false;

    /// The correlation value of `message`: which instance it belongs to.
    fn correlation(message: &M) -> String;

    /// Handles `message` with its instance's state. Change `saga.state`, send and publish
    /// through `ctx`, and [`SagaInstance::mark_complete`] when the process is over.
    fn handle(
        &self,
        message: M,
        saga: &mut SagaInstance<Self::State>,
        ctx: &mut HandlerContext,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;

    /// What happens to a message that finds no instance and may not start one: by default it
    /// is ignored with a log line.
    fn not_found(_message: &M) -> NotFound {
        NotFound::Ignore
    }
}

/// The header that marks a saga's timeout (NServiceBus's name), `True` on a timeout.
pub const IS_SAGA_TIMEOUT: &str = "NServiceBus.IsSagaTimeoutMessage";
/// The id of the saga instance a timeout is for (NServiceBus's name).
pub const SAGA_ID: &str = "NServiceBus.SagaId";
/// The saga type a timeout is for (NServiceBus's name; Nimbus writes [`Saga::NAME`]).
pub const SAGA_TYPE: &str = "NServiceBus.SagaType";
/// The correlation value of the instance a timeout is for (Nimbus's own header).
pub const SAGA_CORRELATION: &str = "Nimbus.SagaCorrelationId";
/// On every message a saga sends: the id of the instance that sent it (NServiceBus's name).
pub const ORIGINATING_SAGA_ID: &str = "NServiceBus.OriginatingSagaId";
/// On every message a saga sends: the saga type that sent it (NServiceBus's name).
pub const ORIGINATING_SAGA_TYPE: &str = "NServiceBus.OriginatingSagaType";

/// What a saga does when a timeout it asked for comes due (see
/// [`SagaInstance::request_timeout`]); register it with
/// [`BusBuilder::saga_timeout`](crate::BusBuilder::saga_timeout).
pub trait SagaTimeout<T: Message>: Saga {
    /// Handles the timeout `timeout` with the state of the instance that asked for it.
    fn timeout(
        &self,
        timeout: T,
        saga: &mut SagaInstance<Self::State>,
        ctx: &mut HandlerContext,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;
}

/// What happens to a message whose saga instance does not exist (it never started, or it
/// completed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotFound {
    /// The message is consumed with an `INFO` log line.
    Ignore,
    /// The message fails, as a handler error would (retries, then the dead letters).
    Fail,
}

/// One saga instance while a message is handled: its state, and whether it completes.
#[derive(Debug)]
pub struct SagaInstance<S> {
    /// The instance's state; what the handler leaves here is stored when the message commits.
    pub state: S,
    saga_type: &'static str,
    id: Uuid,
    correlation: String,
    version: Option<i64>,
    complete: bool,
}

impl<S> SagaInstance<S> {
    /// A fresh instance of the saga named `saga_type` with `state`, for a test that calls a
    /// saga's handler directly.
    pub fn new(saga_type: &'static str, correlation: impl Into<String>, state: S) -> Self {
        SagaInstance {
            state,
            saga_type,
            id: Uuid::now_v7(),
            correlation: correlation.into(),
            version: None,
            complete: false,
        }
    }

    /// Asks for `timeout` to come back to this instance after `after` (by the database's
    /// clock, through delayed delivery to the endpoint's own queue), to the saga's
    /// [`SagaTimeout<T>`] handler. It is sent when the message commits, and not if it fails. A
    /// timeout that comes due after the instance completed is dropped with a log line. The
    /// endpoint must register the handler with
    /// [`BusBuilder::saga_timeout`](crate::BusBuilder::saga_timeout).
    ///
    /// Returns the timeout's message id: keep it in the state to take the timeout back with
    /// [`cancel_timeout`](Self::cancel_timeout).
    pub fn request_timeout<T: Message>(
        &self,
        ctx: &mut HandlerContext,
        after: std::time::Duration,
        timeout: T,
    ) -> crate::Result<uuid::Uuid>
    where
        S: Send,
    {
        let from = ctx.outgoing_len();
        let timeout_id = ctx.send_to_self_after(timeout, after)?;
        let id = self.id.to_string();
        ctx.add_headers_from(
            from,
            &[
                (IS_SAGA_TIMEOUT, "True"),
                (SAGA_ID, &id),
                (SAGA_TYPE, self.saga_type),
                (SAGA_CORRELATION, &self.correlation),
            ],
        )?;
        Ok(timeout_id)
    }

    /// Takes back the timeout `timeout_id` (as [`request_timeout`](Self::request_timeout)
    /// returned it) with the message being handled: it never comes due if this message
    /// commits, and still does if this attempt fails. `true` when it was still waiting (or was
    /// asked for by this same message); `false` when it came due already (its handler ran or
    /// will run).
    pub async fn cancel_timeout(
        &self,
        ctx: &mut HandlerContext,
        timeout_id: uuid::Uuid,
    ) -> crate::Result<bool> {
        ctx.cancel_delayed(timeout_id).await
    }

    /// Ends the saga: the instance is deleted when the message commits.
    pub fn mark_complete(&mut self) {
        self.complete = true;
    }

    /// Whether [`SagaInstance::mark_complete`] was called.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether this message started the instance.
    pub fn is_new(&self) -> bool {
        self.version.is_none()
    }

    /// The instance's id (`NimbusSagas.Id`).
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// The instance's correlation value.
    pub fn correlation(&self) -> &str {
        &self.correlation
    }
}

/// Runs a [`SagaHandler`] as the endpoint's handler of `M`: reads the instance, runs the
/// saga, writes the change, all in the receive's transaction.
pub(crate) struct SagaAdapter<S, M> {
    saga: Arc<S>,
    _message: PhantomData<fn(M)>,
}

impl<S, M> SagaAdapter<S, M> {
    pub(crate) fn new(saga: S) -> Self {
        SagaAdapter {
            saga: Arc::new(saga),
            _message: PhantomData,
        }
    }
}

impl<S: SagaHandler<M>, M: Message> Handler<M> for SagaAdapter<S, M> {
    async fn handle(&self, message: M, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let correlation = S::correlation(&message);
        let mut instance = match load::<S>(ctx, correlation.clone(), S::STARTS).await? {
            Loaded::Instance(instance) => instance,
            Loaded::Completed => {
                // A message that comes after its instance completed (late, or replayed from
                // the dead letters): the process is over, and starting it again would leave an
                // instance that waits for ever.
                metrics::counter!("nimbus_saga_messages_after_completion_total", "saga" => S::NAME)
                    .increment(1);
                tracing::debug!(
                    saga = S::NAME,
                    correlation = %correlation,
                    message_type = M::TYPE_NAME,
                    message_id = ctx.message_id(),
                    "a message came after its saga instance completed: ignored"
                );
                return Ok(());
            }
            Loaded::None => {
                return match S::not_found(&message) {
                    NotFound::Ignore => {
                        tracing::info!(
                            saga = S::NAME,
                            correlation = %correlation,
                            message_type = M::TYPE_NAME,
                            message_id = ctx.message_id(),
                            "no saga instance for this message, which does not start one: ignored"
                        );
                        Ok(())
                    }
                    NotFound::Fail => Err(format!(
                        "no instance of saga {} for {correlation:?}, and {} does not start one",
                        S::NAME,
                        M::TYPE_NAME
                    )
                    .into()),
                }
            }
        };
        let from = ctx.outgoing_len();
        self.saga.handle(message, &mut instance, ctx).await?;
        save::<S>(ctx, instance, from).await
    }
}

/// Runs a [`SagaTimeout`] as the endpoint's handler of `T`: finds the instance the timeout's
/// headers name, and drops the timeout with a log line when that instance is gone.
pub(crate) struct TimeoutAdapter<S, T> {
    saga: Arc<S>,
    _message: PhantomData<fn(T)>,
}

impl<S, T> TimeoutAdapter<S, T> {
    pub(crate) fn new(saga: S) -> Self {
        TimeoutAdapter {
            saga: Arc::new(saga),
            _message: PhantomData,
        }
    }
}

impl<S: SagaTimeout<T>, T: Message> Handler<T> for TimeoutAdapter<S, T> {
    async fn handle(&self, timeout: T, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let headers = ctx.headers();
        let (Some(saga_type), Some(id), Some(correlation)) = (
            headers.get(SAGA_TYPE).cloned(),
            headers.get(SAGA_ID).cloned(),
            headers.get(SAGA_CORRELATION).cloned(),
        ) else {
            return Err(format!(
                "{} is handled as a timeout of saga {}, but this message carries no saga \
                 headers ({SAGA_TYPE}, {SAGA_ID}, {SAGA_CORRELATION}): only \
                 SagaInstance::request_timeout sends timeouts",
                T::TYPE_NAME,
                S::NAME
            )
            .into());
        };
        if saga_type != S::NAME {
            return Err(format!(
                "a timeout for saga {saga_type:?} reached saga {}: register each saga's \
                 timeout types with its own saga",
                S::NAME
            )
            .into());
        }
        let instance = load::<S>(ctx, correlation.clone(), false).await?;
        let mut instance = match instance {
            Loaded::Instance(instance) if instance.id.to_string() == id => instance,
            _ => {
                // Expected: every instance that completes before its timeouts leaves them to
                // come due later. Counted, not logged above DEBUG.
                crate::pipeline::metrics::count_saga_timeout_dropped(S::NAME);
                tracing::debug!(
                    saga = S::NAME,
                    correlation = %correlation,
                    saga_id = %id,
                    timeout = T::TYPE_NAME,
                    "a saga timeout came due after its instance completed: dropped"
                );
                return Ok(());
            }
        };
        metrics::counter!("nimbus_saga_timeouts_total", "saga" => S::NAME).increment(1);
        let from = ctx.outgoing_len();
        self.saga.timeout(timeout, &mut instance, ctx).await?;
        save::<S>(ctx, instance, from).await
    }
}

/// What [`load`] found.
enum Loaded<State> {
    /// The running instance, or a new one.
    Instance(SagaInstance<State>),
    /// The instance completed (and is kept a while for messages that come late).
    Completed,
    /// None, and the message may not start one.
    None,
}

/// Reads the instance of `S` for `correlation` in the receive's transaction: a new one when
/// there is none and `starts`.
async fn load<S: Saga>(
    ctx: &mut HandlerContext,
    correlation: String,
    starts: bool,
) -> Result<Loaded<S::State>, HandlerError> {
    let found = ctx
        .saga_transaction()?
        .saga_get(S::NAME, &correlation)
        .await?;
    Ok(match found {
        Some(row) if row.completed => Loaded::Completed,
        Some(row) => {
            let state: S::State = serde_json::from_str(&row.state).map_err(|e| {
                NimbusError::config(
                    format!(
                        "the stored state of saga {} {correlation:?} (version {}) does not \
                         read as its State type: {e}",
                        S::NAME,
                        row.version
                    ),
                    "make the State type read what earlier versions stored (serde defaults \
                     for new fields), or fix the row in NimbusSagas",
                )
            })?;
            Loaded::Instance(SagaInstance {
                state,
                saga_type: S::NAME,
                id: row.id,
                correlation,
                version: Some(row.version),
                complete: false,
            })
        }
        None if starts => {
            Loaded::Instance(SagaInstance::new(S::NAME, correlation, S::State::default()))
        }
        None => Loaded::None,
    })
}

/// Writes what the handler did to `instance` in the receive's transaction, and marks what it
/// sent (from the `from`th message on) with the instance's id and type.
async fn save<S: Saga>(
    ctx: &mut HandlerContext,
    instance: SagaInstance<S::State>,
    from: usize,
) -> Result<(), HandlerError> {
    let id = instance.id.to_string();
    ctx.add_headers_from(
        from,
        &[(ORIGINATING_SAGA_ID, &id), (ORIGINATING_SAGA_TYPE, S::NAME)],
    )?;
    let state = serde_json::to_string(&instance.state).map_err(|e| {
        NimbusError::config(
            format!("the state of saga {} does not serialize: {e}", S::NAME),
            "make every field of the State type serializable to JSON",
        )
    })?;
    let change = match (instance.version, instance.complete) {
        // Started and completed by one message: kept completed, so that a late message of
        // the same instance does not start it again.
        (None, true) => SagaChange::Insert {
            id: instance.id,
            saga_type: S::NAME,
            correlation: &instance.correlation,
            state: &state,
        },
        (None, false) => SagaChange::Insert {
            id: instance.id,
            saga_type: S::NAME,
            correlation: &instance.correlation,
            state: &state,
        },
        (Some(version), false) => SagaChange::Update {
            id: instance.id,
            version,
            state: &state,
        },
        (Some(version), true) => SagaChange::Complete {
            id: instance.id,
            version,
            state: &state,
        },
    };
    let counted: &[&'static str] = match (change, instance.complete) {
        (SagaChange::Insert { .. }, true) => {
            &["nimbus_sagas_started_total", "nimbus_sagas_completed_total"]
        }
        (SagaChange::Insert { .. }, false) => &["nimbus_sagas_started_total"],
        (SagaChange::Complete { .. }, _) => &["nimbus_sagas_completed_total"],
        (SagaChange::Update { .. }, _) => &[],
    };
    let saved = match ctx.saga_transaction()?.saga_save(change).await {
        // The instance was inserted completed: mark it so in the same transaction.
        Ok(()) if instance.version.is_none() && instance.complete => {
            ctx.saga_transaction()?
                .saga_save(SagaChange::Complete {
                    id: instance.id,
                    version: 1,
                    state: &state,
                })
                .await
        }
        other => other,
    };
    if saved.is_ok() {
        for &name in counted {
            ctx.on_commit(move || metrics::counter!(name, "saga" => S::NAME).increment(1));
        }
    }
    if let Err(e) = &saved {
        if crate::driver::access::is_conflict_in(e) {
            // An expected race, not an outage: the message is received again at once.
            metrics::counter!("nimbus_saga_conflicts_total", "saga" => S::NAME).increment(1);
            tracing::debug!(saga = S::NAME, error = %e, "saga conflict: the message is received again");
        }
    }
    saved.map_err(Into::into)
}
