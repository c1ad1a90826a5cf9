//! Writes that share another transaction's commit on SQLite.
//!
//! A process has one connection per SQLite file, and every commit waits for its own `fsync`. A
//! write that commits on its own (a send's one `INSERT`) and finds the connection held by a
//! transaction (a receive whose handler runs) would wait for that commit, then pay a commit of
//! its own. Instead it boards that transaction: the holder's commit runs the waiting writes first,
//! each under a savepoint of its own (a write the database refuses undoes only itself and fails
//! only its caller), and commits them with its own work, so two commits become one. A writer
//! hears how it went once that commit has ended: its own statement's outcome when the commit
//! succeeded, the commit's failure otherwise. A writer that gets the connection before any commit
//! takes it off the board and runs its statement itself; one that stops waiting is taken off too.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::{DriverError, DriverResult, FailureKind, Statement};

/// The savepoint each boarded write runs under.
const SAVEPOINT: &str = "SAVEPOINT nimbus_rider";
const RELEASE: &str = "RELEASE nimbus_rider";
const ROLLBACK_TO: &str = "ROLLBACK TO nimbus_rider";

/// A write waiting for a commit to share.
pub(crate) struct Rider {
    pub statement: Statement,
    done: oneshot::Sender<DriverResult<u64>>,
}

/// The writes waiting for the next commit on a file's connection.
#[derive(Default)]
pub(crate) struct Board {
    next_id: u64,
    riders: Vec<(u64, Rider)>,
}

/// A place on the [`Board`]: dropped (its writer stopped waiting, or ran its statement itself),
/// it takes the write off the board if no commit has taken it yet.
pub(crate) struct Boarded {
    board: Arc<Mutex<Board>>,
    id: u64,
    /// Where the commit that takes the write tells how it went.
    pub outcome: oneshot::Receiver<DriverResult<u64>>,
}

impl Boarded {
    /// Puts `statement` on `board` for the next commit to take.
    pub fn new(board: &Arc<Mutex<Board>>, statement: Statement) -> Self {
        let (done, outcome) = oneshot::channel();
        let mut b = board.lock().unwrap_or_else(|p| p.into_inner());
        let id = b.next_id;
        b.next_id = b.next_id.wrapping_add(1);
        b.riders.push((id, Rider { statement, done }));
        Boarded {
            board: board.clone(),
            id,
            outcome,
        }
    }

    /// Takes the write back off the board, to run it alone: `None` when a commit took it first
    /// (its outcome then comes through [`Boarded::outcome`]).
    pub fn alight(&self) -> Option<Rider> {
        let mut b = self.board.lock().unwrap_or_else(|p| p.into_inner());
        let position = b.riders.iter().position(|(id, _)| *id == self.id)?;
        Some(b.riders.remove(position).1)
    }
}

impl Drop for Boarded {
    fn drop(&mut self) {
        drop(self.alight());
    }
}

impl Board {
    /// How many writes wait.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.riders.len()
    }
}

/// Takes every write waiting on `board`, in the order they boarded.
pub(crate) fn take_all(board: &Mutex<Board>) -> Vec<Rider> {
    let mut b = board.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut b.riders)
        .into_iter()
        .map(|(_, rider)| rider)
        .collect()
}

/// What a boarded write did, to be told once the commit has ended.
pub(crate) struct Aboard {
    done: oneshot::Sender<DriverResult<u64>>,
    outcome: rusqlite::Result<u64>,
}

/// Runs `riders`' statements in `conn`'s open transaction, each under a savepoint of its own, so
/// that one the database refuses leaves the transaction as it was. `execute` runs one statement.
pub(crate) fn run_aboard(
    conn: &rusqlite::Connection,
    riders: Vec<Rider>,
    execute: impl Fn(&rusqlite::Connection, &Statement) -> rusqlite::Result<u64>,
) -> Vec<Aboard> {
    riders
        .into_iter()
        .map(|rider| {
            let outcome = under_savepoint(conn, || execute(conn, &rider.statement));
            Aboard {
                done: rider.done,
                outcome,
            }
        })
        .collect()
}

fn under_savepoint(
    conn: &rusqlite::Connection,
    write: impl FnOnce() -> rusqlite::Result<u64>,
) -> rusqlite::Result<u64> {
    conn.prepare_cached(SAVEPOINT)?.execute([])?;
    match write() {
        Ok(n) => {
            conn.prepare_cached(RELEASE)?.execute([])?;
            Ok(n)
        }
        Err(e) => {
            // A failed statement changed nothing (SQLite undoes it whole); the savepoint makes
            // sure of it. If even that fails, the commit after it says so to everyone.
            if let Err(undo) = conn
                .prepare_cached(ROLLBACK_TO)
                .and_then(|mut s| s.execute([]))
                .and_then(|_| conn.prepare_cached(RELEASE).and_then(|mut s| s.execute([])))
            {
                tracing::warn!(error = %undo, "could not undo a refused send to its savepoint");
            }
            Err(e)
        }
    }
}

/// Tells each boarded write how it went: its own outcome once `committed` succeeded, else that
/// the commit it shared failed (nothing of it committed).
pub(crate) fn tell(aboard: Vec<Aboard>, committed: &rusqlite::Result<()>) {
    for Aboard { done, outcome } in aboard {
        let told = match committed {
            Ok(()) => outcome.map_err(super::sqlite::error),
            Err(e) => Err(DriverError::other(
                super::sqlite::kind_of(e),
                format!("the commit this write shared with another transaction failed: {e}"),
            )),
        };
        // A writer that stopped waiting hears nothing.
        let _ = done.send(told);
    }
}

/// What a writer hears when the commit that took its write never told it (its thread was lost).
pub(crate) fn never_told() -> DriverError {
    DriverError::other(
        FailureKind::Transient,
        "the transaction whose commit took this write ended without saying whether it committed",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit that failed fails every write that shared it, with the commit's error and
    /// whether trying again may help; one that succeeded gives each write its own outcome.
    #[test]
    fn each_write_hears_its_own_outcome_or_the_failed_commit() {
        let busy = || {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                Some("database is locked".into()),
            )
        };
        let (done, mut told) = oneshot::channel();
        tell(
            vec![Aboard {
                done,
                outcome: Ok(1),
            }],
            &Err(busy()),
        );
        let error = told.try_recv().unwrap().unwrap_err();
        assert_eq!(error.kind(), FailureKind::Transient);
        assert!(
            error.to_string().contains("commit this write shared"),
            "{error}"
        );

        let (done, mut told) = oneshot::channel();
        tell(
            vec![Aboard {
                done,
                outcome: Ok(3),
            }],
            &Ok(()),
        );
        assert_eq!(told.try_recv().unwrap().unwrap(), 3);
    }
}
