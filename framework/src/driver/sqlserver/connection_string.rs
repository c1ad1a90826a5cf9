//! ADO.NET connection strings for SQL Server: parsed once, opened with TCP + TDS login (following
//! Azure SQL gateway redirects) within the connect timeout, pooled by a deadpool manager.

use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleResult};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::error::{NimbusError, Result};

/// How long a pooled connection may sit idle before it is checked when handed out again.
const CHECK_IDLE_AFTER: Duration = Duration::from_secs(30);

/// ADO.NET's default `Connect Timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How many Azure SQL gateway redirects to follow when connecting.
const MAX_REDIRECTS: usize = 3;

/// A TDS connection over tokio's TCP stream.
pub(crate) type Client = tiberius::Client<Compat<TcpStream>>;

/// A parsed ADO.NET connection string.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionSettings {
    pub config: tiberius::Config,
    /// `server/database` for messages, never a password.
    pub target: String,
    pub connect_timeout: Duration,
}

/// Parses an ADO.NET connection string such as
/// `Server=tcp:host,1433;Database=Orders;User Id=app;Password=…;TrustServerCertificate=true`.
pub(crate) fn parse_connection_string(text: &str) -> Result<ConnectionSettings> {
    let fix = "write it as Server=tcp:host,1433;Database=Name;User Id=user;Password=secret;\
               TrustServerCertificate=true (a value with ; or = goes in braces: Password={a;b})";
    // The parser tiberius itself uses, so that braces and quotes mean the same to both (a
    // password `{a;Server=x}` is one value, never a key). Its error never quotes the input,
    // which may hold a password.
    let pairs: connection_string::AdoNetString = text.parse().map_err(|e| {
        NimbusError::config(
            format!("cannot parse the SQL Server connection string: {e}"),
            fix,
        )
    })?;
    let get = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| pairs.get(*k))
            .map(|v| v.trim().to_string())
    };
    let integrated = get(&[
        "integrated security",
        "integratedsecurity",
        "trusted_connection",
    ])
    .map(|v| v.to_ascii_lowercase())
    .is_some_and(|v| matches!(v.as_str(), "true" | "yes" | "sspi"));
    if integrated {
        return Err(NimbusError::config(
            "Integrated (Windows) authentication to SQL Server is not supported yet",
            "use SQL authentication: User Id=...;Password=... in the connection string",
        ));
    }
    if let Some(mode) = get(&["authentication"]) {
        return Err(NimbusError::config(
            format!("Authentication={mode} is not supported yet"),
            "use SQL authentication: User Id=...;Password=... in the connection string",
        ));
    }
    let connect_timeout = match get(&["connect timeout", "connection timeout", "timeout"]) {
        None => DEFAULT_CONNECT_TIMEOUT,
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .ok_or_else(|| {
                NimbusError::config(
                    format!("Connect Timeout={v:?} is not a positive number of seconds"),
                    "use e.g. Connect Timeout=15",
                )
            })?,
    };
    let mut config = tiberius::Config::from_ado_string(text).map_err(|e| {
        NimbusError::config(
            format!("cannot parse the SQL Server connection string: {e}"),
            fix,
        )
    })?;
    config.application_name("nimbus");
    config.handshake_timeout(Some(connect_timeout));
    let server = get(&[
        "server",
        "data source",
        "address",
        "addr",
        "network address",
    ])
    .unwrap_or_else(|| "localhost".into());
    let database = get(&["database", "initial catalog"]).unwrap_or_else(|| "master".into());
    Ok(ConnectionSettings {
        config,
        target: format!("{server}/{database}"),
        connect_timeout,
    })
}

