//! Messages as the transport sees them: headers serialized as JSON, a body of bytes, and the
//! seed-000 columns that exist for NServiceBus SQL Server transport version 1.

use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;
use uuid::Uuid;

use crate::error::{NimbusError, Result};
use crate::headers::{self, Headers};
use crate::incoming_headers::IncomingHeaders;
use crate::message::Message;
use crate::names::QueueName;

/// Where an outgoing message goes.
#[derive(Clone, Debug)]
pub(crate) enum Destination {
    /// One queue.
    Queue(QueueName),
    /// Every queue subscribed to this topic (an event type name) when the message is written.
    Topic(&'static str),
}

/// When an outgoing message becomes visible in its queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Delivery {
    /// At once.
    Immediate,
    /// After this many milliseconds, counted by the database's clock.
    AfterMs(i64),
    /// At this UTC time.
    At(NaiveDateTime),
}

impl Delivery {
    /// As the statements take it: (a delay in milliseconds, a due time), at most one set.
    pub fn delay_and_due(self) -> (Option<i64>, Option<NaiveDateTime>) {
        match self {
            Delivery::AfterMs(ms) => (Some(ms), None),
            Delivery::At(at) => (None, Some(at)),
            Delivery::Immediate => (None, None),
        }
    }
}

/// A message's place in an ordered group (see [`crate::SendOptions::group`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupPlace {
    /// The group's key.
    pub key: String,
    /// The place it keeps in its group: a copy written again (a retry) keeps the place of the
    /// message it stands in for; `None` for a first send, which queues behind the group.
    pub position: Option<i64>,
}

/// A message ready to be inserted: everything serialized, nothing left to compute per row.
#[derive(Clone, Debug)]
pub(crate) struct OutgoingMessage {
    pub destination: Destination,
    pub id: Uuid,
    pub headers_json: String,
    pub body: Vec<u8>,
    /// `CorrelationId` column; `None` (NULL) unless version-1 columns are filled.
    pub correlation_id: Option<String>,
    /// `ReplyToAddress` column; `None` (NULL) unless version-1 columns are filled.
    pub reply_to_address: Option<String>,
    /// Time to be received in milliseconds; the database turns it into `Expires`.
    pub time_to_be_received_ms: Option<i64>,
    /// An absolute `Expires` (UTC), kept when a received message is written again (retries,
    /// delayed delivery); wins over `time_to_be_received_ms`.
    pub expires_at: Option<NaiveDateTime>,
    /// When it becomes visible. A message of a group waits in its place in the queue for a
    /// delay (a delayed retry), instead of among the delayed messages.
    pub delivery: Delivery,
    /// Its ordered group, if it has one.
    pub group: Option<GroupPlace>,
    /// Its priority, when it was sent with one (higher is received first).
    pub priority: Option<i16>,
    /// Its body, when the claim check stores it apart (`body` is then empty and the headers name
    /// its id): written with the message's row, one copy per row. `None` for a copy of a
    /// received message whose body is stored apart already.
    pub stored_apart: Option<StoredApart>,
}

/// A body the claim check stores apart from its queue row ([`crate::claim_check`]).
#[derive(Debug, Clone)]
pub(crate) struct StoredApart {
    /// The id the message's [`headers::CLAIM_CHECK`] header names.
    pub id: Uuid,
    /// The bytes, as written (after compression and encryption).
    pub body: Vec<u8>,
}

impl OutgoingMessage {
    /// This message for another row (a publish's next subscriber): its body stored apart under
    /// a new id of its own, so that each row's handling deletes its own. `None` when its body
    /// is in its row.
    pub fn for_another_row(&self) -> Option<OutgoingMessage> {
        let stored = self.stored_apart.as_ref()?;
        let id = Uuid::new_v4();
        Some(OutgoingMessage {
            destination: self.destination.clone(),
            id: self.id,
            headers_json: self
                .headers_json
                .replace(&stored.id.to_string(), &id.to_string()),
            body: Vec::new(),
            correlation_id: self.correlation_id.clone(),
            reply_to_address: self.reply_to_address.clone(),
            time_to_be_received_ms: self.time_to_be_received_ms,
            expires_at: self.expires_at,
            delivery: self.delivery,
            group: self.group.clone(),
            priority: self.priority,
            stored_apart: Some(StoredApart {
                id,
                body: stored.body.clone(),
            }),
        })
    }
}

/// The priority `headers` carry ([`headers::PRIORITY`]), if they carry a readable one.
pub(crate) fn priority_in(headers: &Headers) -> Option<i16> {
    headers.get(headers::PRIORITY)?.parse().ok()
}

