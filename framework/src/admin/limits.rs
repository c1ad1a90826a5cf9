//! What operators see of limits (see [`Limit`](crate::Limit)): each limit's slots in
//! `NimbusLimits`, and how many messages it held back because it was full.

use super::Database;
use crate::error::Result;
pub use crate::transport::LimitSummary;

impl Database {
    /// Every limit's scope (`<queue>|<kind>|<message type>`, and `|<key>` for a limit per key)
    /// with its slots, how many a rate took within its period, and how many messages it held
    /// back, in scope order; none where no endpoint with limits has run yet.
    pub async fn limits(&self) -> Result<Vec<LimitSummary>> {
        self.transport.limits().await
    }
}
