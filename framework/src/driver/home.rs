//! The runtime a driver opens its connections on.
//!
//! A tokio socket belongs to the runtime it was opened on: that runtime's thread wakes whoever
//! waits on it. Handlers run on threads of their own, and a handler that blocks its thread
//! (which it should not, but may) would stall every connection opened there, whoever uses it
//! later. So drivers open connections, and run PostgreSQL's connection tasks, on the runtime
//! they were built on — the bus's own thread, which runs no handler code.

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
