//! The statements of every queue a backend has touched, rendered once per queue and reused.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::names::{QueueName, SchemaName};
use crate::sql::{Dialect, QueueStatements, SharedStatements};

/// One queue's statements, and whether this process knows its table exists.
#[derive(Debug)]
pub(crate) struct QueueEntry {
    pub statements: QueueStatements,
    created: std::sync::atomic::AtomicBool,
}

impl QueueEntry {
    /// This process created or found the table.
    pub fn is_known_to_exist(&self) -> bool {
        self.created.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn mark_exists(&self) {
        self.created
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// An insert into the table failed (it may have been dropped, by an idle sweep for
    /// instance): look for it (and create it, with auto-create) again before the next insert,
    /// rather than failing the same way forever.
    pub fn forget_exists(&self) {
        self.created
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

/// What every backend's catalog is configured with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CatalogSettings {
    pub auto_create: bool,
    pub idle_seconds: i64,
    pub layout: crate::config::StorageLayout,
    /// How row ids are made when one message becomes several rows (a publish in the shared
    /// table, where `MessageId` is the primary key).
    pub message_ids: crate::envelope::MessageIds,
}

/// Rendered statements for one schema of one dialect.
pub(crate) struct Catalog<D: Dialect> {
    pub schema: SchemaName,
    pub shared: SharedStatements,
    pub auto_create: bool,
    /// Subscriptions not seen for this long are lapsed: publishers skip them, the sweep deletes.
    pub idle_seconds: i64,
    /// How queues are stored.
    pub layout: crate::config::StorageLayout,
    /// How row ids are made for the copies of a published message in the shared table.
    pub message_ids: crate::envelope::MessageIds,
    queues: Mutex<HashMap<QueueName, Arc<QueueEntry>>>,
    _dialect: PhantomData<D>,
}

impl<D: Dialect> Catalog<D> {
    pub fn new(settings: &CatalogSettings, schema: SchemaName) -> Self {
        Catalog {
            shared: D::shared_statements(&schema),
            schema,
            auto_create: settings.auto_create,
            idle_seconds: settings.idle_seconds,
            layout: settings.layout,
            message_ids: settings.message_ids,
            queues: Mutex::new(HashMap::new()),
            _dialect: PhantomData,
        }
    }

    /// The shared-table layout: queues are `Destination` values in `NimbusMessages`.
    pub fn shared_table(&self) -> bool {
        self.layout == crate::config::StorageLayout::SharedTable
    }

    /// The statements of `queue`, rendered on first use.
    pub fn queue(&self, queue: &QueueName) -> Arc<QueueEntry> {
        // A poisoned lock only means another thread panicked while inserting; the map is intact.
        let mut map = self
            .queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        map.entry(queue.clone())
            .or_insert_with(|| {
                Arc::new(QueueEntry {
                    statements: D::queue_statements(&self.schema, queue),
                    created: false.into(),
                })
            })
            .clone()
    }
}
