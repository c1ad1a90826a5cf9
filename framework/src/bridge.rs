//! A bridge between databases: it moves the messages of a queue of one database to a queue of
//! another (two PostgreSQL servers, PostgreSQL and SQLite, PostgreSQL and SQL Server, in either
//! direction), and the events published on one to the subscribers of the other.
//!
//! Each hop is two transactions, one per database: the message is written to the other side in
//! a transaction that first claims its message id in that side's `NimbusDeduplication` (for the
//! bridge's window), then taken from its queue. A bridge that dies between the two commits
//! finds the message again, and the claim drops the second copy: each message crosses exactly
//! once within the window (a day by default). The message keeps its id and headers, and gains
//! [`CROSSED`] naming the bridges it went through; a body stored apart by the claim check is
//! stored apart again on the other side.
//!
//! Replies find their way back: a message that names a reply address crosses with its
//! `NServiceBus.ReplyToAddress` rewritten to the bridge's queue `Bridge.<name>.Replies` on the
//! side it reaches, and the address it had kept in [`BRIDGE_RETURN_TO_PREFIX`]`<name>`
//! (`<side>|<address>`). A handler's reply carries that header, and the bridge takes what lands
//! in its replies queue back to the side and queue the header names. With
//! [`BridgeConfig::keep_ways_back`], the bridge also keeps each such way back on the side the
//! message reached (in `NimbusDeduplication`, scope
//! `bridge-return:<name>:<message id>`, for its window): a reply that does not copy the header,
//! as an NServiceBus endpoint's does not, finds its way back by the message id it names in
//! `NServiceBus.RelatedTo`.
//!
//! [`BRIDGE_RETURN_TO_PREFIX`]: crate::headers::BRIDGE_RETURN_TO_PREFIX
//!
//! ```no_run
//! # async fn run() -> nimbus::Result<()> {
//! use nimbus::bridge::{Bridge, BridgeConfig};
//! let config: BridgeConfig = serde_json::from_str(r#"{
//!     "name": "eu-us",
//!     "sides": {
//!         "eu": { "database_url": "postgres://app@eu-db/orders" },
//!         "us": { "database_url": "postgres://app@us-db/orders" }
//!     },
//!     "queues": [ { "from": "eu", "queue": "ToUs", "to": "us", "to_queue": "Orders" } ],
//!     "events": [ { "from": "us", "topic": "Billing.InvoicePaid", "to": "eu" } ]
//! }"#).expect("a valid configuration");
//! let bridge = Bridge::start(config).await?;
//! nimbus::stop_signal().await?;
//! bridge.stop().await;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::admin::{ConnectOptions, Database};
use crate::envelope::{Delivery, Destination, OutgoingMessage, ReceivedMessage, StoredApart};
use crate::error::{NimbusError, Result};
use crate::headers::{self, Headers};
use crate::names::QueueName;
use crate::transport::{StopSignal, StorageLayout};

/// The header listing, comma-separated, the bridges a message crossed, in order.
pub const CROSSED: &str = "Nimbus.Bridge.Crossed";

/// The longest bridge name: with its queues' prefix and suffix it stays within every
/// database's longest queue name.
pub const MAX_BRIDGE_NAME: usize = 24;

/// The queue a bridge subscribes to `topic` on the side events leave:
/// `Bridge.<name>.<8 hex digits of the topic>` (topics are longer than queue names may be).
fn event_queue(bridge: &str, topic: &str) -> String {
    let digest = Uuid::new_v5(&Uuid::NAMESPACE_OID, topic.as_bytes())
        .simple()
        .to_string();
    format!("Bridge.{bridge}.{}", &digest[..8])
}

/// The deduplication scope under which a bridge keeps the way back of the message `id`, on the
/// side it reached.
fn way_back_scope(bridge: &str, id: &str) -> String {
    format!("bridge-return:{bridge}:{id}")
}

/// The queue a bridge takes replies from on each side messages reach:
/// `Bridge.<name>.Replies`. Messages crossing to that side name it as their reply address.
pub fn replies_queue(bridge: &str) -> String {
    format!("Bridge.{bridge}.Replies")
}

