//! TLS to PostgreSQL by rustls, with libpq's `sslmode` and `sslrootcert`.
//!
//! | `sslmode`     | TLS                          | what is checked                               |
//! |---------------|------------------------------|-----------------------------------------------|
//! | `disable`     | never                        | nothing                                       |
//! | `prefer`      | when the server offers it    | nothing (the chain, if `sslrootcert` is given) |
//! | `require`     | always                       | nothing (the chain, if `sslrootcert` is given) |
//! | `verify-ca`   | always                       | the chain, against the roots                  |
//! | `verify-full` | always                       | the chain, and the host name                  |
//!
//! The roots are, as in libpq, the PEM file `sslrootcert` names, else the file `PGSSLROOTCERT`
//! names, else `~/.postgresql/root.crt`: under `verify-ca` and `verify-full` that file must
//! exist (a missing one is an error that says so), and under `prefer` and `require` the chain is
//! checked against it when it exists. The platform's trust store (read by `rustls-native-certs`,
//! which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`) is used only when asked for with
//! `sslrootcert=system`, which, as in libpq, makes `verify-full` the default and the only mode
//! allowed with it: trusting every public CA is safe only when the host name is checked too.
//!
//! "Nothing checked" still means an encrypted session whose handshake signatures are verified
//! against the certificate the server presents: it keeps out passive eavesdroppers, not an active
//! man in the middle, who can present a certificate of their own.
//!
//! One difference from libpq: when the server offers TLS under `prefer` and the handshake fails,
//! libpq tries again in plaintext; here the connection fails with the reason, never silently
//! falling back to plaintext.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{NimbusError, Result};

/// The `sslmode` values understood, for messages.
const MODES: &str = "disable, prefer, require, verify-ca, verify-full";

/// How much TLS a connection needs, as libpq's `sslmode` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Plaintext only.
    Disable,
    /// TLS if the server offers it, else plaintext (libpq's default).
    Prefer,
    /// TLS or no connection; the certificate is not checked unless `sslrootcert` is given.
    Require,
    /// TLS, and the server's certificate chain must lead to a trusted root.
    VerifyCa,
    /// TLS, a trusted chain, and a certificate that names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's `allow` (plaintext first, TLS only if the server insists) is not offered:
            // it would try plaintext against servers that accept it.
            other => {
                return Err(NimbusError::config(
                    format!("sslmode={other:?} in the PostgreSQL URL is not understood"),
                    format!(
                    "use one of {MODES} (see \"TLS to PostgreSQL\" in docs/guide/connecting.md)"
                ),
                ))
            }
        })
    }

    /// The value as written in a URL.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The mode tokio-postgres negotiates with: it knows whether to ask for TLS, not what to
    /// check; the checks are the rustls verifier's.
    pub(crate) fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

/// Where the trusted root certificates come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RootCerts {
    /// A PEM file (`sslrootcert=/path/to/ca.pem`), one or more certificates.
    File(PathBuf),
    /// The platform's trust store (`sslrootcert=system`).
    Platform,
    /// libpq's default file when no `sslrootcert` is given (`PGSSLROOTCERT`, else
    /// `~/.postgresql/root.crt`), which need not exist.
    DefaultFile(PathBuf),
}

/// libpq's default root certificate file: `PGSSLROOTCERT`, else `~/.postgresql/root.crt`.
fn default_root_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PGSSLROOTCERT").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".postgresql").join("root.crt"))
}

/// What the server's certificate is checked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Nothing but the handshake signatures: encryption against eavesdroppers only.
    Nothing,
    /// The chain leads to a trusted root; any host name.
    Chain,
    /// The chain, and the host name.
    ChainAndName,
}

/// The TLS part of a PostgreSQL URL. Holds no secret (paths only), so its `Debug` is safe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    /// The `sslmode`.
    pub mode: SslMode,
    /// The `sslrootcert`, if given.
    pub root_certs: Option<RootCerts>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            mode: SslMode::Prefer,
            root_certs: None,
        }
    }
}

