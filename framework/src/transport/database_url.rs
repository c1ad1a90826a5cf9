//! Database URLs: which database, and how to reach it. A URL for a database whose driver was not
//! compiled in fails with an error naming the cargo feature to enable.

#[cfg(feature = "sqlite")]
use std::path::PathBuf;

use crate::error::{NimbusError, Result};
use crate::sql::Dialect;

/// How long connecting may take unless the URL says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A parsed database URL; each kind exists only when its driver's feature is compiled in.
#[derive(Clone, Debug)]
pub(crate) enum DatabaseUrl {
    /// `sqlite://path`: a database file, created if missing.
    #[cfg(feature = "sqlite")]
    Sqlite { path: PathBuf },
    /// `postgres://…` or `postgresql://…`.
    #[cfg(feature = "postgres")]
    Postgres {
        /// Everything but TLS; its `Debug` hides the password.
        config: Box<tokio_postgres::Config>,
        /// `host:port/database` for messages, without credentials.
        target: String,
        /// `sslmode` and `sslrootcert`, which tokio-postgres's parser does not (fully) know.
        tls: crate::driver::postgres::tls::TlsSettings,
        /// `pooler`, `listen_host` and `listen_port`: what stands between the bus and the server.
        pooling: crate::driver::postgres::Pooling,
    },
    /// An ADO.NET connection string: `Server=tcp:host,1433;Database=…;User Id=…;Password=…`.
    #[cfg(feature = "sqlserver")]
    SqlServer {
        settings: Box<crate::driver::sqlserver::ConnectionSettings>,
    },
}

/// Which database an endpoint runs on ([`crate::HandlerContext::database`]): what decides
/// which of `ctx.sqlite(..)`, `ctx.postgres()` and `ctx.sql_server()` a handler can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DatabaseKind {
    /// An SQLite file: `ctx.sqlite(..)`.
    Sqlite,
    /// PostgreSQL: `ctx.postgres()`.
    Postgres,
    /// SQL Server (or a SQL Server-compatible server): `ctx.sql_server()`.
    SqlServer,
}

/// The error for a URL whose database was not compiled in.
#[allow(dead_code)] // unused when every feature is on
fn not_compiled(database: &str, feature: &str) -> NimbusError {
    NimbusError::config(
        format!("{database} support is not compiled into this build"),
        format!(
            "enable the `{feature}` feature of the nimbus-bus dependency in Cargo.toml: \
             nimbus-bus = {{ version = \"0.1\", features = [\"{feature}\"] }}"
        ),
    )
}

