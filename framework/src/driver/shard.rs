//! Which handler thread (shard) the calling code runs on.
//!
//! The dispatcher marks each handler thread once, when it starts; drivers that keep a pool per
//! handler thread read the mark to hand out that thread's connections, and the dispatcher reads
//! it to call a handler on the thread its receive runs on. Kept apart from the drivers so that
//! every build, with any database feature, has it.

thread_local! {
    /// The handler thread (shard) this thread is, if it is one; see [`enter_shard`].
    static SHARD: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Marks the calling thread as handler thread `shard`: connections taken on it from then on
/// come from a pool of its own, opened on its runtime, so that a message received, handled and
/// committed there never waits on another thread (see the drivers' `ShardedPools`).
pub(crate) fn enter_shard(shard: usize) {
    SHARD.with(|s| s.set(Some(shard)));
}

/// The handler thread the calling code runs on, if it runs on one.
pub(crate) fn current_shard() -> Option<usize> {
    SHARD.with(std::cell::Cell::get)
}
