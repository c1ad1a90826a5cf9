//! What operators see of ordered groups and priorities: the groups of a queue with messages
//! waiting, which of them wait for a delayed retry of their first message (held), and the
//! messages per priority; and what a DBA runs to give a queue table their columns.

use super::Database;
use crate::error::Result;
use crate::transport::{GroupSummary, PriorityCount, Wanted};

impl Database {
    /// Gives `queue`'s table the columns and indexes of ordered groups where it lacks them (what
    /// an endpoint with [`BusBuilder::ordered_groups`](crate::BusBuilder::ordered_groups) and
    /// auto-create does at start; `nimbus schema apply --grouped-queue`). Not supported in the
    /// shared-table layout.
    pub async fn create_ordered_groups(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .ordered_groups(&queue, Wanted::Create)
            .await
            .map(|_| ())
    }

    /// Checks that `queue`'s table keeps ordered groups with their indexes; the error quotes
    /// the statements that add what is missing (`nimbus schema verify --grouped-queue`).
    pub async fn verify_ordered_groups(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .ordered_groups(&queue, Wanted::Require)
            .await
            .map(|_| ())
    }

    /// Gives `queue`'s table the `Priority` column and index where it lacks them (what an
    /// endpoint with [`BusBuilder::priorities`](crate::BusBuilder::priorities) and auto-create
    /// does at start; `nimbus schema apply --priority-queue`). Not supported in the
    /// shared-table layout.
    pub async fn create_priorities(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .priorities(&queue, Wanted::Create)
            .await
            .map(|_| ())
    }

    /// Checks that `queue`'s table keeps priorities with their index; the error quotes the
    /// statements that add what is missing (`nimbus schema verify --priority-queue`).
    pub async fn verify_priorities(&self, queue: &str) -> Result<()> {
        let queue = self.known_queue(queue).await?;
        self.transport
            .priorities(&queue, Wanted::Require)
            .await
            .map(|_| ())
    }

    /// The messages of `queue` per priority, the highest first (those being handled included);
    /// empty when the queue keeps no priorities.
    pub async fn priorities(&self, queue: &str) -> Result<Vec<PriorityCount>> {
        let queue = self.known_queue(queue).await?;
        self.transport.priority_counts(&queue).await
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