/// How long a bridge remembers the ids of the messages it moved (the window of exactly once).
pub const DEFAULT_BRIDGE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// One database a bridge reaches.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BridgeSide {
    /// Its URL or ADO.NET connection string (as `BusBuilder::database_url` takes it).
    pub database_url: String,
    /// The schema of its tables; the database's default when absent.
    #[serde(default)]
    pub schema: Option<String>,
    /// How its endpoints store queues.
    #[serde(default)]
    pub storage_layout: StorageLayout,
}

impl BridgeSide {
    /// A side at `database_url`, in its default schema and the table-per-queue layout.
    pub fn new(database_url: impl Into<String>) -> Self {
        BridgeSide {
            database_url: database_url.into(),
            schema: None,
            storage_layout: StorageLayout::TablePerQueue,
        }
    }
}

impl std::fmt::Display for BridgeSide {
    /// The side's database and schema, never its URL (which may hold a password).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let target = crate::transport::DatabaseUrl::parse(&self.database_url)
            .map(|url| format!("a {} database", url.dialect().name))
            .unwrap_or_else(|_| "an unreadable database URL".into());
        match &self.schema {
            Some(schema) => write!(f, "{target} (schema {schema})"),
            None => write!(f, "{target}"),
        }
    }
}

/// Messages of a queue on one side moved to a queue on the other.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QueueRoute {
    /// The side the messages are taken from.
    pub from: String,
    /// Their queue there (senders route to it as to any queue).
    pub queue: String,
    /// The side they go to.
    pub to: String,
    /// Their queue there; the same name when absent.
    #[serde(default)]
    pub to_queue: Option<String>,
}

/// Events published on one side, published again on the other.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EventRoute {
    /// The side they are published on: the bridge subscribes its queue
    /// `Bridge.<name>.<8 hex digits of the topic>` there.
    pub from: String,
    /// Their topic (`Message::TYPE_NAME` of the event).
    pub topic: String,
    /// The side whose subscribers get them.
    pub to: String,
}

/// What a bridge connects and moves: read from a file by `nimbus bridge --config`.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The bridge's name: in the [`CROSSED`] header, its deduplication scope and its queues.
    pub name: String,
    /// The databases, by a name of your choosing.
    pub sides: BTreeMap<String, BridgeSide>,
    /// The queues it moves.
    #[serde(default)]
    pub queues: Vec<QueueRoute>,
    /// The events it publishes again.
    #[serde(default)]
    pub events: Vec<EventRoute>,
    /// How long it remembers the ids it moved ([`DEFAULT_BRIDGE_WINDOW`]).
    #[serde(default, with = "humantime_serde")]
    pub window: Option<Duration>,
    /// How long it waits before looking at an empty queue again (200 ms).
    #[serde(default, with = "humantime_serde")]
    pub idle_poll: Option<Duration>,
    /// Messages taken per transaction on the side they leave (32).
    #[serde(default)]
    pub batch: Option<usize>,
    /// Whether the bridge keeps, on the side a message reaches, where a reply to it goes back
    /// to, for replies that do not copy the bridge's header (an NServiceBus endpoint's): they
    /// then find their way back by the message they answer (`NServiceBus.RelatedTo`). Costs a
    /// transaction more per crossing message that names a reply address (every message a bus
    /// sends does; about a third of the bridge's rate between two PostgreSQL schemas); off by
    /// default, when such a reply is dead-lettered saying why.
    #[serde(default)]
    pub keep_ways_back: bool,
}

impl BridgeConfig {
    /// A bridge named `name` with no side yet.
    pub fn new(name: impl Into<String>) -> Self {
        BridgeConfig {
            name: name.into(),
            sides: BTreeMap::new(),
            queues: Vec::new(),
            events: Vec::new(),
            window: None,
            idle_poll: None,
            batch: None,
            keep_ways_back: false,
        }
    }

    /// Keeps the way back of every message that crosses, for replies that do not copy the
    /// bridge's header, such as NServiceBus endpoints' (see [`keep_ways_back`](Self::keep_ways_back)).
    pub fn keep_ways_back(mut self) -> Self {
        self.keep_ways_back = true;
        self
    }

    /// Adds a side.
    pub fn side(mut self, name: impl Into<String>, side: BridgeSide) -> Self {
        self.sides.insert(name.into(), side);
        self
    }