/// The ordered group the serialized headers `json` name ([`headers::GROUP`]), read only when
/// the text names the header: a delayed message of a group joins the end of its group when due.
pub(crate) fn group_in_json(json: &str) -> Option<GroupPlace> {
    if !json.contains(headers::GROUP) {
        return None;
    }
    let headers = serde_json::from_str::<Headers>(json).ok()?;
    Some(GroupPlace {
        key: headers.get(headers::GROUP)?.clone(),
        position: None,
    })
}

/// The priority the serialized headers `json` carry, read only when the text names the header.
pub(crate) fn priority_in_json(json: &str) -> Option<i16> {
    if !json.contains(headers::PRIORITY) {
        return None;
    }
    serde_json::from_str::<Headers>(json)
        .ok()
        .as_ref()
        .and_then(priority_in)
}

/// A row taken from a queue table by a receive.
#[derive(Clone, Debug)]
pub(crate) struct ReceivedMessage {
    /// The `Id` column as text.
    pub row_id: String,
    pub headers_json: String,
    pub body: Vec<u8>,
    pub correlation_id: Option<String>,
    pub reply_to_address: Option<String>,
    /// `Expires` is in the past by database time: the message must not be handled.
    pub expired: bool,
    /// The `Expires` column (UTC).
    pub expires: Option<NaiveDateTime>,
    /// Columns the driver could not read (a value out of range, text that is not UTF-8, …): the
    /// message goes to the dead letters with this reason.
    pub undecodable: Option<String>,
    /// Its ordered group and place there, when a grouped receive took it from a group.
    pub group: Option<GroupPlace>,
}

/// Who is sending: the endpoint's names, used to fill the origin headers.
#[derive(Debug)]
pub(crate) struct EndpointIdentity {
    pub application: String,
    pub instance: String,
    pub input_queue: QueueName,
    /// The instance's own queue (`Application.instance`), when it has one: multicast events
    /// and replies arrive there.
    pub instance_queue: Option<QueueName>,
    /// Write `CorrelationId`/`ReplyToAddress` columns too, for version-1 receivers.
    pub fill_v1_columns: bool,
    /// How message ids are made.
    pub message_ids: MessageIds,
    /// The bus's schema, and how its database writes the addresses of its queues.
    pub schema: crate::names::SchemaName,
    pub address_form: crate::names::AddressForm,
    /// The input queue's address, made on first use (see [`EndpointIdentity::reply_address`]).
    pub reply_address: std::sync::OnceLock<String>,
    /// The largest body (serialized) a send may write.
    pub max_body_size: usize,
    /// What the bus does to the bodies it sends (compression, encryption) and undoes on those
    /// it receives.
    pub codecs: crate::body_codecs::BodyCodecs,
    /// Which bodies are stored apart from their queue rows.
    pub claim_check: crate::claim_check::ClaimCheck,
}

impl EndpointIdentity {
    /// The address of `queue` (one of this bus's) as a reply to it must name it: with the
    /// schema, on databases that have schemas, as NServiceBus writes its `ReplyToAddress`.
    pub fn address_of(&self, queue: &QueueName) -> String {
        self.address_form.address_of(&self.schema, queue)
    }

    /// The address of the input queue, which every message this bus sends names as its
    /// `NServiceBus.ReplyToAddress`: made once, not per message.
    pub fn reply_address(&self) -> &str {
        self.reply_address
            .get_or_init(|| self.address_of(&self.input_queue))
    }
}

/// How message ids are made. They are time-ordered, so that in the shared-table layout, where
/// FIFO is by `VisibleAfter` then `MessageId`, messages sent in the same instant keep their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageIds {
    /// UUID version 7: ordered as bytes and as text (PostgreSQL, SQLite), and by creation within
    /// a process.
    TimeOrdered,
    /// A UUID version 7 with its time and counter bytes moved to the end, because SQL Server
    /// orders `uniqueidentifier` by bytes 10–15 first, then 8–9.
    SqlServerOrdered,
}

impl MessageIds {
    pub fn next(self) -> Uuid {
        let v7 = Uuid::now_v7();
        match self {
            MessageIds::TimeOrdered => v7,
            MessageIds::SqlServerOrdered => {
                let b = v7.as_bytes();
                let mut out = [0u8; 16];
                // SQL Server compares 10..16, then 8..10, then 6..8, 4..6, 0..4.
                out[10..16].copy_from_slice(&b[0..6]);
                out[8..10].copy_from_slice(&b[6..8]);
                out[6..8].copy_from_slice(&b[8..10]);
                out[4..6].copy_from_slice(&b[10..12]);
                out[0..4].copy_from_slice(&b[12..16]);
                Uuid::from_bytes(out)
            }
        }
    }
}

