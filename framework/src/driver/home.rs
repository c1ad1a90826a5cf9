//! The runtime a driver opens its connections on.
//!
//! A tokio socket belongs to the runtime it was opened on: that runtime's thread wakes whoever
//! waits on it. Drivers open connections, and run PostgreSQL's connection tasks, on the runtime
//! they were built on — the bus's own thread, which runs no handler code — except for the
//! connections taken on a handler thread (where the receivers run), which come from a pool of
//! that thread's own ([`ShardedPools`]): used only there, so a handler that blocks its thread
//! stalls only the connections of that thread.

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

/// A driver's pools: one whose connections live on the runtime the driver was built on (the
/// bus's thread), for everything outside the handler threads, and one per handler thread,
/// opened lazily on that thread's runtime for the receives that run there. A connection is
/// always used on the thread whose runtime owns its socket: no hop to another thread per
/// statement, and a handler thread held by blocking code holds only its own connections.
pub(crate) struct ShardedPools<P> {
    home: P,
    shards: std::sync::Mutex<Vec<Option<P>>>,
    open: Box<OpenPool<P>>,
}

impl<P: Clone> ShardedPools<P> {
    /// Opens the home pool on the calling code's runtime; `open` makes the others.
    pub fn new(
        open: impl Fn(Home) -> super::DriverResult<P> + Send + Sync + 'static,
    ) -> super::DriverResult<Self> {
        let home = open(Home::here())?;
        Ok(ShardedPools {
            home,
            shards: std::sync::Mutex::new(Vec::new()),
            open: Box::new(open),
        })
    }

    /// Every pool opened so far: the home one and each handler thread's.
    pub fn all(&self) -> Vec<P> {
        let shards = self.shards.lock().unwrap_or_else(|p| p.into_inner());
        std::iter::once(self.home.clone())
            .chain(shards.iter().flatten().cloned())
            .collect()
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
        Ok(pool)
    }
}