impl TlsSettings {
    /// The settings of a URL's `sslmode` and `sslrootcert` values (percent-decoded), with
    /// libpq's defaults for those missing.
    pub(crate) fn from_url_values(
        sslmode: Option<&str>,
        sslrootcert: Option<&str>,
    ) -> Result<Self> {
        Self::with_default_root(sslmode, sslrootcert, default_root_file())
    }

    /// [`TlsSettings::from_url_values`] with libpq's default root file given (`None`: none can
    /// be found, no home directory).
    fn with_default_root(
        sslmode: Option<&str>,
        sslrootcert: Option<&str>,
        default_root: Option<PathBuf>,
    ) -> Result<Self> {
        let given = match sslrootcert.map(str::trim) {
            None | Some("") => None,
            Some("system") => Some(RootCerts::Platform),
            Some(path) => Some(RootCerts::File(PathBuf::from(path))),
        };
        let mode = match sslmode.map(str::trim) {
            Some(value) => SslMode::parse(value)?,
            None if given == Some(RootCerts::Platform) => SslMode::VerifyFull,
            None => SslMode::Prefer,
        };
        let root_certs = match (given, mode) {
            (Some(given), _) => Some(given),
            (None, SslMode::Disable) => None,
            // The chain must be checked: against libpq's default file, which must exist.
            (None, SslMode::VerifyCa | SslMode::VerifyFull) => Some(RootCerts::DefaultFile(
                default_root.unwrap_or_else(|| PathBuf::from("~/.postgresql/root.crt")),
            )),
            // libpq checks the chain under prefer and require too when that file exists.
            (None, SslMode::Prefer | SslMode::Require) => default_root
                .filter(|path| path.is_file())
                .map(RootCerts::DefaultFile),
        };
        if root_certs == Some(RootCerts::Platform) && mode != SslMode::VerifyFull {
            return Err(NimbusError::config(
                format!(
                    "sslrootcert=system trusts every certificate the platform trusts, which is \
                     safe only when the host name is checked too, but sslmode is {}",
                    mode.name()
                ),
                "use sslmode=verify-full (the default with sslrootcert=system), or give the \
                 server's CA file as sslrootcert=/path/to/ca.pem",
            ));
        }
        Ok(TlsSettings { mode, root_certs })
    }

    fn check(&self) -> Check {
        match (self.mode, &self.root_certs) {
            (SslMode::Disable | SslMode::Prefer | SslMode::Require, None) => Check::Nothing,
            (SslMode::Disable, Some(_)) => Check::Nothing,
            // libpq: "if a root CA file exists, the client will verify the server certificate
            // as in verify-ca mode".
            (SslMode::Prefer | SslMode::Require, Some(_)) => Check::Chain,
            (SslMode::VerifyCa, _) => Check::Chain,
            (SslMode::VerifyFull, _) => Check::ChainAndName,
        }
    }

    /// The roots, described for messages.
    fn roots_described(&self) -> String {
        match &self.root_certs {
            Some(RootCerts::File(path)) => format!("sslrootcert {}", path.display()),
            Some(RootCerts::DefaultFile(path)) => {
                format!("root certificate file {}", path.display())
            }
            Some(RootCerts::Platform) | None => "the platform's trust store".into(),
        }
    }

