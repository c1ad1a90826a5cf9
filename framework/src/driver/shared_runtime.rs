//! The process's one runtime for connections that outlive any single bus: the pool that every
//! bus on one database shares for work outside handler threads, and the wake-up listener they
//! share. One thread, started on first use, runs it for the rest of the process; it only moves
//! bytes between sockets and the tasks that wait on them.

use std::sync::OnceLock;

use tokio::runtime::Handle;

use super::{DriverError, DriverResult, FailureKind};

static RUNTIME: OnceLock<Result<Handle, String>> = OnceLock::new();

/// The shared runtime, started on first use: a thread that drives it for ever.
pub(crate) fn handle() -> DriverResult<Handle> {
    let runtime = RUNTIME.get_or_init(|| {
        let (started, handle) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("nimbus-connections".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        let _ = started.send(Ok(runtime.handle().clone()));
                        runtime.block_on(std::future::pending::<()>());
                    }
                    Err(e) => {
                        let _ = started.send(Err(e.to_string()));
                    }
                }
            })
            .map_err(|e| e.to_string())
            .and_then(|_| {
                handle
                    .recv()
                    .unwrap_or_else(|_| Err("the thread ended before it started".into()))
            })
    });
    match runtime {
        Ok(handle) => Ok(handle.clone()),
        Err(e) => Err(DriverError::other(
            FailureKind::Permanent,
            format!(
                "could not start the thread that runs the process's shared database \
                 connections: {e}"
            ),
        )),
    }
}
