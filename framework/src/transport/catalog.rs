//! The statements of every queue a transport has touched, rendered once per queue and reused, and
//! whether this process knows each queue's table exists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
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
    /// Whether its table keeps ordered groups: [`GROUPS_UNKNOWN`], [`GROUPS_KEPT`] or
    /// [`GROUPS_NOT_KEPT`].
    groups: AtomicU8,
}

const GROUPS_UNKNOWN: u8 = 0;
const GROUPS_KEPT: u8 = 1;
const GROUPS_NOT_KEPT: u8 = 2;

impl QueueEntry {
    /// Whether its table has the columns of ordered groups, as this process last found: `None`
    /// until it looked.
    pub fn keeps_groups(&self) -> Option<bool> {
        match self.groups.load(Ordering::Acquire) {
            GROUPS_KEPT => Some(true),
            GROUPS_NOT_KEPT => Some(false),
            _ => None,
        }
    }

    /// Records what the catalog said of the table's group columns.
    pub fn set_keeps_groups(&self, kept: bool) {
        let value = if kept { GROUPS_KEPT } else { GROUPS_NOT_KEPT };
        self.groups.store(value, Ordering::Release);
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
                    groups: AtomicU8::new(GROUPS_UNKNOWN),
                })
            })
            .clone()
    }
}
