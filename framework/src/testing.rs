//! A test kit for the handlers of an application.
//!
//! * [`TestContext`]: call a handler directly with a context that needs no database, then
//!   assert what it sent, published and replied (typed), or which error it returned.
//! * `TestBus`: one endpoint on a temporary SQLite database (`TestBus::start`, with the
//!   `sqlite` feature) or a temporary schema of a PostgreSQL or SQL Server database the test
//!   names (`TestBus::start_on`), for end-to-end tests: start it, send, wait until handled, look
//!   at its queues and dead letters; the file or schema goes away when the test bus is dropped.
//!
//! ```
//! use nimbus::testing::TestContext;
//! use nimbus::{Command, Event, Handler, HandlerContext, HandlerError};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, PartialEq, Serialize, Deserialize, Command)]
//! struct PlaceOrder { order_id: u32, amount: u32 }
//! #[derive(Debug, PartialEq, Serialize, Deserialize, Event)]
//! struct OrderPlaced { order_id: u32 }
//! #[derive(Debug, PartialEq, Serialize, Deserialize, Command)]
//! struct ChargeCard { order_id: u32, amount: u32 }
//!
//! struct Sales;
//! impl Handler<PlaceOrder> for Sales {
//!     async fn handle(&self, m: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
//!         if m.amount == 0 {
//!             return Err(nimbus::Unrecoverable::new("an order of nothing").into());
//!         }
//!         ctx.send(ChargeCard { order_id: m.order_id, amount: m.amount })?;
//!         ctx.publish(OrderPlaced { order_id: m.order_id })?;
//!         Ok(())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut ctx = TestContext::new().route::<ChargeCard>("Billing");
//! Sales.handle(PlaceOrder { order_id: 7, amount: 30 }, ctx.context()).await.unwrap();
//! assert_eq!(ctx.sent_to::<ChargeCard>("Billing"), vec![ChargeCard { order_id: 7, amount: 30 }]);
//! assert_eq!(ctx.published::<OrderPlaced>(), vec![OrderPlaced { order_id: 7 }]);
//!
//! let mut ctx = TestContext::new().route::<ChargeCard>("Billing");
//! let error = Sales.handle(PlaceOrder { order_id: 8, amount: 0 }, ctx.context()).await.unwrap_err();
//! assert!(error.is::<nimbus::Unrecoverable>());
//! assert!(ctx.recorded().is_empty());
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use crate::envelope::{Causation, Delivery, Destination, EndpointIdentity, MessageIds};
use crate::headers::{self, Headers};
use crate::message::{Command, Message};
use crate::names::QueueName;
use crate::pipeline::handler::{HandlerContext, Routes};

/// The application name a [`TestContext`] sends as, unless [`TestContext::endpoint`] sets one.
pub const TEST_ENDPOINT: &str = "TestEndpoint";

/// What a handler did with a message it sent through its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// `ctx.send`, `ctx.send_to`, `ctx.send_with`.
    Send,
    /// `ctx.publish`.
    Publish,
    /// `ctx.reply`.
    Reply,
}

/// One message a handler sent, published or replied, as a [`TestContext`] recorded it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Recorded {
    /// Sent, published or replied.
    pub intent: Intent,
    /// The queue it goes to (for a send or reply), or the event's type name (for a publish).
    pub destination: String,
    /// Its type name on the wire (`NServiceBus.EnclosedMessageTypes`).
    pub type_name: String,
    /// Its body, as JSON.
    pub body: serde_json::Value,
    /// Every header it carries.
    pub headers: Headers,
    /// How long after the handler's commit it becomes visible ([`crate::SendOptions::delay`]).
    pub delay: Option<Duration>,
    /// When it becomes visible, if a time was given ([`crate::SendOptions::deliver_at`]).
    pub deliver_at: Option<chrono::NaiveDateTime>,
}

