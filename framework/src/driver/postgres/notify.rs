//! Wake-ups across processes on PostgreSQL: one connection per database per process (every bus
//! of the process on the same URL shares it, see [`start`]) LISTENs on the `nimbus` channel and announces the queues this process wrote to with `pg_notify`, coalesced — every
//! queue written while the previous announcement was on the wire goes out in the next single
//! statement, so a burst costs one round trip, not one per message. Announcing runs after the
//! writes committed and outside them: a send never waits for it, and never takes PostgreSQL's
//! commit-time NOTIFY lock. A lost notification (the connection dropped, a restart) costs the
//! receivers their peek delay, nothing more.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

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
    /// How long connecting and each statement may take: a frozen connection is dropped and
    /// opened again, instead of holding every later announcement.
    pub deadlines: crate::driver::Deadlines,
}

/// Whoever hears what the shared connection hears: every bus that joined it.
type Hearers = Arc<Mutex<Vec<mpsc::UnboundedSender<String>>>>;

/// A listening connection of the process, while a bus uses it.
struct Listener {
    /// Held strongly only by the buses: the connection closes when the last one is gone.
    announce: mpsc::WeakUnboundedSender<Announcement>,
    hearers: Hearers,
}

/// The process's listening connections, by database (see `budget::key_of`) and statement.
static LISTENERS: Mutex<Vec<(String, Listener)>> = Mutex::new(Vec::new());

/// Joins the process's listening connection to the database `key` names, starting it in the
/// background on the shared runtime if none runs: announcing and hearing go through it, and it
/// closes when the last bus using it drops its channel.
pub(crate) fn start(
    key: &str,
    config: tokio_postgres::Config,
    connector: MakeRustlsConnect,
    statements: Statements,
) -> WakeChannel {
    let (heard_tx, heard) = mpsc::unbounded_channel();
    let key = format!("{key}\n{}", statements.listen);
    let mut listeners = LISTENERS.lock().unwrap_or_else(|p| p.into_inner());
    listeners.retain(|(_, listener)| listener.announce.strong_count() > 0);
    let running = listeners
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, l)| {
            l.announce
                .upgrade()
                .map(|announce| (announce, l.hearers.clone()))
        });
    if let Some((announce, hearers)) = running {
        hearers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(heard_tx);
        return WakeChannel { announce, heard };
    }
    let (announce, outgoing) = mpsc::unbounded_channel();
    let hearers: Hearers = Arc::new(Mutex::new(vec![heard_tx]));
    let listening = run(config, connector, statements, outgoing, hearers.clone());
    match crate::driver::shared_runtime::handle() {
        Ok(shared) => drop(shared.spawn(listening)),
        // Without the shared thread, on the bus's runtime: it lives as long as that bus.
        Err(e) => {
            tracing::debug!(error = %e, "listening for wake-ups on the bus's own thread");
            drop(tokio::spawn(listening));
        }
    }
    listeners.push((
        key,
        Listener {
            announce: announce.downgrade(),
            hearers,
        },
    ));
    WakeChannel { announce, heard }
}

/// Passes `payload` to every bus still listening; `false` when none is left.
fn tell(hearers: &Hearers, payload: &str) -> bool {
    let mut hearers = hearers.lock().unwrap_or_else(|p| p.into_inner());
    hearers.retain(|hearer| hearer.send(payload.to_string()).is_ok());
    !hearers.is_empty()
}

async fn run(
    config: tokio_postgres::Config,
    connector: MakeRustlsConnect,
    statements: Statements,
    mut outgoing: mpsc::UnboundedReceiver<Announcement>,
    heard: Hearers,
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
                let wait = crate::driver::background_retry_wait(failures);
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
    heard: &Hearers,
) -> Ended {
    let deadlines = statements.deadlines;
    let (client, mut connection) =
        match tokio::time::timeout(deadlines.connect, config.connect(connector)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Ended::Failed(crate::error::error_chain(&e)),
            Err(_) => {
                return Ended::Failed(format!("connecting took over {:?}", deadlines.connect))
            }
        };
    // Notifications arrive through the connection, which must be polled to make progress.
    let heard_by_driver = heard.clone();
    let mut driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == CHANNEL => {
                    if !tell(&heard_by_driver, n.payload()) {
                        return "the transport is gone".to_string();
                    }
                }
                Ok(_) => {}
                Err(e) => return crate::error::error_chain(&e),
            }
        }
        "the server closed the connection".to_string()
    });
    match tokio::time::timeout(
        deadlines.statement,
        client.batch_execute(&statements.listen),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            driver.abort();
            return Ended::Failed(crate::error::error_chain(&e));
        }
        Err(_) => {
            driver.abort();
            return Ended::Failed(format!("LISTEN took over {:?}", deadlines.statement));
        }
    }
    // Prepared once for the connection's life: a statement given as text is parsed and
    // described in a round trip of its own every time it runs, which doubled what each
    // announcement cost the server and this process when sends come one at a time.
    let announce = match tokio::time::timeout(
        deadlines.statement,
        client.prepare(statements.announce.as_str()),
    )
    .await
    {
        Ok(Ok(statement)) => statement,
        Ok(Err(e)) => {
            driver.abort();
            return Ended::Failed(crate::error::error_chain(&e));
        }
        Err(_) => {
            driver.abort();
            return Ended::Failed(format!(
                "preparing the announcement took over {:?}",
                deadlines.statement
            ));
        }
    };
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
                    let announced = tokio::time::timeout(
                        deadlines.statement,
                        client.execute(&announce, &[&payloads]),
                    )
                    .await;
                    let failed = match announced {
                        Ok(Ok(_)) => None,
                        Ok(Err(e)) => Some(crate::error::error_chain(&e)),
                        Err(_) => Some(format!(
                            "announcing took over {:?}",
                            deadlines.statement
                        )),
                    };
                    if let Some(reason) = failed {
                        driver.abort();
                        return Ended::Failed(reason);
                    }
                }
                for done in flushes {
                    let _ = done.send(());
                }
            }
        }
    }
}
