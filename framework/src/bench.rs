//! Support for the benchmark (`nimbus bench`, in the CLI crate): the same SQL the framework runs,
//! driven with no framework around it, over the bus's own pool, so the two can be compared in one
//! run.
//!
//! Not for applications: it bypasses headers, handlers, retries and actors.

use std::sync::Arc;

use uuid::Uuid;

use crate::envelope::{Delivery, Destination, OutgoingMessage};
use crate::error::Result;
use crate::names::QueueName;
use crate::transport::Transport;

/// Bare statements over a started bus's backend: the dialect's `INSERT` and its
/// skip-locked `DELETE … RETURNING`, each in its own transaction, as the framework runs them.
#[derive(Clone)]
pub struct BareSql {
    transport: Arc<dyn Transport>,
    /// The headers of every bare row: what the framework writes for the same message.
    headers_json: Arc<str>,
}

impl std::fmt::Debug for BareSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BareSql")
            .field("database", &self.transport.name())
            .finish()
    }
}

impl BareSql {
    pub(crate) fn new(transport: Arc<dyn Transport>, headers_json: String) -> Self {
        BareSql {
            transport,
            headers_json: headers_json.into(),
        }
    }

    /// The headers every bare row carries (JSON): what the framework writes for the benchmark's
    /// message.
    pub fn headers_json(&self) -> &str {
        &self.headers_json
    }

    /// The bytes of the headers every bare row carries.
    pub fn headers_len(&self) -> usize {
        self.headers_json.len()
    }

    /// Inserts `bodies` into `queue`, all in one transaction, as the framework writes a batch
    /// (one multi-row statement where the database keeps their order, else one per row).
    pub async fn send(&self, queue: &str, bodies: Vec<Vec<u8>>) -> Result<()> {
        let queue = QueueName::new(queue)?;
        let rows: Vec<OutgoingMessage> = bodies
            .into_iter()
            .map(|body| OutgoingMessage {
                destination: Destination::Queue(queue.clone()),
                id: Uuid::new_v4(),
                headers_json: self.headers_json.to_string(),
                body,
                correlation_id: None,
                reply_to_address: None,
                time_to_be_received_ms: None,
                expires_at: None,
                delivery: Delivery::Immediate,
                group: None,
                priority: None,
                stored_apart: None,
            })
            .collect();
        self.transport.send(&rows).await
    }

    /// Deletes the oldest unlocked row of `queue` and commits; returns its body, or `None` when
    /// the queue is empty.
    pub async fn receive(&self, queue: &str) -> Result<Option<Vec<u8>>> {
        let queue = QueueName::new(queue)?;
        match self
            .transport
            .receive(&queue, &crate::transport::StopSignal::never())
            .await?
        {
            None => Ok(None),
            Some((row, tx)) => {
                tx.commit(Vec::new()).await?;
                Ok(Some(row.body))
            }
        }
    }

    /// Drops `queue`'s table.
    pub async fn drop_queue(&self, queue: &str) -> Result<()> {
        self.transport.drop_queue(&QueueName::new(queue)?).await
    }
}
