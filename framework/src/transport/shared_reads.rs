//! Reads that every bus of a process on one database and schema makes alike, once per peek
//! delay each — which queues are paused, whether delayed messages are due — made once per
//! [`SHARE_FOR`] for all of them: fifty endpoints of one process cost the database about four
//! such reads a second instead of fifty of each.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::driver::statements::PausedRow;

/// How long one bus's read answers for the other buses of the process: a pause is seen this
/// much later at most, and a delayed message delivered this much later at most, beside the
/// peek delay every bus waits between its own looks.
pub(crate) const SHARE_FOR: Duration = Duration::from_millis(250);

/// The paused queues last read, by database and schema.
static PAUSES: Mutex<Vec<(String, Instant, Vec<PausedRow>)>> = Mutex::new(Vec::new());

/// When a delivery of delayed messages last found fewer than it could take, by database and
/// schema.
static DELIVERIES: Mutex<Option<HashMap<String, Instant>>> = Mutex::new(None);

/// The paused queues of `key` as read within [`SHARE_FOR`], if some bus read them.
pub(crate) fn recent_pauses(key: &str) -> Option<Vec<PausedRow>> {
    let pauses = PAUSES.lock().unwrap_or_else(|p| p.into_inner());
    pauses
        .iter()
        .find(|(k, at, _)| k == key && at.elapsed() < SHARE_FOR)
        .map(|(_, _, rows)| rows.clone())
}

/// Keeps `rows`, just read, for the other buses on `key`.
pub(crate) fn remember_pauses(key: &str, rows: &[PausedRow]) {
    let mut pauses = PAUSES.lock().unwrap_or_else(|p| p.into_inner());
    pauses.retain(|(k, at, _)| k != key && at.elapsed() < SHARE_FOR);
    pauses.push((key.to_string(), Instant::now(), rows.to_vec()));
}

/// Forgets the paused queues read for `key`: this process paused or resumed one, and its buses
/// read the change at their next look.
pub(crate) fn forget_pauses(key: &str) {
    PAUSES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(k, _, _)| k != key);
}

/// Whether a bus on `key` delivered every due delayed message within [`SHARE_FOR`]: another
/// delivery now would find (almost) nothing.
pub(crate) fn delivered_recently(key: &str) -> bool {
    let deliveries = DELIVERIES.lock().unwrap_or_else(|p| p.into_inner());
    deliveries
        .as_ref()
        .and_then(|d| d.get(key))
        .is_some_and(|at| at.elapsed() < SHARE_FOR)
}

/// Notes that a delivery on `key` took everything that was due (fewer than its batch).
pub(crate) fn delivered_all(key: &str) {
    let mut deliveries = DELIVERIES.lock().unwrap_or_else(|p| p.into_inner());
    let deliveries = deliveries.get_or_insert_with(HashMap::new);
    deliveries.retain(|_, at| at.elapsed() < SHARE_FOR);
    deliveries.insert(key.to_string(), Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_answers_for_other_buses_briefly_and_per_database() {
        let rows = vec![PausedRow {
            queue: "Sales".into(),
            paused_by: "ops".into(),
            paused_at: None,
        }];
        assert!(recent_pauses("db-a").is_none());
        remember_pauses("db-a", &rows);
        assert_eq!(recent_pauses("db-a").map(|r| r.len()), Some(1));
        assert!(
            recent_pauses("db-b").is_none(),
            "another database reads its own"
        );
        forget_pauses("db-a");
        assert!(
            recent_pauses("db-a").is_none(),
            "a pause by this process is read again"
        );
        assert!(!delivered_recently("db-a"));
        delivered_all("db-a");
        assert!(delivered_recently("db-a") && !delivered_recently("db-b"));
    }
}
