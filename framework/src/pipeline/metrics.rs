//! What an endpoint counts: its own counters, readable at any time with
//! [`crate::Bus::metrics`], and the same events through the [`metrics`] facade, labelled by
//! queue and message type, for whatever exporter the application installs (Prometheus, StatsD,
//! OpenTelemetry…). Without an installed recorder the facade costs next to nothing. The
//! per-message counters of each handled message type are registered at 0 when the endpoint
//! starts, so their series exist before the first event.
//!
//! | name | kind | labels |
//! | --- | --- | --- |
//! | `nimbus_messages_received_total` | counter | queue, message_type |
//! | `nimbus_messages_handled_total` | counter | queue, message_type |
//! | `nimbus_messages_failed_total` | counter | queue, message_type |
//! | `nimbus_messages_retried_total` | counter | queue, message_type, retry (`immediate`, `delayed`) |
//! | `nimbus_messages_dead_lettered_total` | counter | queue, message_type |
//! | `nimbus_messages_expired_total` | counter | queue, message_type, how (`discarded`, `purged`) |
//! | `nimbus_delayed_messages_delivered_total` | counter | |
//! | `nimbus_dead_letters_expired_total` | counter | (dead letters deleted after the retention period) |
//! | `nimbus_saga_timeouts_dropped_total` | counter | saga (timeouts that came due after their instance completed) |
//! | `nimbus_published_to_no_subscriber_total` | counter | message_type (events published while nothing subscribed to them: no copy written) |
//! | `nimbus_handling_seconds` | histogram | queue, message_type |
//! | `nimbus_send_to_handled_seconds` | histogram | queue, message_type (by `NServiceBus.TimeSent`, the sender's clock) |
//! | `nimbus_queue_depth` | gauge | queue (the estimate of the last peek) |
//! | `nimbus_queue_table_dead_rows` | gauge | queue (PostgreSQL: dead rows of its table at the last look, 0 after a vacuum) |
//! | `nimbus_queue_table_vacuums_total` | counter | queue (PostgreSQL: vacuums this endpoint ran on its table) |
//! | `nimbus_queue_peeks_total` | counter | queue (depth estimates this endpoint asked the database for: its polling load) |
//! | `nimbus_queue_empty_receives_total` | counter | queue (receives that found nothing to take: other receivers got there first; many per handled message means wasted polling) |
//! | `nimbus_queue_receives_total` | counter | queue (receives that took messages, each one transaction: fewer than the messages received where receivers took several at once) |
//! | `nimbus_connections_closed_idle_total` | counter | (pooled connections closed after nobody took them for `connection_idle_timeout`) |
//! | `nimbus_connections_open` | gauge | database (the process's connections to it, every bus's, pooled in use or idle; PostgreSQL and SQL Server) |
//! | `nimbus_connection_limit` | gauge | database (the process's connection budget for it: `connection_limit`) |
//! | `nimbus_connection_waits_total` | counter | database (connections that had to wait for the budget, every one of it in use) |
//! | `nimbus_connection_wait_seconds` | histogram | database (how long those waits took) |
//! | `nimbus_delayed_changes_total` | counter | operation (`cancel`, `reschedule`), found (`true` when the delayed message was waiting; `false` when it was delivered already) |
//! | `nimbus_transaction_conflicts_total` | counter | queue (receives rolled back because their transaction gave way to another: a deadlock, a serialization failure, a saga race; received again at once) |
//! | `nimbus_leases_taken_total` | counter | queue, message_type (messages moved out of their queue under a lease for a long handler) |
//! | `nimbus_leases_renewed_total` | counter | queue (renewals of leases while their handlers ran) |
//! | `nimbus_leases_expired_total` | counter | queue (leases taken back after their holder stopped or stalled past them: the message is retried or dead-lettered) |
//! | `nimbus_leases_lost_total` | counter | queue, message_type (handlers that finished after their lease was taken back: what they sent was discarded) |
//! | `nimbus_sends_total` | counter | (the application's sends through the bus, each call once) |
//! | `nimbus_send_commits_total` | counter | (the commits those sends took: fewer than the sends where they shared commits) |
//! | `nimbus_groups_held_total` | counter | queue (failed attempts of a message of an ordered group, put back in its place: its group waits for the retry) |
//! | `nimbus_bodies_unreadable_total` | counter | queue, reason (`unknown_key`, `no_keys`, `tampered`, `unsupported`, `too_large`, `corrupt`: bodies the endpoint could not decrypt or decompress, sent to the dead letters) |
//! | `nimbus_prioritized_messages_received_total` | counter | queue, priority (messages sent with a priority, taken to be handled) |
//! | `nimbus_messages_held_total` | counter | queue, message_type, limit (`concurrency` or `rate`: messages put back to wait because their limit was full; no attempt counted) |
//! | `nimbus_queue_oldest_message_age_seconds` | gauge | queue (the first message's `NServiceBus.TimeSent`, the sender's clock, read at most every 5 s while the queue is not empty; 0 when a peek finds it empty) |

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Gives every metric its unit and help text (Prometheus's `# HELP`) in the recorder installed
/// now; each endpoint's start does, so a recorder installed before it has them.
pub(crate) fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    {
        let counters = [
            ("nimbus_messages_received_total", "Messages taken from a queue to be handled"),
            ("nimbus_messages_handled_total", "Messages handled and committed"),
            ("nimbus_messages_failed_total", "Failed attempts: handler errors, panics, timeouts, bad input"),
            ("nimbus_messages_retried_total", "Messages put back after a failed attempt, at once or delayed"),
            ("nimbus_messages_dead_lettered_total", "Messages moved to NimbusDeadLetters"),
            ("nimbus_messages_expired_total", "Messages past their Expires, discarded when received or purged"),
            ("nimbus_delayed_messages_delivered_total", "Delayed messages moved into their queues when due"),
            ("nimbus_dead_letters_expired_total", "Dead letters deleted after the retention period"),
            ("nimbus_saga_timeouts_dropped_total", "Saga timeouts that came due after their instance completed"),
            ("nimbus_published_to_no_subscriber_total", "Events published while nothing subscribed to them: no copy written"),
            ("nimbus_queue_table_vacuums_total", "Vacuums this endpoint ran on its queue tables (PostgreSQL)"),
            ("nimbus_queue_peeks_total", "Depth estimates asked of the database: the polling load"),
            ("nimbus_queue_empty_receives_total", "Receives that found nothing to take"),
            ("nimbus_queue_receives_total", "Receives that took messages, each one transaction"),
            ("nimbus_connections_closed_idle_total", "Pooled connections closed after nobody took them for connection_idle_timeout"),
            ("nimbus_delayed_changes_total", "Cancels and reschedules of delayed messages, and whether each found its message waiting"),
            ("nimbus_transaction_conflicts_total", "Receives rolled back because their transaction gave way to another (deadlock, serialization failure, saga race)"),
            ("nimbus_leases_taken_total", "Messages moved out of their queue under a lease"),
            ("nimbus_leases_renewed_total", "Lease renewals while handlers ran"),
            ("nimbus_leases_expired_total", "Leases taken back after their holder stopped or stalled past them"),
            ("nimbus_leases_lost_total", "Handlers that finished after their lease was taken back: their sends were discarded"),
            ("nimbus_sends_total", "The application's sends through the bus"),
            ("nimbus_send_commits_total", "Commits the application's sends took (shared commits make them fewer than the sends)"),
            ("nimbus_schedule_ticks_fired_total", "Ticks of a schedule this instance sent a message for"),
            ("nimbus_schedule_ticks_missed_total", "Ticks of a schedule that came due while no instance ran: sent once for all (fired_once) or skipped"),
            ("nimbus_groups_held_total", "Failed attempts of a message of an ordered group put back in its place: the rest of its group waits for its retry"),
            ("nimbus_bodies_unreadable_total", "Received bodies that could not be decrypted or decompressed, sent to the dead letters"),
            ("nimbus_prioritized_messages_received_total", "Messages sent with a priority, taken from their queue to be handled"),
            ("nimbus_messages_held_total", "Messages put back to wait because a limit of theirs was full (no attempt counted)"),
            ("nimbus_sends_deduplicated_total", "Sends dropped because a send with the same deduplication key reached the queue within the window"),
            ("nimbus_messages_deduplicated_total", "Messages removed without running their handlers: the inbox had handled their id within its window"),
            ("nimbus_schedule_changes_total", "Pauses and resumes of schedules by an operator, and whether each changed anything"),
        ];
        for (name, help) in counters {
            describe_counter!(name, Unit::Count, help);
        }
        describe_gauge!(
            "nimbus_queue_depth",
            Unit::Count,
            "A queue's depth estimate at its last peek"
        );
        describe_gauge!(
            "nimbus_queue_table_dead_rows",
            Unit::Count,
            "Dead rows of a queue table at the last look (PostgreSQL)"
        );
        describe_gauge!(
            "nimbus_queue_oldest_message_age_seconds",
            Unit::Seconds,
            "How long the first message of a queue has waited, by its TimeSent"
        );
        describe_counter!(
            "nimbus_connection_waits_total",
            Unit::Count,
            "Connections that waited for the process's connection budget, all of it in use"
        );
        describe_gauge!(
            "nimbus_connections_open",
            Unit::Count,
            "The process's open connections to a database, in use or idle"
        );
        describe_gauge!(
            "nimbus_connection_limit",
            Unit::Count,
            "The process's connection budget for a database (connection_limit)"
        );
        describe_histogram!(
            "nimbus_connection_wait_seconds",
            Unit::Seconds,
            "How long connections waited for the process's connection budget"
        );
        describe_histogram!(
            "nimbus_handling_seconds",
            Unit::Seconds,
            "How long the handlers of a message took"
        );
        describe_gauge!(
            "nimbus_schedule_paused",
            Unit::Count,
            "1 while an operator has paused the schedule, 0 while it runs"
        );
        describe_histogram!(
            "nimbus_schedule_lateness_seconds",
            Unit::Seconds,
            "How long after its tick (database time) a schedule's message was sent"
        );
        describe_histogram!(
            "nimbus_send_to_handled_seconds",
            Unit::Seconds,
            "From a message's TimeSent (the sender's clock) to its handling"
        );
    }
}

