//! Requests waiting for their replies, by correlation id (the request's message id).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

/// A reply as it arrived: its type name and body, decoded by the waiting caller.
#[derive(Debug)]
pub(crate) struct Reply {
    pub type_name: String,
    pub body: Vec<u8>,
}

/// The requests of one endpoint that wait for a reply.
#[derive(Default)]
pub(crate) struct PendingRequests(Mutex<HashMap<String, oneshot::Sender<Reply>>>);

impl PendingRequests {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Reply>>> {
        // A poisoned lock only means a panic elsewhere while inserting; the map is intact.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, correlation_id: String, waiter: oneshot::Sender<Reply>) {
        self.map().insert(correlation_id, waiter);
    }

    pub fn remove(&self, correlation_id: &str) {
        self.map().remove(correlation_id);
    }

    /// Takes the waiter for `correlation_id`, if a caller still waits.
    pub fn take(&self, correlation_id: &str) -> Option<oneshot::Sender<Reply>> {
        self.map().remove(correlation_id)
    }
}
