//! Cross-process wake-ups on SQLite. The file has no notification channel, but every connection
//! can tell that another one committed: `PRAGMA data_version` changes, and in WAL mode reading it
//! costs no disk I/O (it compares the WAL index header in shared memory). A watcher thread with
//! a connection of its own reads it every [`WATCH_EVERY`] and, when it changed, reports it, so
//! that idle receivers peek at once instead of at their next peek delay. It cannot tell which
//! queue got the write: every receiver of the file in this process is woken, and those that are
//! busy ignore it.
//!
//! The thread ends at its next look once the transport that started it is gone (the announcing
//! side of its channel is dropped), or when its connection fails, which it logs: the peek loop
//! then stays the floor, as without the watcher.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Announcement, WakeChannel};

/// How often the watcher looks: the bound on how long another process's message waits for an
/// idle receiver (plus a peek and a receive). 100 reads a second of shared memory while idle.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(10);

/// What the watcher sends when the file changed: every queue of the database, not one.
pub(crate) const ANY_QUEUE: &str = "";

/// Starts the watcher of the file at `path`.
pub(crate) fn start(path: &Path) -> WakeChannel {
    let (announce, mut outgoing) = mpsc::unbounded_channel::<Announcement>();
    let (heard_tx, heard) = mpsc::unbounded_channel::<String>();
    let path: PathBuf = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("nimbus-sqlite-watch".into())
        .spawn(move || {
            if let Err(e) = watch(&path, &mut outgoing, &heard_tx) {
                tracing::warn!(
                    file = %path.display(),
                    error = %e,
                    "stopped watching the SQLite file for other processes' messages: receivers \
                     find them at their next peek"
                );
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(
            error = %e,
            "could not start the SQLite watcher thread: receivers find other processes' \
             messages at their next peek"
        );
    }
    WakeChannel { announce, heard }
}

/// Reads `data_version` until the transport is gone; reports each change on `heard`.
fn watch(
    path: &Path,
    outgoing: &mut mpsc::UnboundedReceiver<Announcement>,
    heard: &mpsc::UnboundedSender<String>,
) -> rusqlite::Result<()> {
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let read = |conn: &rusqlite::Connection| {
        conn.prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get::<_, i64>(0))
    };
    let mut seen = read(&conn)?;
    loop {
        std::thread::sleep(WATCH_EVERY);
        // Nothing to announce on SQLite (a commit changes data_version by itself); a stopping
        // bus's flush is answered at once. A closed channel means the transport is gone.
        loop {
            match outgoing.try_recv() {
                Ok(Announcement::Flush(done)) => {
                    let _ = done.send(());
                }
                Ok(Announcement::Queue(_)) => {}
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return Ok(()),
            }
        }
        let now = read(&conn)?;
        if now != seen {
            seen = now;
            if heard.send(ANY_QUEUE.to_string()).is_err() {
                return Ok(());
            }
        }
    }
}
