//! Hearing other processes' sends where the database cannot announce them (SQL Server): one
//! statement per database per process watches every idle queue of the process at once
//! (`watch_wait.sql`), on one pooled connection, and wakes the receivers of the queues that got
//! a message — as PostgreSQL's one LISTEN connection does. Watching fifty idle endpoints costs
//! one connection and a few statements a second, not a connection and a waiting statement each.
//!
//! A queue is watched from the moment its supervisor found it empty until a message is there:
//! then it is woken and taken off the list, and its supervisor, once it has emptied the queue
//! again, puts it back ([`Watcher::watch`]). Each statement watches the queues on the list when
//! it starts and waits at most [`WATCH_SPAN`], so a queue that joins the list is watched within
//! that. On a server without `WAITFOR` (Babelfish for PostgreSQL) the same parts run as one
//! look, repeated from the client. A lost wake-up costs the receivers their peek delay: their
//! peeks stay the floor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use super::ServerWait;
use crate::error::Result;
use crate::sql::{Placeholder, ReadyPart};

/// The longest one watch statement waits on the server: a queue that went idle while it ran is
/// watched from the next one on, at most this much later.
pub(crate) const WATCH_SPAN: Duration = Duration::from_millis(250);

/// What the watcher needs of a transport of the process on its database: to run a watch
/// statement on one of its connections.
#[async_trait]
pub(crate) trait Looker: Send + Sync + 'static {
    /// Runs `sql` (a [`crate::sql::WatchSql`]) with `wait`'s looks and delay and then
    /// `destinations` as parameters; the places of the queues that hold a message.
    async fn look(&self, sql: &str, wait: ServerWait, destinations: &[String]) -> Result<Vec<i64>>;
}

/// A queue on the watch list.
#[derive(Clone)]
pub(crate) struct Watched {
    /// Its part of the statement.
    pub part: ReadyPart,
    /// Its name, for a part that compares `Destination` with it (the shared table).
    pub destination: String,
}

/// The watch of one database of the process.
pub(crate) struct Watcher {
    state: Mutex<State>,
    /// A queue joined the list (shared with the watch's task, which must not keep the watcher).
    joined: Arc<Notify>,
}

struct State {
    /// The transports on the database, any of which runs the statement.
    lookers: Vec<Weak<dyn Looker>>,
    /// The idle queues, by wake-up key.
    queues: BTreeMap<String, Watched>,
    /// The time between two looks: the smallest idle poll of the buses on the database.
    every: Duration,
    /// `watch_wait.sql`.
    template: String,
    placeholder: Placeholder,
    /// The server refused `WAITFOR`: each statement is one look.
    looks_only: bool,
}

/// The watchers of the process, by database (see `Driver::share_key`).
static WATCHERS: Mutex<Vec<(String, Weak<Watcher>)>> = Mutex::new(Vec::new());

/// Joins (or starts) the watch of the database `key` names, for a transport that runs its
/// statements through `looker` and looks every `every`. It runs while a transport holds the
/// returned handle.
pub(crate) fn join(
    key: &str,
    template: &str,
    placeholder: Placeholder,
    every: Duration,
    looker: Weak<dyn Looker>,
) -> Arc<Watcher> {
    let mut watchers = WATCHERS.lock().unwrap_or_else(|p| p.into_inner());
    watchers.retain(|(_, w)| w.strong_count() > 0);
    if let Some(watcher) = watchers
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, w)| w.upgrade())
    {
        let mut state = watcher.state();
        state.lookers.retain(|l| l.strong_count() > 0);
        state.lookers.push(looker);
        state.every = state.every.min(every);
        drop(state);
        return watcher;
    }
    let watcher = Arc::new(Watcher {
        state: Mutex::new(State {
            lookers: vec![looker],
            queues: BTreeMap::new(),
            every,
            template: template.to_string(),
            placeholder,
            looks_only: false,
        }),
        joined: Arc::new(Notify::new()),
    });
    spawn(run(Arc::downgrade(&watcher), watcher.joined.clone()));
    watchers.push((key.to_string(), Arc::downgrade(&watcher)));
    watcher
}

/// Runs the watch on the process's shared runtime, whose thread the shared pool's connections
/// belong to; on the bus's own without it.
fn spawn(watching: impl std::future::Future<Output = ()> + Send + 'static) {
    #[cfg(any(feature = "postgres", feature = "sqlserver"))]
    let watching = match crate::driver::shared_runtime::handle() {
        Ok(shared) => {
            drop(shared.spawn(watching));
            return;
        }
        Err(e) => {
            tracing::debug!(error = %e, "watching idle queues on the bus's own thread");
            watching
        }
    };
    drop(tokio::spawn(watching));
}

impl Watcher {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts the queue `key` on the watch list until a message is there.
    pub fn watch(&self, key: &str, watched: Watched) {
        let joined = self
            .state()
            .queues
            .insert(key.to_string(), watched)
            .is_none();
        if joined {
            self.joined.notify_one();
        }
    }