/// The live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub handled: AtomicU64,
    pub failed: AtomicU64,
    pub immediate_retries: AtomicU64,
    pub delayed_retries: AtomicU64,
    pub dead_lettered: AtomicU64,
    pub expired_discarded: AtomicU64,
    pub expired_purged: AtomicU64,
    pub delayed_delivered: AtomicU64,
    pub table_vacuums: AtomicU64,
    pub peeks: AtomicU64,
    pub empty_receives: AtomicU64,
    pub receives: AtomicU64,
    pub conflicts: AtomicU64,
    pub leases_taken: AtomicU64,
    pub leases_renewed: AtomicU64,
    pub leases_expired: AtomicU64,
    pub leases_lost: AtomicU64,
    pub sends: AtomicU64,
    pub send_commits: AtomicU64,
    /// Each queue's depth estimate at its last peek.
    pub queue_depths: Mutex<BTreeMap<String, u64>>,
    /// Each queue's oldest message age, when last read.
    pub oldest_message_ages: Mutex<BTreeMap<String, Duration>>,
    /// The queues this endpoint receives from that an operator paused, as last read.
    pub paused_queues: Mutex<BTreeSet<String>>,
    /// The input queue, whose depth `Metrics::queue_depth` reports.
    pub input_queue: String,
    /// What the next monitoring report carries.
    pub monitor: super::monitor::Monitor,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A queue's depth estimate at its last peek, also as the `nimbus_queue_depth` gauge.
    pub fn set_depth(&self, queue: &str, depth: u64) {
        let mut depths = self.queue_depths.lock().unwrap_or_else(|p| p.into_inner());
        depths.insert(queue.to_string(), depth);
        metrics::gauge!("nimbus_queue_depth", "queue" => queue.to_string()).set(depth as f64);
    }

    /// How long the first message of a queue has waited, also as the
    /// `nimbus_queue_oldest_message_age_seconds` gauge.
    pub fn set_oldest_age(&self, queue: &str, age: Duration) {
        let mut ages = self
            .oldest_message_ages
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        ages.insert(queue.to_string(), age);
        metrics::gauge!("nimbus_queue_oldest_message_age_seconds", "queue" => queue.to_string())
            .set(age.as_secs_f64());
    }

    /// Marks `queue` paused or not, also as the `nimbus_queue_paused` gauge (1 or 0). Returns
    /// whether that changed anything.
    pub fn set_paused(&self, queue: &str, paused: bool) -> bool {
        let mut set = self.paused_queues.lock().unwrap_or_else(|p| p.into_inner());
        let changed = if paused {
            set.insert(queue.to_string())
        } else {
            set.remove(queue)
        };
        metrics::gauge!("nimbus_queue_paused", "queue" => queue.to_string()).set(if paused {
            1.0
        } else {
            0.0
        });
        changed
    }

    /// Whether an operator paused `queue`, as last read.
    pub fn is_paused(&self, queue: &str) -> bool {
        self.paused_queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(queue)
    }

    pub fn snapshot(&self) -> Metrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let queue_depths = self
            .queue_depths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Metrics {
            handled: get(&self.handled),
            failed: get(&self.failed),
            immediate_retries: get(&self.immediate_retries),
            delayed_retries: get(&self.delayed_retries),
            dead_lettered: get(&self.dead_lettered),
            expired_discarded: get(&self.expired_discarded),
            expired_purged: get(&self.expired_purged),
            delayed_delivered: get(&self.delayed_delivered),
            table_vacuums: get(&self.table_vacuums),
            peeks: get(&self.peeks),
            empty_receives: get(&self.empty_receives),
            receives: get(&self.receives),
            conflicts: get(&self.conflicts),
            leases_taken: get(&self.leases_taken),
            leases_renewed: get(&self.leases_renewed),
            leases_expired: get(&self.leases_expired),
            leases_lost: get(&self.leases_lost),
            sends: get(&self.sends),
            send_commits: get(&self.send_commits),
            queue_depth: queue_depths.get(&self.input_queue).copied().unwrap_or(0),
            queue_depths,
            oldest_message_ages: self
                .oldest_message_ages
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            paused_queues: self
                .paused_queues
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// A snapshot of an endpoint's counters since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Messages handled and committed.
    pub handled: u64,
    /// Failed attempts (handler errors, panics, timeouts, bad input).
    pub failed: u64,
    /// Messages put back in their queue after a failure.
    pub immediate_retries: u64,
    /// Messages put back with a delay after a failure.
    pub delayed_retries: u64,
    /// Messages moved to `NimbusDeadLetters`.
    pub dead_lettered: u64,
    /// Expired messages deleted when received, without being handled.
    pub expired_discarded: u64,
    /// Expired messages deleted by the purger.
    pub expired_purged: u64,
    /// Delayed messages this endpoint moved into their queues when due.
    pub delayed_delivered: u64,
    /// Vacuums this endpoint ran on its queue tables (PostgreSQL).
    pub table_vacuums: u64,
    /// Depth estimates (peeks) this endpoint asked the database for, across its queues: the
    /// load its polling puts on the database, idle or not.
    pub peeks: u64,
    /// Receives that found nothing to take, across its queues: another receiver (here or in
    /// another instance) took the message first. A few are normal with competing consumers;
    /// about one per peek or more means the estimates send receivers after rows they cannot
    /// take.
    pub empty_receives: u64,
    /// Receives that took messages, across its queues, each in one transaction: as many as
    /// the messages received when receivers take one at a time, fewer when they take several
    /// at once (a backlog of fast messages, or
    /// [`receive_batch`](crate::BusBuilder::receive_batch)).
    pub receives: u64,
    /// Receives rolled back because their transaction gave way to another (a deadlock victim,
    /// a serialization failure, a saga started or changed by another message at the same
    /// moment): their messages were received again at once, no attempt counted. A few are
    /// normal where handlers update the same rows; many mean batches that hold locks too
    /// long, and receives fall back to one message per transaction for a while.
    pub conflicts: u64,
    /// Messages taken out of their queue under a lease ([`crate::Lease`]).
    pub leases_taken: u64,
    /// Renewals of this endpoint's leases while their handlers ran.
    pub leases_renewed: u64,
    /// Leases this endpoint took back after their holder (this or another instance) stopped
    /// or stalled past them; each such message was retried or dead-lettered.
    pub leases_expired: u64,
    /// Handlers that finished after their lease had been taken back: what they sent was
    /// discarded, and the message was handled again (or dead-lettered) elsewhere.
    pub leases_lost: u64,
    /// The application's sends through this bus (`send`, `publish`, `send_batch`, `send_with`,
    /// `request`), each call once, whether it committed or not.
    pub sends: u64,
    /// The commits those sends took, attempted or done: fewer than [`sends`](Self::sends)
    /// where concurrent sends shared commits ([`crate::BusBuilder::shared_commits`]).
    pub send_commits: u64,
    /// The input queue's depth estimate at its last peek.
    pub queue_depth: u64,
    /// Every queue this endpoint receives from, with its own depth estimate at its last peek.
    pub queue_depths: BTreeMap<String, u64>,
    /// Every queue this endpoint receives from, with how long its first message had waited
    /// when last read (by the sender's `NServiceBus.TimeSent`; zero for an empty queue).
    pub oldest_message_ages: BTreeMap<String, Duration>,
    /// The queues this endpoint receives from that an operator paused (`nimbus pause`), as
    /// read at most one peek delay ago: none of the endpoint's receivers takes their messages.
    pub paused_queues: BTreeSet<String>,
}

