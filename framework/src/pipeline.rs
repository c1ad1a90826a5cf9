//! What happens to one message: receive it, dispatch it to its handlers, commit or roll back.
//! Receiver actors run this; it never panics outward (handler panics are caught here).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::backend::Backend;
use crate::config::EndpointConfig;
use crate::envelope::Incoming;
use crate::error::NimbusError;
use crate::handler::HandlerContext;
use crate::names::QueueName;

/// What an endpoint's actors share.
pub(crate) struct EndpointShared {
    pub config: EndpointConfig,
    pub backend: Arc<dyn Backend>,
}

/// The result of one receive.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing to receive: go back to peeking.
    Empty,
    /// Handled and committed, together with everything the handlers sent.
    Handled,
    /// Past its `Expires`: deleted without being handled.
    Expired,
    /// A handler returned an error, or the message cannot be dispatched; rolled back, so the
    /// message is back in the queue.
    Failed(String),
    /// A handler panicked; rolled back. The receiver actor restarts.
    Panicked(String),
    /// The database failed (connection lost, commit failed); whatever was open is rolled back.
    Infrastructure(NimbusError),
}

/// Receives one message from `queue` and handles it in the receive's transaction.
pub(crate) async fn receive_and_handle(shared: &EndpointShared, queue: &QueueName) -> Outcome {
    let (row, tx) = match shared.backend.receive(queue).await {
        Ok(None) => return Outcome::Empty,
        Ok(Some(received)) => received,
        Err(e) => return Outcome::Infrastructure(e),
    };
    if row.expired {
        return match tx.commit(Vec::new()).await {
            Ok(()) => {
                tracing::info!(queue = %queue, id = %row.row_id, "discarded an expired message");
                Outcome::Expired
            }
            Err(e) => Outcome::Infrastructure(e),
        };
    }
    let row_id = row.row_id.clone();
    let incoming = match Incoming::decode(row) {
        Ok(incoming) => incoming,
        Err(e) => return fail(tx, Outcome::Failed(format!("message {row_id}: {e}"))).await,
    };
    let span = tracing::info_span!(
        "message",
        queue = %queue,
        id = %incoming.message_id,
        message_type = %incoming.type_name
    );
    let Some(registered) = shared.config.handlers.get(&incoming.type_name) else {
        let reason = format!(
            "message {} has type {:?}, which this endpoint has no handler for",
            incoming.message_id, incoming.type_name
        );
        return fail(tx, Outcome::Failed(reason)).await;
    };
    let mut ctx = HandlerContext::new(
        shared.config.identity.clone(),
        shared.config.routes.clone(),
        incoming.headers.clone(),
        incoming.causation(),
    );
    for handler in &registered.handlers {
        let invoked = AssertUnwindSafe(handler.invoke(&incoming.body, &mut ctx))
            .catch_unwind()
            .instrument(span.clone())
            .await;
        match invoked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let reason = format!(
                    "message {} ({}): {e}",
                    incoming.message_id, incoming.type_name
                );
                return fail(tx, Outcome::Failed(reason)).await;
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic with no message".into());
                let reason = format!(
                    "message {} ({}): the handler panicked: {what}",
                    incoming.message_id, incoming.type_name
                );
                return fail(tx, Outcome::Panicked(reason)).await;
            }
        }
    }
    match tx.commit(ctx.into_outgoing()).await {
        Ok(()) => Outcome::Handled,
        Err(e) => Outcome::Infrastructure(e),
    }
}

async fn fail(tx: Box<dyn crate::backend::ReceiveTransaction>, outcome: Outcome) -> Outcome {
    match tx.rollback().await {
        Ok(()) => outcome,
        Err(e) => Outcome::Infrastructure(e),
    }
}