    /// Moves the messages of `queue` on side `from` to `to_queue` on side `to`.
    pub fn queue(
        mut self,
        from: impl Into<String>,
        queue: impl Into<String>,
        to: impl Into<String>,
        to_queue: impl Into<String>,
    ) -> Self {
        self.queues.push(QueueRoute {
            from: from.into(),
            queue: queue.into(),
            to: to.into(),
            to_queue: Some(to_queue.into()),
        });
        self
    }

    /// Publishes the events of `topic` published on side `from` again on side `to`.
    pub fn event(
        mut self,
        from: impl Into<String>,
        topic: impl Into<String>,
        to: impl Into<String>,
    ) -> Self {
        self.events.push(EventRoute {
            from: from.into(),
            topic: topic.into(),
            to: to.into(),
        });
        self
    }

    /// Checks the configuration: names that exist, no route to its own side, something to
    /// move.
    fn check(&self) -> Result<()> {
        let bad = |problem: String| {
            Err(NimbusError::config(
                format!("bridge {:?}: {problem}", self.name),
                "fix the bridge's configuration",
            ))
        };
        if self.name.is_empty()
            || self.name.len() > MAX_BRIDGE_NAME
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return bad(format!(
                "its name must be 1 to {MAX_BRIDGE_NAME} letters, digits, '-' or '_'"
            ));
        }
        if self.queues.is_empty() && self.events.is_empty() {
            return bad("it names no queue and no event to move".into());
        }
        let routes = self
            .queues
            .iter()
            .map(|q| (&q.from, &q.to))
            .chain(self.events.iter().map(|e| (&e.from, &e.to)));
        for (from, to) in routes {
            for side in [from, to] {
                if !self.sides.contains_key(side) {
                    return bad(format!(
                        "a route names the side {side:?}, which `sides` does not list"
                    ));
                }
            }
            if from == to {
                return bad(format!("a route goes from the side {from:?} to itself"));
            }
        }
        if let Some(side) = self.sides.keys().find(|side| side.contains('|')) {
            return bad(format!(
                "the side name {side:?} holds '|', which the way back of a reply uses to end it"
            ));
        }
        Ok(())
    }
}

/// What a running bridge moved, since it started.
#[derive(Debug, Default)]
pub struct BridgeCounts {
    crossed: AtomicU64,
    duplicates: AtomicU64,
    failures: AtomicU64,
}

impl BridgeCounts {
    /// Messages and events moved to the other side.
    pub fn crossed(&self) -> u64 {
        self.crossed.load(Ordering::Relaxed)
    }

    /// Messages found again after a crash between the two commits, dropped because the other
    /// side had them already.
    pub fn duplicates(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }

