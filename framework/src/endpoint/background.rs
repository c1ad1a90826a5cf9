//! Running a bus from any Rust service: [`Endpoint::start_in_background`] gives the bus an actix
//! `System` on a thread of its own, so a `#[tokio::main]` application (an axum server, a worker)
//! sends and publishes from its own tasks; [`Bus::stop_on_signal`] stops it gracefully on SIGTERM
//! or Ctrl-C.

use std::sync::Mutex;

use crate::endpoint::bus::{Bus, Endpoint};
use crate::error::{NimbusError, Result};

/// A bus whose actors run on an actix `System` of their own (see
/// [`Endpoint::start_in_background`]). It dereferences to [`Bus`]: `send`, `publish`, `request`
/// and the rest are called from any tokio task. [`BackgroundBus::stop`] stops the bus, then its
/// `System` and thread.
#[derive(Debug)]
pub struct BackgroundBus {
    bus: Bus,
    system: Mutex<Option<(actix::System, std::thread::JoinHandle<()>)>>,
}

impl std::ops::Deref for BackgroundBus {
    type Target = Bus;

    fn deref(&self) -> &Bus {
        &self.bus
    }
}

impl BackgroundBus {
    /// The bus, to clone into tasks.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// Stops the bus (handlers in flight finish), then its actix `System` and thread.
    pub async fn stop(&self) -> Result<()> {
        self.bus.stop().await?;
        let taken = self.system.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((system, thread)) = taken {
            system.stop();
            // The thread ends as soon as its System does; wait for it off the async thread.
            let joined = tokio::task::spawn_blocking(move || thread.join()).await;
            if !matches!(joined, Ok(Ok(()))) {
                return Err(NimbusError::NotRunning(
                    "the bus's actix thread ended with a panic".into(),
                ));
            }
        }
        Ok(())
    }
}

impl Endpoint {
    /// Starts the endpoint on an actix `System` that runs on a thread of its own, for services
    /// that are not actix applications (`#[tokio::main]`, axum, a plain worker). Call it from an
    /// async context of any runtime; `send`, `publish` and `request` on the returned bus work
    /// from any task.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
    /// # struct PlaceOrder { id: u32 }
    /// # async fn demo() -> nimbus::Result<()> {
    /// let bus = nimbus::Bus::builder()
    ///     .names("Web", "web-1")
    ///     .route::<PlaceOrder>("Sales")
    ///     .build()?
    ///     .start_in_background()
    ///     .await?;
    /// bus.send(PlaceOrder { id: 7 }).await?;
    /// bus.stop().await
    /// # }
    /// ```
    pub async fn start_in_background(self) -> Result<BackgroundBus> {
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("nimbus-bus".into())
            .spawn(move || {
                let system = actix::System::new();
                let handle = actix::System::current();
                system.block_on(async move {
                    let started = self.start().await;
                    // If nobody waits any more, there is nobody to give the bus to.
                    let _ = started_tx.send(started.map(|bus| (bus, handle)));
                });
                // Keep the actors running until BackgroundBus::stop stops the System.
                let _ = system.run();
            })
            .map_err(|e| {
                NimbusError::NotRunning(format!("could not start the bus's actix thread: {e}"))
            })?;
        let (bus, system) = started_rx.await.map_err(|_| {
            NimbusError::NotRunning("the bus's actix thread ended before the bus started".into())
        })??;
        Ok(BackgroundBus {
            bus,
            system: Mutex::new(Some((system, thread))),
        })
    }
}

impl Bus {
    /// Waits for SIGTERM or Ctrl-C (SIGINT), then stops the bus gracefully: receivers stop
    /// taking messages, handlers in flight finish and commit, timer actors stop.
    ///
    /// It listens from the moment it is called, not from the first poll of the future it
    /// returns: a signal that arrives in between (while the application prints "ready" or
    /// registers with a load balancer) still stops the bus gracefully instead of killing the
    /// process. Call it inside the runtime the bus runs on.
    ///
    /// In a web service, stop the HTTP server first and the bus after it (see
    /// [`stop_signal`](crate::stop_signal)): stopped first, the bus would fail the requests
    /// still in flight that send through it.
    ///
    /// ```no_run
    /// # async fn demo(bus: nimbus::Bus) -> nimbus::Result<()> {
    /// let stopped = bus.stop_on_signal(); // SIGTERM from here on stops the bus gracefully
    /// println!("ready");
    /// stopped.await?; // returns once stopped
    /// # Ok(()) }
    /// ```
    pub fn stop_on_signal(&self) -> impl std::future::Future<Output = Result<()>> + '_ {
        let signals = StopSignals::listen();
        async move {
            signals?.next().await;
            tracing::info!("stop signal received; stopping the bus");
            self.stop().await
        }
    }
}

/// Waits for SIGTERM or Ctrl-C (SIGINT; Ctrl-C on Windows), listening from the moment it is
/// called, without stopping anything: for a service that must stop other work first, such as
/// an HTTP server that drains its requests before the bus stops (`Bus::stop_on_signal` stops
/// the bus at once). Call it inside a tokio runtime. Fails only when the process cannot listen
/// for signals.
///
/// ```no_run
/// # async fn demo(bus: nimbus::Bus, listener: tokio::net::TcpListener, app: axum::Router) -> Result<(), Box<dyn std::error::Error>> {
/// let signal = nimbus::stop_signal(); // listening from here on
/// axum::serve(listener, app)
///     .with_graceful_shutdown(async move { let _ = signal.await; })
///     .await?;                        // every request in flight answered
/// bus.stop().await?;                  // then the bus: handlers in flight finish
/// # Ok(()) }
/// ```
pub fn stop_signal() -> impl std::future::Future<Output = Result<()>> {
    let signals = StopSignals::listen();
    async move {
        signals?.next().await;
        tracing::info!("stop signal received");
        Ok(())
    }
}

/// The process's stop signals, listened for from the moment [`StopSignals::listen`] returns.
#[cfg(unix)]
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl StopSignals {
    fn listen() -> Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|e| {
                NimbusError::NotRunning(format!("cannot listen for stop signals: {e}"))
            })
        };
        Ok(StopSignals {
            term: listen(SignalKind::terminate())?,
            int: listen(SignalKind::interrupt())?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// Ctrl-C, listened for from the moment [`StopSignals::listen`] returns.
#[cfg(windows)]
struct StopSignals {
    ctrl_c: tokio::signal::windows::CtrlC,
}

#[cfg(windows)]
impl StopSignals {
    fn listen() -> Result<Self> {
        let ctrl_c = tokio::signal::windows::ctrl_c()
            .map_err(|e| NimbusError::NotRunning(format!("cannot listen for Ctrl-C: {e}")))?;
        Ok(StopSignals { ctrl_c })
    }

    async fn next(&mut self) {
        self.ctrl_c.recv().await;
    }
}
