//! TLS to PostgreSQL (`sslmode`, `sslrootcert`) through the library's public API, against real
//! servers: the local PostgreSQL (`NIMBUS_POSTGRES`, default 127.0.0.1:5432, with `ssl = on`) and,
//! for certificates the test makes itself, a TLS-terminating proxy in front of it
//! ([`nimbus_conformance::tls_proxy`]). An unreachable server fails these tests; they never skip.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nimbus::admin::Database;
use nimbus::{Handler, HandlerContext, HandlerError, NimbusError, StorageLayout};
use nimbus_conformance::db::postgres_url;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::tls_proxy::{TlsOffer, TlsProxy};
use nimbus_conformance::{Kind, Setup, TestDatabase};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server of `NIMBUS_POSTGRES`, piece by piece.
struct Server {
    host: String,
    port: u16,
    /// `user[:password]`, as in a URL.
    login: String,
    database: String,
}

fn server() -> Server {
    let config: tokio_postgres::Config = postgres_url().parse().expect("NIMBUS_POSTGRES");
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let password = config
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    Server {
        host,
        port: config.get_ports().first().copied().unwrap_or(5432),
        login: format!("{}{password}", config.get_user().unwrap_or("postgres")),
        database: config.get_dbname().unwrap_or("postgres").to_string(),
    }
}

impl Server {
    /// A URL for `host:port` with this server's login and database, and `query` added.
    fn url(&self, host: &str, port: u16, query: &str) -> String {
        let separator = if query.is_empty() { "" } else { "&" };
        format!(
            "postgres://{}@{host}:{port}/{}?connect_timeout=5{separator}{query}",
            self.login, self.database
        )
    }

    /// A URL for the server itself.
    fn direct(&self, query: &str) -> String {
        self.url(&self.host, self.port, query)
    }

    /// A URL for `proxy` under the host name `host` (the name its certificate is checked
    /// against), reaching it by address with `hostaddr`.
    fn through(&self, proxy: &TlsProxy, host: &str, query: &str) -> String {
        let hostaddr = format!("hostaddr={}", proxy.addr.ip());
        let query = if query.is_empty() {
            hostaddr
        } else {
            format!("{hostaddr}&{query}")
        };
        self.url(host, proxy.addr.port(), &query)
    }