impl Recorded {
    /// The body as a `M`, when it is one (by type name and body).
    pub fn as_message<M: Message>(&self) -> Option<M> {
        (self.type_name == M::TYPE_NAME)
            .then(|| serde_json::from_value(self.body.clone()).ok())
            .flatten()
    }
}

/// A [`HandlerContext`] for calling a handler in a unit test, with no database: it records what
/// the handler sends, publishes and replies. The handler's own SQL (`ctx.postgres()` and the
/// others) returns an error here; test that with a `TestBus` or a database of your own.
pub struct TestContext {
    ctx: HandlerContext,
    routes: Vec<(&'static str, QueueName)>,
    endpoint: QueueName,
    database: Option<crate::DatabaseKind>,
}

impl Default for TestContext {
    fn default() -> Self {
        TestContext::new()
    }
}

impl std::fmt::Debug for TestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestContext")
            .field("message_id", &self.ctx.message_id())
            .field("recorded", &self.recorded())
            .finish_non_exhaustive()
    }
}

impl TestContext {
    /// A context for a message with a fresh id, received by [`TEST_ENDPOINT`], on its first
    /// attempt, with no routes.
    pub fn new() -> Self {
        Self::build(
            QueueName::constant(TEST_ENDPOINT),
            Vec::new(),
            Headers::new(),
            None,
        )
    }

