//! The bus: an endpoint that has been configured ([`Endpoint`]) and started ([`Bus`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use crate::actors::{
    declare_schedules, delayed_delivery, heartbeat, idle_connections, idle_sweep,
    instance_heartbeat, mark_stopped, monitoring_reporter, pause_watch, read_pauses, register,
    registration, table_maintenance, DeadLetterer, Drain, QueueSupervisor, Scheduler, Shutdown,
};
use crate::endpoint::shared_commits::SharedCommits;
use crate::envelope::{
    build_outgoing, build_outgoing_with, build_request, Destination, Intent, SendOptions,
};
use crate::error::{NimbusError, Result};
use crate::message::{Command, Event, Message};
use crate::names::QueueName;
use crate::pipeline::config::EndpointConfig;
use crate::pipeline::dispatch::Dispatcher;
use crate::pipeline::handler::SubscriptionMode;
use crate::pipeline::metrics::{Counters, Metrics};
use crate::pipeline::EndpointState;
use crate::telemetry;
use tracing::Instrument;

/// An endpoint whose configuration has been checked; [`Endpoint::start`] connects and starts it.
pub struct Endpoint {
    config: EndpointConfig,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("application", &self.config.identity.application)
            .field("instance", &self.config.identity.instance)
            .field("database", &self.config.database.dialect().name)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// How many threads its handlers will run on.
    #[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
    pub(crate) fn handler_threads(&self) -> usize {
        self.config.handler_threads
    }

    pub(crate) fn new(config: EndpointConfig) -> Self {
        Endpoint { config }
    }

    /// The queue this endpoint receives from: its application name.
    pub fn input_queue(&self) -> &str {
        self.config.identity.input_queue.as_str()
    }

    /// This instance's name (see [`BusBuilder::names`](crate::BusBuilder::names)).
    pub fn instance_name(&self) -> &str {
        &self.config.identity.instance
    }