    /// The list as a statement: the keys in the order of their places, the statement, and the
    /// names its parts compare with. Queues nobody receives from any more are dropped first.
    fn statement(&self) -> Option<Snapshot> {
        let mut state = self.state();
        state
            .queues
            .retain(|key, _| super::wakeups::has_receivers(key));
        if state.queues.is_empty() {
            return None;
        }
        let looker = state.lookers.iter().find_map(Weak::upgrade)?;
        let parts: Vec<&ReadyPart> = state.queues.values().map(|w| &w.part).collect();
        let sql = crate::sql::watch_sql(state.placeholder, &state.template, &parts);
        let destinations = state
            .queues
            .values()
            .filter(|w| w.part.takes_destination())
            .map(|w| w.destination.clone())
            .collect();
        Some(Snapshot {
            keys: state.queues.keys().cloned().collect(),
            wait: sql.wait,
            look: sql.look,
            destinations,
            looker,
            every: state.every,
            looks_only: state.looks_only,
        })
    }

    /// Takes `keys` off the list and wakes their receivers.
    fn wake(&self, keys: &[&String]) {
        let mut state = self.state();
        for key in keys {
            state.queues.remove(*key);
        }
        drop(state);
        for key in keys {
            super::wakeups::wake(key);
        }
    }
}

struct Snapshot {
    keys: Vec<String>,
    wait: String,
    look: String,
    destinations: Vec<String>,
    looker: Arc<dyn Looker>,
    every: Duration,
    looks_only: bool,
}

/// The watch's life: while a transport holds the watcher, run the statement of the current
/// list, wake what it names, and start over.
async fn run(watcher: Weak<Watcher>, joined: Arc<Notify>) {
    let mut failures: u32 = 0;
    // Between looks of a server without WAITFOR: the idle poll, doubled after each look that
    // found nothing, up to the span.
    let mut pause = Duration::ZERO;
    loop {
        let Some(w) = watcher.upgrade() else {
            return;
        };
        let Some(snapshot) = w.statement() else {
            // Nothing to watch: wait for a queue to join (a while at most, to notice that the
            // transports are gone).
            drop(w);
            let _ = tokio::time::timeout(Duration::from_secs(1), joined.notified()).await;
            pause = Duration::ZERO;
            continue;
        };
        drop(w);
        let wait = if snapshot.looks_only {
            ServerWait::new(snapshot.every, snapshot.every)
        } else {
            ServerWait::new(snapshot.every, WATCH_SPAN.max(snapshot.every))
        };
        let sql = if snapshot.looks_only {
            &snapshot.look
        } else {
            &snapshot.wait
        };
        let mut result = snapshot
            .looker
            .look(sql, wait, &snapshot.destinations)
            .await;
        let refused = match &result {
            Err(e) if !snapshot.looks_only && e.is_permanent() => Some(e.to_string()),
            _ => None,
        };
        if let Some(wait_error) = refused {
            // Where the one look works, the server refuses only the wait.
            result = snapshot
                .looker
                .look(&snapshot.look, wait, &snapshot.destinations)
                .await;
            if result.is_ok() {
                tracing::warn!(
                    error = %wait_error,
                    "this server does not run WAITFOR DELAY (Babelfish for PostgreSQL lacks \
                     it): the idle queues of this process are watched by one look over all \
                     of them, every idle_poll at first and up to {WATCH_SPAN:?} apart while \
                     nothing comes"
                );
                if let Some(w) = watcher.upgrade() {
                    w.state().looks_only = true;
                }
            }
        }
        drop(snapshot.looker);
        let Some(w) = watcher.upgrade() else {
            return;
        };
        match result {
            Ok(places) => {
                failures = 0;
                let keys: Vec<&String> = places
                    .iter()
                    .filter_map(|p| usize::try_from(*p).ok())
                    .filter_map(|p| snapshot.keys.get(p))
                    .collect();
                w.wake(&keys);
                let looks_only = snapshot.looks_only || w.state().looks_only;
                drop(w);
                if looks_only {
                    pause = if keys.is_empty() {
                        (pause * 2).clamp(snapshot.every, WATCH_SPAN.max(snapshot.every))
                    } else {
                        snapshot.every
                    };
                    // A queue that joins the list is looked for at once.
                    if tokio::time::timeout(pause, joined.notified()).await.is_ok() {
                        pause = Duration::ZERO;
                    }
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let retry = crate::driver::background_retry_wait(failures);
                // Reported on the 1st, 2nd, 4th… failure in a row, as the other background jobs.
                if failures.is_power_of_two() {
                    tracing::warn!(
                        error = %e, failures, retry_in = ?retry,
                        queues = snapshot.keys.len(),
                        "watching idle queues for other processes' messages failed; their \
                         receivers look for themselves every peek delay meanwhile"
                    );
                }
                // Every queue on the list looks for itself now, and comes back on the list
                // when it finds itself empty.
                let keys: Vec<&String> = snapshot.keys.iter().collect();
                w.wake(&keys);
                drop(w);
                tokio::time::sleep(retry).await;
            }
        }
    }
}
