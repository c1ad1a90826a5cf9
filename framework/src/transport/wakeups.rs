//! Wake-ups: a queue's receivers are told the moment a message for it commits, instead of
//! finding it at their next peek. Within a process a write wakes them directly (every database,
//! SQLite included); where the database can carry them (PostgreSQL's LISTEN/NOTIFY), writes are
//! also announced to other processes ([`payload`]), whose buses wake their receivers the same
//! way. SQLite cannot name the queue, but a watcher sees that the file changed
//! ([`wake_every_queue_of`]). A lost wake-up costs only the peek delay: the peek loop stays the floor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::Notify;

/// The queues of this process that someone receives from, by [`key`].
fn registry() -> &'static Mutex<HashMap<String, Weak<Notify>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Weak<Notify>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Names a queue across the process: the database (its target), the schema and the queue.
pub(crate) fn key(target: &str, schema: &str, queue: &str) -> String {
    format!("{target}\u{1f}{schema}\u{1f}{queue}")
}

/// What announces a write to `queue` of `schema` to other processes.
pub(crate) fn payload(schema: &str, queue: &str) -> String {
    format!("{schema}\u{1f}{queue}")
}

/// The schema and queue of an announcement; `None` for text no bus wrote.
pub(crate) fn parse_payload(payload: &str) -> Option<(&str, &str)> {
    payload.split_once('\u{1f}')
}

/// The signal of the queue `key`, shared by every receiver of that queue in this process.
/// It lives as long as one of them holds it.
pub(crate) fn subscribe(key: &str) -> Arc<Notify> {
    let mut queues = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(notify) = queues.get(key).and_then(Weak::upgrade) {
        return notify;
    }
    queues.retain(|_, notify| notify.strong_count() > 0);
    let notify = Arc::new(Notify::new());
    queues.insert(key.to_string(), Arc::downgrade(&notify));
    notify
}

/// Wakes every receiver of the queue `key` in this process that waits for a message; does
/// nothing when none does.
pub(crate) fn wake(key: &str) {
    let notify = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .and_then(Weak::upgrade);
    if let Some(notify) = notify {
        notify.notify_waiters();
    }
}

/// Whether a receiver of the queue `key` in this process still listens for its wake-ups.
pub(crate) fn has_receivers(key: &str) -> bool {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .is_some_and(|notify| notify.strong_count() > 0)
}

/// Wakes every waiting receiver in this process of every queue of the database `target`: for
/// a database that can tell that something changed but not where (SQLite's `data_version`).
pub(crate) fn wake_every_queue_of(target: &str) {
    let prefix = format!("{target}\u{1f}");
    let notifies: Vec<Arc<Notify>> = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .filter_map(|(_, notify)| notify.upgrade())
        .collect();
    for notify in notifies {
        notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_reaches_every_waiting_receiver_of_that_queue_only() {
        let sales = key("db", "dbo", "Sales");
        let first = subscribe(&sales);
        let second = subscribe(&sales);
        assert!(Arc::ptr_eq(&first, &second), "one signal per queue");
        let other = subscribe(&key("db", "dbo", "Billing"));
        let (a, b, c) = (first.notified(), second.notified(), other.notified());
        tokio::pin!(a, b, c);
        // Register the waiters, then wake Sales.
        for f in [a.as_mut(), b.as_mut()] {
            f.enable();
        }
        c.as_mut().enable();
        wake(&sales);
        let woke = |f: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>| {
            futures::FutureExt::now_or_never(f).is_some()
        };
        assert!(woke(a) && woke(b), "both Sales receivers wake");
        assert!(!woke(c), "Billing's do not");
    }

    #[test]
    fn a_queue_nobody_receives_from_is_forgotten() {
        let k = key("db", "dbo", "Gone");
        drop(subscribe(&k));
        wake(&k); // nothing to wake, no error
        let fresh = subscribe(&k);
        assert_eq!(Arc::strong_count(&fresh), 1);
    }
}
