//! ADO.NET connection strings for SQL Server: parsed once, opened with TCP + TDS login (following
//! Azure SQL gateway redirects) within the connect timeout, pooled by a deadpool manager.

use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleResult};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::error::{NimbusError, Result};

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
    let pairs: Vec<(String, String)> = text
        .split(';')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let get = |keys: &[&str]| {
        pairs
            .iter()
            .find(|(k, _)| keys.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
    };
    let fix = "write it as Server=tcp:host,1433;Database=Name;User Id=user;Password=secret;\
               TrustServerCertificate=true";
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

    async fn recycle(
        &self,
        _client: &mut Client,
        _metrics: &Metrics,
    ) -> RecycleResult<Self::Error> {
        Ok(())
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
}
