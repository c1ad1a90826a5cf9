//! Giving memory back after a large value: once a connection moved a value larger than
//! [`super::LARGE_VALUE`] (a body of megabytes), the process asks the C allocator to return the
//! freed memory to the system a moment later, when the copies of that value are gone. glibc
//! keeps freed blocks below its mmap threshold in its heaps otherwise, and raises that threshold
//! to the size of every large block freed (up to 32 MiB): a 20 MB body left tens of megabytes
//! resident for good, in per-thread heaps that trimming does not empty. So the first large value
//! also fixes the threshold at [`super::LARGE_VALUE`] (unless the environment sets
//! `MALLOC_MMAP_THRESHOLD_`): blocks that large are then mapped on their own and unmapped when
//! freed. Elsewhere this does nothing.

/// Notes a large value while it is still held: the first one fixes glibc's mmap threshold, so
/// that it and every later one is unmapped when freed.
pub(crate) fn large_value_seen() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::fix_mmap_threshold();
}

/// Asks, about 250 ms from now, for the memory freed meanwhile to go back to the system;
/// calls within that time share the one request.
pub(crate) fn give_back_soon() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::give_back_soon();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// A thread waits to give memory back: later calls move its moment on.
    static PENDING: AtomicBool = AtomicBool::new(false);

    /// When the last call came, in ms since [`epoch`].
    static LAST_CALL_MS: AtomicU64 = AtomicU64::new(0);

    /// How long after the last large value the memory is given back.
    const QUIET: Duration = Duration::from_millis(250);

    fn epoch() -> Instant {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    fn now_ms() -> u64 {
        u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Fixes glibc's mmap threshold at [`LARGE_VALUE`](crate::driver::LARGE_VALUE), once per
    /// process, unless the environment chose one.
    pub(super) fn fix_mmap_threshold() {
        static FIXED: std::sync::Once = std::sync::Once::new();
        FIXED.call_once(|| {
            if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
                return;
            }
            let threshold = i32::try_from(crate::driver::LARGE_VALUE).unwrap_or(i32::MAX);
            // SAFETY: mallopt takes two integers and only changes the allocator's settings;
            // any thread may call it.
            let fixed = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) } == 1;
            tracing::debug!(
                fixed,
                threshold,
                "fixed the C allocator's mmap threshold, so that large bodies' memory goes \
                 back to the system when freed"
            );
        });
    }

    pub(super) fn give_back_soon() {
        LAST_CALL_MS.store(now_ms(), Ordering::Release);
        if PENDING.swap(true, Ordering::AcqRel) {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("nimbus-heap-trim".into())
            .spawn(|| {
                // Until a quiet moment after the last large value: its copies are gone by then.
                loop {
                    let quiet_since = now_ms().saturating_sub(LAST_CALL_MS.load(Ordering::Acquire));
                    let quiet = u64::try_from(QUIET.as_millis()).unwrap_or(u64::MAX);
                    if quiet_since >= quiet {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(quiet - quiet_since));
                }
                PENDING.store(false, Ordering::Release);
                // SAFETY: malloc_trim takes no pointer and only returns free memory (at the top
                // of each arena, and whole free pages) to the kernel; any thread may call it.
                let released = unsafe { libc::malloc_trim(0) };
                tracing::trace!(released, "gave freed memory back after a large value");
            });
        if spawned.is_err() {
            // No thread now: the next large value asks again.
            PENDING.store(false, Ordering::Release);
        }
    }
}