    fn upstream(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// Whether the session of the connection `db` hands out is encrypted, as the server sees it.
async fn encrypted(db: &Database) -> bool {
    let sql = "SELECT count(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl";
    let plain = "SELECT count(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND NOT ssl";
    let yes = db.query_scalar(sql, &[]).await.expect("query pg_stat_ssl");
    let no = db
        .query_scalar(plain, &[])
        .await
        .expect("query pg_stat_ssl");
    assert_eq!(yes + no, 1, "pg_stat_ssl has one row for the session");
    yes == 1
}

/// Connects through the public API, or fails the test naming `url`.
async fn connect(url: &str) -> Database {
    Database::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect with {url}: {e}"))
}

/// The error of a connection that must fail at connecting, as text.
async fn refused(url: &str) -> String {
    match Database::connect(url).await {
        Ok(_) => panic!("{url} must not connect"),
        Err(e @ NimbusError::Connect { .. }) => {
            let text = e.to_string();
            eprintln!("{url}\n  -> {text}");
            assert!(text.contains("Fix:"), "{text}");
            text
        }
        Err(other) => panic!("{url}: expected a connect error, got {other}"),
    }
}

/// The certificate file the server presents (Debian's snakeoil, unless configured otherwise),
/// asked of the server itself.
async fn server_certificate_file() -> String {
    let (client, conn) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL is reachable (these tests never skip it)");
    actix_rt::spawn(async move {
        let _ = conn.await;
    });
    let row = client
        .query_one(
            "SELECT current_setting('ssl'), current_setting('ssl_cert_file')",
            &[],
        )
        .await
        .expect("read the server's TLS settings");
    let (ssl, file): (String, String) = (row.get(0), row.get(1));
    assert_eq!(
        ssl, "on",
        "these tests need a PostgreSQL server with ssl = on"
    );
    file
}

// ---------------------------------------------------------------------------------------------
// (a) The local server and its own (self-signed) certificate.

#[actix_rt::test]
async fn require_encrypts_the_session() {
    let s = server();
    let db = connect(&s.direct("sslmode=require")).await;
    assert!(encrypted(&db).await, "sslmode=require gives a TLS session");
}

#[actix_rt::test]
async fn disable_connects_in_plaintext() {
    let s = server();
    let db = connect(&s.direct("sslmode=disable")).await;
    assert!(
        !encrypted(&db).await,
        "sslmode=disable gives a plaintext session"
    );
}

#[actix_rt::test]
async fn prefer_and_the_default_use_tls_when_the_server_offers_it() {
    let s = server();
    for query in ["sslmode=prefer", ""] {
        let db = connect(&s.direct(query)).await;
        assert!(encrypted(&db).await, "{query:?}: TLS when offered");
    }
}

#[actix_rt::test]
async fn verify_full_checks_the_servers_host_name_and_verify_ca_does_not() {
    let s = server();
    let cert = server_certificate_file().await;
    // The self-signed certificate is its own root; it names the machine, not 127.0.0.1.
    let error = refused(&s.url(
        "127.0.0.1",
        s.port,
        &format!("sslmode=verify-full&sslrootcert={cert}"),
    ))
    .await;
    assert!(
        error.contains("not valid for the host name \"127.0.0.1\"")
            && error.contains("sslmode=verify-ca"),
        "the error names the host name check and the way out: {error}"
    );
    let db = connect(&s.url(
        "127.0.0.1",
        s.port,
        &format!("sslmode=verify-ca&sslrootcert={cert}"),
    ))
    .await;
    assert!(encrypted(&db).await, "verify-ca accepts the trusted chain");
}

#[actix_rt::test]
async fn tls_settings_that_cannot_work_are_configuration_errors() {
    let s = server();
    for (query, expected) in [
        (
            "sslmode=verify_full",
            "disable, prefer, require, verify-ca, verify-full",
        ),
        (
            "sslmode=verify-full&sslrootcert=/nonexistent/nimbus-ca.pem",
            "/nonexistent/nimbus-ca.pem",
        ),
        ("sslmode=require&sslrootcert=system", "verify-full"),
    ] {
        match Database::connect(&s.direct(query)).await {
            Err(e @ NimbusError::Config { .. }) => {
                let text = e.to_string();
                assert!(text.contains(expected), "{query}: {text}");
            }
            Err(other) => panic!("{query}: expected a configuration error, got {other}"),
            Ok(_) => panic!("{query}: must not connect"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Certificates the test makes, presented by the TLS proxy.

/// A CA the test made: its certificate as a PEM file (removed on drop), and its signer.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem_file: PathBuf,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key"))
            .expect("self-signed CA");
        let pem_file = std::env::temp_dir().join(format!(
            "nimbus-tls-test-ca-{}.pem",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&pem_file, issuer.pem()).expect("write the CA's PEM file");
        TestCa { issuer, pem_file }
    }

    /// A server certificate for `names` (DNS names), signed by this CA, as the proxy's offer.
    fn server_offer(&self, names: &[&str]) -> TlsOffer {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("server params");
        params
            .distinguished_name
            .push(DnType::CommonName, "nimbus test server");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("server key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        TlsOffer::with_certificate(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// `sslrootcert=` this CA's file.
    fn root(&self) -> String {
        format!("sslrootcert={}", self.pem_file.display())
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pem_file);
    }
}

/// A proxy presenting a certificate for `localhost` issued by `ca`.
async fn proxy_for_localhost(ca: &TestCa) -> TlsProxy {
    TlsProxy::start(server().upstream(), ca.server_offer(&["localhost"])).await
}

#[actix_rt::test]
async fn verify_full_with_the_test_ca_and_the_right_host_name_connects() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = proxy_for_localhost(&ca).await;
    let db = connect(&s.through(
        &proxy,
        "localhost",
        &format!("sslmode=verify-full&{}", ca.root()),
    ))
    .await;
    assert_eq!(db.query_scalar("SELECT 1", &[]).await.expect("a query"), 1);
    assert!(proxy.encrypted_sessions() >= 1, "the session was encrypted");
    assert_eq!(proxy.plaintext_sessions(), 0);
}

#[actix_rt::test]
async fn a_certificate_from_another_ca_fails_every_verifying_mode() {
    let (s, ca, other) = (
        server(),
        TestCa::new("nimbus test CA"),
        TestCa::new("some other CA"),
    );
    let proxy = proxy_for_localhost(&ca).await;
    // require with a root certificate checks the chain, as libpq does.
    for mode in ["verify-full", "verify-ca", "require"] {
        let error = refused(&s.through(
            &proxy,
            "localhost",
            &format!("sslmode={mode}&{}", other.root()),
        ))
        .await;
        assert!(
            error.contains("not issued by a CA in sslrootcert")
                && error.contains(&other.pem_file.display().to_string())
                && error.contains("sslrootcert=/path/to/ca.pem"),
            "{mode}: the error names the chain check and the roots used: {error}"
        );
    }
    assert_eq!(proxy.encrypted_sessions(), 0, "no handshake completed");
    assert_eq!(
        proxy.plaintext_sessions(),
        0,
        "nothing went on in plaintext"
    );
}

#[actix_rt::test]
async fn verify_ca_accepts_a_host_name_the_certificate_lacks_and_verify_full_does_not() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = proxy_for_localhost(&ca).await;
    // 127.0.0.1 is not among the certificate's names (only DNS:localhost is).
    let db = connect(&s.through(
        &proxy,
        "127.0.0.1",
        &format!("sslmode=verify-ca&{}", ca.root()),
    ))
    .await;
    assert_eq!(db.query_scalar("SELECT 1", &[]).await.expect("a query"), 1);
    assert!(proxy.encrypted_sessions() >= 1);
    let error = refused(&s.through(
        &proxy,
        "127.0.0.1",
        &format!("sslmode=verify-full&{}", ca.root()),
    ))
    .await;
    assert!(
        error.contains("not valid for the host name \"127.0.0.1\"")
            && error.contains("the chain itself is trusted"),
        "{error}"
    );
}

/// As libpq: without `sslrootcert` the verifying modes check against `~/.postgresql/root.crt`
/// (or `PGSSLROOTCERT`), never against every CA the platform trusts, which would let a
/// certificate from any public CA for any name pass `verify-ca`.
#[actix_rt::test]
async fn without_a_root_the_verifying_modes_use_libpqs_root_file_not_the_platforms() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = proxy_for_localhost(&ca).await;
    for mode in ["verify-full", "verify-ca"] {
        let url = s.through(&proxy, "localhost", &format!("sslmode={mode}"));
        // Without that file the settings cannot work (a configuration error before any
        // connection); with it, the test CA is not in it (a refused connection).
        let error = match Database::connect(&url).await {
            Err(e @ NimbusError::Config { .. }) => e.to_string(),
            Err(_) | Ok(_) => refused(&url).await,
        };
        assert!(
            error.contains("root certificate file")
                && !error.contains("platform's trust store")
                && error.contains("sslrootcert=/path/to/ca.pem"),
            "{mode}: {error}"
        );
    }
    assert_eq!(proxy.encrypted_sessions(), 0);
}

#[actix_rt::test]
async fn require_without_a_root_accepts_any_certificate_but_encrypts() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = proxy_for_localhost(&ca).await;
    // A name the certificate lacks, and no root: require checks neither.
    let db = connect(&s.through(&proxy, "127.0.0.1", "sslmode=require")).await;
    assert_eq!(db.query_scalar("SELECT 1", &[]).await.expect("a query"), 1);
    assert!(proxy.encrypted_sessions() >= 1);
    assert_eq!(proxy.plaintext_sessions(), 0);
}

#[actix_rt::test]
async fn a_server_without_tls_fails_require_and_verify_modes_clearly() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = TlsProxy::start(s.upstream(), TlsOffer::Refuse).await;
    for query in [
        "sslmode=require".to_string(),
        format!("sslmode=verify-ca&{}", ca.root()),
        format!("sslmode=verify-full&{}", ca.root()),
    ] {
        let error = refused(&s.through(&proxy, "localhost", &query)).await;
        assert!(
            error.contains("does not accept TLS")
                && error.contains("sslmode=prefer")
                && error.contains("sslmode=disable"),
            "{query}: {error}"
        );
    }
    assert_eq!(
        proxy.plaintext_sessions(),
        0,
        "never fell back to plaintext"
    );
}

#[actix_rt::test]
async fn prefer_falls_back_to_plaintext_when_the_server_refuses_tls() {
    let s = server();
    let proxy = TlsProxy::start(s.upstream(), TlsOffer::Refuse).await;
    for query in ["sslmode=prefer", ""] {
        let db = connect(&s.through(&proxy, "localhost", query)).await;
        assert_eq!(db.query_scalar("SELECT 1", &[]).await.expect("a query"), 1);
    }
    assert!(proxy.plaintext_sessions() >= 2);
    assert_eq!(proxy.encrypted_sessions(), 0);
}

struct Count(Arc<AtomicUsize>);

#[nimbus::handler]
impl Handler<Numbered> for Count {
    async fn handle(&self, _m: Numbered, _c: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[actix_rt::test]
async fn a_bus_sends_and_receives_over_verified_tls() {
    let (s, ca) = (server(), TestCa::new("nimbus test CA"));
    let proxy = proxy_for_localhost(&ca).await;
    let db = TestDatabase::new(Setup {
        kind: Kind::Postgres,
        layout: StorageLayout::TablePerQueue,
    })
    .await;
    let url = s.through(
        &proxy,
        "localhost",
        &format!("sslmode=verify-full&{}", ca.root()),
    );
    let handled = Arc::new(AtomicUsize::new(0));
    let bus = db
        .builder("Tls", "tls-1")
        .database_url(&url)
        .route::<Numbered>("Tls")
        .handler(Count(handled.clone()))
        .build()
        .expect("build the bus")
        .start()
        .await
        .unwrap_or_else(|e| panic!("start over verified TLS: {e}"));
    for n in 0..3 {
        bus.send(Numbered { n }).await.expect("send over TLS");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while handled.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bus.stop().await.expect("stop");
    assert_eq!(handled.load(Ordering::SeqCst), 3, "every message handled");
    assert!(proxy.encrypted_sessions() >= 1);
    assert_eq!(
        proxy.plaintext_sessions(),
        0,
        "every session of the bus was encrypted"
    );
}