/// Opens one connection: TCP, then TDS login (following Azure SQL gateway redirects), all within
/// the connect timeout.
async fn open(
    settings: &ConnectionSettings,
) -> std::result::Result<Client, tiberius::error::Error> {
    let attempt = async {
        let mut config = settings.config.clone();
        let mut redirects = 0;
        loop {
            let tcp = TcpStream::connect(config.get_addr()).await?;
            tcp.set_nodelay(true)?;
            // Boxed: the login future is large, and callers may poll it on a small stack.
            match Box::pin(tiberius::Client::connect(
                config.clone(),
                tcp.compat_write(),
            ))
            .await
            {
                Err(tiberius::error::Error::Routing { host, port })
                    if redirects < MAX_REDIRECTS =>
                {
                    redirects += 1;
                    config.host(&host);
                    config.port(port);
                }
                other => return other,
            }
        }
    };
    match tokio::time::timeout(settings.connect_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no connection within the connect timeout of {:?}",
                settings.connect_timeout
            ),
        )
        .into()),
    }
}

/// The deadpool manager: connects on `create`; a connection that failed is never returned to the
/// pool (callers take it out), so recycling checks nothing and costs no round trip.
pub(crate) struct ConnectionManager {
    pub settings: ConnectionSettings,
}

impl managed::Manager for ConnectionManager {
    type Type = Client;
    type Error = tiberius::error::Error;

    async fn create(&self) -> std::result::Result<Client, tiberius::error::Error> {
        open(&self.settings).await
    }

    /// A connection that failed is never given back (the driver discards it), so a connection
    /// used moments ago is handed out as it is; one idle for longer than [`CHECK_IDLE_AFTER`]
    /// (a server restart, a failover or a dropped NAT entry may have killed it meanwhile) is
    /// checked with `SELECT 1` within the connect timeout first, and replaced if that fails.
    async fn recycle(&self, client: &mut Client, metrics: &Metrics) -> RecycleResult<Self::Error> {
        if metrics.last_used() < CHECK_IDLE_AFTER {
            return Ok(());
        }
        let check = async {
            client
                .simple_query("SELECT 1")
                .await?
                .into_results()
                .await?;
            Ok::<_, tiberius::error::Error>(())
        };
        match tokio::time::timeout(self.settings.connect_timeout, check).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(managed::RecycleError::Backend(e)),
            Err(_) => Err(managed::RecycleError::message(
                "an idle connection did not answer SELECT 1 in time",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_ado_net_connection_string() {
        let s = parse_connection_string(
            "Server=tcp:db.example.com,1533;Database=Orders;User Id=app;Password=s3cret;\
             TrustServerCertificate=true;Connect Timeout=7",
        )
        .unwrap();
        assert_eq!(s.target, "tcp:db.example.com,1533/Orders");
        assert_eq!(s.connect_timeout, Duration::from_secs(7));
        assert_eq!(s.config.get_addr(), "db.example.com:1533");
        assert!(!s.target.contains("s3cret"));
    }

    #[test]
    fn defaults_and_refusals() {
        let s = parse_connection_string("Server=localhost;User Id=sa;Password=x").unwrap();
        assert_eq!(s.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(s.target, "localhost/master");
        for bad in [
            "Server=localhost;Integrated Security=true",
            "Server=localhost;Trusted_Connection=yes",
            "Server=localhost;Authentication=ActiveDirectoryDefault",
            "Server=localhost;Connect Timeout=soon",
        ] {
            let err = parse_connection_string(bad).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_braced_value_is_one_value_and_never_shows() {
        let s = parse_connection_string(
            "Server=tcp:db.example.com,1433;Database=Orders;User Id=app;\
             Password={se;cret;Server=evil};TrustServerCertificate=true",
        )
        .unwrap();
        assert_eq!(s.target, "tcp:db.example.com,1433/Orders");
        assert!(!s.target.contains("evil") && !s.target.contains("cret"));
        let err = parse_connection_string("Server=x;Password={s3cr3tXYZ")
            .unwrap_err()
            .to_string();
        assert!(
            !err.contains("s3cr3tXYZ"),
            "the error never quotes the input: {err}"
        );
    }
}
