//! The process's connection budget for one database: every bus of the process given the same
//! database URL opens its connections within one limit, as ADO.NET pools by connection string.
//!
//! A connection takes a [`Slot`] before it opens and gives it back when it closes. When every
//! slot is taken, whoever needs one waits — it does not fail — and, while it waits, asks the
//! pools that share the budget to close one of their idle connections each round, so that
//! connections an idle endpoint holds go to a busy one. Waits are counted
//! (`nimbus_connection_waits_total`, `nimbus_connection_wait_seconds`) and a wait of over
//! [`WARN_AFTER`] is logged.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default limit on PostgreSQL: enough for the busiest bus of the process and a few more,
/// well under the server's default `max_connections` (100) that every client shares.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub const DEFAULT_CONNECTION_LIMIT: usize = 20;

/// The default limit on SQL Server: ADO.NET's `Max Pool Size`, per connection string and process
/// as there. A SQL Server accepts thousands of connections, and the default keeps connections
/// from moving between the buses of a process (each move is a new login; on Babelfish about half
/// a second of the server's CPU).
#[cfg_attr(not(feature = "sqlserver"), allow(dead_code))]
pub const SQLSERVER_DEFAULT_CONNECTION_LIMIT: usize = 100;

/// Connections each bus may need beyond its receivers (peeks, sends from outside handlers,
/// background jobs), added to the largest concurrency when the limit is the default.
const BEYOND_RECEIVERS: usize = 4;

/// How often a taker waiting for a held connection of its pool looks again.
const POOL_LOOK_EVERY: Duration = Duration::from_millis(5);

/// How often a waiter asks the other pools again for an idle connection.
const ASK_EVERY: Duration = Duration::from_millis(50);

/// A wait this long is logged (once a minute at most per database).
pub(crate) const WARN_AFTER: Duration = Duration::from_secs(5);

/// Closes one connection of a pool that nobody has held for the given time; `true` if it had
/// one.
pub(crate) type CloseOneIdle = dyn Fn(Duration) -> bool + Send + Sync;

/// How long a connection must have sat unused in its pool before a waiter elsewhere has it
/// closed: one given back a moment ago is likely taken again at once where it is, and closing
/// it would only trade one connection's opening for another's.
const LEND_AFTER: Duration = Duration::from_millis(250);

/// What a bus asks of the budget of its database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    /// `BusBuilder::connection_limit`, if the application set it.
    pub limit: Option<usize>,
    /// The bus's concurrency (its receivers), which a default limit makes room for.
    pub concurrency: usize,
    /// The limit when nobody sets one: [`DEFAULT_CONNECTION_LIMIT`], or on SQL Server the
    /// connection string's `Max Pool Size` or [`SQLSERVER_DEFAULT_CONNECTION_LIMIT`].
    pub default_limit: usize,
}

/// One database's budget, shared by every driver of the process on its URL.
pub(crate) struct Budget {
    /// The database as logs name it (no password).
    target: String,
    slots: Arc<Semaphore>,
    state: Mutex<Limit>,
    open: AtomicUsize,
    waits: AtomicU64,
    /// The pools that share the budget, to ask for idle connections.
    pools: Mutex<Vec<Weak<CloseOneIdle>>>,
    /// When a long wait was last logged, to log it at most once a minute.
    warned: Mutex<Option<Instant>>,
}

#[derive(Debug)]
struct Limit {
    /// The limit now.
    current: usize,
    /// Set by the application (then it never changes), or the default.
    fixed: bool,
    /// Slots to take out of use as they are given back (the limit went down).
    owed: usize,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("target", &self.target)
            .field("limit", &self.limit())
            .field("open", &self.open())
            .finish()
    }
}

/// The key that connections to one database with one set of credentials share (a budget, a
/// pool, a wake-up listener): a hash of what identifies them, so that no password is kept in
/// it or can show through it.
pub(crate) fn key_of(kind: &str, parts: &[&[u8]]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for part in parts {
        part.hash(&mut hasher);
    }
    format!("{kind}:{:016x}", hasher.finish())
}

/// The budgets of the process, by database URL; a budget lives while a driver holds it.
static BUDGETS: Mutex<Vec<(String, Weak<Budget>)>> = Mutex::new(Vec::new());

/// Why a bus cannot join its database's budget.
#[derive(Debug, thiserror::Error)]
#[error(
    "this bus asks for at most {asked} connections to {target}, and another bus of the process \
     on the same database already set {set}"
)]
pub struct LimitConflict {
    asked: usize,
    set: usize,
    target: String,
}

impl LimitConflict {
    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        "set the same connection_limit on every bus of the process that uses this database, or \
         set it on one of them only"
    }
}