/// The message being handled, when a send happens inside a handler.
#[derive(Clone, Debug)]
pub(crate) struct Causation {
    pub message_id: String,
    pub conversation_id: Option<String>,
    pub correlation_id: Option<String>,
}

/// What the message is doing, for `NServiceBus.MessageIntent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    Send,
    Publish,
    Reply,
}

impl Intent {
    fn header_value(self) -> &'static str {
        match self {
            Intent::Send => "Send",
            Intent::Publish => "Publish",
            Intent::Reply => "Reply",
        }
    }
}

/// How a message is sent: a delay or a due time, a time to be received, and a destination that
/// overrides the route. Build one with [`SendOptions::new`] and its setters.
///
/// ```
/// use std::time::Duration;
/// let options = nimbus::SendOptions::new()
///     .delay(Duration::from_secs(30))
///     .time_to_be_received(Duration::from_secs(600))
///     .to("Billing");
/// ```
#[derive(Clone, Debug, Default)]
pub struct SendOptions {
    delay: Option<Duration>,
    due: Option<chrono::DateTime<chrono::Utc>>,
    time_to_be_received: Option<Duration>,
    destination: Option<String>,
    message_id: Option<Uuid>,
    own_transaction: bool,
    group: Option<String>,
    priority: Option<i16>,
}

/// The longest group key, in bytes (the `GroupKey` column is `varchar(255)`).
pub const MAX_GROUP_KEY_LEN: usize = 255;

impl SendOptions {
    /// Options that change nothing: send at once, never expire, to the routed queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deliver after `delay`, measured by the database's clock (the sender's clock does not
    /// matter).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Deliver at `due` (UTC).
    pub fn deliver_at(mut self, due: chrono::DateTime<chrono::Utc>) -> Self {
        self.due = Some(due);
        self
    }

    /// Discard the message, unhandled, if it has not been received within `ttl` of being sent
    /// (fills `Expires` by database time; NServiceBus's `TimeToBeReceived`).
    pub fn time_to_be_received(mut self, ttl: Duration) -> Self {
        self.time_to_be_received = Some(ttl);
        self
    }

    /// Send to `queue` instead of the queue routed for the message's type: a queue of the bus's
    /// schema, or an address of a queue in another schema (`Invoices@[billing]`; see
    /// [`QueueName::parse`](crate::QueueName::parse)).
    pub fn to(mut self, queue: impl Into<String>) -> Self {
        self.destination = Some(queue.into());
        self
    }

    /// Sends under `id` (`NServiceBus.MessageId` and the row's `Id`) instead of a fresh one, so
    /// that a send repeated after an ambiguous error (a timeout, a lost connection at commit)
    /// carries the same id: receivers can recognise the copy, and in the shared-table layout,
    /// where `MessageId` is the primary key, the database refuses the second one.
    pub fn message_id(mut self, id: Uuid) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Sends the message as part of the ordered group `key` (an order number, an account id):
    /// the receiving queue hands out the messages of one group one at a time, in the order
    /// they were sent, across every receiver and instance, while other groups run in
    /// parallel. A message that fails holds its group until it succeeds or is dead-lettered.
    ///
    /// The receiving endpoint must keep groups (see
    /// [`BusBuilder::ordered_groups`](crate::BusBuilder::ordered_groups)); a send to a queue
    /// that does not fails and writes nothing. A key is 1 to [`MAX_GROUP_KEY_LEN`] bytes. With
    /// a delay or a due time the message waits among the delayed messages (where it can be
    /// cancelled or rescheduled) and joins the end of its group when it is due.
    pub fn group(mut self, key: impl Into<String>) -> Self {
        self.group = Some(key.into());
        self
    }

    /// Sends the message at `priority`: the receiving queue hands out higher priorities first,
    /// and the oldest first within a priority. 0 is normal (what every message sent without a
    /// priority has), negative is below normal.
    ///
    /// The receiving endpoint must keep priorities (see
    /// [`BusBuilder::priorities`](crate::BusBuilder::priorities)); a send to a queue that does
    /// not fails and writes nothing. With [`group`](Self::group) too, the queue must keep both:
    /// the priority of a group's first message decides when the group goes next, and the
    /// group's messages keep their send order whatever their priorities.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Commits this send in a transaction of its own instead of one shared with the bus's
    /// other sends of the moment (see [`BusBuilder::shared_commits`](crate::BusBuilder::shared_commits)):
    /// for a send that must not wait for, or fail with, another task's sends.
    pub fn own_transaction(mut self) -> Self {
        self.own_transaction = true;
        self
    }