    /// Attempts that failed (a database unreachable) and were tried again.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

/// A running bridge (see the [module](self)).
pub struct Bridge {
    name: String,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    counts: Arc<BridgeCounts>,
}

/// A side as the bridge runs it.
struct Side {
    db: Database,
    /// The address of the bridge's replies queue there, as messages crossing to it name it.
    replies: String,
}

/// Where a lane's messages go.
enum Target {
    /// A queue, or a topic's subscribers, on one side.
    Fixed {
        side: String,
        destination: Destination,
    },
    /// Back to the side and queue the message's [`BRIDGE_RETURN_TO_PREFIX`]`<name>` header
    /// names: the replies lane of a side.
    ///
    /// [`BRIDGE_RETURN_TO_PREFIX`]: crate::headers::BRIDGE_RETURN_TO_PREFIX
    Back,
}

/// One route as the bridge runs it.
struct Lane {
    bridge: String,
    /// Every side, by name.
    sides: Arc<BTreeMap<String, Side>>,
    /// The side messages leave, and the queue they leave.
    from_side: String,
    from: Database,
    from_queue: QueueName,
    /// Where they go.
    target: Target,
    /// For an event route: the topic the bridge's queue on `from` subscribes to (its queue is
    /// `Bridge.<name>.<8 hex digits of the topic>`).
    subscribes_to: Option<String>,
    window: Duration,
    idle_poll: Duration,
    batch: i64,
    /// Whether it keeps the way back of the messages it moves ([`BridgeConfig::keep_ways_back`]).
    keep_ways_back: bool,
    counts: Arc<BridgeCounts>,
    /// What the logs call this lane.
    label: String,
}

impl Bridge {
    /// Connects to every side, makes the queues (and, on the sides messages reach, the
    /// deduplication table) it needs, and starts moving. Fails naming the side it cannot
    /// reach.
    pub async fn start(config: BridgeConfig) -> Result<Bridge> {
        config.check()?;
        let mut sides = BTreeMap::new();
        let replies = replies_queue(&config.name);
        for (name, side) in &config.sides {
            let mut options = ConnectOptions::new().layout(side.storage_layout);
            if let Some(schema) = &side.schema {
                options = options.schema(schema.clone());
            }
            // Each route holds a connection of the side it takes from while it writes to the
            // other: room for every route on every side (and the replies lane of each side),
            // and for the bridge's own statements.
            let routes = config.queues.len() + config.events.len() + config.sides.len();
            let db = Database::connect_with_pool(&side.database_url, options, 2 * routes + 2)
                .await
                .map_err(|e| {
                    NimbusError::config(
                        format!("bridge {:?}: the side {name:?} ({side}): {e}", config.name),
                        "check the side's database_url and that its server runs",
                    )
                })?;
            let replies = db.transport().address_of(&QueueName::parse(&replies)?);
            sides.insert(name.clone(), Side { db, replies });
        }
        let sides = Arc::new(sides);
        let counts = Arc::new(BridgeCounts::default());
        let window = config.window.unwrap_or(DEFAULT_BRIDGE_WINDOW);
        let idle_poll = config.idle_poll.unwrap_or(Duration::from_millis(200));
        let batch = i64::try_from(config.batch.unwrap_or(32).clamp(1, 1000)).unwrap_or(32);
        let mut lanes = Vec::new();
        for route in &config.queues {
            let (from, to) = (&sides[&route.from].db, &sides[&route.to].db);
            let to_queue = route.to_queue.as_deref().unwrap_or(&route.queue);
            from.create_schema(&[route.queue.as_str()]).await?;
            to.create_schema(&[to_queue]).await?;
            lanes.push(Lane {
                bridge: config.name.clone(),
                sides: sides.clone(),
                from_side: route.from.clone(),
                from: from.clone(),
                from_queue: QueueName::parse(&route.queue)?,
                target: Target::Fixed {
                    side: route.to.clone(),
                    destination: Destination::Queue(QueueName::parse(to_queue)?),
                },
                subscribes_to: None,
                window,
                idle_poll,
                batch,
                keep_ways_back: config.keep_ways_back,
                counts: counts.clone(),
                label: format!("{}:{} -> {}:{to_queue}", route.from, route.queue, route.to),
            });
        }
        for route in &config.events {
            let (from, to) = (&sides[&route.from].db, &sides[&route.to].db);
            let queue = event_queue(&config.name, &route.topic);
            from.create_schema(&[queue.as_str()]).await?;
            to.create_schema(&[]).await?;
            lanes.push(Lane {
                bridge: config.name.clone(),
                sides: sides.clone(),
                from_side: route.from.clone(),
                from: from.clone(),
                from_queue: QueueName::parse(&queue)?,
                target: Target::Fixed {
                    side: route.to.clone(),
                    // Topics are type names, 'static everywhere else: one small string per
                    // event route of a bridge's start is kept for the process's life.
                    destination: Destination::Topic(Box::leak(
                        route.topic.clone().into_boxed_str(),
                    )),
                },
                subscribes_to: Some(route.topic.clone()),
                window,
                idle_poll,
                batch,
                keep_ways_back: config.keep_ways_back,
                counts: counts.clone(),
                label: format!("{}:{} -> {} (event)", route.from, route.topic, route.to),
            });
        }
        // Each side messages reach gets a replies lane: what its handlers answer to messages
        // that crossed goes back the way they came.
        let reached: std::collections::BTreeSet<&String> = config
            .queues
            .iter()
            .map(|q| &q.to)
            .chain(config.events.iter().map(|e| &e.to))
            .collect();
        for name in reached {
            let side = &sides[name];
            side.db.create_schema(&[replies.as_str()]).await?;
            lanes.push(Lane {
                bridge: config.name.clone(),
                sides: sides.clone(),
                from_side: name.clone(),
                from: side.db.clone(),
                from_queue: QueueName::parse(&replies)?,
                target: Target::Back,
                subscribes_to: None,
                window,
                idle_poll,
                batch,
                keep_ways_back: config.keep_ways_back,
                counts: counts.clone(),
                label: format!("{name}:{replies} -> (replies back)"),
            });
        }
        let (stop, stopping) = StopSignal::new();
        let mut tasks = Vec::new();
        for lane in lanes {
            if let Some(topic) = &lane.subscribes_to {
                lane.from.subscribe_queue(topic, &lane.from_queue).await?;
            }
            let stopping = stopping.clone();
            tasks.push(tokio::spawn(async move { lane.run(stopping).await }));
        }
        tracing::info!(bridge = %config.name, routes = tasks.len(), "bridge started");
        Ok(Bridge {
            name: config.name,
            stop,
            tasks,
            counts,
        })
    }