/// The budget of the database at `url` (the key: buses given the same URL share it), made on
/// first use, with `request` applied.
pub(crate) fn budget_for(
    url: &str,
    target: &str,
    request: Request,
) -> Result<Arc<Budget>, LimitConflict> {
    let mut budgets = BUDGETS.lock().unwrap_or_else(|p| p.into_inner());
    budgets.retain(|(_, budget)| budget.strong_count() > 0);
    let existing = budgets
        .iter()
        .find(|(key, _)| key == url)
        .and_then(|(_, budget)| budget.upgrade());
    let budget = match existing {
        Some(budget) => budget,
        None => {
            let budget = Arc::new(Budget {
                target: target.to_string(),
                slots: Arc::new(Semaphore::new(0)),
                state: Mutex::new(Limit {
                    current: 0,
                    fixed: false,
                    owed: 0,
                }),
                open: AtomicUsize::new(0),
                waits: AtomicU64::new(0),
                pools: Mutex::new(Vec::new()),
                warned: Mutex::new(None),
            });
            budgets.push((url.to_string(), Arc::downgrade(&budget)));
            budget
        }
    };
    budget.apply(request)?;
    Ok(budget)
}

impl Budget {
    /// The most connections the process opens to the database now.
    pub fn limit(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).current
    }

    /// The connections open now (pooled, in use or idle).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Times a connection had to wait for a slot since the budget was made.
    #[cfg(test)]
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Sets the limit a bus asks for: a fixed one, or room for its concurrency in a default one.
    fn apply(&self, request: Request) -> Result<(), LimitConflict> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let wanted = match (request.limit, state.fixed) {
            (Some(asked), true) if asked != state.current => {
                return Err(LimitConflict {
                    asked,
                    set: state.current,
                    target: self.target.clone(),
                });
            }
            (Some(asked), _) => {
                state.fixed = true;
                asked
            }
            (None, true) => state.current,
            (None, false) => state
                .current
                .max(request.default_limit)
                .max(request.concurrency.saturating_add(BEYOND_RECEIVERS)),
        };
        if wanted > state.current {
            let mut more = wanted - state.current;
            // Slots owed from an earlier lowering are cancelled first.
            let cancelled = more.min(state.owed);
            state.owed -= cancelled;
            more -= cancelled;
            self.slots.add_permits(more);
        } else if wanted < state.current {
            let fewer = state.current - wanted;
            let forgotten = self.slots.forget_permits(fewer);
            state.owed += fewer - forgotten;
        }
        state.current = wanted;
        metrics::gauge!("nimbus_connection_limit", "database" => self.target.clone())
            .set(wanted as f64);
        Ok(())
    }

    /// Lets the budget ask `pool` for idle connections when others wait; forgotten when the
    /// caller drops what it passed.
    pub fn share_with(&self, pool: &Arc<CloseOneIdle>) {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.retain(|p| p.strong_count() > 0);
        pools.push(Arc::downgrade(pool));
    }

    /// Asks the sharing pools, in turn, to close one connection unused for [`LEND_AFTER`];
    /// `true` if one did.
    fn close_one_idle(&self) -> bool {
        let pools: Vec<Arc<CloseOneIdle>> = {
            let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            pools.iter().filter_map(Weak::upgrade).collect()
        };
        pools.iter().any(|close| close(LEND_AFTER))
    }

    /// Whether a slot is free now.
    pub fn has_room(&self) -> bool {
        self.slots.available_permits() > 0
    }

    /// Waits until a slot is free or `ready` says a connection can be had otherwise (the
    /// caller's pool has an idle one), without taking anything: called before the deadline of
    /// opening a connection starts, so that a wait for the budget is not taken for a frozen
    /// server. Meanwhile it asks the other pools for connections they do not use.
    pub async fn wait_for_room(self: &Arc<Self>, ready: impl Fn() -> bool) {
        if self.has_room() || ready() {
            return;
        }
        let started = Instant::now();
        self.count_wait();
        while !self.has_room() && !ready() {
            self.close_one_idle();
            tokio::time::sleep(ASK_EVERY).await;
            if started.elapsed() >= WARN_AFTER {
                self.warn_of_long_wait(started.elapsed());
            }
        }
        self.record_wait(started.elapsed());
    }

    /// Waits while `exhausted` says every connection of the caller's pool is held, counted as a
    /// wait for a connection like one for the budget.
    pub async fn wait_for_pool(&self, exhausted: impl Fn() -> bool) {
        let started = Instant::now();
        self.waits.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("nimbus_connection_waits_total", "database" => self.target.clone())
            .increment(1);
        tracing::debug!(database = %self.target, "every connection of the pool is in use: waiting for one");
        let mut warned = false;
        while exhausted() {
            tokio::time::sleep(POOL_LOOK_EVERY).await;
            if !warned && started.elapsed() >= WARN_AFTER {
                warned = true;
                tracing::warn!(
                    database = %self.target, waited = ?started.elapsed(),
                    "every connection of the pool has been in use for a while (statements slower \
                     than usual, or a server that stopped answering, whose statements end at \
                     their deadline): still waiting for one"
                );
            }
        }
        self.record_wait(started.elapsed());
    }

    fn count_wait(&self) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("nimbus_connection_waits_total", "database" => self.target.clone())
            .increment(1);
        tracing::debug!(database = %self.target, limit = self.limit(), open = self.open(),
            "every connection of the process's budget is in use: waiting for one");
    }

    fn record_wait(&self, waited: Duration) {
        metrics::histogram!("nimbus_connection_wait_seconds", "database" => self.target.clone())
            .record(waited.as_secs_f64());
    }

    /// Takes a slot for one connection, waiting as long as it takes while asking the other
    /// pools for their idle connections.
    pub async fn slot(self: &Arc<Self>) -> Slot {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => self.wait_for_slot().await,
        };
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        metrics::gauge!("nimbus_connections_open", "database" => self.target.clone())
            .set(open as f64);
        Slot {
            budget: self.clone(),
            permit: Some(permit),
        }
    }

    async fn wait_for_slot(self: &Arc<Self>) -> OwnedSemaphorePermit {
        let started = Instant::now();
        self.count_wait();
        let permit = loop {
            self.close_one_idle();
            // A closed semaphore (it never is) would only mean waiting on.
            let asked = tokio::time::timeout(ASK_EVERY, self.slots.clone().acquire_owned());
            if let Ok(Ok(permit)) = asked.await {
                break permit;
            }
            if started.elapsed() >= WARN_AFTER {
                self.warn_of_long_wait(started.elapsed());
            }
        };
        self.record_wait(started.elapsed());
        permit
    }

    fn warn_of_long_wait(&self, waited: Duration) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_some_and(|at| at.elapsed() < Duration::from_secs(60)) {
            return;
        }
        *warned = Some(Instant::now());
        tracing::warn!(
            database = %self.target, limit = self.limit(), open = self.open(), ?waited,
            "a connection has waited long for the process's connection budget, all of it in \
             use: raise connection_limit, or lower the concurrency of the buses on this database"
        );
    }
}

