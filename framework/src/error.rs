//! Errors returned by the framework. Every error says what went wrong and what to do about it.

use std::time::Duration;

/// The error type of every fallible operation in `nimbus`.
///
/// Its `Debug` prints the same text as its `Display` (what went wrong and the fix), so a `main`
/// that returns `Result<(), NimbusError>` prints a message a person can act on, not a dump of
/// the driver's structures; `{:#?}` adds the chain of causes, one per line.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum NimbusError {
    /// The bus configuration is invalid; nothing was started.
    #[error("invalid configuration: {problem}. Fix: {fix}")]
    Config {
        /// What is wrong.
        problem: String,
        /// What to change.
        fix: String,
    },

    /// A queue, schema or topic name cannot be used.
    #[error("invalid {kind} name {name:?}: {reason}. Fix: choose a name of 1 to {max_len} characters without control characters (and, for a queue, without '@', which joins a queue to its schema in an address)")]
    InvalidName {
        /// Which kind of name ("queue", "schema", ...).
        kind: &'static str,
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: String,
        /// The longest name the backend accepts.
        max_len: usize,
    },

    /// A message was sent to a queue no endpoint has created: it would wait where nobody reads.
    #[error("queue {queue:?} does not exist: no endpoint has created it{}. Fix: check the name (queue names compare as the database compares them: exactly, case included, on PostgreSQL and SQLite; regardless of case on SQL Server), start the endpoint that receives from it first, or let senders create queues with BusBuilder::create_queues_on_send(true)", closest_names(.closest))]
    UnknownQueue {
        /// The queue as the sender named it.
        queue: String,
        /// Existing queues with a similar name, closest first.
        closest: Vec<String>,
    },

    /// The database could not be reached or refused the connection.
    #[error("cannot connect to {backend} at {target}: {detail}. Fix: {fix}")]
    Connect {
        /// The backend ("PostgreSQL", "SQLite", ...).
        backend: &'static str,
        /// Where we tried to connect (host and database, or a file path); never a password.
        target: String,
        /// What to check.
        fix: String,
        /// The driver's error with every cause, e.g. "error connecting to server: Connection
        /// refused (os error 111)".
        detail: String,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A statement failed on the database.
    #[error("{backend} failed while {operation}: {source}")]
    Database {
        /// The backend ("PostgreSQL", "SQLite", ...).
        backend: &'static str,
        /// What the framework was doing, e.g. "receiving from queue \"Sales\"".
        operation: String,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The schema the bus needs is not there and auto-create is off.
    #[error("{object} does not exist in {backend}. Fix: enable auto_create_schema(true) or run this statement:\n{statement}")]
    MissingSchema {
        /// The backend.
        backend: &'static str,
        /// The missing table.
        object: String,
        /// The statement that creates it.
        statement: String,
    },

    /// A message could not be turned into JSON.
    #[error("cannot serialize message of type {type_name}: {source}")]
    Serialize {
        /// The message's type name.
        type_name: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// A message body could not be read as the expected type.
    #[error("cannot deserialize a {type_name}: {source}")]
    Deserialize {
        /// The expected type name.
        type_name: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// A message's body is larger than the bus accepts (`BusBuilder::max_body_size`); nothing
    /// was written.
    #[error("a {type_name} is larger than the {limit} bytes this bus sends (its body as JSON); nothing was written. Fix: keep large data out of the message (store it, in a table or an object store, and send its key), or raise the limit with BusBuilder::max_body_size(..)")]
    MessageTooLarge {
        /// The message's type name.
        type_name: &'static str,
        /// The limit in bytes.
        limit: usize,
    },

    /// A request was answered with another message type than the caller expected.
    #[error("the reply is a {got}, not the {expected} the caller expected. Fix: reply with the type the requester names")]
    UnexpectedReply {
        /// The type the caller asked for.
        expected: &'static str,
        /// The type that came back.
        got: String,
    },

    /// `send` was called for a message type that has no route.
    #[error("no route for message type {type_name}. Fix: add .route::<T>(\"QueueName\") to the bus builder, or use send_to")]
    NoRoute {
        /// The message's type name.
        type_name: &'static str,
    },

    /// The bus was stopped, or its actors are gone.
    #[error("the bus is not running ({0}). Fix: start the bus inside an actix System and do not use it after stop()")]
    NotRunning(String),

    /// Another live process runs a bus with the same application and instance name: they would
    /// share the instance queue, and replies and multicast events would reach the wrong one.
    #[error("the instance name {instance:?} of application {application:?} is held by a live process: process {process_id} on host {host:?}, last heartbeat {seconds_since_seen} s ago. Fix: give each process its own instance name (.application(\"{application}\") names it after the host; or .names(\"{application}\", \"<a name unique to this process>\")), stop the other process, or, if the processes may share the name and its instance queue, call .share_instance_name(true) in both")]
    InstanceNameTaken {
        /// The application name.
        application: String,
        /// The instance name both processes use.
        instance: String,
        /// The host of the live process that holds it.
        host: String,
        /// Its process id on that host.
        process_id: i64,
        /// How long ago (database time) its last heartbeat was.
        seconds_since_seen: i64,
    },

    /// Starting or stopping did not finish in time.
    #[error("{operation} did not finish within {timeout:?}")]
    Timeout {
        /// What timed out.
        operation: String,
        /// The limit.
        timeout: Duration,
    },
}

impl std::fmt::Debug for NimbusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)?;
        if f.alternate() {
            let mut cause = std::error::Error::source(self);
            while let Some(c) = cause {
                write!(f, "\n  caused by: {c}")?;
                cause = c.source();
            }
        }
        Ok(())
    }
}