/// An application's send, counted here and through the `metrics` facade.
pub(crate) fn count_send(counters: &Counters) {
    Counters::add(&counters.sends, 1);
    metrics::counter!("nimbus_sends_total").increment(1);
}

/// A deduplicated send dropped because its key was seen within the window.
pub(crate) fn count_send_deduplicated(queue: &str) {
    metrics::counter!("nimbus_sends_deduplicated_total", "queue" => queue.to_string()).increment(1);
}

/// A received message whose id the inbox had seen: removed without running its handlers.
pub(crate) fn count_received_duplicate(queue: &str, message_type: &str) {
    metrics::counter!(
        "nimbus_messages_deduplicated_total",
        "queue" => queue.to_string(),
        "message_type" => message_type.to_string()
    )
    .increment(1);
}

/// A commit of application sends (one or several), counted here and through the facade.
pub(crate) fn count_send_commit(counters: &Counters) {
    Counters::add(&counters.send_commits, 1);
    metrics::counter!("nimbus_send_commits_total").increment(1);
}

/// A vacuum of `queue`'s table, counted here and through the `metrics` facade.
pub(crate) fn count_vacuum(counters: &Counters, queue: &str) {
    Counters::add(&counters.table_vacuums, 1);
    metrics::counter!("nimbus_queue_table_vacuums_total", "queue" => queue.to_string())
        .increment(1);
}

