//! What operators see of limits (see [`Limit`](crate::Limit)): each limit's slots in
//! `NimbusLimits`, and how many messages it held back because it was full.

use super::Database;
use crate::error::Result;
pub use crate::transport::{BodySummary, LimitSummary};

impl Database {
    /// Every limit's scope (`<queue>|<kind>|<message type>`, and `|<key>` for a limit per key)
    /// with its slots, how many a rate took within its period, and how many messages it held
    /// back, in scope order; none where no endpoint with limits has run yet.
    pub async fn limits(&self) -> Result<Vec<LimitSummary>> {
        self.transport.limits().await
    }

    /// What the claim check stores apart in `NimbusBodies`, per queue its messages were
    /// written to: bodies, bytes, dead letters' and object stores' (`nimbus bodies`); none
    /// where no endpoint has stored a body apart yet.
    pub async fn bodies(&self) -> Result<Vec<BodySummary>> {
        self.transport.bodies().await
    }

    /// Deletes the bodies in `claim_check`'s object stores (this schema's folder) older than
    /// its `orphans_after` that no row of `NimbusBodies` names (their message was handled, or
    /// their send never committed), as the endpoints' idle sweep does; returns how many.
    pub async fn sweep_object_stores(&self, claim_check: &crate::ClaimCheck) -> Result<u64> {
        self.transport
            .sweep_orphan_objects(claim_check.stores())
            .await
    }
}