    pub(crate) fn own_transaction_asked(&self) -> bool {
        self.own_transaction
    }

    pub(crate) fn destination(&self) -> Option<&str> {
        self.destination.as_deref()
    }

    /// Whether a delay or a due time was asked for.
    pub(crate) fn delays(&self) -> bool {
        self.delay.is_some() || self.due.is_some()
    }

    /// The message id asked for, if any.
    pub(crate) fn chosen_message_id(&self) -> Option<Uuid> {
        self.message_id
    }

    /// Checks the options and applies them to `message`.
    pub(crate) fn apply(&self, message: &mut OutgoingMessage) -> Result<()> {
        let millis = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        message.delivery = match (self.delay, self.due) {
            (Some(_), Some(_)) => {
                return Err(NimbusError::config(
                    "a send has both a delay and a due time",
                    "use either SendOptions::delay or SendOptions::deliver_at",
                ))
            }
            (Some(delay), None) if delay.is_zero() => Delivery::Immediate,
            (Some(delay), None) => Delivery::AfterMs(millis(delay)),
            (None, Some(due)) => Delivery::At(due.naive_utc()),
            (None, None) => Delivery::Immediate,
        };
        if let Some(key) = &self.group {
            if key.is_empty() || key.len() > MAX_GROUP_KEY_LEN {
                return Err(NimbusError::config(
                    format!(
                        "a group key of {} bytes cannot be stored (1 to {MAX_GROUP_KEY_LEN} bytes)",
                        key.len()
                    ),
                    "give SendOptions::group a shorter, non-empty key (a hash of a long one)",
                ));
            }
            message.group = Some(GroupPlace {
                key: key.clone(),
                position: None,
            });
        }
        message.priority = self.priority;
        if let Some(ttl) = self.time_to_be_received {
            if ttl.is_zero() {
                return Err(NimbusError::config(
                    "a time to be received of zero would discard the message at once",
                    "give SendOptions::time_to_be_received a positive duration",
                ));
            }
            message.time_to_be_received_ms = Some(millis(ttl).max(1));
        }
        Ok(())
    }
}

/// `NServiceBus.TimeToBeReceived` is a .NET `TimeSpan`: `[d.]hh:mm:ss[.fffffff]`.
fn format_time_span(d: Duration) -> String {
    let total = d.as_secs();
    let (days, h, m, s) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let frac = d.subsec_nanos() / 100;
    let mut text = if days > 0 {
        format!("{days}.{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    };
    if frac > 0 {
        text.push_str(&format!(".{frac:07}"));
    }
    text
}

/// Serializes `message` and its headers into an [`OutgoingMessage`], with `options` applied.
pub(crate) fn build_outgoing_with<M: Message>(
    message: &M,
    intent: Intent,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    causation: Option<&Causation>,
    options: &SendOptions,
) -> Result<OutgoingMessage> {
    let id = options.message_id;
    let mut out = build_outgoing_inner(
        message,
        intent,
        destination,
        origin,
        causation,
        id,
        |h, _| {
            if let Some(ttl) = options.time_to_be_received {
                h.insert(headers::TIME_TO_BE_RECEIVED.into(), format_time_span(ttl));
            }
            if let Some(key) = &options.group {
                h.insert(headers::GROUP.into(), key.clone());
            }
            if let Some(priority) = options.priority {
                h.insert(headers::PRIORITY.into(), priority.to_string());
            }
        },
    )?;
    options.apply(&mut out)?;
    Ok(out)
}

/// Serializes a request: replies go to `reply_to` (the instance queue) and carry the request's
/// own message id as their correlation id, which is how the waiting caller recognises them.
pub(crate) fn build_request<M: Message>(
    message: &M,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    reply_to: &QueueName,
    options: &SendOptions,
) -> Result<OutgoingMessage> {
    let id = options.message_id;
    let mut out = build_outgoing_inner(
        message,
        Intent::Send,
        destination,
        origin,
        None,
        id,
        |h, id| {
            h.insert(headers::CORRELATION_ID.into(), id.to_string());
            h.insert(
                headers::REPLY_TO_ADDRESS.into(),
                origin.address_of(reply_to),
            );
            if let Some(ttl) = options.time_to_be_received {
                h.insert(headers::TIME_TO_BE_RECEIVED.into(), format_time_span(ttl));
            }
            if let Some(key) = &options.group {
                h.insert(headers::GROUP.into(), key.clone());
            }
            if let Some(priority) = options.priority {
                h.insert(headers::PRIORITY.into(), priority.to_string());
            }
        },
    )?;
    options.apply(&mut out)?;
    Ok(out)
}

/// Serializes the message a schedule's tick sends: its id is `id` (the tick's own, see
/// `pipeline::schedule`), and its headers name the schedule and the tick.
pub(crate) fn build_scheduled<M: Message>(
    message: &M,
    intent: Intent,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    id: Uuid,
    schedule: &str,
    tick: NaiveDateTime,
) -> Result<OutgoingMessage> {
    build_outgoing_inner(
        message,
        intent,
        destination,
        origin,
        None,
        Some(id),
        |h, _| {
            h.insert(headers::SCHEDULE.into(), schedule.to_string());
            h.insert(
                headers::SCHEDULED_FOR.into(),
                headers::format_time(tick.and_utc()),
            );
        },
    )
}

/// Serializes `message` and its headers into an [`OutgoingMessage`].
pub(crate) fn build_outgoing<M: Message>(
    message: &M,
    intent: Intent,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    causation: Option<&Causation>,
) -> Result<OutgoingMessage> {
    build_outgoing_inner(
        message,
        intent,
        destination,
        origin,
        causation,
        None,
        |_, _| {},
    )
}

/// `message` as JSON, refused once it grows past `limit` bytes: a body too large for the bus is
/// found before anything is written, and without serializing all of it.
fn serialize_within<M: Message>(message: &M, limit: usize) -> Result<Vec<u8>> {
    /// A buffer that refuses to grow past its limit.
    struct Bounded {
        bytes: Vec<u8>,
        limit: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.bytes.len() + buf.len() > self.limit {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    "the body is larger than max_body_size",
                ));
            }
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        bytes: Vec::new(),
        limit,
    };
    match serde_json::to_writer(&mut out, message) {
        Ok(()) => Ok(out.bytes),
        Err(e) if e.io_error_kind() == Some(std::io::ErrorKind::FileTooLarge) => {
            Err(NimbusError::MessageTooLarge {
                type_name: M::TYPE_NAME,
                limit,
            })
        }
        Err(source) => Err(NimbusError::Serialize {
            type_name: M::TYPE_NAME,
            source,
        }),
    }
}