    /// Connects to the database, creates (or checks) the schema, checks the queue's indexes,
    /// writes the subscriptions of the events it handles, and starts its actors.
    ///
    /// Must run inside an actix `System` (`#[actix::main]`, `#[actix_rt::main]` or
    /// `System::new().block_on`). An endpoint without handlers is send-only: it starts no
    /// receivers.
    pub async fn start(self) -> Result<Bus> {
        if actix::System::try_current().is_none() {
            return Err(NimbusError::NotRunning(
                "no actix System is running on this thread: start the bus inside \
                 #[actix_rt::main] (or actix::System::new().block_on), or, from a plain tokio \
                 program (axum, a #[tokio::main]), with Endpoint::start_in_background()"
                    .into(),
            ));
        }
        crate::pipeline::metrics::describe();
        crate::pipeline::panic_output::install_hook();
        let config = self.config;
        let transport = crate::transport::connect(config.transport_settings()).await?;
        let identity = config.identity.clone();
        let mut queues: Vec<QueueName> = Vec::new();
        if config.handlers.has_competing() {
            queues.push(identity.input_queue.clone());
        }
        if let Some(instance_queue) = &identity.instance_queue {
            queues.push(instance_queue.clone());
        }
        let receiving = !queues.is_empty();
        if config.auto_create_schema {
            transport.create_schema(&queues).await?;
        } else {
            transport.verify_schema(&queues).await?;
        }
        for queue in &queues {
            // Every receiver of a table that keeps groups receives by group, whether or not its
            // own code asked for them: one that did not would break the order.
            use crate::transport::Wanted;
            let wanted = |asked: bool| match asked && queue == &identity.input_queue {
                true if config.auto_create_schema => Wanted::Create,
                true => Wanted::Require,
                false => Wanted::Detect,
            };
            let kept = transport
                .ordered_groups(queue, wanted(config.ordered_groups))
                .await?;
            let prioritized = transport
                .priorities(queue, wanted(config.priorities))
                .await?;
            if prioritized {
                tracing::debug!(queue = %queue, "the queue keeps priorities: receives take the highest first");
            }
            if kept && !config.leases.is_empty() {
                return Err(NimbusError::config(
                    format!(
                        "queue {:?} keeps ordered groups, and this endpoint handles some messages \
                         under a lease, which would break their order",
                        queue.as_str()
                    ),
                    "remove the .lease::<..>(..) settings from endpoints that receive from a \
                     queue with ordered groups",
                ));
            }
        }
        // The slots of the limits on whole message types, before any message of theirs comes:
        // otherwise the first ones would wait while the slots are added.
        for queue in &queues {
            for (scope, slots) in config.limits.type_scopes(queue) {
                transport.add_limit_slots(&scope, slots).await?;
            }
        }
        let mut warnings = Vec::new();
        for queue in &queues {
            // Advice, not a precondition: a check that cannot run (a login that may not read
            // the catalog, a server whose catalog differs) is a warning, as in NServiceBus.
            let found = match transport.index_problems(queue).await {
                Ok(problems) => problems
                    .iter()
                    .map(|p| p.warning(queue.as_str(), transport.name()))
                    .collect(),
                Err(e) => vec![format!(
                    "the indexes of queue {:?} on {} could not be checked: {e}",
                    queue.as_str(),
                    transport.name()
                )],
            };
            for warning in found {
                tracing::warn!("{warning}");
                warnings.push(warning);
            }
        }
        match transport.stays_on_citus_coordinator().await {
            Ok(false) => {}
            Ok(true) => {
                let warning = citus_placement_warning(config.schema.as_str());
                tracing::warn!("{warning}");
                warnings.push(warning);
            }
            Err(e) => {
                let warning = format!(
                    "where this schema's tables are placed on the Citus cluster could not be \
                     checked: {e}"
                );
                tracing::warn!("{warning}");
                warnings.push(warning);
            }
        }
        if config.handlers.has_competing() {
            // The input queue outlives this process (commands wait for the application to come
            // back): recorded so that sends to it are accepted, where no table says it exists.
            transport
                .register_queues(std::slice::from_ref(&identity.input_queue))
                .await?;
        }
        transport.prepare_nservicebus_subscriptions().await?;
        let subscriptions = subscriptions_of(&config);
        for (topic, queue) in &subscriptions {
            transport.subscribe(topic, queue).await?;
            if queue == &identity.input_queue {
                // NServiceBus publishers know endpoints, not instances: competing subscriptions
                // only.
                transport
                    .subscribe_nservicebus(topic, &identity.application, queue)
                    .await?;
            }
        }
        for (type_name, mode) in config.handlers.handled_types() {
            let queue = match mode {
                SubscriptionMode::Competing => Some(&identity.input_queue),
                SubscriptionMode::Multicast => identity.instance_queue.as_ref(),
            };
            if let Some(queue) = queue {
                crate::pipeline::metrics::announce(queue.as_str(), type_name);
            }
        }
        let counters = Arc::new(Counters {
            input_queue: identity.input_queue.as_str().to_string(),
            ..Counters::default()
        });
        let dead_letterer = DeadLetterer.start().recipient();
        // Other processes' writes wake this one's receivers, and its writes wake theirs.
        transport.start_wakeups(config.idle_poll);
        let database_target: Arc<str> = transport.target().into();
        // Handler actors on handler threads of their own (or the bus's), blocking handlers on a
        // pool; receivers stay on this thread, beside their connections.
        let dispatcher = if receiving {
            Dispatcher::start(
                config.handlers.all(),
                config.handler_threads,
                config.blocking_threads,
            )
        } else {
            Dispatcher::start(&[], 1, 1)
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(config.concurrency));
        let (stopping, stop_signal) = crate::transport::StopSignal::new();
        let config_inbox = config.inbox.is_some();
        let endpoint = Arc::new(EndpointState {
            dispatcher,
            stopping,
            stop_signal,
            slots,
            config,
            transport,
            counters,
            health: Default::default(),
            dead_letterer,
            pending_requests: Default::default(),
            own_statements: Default::default(),
            deduplicates: config_inbox.into(),
            holds_due: Default::default(),
            database_target,
        });
        let mut maintenance: Vec<Recipient<Shutdown>> =
            vec![idle_connections(endpoint.clone()).start().recipient()];
        if receiving {
            // A queue paused before this instance started is not received from at all.
            if !read_pauses(&endpoint, &queues).await? {
                tracing::warn!(schema = %endpoint.config.schema.as_str(), "NimbusPausedQueues does not exist (a schema made before pausing, with auto-create off): this endpoint's queues cannot be paused until it is created (nimbus schema apply)");
            }
            maintenance.push(
                pause_watch(endpoint.clone(), queues.clone())
                    .start()
                    .recipient(),
            );
            maintenance.push(delayed_delivery(endpoint.clone()).start().recipient());
            maintenance.push(idle_sweep(endpoint.clone()).start().recipient());
            if !endpoint.config.table_maintenance_interval.is_zero() {
                maintenance.push(
                    table_maintenance(endpoint.clone(), queues.clone())
                        .start()
                        .recipient(),
                );
            }
        }
        // Also where the code declares none: those an earlier version declared stop firing.
        if let Err(e) = declare_schedules(&endpoint).await {
            for actor in maintenance {
                let _ = actor.send(Shutdown).await;
            }
            endpoint.dispatcher.stop();
            return Err(e);
        }
        if !endpoint.config.schedules.is_empty() {
            maintenance.push(Scheduler::new(endpoint.clone()).start().recipient());
        }
        if !subscriptions.is_empty() {
            maintenance.push(
                heartbeat(endpoint.clone(), subscriptions.clone())
                    .start()
                    .recipient(),
            );
        }
        // Last of what can fail: a start refused here has taken no message yet.
        let queue_names: Vec<String> = queues.iter().map(|q| q.as_str().to_string()).collect();
        let registration = Arc::new(registration(&endpoint, &queue_names));
        let run_id = match register(&endpoint, &registration).await {
            Ok(true) => {
                maintenance.push(
                    instance_heartbeat(endpoint.clone(), registration.clone())
                        .start()
                        .recipient(),
                );
                Some(registration.run_id)
            }
            Ok(false) => None,
            Err(e) => {
                for actor in maintenance {
                    let _ = actor.send(Shutdown).await;
                }
                endpoint.dispatcher.stop();
                return Err(e);
            }
        };
        if receiving {
            let reporter =
                monitoring_reporter(endpoint.clone(), registration.run_id, queue_names.clone());
            if let Some(reporter) = reporter {
                maintenance.push(reporter.start().recipient());
            }
        }
        let supervisors = queues
            .into_iter()
            .map(|queue| QueueSupervisor::new(endpoint.clone(), queue).start())
            .collect();
        tracing::info!(
            application = %endpoint.config.identity.application,
            instance = %endpoint.config.identity.instance,
            database = endpoint.transport.name(),
            "bus started"
        );
        Ok(Bus {
            inner: Arc::new(BusInner {
                shared_commits: endpoint.config.shared_commits.then(|| {
                    SharedCommits::new(endpoint.transport.clone(), endpoint.counters.clone())
                }),
                endpoint,
                subscriptions,
                supervisors: Mutex::new(supervisors),
                maintenance: Mutex::new(maintenance),
                warnings,
                run_id,
                stopped: AtomicBool::new(false),
            }),
        })
    }
}

