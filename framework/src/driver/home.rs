//! The runtime a driver opens its connections on.
//!
//! A tokio socket belongs to the runtime it was opened on: that runtime's thread wakes whoever
//! waits on it. The PostgreSQL and SQL Server drivers open connections, and run their tasks, on
//! the process's [shared runtime](super::shared_runtime), in a pool every bus on the same
//! database shares — except for the connections taken on a handler thread (where the receivers
//! run), which come from a pool of that thread's own ([`ShardedPools`]): used only there, so a
//! handler that blocks its thread stalls only the connections of that thread.

use std::future::Future;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// The runtime connections are opened on: the one current when the driver was built, or the
/// caller's when there was none (a driver built outside any runtime).
#[derive(Clone, Debug)]
pub(crate) struct Home(Option<Handle>);

impl Home {
    /// The runtime of the calling code, if it runs in one.
    pub fn here() -> Self {
        Home(Handle::try_current().ok())
    }

    /// Runs `work` on the home runtime (the caller's, without one). If the home runtime has shut
    /// down, the handle resolves to a cancellation error.
    pub fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.0 {
            Some(home) => home.spawn(work),
            None => tokio::spawn(work),
        }
    }
}

/// Opens one pool whose connections belong to a given runtime.
type OpenPool<P> = dyn Fn(Home) -> super::DriverResult<P> + Send + Sync;

/// What [`ShardedPools`] needs of a pool: to share it by a weak handle, to grow it, and to
/// close one idle connection for the [connection budget](super::budget).
pub(crate) trait SharablePool: Clone + Send + Sync + 'static {
    /// A handle that does not keep the pool open.
    fn downgrade(&self) -> Box<dyn std::any::Any + Send>;
    /// The pool behind `weak`, if it is still open.
    fn upgrade(weak: &(dyn std::any::Any + Send)) -> Option<Self>;
    /// Lets the pool hold `size` connections, if it holds fewer.
    fn grow_to(&self, size: usize);
    /// Closes one connection nobody has held for `idle_for`; `true` if there was one.
    fn close_one_idle(&self, idle_for: std::time::Duration) -> bool;
    /// Whether a connection nobody holds is in the pool.
    fn has_idle(&self) -> bool;
    /// Whether every connection the pool may hold is open and held: a taker waits for one to
    /// come back.
    fn is_exhausted(&self) -> bool;
    /// Closes the connections nobody holds that went unused for `unused_for` (all of them:
    /// `Duration::ZERO`); how many.
    fn close_idle(&self, unused_for: std::time::Duration) -> usize;
}

impl<M: deadpool::managed::Manager + 'static> SharablePool for deadpool::managed::Pool<M>
where
    M::Type: Send,
{
    fn downgrade(&self) -> Box<dyn std::any::Any + Send> {
        Box::new(self.weak())
    }

    fn upgrade(weak: &(dyn std::any::Any + Send)) -> Option<Self> {
        weak.downcast_ref::<deadpool::managed::WeakPool<M>>()
            .and_then(deadpool::managed::WeakPool::upgrade)
    }

    fn grow_to(&self, size: usize) {
        if self.status().max_size < size {
            self.resize(size);
        }
    }

    fn close_one_idle(&self, idle_for: std::time::Duration) -> bool {
        let mut closed = false;
        let removed = self.retain(|_, m| {
            if closed || m.last_used() < idle_for {
                true
            } else {
                closed = true;
                false
            }
        });
        !removed.removed.is_empty()
    }

    fn has_idle(&self) -> bool {
        self.status().available > 0
    }

    fn is_exhausted(&self) -> bool {
        let status = self.status();
        status.available == 0 && status.size >= status.max_size
    }

    fn close_idle(&self, unused_for: std::time::Duration) -> usize {
        self.retain(|_, m| m.last_used() < unused_for).removed.len()
    }
}

/// The pools every driver of the process shares for work outside handler threads, by the key
/// of their database (URL and credentials).
static SHARED_HOMES: std::sync::Mutex<Vec<(String, Box<dyn std::any::Any + Send>)>> =
    std::sync::Mutex::new(Vec::new());

/// A driver's pools: one that every driver of the process on the same database shares, whose
/// connections live on the [shared runtime](super::shared_runtime), for everything outside the
/// handler threads (peeks, sends from outside handlers, background jobs); and one per handler
/// thread, opened lazily on that thread's runtime for the receives that run there. A receive's
/// connection is always used on the thread whose runtime owns its socket: no hop to another
/// thread per statement, and a handler thread held by blocking code holds only its own
/// connections. Every pool opens its connections within the database's
/// [budget](super::budget).
pub(crate) struct ShardedPools<P> {
    home: P,
    shards: std::sync::Mutex<Vec<Option<P>>>,
    open: Box<OpenPool<P>>,
    budget: std::sync::Arc<super::budget::Budget>,
    /// What the budget calls to take an idle connection of these pools for another: held only
    /// here (the budget keeps a weak handle), so it goes with the pools.
    _lender: std::sync::Arc<super::budget::CloseOneIdle>,
    /// The pools the lender closes connections of.
    lent: std::sync::Arc<std::sync::Mutex<Vec<P>>>,
}