/// A peek at `queue`, counted here and through the `metrics` facade.
pub(crate) fn count_peek(counters: &Counters, queue: &str) {
    Counters::add(&counters.peeks, 1);
    metrics::counter!("nimbus_queue_peeks_total", "queue" => queue.to_string()).increment(1);
}

/// A receive of `queue` that took messages, counted here and through the `metrics` facade.
pub(crate) fn count_receive(counters: &Counters, queue: &str) {
    Counters::add(&counters.receives, 1);
    metrics::counter!("nimbus_queue_receives_total", "queue" => queue.to_string()).increment(1);
}

/// A receive of `queue` rolled back by a conflict, counted here and through the facade.
pub(crate) fn count_conflict(counters: &Counters, queue: &str) {
    Counters::add(&counters.conflicts, 1);
    metrics::counter!("nimbus_transaction_conflicts_total", "queue" => queue.to_string())
        .increment(1);
}

/// A receive of `queue` that found nothing, counted here and through the `metrics` facade.
pub(crate) fn count_empty_receive(counters: &Counters, queue: &str) {
    Counters::add(&counters.empty_receives, 1);
    metrics::counter!("nimbus_queue_empty_receives_total", "queue" => queue.to_string())
        .increment(1);
}

/// Registers the series of each message type's counters at zero, so that a dashboard or an
/// alert on `nimbus_messages_failed_total` sees the series (at 0) before the first failure
/// instead of no series at all.
pub(crate) fn announce(queue: &str, message_type: &str) {
    let names = [
        "nimbus_messages_received_total",
        "nimbus_messages_handled_total",
        "nimbus_messages_failed_total",
        "nimbus_messages_dead_lettered_total",
    ];
    for name in names {
        count_n(name, queue, message_type, 0);
    }
    for retry in ["immediate", "delayed"] {
        count_retry_n(queue, message_type, retry, 0);
    }
}

