//! Wake-ups across processes on PostgreSQL: one connection per bus LISTENs on the `nimbus`
//! channel and announces the queues this process wrote to with `pg_notify`, coalesced — every
//! queue written while the previous announcement was on the wire goes out in the next single
//! statement, so a burst costs one round trip, not one per message. Announcing runs after the
//! writes committed and outside them: a send never waits for it, and never takes PostgreSQL's
//! commit-time NOTIFY lock. A lost notification (the connection dropped, a restart) costs the
//! receivers their peek delay, nothing more.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::driver::{Announcement, WakeChannel};

/// The channel every Nimbus bus listens on (in `wake_listen.sql`); the payload names the queue.
const CHANNEL: &str = "nimbus";

/// The dialect's statements for the channel.
#[derive(Clone)]
pub(crate) struct Statements {
    /// `wake_listen.sql`.
    pub listen: String,
    /// `wake_announce.sql`: one parameter, the payloads (`text[]`).
    pub announce: String,
}

/// The longest wait before trying to listen again after the connection failed.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Starts listening and announcing in the background; both end when the channel's ends are
/// dropped (the transport is gone).
pub(crate) fn start(
    config: tokio_postgres::Config,
    connector: MakeRustlsConnect,
    statements: Statements,
) -> WakeChannel {
    let (announce, outgoing) = mpsc::unbounded_channel();
    let (heard_tx, heard) = mpsc::unbounded_channel();
    tokio::spawn(run(config, connector, statements, outgoing, heard_tx));
    WakeChannel { announce, heard }
}

async fn run(
    config: tokio_postgres::Config,
    connector: MakeRustlsConnect,
    statements: Statements,
    mut outgoing: mpsc::UnboundedReceiver<Announcement>,
    heard: mpsc::UnboundedSender<String>,
) {
    let mut failures: u32 = 0;
    loop {
        match session(
            &config,
            connector.clone(),
            &statements,
            &mut outgoing,
            &heard,
        )
        .await
        {
            Ended::TransportGone => return,
            Ended::Failed(reason) => {
                failures = failures.saturating_add(1);
                let wait = Duration::from_millis(250)
                    .saturating_mul(2u32.saturating_pow(failures.min(8)))
                    .min(MAX_RETRY);
                // Reported on the 1st, 2nd, 4th… failure in a row, as the other background jobs.
                if failures.is_power_of_two() {
                    tracing::warn!(
                        %reason, failures, retry_in = ?wait,
                        "wake-ups from other processes are paused (LISTEN connection failed); \
                         receivers fall back to their peek delay"
                    );
                }
                tokio::time::sleep(wait).await;
            }
        }
    }
}

enum Ended {
    /// Nobody announces or listens any more.
    TransportGone,
    /// The connection failed; try again.
    Failed(String),
}

/// One connection's life: LISTEN, then announce and hear until it fails.
async fn session(
    config: &tokio_postgres::Config,
    connector: MakeRustlsConnect,
    statements: &Statements,
    outgoing: &mut mpsc::UnboundedReceiver<Announcement>,
    heard: &mpsc::UnboundedSender<String>,
) -> Ended {
    let (client, mut connection) = match config.connect(connector).await {
        Ok(pair) => pair,
        Err(e) => return Ended::Failed(crate::error::error_chain(&e)),
    };
    // Notifications arrive through the connection, which must be polled to make progress.
    let heard_by_driver = heard.clone();
    let mut driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == CHANNEL => {
                    if heard_by_driver.send(n.payload().to_string()).is_err() {
                        return "the transport is gone".to_string();
                    }
                }
                Ok(_) => {}
                Err(e) => return crate::error::error_chain(&e),
            }
        }
        "the server closed the connection".to_string()
    });
    if let Err(e) = client.batch_execute(&statements.listen).await {
        driver.abort();
        return Ended::Failed(crate::error::error_chain(&e));
    }
    loop {
        tokio::select! {
            ended = &mut driver => {
                return Ended::Failed(ended.unwrap_or_else(|e| e.to_string()));
            }
            payload = outgoing.recv() => {
                let Some(first) = payload else {
                    driver.abort();
                    return Ended::TransportGone;
                };
                // Everything announced meanwhile goes in the same statement, once per queue.
                let mut batch = BTreeSet::new();
                let mut flushes = Vec::new();
                let mut next = Some(first);
                while let Some(announcement) = next {
                    match announcement {
                        Announcement::Queue(payload) => {
                            batch.insert(payload);
                        }
                        Announcement::Flush(done) => flushes.push(done),
                    }
                    next = outgoing.try_recv().ok();
                }
                if !batch.is_empty() {
                    let payloads: Vec<String> = batch.into_iter().collect();
                    if let Err(e) = client
                        .execute(statements.announce.as_str(), &[&payloads])
                        .await
                    {
                        driver.abort();
                        return Ended::Failed(crate::error::error_chain(&e));
                    }
                }
                for done in flushes {
                    let _ = done.send(());
                }
            }
        }
    }
}