    /// Builds the TLS connector: reads the roots (a bad `sslrootcert` fails here, naming the
    /// file) and picks the verifier for the mode. Uses the crate's crypto provider (ring, or
    /// aws-lc-rs with the `tls-aws-lc-rs` feature) explicitly, so no process-wide default
    /// provider is needed.
    pub(crate) fn connector(&self) -> Result<MakeRustlsConnect> {
        let provider = Arc::new(crypto_provider());
        let algorithms = provider.signature_verification_algorithms;
        let verifier: Arc<dyn ServerCertVerifier> = match self.check() {
            Check::Nothing => Arc::new(NoCertificateCheck { algorithms }),
            Check::Chain => Arc::new(ChainOnly {
                roots: Arc::new(self.roots()?),
                algorithms,
            }),
            Check::ChainAndName => WebPkiServerVerifier::builder_with_provider(
                Arc::new(self.roots()?),
                provider.clone(),
            )
            .build()
            .map_err(|e| {
                NimbusError::config(
                    format!(
                        "the root certificates of {} cannot be used: {e}",
                        self.roots_described()
                    ),
                    "give a PEM file of CA certificates as sslrootcert=/path/to/ca.pem",
                )
            })?,
        };
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| {
                NimbusError::config(
                    format!("the TLS library cannot be set up: {e}"),
                    "report this as a bug of nimbus, with the crate versions in Cargo.lock",
                )
            })?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        // What libpq 17 sends, and what a server taking direct TLS negotiation requires.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(MakeRustlsConnect::new(config))
    }

    fn roots(&self) -> Result<RootCertStore> {
        match &self.root_certs {
            Some(RootCerts::File(path)) => roots_from_file(path),
            Some(RootCerts::DefaultFile(path)) if !path.is_file() => Err(NimbusError::config(
                format!(
                    "root certificate file {} does not exist: sslmode={} checks the server's \
                     certificate against it (libpq's default when no sslrootcert is given)",
                    path.display(),
                    self.mode.name()
                ),
                format!(
                    "give the server's CA as sslrootcert=/path/to/ca.pem (or put it at {}), \
                     use the platform's trusted roots with sslrootcert=system and \
                     sslmode=verify-full, or use sslmode=require for an encrypted connection \
                     whose certificate is not checked",
                    path.display()
                ),
            )),
            Some(RootCerts::DefaultFile(path)) => roots_from_file(path),
            Some(RootCerts::Platform) | None => platform_roots(),
        }
    }
}

/// The certificates of a PEM file, as roots.
fn roots_from_file(path: &Path) -> Result<RootCertStore> {
    let fix = "give the path of a PEM file holding the CA certificate(s) that issued the \
               server's certificate (the bundle your provider publishes, e.g. RDS's \
               global-bundle.pem), readable by this process";
    let bytes = std::fs::read(path).map_err(|e| {
        NimbusError::config(
            format!("cannot read sslrootcert {}: {e}", path.display()),
            fix,
        )
    })?;
    let mut roots = RootCertStore::empty();
    for (index, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        let cert = cert.map_err(|e| {
            NimbusError::config(
                format!(
                    "sslrootcert {} is not a valid PEM file: {e}",
                    path.display()
                ),
                fix,
            )
        })?;
        roots.add(cert).map_err(|e| {
            NimbusError::config(
                format!(
                    "certificate {} of sslrootcert {} cannot be used as a root: {e}",
                    index + 1,
                    path.display()
                ),
                fix,
            )
        })?;
    }
    if roots.is_empty() {
        return Err(NimbusError::config(
            format!(
                "sslrootcert {} holds no certificate (no -----BEGIN CERTIFICATE----- block)",
                path.display()
            ),
            fix,
        ));
    }
    Ok(roots)
}

/// The platform's trusted roots.
fn platform_roots() -> Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _unusable) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
        return Err(NimbusError::config(
            format!(
                "sslmode=verify-ca/verify-full without sslrootcert needs the platform's trusted \
                 root certificates, and none were found{}",
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", errors.join("; "))
                }
            ),
            "install the system's CA bundle (the ca-certificates package), point SSL_CERT_FILE \
             at a PEM bundle, or give the server's CA as sslrootcert=/path/to/ca.pem",
        ));
    }
    Ok(roots)
}