fn build_outgoing_inner<M: Message>(
    message: &M,
    intent: Intent,
    destination: Destination,
    origin: &Arc<EndpointIdentity>,
    causation: Option<&Causation>,
    id: Option<Uuid>,
    extra_headers: impl FnOnce(&mut Headers, &str),
) -> Result<OutgoingMessage> {
    let body = serialize_within(message, origin.max_body_size)?;
    let (body, marks) = match origin.codecs.is_empty() {
        true => (body, Vec::new()),
        false => origin.codecs.encode(M::TYPE_NAME, body)?,
    };
    let id = id.unwrap_or_else(|| origin.message_ids.next());
    let id_text = id.to_string();
    let (body, stored_apart) = match origin.claim_check.claims(M::TYPE_NAME, body.len()) {
        true => (
            Vec::new(),
            Some(StoredApart {
                id: Uuid::new_v4(),
                body,
            }),
        ),
        false => (body, None),
    };
    let claim = stored_apart
        .as_ref()
        .map(|s| (s.id.to_string(), s.body.len().to_string()));
    let correlation_id = causation
        .and_then(|c| c.correlation_id.as_deref())
        .unwrap_or(&id_text);
    let conversation_id = causation
        .and_then(|c| c.conversation_id.as_deref())
        .unwrap_or(&id_text);
    let time_sent = headers::format_time(chrono::Utc::now());
    // Every message's own headers, borrowed; what the caller and the trace add goes into a map
    // of its own and wins over these (as inserting it into one map after them would).
    let mut fixed: Vec<(&str, &str)> = vec![
        (headers::MESSAGE_ID, &id_text),
        (headers::ENCLOSED_MESSAGE_TYPES, M::TYPE_NAME),
        (headers::CONTENT_TYPE, headers::JSON_CONTENT_TYPE),
        (headers::MESSAGE_INTENT, intent.header_value()),
        (headers::TIME_SENT, &time_sent),
        (headers::ORIGINATING_ENDPOINT, &origin.application),
        (headers::ORIGINATING_MACHINE, &origin.instance),
        (headers::REPLY_TO_ADDRESS, origin.reply_address()),
        (headers::CORRELATION_ID, correlation_id),
        (headers::CONVERSATION_ID, conversation_id),
    ];
    if let Some(c) = causation {
        fixed.push((headers::RELATED_TO, &c.message_id));
    }
    fixed.extend(marks.iter().map(|(name, value)| (*name, value.as_str())));
    if let Some((claim_id, size)) = &claim {
        fixed.push((headers::CLAIM_CHECK, claim_id));
        fixed.push((headers::CLAIM_CHECK_SIZE, size));
    }
    let mut extra = Headers::new();
    extra_headers(&mut extra, &id_text);
    crate::telemetry::inject_current(&mut extra);
    let merged = MergedHeaders::new(fixed, &extra);
    let (correlation_column, reply_to_column) = if origin.fill_v1_columns {
        (
            merged.get(headers::CORRELATION_ID).map(str::to_string),
            merged.get(headers::REPLY_TO_ADDRESS).map(str::to_string),
        )
    } else {
        (None, None)
    };
    let headers_json = merged.to_json();
    Ok(OutgoingMessage {
        destination,
        id,
        headers_json,
        body,
        correlation_id: correlation_column,
        reply_to_address: reply_to_column,
        time_to_be_received_ms: None,
        expires_at: None,
        delivery: Delivery::Immediate,
        group: None,
        priority: None,
        stored_apart,
    })
}

