//! The validated configuration of one endpoint, as the builder produced it: what the pipeline,
//! the actors and the transport settings are made from.

use std::sync::Arc;
use std::time::Duration;

use crate::envelope::EndpointIdentity;
use crate::error::NimbusError;
use crate::names::SchemaName;
use crate::pipeline::handler::{HandlerRegistry, Routes};
use crate::recoverability::RetryPolicy;
use crate::transport::{DatabaseUrl, StorageLayout, TransportSettings};

/// A validated endpoint configuration; produced by [`BusBuilder::build`].
pub(crate) struct EndpointConfig {
    pub identity: Arc<EndpointIdentity>,
    pub database: DatabaseUrl,
    pub schema: SchemaName,
    pub auto_create_schema: bool,
    pub peek_delay: Duration,
    /// [`BusBuilder::idle_poll`](crate::BusBuilder::idle_poll).
    pub idle_poll: Duration,
    pub concurrency: usize,
    /// Threads that run handlers (1: the bus's own).
    pub handler_threads: usize,
    /// Threads of the pool that runs blocking handlers (started only if there are some).
    pub blocking_threads: usize,
    /// How many messages a receiver takes in one transaction.
    pub receive_batch: crate::pipeline::batch_size::ReceiveBatching,
    pub routes: Arc<Routes>,
    pub handlers: Arc<HandlerRegistry>,
    /// Add the computed `BodyString` column to queue tables (SQL Server), in this form.
    pub body_string_column: Option<crate::BodyStringColumn>,
    pub retry: RetryPolicy,
    pub handler_timeout: Duration,
    pub purge_interval: Duration,
    /// How often queue tables are checked for dead rows (PostgreSQL); zero: never.
    pub table_maintenance_interval: Duration,
    pub purge_batch_size: i64,
    pub critical_error_after: Duration,
    pub on_critical_error: Option<CriticalErrorCallback>,
    pub auto_delete_on_idle: Duration,
    pub request_timeout: Duration,
    /// Sends may create the queue they name.
    pub create_queues_on_send: bool,
    /// The application's concurrent sends share commits.
    pub shared_commits: bool,
    /// NServiceBus's subscription table, when subscriptions are shared with it.
    pub nservicebus_subscriptions: Option<crate::names::QueueName>,
    /// How long one database call may take.
    pub database_timeout: Duration,
    pub layout: StorageLayout,
    /// The message types handled under a lease.
    pub leases: crate::pipeline::lease::Leases,
    /// Some handlers are sagas: `NimbusSagas` belongs to the schema.
    pub sagas: bool,
    /// The recurring messages the endpoint declares, checked by `build()`.
    pub schedules: Vec<crate::pipeline::schedule::DeclaredSchedule>,
    /// How long the inbox remembers a handled message id; `None`: no inbox.
    pub inbox: Option<Duration>,
    /// The limits of handlers at once and messages per period, per message type.
    pub limits: crate::pipeline::limits::Limits,
    /// The input queue keeps ordered groups ([`crate::BusBuilder::ordered_groups`]).
    pub ordered_groups: bool,
    /// The input queue keeps priorities ([`crate::BusBuilder::priorities`]).
    pub priorities: bool,
    /// How long a send's deduplication key is remembered ([`crate::Bus::send_deduplicated`]).
    pub deduplication_window: Duration,
    /// How often the bus refreshes its row in `NimbusInstances`.
    pub instance_heartbeat: Duration,
    /// Other live processes may use this bus's instance name (see
    /// `BusBuilder::share_instance_name`).
    pub share_instance_name: bool,
    /// How long dead letters are kept; `None`: until someone deletes them.
    pub dead_letter_retention: Option<Duration>,
    /// How often a receiving bus writes its monitoring report; `None`: never.
    pub monitoring_interval: Option<Duration>,
    /// How long monitoring reports are kept.
    pub monitoring_retention: Duration,
    /// How long a pooled connection nobody takes stays open.
    pub connection_idle_timeout: Duration,
    /// The most connections the process opens to the database (`None`: the default).
    pub connection_limit: Option<usize>,
    /// How long completed saga instances are kept for late messages.
    pub completed_sagas_kept: Duration,
}

/// Called once when the database has been failing for longer than
/// [`BusBuilder::critical_error_after`]; called again only after it recovered and failed anew.
pub type CriticalErrorCallback = Arc<dyn Fn(&NimbusError) + Send + Sync>;

impl EndpointConfig {
    /// `auto_delete_on_idle` in whole seconds, as the SQL takes it.
    pub fn idle_seconds(&self) -> i64 {
        i64::try_from(self.auto_delete_on_idle.as_secs()).unwrap_or(i64::MAX)
    }

    /// Connections the endpoint needs: one per receiver, one for peeking, one for sends from
    /// outside handlers.
    pub fn pool_size(&self) -> usize {
        self.concurrency + 2
    }

    /// What the endpoint's transport is built from.
    pub fn transport_settings(&self) -> TransportSettings {
        TransportSettings {
            database: self.database.clone(),
            schema: self.schema.clone(),
            auto_create: self.auto_create_schema,
            create_on_send: self.create_queues_on_send,
            idle_seconds: self.idle_seconds(),
            layout: self.layout,
            message_ids: self.identity.message_ids,
            body_string: self.body_string_column,
            pool_size: self.pool_size(),
            connection_limit: self.connection_limit,
            deadlines: crate::driver::Deadlines {
                connect: self.database.connect_timeout(),
                statement: self.database_timeout,
            },
            leases: !self.leases.is_empty(),
            sagas: self.sagas,
            schedules: !self.schedules.is_empty(),
            inbox: self.inbox.is_some(),
            limits: !self.limits.is_empty(),
            bodies: self.identity.claim_check.threshold().is_some(),
            stores: self.identity.claim_check.stores().clone(),
            nservicebus_subscriptions: self.nservicebus_subscriptions.clone(),
        }
    }
}