impl DatabaseUrl {
    /// Parses a URL, or says which URLs are understood.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let url = url.trim();
        let supported = "use sqlite://path/to/file.db (embedded, the default), \
                         postgres://user@host:5432/database, or an ADO.NET connection string \
                         Server=tcp:host,1433;Database=Name;User Id=user;Password=secret";
        if url.is_empty() {
            return Err(NimbusError::config("the database URL is empty", supported));
        }
        if let Some(rest) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = rest.split('?').next().unwrap_or(rest);
            if path.is_empty() || path == ":memory:" || path.contains("mode=memory") {
                return Err(NimbusError::config(
                    format!("{url:?} names no database file (an in-memory database would lose every message)"),
                    "use sqlite://nimbus.db or another file path",
                ));
            }
            #[cfg(feature = "sqlite")]
            return Ok(DatabaseUrl::Sqlite {
                path: PathBuf::from(path),
            });
            #[cfg(not(feature = "sqlite"))]
            return Err(not_compiled("SQLite", "sqlite"));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            #[cfg(feature = "postgres")]
            return parse_postgres(url);
            #[cfg(not(feature = "postgres"))]
            return Err(not_compiled("PostgreSQL", "postgres"));
        }
        let lower = url.to_ascii_lowercase();
        let ado_keys = [
            "server=",
            "data source=",
            "address=",
            "addr=",
            "network address=",
        ];
        if lower
            .split(';')
            .any(|pair| ado_keys.iter().any(|k| pair.trim().starts_with(k)))
        {
            #[cfg(feature = "sqlserver")]
            return Ok(DatabaseUrl::SqlServer {
                settings: Box::new(crate::driver::sqlserver::parse_connection_string(url)?),
            });
            #[cfg(not(feature = "sqlserver"))]
            return Err(not_compiled("SQL Server", "sqlserver"));
        }
        if lower.starts_with("mssql://") || lower.starts_with("sqlserver://") {
            return Err(NimbusError::config(
                "SQL Server takes an ADO.NET connection string, not a URL",
                "write Server=tcp:host,1433;Database=Name;User Id=user;Password=secret;TrustServerCertificate=true",
            ));
        }
        let scheme = url.split(':').next().unwrap_or(url);
        Err(NimbusError::config(
            format!("the database URL scheme {scheme:?} is not supported"),
            supported,
        ))
    }

    /// The database's SQL dialect.
    pub(crate) fn dialect(&self) -> &'static Dialect {
        match self {
            #[cfg(feature = "sqlite")]
            DatabaseUrl::Sqlite { .. } => &crate::sql::SQLITE,
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres { .. } => &crate::sql::POSTGRES,
            #[cfg(feature = "sqlserver")]
            DatabaseUrl::SqlServer { .. } => &crate::sql::SQLSERVER,
        }
    }

    /// How long opening one connection may take: the connection string's connect timeout (plus
    /// a moment for the pool), or for SQLite the time a file may stay locked by another process.
    pub(crate) fn connect_timeout(&self) -> std::time::Duration {
        // A moment beyond the driver's own timeout, so that its clearer error wins.
        #[cfg(any(feature = "postgres", feature = "sqlserver"))]
        let margin = std::time::Duration::from_secs(1);
        match self {
            #[cfg(feature = "sqlite")]
            DatabaseUrl::Sqlite { .. } => std::time::Duration::from_secs(35),
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres { config, .. } => {
                config
                    .get_connect_timeout()
                    .copied()
                    .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
                    + margin
            }
            #[cfg(feature = "sqlserver")]
            DatabaseUrl::SqlServer { settings } => settings.connect_timeout + margin,
        }
    }

    /// The schema used when none is configured.
    pub(crate) fn default_schema(&self) -> &'static str {
        match self {
            #[cfg(feature = "sqlite")]
            DatabaseUrl::Sqlite { .. } => "main",
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres { .. } => "public",
            #[cfg(feature = "sqlserver")]
            DatabaseUrl::SqlServer { .. } => "dbo",
        }
    }

    /// Attaches the application's Entra ID token provider (or its absence) to a SQL Server
    /// connection string, checking that the two agree: a string asking for a token
    /// (`Authentication=ActiveDirectory…`) needs one; a SQL login or Integrated Security refuses
    /// one; a token for another database is a mistake.
    #[cfg(feature = "sqlserver")]
    pub(crate) fn with_sql_server_token(
        self,
        token: Option<crate::driver::sqlserver::SqlServerToken>,
    ) -> Result<Self> {
        match self {
            DatabaseUrl::SqlServer { settings } => Ok(DatabaseUrl::SqlServer {
                settings: Box::new(settings.with_token(token)?),
            }),
            #[allow(unreachable_patterns)]
            other if token.is_none() => Ok(other),
            #[allow(unreachable_patterns)]
            other => Err(NimbusError::config(
                format!(
                    "an Entra ID token was given for {}, which is not SQL Server",
                    other.dialect().name
                ),
                "give sql_server_token only with a SQL Server connection string",
            )),
        }
    }

    /// Whether this is an SQLite file (one writer: its handlers run one at a time).
    /// Which database this is.
    pub(crate) fn kind(&self) -> DatabaseKind {
        match self {
            #[cfg(feature = "sqlite")]
            DatabaseUrl::Sqlite { .. } => DatabaseKind::Sqlite,
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres { .. } => DatabaseKind::Postgres,
            #[cfg(feature = "sqlserver")]
            DatabaseUrl::SqlServer { .. } => DatabaseKind::SqlServer,
        }
    }

    pub(crate) fn is_sqlite(&self) -> bool {
        match self {
            #[cfg(feature = "sqlite")]
            DatabaseUrl::Sqlite { .. } => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Whether this is SQL Server (the only database with a `BodyString` column, and whose
    /// `uniqueidentifier` order needs its own time-ordered ids).
    pub(crate) fn is_sql_server(&self) -> bool {
        match self {
            #[cfg(feature = "sqlserver")]
            DatabaseUrl::SqlServer { .. } => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
}

#[cfg(feature = "postgres")]
fn parse_postgres(url: &str) -> Result<DatabaseUrl> {
    let ours = take_our_params(url)?;
    let parse = |url: &str| -> Result<tokio_postgres::Config> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            NimbusError::config(
                format!("cannot parse the PostgreSQL URL: {e}"),
                "write it as postgres://user:password@host:5432/database",
            )
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        config.ssl_mode(ours.tls.mode.negotiation());
        Ok(config)
    };
    let config = parse(&ours.url)?;
    let listen = match (&ours.listen_host, &ours.listen_port) {
        (None, None) => None,
        (host, port) => {
            let host = match host {
                Some(host) => host.clone(),
                None => first_host(&config),
            };
            let port = port.unwrap_or(5432);
            // An IPv6 address goes in brackets in a URL.
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host
            };
            Some(Box::new(parse(&with_authority_host(
                &ours.url,
                &format!("{host}:{port}"),
            ))?))
        }
    };
    let target = postgres_target(&config);
    Ok(DatabaseUrl::Postgres {
        config: Box::new(config),
        target,
        tls: ours.tls,
        pooling: crate::driver::postgres::Pooling {
            transaction_mode: ours.transaction_pooler,
            listen,
        },
    })
}

/// The first host a PostgreSQL configuration names (`localhost` where it names none).
#[cfg(feature = "postgres")]
fn first_host(config: &tokio_postgres::Config) -> String {
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    }
}

/// `url` with the hosts and ports of its authority replaced by `host_port` (the user and
/// password kept).
#[cfg(feature = "postgres")]
fn with_authority_host(url: &str, host_port: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let user = authority.rsplit_once('@').map(|(user, _)| user);
    match user {
        Some(user) => format!("{scheme}://{user}@{host_port}{tail}"),
        None => format!("{scheme}://{host_port}{tail}"),
    }
}

/// What a PostgreSQL URL's query says to Nimbus rather than to tokio-postgres.
#[cfg(feature = "postgres")]
struct OurParams {
    /// The URL without them.
    url: String,
    tls: crate::driver::postgres::tls::TlsSettings,
    /// `pooler=transaction`.
    transaction_pooler: bool,
    listen_host: Option<String>,
    listen_port: Option<u16>,
}

/// Takes out of a PostgreSQL URL's query what tokio-postgres does not (fully) know: `sslmode`
/// and `sslrootcert` (it knows only three of libpq's five modes, and no root certificates), and
/// Nimbus's own `pooler`, `listen_host` and `listen_port`.
#[cfg(feature = "postgres")]
fn take_our_params(url: &str) -> Result<OurParams> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok(OurParams {
            url: url.to_string(),
            tls: Default::default(),
            transaction_pooler: false,
            listen_host: None,
            listen_port: None,
        });
    };
    let (mut sslmode, mut sslrootcert) = (None, None);
    let (mut transaction_pooler, mut listen_host, mut listen_port) = (false, None, None);
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            // The last one wins, as in libpq.
            "sslmode" => sslmode = Some(percent_decode(key, value)?),
            "sslrootcert" => sslrootcert = Some(percent_decode(key, value)?),
            "pooler" => {
                transaction_pooler = match percent_decode(key, value)?.as_str() {
                    "transaction" => true,
                    "session" | "none" => false,
                    other => {
                        return Err(NimbusError::config(
                            format!("pooler={other} in the PostgreSQL URL is not known"),
                            "write pooler=transaction when the URL reaches the server through \
                             a pooler in transaction mode (PgBouncer's pool_mode = \
                             transaction), pooler=session (or nothing) otherwise",
                        ))
                    }
                }
            }
            "listen_host" => listen_host = Some(percent_decode(key, value)?),
            "listen_port" => {
                listen_port = Some(percent_decode(key, value)?.parse::<u16>().map_err(|_| {
                    NimbusError::config(
                        format!("listen_port={value} in the PostgreSQL URL is not a port"),
                        "write the PostgreSQL server's own port, e.g. listen_port=5432",
                    )
                })?)
            }
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" | "sslsni" => {
                return Err(NimbusError::config(
                    format!("{key} in the PostgreSQL URL is not supported (client certificates and CRLs are not)"),
                    "authenticate with a password (postgres://user:password@host/db) over \
                     sslmode=verify-full, and leave it out",
                ))
            }
            _ => rest.push(pair),
        }
    }
    let tls = crate::driver::postgres::tls::TlsSettings::from_url_values(
        sslmode.as_deref(),
        sslrootcert.as_deref(),
    )?;
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok(OurParams {
        url,
        tls,
        transaction_pooler,
        listen_host,
        listen_port,
    })
}

