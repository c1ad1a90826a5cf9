//! What operators see of ordered groups: the groups of a queue with messages waiting, and which
//! of them wait for a delayed retry of their first message (held).

use super::Database;
use crate::error::Result;
use crate::transport::{GroupSummary, GroupsWanted};

impl Database {
    /// Gives `queue`'s table the columns and indexes of ordered groups where it lacks them (what
    /// an endpoint with [`BusBuilder::ordered_groups`](crate::BusBuilder::ordered_groups) and
    /// auto-create does at start; `nimbus schema apply --grouped-queue`). Not supported in the
    /// shared-table layout.
    pub async fn create_ordered_groups(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .ordered_groups(&queue, GroupsWanted::Create)
            .await
            .map(|_| ())
    }

    /// Checks that `queue`'s table keeps ordered groups with their indexes; the error quotes
    /// the statements that add what is missing (`nimbus schema verify --grouped-queue`).
    pub async fn verify_ordered_groups(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .ordered_groups(&queue, GroupsWanted::Require)
            .await
            .map(|_| ())
    }

    /// The ordered groups of `queue` with messages waiting, the longest first (at most
    /// `limit`): each group's key, its messages in the queue (the one being handled included),
    /// and, for a group whose first message failed and waits for a delayed retry, until when
    /// it is held. Empty when the queue keeps no groups (see
    /// [`BusBuilder::ordered_groups`](crate::BusBuilder::ordered_groups)). An unknown queue is
    /// an error naming the closest ones.
    pub async fn groups(&self, queue: &str, limit: i64) -> Result<Vec<GroupSummary>> {
        let queue = self.known_queue(queue).await?;
        self.transport.groups(&queue, limit.max(1)).await
    }
}