impl<P: SharablePool> ShardedPools<P> {
    /// Joins (or opens) the shared pool of the database `key` names, as large as the largest
    /// `size` of the drivers that joined it: its size bounds how many of the buses' peeks and
    /// background jobs run at once, so that quiet buses reuse a few connections; `open` makes
    /// every pool, given the runtime its connections belong to.
    pub fn new(
        key: &str,
        size: usize,
        budget: std::sync::Arc<super::budget::Budget>,
        open: impl Fn(Home) -> super::DriverResult<P> + Send + Sync + 'static,
    ) -> super::DriverResult<Self> {
        let home = {
            let mut homes = SHARED_HOMES.lock().unwrap_or_else(|p| p.into_inner());
            homes.retain(|(_, weak)| P::upgrade(weak.as_ref()).is_some());
            match homes
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, weak)| P::upgrade(weak.as_ref()))
            {
                Some(home) => {
                    home.grow_to(size);
                    home
                }
                None => {
                    let home = open(Home(Some(super::shared_runtime::handle()?)))?;
                    homes.push((key.to_string(), home.downgrade()));
                    home
                }
            }
        };
        let lent = std::sync::Arc::new(std::sync::Mutex::new(vec![home.clone()]));
        let lender: std::sync::Arc<super::budget::CloseOneIdle> = {
            let lent = lent.clone();
            std::sync::Arc::new(move |idle_for| {
                let pools = lent.lock().unwrap_or_else(|p| p.into_inner()).clone();
                pools.iter().any(|pool| pool.close_one_idle(idle_for))
            })
        };
        budget.share_with(&lender);
        Ok(ShardedPools {
            home,
            shards: std::sync::Mutex::new(Vec::new()),
            open: Box::new(open),
            budget,
            _lender: lender,
            lent,
        })
    }

    /// Waits until a connection can be had on the calling thread without waiting for the
    /// budget: its pool has an idle one, or the budget has room (see `Driver::wait_for_room`).
    /// Also waits while every connection of that pool is held (by work whose statements have
    /// deadlines of their own): a burst of work is queued, not taken for a server that does not
    /// answer a login.
    pub async fn wait_for_room(&self) {
        let Ok(pool) = self.here() else {
            return;
        };
        if pool.is_exhausted() {
            self.budget.wait_for_pool(|| pool.is_exhausted()).await;
        }
        self.budget.wait_for_room(|| pool.has_idle()).await;
    }

    /// Whether a connection can be had on the calling thread without waiting for the budget.
    pub fn has_room(&self) -> bool {
        self.budget.has_room() || self.here().is_ok_and(|pool| pool.has_idle())
    }

    /// Whether a connection can be had on the calling thread now, without waiting at all: its
    /// pool has an idle one, or may open another and the budget has room.
    pub fn can_connect_now(&self) -> bool {
        self.here()
            .is_ok_and(|pool| pool.has_idle() || (!pool.is_exhausted() && self.budget.has_room()))
    }

    /// Every pool opened so far: the shared one and each handler thread's.
    pub fn all(&self) -> Vec<P> {
        let shards = self.shards.lock().unwrap_or_else(|p| p.into_inner());
        std::iter::once(self.home.clone())
            .chain(shards.iter().flatten().cloned())
            .collect()
    }

    /// Closes every idle connection of these pools (see `Driver::forget_idle`).
    pub fn forget_idle(&self) {
        for pool in self.all() {
            pool.close_idle(std::time::Duration::ZERO);
        }
    }

    /// Closes the idle connections nobody took for `unused_for`; how many.
    pub fn close_unused(&self, unused_for: std::time::Duration) -> usize {
        self.all().iter().map(|p| p.close_idle(unused_for)).sum()
    }

    /// The pool for connections used on the calling thread.
    pub fn here(&self) -> super::DriverResult<P> {
        let Some(shard) = super::shard::current_shard() else {
            return Ok(self.home.clone());
        };
        let mut shards = self.shards.lock().unwrap_or_else(|p| p.into_inner());
        if shards.len() <= shard {
            shards.resize_with(shard + 1, || None);
        }
        if let Some(pool) = &shards[shard] {
            return Ok(pool.clone());
        }
        let pool = (self.open)(Home::here())?;
        shards[shard] = Some(pool.clone());
        self.lent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pool.clone());
        Ok(pool)
    }
}