/// A URL query value with `%XX` escapes decoded.
#[cfg(feature = "postgres")]
fn percent_decode(key: &str, value: &str) -> Result<String> {
    let bad = || {
        NimbusError::config(
            format!("the {key} value in the PostgreSQL URL is not valid percent-encoded UTF-8"),
            "write characters such as spaces or '&' as %20 or %26",
        )
    };
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

#[cfg(feature = "postgres")]
fn postgres_target(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let port_of = |i: usize| match ports {
        [] => 5432,
        [one] => *one,
        many => many.get(i).copied().unwrap_or(5432),
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            format!("{host}:{}", port_of(i))
        })
        .collect();
    // Every host of a multi-host URL: the one that answers is the primary of the moment.
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_string()
    } else {
        hosts.join(",")
    };
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{hosts}/{db}")
}

/// Opens a connection of the application's own from a bus URL, with the bus's TLS set-up (see
/// `nimbus::connect_postgres`); its connection task runs on the current tokio runtime.
#[cfg(feature = "postgres")]
pub(crate) async fn connect_postgres_client(url: &str) -> Result<tokio_postgres::Client> {
    #[allow(irrefutable_let_patterns)] // With PostgreSQL the only database compiled in.
    let DatabaseUrl::Postgres {
        config,
        target,
        tls,
        ..
    } = DatabaseUrl::parse(url)?
    else {
        return Err(NimbusError::config(
            "nimbus::connect_postgres was given a URL that is not a PostgreSQL one",
            "pass a postgres://user@host/database URL, as the bus's database_url takes",
        ));
    };
    crate::driver::postgres::connect_client(&config, tls.connector()?, &target).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "sqlite")]
    #[test]
    fn parses_sqlite_urls() {
        use std::path::Path;
        assert!(matches!(
            DatabaseUrl::parse("sqlite://nimbus.db").unwrap(),
            DatabaseUrl::Sqlite { path } if path == Path::new("nimbus.db")
        ));
        assert!(matches!(
            DatabaseUrl::parse("sqlite:///tmp/x.db").unwrap(),
            DatabaseUrl::Sqlite { path } if path == Path::new("/tmp/x.db")
        ));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn parses_postgres_urls() {
        match DatabaseUrl::parse("postgres://postgres:secret@127.0.0.1:5433/orders").unwrap() {
            DatabaseUrl::Postgres {
                target,
                config,
                tls,
                pooling,
            } => {
                assert!(!pooling.transaction_mode && pooling.listen.is_none());
                assert_eq!(target, "127.0.0.1:5433/orders");
                assert_eq!(config.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
                // libpq's default: TLS when the server offers it.
                assert_eq!(tls.mode.name(), "prefer");
                assert_eq!(
                    config.get_ssl_mode(),
                    tokio_postgres::config::SslMode::Prefer
                );
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn takes_the_tls_settings_out_of_postgres_urls() {
        use crate::driver::postgres::tls::RootCerts;
        let url = "postgres://app:p%40ss@db.example.com/orders?application_name=shop&\
                   sslmode=verify-full&sslrootcert=%2Fetc%2Fssl%2Fmy%20ca.pem&connect_timeout=3";
        match DatabaseUrl::parse(url).unwrap() {
            DatabaseUrl::Postgres { config, tls, .. } => {
                assert_eq!(tls.mode.name(), "verify-full");
                assert_eq!(
                    tls.root_certs,
                    Some(RootCerts::File("/etc/ssl/my ca.pem".into()))
                );
                assert_eq!(
                    config.get_ssl_mode(),
                    tokio_postgres::config::SslMode::Require
                );
                // The other parameters still reach tokio-postgres.
                assert_eq!(config.get_application_name(), Some("shop"));
                assert_eq!(
                    config.get_connect_timeout(),
                    Some(&std::time::Duration::from_secs(3))
                );
                assert_eq!(config.get_password(), Some(&b"p@ss"[..]));
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
        for (mode, negotiation) in [
            ("disable", tokio_postgres::config::SslMode::Disable),
            ("prefer", tokio_postgres::config::SslMode::Prefer),
            ("require", tokio_postgres::config::SslMode::Require),
            ("verify-ca", tokio_postgres::config::SslMode::Require),
        ] {
            match DatabaseUrl::parse(&format!("postgres://u@h/db?sslmode={mode}")).unwrap() {
                DatabaseUrl::Postgres { config, tls, .. } => {
                    assert_eq!(tls.mode.name(), mode);
                    assert_eq!(config.get_ssl_mode(), negotiation, "{mode}");
                }
                #[allow(unreachable_patterns)]
                other => panic!("{other:?}"),
            }
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn takes_the_pooler_settings_out_of_postgres_urls() {
        let url = "postgres://app:p%40ss@pooler.internal:6432/orders?pooler=transaction&\
                   listen_host=db.internal&application_name=shop";
        match DatabaseUrl::parse(url).unwrap() {
            DatabaseUrl::Postgres {
                config, pooling, ..
            } => {
                assert!(pooling.transaction_mode);
                assert_eq!(config.get_ports(), [6432]);
                assert_eq!(config.get_application_name(), Some("shop"));
                let listen = pooling.listen.expect("a direct address for LISTEN");
                assert_eq!(
                    listen.get_hosts(),
                    [tokio_postgres::config::Host::Tcp("db.internal".into())]
                );
                // The server's default port, and everything else as the URL says.
                assert_eq!(listen.get_ports(), [5432]);
                assert_eq!(listen.get_user(), Some("app"));
                assert_eq!(listen.get_password(), Some(&b"p@ss"[..]));
                assert_eq!(listen.get_dbname(), Some("orders"));
                assert_eq!(listen.get_application_name(), Some("shop"));
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
        // An IPv6 address.
        match DatabaseUrl::parse("postgres://u@h:6432/db?listen_host=%3A%3A1").unwrap() {
            DatabaseUrl::Postgres { pooling, .. } => {
                let listen = pooling.listen.expect("a direct address for LISTEN");
                assert_eq!(
                    listen.get_hosts(),
                    [tokio_postgres::config::Host::Tcp("::1".into())]
                );
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
        // The port alone: the pooler's host.
        match DatabaseUrl::parse("postgres://u@10.0.0.5:6432/db?listen_port=5433").unwrap() {
            DatabaseUrl::Postgres { pooling, .. } => {
                assert!(!pooling.transaction_mode);
                let listen = pooling.listen.expect("a direct address for LISTEN");
                assert_eq!(
                    listen.get_hosts(),
                    [tokio_postgres::config::Host::Tcp("10.0.0.5".into())]
                );
                assert_eq!(listen.get_ports(), [5433]);
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
        for (url, says) in [
            ("postgres://u@h/db?pooler=statement", "pooler=statement"),
            ("postgres://u@h/db?listen_port=x", "listen_port=x"),
        ] {
            let err = DatabaseUrl::parse(url).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_tls_mistakes_are_explained() {
        let err = DatabaseUrl::parse("postgres://u@h/db?sslmode=verify_full")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"verify_full\"")
                && err.contains("disable, prefer, require, verify-ca, verify-full"),
            "{err}"
        );
        let err = DatabaseUrl::parse("postgres://u@h/db?sslcert=/c.pem")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sslcert") && err.contains("Fix:"), "{err}");
        let err = DatabaseUrl::parse("postgres://u@h/db?sslrootcert=%ZZ")
            .unwrap_err()
            .to_string();
        assert!(err.contains("percent-encoded"), "{err}");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_multi_host_url_shows_every_host() {
        let url = "postgres://u:secret@a.example:6001,b.example:6002/orders\
                   ?target_session_attrs=read-write";
        match DatabaseUrl::parse(url).unwrap() {
            DatabaseUrl::Postgres { target, config, .. } => {
                assert_eq!(target, "a.example:6001,b.example:6002/orders");
                assert_eq!(
                    config.get_target_session_attrs(),
                    tokio_postgres::config::TargetSessionAttrs::ReadWrite
                );
            }
            other => panic!("{other:?}"),
        }
        match DatabaseUrl::parse("postgres://u@a,b:5433/d").unwrap() {
            DatabaseUrl::Postgres { target, .. } => assert_eq!(target, "a:5432,b:5433/d"),
            other => panic!("{other:?}"),
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_settings_never_show_the_password() {
        let parsed = DatabaseUrl::parse(
            "postgres://app:s3cret-pw@db.example.com/orders?sslmode=require&sslrootcert=/ca.pem",
        )
        .unwrap();
        let shown = format!("{parsed:?}");
        assert!(!shown.contains("s3cret-pw"), "{shown}");
        assert!(
            shown.contains("Require") && shown.contains("/ca.pem"),
            "{shown}"
        );
    }

    #[cfg(feature = "sqlserver")]
    #[test]
    fn parses_sql_server_connection_strings() {
        match DatabaseUrl::parse("Server=tcp:sql.local,1433;Database=Orders;User Id=sa;Password=p")
            .unwrap()
        {
            DatabaseUrl::SqlServer { settings } => {
                assert_eq!(settings.target, "tcp:sql.local,1433/Orders")
            }
            #[allow(unreachable_patterns)]
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_bad_urls_with_a_fix() {
        for url in [
            "",
            "sqlite://",
            "sqlite::memory:",
            "mysql://localhost/db",
            "sqlserver://localhost/db",
            "Server=tcp:localhost,1433;Integrated Security=perhaps",
            "postgres://host:notaport/db",
        ] {
            let err = DatabaseUrl::parse(url).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{url:?}: {err}");
        }
    }

    #[test]
    fn a_database_not_compiled_in_names_its_feature() {
        let err = not_compiled("PostgreSQL", "postgres").to_string();
        assert!(err.contains("`postgres` feature"), "{err}");
    }
}
