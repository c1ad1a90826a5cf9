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
//! Not supported yet: saga timeouts (`request_timeout`), `nimbus sagas` in the tool, sagas in
//! batched receives or under a lease, and NServiceBus's saga headers on what a saga sends.

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
    id: Uuid,
    correlation: String,
    version: Option<i64>,
    complete: bool,
}

impl<S> SagaInstance<S> {
    /// A fresh instance with `state`, for a test that calls a saga's handler directly.
    pub fn new(correlation: impl Into<String>, state: S) -> Self {
        SagaInstance {
            state,
            id: Uuid::now_v7(),
            correlation: correlation.into(),
            version: None,
            complete: false,
        }
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
        let found = ctx
            .saga_transaction()?
            .saga_get(S::NAME, &correlation)
            .await?;
        let mut instance = match found {
            Some(row) => {
                let state: S::State = serde_json::from_str(&row.state).map_err(|e| {
                    NimbusError::config(
                        format!(
                            "the stored state of saga {} {correlation:?} (version {}) does not \
                             read as its State type: {e}",
                            S::NAME,
                            row.version
                        ),
                        "make the State type read what earlier versions stored (serde \
                         defaults for new fields), or fix the row in NimbusSagas",
                    )
                })?;
                SagaInstance {
                    state,
                    id: row.id,
                    correlation,
                    version: Some(row.version),
                    complete: false,
                }
            }
            None if S::STARTS => SagaInstance::new(correlation, S::State::default()),
            None => {
                return match S::not_found(&message) {
                    NotFound::Ignore => {
                        tracing::info!(
                            saga = S::NAME,
                            correlation = %correlation,
                            message_type = M::TYPE_NAME,
                            message_id = ctx.message_id(),
                            "no saga instance for this message, which does not start one: \
                             ignored"
                        );
                        Ok(())
                    }
                    NotFound::Fail => Err(format!(
                        "no instance of saga {} for {correlation:?}, and {} does not start one",
                        S::NAME,
                        M::TYPE_NAME
                    )
                    .into()),
                };
            }
        };
        self.saga.handle(message, &mut instance, ctx).await?;
        let state = serde_json::to_string(&instance.state).map_err(|e| {
            NimbusError::config(
                format!("the state of saga {} does not serialize: {e}", S::NAME),
                "make every field of the State type serializable to JSON",
            )
        })?;
        let change = match (instance.version, instance.complete) {
            (None, true) => return Ok(()),
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
            (Some(version), true) => SagaChange::Delete {
                id: instance.id,
                version,
            },
        };
        let saved = ctx.saga_transaction()?.saga_save(change).await;
        if let Err(e) = &saved {
            if crate::driver::access::failure_kind_in(e) == Some(crate::FailureKind::Transient) {
                metrics::counter!("nimbus_saga_conflicts_total", "saga" => S::NAME).increment(1);
                tracing::info!(saga = S::NAME, error = %e, "saga conflict: the message is received again");
            }
        }
        saved.map_err(Into::into)
    }
}
