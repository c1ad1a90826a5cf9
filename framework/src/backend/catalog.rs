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
}

/// Rendered statements for one schema of one dialect.
pub(crate) struct Catalog<D: Dialect> {
    pub schema: SchemaName,
    pub shared: SharedStatements,
    pub auto_create: bool,
    /// Subscriptions not seen for this long are lapsed: publishers skip them, the sweep deletes.
    pub idle_seconds: i64,
    queues: Mutex<HashMap<QueueName, Arc<QueueEntry>>>,
    _dialect: PhantomData<D>,
}

impl<D: Dialect> Catalog<D> {
    pub fn new(schema: SchemaName, auto_create: bool, idle_seconds: i64) -> Self {
        Catalog {
            shared: D::shared_statements(&schema),
            schema,
            auto_create,
            idle_seconds,
            queues: Mutex::new(HashMap::new()),
            _dialect: PhantomData,
        }
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