/// An outgoing message's headers: its own, borrowed, and the ones added to them (which win over
/// the same name), written in name order as a JSON object — the text one map of them all would
/// give, without copying every name and value into one.
struct MergedHeaders<'a> {
    /// In name order, each name once.
    entries: Vec<(&'a str, &'a str)>,
}

impl<'a> MergedHeaders<'a> {
    fn new(mut fixed: Vec<(&'a str, &'a str)>, extra: &'a Headers) -> Self {
        fixed.retain(|(name, _)| !extra.contains_key(*name));
        fixed.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        fixed.sort_unstable_by(|a, b| a.0.cmp(b.0));
        MergedHeaders { entries: fixed }
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

impl MergedHeaders<'_> {
    /// The headers as a JSON object, byte for byte what `serde_json` writes for the same map.
    /// Every send writes one: names and values that need no escaping (nearly all of them) are
    /// copied as they are, where going through a serializer cost about as much as the rest of
    /// building the message.
    fn to_json(&self) -> String {
        let size = self
            .entries
            .iter()
            .map(|(name, value)| name.len() + value.len() + 6)
            .sum::<usize>()
            + 2;
        let mut out = String::with_capacity(size);
        out.push('{');
        for (i, (name, value)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_json_string(&mut out, name);
            out.push(':');
            push_json_string(&mut out, value);
        }
        out.push('}');
        out
    }
}

/// Appends `text` as a JSON string, escaped as `serde_json` escapes it: `"`, `\` and the
/// control characters, nothing else.
fn push_json_string(out: &mut String, text: &str) {
    // Without an early exit the check runs many bytes at a time; nearly every header passes it.
    let needs_escape = text.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    out.push('"');
    if !needs_escape {
        out.push_str(text);
    } else {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut copied = 0;
        for (at, b) in text.bytes().enumerate() {
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0x00..=0x1f => "",
                _ => continue,
            };
            // Every byte escaped is ASCII, so `at` is always between two characters.
            out.push_str(&text[copied..at]);
            if short.is_empty() {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            } else {
                out.push_str(short);
            }
            copied = at + 1;
        }
        out.push_str(&text[copied..]);
    }
    out.push('"');
}

/// Why a received row cannot be dispatched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("the Headers column is not a JSON object of strings: {0}")]
    Headers(serde_json::Error),
    /// The headers parsed but name no type; they are kept for the dead letter.
    #[error("the message has no {} header", headers::ENCLOSED_MESSAGE_TYPES)]
    NoType(Box<Incoming>),
}

/// A received message's headers, read, with the version-1 rules applied. The body stays in
/// the [`ReceivedMessage`].
#[derive(Clone, Debug)]
pub(crate) struct Incoming {
    pub headers: IncomingHeaders,
    pub type_name: String,
    pub message_id: String,
}

impl Incoming {
    /// Reads the headers; `CorrelationId`/`ReplyToAddress` come from the headers, falling back
    /// to the columns when a version-1 sender filled only those.
    pub fn decode(row: &ReceivedMessage) -> std::result::Result<Self, DecodeError> {
        let headers = IncomingHeaders::read(
            row.headers_json.clone(),
            row.correlation_id.as_deref(),
            row.reply_to_address.as_deref(),
        )
        .map_err(DecodeError::Headers)?;
        let message_id = headers
            .get(headers::MESSAGE_ID)
            .map_or_else(|| row.row_id.clone(), str::to_string);
        let Some(type_name) = headers
            .get(headers::ENCLOSED_MESSAGE_TYPES)
            .and_then(headers::first_enclosed_type)
            .map(str::to_string)
        else {
            return Err(DecodeError::NoType(Box::new(Incoming {
                headers,
                type_name: String::new(),
                message_id,
            })));
        };
        Ok(Incoming {
            headers,
            type_name,
            message_id,
        })
    }

