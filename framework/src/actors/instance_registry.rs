//! The instance registry's side in a running bus: at start the bus registers itself in
//! `NimbusInstances` (refused when another live process holds its name), a heartbeat actor
//! refreshes its row every `instance_heartbeat`, and `stop()` marks it stopped. The heartbeat
//! also deletes, once an hour, the rows of instances gone for a day.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::periodic::Periodic;
use crate::error::{NimbusError, Result};
use crate::pipeline::EndpointState;
use crate::transport::instances::{InstanceHolder, InstanceRegistration, Registered};

/// How long the rows of stopped or silent instances are kept, for operators to see.
pub(crate) const GONE_INSTANCES_KEPT: Duration = Duration::from_secs(24 * 3600);
/// How often a running bus deletes the rows of instances gone for longer.
const CLEANUP_EVERY: Duration = Duration::from_secs(3600);

/// The starts of buses registered by this process and not stopped yet: a holder of a name
/// with this process's host and id is one of them (another bus of this process: a conflict),
/// or else a process that ran before this one with the same id (a restarted container, whose
/// process ids start again from 1: gone).
static THIS_PROCESS: Mutex<Option<HashSet<Uuid>>> = Mutex::new(None);

fn this_process() -> std::sync::MutexGuard<'static, Option<HashSet<Uuid>>> {
    THIS_PROCESS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether process `pid` is gone from this host (Linux: no `/proc/<pid>`); elsewhere nothing
/// says so, and it counts as running.
fn process_is_gone(pid: i64) -> bool {
    if cfg!(target_os = "linux") {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    } else {
        false
    }
}

/// Whether `holder`, a live row with this bus's name, forbids this start.
fn blocks(holder: &InstanceHolder, host: &str, share: bool) -> bool {
    if share && holder.shares_name {
        return false;
    }
    if holder.host != host {
        return true;
    }
    let this_pid = i64::from(std::process::id());
    if holder.process_id == this_pid {
        let sibling = this_process()
            .as_ref()
            .is_some_and(|runs| runs.iter().any(|r| r.to_string() == holder.run_id));
        return sibling;
    }
    !process_is_gone(holder.process_id)
}

/// What this bus registers: its names, where it runs, what it receives and handles.
pub(crate) fn registration(endpoint: &EndpointState, queues: &[String]) -> InstanceRegistration {
    let config = &endpoint.config;
    InstanceRegistration {
        run_id: Uuid::new_v4(),
        application: config.identity.application.clone(),
        instance: config.identity.instance.clone(),
        host: crate::transport::instances::host_name(),
        process_id: i64::from(std::process::id()),
        version: env!("CARGO_PKG_VERSION").to_string(),
        queues: queues.to_vec(),
        handlers: config
            .handlers
            .handled_types()
            .into_iter()
            .map(|(type_name, _)| type_name.to_string())
            .collect(),
        shares_name: config.share_instance_name,
        heartbeat: config.instance_heartbeat,
    }
}

/// Registers the bus; `Ok(false)` when `NimbusInstances` does not exist (logged: the bus runs
/// unregistered). The error names the live process that holds the name.
pub(crate) async fn register(
    endpoint: &EndpointState,
    registration: &InstanceRegistration,
) -> Result<bool> {
    let (host, share) = (registration.host.clone(), registration.shares_name);
    let outcome = endpoint
        .transport
        .register_instance(registration, &move |h: &InstanceHolder| {
            blocks(h, &host, share)
        })
        .await?;
    match outcome {
        Registered::Yes => {
            this_process()
                .get_or_insert_with(HashSet::new)
                .insert(registration.run_id);
            Ok(true)
        }
        Registered::NoTable => {
            tracing::warn!(schema = %endpoint.config.schema.as_str(), "NimbusInstances does not exist (a schema made before it, with auto-create off): this instance is not registered, so `nimbus instances` and the console cannot show it and its name is not guarded; create it with `nimbus schema apply`");
            Ok(false)
        }
        Registered::NameHeld(holder) => Err(NimbusError::InstanceNameTaken {
            application: registration.application.clone(),
            instance: registration.instance.clone(),
            host: holder.host,
            process_id: holder.process_id,
            seconds_since_seen: holder.seconds_since_seen,
        }),
    }
}