/// One event of a message, through the `metrics` facade.
pub(crate) fn count(name: &'static str, queue: &str, message_type: &str) {
    count_n(name, queue, message_type, 1);
}

fn count_n(name: &'static str, queue: &str, message_type: &str, n: u64) {
    metrics::counter!(name, message_labels(queue, message_type).iter()).increment(n);
}

/// How many pairs of queue and message type keep their labels; past that (a run-away of names
/// made at run time) each message's labels are made anew.
const MESSAGE_LABELS_KEPT: usize = 10_000;

/// The `queue` and `message_type` labels of a pair, made once and shared: every message counts
/// and times itself under them several times, and copying both names for each was a fair part
/// of what the framework did per message.
fn message_labels(queue: &str, message_type: &str) -> Arc<[metrics::Label; 2]> {
    type Kept = HashMap<String, HashMap<String, Arc<[metrics::Label; 2]>>>;
    static KEPT: std::sync::OnceLock<Mutex<(Kept, usize)>> = std::sync::OnceLock::new();
    let make = || {
        Arc::new([
            // Shared, not owned: a label cloned into each metric's key is then a count.
            metrics::Label::new("queue", Arc::<str>::from(queue)),
            metrics::Label::new("message_type", Arc::<str>::from(message_type)),
        ])
    };
    let mut kept = KEPT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(labels) = kept.0.get(queue).and_then(|types| types.get(message_type)) {
        return labels.clone();
    }
    let labels = make();
    if kept.1 < MESSAGE_LABELS_KEPT {
        kept.1 += 1;
        kept.0
            .entry(queue.to_string())
            .or_default()
            .insert(message_type.to_string(), labels.clone());
    }
    labels
}