    pub fn causation(&self) -> Causation {
        Causation {
            message_id: self.message_id.clone(),
            conversation_id: self
                .headers
                .get(headers::CONVERSATION_ID)
                .map(str::to_string),
            correlation_id: self
                .headers
                .get(headers::CORRELATION_ID)
                .map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(headers: &str, correlation: Option<&str>, reply_to: Option<&str>) -> ReceivedMessage {
        ReceivedMessage {
            row_id: "9f1c2b9e-0000-0000-0000-000000000001".into(),
            headers_json: headers.into(),
            body: b"{}".to_vec(),
            correlation_id: correlation.map(Into::into),
            reply_to_address: reply_to.map(Into::into),
            expired: false,
            expires: None,
            undecodable: None,
            group: None,
        }
    }

    #[test]
    fn headers_are_written_as_serde_json_writes_the_same_map() {
        let tricky = [
            "",
            "plain",
            "Sales.PlaceOrder, Sales, Version=1.0.0.0",
            "quote \" inside",
            "back\\slash",
            "tab\tnew\nline\r\u{1}\u{1f}\u{8}\u{c}\u{0}",
            "del \u{7f} and é ü 日本 🚀",
            "</script>&'",
        ];
        for (i, value) in tricky.iter().enumerate() {
            let extra: Headers = [
                (format!("X.Extra.{i}"), value.to_string()),
                (value.to_string(), "name is tricky".to_string()),
            ]
            .into_iter()
            .collect();
            let fixed = vec![
                (headers::MESSAGE_ID, "id-1"),
                (headers::CONTENT_TYPE, *value),
            ];
            let merged = MergedHeaders::new(fixed.clone(), &extra);
            let mut expected: std::collections::BTreeMap<&str, &str> = fixed.into_iter().collect();
            expected.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            assert_eq!(
                merged.to_json(),
                serde_json::to_string(&expected).unwrap(),
                "{value:?}"
            );
            let parsed: Headers = serde_json::from_str(&merged.to_json()).unwrap();
            assert_eq!(
                parsed.get(headers::CONTENT_TYPE).map(String::as_str),
                Some(*value)
            );
        }
    }

    #[test]
    fn v1_columns_fill_missing_headers_only() {
        let msg = Incoming::decode(&row(
            r#"{"NServiceBus.EnclosedMessageTypes":"A","NServiceBus.CorrelationId":"from-header"}"#,
            Some("from-column"),
            Some("ReplyQueue"),
        ))
        .unwrap();
        assert_eq!(
            msg.headers.get(headers::CORRELATION_ID),
            Some("from-header")
        );
        assert_eq!(
            msg.headers.get(headers::REPLY_TO_ADDRESS),
            Some("ReplyQueue")
        );
        assert_eq!(msg.message_id, "9f1c2b9e-0000-0000-0000-000000000001");
    }

    #[test]
    fn message_ids_are_ordered_as_each_database_sorts_them() {
        let ids: Vec<Uuid> = (0..1000).map(|_| MessageIds::TimeOrdered.next()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "bytes");
        assert!(
            ids.windows(2).all(|w| w[0].to_string() < w[1].to_string()),
            "text"
        );
        // SQL Server's uniqueidentifier order: bytes 10..16, 8..10, 6..8, 4..6, 0..4.
        let key = |u: &Uuid| {
            let b = u.as_bytes();
            [&b[10..16], &b[8..10], &b[6..8], &b[4..6], &b[0..4]].concat()
        };
        let ids: Vec<Uuid> = (0..1000)
            .map(|_| MessageIds::SqlServerOrdered.next())
            .collect();
        assert!(ids.windows(2).all(|w| key(&w[0]) < key(&w[1])));
    }

    #[test]
    fn time_spans_are_formatted_like_dotnet() {
        assert_eq!(format_time_span(Duration::from_secs(10)), "00:00:10");
        assert_eq!(format_time_span(Duration::from_secs(90_061)), "1.01:01:01");
        assert_eq!(
            format_time_span(Duration::from_millis(1500)),
            "00:00:01.5000000"
        );
    }

    fn identity(fill_v1_columns: bool) -> Arc<EndpointIdentity> {
        Arc::new(EndpointIdentity {
            application: "Shop".into(),
            instance: "shop-1".into(),
            input_queue: QueueName::new("Shop").unwrap(),
            instance_queue: None,
            fill_v1_columns,
            message_ids: MessageIds::TimeOrdered,
            schema: crate::names::SchemaName::new("main").unwrap(),
            address_form: crate::names::AddressForm::OwnSchemaOnly,
            reply_address: Default::default(),
            max_body_size: usize::MAX,
            codecs: Default::default(),
            claim_check: crate::claim_check::ClaimCheck::off(),
        })
    }

    #[test]
    fn headers_are_written_as_one_sorted_map_with_additions_winning() {
        let origin = identity(true);
        let reply_to = QueueName::new("Shop.shop-1").unwrap();
        let options = SendOptions::new().time_to_be_received(Duration::from_secs(90));
        let out = build_request(
            &Probe,
            Destination::Queue(QueueName::new("Billing").unwrap()),
            &origin,
            &reply_to,
            &options,
        )
        .unwrap();
        let map: Headers = serde_json::from_str(&out.headers_json).unwrap();
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            out.headers_json,
            "names in order, each once"
        );
        let id = out.id.to_string();
        assert_eq!(map[headers::MESSAGE_ID], id);
        assert_eq!(
            map[headers::CORRELATION_ID],
            id,
            "a request correlates by its id"
        );
        assert_eq!(map[headers::REPLY_TO_ADDRESS], origin.address_of(&reply_to));
        assert_eq!(map[headers::TIME_TO_BE_RECEIVED], "00:01:30");
        assert_eq!(map[headers::ENCLOSED_MESSAGE_TYPES], "Probe");
        assert_eq!(map.len(), 11, "{map:?}");
        assert_eq!(out.correlation_id.as_deref(), Some(id.as_str()));
        assert_eq!(
            out.reply_to_address.as_deref(),
            Some(origin.address_of(&reply_to).as_str())
        );

        let causation = Causation {
            message_id: "m-0".into(),
            conversation_id: Some("conv".into()),
            correlation_id: None,
        };
        let sent = build_outgoing(
            &Probe,
            Intent::Publish,
            Destination::Topic("Probe"),
            &identity(false),
            Some(&causation),
        )
        .unwrap();
        let map: Headers = serde_json::from_str(&sent.headers_json).unwrap();
        assert_eq!(serde_json::to_string(&map).unwrap(), sent.headers_json);
        assert_eq!(map[headers::RELATED_TO], "m-0");
        assert_eq!(map[headers::CONVERSATION_ID], "conv");
        assert_eq!(map[headers::CORRELATION_ID], sent.id.to_string());
        assert_eq!(map[headers::REPLY_TO_ADDRESS], "Shop");
        assert_eq!((sent.correlation_id, sent.reply_to_address), (None, None));
    }

    #[test]
    fn options_refuse_contradictions() {
        let mut out = build_outgoing(
            &Probe,
            Intent::Send,
            Destination::Topic("t"),
            &Arc::new(EndpointIdentity {
                application: "A".into(),
                instance: "1".into(),
                input_queue: QueueName::new("A").unwrap(),
                instance_queue: None,
                fill_v1_columns: false,
                message_ids: MessageIds::TimeOrdered,
                schema: crate::names::SchemaName::new("main").unwrap(),
                address_form: crate::names::AddressForm::OwnSchemaOnly,
                reply_address: Default::default(),
                max_body_size: usize::MAX,
                codecs: Default::default(),
                claim_check: crate::claim_check::ClaimCheck::off(),
            }),
            None,
        )
        .unwrap();
        let both = SendOptions::new()
            .delay(Duration::from_secs(1))
            .deliver_at(chrono::Utc::now());
        assert!(both.apply(&mut out).is_err());
        let zero_ttl = SendOptions::new().time_to_be_received(Duration::ZERO);
        assert!(zero_ttl.apply(&mut out).is_err());
        SendOptions::new()
            .delay(Duration::from_millis(1500))
            .time_to_be_received(Duration::from_secs(2))
            .apply(&mut out)
            .unwrap();
        assert_eq!(out.delivery, Delivery::AfterMs(1500));
        assert_eq!(out.time_to_be_received_ms, Some(2000));
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Probe;
    impl Message for Probe {
        const TYPE_NAME: &'static str = "Probe";
        const KIND: crate::MessageKind = crate::MessageKind::Message;
    }

    #[test]
    fn malformed_headers_and_missing_type_are_errors() {
        assert!(matches!(
            Incoming::decode(&row("not json", None, None)),
            Err(DecodeError::Headers(_))
        ));
        assert!(matches!(
            Incoming::decode(&row("{}", None, None)),
            Err(DecodeError::NoType(_))
        ));
    }
}