/// Shorthand for `Result<T, NimbusError>`.
pub type Result<T, E = NimbusError> = std::result::Result<T, E>;

/// The error a handler returns. Any error type converts into it with `?`.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler failure that no retry can fix (a declined card, a record that will never exist):
/// the message goes to the dead letters at once with this reason, without spending retries.
///
/// ```
/// # use nimbus::{HandlerError, Unrecoverable};
/// fn charge(declined: bool) -> Result<(), HandlerError> {
///     if declined {
///         return Err(Unrecoverable::new("the card was declined").into());
///     }
///     Ok(())
/// }
/// assert!(charge(true).is_err());
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Unrecoverable {
    reason: String,
    #[source]
    source: Option<HandlerError>,
}

impl Unrecoverable {
    /// A failure with `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Unrecoverable {
            reason: reason.into(),
            source: None,
        }
    }

    /// A failure with `reason`, caused by `source`.
    pub fn caused_by(reason: impl Into<String>, source: impl Into<HandlerError>) -> Self {
        Unrecoverable {
            reason: reason.into(),
            source: Some(source.into()),
        }
    }
}

impl NimbusError {
    /// A short, stable name for the kind of error, for the `error.type` of a span or a metric
    /// label (e.g. `database`, `unknown_queue`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            NimbusError::Config { .. } => "config",
            NimbusError::InvalidName { .. } => "invalid_name",
            NimbusError::UnknownQueue { .. } => "unknown_queue",
            NimbusError::Connect { .. } => "connect",
            NimbusError::Database { .. } => "database",
            NimbusError::MissingSchema { .. } => "missing_schema",
            NimbusError::Serialize { .. } => "serialize",
            NimbusError::Deserialize { .. } => "deserialize",
            NimbusError::UnexpectedReply { .. } => "unexpected_reply",
            NimbusError::NoRoute { .. } => "no_route",
            NimbusError::NotRunning(_) => "not_running",
            NimbusError::Timeout { .. } => "timeout",
            NimbusError::InstanceNameTaken { .. } => "instance_name_taken",
            NimbusError::MessageTooLarge { .. } => "message_too_large",
        }
    }

    pub(crate) fn config(problem: impl Into<String>, fix: impl Into<String>) -> Self {
        NimbusError::Config {
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    pub(crate) fn connect(
        backend: &'static str,
        target: impl Into<String>,
        fix: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        NimbusError::Connect {
            backend,
            target: target.into(),
            fix: fix.into(),
            detail: error_chain(&source),
            source: Box::new(source),
        }
    }

    pub(crate) fn database(
        backend: &'static str,
        operation: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        NimbusError::Database {
            backend,
            operation: operation.into(),
            source: Box::new(source),
        }
    }
}

fn closest_names(closest: &[String]) -> String {
    if closest.is_empty() {
        return String::new();
    }
    let names: Vec<String> = closest.iter().map(|n| format!("{n:?}")).collect();
    format!(" (did you mean {}?)", names.join(" or "))
}

impl NimbusError {
    /// For a database call that ran past its deadline, how long it waited: the database had
    /// stopped answering at least that long before this error.
    pub(crate) fn waited_for_database(&self) -> Option<std::time::Duration> {
        match self {
            NimbusError::Database { source, .. } => source
                .downcast_ref::<crate::driver::DriverError>()
                .and_then(|e| e.waited()),
            _ => None,
        }
    }

    /// Whether doing the same thing again cannot succeed: a statement the database refuses for
    /// good (a missing table, a value too long, a constraint), a name or setting that is wrong.
    /// Connection failures, timeouts, deadlocks and a stopped bus are not permanent.
    pub fn is_permanent(&self) -> bool {
        match self {
            NimbusError::Database { source, .. } => source
                .downcast_ref::<crate::driver::DriverError>()
                .is_some_and(|e| e.kind() == crate::driver::FailureKind::Permanent),
            NimbusError::Config { .. }
            | NimbusError::InvalidName { .. }
            | NimbusError::MissingSchema { .. }
            | NimbusError::Serialize { .. }
            | NimbusError::MessageTooLarge { .. }
            | NimbusError::NoRoute { .. }
            | NimbusError::UnknownQueue { .. } => true,
            _ => false,
        }
    }
}

/// An error and its causes, joined with ": ", each cause once.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::NimbusError;

    #[test]
    fn debug_prints_the_message_and_the_fix_and_alternate_adds_the_causes() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = NimbusError::connect("PostgreSQL", "127.0.0.1:1", "start it", cause);
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(error.to_string().contains("Fix: start it"), "{error}");
        let alternate = format!("{error:#?}");
        assert!(
            alternate.starts_with(&error.to_string()) && alternate.contains("caused by: refused"),
            "{alternate}"
        );
    }
}
