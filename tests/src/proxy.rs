//! A loopback TCP proxy between an endpoint and its database server, which a test can cut (every
//! connection dropped, new ones refused), freeze (connections stay open but no byte passes, and
//! new ones are accepted but never answered: a failover behind a virtual IP, a stuck pooler, a
//! lost NAT entry) and restore: database faults without touching the shared server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A running proxy; dropping it stops it.
pub struct Proxy {
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    listener: AbortHandle,
}

/// Waits while the proxy is frozen.
async fn while_frozen(frozen: &AtomicBool) {
    while frozen.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Copies `from` to `to`, holding every chunk while the proxy is frozen.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        while_frozen(&frozen).await;
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while_frozen(&frozen).await;
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let cut = Arc::new(AtomicBool::new(false));
        let frozen = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (cut2, frozen2, conns2) = (cut.clone(), frozen.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if cut2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let (upstream, frozen) = (upstream.clone(), frozen2.clone());
                let task = tokio::spawn(async move {
                    // A connection made while frozen is accepted and then gets no answer.
                    while_frozen(&frozen).await;
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        pump(client_read, server_write, frozen.clone()),
                        pump(server_read, client_write, frozen),
                    );
                });
                conns2.lock().unwrap().push(task.abort_handle());
            }
        });
        Proxy {
            addr,
            cut,
            frozen,
            connections,
            listener: accept.abort_handle(),
        }
    }

    /// The database is gone: open connections are dropped, new ones closed at once.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    /// The database stops answering without closing anything.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    /// The database is back (after a cut or a freeze). Connections that were frozen are
    /// closed, as a failover leaves them: nothing they held reaches the server late.
    pub fn restore(&self) {
        if self.frozen.load(Ordering::SeqCst) {
            for connection in self.connections.lock().unwrap().drain(..) {
                connection.abort();
            }
        }
        self.frozen.store(false, Ordering::SeqCst);
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.listener.abort();
    }
}
