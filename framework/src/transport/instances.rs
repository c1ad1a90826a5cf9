//! The instance registry: every running bus has a row in `NimbusInstances` (its names, host,
//! process, version, queues and handlers), refreshed by a heartbeat of its own and marked
//! stopped by `stop()`, so that operators see which processes are alive and a second process
//! cannot take the name of a live one. Written once over the driver.

use std::time::Duration;

use uuid::Uuid;

use super::sql_transport::Inner;
use crate::driver::instance_statements::{InstanceRow, ListedInstance};
use crate::driver::Driver;
use crate::error::Result;

pub(crate) use crate::driver::instance_statements::HolderRow as InstanceHolder;

/// This host's name, as the operating system gives it: what a bus registers as its host, and
/// the instance name [`BusBuilder::application`](crate::BusBuilder::application) gives it;
/// `"localhost"` when the system has none that is valid text.
pub fn host_name() -> String {
    gethostname::gethostname()
        .into_string()
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// How many heartbeats in a row an instance may miss before it counts as not responding.
pub const MISSED_HEARTBEATS: i32 = 3;

/// What a starting bus writes about itself.
#[derive(Debug, Clone)]
pub(crate) struct InstanceRegistration {
    /// This start's own id: a restart is a new row.
    pub run_id: Uuid,
    pub application: String,
    pub instance: String,
    pub host: String,
    pub process_id: i64,
    pub version: String,
    pub queues: Vec<String>,
    pub handlers: Vec<String>,
    /// The application lets several live processes use this name.
    pub shares_name: bool,
    pub heartbeat: Duration,
}

/// What came of a registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Registered {
    /// The row is written; the name is this start's.
    Yes,
    /// Another live process holds the name (nothing was written).
    NameHeld(InstanceHolder),
    /// `NimbusInstances` does not exist (a schema made before it, with auto-create off).
    NoTable,
}

impl<D: Driver> Inner<D> {
    /// Registers `registration` in one transaction that holds the name's lock: the other live
    /// holders of the name are read, and the first that `blocks` says forbids this start is
    /// returned instead of writing anything.
    pub(super) async fn register_instance(
        &self,
        registration: &InstanceRegistration,
        blocks: &(dyn for<'h> Fn(&'h InstanceHolder) -> bool + Send + Sync),
    ) -> Result<Registered> {
        let cx = &self.cx;
        let purpose = "registering this instance in NimbusInstances";
        let mut c = self.connection(purpose).await?;
        let exists = cx.table_exists(&mut c, "NimbusInstances").await?;
        c.release();
        if !exists {
            return Ok(Registered::NoTable);
        }
        let mut c = self.transaction(purpose).await?;
        let name = format!(
            "{}\u{1f}{}",
            registration.application, registration.instance
        );
        if let Some(lock) = &cx.sql.instance_lock {
            let wait = cx.deadlines.statement.mul_f64(0.75);
            let wait_ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
            c.lock_instance_name(lock, &name, wait_ms)
                .await
                .map_err(cx.db("taking the lock of this instance's name"))?;
        }
        let holders = c
            .instance_holders(
                &cx.sql.instance_holders,
                &registration.application,
                &registration.instance,
                registration.run_id,
                MISSED_HEARTBEATS,
            )
            .await
            .map_err(cx.db("reading the live holders of this instance's name"))?;
        if let Some(holder) = holders.into_iter().find(|h| blocks(h)) {
            self.commit(c, &[], purpose).await?;
            return Ok(Registered::NameHeld(holder));
        }
        let (queues, handlers) = (
            registration.queues.join(","),
            registration.handlers.join(","),
        );
        let row = InstanceRow {
            run_id: registration.run_id,
            application: &registration.application,
            instance: &registration.instance,
            host: &registration.host,
            process_id: registration.process_id,
            version: &registration.version,
            queues: &queues,
            handlers: &handlers,
            shares_name: registration.shares_name,
            heartbeat_seconds: i32::try_from(registration.heartbeat.as_secs().max(1))
                .unwrap_or(i32::MAX),
        };
        c.register_instance(&cx.sql.instance_register, &row)
            .await
            .map_err(cx.db(purpose))?;
        self.commit(c, &[], purpose).await?;
        Ok(Registered::Yes)
    }

    /// Refreshes (`stopped` false) or marks stopped (`stopped` true) the row of `run_id`;
    /// `false` when the row is gone.
    pub(super) async fn touch_instance(&self, run_id: Uuid, stopped: bool) -> Result<bool> {
        let cx = &self.cx;
        let (sql, purpose) = if stopped {
            (&cx.sql.instance_stop, "marking this instance stopped")
        } else {
            (&cx.sql.instance_heartbeat, "this instance's heartbeat")
        };
        let mut c = self.connection(purpose).await?;
        let found = c
            .touch_instance(sql, run_id)
            .await
            .map_err(cx.db(purpose))?;
        c.release();
        Ok(found)
    }

    /// Deletes the rows of instances not seen for `older_than` (stopped or silent).
    pub(super) async fn cleanup_instances(&self, older_than: Duration) -> Result<u64> {
        let cx = &self.cx;
        let purpose = "deleting the rows of instances long gone";
        let mut c = self.connection(purpose).await?;
        let seconds = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
        let deleted = c
            .cleanup_instances(&cx.sql.instance_cleanup, seconds)
            .await
            .map_err(cx.db(purpose))?;
        c.release();
        Ok(deleted)
    }

    /// Every registered instance; `None` when `NimbusInstances` does not exist.
    pub(super) async fn list_instances(&self) -> Result<Option<Vec<ListedInstance>>> {
        let cx = &self.cx;
        let purpose = "listing the instances";
        let mut c = self.connection(purpose).await?;
        if !cx.table_exists(&mut c, "NimbusInstances").await? {
            c.release();
            return Ok(None);
        }
        let rows = c
            .instances(&cx.sql.instance_list)
            .await
            .map_err(cx.db(purpose))?;
        c.release();
        Ok(Some(rows))
    }
}