    fn build(
        endpoint: QueueName,
        routes: Vec<(&'static str, QueueName)>,
        mut headers: Headers,
        database: Option<crate::DatabaseKind>,
    ) -> Self {
        let message_id = headers
            .entry(headers::MESSAGE_ID.to_string())
            .or_insert_with(|| uuid::Uuid::now_v7().to_string())
            .clone();
        let application = endpoint.as_str().to_string();
        let origin = Arc::new(EndpointIdentity {
            instance: format!("{application}-test"),
            application,
            input_queue: endpoint.clone(),
            instance_queue: None,
            fill_v1_columns: false,
            message_ids: MessageIds::TimeOrdered,
            schema: crate::names::SchemaName::constant("main"),
            address_form: crate::names::AddressForm::OwnSchemaOnly,
            reply_address: Default::default(),
            max_body_size: usize::MAX,
            codecs: Default::default(),
            // What a handler sends is recorded, not written: its bodies stay whole.
            claim_check: crate::ClaimCheck::off(),
        });
        let causation = Causation {
            conversation_id: headers.get(headers::CONVERSATION_ID).cloned(),
            correlation_id: headers.get(headers::CORRELATION_ID).cloned(),
            message_id,
        };
        let route_map = routes.iter().cloned().collect();
        TestContext {
            ctx: HandlerContext::for_test(
                origin,
                Arc::new(Routes::new(route_map)),
                headers,
                causation,
                database,
            ),
            routes,
            endpoint,
            database,
        }
    }

    /// Rebuilds the context with a change to its settings: the builder methods run before the
    /// handler, with nothing recorded yet.
    fn with(self, change: impl FnOnce(&mut Vec<(&'static str, QueueName)>, &mut Headers)) -> Self {
        let TestContext {
            ctx,
            mut routes,
            endpoint,
            database,
        } = self;
        let mut headers = ctx.into_parts().0.into_map();
        change(&mut routes, &mut headers);
        Self::build(endpoint, routes, headers, database)
    }

    /// The application the handler runs in (the origin of what it sends). An invalid name is
    /// ignored.
    pub fn endpoint(self, application: &str) -> Self {
        match QueueName::new(application) {
            Ok(endpoint) => {
                let TestContext {
                    ctx,
                    routes,
                    database,
                    ..
                } = self;
                let headers = ctx.into_parts().0.into_map();
                Self::build(endpoint, routes, headers, database)
            }
            Err(_) => self,
        }
    }

    /// Routes commands of type `M` to `queue`, as [`crate::BusBuilder::route`] does, for
    /// `ctx.send`. An invalid queue name is ignored here, so the handler's send fails as it
    /// would without the route.
    pub fn route<M: Command>(self, queue: &str) -> Self {
        match QueueName::parse(queue) {
            Ok(queue) => self.with(move |r, _| r.push((M::TYPE_NAME, queue))),
            Err(_) => self,
        }
    }

    /// What `ctx.database()` says in the handler (`None` unless set): for handlers that choose
    /// their SQL by database.
    pub fn database(self, database: crate::DatabaseKind) -> Self {
        let TestContext {
            ctx,
            routes,
            endpoint,
            ..
        } = self;
        let headers = ctx.into_parts().0.into_map();
        Self::build(endpoint, routes, headers, Some(database))
    }

    /// Sets a header of the incoming message.
    pub fn header(self, name: &str, value: &str) -> Self {
        let (name, value) = (name.to_string(), value.to_string());
        self.with(move |_, h| {
            h.insert(name, value);
        })
    }

    /// Sets the incoming message's id (`NServiceBus.MessageId`).
    pub fn message_id(self, id: &str) -> Self {
        self.header(headers::MESSAGE_ID, id)
    }

    /// Makes the incoming message a request from `queue`, so that `ctx.reply` works.
    pub fn reply_to(self, queue: &str) -> Self {
        self.header(headers::REPLY_TO_ADDRESS, queue)
    }

    /// Makes this the `n`th attempt at the message (1 is the first), as
    /// [`HandlerContext::attempt`] reports it.
    pub fn attempt(self, n: u32) -> Self {
        let failed = n.saturating_sub(1).to_string();
        self.header(crate::recoverability::FAILED_ATTEMPTS, &failed)
    }

    /// The context to pass to the handler.
    pub fn context(&mut self) -> &mut HandlerContext {
        &mut self.ctx
    }

    /// Everything the handler sent, published and replied, in order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.ctx
            .outgoing()
            .iter()
            .map(|out| {
                let headers: Headers = serde_json::from_str(&out.headers_json).unwrap_or_default();
                let intent = match headers.get(headers::MESSAGE_INTENT).map(String::as_str) {
                    Some("Publish") => Intent::Publish,
                    Some("Reply") => Intent::Reply,
                    _ => Intent::Send,
                };
                let (delay, deliver_at) = match out.delivery {
                    Delivery::Immediate => (None, None),
                    Delivery::AfterMs(ms) => {
                        (Some(Duration::from_millis(ms.max(0).unsigned_abs())), None)
                    }
                    Delivery::At(at) => (None, Some(at)),
                };
                Recorded {
                    intent,
                    destination: match &out.destination {
                        Destination::Queue(queue) => queue.as_str().to_string(),
                        Destination::Topic(topic) => topic.to_string(),
                    },
                    type_name: headers::enclosed_type(&headers)
                        .unwrap_or_default()
                        .to_string(),
                    body: serde_json::from_slice(&out.body).unwrap_or(serde_json::Value::Null),
                    headers,
                    delay,
                    deliver_at,
                }
            })
            .collect()
    }

    fn of<M: Message>(&self, intent: Intent, destination: Option<&str>) -> Vec<M> {
        self.recorded()
            .iter()
            .filter(|r| r.intent == intent)
            .filter(|r| destination.is_none_or(|d| r.destination == d))
            .filter_map(Recorded::as_message)
            .collect()
    }

    /// The messages of type `M` the handler sent (to any queue).
    pub fn sent<M: Message>(&self) -> Vec<M> {
        self.of(Intent::Send, None)
    }

    /// The messages of type `M` the handler sent to `queue`.
    pub fn sent_to<M: Message>(&self, queue: &str) -> Vec<M> {
        self.of(Intent::Send, Some(queue))
    }

    /// The events of type `M` the handler published.
    pub fn published<M: Message>(&self) -> Vec<M> {
        self.of(Intent::Publish, None)
    }

    /// The replies of type `M` the handler sent.
    pub fn replied<M: Message>(&self) -> Vec<M> {
        self.of(Intent::Reply, None)
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "sqlserver"))]
pub use test_bus::{TestBus, DEFAULT_WAIT};

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "sqlserver"))]
mod test_bus {
    use std::path::PathBuf;
    use std::time::Duration;