/// Marks the bus stopped: its name is free at once. A failure is logged, not returned: the row
/// stops being refreshed and shows as "not responding" within three heartbeats anyway.
pub(crate) async fn mark_stopped(endpoint: &EndpointState, run_id: Uuid) {
    if let Some(runs) = this_process().as_mut() {
        runs.remove(&run_id);
    }
    if let Err(e) = endpoint.transport.touch_instance(run_id, true).await {
        tracing::warn!(error = %e, "could not mark this instance stopped in NimbusInstances; it shows as not responding once its heartbeats are missed");
    }
}

/// The heartbeat actor of a registered bus.
pub(crate) fn instance_heartbeat(
    endpoint: Arc<EndpointState>,
    registration: Arc<InstanceRegistration>,
) -> Periodic {
    let last_cleanup: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    Periodic::new(
        "instance heartbeat",
        registration.heartbeat,
        true,
        Arc::new(move || {
            let (endpoint, registration, last_cleanup) =
                (endpoint.clone(), registration.clone(), last_cleanup.clone());
            Box::pin(async move { beat(&endpoint, &registration, &last_cleanup).await })
        }),
    )
}

/// One heartbeat: refreshes the row (writing it again when a cleanup took it during a long
/// silence), and deletes the rows of long-gone instances once an hour.
async fn beat(
    endpoint: &EndpointState,
    registration: &InstanceRegistration,
    last_cleanup: &Mutex<Option<Instant>>,
) -> Result<()> {
    let transport = &endpoint.transport;
    if !transport.touch_instance(registration.run_id, false).await? {
        tracing::warn!(
            instance = %registration.instance,
            "this instance's row in NimbusInstances was gone (deleted after a long silence?); registering it again"
        );
        register(endpoint, registration).await?;
    }
    let due = last_cleanup
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_none_or(|at| at.elapsed() >= CLEANUP_EVERY);
    if due {
        let deleted = transport.cleanup_instances(GONE_INSTANCES_KEPT).await?;
        if deleted > 0 {
            tracing::debug!(
                deleted,
                "deleted the rows of instances gone for a day from NimbusInstances"
            );
        }
        *last_cleanup.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(host: &str, process_id: i64, shares_name: bool) -> InstanceHolder {
        InstanceHolder {
            run_id: Uuid::new_v4().to_string(),
            host: host.into(),
            process_id,
            shares_name,
            last_seen_at: None,
            seconds_since_seen: 1,
        }
    }

    #[test]
    fn a_live_holder_elsewhere_blocks_unless_both_share() {
        assert!(blocks(&holder("other", 1, false), "here", false));
        assert!(blocks(&holder("other", 1, true), "here", false));
        assert!(blocks(&holder("other", 1, false), "here", true));
        assert!(!blocks(&holder("other", 1, true), "here", true));
    }

    #[test]
    fn on_this_host_a_gone_process_or_an_earlier_run_with_this_pid_does_not_block() {
        let this_pid = i64::from(std::process::id());
        // Not a run of this process: an earlier process that had this id (a restarted
        // container).
        assert!(!blocks(&holder("here", this_pid, false), "here", false));
        let sibling = holder("here", this_pid, false);
        let run = Uuid::parse_str(&sibling.run_id).expect("a uuid");
        this_process().get_or_insert_with(HashSet::new).insert(run);
        assert!(
            blocks(&sibling, "here", false),
            "another bus of this process"
        );
        this_process().as_mut().map(|r| r.remove(&run));
        if cfg!(target_os = "linux") {
            assert!(!blocks(
                &holder("here", i64::from(u32::MAX), false),
                "here",
                false
            ));
            // Process 1 runs on every Linux host.
            assert!(blocks(&holder("here", 1, false), "here", false));
        }
    }
}
