//! What a handler's panic prints: the panic's message and backtrace (with `RUST_BACKTRACE=1`)
//! on the message's first attempt, and nothing on the attempts after it, whose failure the
//! endpoint logs anyway with the panic's message and the attempt's number. Without this, a
//! message that panics on each of its attempts prints the same backtrace each time.
//!
//! It works through the process's panic hook: the endpoint wraps whatever hook is installed
//! when it starts (the standard one, or the application's own) and skips it only while a
//! repeated attempt's handler code runs on the thread. A hook the application installs after
//! the endpoint started replaces this one, and then every attempt prints again.

use std::cell::Cell;
use std::future::Future;
use std::sync::Once;

thread_local! {
    /// Whether a repeated attempt's handler runs on this thread right now.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Wraps the process's panic hook, once per process, so that panics of repeated attempts
/// print nothing.
pub(crate) fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Restores the thread's previous setting when dropped, also while a panic unwinds.
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        QUIET.with(|quiet| quiet.set(self.0));
    }
}

/// Runs `run` with panics printed or not: not when `quiet`.
pub(crate) fn run_quietly_if<R>(quiet: bool, run: impl FnOnce() -> R) -> R {
    let _restore = Restore(QUIET.with(|q| q.replace(quiet)));
    run()
}

/// Polls `run` with panics printed or not, on whichever thread polls it.
pub(crate) async fn poll_quietly_if<T>(quiet: bool, run: impl Future<Output = T>) -> T {
    let mut run = std::pin::pin!(run);
    std::future::poll_fn(move |cx| run_quietly_if(quiet, || run.as_mut().poll(cx))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_restored_after_a_panic() {
        let caught = std::panic::catch_unwind(|| run_quietly_if(true, || panic!("on purpose")));
        assert!(caught.is_err());
        assert!(
            !QUIET.with(Cell::get),
            "the thread is loud again after the panic"
        );
        run_quietly_if(true, || {
            assert!(QUIET.with(Cell::get));
            run_quietly_if(false, || assert!(!QUIET.with(Cell::get)));
            assert!(QUIET.with(Cell::get), "the outer setting comes back");
        });
    }
}
