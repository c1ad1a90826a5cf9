//! A loopback PostgreSQL proxy that terminates TLS with a certificate the test made, then pipes
//! plaintext to the real server: TLS tests with certificates, CAs and host names of our choosing,
//! without touching the shared server's configuration.
//!
//! It speaks just enough of PostgreSQL's protocol: a client that wants TLS opens with an 8-byte
//! `SSLRequest`; the proxy answers `S` and does the rustls server handshake ([`TlsOffer::Accept`])
//! or answers `N` as a server with `ssl = off` does ([`TlsOffer::Refuse`]), after which the client
//! goes on in plaintext or hangs up. A `GSSENCRequest` is always answered `N`. Anything else is a
//! plaintext startup message and is passed on as it is.
//!
//! It counts the sessions it carried encrypted and in plaintext, so a test can tell which one a
//! connection used (the server behind it only ever sees the proxy's plaintext).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use tokio_rustls::TlsAcceptor;

/// The request code of PostgreSQL's `SSLRequest`.
const SSL_REQUEST: i32 = 80_877_103;
/// The request code of PostgreSQL's `GSSENCRequest`.
const GSSENC_REQUEST: i32 = 80_877_104;

/// How the proxy answers a client's request for TLS.
#[derive(Clone)]
pub enum TlsOffer {
    /// Answers `S` and does the handshake with this server configuration.
    Accept(Arc<rustls::ServerConfig>),
    /// Answers `N`, as a server with `ssl = off` does.
    Refuse,
}

impl TlsOffer {
    /// Accepts TLS with `chain` (the server's certificate first, then any intermediates) and its
    /// private `key`, on the aws-lc-rs provider the library uses.
    pub fn with_certificate(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> TlsOffer {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("rustls supports its default protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the test's certificate and key match");
        TlsOffer::Accept(Arc::new(config))
    }
}

/// A running TLS proxy; dropping it stops it and every connection it carries.
pub struct TlsProxy {
    /// Where it listens (on loopback).
    pub addr: SocketAddr,
    encrypted: Arc<AtomicUsize>,
    plaintext: Arc<AtomicUsize>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    listener: AbortHandle,
}

/// Sessions carried so far, by kind.
#[derive(Clone)]
struct Counters {
    encrypted: Arc<AtomicUsize>,
    plaintext: Arc<AtomicUsize>,
}

impl TlsProxy {
    /// Listens on a free loopback port; forwards each session to `upstream` (`host:port` of a
    /// PostgreSQL server that accepts plaintext) after answering its TLS request per `offer`.
    pub async fn start(upstream: String, offer: TlsOffer) -> TlsProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind TLS proxy");
        let addr = listener.local_addr().expect("TLS proxy address");
        let counters = Counters {
            encrypted: Arc::default(),
            plaintext: Arc::default(),
        };
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (counters2, connections2) = (counters.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let task = tokio::spawn(serve(
                    client,
                    upstream.clone(),
                    offer.clone(),
                    counters2.clone(),
                ));
                connections2
                    .lock()
                    .expect("connections lock")
                    .push(task.abort_handle());
            }
        });
        TlsProxy {
            addr,
            encrypted: counters.encrypted,
            plaintext: counters.plaintext,
            connections,
            listener: accept.abort_handle(),
        }
    }

    /// Sessions whose TLS handshake with the proxy succeeded.
    pub fn encrypted_sessions(&self) -> usize {
        self.encrypted.load(Ordering::SeqCst)
    }

    /// Sessions that went on in plaintext (with or without a refused TLS request first).
    pub fn plaintext_sessions(&self) -> usize {
        self.plaintext.load(Ordering::SeqCst)
    }
}

/// One client: answers its TLS requests, then pipes the session to `upstream`.
async fn serve(mut client: TcpStream, upstream: String, offer: TlsOffer, counters: Counters) {
    loop {
        let mut first = [0u8; 8];
        if client.read_exact(&mut first).await.is_err() {
            // The client hung up, e.g. after an `N` under sslmode=require.
            return;
        }
        let length = i32::from_be_bytes([first[0], first[1], first[2], first[3]]);
        let code = i32::from_be_bytes([first[4], first[5], first[6], first[7]]);
        match (length, code, &offer) {
            (8, SSL_REQUEST, TlsOffer::Accept(config)) => {
                if client.write_all(b"S").await.is_err() {
                    return;
                }
                let Ok(mut tls) = TlsAcceptor::from(config.clone()).accept(client).await else {
                    // The client refused the certificate (or the handshake failed).
                    return;
                };
                counters.encrypted.fetch_add(1, Ordering::SeqCst);
                let Ok(mut server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                return;
            }
            (8, SSL_REQUEST | GSSENC_REQUEST, _) => {
                if client.write_all(b"N").await.is_err() {
                    return;
                }
                // The client goes on with another request, its startup message, or hangs up.
            }
            _ => {
                counters.plaintext.fetch_add(1, Ordering::SeqCst);
                let Ok(mut server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                if server.write_all(&first).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                return;
            }
        }
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.listener.abort();
        if let Ok(mut connections) = self.connections.lock() {
            for connection in connections.drain(..) {
                connection.abort();
            }
        }
    }
}