/// A retry, labelled `immediate` or `delayed`.
/// A message sent with `priority` was taken from `queue` to be handled.
pub(crate) fn count_prioritized(queue: &str, priority: i16) {
    metrics::counter!(
        "nimbus_prioritized_messages_received_total",
        "queue" => queue.to_string(),
        "priority" => priority.to_string()
    )
    .increment(1);
}

/// A received body could not be decrypted or decompressed (`reason`): it goes to the dead
/// letters.
pub(crate) fn count_unreadable_body(queue: &str, reason: &'static str) {
    metrics::counter!(
        "nimbus_bodies_unreadable_total",
        "queue" => queue.to_string(),
        "reason" => reason
    )
    .increment(1);
}

/// A body stored apart by the claim check was read for its message's handlers.
pub(crate) fn count_body_fetched(queue: &str, bytes: usize) {
    metrics::counter!("nimbus_bodies_fetched_total", "queue" => queue.to_string()).increment(1);
    metrics::counter!("nimbus_body_bytes_fetched_total", "queue" => queue.to_string())
        .increment(u64::try_from(bytes).unwrap_or(u64::MAX));
}

/// A failed message of an ordered group was put back in its place (its group waits).
pub(crate) fn count_group_held(queue: &str) {
    metrics::counter!("nimbus_groups_held_total", "queue" => queue.to_string()).increment(1);
}

/// A message its limit held back (see [`crate::Limit`]).
pub(crate) fn count_limit_held(queue: &str, message_type: &str, limit: &'static str) {
    metrics::counter!(
        "nimbus_messages_held_total",
        "queue" => queue.to_string(),
        "message_type" => message_type.to_string(),
        "limit" => limit
    )
    .increment(1);
}

pub(crate) fn count_retry(queue: &str, message_type: &str, retry: &'static str) {
    count_retry_n(queue, message_type, retry, 1);
}

fn count_retry_n(queue: &str, message_type: &str, retry: &'static str, n: u64) {
    metrics::counter!(
        "nimbus_messages_retried_total",
        "queue" => queue.to_string(),
        "message_type" => message_type.to_string(),
        "retry" => retry
    )
    .increment(n);
}

/// Expired messages, labelled by how they went (`discarded` when received, `purged`).
pub(crate) fn count_expired(queue: &str, message_type: &str, how: &'static str, n: u64) {
    metrics::counter!(
        "nimbus_messages_expired_total",
        "queue" => queue.to_string(),
        "message_type" => message_type.to_string(),
        "how" => how
    )
    .increment(n);
}

/// Dead letters deleted after the retention period.
pub(crate) fn count_dead_letters_expired(n: u64) {
    metrics::counter!("nimbus_dead_letters_expired_total").increment(n);
}

/// A saga timeout that came due after its instance completed.
pub(crate) fn count_saga_timeout_dropped(saga: &'static str) {
    metrics::counter!("nimbus_saga_timeouts_dropped_total", "saga" => saga).increment(1);
}

/// How long handling took, and how long since the message was sent (returned: the critical
/// time, when the sender said when it sent; zero when its clock is ahead).
pub(crate) fn record_handled(
    queue: &str,
    message_type: &str,
    handling: std::time::Duration,
    sent: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<Duration> {
    let labels = message_labels(queue, message_type);
    metrics::histogram!("nimbus_handling_seconds", labels.iter()).record(handling.as_secs_f64());
    let sent = sent?;
    let since = (chrono::Utc::now() - sent).to_std().unwrap_or_default();
    metrics::histogram!("nimbus_send_to_handled_seconds", labels.iter())
        .record(since.as_secs_f64());
    Some(since)
}