/// The (topic, queue) subscriptions an endpoint holds and heartbeats: its competing events on the
/// application queue, its multicast events and its instance-queue registration on the instance
/// queue.
fn subscriptions_of(config: &EndpointConfig) -> Vec<(String, QueueName)> {
    let identity = &config.identity;
    let mut subscriptions = Vec::new();
    for (topic, mode) in config.handlers.subscriptions() {
        let queue = match mode {
            SubscriptionMode::Competing => Some(&identity.input_queue),
            SubscriptionMode::Multicast => identity.instance_queue.as_ref(),
        };
        if let Some(queue) = queue {
            subscriptions.push((topic.to_string(), queue.clone()));
        }
    }
    if let Some(instance_queue) = &identity.instance_queue {
        subscriptions.push((
            crate::subscriptions::INSTANCE_QUEUE_TOPIC.to_string(),
            instance_queue.clone(),
        ));
    }
    subscriptions
}

/// A started endpoint: send and publish from anywhere, stop when done. Cheap to clone.
///
/// ```no_run
/// use nimbus::{Bus, Command};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Command)]
/// struct PlaceOrder { order_id: u32 }
///
/// #[actix_rt::main]
/// async fn main() -> Result<(), nimbus::NimbusError> {
///     let bus = Bus::builder()
///         .names("Shop", "shop-1")
///         .route::<PlaceOrder>("Sales")
///         .build()?
///         .start()
///         .await?;
///     bus.send(PlaceOrder { order_id: 1 }).await?;
///     bus.stop().await
/// }
/// ```
#[derive(Clone)]
pub struct Bus {
    inner: Arc<BusInner>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let identity = &self.inner.endpoint.config.identity;
        f.debug_struct("Bus")
            .field("application", &identity.application)
            .field("instance", &identity.instance)
            .field("database", &self.inner.endpoint.transport.name())
            .field(
                "stopped",
                &self
                    .inner
                    .stopped
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

struct BusInner {
    endpoint: Arc<EndpointState>,
    /// Where the application's sends go: shared commits, unless the builder turned them off.
    shared_commits: Option<SharedCommits>,
    /// The (topic, queue) subscriptions this instance holds and heartbeats.
    subscriptions: Vec<(String, QueueName)>,
    supervisors: Mutex<Vec<Addr<QueueSupervisor>>>,
    /// The timer-driven actors: delayed delivery, heartbeat, idle sweep.
    maintenance: Mutex<Vec<Recipient<Shutdown>>>,
    /// The warnings of the start-up checks (see [`Bus::warnings`]).
    warnings: Vec<String>,
    /// This start's row in `NimbusInstances`, where it is registered.
    run_id: Option<uuid::Uuid>,
    stopped: AtomicBool,
}

impl Bus {
    /// Sends a command to the queue routed for its type (`route::<M>("Queue")` on the builder).
    /// Returns once the message is committed to the database.
    pub async fn send<M: Command>(&self, message: M) -> Result<()> {
        let queue = self.inner.endpoint.config.routes.queue_for::<M>()?;
        self.write(&message, Intent::Send, Destination::Queue(queue))
            .await
    }

    /// Sends several commands in one transaction: all of them are committed, or none. Each goes
    /// to the queue routed for its type.
    pub async fn send_batch<M: Command>(
        &self,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<()> {
        self.ensure_running()?;
        let endpoint = &self.inner.endpoint;
        let queue = endpoint.config.routes.queue_for::<M>()?;
        let messages: Vec<M> = messages.into_iter().collect();
        let destination = Destination::Queue(queue);
        let span = telemetry::send_span(Intent::Send, &destination, M::TYPE_NAME, messages.len());
        let build = || {
            messages
                .iter()
                .map(|message| {
                    build_outgoing(
                        message,
                        Intent::Send,
                        destination.clone(),
                        &endpoint.config.identity,
                        None,
                    )
                })
                .collect::<Result<Vec<_>>>()
        };
        send_traced(&self.inner, span, true, build).await
    }

    /// Sends a message with options: a delay or due time, a time to be received, a destination
    /// (otherwise the route of its type). Returns once the message is committed.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) -> Result<(), nimbus::NimbusError> {
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct Remind;
    /// use std::time::Duration;
    /// use nimbus::SendOptions;
    /// bus.send_with(Remind, SendOptions::new().to("Reminders").delay(Duration::from_secs(60)))
    ///     .await
    /// # }
    /// ```
    pub async fn send_with<M: Message>(&self, message: M, options: SendOptions) -> Result<()> {
        self.ensure_running()?;
        let endpoint = &self.inner.endpoint;
        let queue = match options.destination() {
            Some(queue) => QueueName::parse(queue)?,
            None => endpoint.config.routes.queue_for_name(M::TYPE_NAME)?,
        };
        let destination = Destination::Queue(queue);
        let span = telemetry::send_span(Intent::Send, &destination, M::TYPE_NAME, 1);
        let build = || {
            build_outgoing_with(
                &message,
                Intent::Send,
                destination.clone(),
                &endpoint.config.identity,
                None,
                &options,
            )
            .map(|out| vec![out])
        };
        send_traced(&self.inner, span, !options.own_transaction_asked(), build).await
    }

    /// Sends a message that is delivered later (`options` must say when: a
    /// [`delay`](SendOptions::delay) or a [`due time`](SendOptions::deliver_at)) and returns its
    /// message id, which [`cancel_delayed`](Self::cancel_delayed) and
    /// [`reschedule_delayed`](Self::reschedule_delayed) take, from this process or any other.
    /// Returns once the message is committed.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) -> Result<(), nimbus::NimbusError> {
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct Remind;
    /// use std::time::Duration;
    /// use nimbus::{Due, SendOptions};
    /// let id = bus
    ///     .send_delayed(Remind, SendOptions::new().to("Reminders").delay(Duration::from_secs(3600)))
    ///     .await?;
    /// bus.reschedule_delayed(id, Due::In(Duration::from_secs(7200))).await?;
    /// if !bus.cancel_delayed(id).await? {
    ///     println!("too late: the reminder was delivered already");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn send_delayed<M: Message>(
        &self,
        message: M,
        options: SendOptions,
    ) -> Result<uuid::Uuid> {
        if !options.delays() {
            return Err(NimbusError::config(
                "send_delayed was given no delay and no due time",
                "say when with SendOptions::delay or SendOptions::deliver_at, or send at once \
                 with send_with",
            ));
        }
        let id = options
            .chosen_message_id()
            .unwrap_or_else(|| self.inner.endpoint.config.identity.message_ids.next());
        self.send_with(message, options.message_id(id)).await?;
        Ok(id)
    }

    /// Sends a message unless a send with the same deduplication `key` to the same queue was
    /// made within the [deduplication window](crate::BusBuilder::deduplication_window) (a day
    /// by default), by any process on the database: `true` when it was sent, `false` when it
    /// was dropped as a duplicate (counted in `nimbus_sends_deduplicated_total` and logged at
    /// INFO). The key is claimed in `NimbusDeduplication` in the transaction that writes the
    /// message, so two sends racing with one key write one message. `options` as for
    /// [`send_with`](Self::send_with): a destination, a delay, a message id. A key is 1 to 255
    /// characters.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) -> Result<(), nimbus::NimbusError> {
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct ChargeCard { order: u64 }
    /// use nimbus::SendOptions;
    /// // A client retrying its request sends the same key: the card is charged once.
    /// let sent = bus
    ///     .send_deduplicated("charge-order-7", ChargeCard { order: 7 }, SendOptions::new())
    ///     .await?;
    /// if !sent {
    ///     println!("order 7 was charged already");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn send_deduplicated<M: Message>(
        &self,
        key: &str,
        message: M,
        options: SendOptions,
    ) -> Result<bool> {
        self.ensure_running()?;
        let longest = crate::transport::MAX_DEDUPLICATION_KEY_CHARS;
        if key.is_empty() || key.chars().count() > longest {
            return Err(NimbusError::config(
                format!(
                    "the deduplication key {:?} is empty or over {longest} characters",
                    key.chars().take(40).collect::<String>()
                ),
                format!(
                    "use a key of 1 to {longest} characters, e.g. the id of the request it answers"
                ),
            ));
        }
        let endpoint = &self.inner.endpoint;
        let queue = match options.destination() {
            Some(queue) => QueueName::parse(queue)?,
            None => endpoint.config.routes.queue_for_name(M::TYPE_NAME)?,
        };
        refuse_inside_own_handler(endpoint)?;
        let destination = Destination::Queue(queue.clone());
        let span = telemetry::send_span(Intent::Send, &destination, M::TYPE_NAME, 1);
        let outgoing = span
            .in_scope(|| {
                build_outgoing_with(
                    &message,
                    Intent::Send,
                    destination,
                    &endpoint.config.identity,
                    None,
                    &options,
                )
            })
            .inspect_err(|e| telemetry::record_send_error(&span, e))?;
        telemetry::record_sent(&span, std::slice::from_ref(&outgoing));
        crate::pipeline::metrics::count_send(&endpoint.counters);
        endpoint
            .deduplicates
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let scope = crate::transport::deduplication_scope("send", &queue);
        let sent = endpoint
            .transport
            .send_deduplicated(
                &scope,
                key,
                endpoint.config.deduplication_window,
                std::slice::from_ref(&outgoing),
            )
            .instrument(span.clone())
            .await
            .inspect_err(|e| telemetry::record_send_error(&span, e))?;
        if !sent {
            crate::pipeline::metrics::count_send_deduplicated(queue.as_str());
            tracing::info!(
                queue = %queue,
                key,
                window = ?endpoint.config.deduplication_window,
                "send dropped: a send with this deduplication key reached the queue within the window"
            );
        }
        Ok(sent)
    }

    /// Cancels the delayed message `message_id` (as [`send_delayed`](Self::send_delayed)
    /// returned it) while it is pending: `true` when it was, and it will never be delivered;
    /// `false` when it was delivered already (or no pending delayed message has that id). A
    /// delivery at the same moment gives one of the two, never both. Any process on the
    /// database can cancel it.
    pub async fn cancel_delayed(&self, message_id: uuid::Uuid) -> Result<bool> {
        self.ensure_running()?;
        self.inner
            .endpoint
            .transport
            .cancel_delayed(message_id)
            .await
    }

    /// Moves the due time of the delayed message `message_id` while it is pending: `true` when
    /// it was; `false` when it was delivered already (or no pending delayed message has that
    /// id). `Due::In` counts from now, by the database's clock.
    pub async fn reschedule_delayed(
        &self,
        message_id: uuid::Uuid,
        due: crate::Due,
    ) -> Result<bool> {
        self.ensure_running()?;
        self.inner
            .endpoint
            .transport
            .reschedule_delayed(message_id, due)
            .await
    }

    /// Moves the dead letter `message_id` (its `NimbusDeadLetters.MessageId`) back to the queue it
    /// failed in, in one transaction, with its original headers and body and a fresh retry
    /// budget. Returns `false` if there is no such dead letter.
    pub async fn replay_dead_letter(&self, message_id: uuid::Uuid) -> Result<bool> {
        self.ensure_running()?;
        self.inner
            .endpoint
            .transport
            .replay_dead_letter(message_id, crate::dead_letter::replay_message)
            .await
    }

    /// Sends `request` (to the queue routed for its type) and waits for the typed reply, for at
    /// most the builder's `request_timeout`. The endpoint needs its instance queue
    /// ([`BusBuilder::enable_requests`](crate::BusBuilder::enable_requests)): the reply travels
    /// there with `NServiceBus.ReplyToAddress` and `NServiceBus.CorrelationId`.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) -> Result<(), nimbus::NimbusError> {
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)] struct GetPrice { sku: String }
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Message)] struct Price { cents: u64 }
    /// let price: Price = bus.request(GetPrice { sku: "duck".into() }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn request<R: Message, Resp: Message>(&self, request: R) -> Result<Resp> {
        let timeout = self.inner.endpoint.config.request_timeout;
        self.request_with(request, SendOptions::new(), timeout)
            .await
    }

    /// [`request`](Self::request) with send options (a destination, a time to be received) and
    /// its own timeout. On timeout the error is [`NimbusError::Timeout`]; a reply arriving later
    /// goes to the dead letters, since nobody waits for it.
    pub async fn request_with<R: Message, Resp: Message>(
        &self,
        request: R,
        options: SendOptions,
        timeout: std::time::Duration,
    ) -> Result<Resp> {
        self.ensure_running()?;
        let endpoint = &self.inner.endpoint;
        let Some(reply_to) = endpoint.config.identity.instance_queue.clone() else {
            return Err(NimbusError::config(
                "this endpoint has no instance queue to receive replies",
                "call .enable_requests() on the bus builder",
            ));
        };
        let queue = match options.destination() {
            Some(queue) => QueueName::parse(queue)?,
            None => endpoint.config.routes.queue_for_name(R::TYPE_NAME)?,
        };
        let destination = Destination::Queue(queue);
        let span = telemetry::send_span(Intent::Send, &destination, R::TYPE_NAME, 1);
        let outgoing = span
            .in_scope(|| {
                build_request(
                    &request,
                    destination.clone(),
                    &endpoint.config.identity,
                    &reply_to,
                    &options,
                )
            })
            .inspect_err(|e| telemetry::record_send_error(&span, e))?;
        let correlation_id = outgoing.id.to_string();
        let (tx, rx) = tokio::sync::oneshot::channel();
        endpoint.pending_requests.insert(correlation_id.clone(), tx);
        let waited = async {
            let shared = !options.own_transaction_asked();
            send_traced(&self.inner, span, shared, || Ok(vec![outgoing])).await?;
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(_)) => Err(NimbusError::NotRunning(
                    "the bus stopped before the reply came".into(),
                )),
                Err(_) => Err(NimbusError::Timeout {
                    operation: format!(
                        "waiting for the reply ({}) to {}",
                        Resp::TYPE_NAME,
                        R::TYPE_NAME
                    ),
                    timeout,
                }),
            }
        }
        .await;
        endpoint.pending_requests.remove(&correlation_id);
        let reply = waited?;
        if reply.type_name != Resp::TYPE_NAME {
            return Err(NimbusError::UnexpectedReply {
                expected: Resp::TYPE_NAME,
                got: reply.type_name,
            });
        }
        serde_json::from_slice(&reply.body).map_err(|source| NimbusError::Deserialize {
            type_name: Resp::TYPE_NAME,
            source,
        })
    }

    /// Runs this instance's heartbeat now (the heartbeat actor runs it every heartbeat
    /// interval): refreshes its subscriptions, writes again those an idle sweep removed, and
    /// makes again the queue of a live subscription whose table is gone.
    pub async fn heartbeat_now(&self) -> Result<()> {
        crate::actors::beat(&self.inner.endpoint, &self.inner.subscriptions).await
    }

    /// Deletes the subscriptions whose heartbeat lapsed more than `auto_delete_on_idle` ago (by
    /// database time) and drops the instance queues left without subscriptions, with the
    /// messages still in them. The sweep actor of every receiving endpoint does this on its own;
    /// call it for maintenance. Safe while other instances sweep.
    pub async fn sweep_idle_subscriptions(&self) -> Result<crate::transport::SweepReport> {
        let endpoint = &self.inner.endpoint;
        endpoint
            .transport
            .sweep_idle(endpoint.config.idle_seconds())
            .await
    }

    /// The framework's own SQL, driven bare over this bus's pool, for the benchmark (the `bench`
    /// feature; not for applications). Its rows carry the headers this bus would write for
    /// `sample` (serialized once), so both sides of a comparison write the same bytes.
    #[cfg(feature = "bench")]
    pub fn bare_sql<M: Message>(&self, sample: &M) -> Result<crate::bench::BareSql> {
        let endpoint = &self.inner.endpoint;
        let destination = Destination::Queue(endpoint.config.identity.input_queue.clone());
        let row = build_outgoing(
            sample,
            Intent::Send,
            destination,
            &endpoint.config.identity,
            None,
        )?;
        Ok(crate::bench::BareSql::new(
            endpoint.transport.clone(),
            row.headers_json,
        ))
    }

    /// What a liveness or readiness probe needs: whether the bus runs (`live`: started, not
    /// stopped), whether it can work now (`ready`: live, the database answers — checked now,
    /// within `database_timeout` and at most 5 s — and no queue has been failing longer than
    /// `critical_error_after`), and each received queue's state (paused, when the database last
    /// answered it, since when it fails and why). Never fails: a database that does not answer
    /// is part of the answer. With the `axum` feature, `Bus::health_routes` serves it.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) {
    /// let health = bus.health().await;
    /// if !health.ready {
    ///     eprintln!("not ready: {}", health.reasons.join("; "));
    /// }
    /// # }
    /// ```
    pub async fn health(&self) -> crate::Health {
        let endpoint = &self.inner.endpoint;
        let identity = &endpoint.config.identity;
        let live = !self.inner.stopped.load(Ordering::Acquire);
        let within = endpoint
            .config
            .database_timeout
            .min(std::time::Duration::from_secs(5));
        let database_error = match endpoint.transport.ping(within).await {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        };
        let paused = endpoint
            .counters
            .paused_queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut queues = endpoint.health.queues(&paused);
        let mut reasons = Vec::new();
        if !live {
            reasons.push("the bus was stopped".to_string());
            for queue in &mut queues {
                queue.receiving = false;
            }
        }
        if let Some(error) = &database_error {
            reasons.push(format!("the database does not answer: {error}"));
        }
        for queue in queues.iter().filter(|q| q.critical) {
            reasons.push(format!(
                "queue {:?} has been failing for {:.0} s, longer than critical_error_after",
                queue.queue,
                queue.failing_for_seconds.unwrap_or_default()
            ));
        }
        crate::Health {
            live,
            ready: reasons.is_empty(),
            application: identity.application.clone(),
            instance: identity.instance.clone(),
            database_reachable: database_error.is_none(),
            database_error,
            queues,
            reasons,
        }
    }

    /// The endpoint's counters: handled, failed, retried, dead-lettered, expired, queue depth.
    pub fn metrics(&self) -> Metrics {
        self.inner.endpoint.counters.snapshot()
    }

    /// Sends a message to `queue`: a queue of the bus's schema, or an address of a queue in
    /// another schema (`Invoices@[billing]`, see [`QueueName::parse`](crate::QueueName::parse)),
    /// which must exist. Returns once the message is committed to the database.
    pub async fn send_to<M: Message>(&self, queue: &str, message: M) -> Result<()> {
        let queue = QueueName::parse(queue)?;
        self.write(&message, Intent::Send, Destination::Queue(queue))
            .await
    }

    /// Publishes an event: one copy to every queue subscribed to its type, in one transaction.
    pub async fn publish<M: Event>(&self, message: M) -> Result<()> {
        self.write(&message, Intent::Publish, Destination::Topic(M::TYPE_NAME))
            .await
    }

    async fn write<M: Message>(
        &self,
        message: &M,
        intent: Intent,
        destination: Destination,
    ) -> Result<()> {
        self.ensure_running()?;
        let endpoint = &self.inner.endpoint;
        let span = telemetry::send_span(intent, &destination, M::TYPE_NAME, 1);
        let build = || {
            build_outgoing(
                message,
                intent,
                destination,
                &endpoint.config.identity,
                None,
            )
            .map(|out| vec![out])
        };
        send_traced(&self.inner, span, true, build).await
    }

    /// Sends and publishes that commit with a transaction the application opened on its own
    /// connection (see [`TransactionalSends`](crate::TransactionalSends)).
    pub fn in_transaction(&self) -> crate::TransactionalSends<'_> {
        crate::endpoint::transactional::TransactionalSends::new(&self.inner.endpoint, self)
    }

    pub(crate) fn ensure_running(&self) -> Result<()> {
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err(NimbusError::NotRunning("the bus was stopped".into()));
        }
        Ok(())
    }

    /// Warnings found at start, such as missing or wrongly defined indexes, each quoting the
    /// statements that fix it (each also logged with `tracing`).
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The queue this endpoint receives from.
    pub fn input_queue(&self) -> &str {
        self.inner.endpoint.config.identity.input_queue.as_str()
    }

    /// Stops receiving, waits for every message being handled to commit or roll back, and stops
    /// the endpoint's actors. Nothing is lost: a message is either handled and committed, or still
    /// in its queue. Calling it again does nothing.
    pub async fn stop(&self) -> Result<()> {
        if self.inner.stopped.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // First of all: receives still waiting for a connection take nothing now.
        self.inner.endpoint.stopping.send_replace(true);
        let supervisors = std::mem::take(
            &mut *self
                .inner
                .supervisors
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for supervisor in supervisors {
            // A supervisor that is already gone has nothing in flight.
            let _ = supervisor.send(Drain).await;
        }
        let maintenance = std::mem::take(
            &mut *self
                .inner
                .maintenance
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for actor in maintenance {
            // Work in flight is one transaction: stopping it rolls it back, losing nothing.
            let _ = actor.send(Shutdown).await;
        }
        // Every receive has finished (the supervisors drained): no handler runs any more.
        self.inner.endpoint.dispatcher.stop();
        if let Some(run_id) = self.inner.run_id {
            mark_stopped(&self.inner.endpoint, run_id).await;
        }
        // What this bus wrote last still wakes other processes' receivers.
        self.inner.endpoint.transport.flush_wakeups().await;
        tracing::info!(application = %self.inner.endpoint.config.identity.application, "bus stopped");
        Ok(())
    }
}

/// Builds messages inside `span` (so they carry its trace context), then writes them in it,
/// recording their ids and any failure on the span.
async fn send_traced(
    bus: &BusInner,
    span: tracing::Span,
    shared: bool,
    build: impl FnOnce() -> Result<Vec<crate::envelope::OutgoingMessage>>,
) -> Result<()> {
    let outgoing = span
        .in_scope(build)
        .inspect_err(|e| telemetry::record_send_error(&span, e))?;
    telemetry::record_sent(&span, &outgoing);
    send_from_application(bus, outgoing, shared)
        .instrument(span.clone())
        .await
        .inspect_err(|e| telemetry::record_send_error(&span, e))
}

/// Writes messages the application sends through the `Bus` (not through a handler's context):
/// in a commit shared with the bus's other sends of the moment unless `shared` is false or the
/// builder turned shared commits off. On a database with a single writer (SQLite), a `Bus` send
/// from inside a handler would wait for the lock the handler's own receive holds, until the
/// handler timed out: refuse it at once.
async fn send_from_application(
    bus: &BusInner,
    outgoing: Vec<crate::envelope::OutgoingMessage>,
    shared: bool,
) -> Result<()> {
    let endpoint = &bus.endpoint;
    crate::pipeline::metrics::count_send(&endpoint.counters);
    refuse_inside_own_handler(endpoint)?;
    match &bus.shared_commits {
        Some(shared_commits) if shared => shared_commits.send(outgoing).await,
        _ => {
            crate::pipeline::metrics::count_send_commit(&endpoint.counters);
            endpoint.transport.send(&outgoing).await
        }
    }
}

/// Refuses a `Bus` send made inside a handler on a database with a single writer (SQLite),
/// which would wait for the lock the handler's own receive holds until the handler timed out.
fn refuse_inside_own_handler(endpoint: &EndpointState) -> Result<()> {
    if endpoint.transport.single_writer()
        && crate::pipeline::inside_handler_on(endpoint.transport.target())
    {
        return Err(NimbusError::config(
            format!(
                "Bus::send/publish was called inside a handler on {}, whose one writer is the \
                 handler's own receive: it would wait for itself until the handler timed out",
                endpoint.transport.name()
            ),
            "send and publish through the handler's context (ctx.send, ctx.publish, ctx.reply): \
             they commit with the receive",
        ));
    }
    Ok(())
}

/// The start-up warning for a schema whose tables stay on a Citus coordinator: what it means and
/// the statements that distribute it (the name quoted as PostgreSQL reads it).
fn citus_placement_warning(schema: &str) -> String {
    let quoted = format!("\"{}\"", schema.replace('"', "\"\"")).replace('\'', "''");
    format!(
        "schema {schema:?} is on a Citus cluster with worker nodes but is not distributed: its \
         tables stay on the coordinator, which works but spreads no load over the workers. \
         Distribute it with SELECT citus_schema_distribute('{quoted}'), or create it \
         distributed (SET citus.enable_schema_based_sharding TO on; CREATE SCHEMA …) before the \
         endpoint's first start; see the guide's high-availability chapter (Nimbus on Citus)"
    )
}
