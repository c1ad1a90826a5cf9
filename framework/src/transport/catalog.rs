//! The statements of every queue a transport has touched, rendered once per queue and reused, and
//! whether this process knows each queue's table exists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::names::{QueueName, SchemaName};
use crate::sql::{Dialect, QueueSql};

/// One queue's statements, and whether this process knows its table exists.
#[derive(Debug)]
pub(crate) struct QueueEntry {
    pub sql: QueueSql,
    /// The queue's key among this process's wake-ups ([`super::wakeups::key`]).
    pub wake_key: String,
    /// What announces a write to it to other processes ([`super::wakeups::payload`]).
    pub announcement: String,
    exists: AtomicBool,
    /// Whether its table keeps ordered groups.
    groups: Found,
    /// Whether its table keeps priorities.
    priorities: Found,
    /// Until when (ms on [`clock_ms`]) receives of ordered groups from it read a bounded
    /// window of the queue instead of the whole of it: [`HEADS_HELD_FOR`] after one of this
    /// process's receives took fewer messages than it asked for, when the queue's first messages
    /// are likely all held by other receives.
    heads_held_until: AtomicU64,
    /// Whether a receive of this process is looking at the heads of the queue's groups now (see
    /// [`QueueEntry::heads_look`]).
    heads_looking: AtomicBool,
    /// Until when (ms on [`clock_ms`]) no receive of this process looks at the heads: a look
    /// that took nothing pauses the next for ten times as long as it took.
    heads_look_after: AtomicU64,
}

/// How long receives of ordered groups keep to the bounded statement after one came back short:
/// long enough that receivers racing for a few groups do not switch at every receive.
pub(crate) const HEADS_HELD_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// How many times as long as a look at the heads that took nothing the next look waits: while
/// every group is held, looks read the whole group index for nothing, and this keeps them to
/// about a tenth of one connection's time.
pub(crate) const HEADS_LOOK_PAUSE_FACTOR: u32 = 10;

/// The longest pause between looks at the heads (a deep queue's look takes longest).
pub(crate) const HEADS_LOOK_PAUSE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// Milliseconds since this process first asked, on a monotonic clock.
fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let elapsed = START.get_or_init(std::time::Instant::now).elapsed();
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// What this process found of a table's optional columns: not looked yet, there, or missing.
#[derive(Debug, Default)]
struct Found(AtomicU8);

impl Found {
    const KEPT: u8 = 1;
    const NOT_KEPT: u8 = 2;

    fn get(&self) -> Option<bool> {
        match self.0.load(Ordering::Acquire) {
            Self::KEPT => Some(true),
            Self::NOT_KEPT => Some(false),
            _ => None,
        }
    }

    fn set(&self, kept: bool) {
        let value = if kept { Self::KEPT } else { Self::NOT_KEPT };
        self.0.store(value, Ordering::Release);
    }
}

impl QueueEntry {
    /// Whether its table has the columns of ordered groups, as this process last found: `None`
    /// until it looked.
    pub fn keeps_groups(&self) -> Option<bool> {
        self.groups.get()
    }

    /// Records what the catalog said of the table's group columns.
    pub fn set_keeps_groups(&self, kept: bool) {
        self.groups.set(kept);
    }

    /// Whether its table has the `Priority` column, as this process last found: `None` until
    /// it looked.
    pub fn keeps_priorities(&self) -> Option<bool> {
        self.priorities.get()
    }

    /// Whether a receive of ordered groups from it came back short within the last
    /// [`HEADS_HELD_FOR`] ([`note_short_receive`](Self::note_short_receive)).
    pub fn heads_held(&self) -> bool {
        clock_ms() < self.heads_held_until.load(Ordering::Relaxed)
    }

    /// Records that a receive of ordered groups took fewer messages than it asked for.
    pub fn note_short_receive(&self) {
        let until = clock_ms()
            .saturating_add(u64::try_from(HEADS_HELD_FOR.as_millis()).unwrap_or(u64::MAX));
        self.heads_held_until.store(until, Ordering::Relaxed);
    }