    use crate::admin::{DeadLetterInfo, QueuedMessage};
    use crate::error::{NimbusError, Result};
    use crate::{Bus, BusBuilder, Metrics};

    /// How long [`TestBus::wait_until`] waits unless told otherwise.
    pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);

    /// One endpoint on a temporary database, for end-to-end tests of an application's
    /// handlers: the real transport, retries and dead letters, with nothing to set up. With
    /// `TestBus::start` (with the `sqlite` feature), a new SQLite file; with
    /// [`TestBus::start_on`], a new schema of the PostgreSQL or SQL Server database the test
    /// names. The file or schema (with everything in it) is removed when the test bus is
    /// dropped (stop it first to let handlers finish).
    ///
    /// ```
    /// use nimbus::testing::TestBus;
    /// use nimbus::{Command, Handler, HandlerContext, HandlerError};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize, Command)]
    /// struct PlaceOrder { order_id: u32 }
    ///
    /// struct Sales;
    /// impl Handler<PlaceOrder> for Sales {
    ///     async fn handle(&self, m: PlaceOrder, _: &mut HandlerContext) -> Result<(), HandlerError> {
    ///         if m.order_id == 13 { return Err("unlucky".into()); }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # #[actix_rt::main] async fn main() -> Result<(), nimbus::NimbusError> {
    /// let test = TestBus::start("Sales", |b| b.handler(Sales).route::<PlaceOrder>("Sales").immediate_retries(0)).await?;
    /// test.bus().send(PlaceOrder { order_id: 1 }).await?;
    /// test.bus().send(PlaceOrder { order_id: 13 }).await?;
    /// let metrics = test.wait_until(|m| m.handled == 1 && m.dead_lettered == 1).await?;
    /// assert_eq!(metrics.failed, 4); // the first attempt and three delayed retries
    /// assert_eq!(test.dead_letters().await?.len(), 1);
    /// test.stop().await
    /// # }
    /// ```
    pub struct TestBus {
        bus: Bus,
        place: Place,
        admin: crate::admin::Database,
    }

    /// Where a test bus keeps its queues, removed when it is dropped.
    #[derive(Debug)]
    enum Place {
        /// A new SQLite file.
        #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
        File(PathBuf),
        /// A new schema of a server's database (its URL holds no secret shown anywhere).
        Schema { url: String, schema: String },
    }

    impl std::fmt::Debug for TestBus {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let mut d = f.debug_struct("TestBus");
            match &self.place {
                Place::File(path) => d.field("path", path),
                Place::Schema { schema, .. } => d.field("schema", schema),
            };
            d.finish_non_exhaustive()
        }
    }

    impl TestBus {
        /// Starts the endpoint `application` on a new temporary SQLite file, configured by
        /// `configure` (handlers, routes, retries…) on top of test-friendly defaults: a 100 ms
        /// peek delay, delayed retries 100 ms apart, and sends that may create the queues they
        /// name. Inside an actix `System` (`#[actix_rt::test]`).
        #[cfg(feature = "sqlite")]
        pub async fn start(
            application: &str,
            configure: impl FnOnce(BusBuilder) -> BusBuilder,
        ) -> Result<TestBus> {
            let path = std::env::temp_dir()
                .join(format!("nimbus-test-{}.db", uuid::Uuid::new_v4().simple()));
            let url = format!("sqlite://{}", path.display());
            Self::start_in(Place::File(path), &url, None, application, configure).await
        }

        /// Starts the endpoint `application` in a new schema (`nimbus_test_…`, made by the
        /// bus's auto-create) of the PostgreSQL or SQL Server database at `url`, with the same
        /// defaults as `TestBus::start`: for handlers whose SQL needs that database. The schema
        /// and everything in it are dropped when the test bus is dropped. An SQLite URL is
        /// refused: `TestBus::start` (with the `sqlite` feature) makes a file of its own.
        ///
        /// ```no_run
        /// # use nimbus::{Command, Handler, HandlerContext, HandlerError};
        /// # #[derive(serde::Serialize, serde::Deserialize, Command)] struct PlaceOrder { order_id: u32 }
        /// # struct Sales;
        /// # impl Handler<PlaceOrder> for Sales {
        /// #     async fn handle(&self, _: PlaceOrder, _: &mut HandlerContext) -> Result<(), HandlerError> { Ok(()) }
        /// # }
        /// # #[actix_rt::main] async fn main() -> Result<(), nimbus::NimbusError> {
        /// use nimbus::testing::TestBus;
        /// let url = std::env::var("TEST_DATABASE_URL")
        ///     .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        /// let test = TestBus::start_on(&url, "Sales", |b| b.handler(Sales).route::<PlaceOrder>("Sales")).await?;
        /// test.bus().send(PlaceOrder { order_id: 1 }).await?;
        /// test.wait_until(|m| m.handled == 1).await?;
        /// test.stop().await
        /// # }
        /// ```
        pub async fn start_on(
            url: &str,
            application: &str,
            configure: impl FnOnce(BusBuilder) -> BusBuilder,
        ) -> Result<TestBus> {
            let kind = crate::transport::DatabaseUrl::parse(url)?.kind();
            if kind == crate::DatabaseKind::Sqlite {
                return Err(NimbusError::config(
                    "TestBus::start_on takes a PostgreSQL or SQL Server database: an SQLite                      database has no schemas to keep tests apart",
                    "use TestBus::start, which makes an SQLite file of its own",
                ));
            }
            let schema = format!(
                "nimbus_test_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            );
            let place = Place::Schema {
                url: url.to_string(),
                schema: schema.clone(),
            };
            Self::start_in(place, url, Some(&schema), application, configure).await
        }

        async fn start_in(
            place: Place,
            url: &str,
            schema: Option<&str>,
            application: &str,
            configure: impl FnOnce(BusBuilder) -> BusBuilder,
        ) -> Result<TestBus> {
            let mut builder = Bus::builder()
                .names(application, format!("{application}-test"))
                .database_url(url)
                .peek_delay(crate::MIN_PEEK_DELAY)
                .delayed_retries(3, Duration::from_millis(100))
                .create_queues_on_send(true);
            let mut options = crate::admin::ConnectOptions::new();
            if let Some(schema) = schema {
                builder = builder.schema(schema);
                options = options.schema(schema);
            }
            let started = async {
                let bus = configure(builder).build()?.start().await?;
                let admin = crate::admin::Database::connect_with(url, options).await?;
                Ok::<_, NimbusError>((bus, admin))
            };
            match started.await {
                Ok((bus, admin)) => Ok(TestBus { bus, place, admin }),
                Err(e) => {
                    remove(&place);
                    Err(e)
                }
            }
        }

        /// The endpoint's bus: send, publish, request, metrics.
        pub fn bus(&self) -> &Bus {
            &self.bus
        }

        /// Waits until the endpoint's [`Metrics`] satisfy `done` (checked every 10 ms) and
        /// returns them; fails after [`DEFAULT_WAIT`](crate::testing::DEFAULT_WAIT) with the
        /// last metrics in the error.
        pub async fn wait_until(&self, done: impl FnMut(&Metrics) -> bool) -> Result<Metrics> {
            self.wait_until_within(DEFAULT_WAIT, done).await
        }

        /// [`wait_until`](Self::wait_until) with a limit of your own.
        pub async fn wait_until_within(
            &self,
            within: Duration,
            mut done: impl FnMut(&Metrics) -> bool,
        ) -> Result<Metrics> {
            let deadline = tokio::time::Instant::now() + within;
            loop {
                let metrics = self.bus.metrics();
                if done(&metrics) {
                    return Ok(metrics);
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(NimbusError::NotRunning(format!(
                        "the test bus did not get there within {within:?}; its metrics: \
                         {metrics:?}"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }

        /// The dead letters, oldest first.
        pub async fn dead_letters(&self) -> Result<Vec<DeadLetterInfo>> {
            self.admin.dead_letters(10_000).await
        }

        /// The messages waiting in `queue` (what the handlers sent there), oldest first.
        pub async fn messages_in(&self, queue: &str) -> Result<Vec<QueuedMessage>> {
            self.admin.peek(queue, 10_000).await
        }

        /// The database's URL, for a second endpoint or the `nimbus` tool (with
        /// [`schema`](Self::schema) on a server).
        pub fn database_url(&self) -> String {
            match &self.place {
                Place::File(path) => format!("sqlite://{}", path.display()),
                Place::Schema { url, .. } => url.clone(),
            }
        }

        /// The schema the test bus made on a server (`None` on SQLite).
        pub fn schema(&self) -> Option<&str> {
            match &self.place {
                Place::File(_) => None,
                Place::Schema { schema, .. } => Some(schema),
            }
        }

        /// Stops the endpoint: in-flight handlers finish.
        pub async fn stop(&self) -> Result<()> {
            self.bus.stop().await
        }
    }

    impl Drop for TestBus {
        fn drop(&mut self) {
            remove(&self.place);
        }
    }

    /// Removes an SQLite file and its journal files, or drops a schema with everything in it;
    /// one already gone is fine.
    fn remove(place: &Place) {
        match place {
            Place::File(path) => {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut file = path.as_os_str().to_owned();
                    file.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(file));
                }
            }
            Place::Schema { url, schema } => {
                // Drop runs inside the test's runtime, which cannot be blocked on: the schema is
                // dropped from a thread and a runtime of its own.
                let (url, name) = (url.clone(), schema.clone());
                let dropped = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    runtime.block_on(async {
                        let db = crate::admin::Database::connect(&url)
                            .await
                            .map_err(|e| e.to_string())?;
                        db.drop_schema_with_everything(&name)
                            .await
                            .map_err(|e| e.to_string())
                    })
                })
                .join();
                match dropped {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(%schema, error = %e, "could not drop the test bus's schema; drop it by hand")
                    }
                    Err(_) => {
                        tracing::warn!(%schema, "dropping the test bus's schema panicked; drop it by hand")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, HandlerError, MessageKind, SendOptions};

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Ask {
        n: u32,
    }
    impl Message for Ask {
        const TYPE_NAME: &'static str = "Kit.Ask";
        const KIND: MessageKind = MessageKind::Command;
    }
    impl Command for Ask {}

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Answer {
        n: u32,
    }
    impl Message for Answer {
        const TYPE_NAME: &'static str = "Kit.Answer";
        const KIND: MessageKind = MessageKind::Event;
    }
    impl Event for Answer {}

    /// Replies, publishes, sends later, and says which attempt it is on.
    async fn handle(m: Ask, ctx: &mut HandlerContext) -> Result<u32, HandlerError> {
        ctx.reply(Answer { n: m.n + 1 })?;
        ctx.publish(Answer { n: m.n })?;
        ctx.send_with(
            Ask { n: m.n * 2 },
            SendOptions::new().delay(Duration::from_secs(5)).to("Later"),
        )?;
        Ok(ctx.attempt())
    }

    #[actix_rt::test]
    async fn a_test_context_records_replies_publishes_and_delayed_sends() {
        let mut ctx = TestContext::new()
            .endpoint("Kit")
            .reply_to("Asker.asker-1")
            .attempt(3)
            .message_id("0192d0c1-7b1e-7c4e-9a37-2d3b4c5d6e7f");
        assert_eq!(
            ctx.context().message_id(),
            "0192d0c1-7b1e-7c4e-9a37-2d3b4c5d6e7f"
        );
        let attempt = handle(Ask { n: 20 }, ctx.context()).await.unwrap();
        assert_eq!(attempt, 3);
        assert_eq!(ctx.context().database(), None);
        let mut on_postgres = TestContext::new().database(crate::DatabaseKind::Postgres);
        assert_eq!(
            on_postgres.context().database(),
            Some(crate::DatabaseKind::Postgres)
        );
        assert_eq!(ctx.replied::<Answer>(), vec![Answer { n: 21 }]);
        assert_eq!(ctx.published::<Answer>(), vec![Answer { n: 20 }]);
        assert_eq!(ctx.sent_to::<Ask>("Later"), vec![Ask { n: 40 }]);
        assert!(ctx.sent_to::<Ask>("Elsewhere").is_empty());
        let recorded = ctx.recorded();
        assert_eq!(recorded.len(), 3);
        assert_eq!(recorded[0].intent, Intent::Reply);
        assert_eq!(recorded[0].destination, "Asker.asker-1");
        assert_eq!(recorded[1].destination, "Kit.Answer");
        assert_eq!(recorded[2].delay, Some(Duration::from_secs(5)));
        assert_eq!(
            recorded[2]
                .headers
                .get(headers::ORIGINATING_ENDPOINT)
                .map(String::as_str),
            Some("Kit")
        );
        assert_eq!(
            recorded[0]
                .headers
                .get(headers::RELATED_TO)
                .map(String::as_str),
            Some("0192d0c1-7b1e-7c4e-9a37-2d3b4c5d6e7f"),
            "what the handler sends is caused by the incoming message"
        );
    }

    #[actix_rt::test]
    async fn a_test_context_has_no_database_and_says_what_to_use() {
        let mut ctx = TestContext::new();
        let error = ctx
            .context()
            .sqlite(|_| Ok(()))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("TestBus"), "{error}");
        // Without a route or a reply address, sends fail as they would in an endpoint.
        assert!(ctx.context().send(Ask { n: 1 }).is_err());
        assert!(ctx.context().reply(Answer { n: 1 }).is_err());
        assert!(ctx.recorded().is_empty());
    }

    #[cfg(feature = "sqlite")]
    #[actix_rt::test]
    async fn a_test_bus_runs_the_handlers_and_removes_its_database() {
        struct Forward;
        impl crate::Handler<Ask> for Forward {
            async fn handle(&self, m: Ask, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
                if m.n == 13 {
                    return Err("unlucky".into());
                }
                ctx.send_to("Forwarded", Answer { n: m.n })?;
                Ok(())
            }
        }
        let test = TestBus::start("Kit", |b| {
            b.handler(Forward)
                .route::<Ask>("Kit")
                .immediate_retries(1)
                .delayed_retries(1, Duration::from_millis(100))
        })
        .await
        .unwrap();
        let url = test.database_url();
        let path = std::path::PathBuf::from(url.trim_start_matches("sqlite://"));
        assert!(path.exists());
        test.bus().send(Ask { n: 1 }).await.unwrap();
        test.bus().send(Ask { n: 13 }).await.unwrap();
        let metrics = test
            .wait_until(|m| m.handled == 1 && m.dead_lettered == 1)
            .await
            .unwrap();
        assert_eq!(
            metrics.failed, 3,
            "the first attempt, one at once, one later"
        );
        let forwarded = test.messages_in("Forwarded").await.unwrap();
        assert_eq!(forwarded.len(), 1);
        assert_eq!(test.dead_letters().await.unwrap().len(), 1);
        let waited = test
            .wait_until_within(Duration::from_millis(50), |m| m.handled == 5)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(waited.contains("handled: 1"), "{waited}");
        test.stop().await.unwrap();
        drop(test);
        assert!(!path.exists(), "the database file is removed");
    }
}