    /// What it moved so far.
    pub fn counts(&self) -> &BridgeCounts {
        &self.counts
    }

    /// Stops taking messages, lets each route finish the one it moves, and returns.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        tracing::info!(
            bridge = %self.name,
            crossed = self.counts.crossed(),
            duplicates = self.counts.duplicates(),
            "bridge stopped"
        );
    }
}

impl Lane {
    /// Moves messages until `stopping` is set; a failed attempt is logged, counted and tried
    /// again after a back-off, the messages it took back in their queue.
    async fn run(self, stopping: StopSignal) {
        let mut failures = 0u32;
        let mut last_subscribed = std::time::Instant::now();
        while !stopping.is_set() {
            if let Some(topic) = &self.subscribes_to {
                // Heartbeat: a subscription not seen for a while lapses.
                if last_subscribed.elapsed() > Duration::from_secs(60) {
                    if let Err(e) = self.from.subscribe_queue(topic, &self.from_queue).await {
                        tracing::warn!(bridge = %self.bridge, lane = %self.label, error = %e, "could not renew the bridge's subscription; trying again");
                    }
                    last_subscribed = std::time::Instant::now();
                }
            }
            match self.move_batch(&stopping).await {
                Ok(0) => {
                    failures = 0;
                    tokio::select! {
                        () = tokio::time::sleep(self.idle_poll) => {}
                        () = stopping.set() => {}
                    }
                }
                Ok(_) => failures = 0,
                Err(e) => {
                    failures = failures.saturating_add(1);
                    self.counts.failures.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("nimbus_bridge_failures_total", "bridge" => self.bridge.clone())
                        .increment(1);
                    let wait = crate::driver::background_retry_wait(failures);
                    tracing::warn!(bridge = %self.bridge, lane = %self.label, error = %e, retry_in = ?wait, "the bridge could not move messages; they stay in their queue and it tries again");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = stopping.set() => {}
                    }
                }
            }
        }
    }

    /// Takes up to a batch from the queue, writes its messages to the other side in one
    /// transaction per side they go to (each id claimed there first), then commits the take:
    /// how many it moved. A bridge that dies between the two commits takes them again, and the
    /// claims drop the copies.
    async fn move_batch(&self, stopping: &StopSignal) -> Result<usize> {
        let Some(mut batch) = self
            .from
            .transport()
            .receive_batch(&self.from_queue, self.batch, stopping, None)
            .await?
        else {
            return Ok(0);
        };
        // What goes to each side: (message id, message), in the order taken.
        let mut crossing: BTreeMap<&str, Vec<(String, OutgoingMessage)>> = BTreeMap::new();
        // The ways back of the messages that name a reply address: (message id, way back).
        let mut returns: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
        while let Some((row, tx)) = batch.next().await? {
            // What can never cross (headers that are not JSON, a body stored apart that is
            // gone or in a store the bridge does not know) goes to this side's dead letters,
            // instead of stopping the route for good.
            let mut headers = match serde_json::from_str::<Headers>(&row.headers_json) {
                Ok(headers) => headers,
                Err(e) => {
                    let reason = format!("its headers are not JSON ({e})");
                    self.dead_letter(&row, None, tx, &reason).await?;
                    continue;
                }
            };
            let mut tx = tx;
            let stored = match tx.stored_body().await {
                Ok(stored) => stored,
                Err(e @ NimbusError::Config { .. }) => {
                    self.dead_letter(&row, Some(&headers), tx, &e.to_string())
                        .await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let key = headers
                .get(headers::MESSAGE_ID)
                .cloned()
                .unwrap_or_else(|| row.row_id.clone());
            if self.keep_ways_back && matches!(self.target, Target::Back) {
                self.find_way_back(&mut headers).await?;
            }
            let (side, destination) = match self.destination_of(&mut headers) {
                Ok(found) => found,
                Err(reason) => {
                    self.dead_letter(&row, Some(&headers), tx, &reason).await?;
                    continue;
                }
            };
            let to = &self.sides[side];
            // Where a reply to it goes back to, kept on the side it reaches for replies that
            // do not copy the header saying so (NServiceBus's).
            let way_back = headers
                .get(headers::REPLY_TO_ADDRESS)
                .filter(|address| !address.is_empty())
                .map(|reply| format!("{}|{reply}", self.from_side));
            if let Some(way_back) = way_back.filter(|_| self.keeps_ways_back()) {
                returns
                    .entry(side)
                    .or_default()
                    .push((key.clone(), way_back));
            }
            let message = self.crossing(row, headers, stored, to, destination)?;
            // Taken from this side in the batch's transaction (its body stored apart too),
            // which commits only after the other side has it.
            tx.commit(Vec::new()).await?;
            crossing.entry(side).or_default().push((key, message));
        }
        let scope = format!("bridge:{}", self.bridge);
        let mut moved = 0;
        for (side, items) in crossing {
            let keys: Vec<String> = items.iter().map(|(key, _)| key.clone()).collect();
            let sent = self.sides[side]
                .db
                .transport()
                .send_each_deduplicated(&scope, self.window, items)
                .await?;
            for (key, sent) in keys.iter().zip(sent) {
                self.count(key, sent);
            }
            moved += keys.len();
            // Kept after the send, copies included: a bridge that dies before this finds the
            // messages again (this side has not committed their take) and keeps them then.
            for (key, way_back) in returns.remove(side).unwrap_or_default() {
                self.keep_way_back(side, &key, &way_back).await?;
            }
        }
        batch.commit().await?;
        Ok(moved)
    }

    /// Counts a message written on the other side (`sent`), or dropped there as a copy it had
    /// already, saying so.
    fn count(&self, key: &str, sent: bool) {
        if sent {
            self.counts.crossed.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("nimbus_bridge_crossed_total", "bridge" => self.bridge.clone(), "lane" => self.label.clone())
                .increment(1);
        } else {
            self.counts.duplicates.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("nimbus_bridge_duplicates_total", "bridge" => self.bridge.clone())
                .increment(1);
            tracing::info!(bridge = %self.bridge, lane = %self.label, message_id = %key, "a message the other side had already was dropped (the bridge stopped between its two commits)");
        }
    }

    /// Whether the messages it moves have their way back kept: on a lane to a fixed queue or
    /// subscribers, when the bridge keeps ways back (replies to replies are not answered).
    fn keeps_ways_back(&self) -> bool {
        self.keep_ways_back && matches!(self.target, Target::Fixed { .. })
    }

    /// Keeps, on `side`, where a reply to the message `id` goes back to (`<side>|<address>`),
    /// for the bridge's window: found by the id a reply names in `NServiceBus.RelatedTo`
    /// ([`find_way_back`](Self::find_way_back)). A way back longer than a key may be is not
    /// kept (a reply that does not carry it is dead-lettered, saying so).
    async fn keep_way_back(&self, side: &str, id: &str, way_back: &str) -> Result<()> {
        let longest = crate::transport::MAX_DEDUPLICATION_KEY_CHARS;
        if way_back.chars().count() > longest {
            tracing::warn!(bridge = %self.bridge, lane = %self.label, message_id = %id, "the reply address of a message that crossed is longer than {longest} characters: a reply to it that does not copy the bridge's header cannot find its way back");
            return Ok(());
        }
        self.sides[side]
            .db
            .remember_deduplication_key(&way_back_scope(&self.bridge, id), way_back, self.window)
            .await?;
        Ok(())
    }

    /// On a replies lane: a reply that lacks the bridge's way-back header (an endpoint that
    /// does not copy headers to its replies, as NServiceBus's do not) gets it back from the way
    /// back kept for the message it answers, named by `NServiceBus.RelatedTo`. Nothing changes
    /// when the header is there or no way back was kept.
    async fn find_way_back(&self, headers: &mut Headers) -> Result<()> {
        let name = format!("{}{}", headers::BRIDGE_RETURN_TO_PREFIX, self.bridge);
        if headers.contains_key(&name) {
            return Ok(());
        }
        let Some(related) = headers.get(headers::RELATED_TO).cloned() else {
            return Ok(());
        };
        let kept = self
            .from
            .deduplication_keys(&way_back_scope(&self.bridge, &related))
            .await?;
        if let Some(way_back) = kept.into_iter().next() {
            tracing::debug!(bridge = %self.bridge, lane = %self.label, related_to = %related, "a reply without the bridge's header found its way back by the message it answers");
            headers.insert(name, way_back);
        }
        Ok(())
    }

    /// Moves `row`, which can never cross for `reason`, to this side's dead letters in its
    /// transaction `tx`, saying so.
    async fn dead_letter(
        &self,
        row: &ReceivedMessage,
        headers: Option<&Headers>,
        tx: Box<dyn crate::transport::ReceiveTransaction>,
        reason: &str,
    ) -> Result<()> {
        let reason = format!("the bridge {:?} cannot carry it: {reason}", self.bridge);
        let letter = crate::dead_letter::dead_letter(row, headers, &self.from_queue, &reason, 1);
        tx.dead_letter(letter).await?;
        metrics::counter!("nimbus_bridge_dead_lettered_total", "bridge" => self.bridge.clone())
            .increment(1);
        tracing::warn!(bridge = %self.bridge, lane = %self.label, id = %row.row_id, %reason, "moved a message the bridge cannot carry to the dead letters of its side");
        Ok(())
    }

    /// The side a message goes to, and where there: the lane's own, or, on a replies lane, the
    /// way back its [`BRIDGE_RETURN_TO_PREFIX`]`<name>` header names (taken out of `headers`).
    /// `Err` says why it cannot go anywhere.
    ///
    /// [`BRIDGE_RETURN_TO_PREFIX`]: crate::headers::BRIDGE_RETURN_TO_PREFIX
    fn destination_of(
        &self,
        headers: &mut Headers,
    ) -> std::result::Result<(&str, Destination), String> {
        match &self.target {
            Target::Fixed { side, destination } => Ok((side.as_str(), destination.clone())),
            Target::Back => {
                let name = format!("{}{}", headers::BRIDGE_RETURN_TO_PREFIX, self.bridge);
                let Some(way_back) = headers.remove(&name) else {
                    let instead = match self.keep_ways_back {
                        true => {
                            "nor an NServiceBus.RelatedTo naming a message that crossed \
                                 this bridge within its window"
                        }
                        false => {
                            "and the bridge keeps no ways back: a reply from an endpoint \
                                  that does not copy the header, as NServiceBus's do not, finds \
                                  its way back when the configuration says \"keep_ways_back\": \
                                  true"
                        }
                    };
                    return Err(format!(
                        "it reached the bridge's replies queue without the header {name}, which \
                         says where it goes back to, {instead}"
                    ));
                };
                let Some((side, address)) = way_back.split_once('|') else {
                    return Err(format!(
                        "its header {name} is not <side>|<address>: {way_back:?}"
                    ));
                };
                let Some((side, _)) = self.sides.get_key_value(side) else {
                    return Err(format!(
                        "its header {name} names the side {side:?}, which the bridge does not have"
                    ));
                };
                let queue = QueueName::parse(address)
                    .map_err(|e| format!("its header {name} names no queue: {e}"))?;
                Ok((side.as_str(), Destination::Queue(queue)))
            }
        }
    }

    /// `row` as the message written on the side `to`, at `destination`: its id, `headers`
    /// (with this bridge added to [`CROSSED`], and a reply address rewritten to the bridge's
    /// replies queue on `to`, the one it had kept for the way back), body (`stored`, when it
    /// was stored apart, stored apart again under a new id) and expiry.
    fn crossing(
        &self,
        row: ReceivedMessage,
        mut headers: Headers,
        stored: Option<Vec<u8>>,
        to: &Side,
        destination: Destination,
    ) -> Result<OutgoingMessage> {
        let crossed = match headers.get(CROSSED) {
            Some(before) if !before.is_empty() => format!("{before},{}", self.bridge),
            _ => self.bridge.clone(),
        };
        headers.insert(CROSSED.into(), crossed);
        let mut reply_to_address = row.reply_to_address;
        if let Some(reply) = headers
            .get(headers::REPLY_TO_ADDRESS)
            .filter(|address| !address.is_empty())
            .cloned()
        {
            headers.insert(
                format!("{}{}", headers::BRIDGE_RETURN_TO_PREFIX, self.bridge),
                format!("{}|{reply}", self.from_side),
            );
            headers.insert(headers::REPLY_TO_ADDRESS.into(), to.replies.clone());
            if reply_to_address.is_some() {
                reply_to_address = Some(to.replies.clone());
            }
        }
        let stored_apart = stored.map(|body| {
            let id = Uuid::new_v4();
            headers.insert(headers::CLAIM_CHECK.into(), id.to_string());
            StoredApart { id, body }
        });
        let headers_json =
            serde_json::to_string(&headers).map_err(|source| NimbusError::Serialize {
                type_name: "headers",
                source,
            })?;
        Ok(OutgoingMessage {
            destination,
            id: Uuid::parse_str(&row.row_id).unwrap_or_else(|_| Uuid::new_v4()),
            group: crate::envelope::group_in_json(&headers_json),
            priority: crate::envelope::priority_in_json(&headers_json),
            headers_json,
            body: row.body,
            correlation_id: row.correlation_id,
            reply_to_address,
            time_to_be_received_ms: None,
            expires_at: row.expires,
            delivery: Delivery::Immediate,
            stored_apart,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BridgeConfig {
        BridgeConfig::new("b")
            .side("a", BridgeSide::new("sqlite:///tmp/a.db"))
            .side("z", BridgeSide::new("sqlite:///tmp/z.db"))
    }

    #[test]
    fn a_configuration_names_sides_that_exist_and_something_to_move() {
        assert!(config().check().is_err(), "nothing to move");
        assert!(config().queue("a", "Q", "z", "Q").check().is_ok());
        let unknown = config().queue("a", "Q", "y", "Q").check().unwrap_err();
        assert!(unknown.to_string().contains("\"y\""), "{unknown}");
        let itself = config().queue("a", "Q", "a", "R").check().unwrap_err();
        assert!(itself.to_string().contains("itself"), "{itself}");
        assert_eq!(
            event_queue("b", "Sales.OrderPlaced").len(),
            "Bridge.b.".len() + 8
        );
        let comma = BridgeConfig::new("a,b")
            .side("a", BridgeSide::new("sqlite:///tmp/a.db"))
            .side("z", BridgeSide::new("sqlite:///tmp/z.db"))
            .event("a", "T", "z");
        assert!(comma.check().is_err());
        let bar = BridgeConfig::new("b")
            .side("a|b", BridgeSide::new("sqlite:///tmp/a.db"))
            .side("z", BridgeSide::new("sqlite:///tmp/z.db"))
            .queue("a|b", "Q", "z", "Q");
        let refused = bar.check().unwrap_err().to_string();
        assert!(refused.contains("'|'"), "{refused}");
        assert_eq!(replies_queue("b"), "Bridge.b.Replies");
    }

    #[test]
    fn a_configuration_file_is_read_and_a_typo_refused() {
        let read: BridgeConfig = serde_json::from_str(
            r#"{"name": "n", "sides": {"a": {"database_url": "sqlite:///tmp/a.db"},
                "z": {"database_url": "postgres://u:secret@h/db", "schema": "s"}},
                "queues": [{"from": "a", "queue": "Q", "to": "z"}], "window": "2h"}"#,
        )
        .unwrap();
        assert_eq!(read.window, Some(Duration::from_secs(7200)));
        assert!(read.check().is_ok());
        let shown = read.sides["z"].to_string();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(serde_json::from_str::<BridgeConfig>(r#"{"name": "n", "sidez": {}}"#).is_err());
    }
}