/// `require` (and `prefer`) without a root certificate: any certificate is accepted, but the
/// handshake's signatures are still verified with the provider's algorithms against the key of
/// the certificate presented, so the session is really encrypted with whoever holds that key.
/// That protects against passive eavesdropping only: an active man in the middle presents a
/// certificate of their own. Use `verify-full` where that matters.
#[derive(Debug)]
struct NoCertificateCheck {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for NoCertificateCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca` (and `require` with a root certificate): the chain must lead to one of the roots
/// and be valid now; the host name is not looked at.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A connection that failed in TLS: what went wrong, in words, and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{problem}")]
pub(crate) struct TlsFailure {
    problem: String,
    /// What to change.
    pub(crate) fix: String,
    #[source]
    source: tokio_postgres::Error,
}

/// tokio-postgres's words when the server answers the TLS request with 'N'.
const NO_TLS: &str = "server does not support TLS";

/// The rustls error inside `error`'s causes (tokio-rustls wraps it in an `io::Error`, whose
/// `source` skips it).
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(r) = e.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(r) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(r);
        }
        cause = e.source();
    }
    None
}

/// Whether the server refused TLS (tokio-postgres gives it no error kind of its own).
fn refused_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.to_string().contains(NO_TLS) {
            return true;
        }
        cause = e.source();
    }
    false
}

impl TlsSettings {
    /// Explains a failed connection if TLS is why; otherwise gives the error back unchanged.
    /// `host` is the host name the URL names.
    pub(crate) fn diagnose(
        &self,
        error: tokio_postgres::Error,
        host: &str,
    ) -> std::result::Result<TlsFailure, tokio_postgres::Error> {
        let mode = self.mode.name();
        let (problem, fix) = if let Some(rustls) = rustls_error(&error) {
            self.explain(rustls, host)
        } else if refused_tls(&error) {
            (
                format!(
                    "the server does not accept TLS (it answered the TLS request with 'N': ssl \
                     is off on it, or on a pooler in front of it), and sslmode={mode} demands TLS"
                ),
                "turn ssl on in the server's postgresql.conf, or, on a network you trust, use \
                 sslmode=prefer (TLS when the server offers it) or sslmode=disable"
                    .to_string(),
            )
        } else {
            return Err(error);
        };
        Ok(TlsFailure {
            problem,
            fix,
            source: error,
        })
    }

    fn explain(&self, error: &rustls::Error, host: &str) -> (String, String) {
        let mode = self.mode.name();
        let roots = self.roots_described();
        let give_root = "give the CA certificate (or bundle) that issued the server's \
                         certificate as sslrootcert=/path/to/ca.pem";
        match error {
            rustls::Error::InvalidCertificate(cert) => match cert {
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => (
                    format!(
                        "the server's certificate is not valid for the host name {host:?} \
                         (sslmode={mode} checks the host name; the chain itself is trusted)"
                    ),
                    "connect with a host name the certificate names (the server's DNS name, \
                     not an IP address or an alias), or use sslmode=verify-ca to check only \
                     that a trusted CA issued it"
                        .into(),
                ),
                CertificateError::UnknownIssuer => (
                    format!(
                        "the server's certificate was not issued by a CA in {roots} \
                         (sslmode={mode} checks the chain of trust)"
                    ),
                    match self.mode {
                        SslMode::Prefer | SslMode::Require => format!(
                            "{give_root}, or leave sslrootcert out to encrypt without checking \
                             who the server is (protects against eavesdropping only)"
                        ),
                        _ => format!(
                            "{give_root}, or use sslmode=require without sslrootcert to encrypt \
                             without checking who the server is (protects against eavesdropping \
                             only)"
                        ),
                    },
                ),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
                    format!("the server's certificate has expired (sslmode={mode} checks it)"),
                    "renew the server's certificate, or check this machine's clock".into(),
                ),
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
                    format!("the server's certificate is not valid yet (sslmode={mode} checks it)"),
                    "check this machine's clock and the server's certificate".into(),
                ),
                other => (
                    format!(
                        "the server's certificate failed verification against {roots} \
                         ({other:?}; sslmode={mode} checks the chain)"
                    ),
                    format!("{give_root}, or check the certificate the server presents"),
                ),
            },
            other => (
                format!("the TLS handshake with the server failed under sslmode={mode}: {other}"),
                "check the server's TLS settings (ssl_min_protocol_version; nimbus speaks TLS \
                 1.2 and 1.3) and that the port is PostgreSQL's, or use sslmode=disable on a \
                 network you trust"
                    .into(),
            ),
        }
    }
}

/// The crypto provider TLS to PostgreSQL runs on: aws-lc-rs where the `tls-aws-lc-rs` feature
/// asks for it, else ring.
fn crypto_provider() -> rustls::crypto::CryptoProvider {
    #[cfg(feature = "tls-aws-lc-rs")]
    {
        rustls::crypto::aws_lc_rs::default_provider()
    }
    #[cfg(not(feature = "tls-aws-lc-rs"))]
    {
        rustls::crypto::ring::default_provider()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_defaults() {
        let none = TlsSettings::with_default_root(None, None, None).unwrap();
        assert_eq!(none.mode, SslMode::Prefer);
        assert_eq!(none.check(), Check::Nothing);
        let system = TlsSettings::with_default_root(None, Some("system"), None).unwrap();
        assert_eq!(system.mode, SslMode::VerifyFull);
        assert_eq!(system.root_certs, Some(RootCerts::Platform));
    }

    #[test]
    fn what_each_mode_checks() {
        let check = |mode: &str, root: Option<&str>| {
            TlsSettings::with_default_root(Some(mode), root, None)
                .unwrap()
                .check()
        };
        assert_eq!(check("disable", None), Check::Nothing);
        assert_eq!(check("prefer", None), Check::Nothing);
        assert_eq!(check("require", None), Check::Nothing);
        assert_eq!(check("require", Some("/ca.pem")), Check::Chain);
        assert_eq!(check("verify-ca", None), Check::Chain);
        assert_eq!(check("verify-ca", Some("/ca.pem")), Check::Chain);
        assert_eq!(check("verify-full", None), Check::ChainAndName);
        assert_eq!(check("verify-full", Some("system")), Check::ChainAndName);
    }

    #[test]
    fn unknown_modes_name_the_accepted_values() {
        let err = TlsSettings::from_url_values(Some("allow"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"allow\"") && err.contains(MODES), "{err}");
        let err = TlsSettings::from_url_values(Some("require"), Some("system"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("verify-full"), "{err}");
    }

    #[test]
    fn a_bad_root_file_is_named() {
        let missing = TlsSettings::from_url_values(Some("verify-full"), Some("/no/such/ca.pem"))
            .unwrap()
            .connector()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            missing.contains("/no/such/ca.pem") && missing.contains("Fix:"),
            "{missing}"
        );

        let path =
            std::env::temp_dir().join(format!("nimbus-not-pem-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&path, "not a certificate\n").unwrap();
        let empty = TlsSettings::from_url_values(Some("verify-ca"), path.to_str())
            .unwrap()
            .connector()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert!(empty.contains("holds no certificate"), "{empty}");
    }

    /// As libpq: without sslrootcert, verify-ca and verify-full check against
    /// `~/.postgresql/root.crt` (or `PGSSLROOTCERT`), never the whole platform store, and a
    /// missing file is an error; prefer and require use that file only when it exists.
    #[test]
    fn without_sslrootcert_the_roots_are_libpqs_default_file() {
        let missing =
            std::env::temp_dir().join(format!("nimbus-no-root-{}.crt", uuid::Uuid::new_v4()));
        for mode in ["verify-ca", "verify-full"] {
            let settings =
                TlsSettings::with_default_root(Some(mode), None, Some(missing.clone())).unwrap();
            assert_eq!(
                settings.root_certs,
                Some(RootCerts::DefaultFile(missing.clone())),
                "{mode} does not fall back to the platform's store"
            );
            let err = settings
                .connector()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains(&missing.display().to_string())
                    && err.contains("does not exist")
                    && err.contains("sslrootcert=system"),
                "{err}"
            );
        }
        let require =
            TlsSettings::with_default_root(Some("require"), None, Some(missing.clone())).unwrap();
        assert_eq!(
            require.check(),
            Check::Nothing,
            "no file, nothing to check against"
        );

        let present =
            std::env::temp_dir().join(format!("nimbus-root-{}.crt", uuid::Uuid::new_v4()));
        std::fs::write(&present, "placeholder\n").unwrap();
        let require =
            TlsSettings::with_default_root(Some("require"), None, Some(present.clone())).unwrap();
        let _ = std::fs::remove_file(&present);
        assert_eq!(
            require.check(),
            Check::Chain,
            "an existing default file is checked"
        );
        assert_eq!(require.root_certs, Some(RootCerts::DefaultFile(present)));
    }

    #[test]
    fn require_without_roots_needs_no_files() {
        assert!(TlsSettings::from_url_values(Some("require"), None)
            .unwrap()
            .connector()
            .is_ok());
    }
}