    /// A turn to look at the heads of the queue's groups in the bounded receive, or `None`
    /// while another receive of this process looks, or while the pause after a look that took
    /// nothing lasts. The turn ends when dropped; [`HeadsLook::took`] sets the pause.
    pub fn heads_look(&self) -> Option<HeadsLook<'_>> {
        if clock_ms() < self.heads_look_after.load(Ordering::Relaxed) {
            return None;
        }
        self.heads_looking
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        Some(HeadsLook {
            entry: self,
            started: std::time::Instant::now(),
        })
    }

    /// Records what the catalog said of the table's `Priority` column.
    pub fn set_keeps_priorities(&self, kept: bool) {
        self.priorities.set(kept);
    }

    /// This process created or found the table.
    pub fn is_known_to_exist(&self) -> bool {
        self.exists.load(Ordering::Acquire)
    }

    pub fn mark_exists(&self) {
        self.exists.store(true, Ordering::Release);
    }

    /// An insert into the table failed (it may have been dropped, by an idle sweep for
    /// instance): look for it (and create it, with auto-create) again before the next insert,
    /// rather than failing the same way forever.
    pub fn forget_exists(&self) {
        self.exists.store(false, Ordering::Release);
    }
}

/// One receive's turn to look at the heads of a queue's groups ([`QueueEntry::heads_look`]);
/// the next receive may look once it is dropped.
#[derive(Debug)]
pub(crate) struct HeadsLook<'a> {
    entry: &'a QueueEntry,
    started: std::time::Instant,
}

impl HeadsLook<'_> {
    /// The receive that looked took `taken` messages: when none, no receive of this process
    /// looks again for [`HEADS_LOOK_PAUSE_FACTOR`] times as long as this one took (at most
    /// [`HEADS_LOOK_PAUSE_MAX`]).
    pub fn took(self, taken: usize) {
        if taken == 0 {
            let pause =
                (self.started.elapsed() * HEADS_LOOK_PAUSE_FACTOR).min(HEADS_LOOK_PAUSE_MAX);
            let until = clock_ms().saturating_add(u64::try_from(pause.as_millis()).unwrap_or(0));
            self.entry.heads_look_after.store(until, Ordering::Relaxed);
        }
    }
}

impl Drop for HeadsLook<'_> {
    fn drop(&mut self) {
        self.entry.heads_looking.store(false, Ordering::Release);
    }
}

/// The queues of one schema.
#[derive(Debug)]
pub(crate) struct Catalog {
    dialect: &'static Dialect,
    schema: SchemaName,
    /// The database's identity among this process's wake-ups.
    target: String,
    /// The shape of the queue tables.
    layout: crate::transport::StorageLayout,
    queues: Mutex<HashMap<QueueName, Arc<QueueEntry>>>,
}

impl Catalog {
    pub fn new(
        dialect: &'static Dialect,
        schema: SchemaName,
        target: String,
        layout: crate::transport::StorageLayout,
    ) -> Self {
        Catalog {
            dialect,
            schema,
            target,
            layout,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// The statements of `queue`, rendered on first use.
    pub fn queue(&self, queue: &QueueName) -> Arc<QueueEntry> {
        // A poisoned lock only means another thread panicked while inserting; the map is intact.
        let mut map = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = map.get(queue) {
            return entry.clone();
        }
        map.entry(queue.clone())
            .or_insert_with(|| {
                let schema = queue.schema().unwrap_or(&self.schema).as_str();
                Arc::new(QueueEntry {
                    sql: self.dialect.queue_sql_for(self.layout, &self.schema, queue),
                    wake_key: super::wakeups::key(&self.target, schema, queue.as_str()),
                    announcement: super::wakeups::payload(schema, queue.as_str()),
                    exists: AtomicBool::new(false),
                    groups: Found::default(),
                    priorities: Found::default(),
                    heads_held_until: AtomicU64::new(0),
                    heads_looking: AtomicBool::new(false),
                    heads_look_after: AtomicU64::new(0),
                })
            })
            .clone()
    }
}