/// A connection's place in the budget, given back when dropped (when the connection closes).
pub(crate) struct Slot {
    budget: Arc<Budget>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let open = self
            .budget
            .open
            .fetch_sub(1, Ordering::Relaxed)
            .saturating_sub(1);
        metrics::gauge!("nimbus_connections_open", "database" => self.budget.target.clone())
            .set(open as f64);
        let mut state = self.budget.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.owed > 0 {
            state.owed -= 1;
            if let Some(permit) = self.permit.take() {
                permit.forget();
            }
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("database", &self.budget.target)
            .finish()
    }
}

/// Budgets by URL, for tests that look at one.
#[cfg(test)]
pub(crate) fn budgets() -> std::collections::HashMap<String, Arc<Budget>> {
    BUDGETS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(|(url, b)| b.upgrade().map(|b| (url.clone(), b)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(limit: Option<usize>, concurrency: usize) -> Request {
        Request {
            limit,
            concurrency,
            default_limit: DEFAULT_CONNECTION_LIMIT,
        }
    }

    #[tokio::test]
    async fn a_default_budget_makes_room_for_the_busiest_bus() {
        let url = "test://default-room";
        let a = budget_for(url, "db", request(None, 2)).unwrap();
        assert_eq!(a.limit(), DEFAULT_CONNECTION_LIMIT);
        let b = budget_for(url, "db", request(None, 40)).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one budget per URL");
        assert_eq!(a.limit(), 40 + BEYOND_RECEIVERS);
        assert!(budgets().contains_key(url));
    }

    #[tokio::test]
    async fn different_fixed_limits_on_one_database_are_refused() {
        let url = "test://conflict";
        let _a = budget_for(url, "db", request(Some(5), 1)).unwrap();
        let _same = budget_for(url, "db", request(Some(5), 1)).unwrap();
        let _unset = budget_for(url, "db", request(None, 50)).unwrap();
        let e = budget_for(url, "db", request(Some(6), 1)).unwrap_err();
        assert!(e.to_string().contains("at most 6"), "{e}");
        assert!(e.to_string().contains("already set 5"), "{e}");
    }

    #[tokio::test]
    async fn a_waiter_gets_the_idle_connection_another_pool_closes() {
        let budget = budget_for("test://steal", "db", request(Some(1), 1)).unwrap();
        let held = Arc::new(Mutex::new(Some(budget.slot().await)));
        assert!(!budget.has_room());
        // A pool with one idle connection: closing it gives its slot back.
        let idle = held.clone();
        let pool: Arc<CloseOneIdle> =
            Arc::new(move |_idle_for| idle.lock().unwrap().take().is_some());
        budget.share_with(&pool);
        let second = tokio::time::timeout(Duration::from_secs(30), budget.slot())
            .await
            .expect("the idle connection was closed for the waiter");
        assert_eq!(budget.open(), 1);
        assert_eq!(budget.waits(), 1);
        drop(second);
        assert_eq!(budget.open(), 0);
        assert!(budget.has_room());
    }

    #[tokio::test]
    async fn lowering_the_limit_takes_slots_out_as_they_come_back() {
        let url = "test://lower";
        let budget = budget_for(url, "db", request(None, 30)).unwrap();
        let slots: Vec<Slot> = futures::future::join_all((0..34).map(|_| budget.slot())).await;
        assert!(!budget.has_room());
        let _fixed = budget_for(url, "db", request(Some(2), 1)).unwrap();
        assert_eq!(budget.limit(), 2);
        drop(slots);
        assert_eq!(budget.slots.available_permits(), 2);
    }
}
