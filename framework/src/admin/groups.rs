//! What operators see of ordered groups: the groups of a queue with messages waiting, and which
//! of them wait for a delayed retry of their first message (held).

use super::Database;
use crate::error::Result;
use crate::transport::GroupSummary;

impl Database {
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
