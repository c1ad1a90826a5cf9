//! ADO.NET connection strings for SQL Server: parsed once, opened with TCP + TDS login (following
//! Azure SQL gateway redirects) within the connect timeout, pooled by a deadpool manager.

use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleResult};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use super::auth::{Login, SqlServerToken};
use crate::error::{NimbusError, Result};

/// How long a pooled connection may sit idle before it is checked when handed out again.
const CHECK_IDLE_AFTER: Duration = Duration::from_secs(30);

/// ADO.NET's default `Connect Timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How many Azure SQL gateway redirects to follow when connecting.
const MAX_REDIRECTS: usize = 3;

/// A TDS connection over tokio's TCP stream.
pub(crate) type Client = tiberius::Client<Compat<TcpStream>>;

/// A parsed ADO.NET connection string, with the application's Entra ID token provider.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionSettings {
    pub config: tiberius::Config,
    /// `server/database` for messages, never a password.
    pub target: String,
    pub connect_timeout: Duration,
    /// How connections log in.
    pub login: Login,
    /// Where tokens come from, for [`Login::EntraToken`].
    pub token: Option<SqlServerToken>,
    /// `MultiSubnetFailover=True`: connect to every address the server's name resolves to at
    /// once and keep the first that answers (an availability group listener spanning subnets).
    pub multi_subnet_failover: bool,
    /// `Max Pool Size`: the most connections the process opens with this connection string,
    /// as in ADO.NET (the process's connection budget, unless `connection_limit` sets it).
    pub max_pool_size: Option<usize>,
}

impl ConnectionSettings {
    /// Combines the connection string's login with the application's token provider (or its
    /// absence): a string asking for an Entra ID token needs one, a SQL login or Integrated
    /// Security refuses one, and a string that says nothing logs in with it.
    pub(crate) fn with_token(mut self, token: Option<SqlServerToken>) -> Result<Self> {
        self.login = self.login.with_token(token.is_some())?;
        self.token = token;
        Ok(self)
    }

    /// The login of one new connection: a fresh token from the provider for an Entra ID login
    /// (`None`: the configuration's own login).
    async fn fresh_login(&self) -> std::result::Result<Option<tiberius::AuthMethod>, OpenError> {
        match (&self.login, &self.token) {
            (Login::EntraToken { .. }, Some(token)) => token
                .fetch()
                .await
                .map(|t| Some(tiberius::AuthMethod::aad_token(t)))
                .map_err(OpenError::Token),
            (Login::EntraToken { .. }, None) => Err(OpenError::Token(
                "the connection string asks for an Entra ID token and none was given \
                    (BusBuilder::sql_server_token)"
                    .into(),
            )),
            _ => Ok(None),
        }
    }
}

/// Why opening a connection failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// TCP, TLS, the login, or the server.
    #[error(transparent)]
    Server(#[from] tiberius::error::Error),
    /// The application's token provider ([`SqlServerToken`]).
    #[error("the application's Entra ID token provider failed: {0}")]
    Token(String),
    /// TCP, TLS and the login did not finish within the connect timeout (a server or proxy that
    /// accepts connections and then says nothing, or one far too slow).
    #[error("no connection within the connect timeout of {0:?}")]
    TimedOut(Duration),
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
    let login = Login::of(get)?;
    let multi_subnet_failover = high_availability_keywords(get)?;
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
    let max_pool_size = match get(&["max pool size"]) {
        None => None,
        Some(v) => Some(v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            NimbusError::config(
                format!("Max Pool Size={v:?} is not a number of connections of 1 or more"),
                "use e.g. Max Pool Size=100 (ADO.NET's default, and Nimbus's)",
            )
        })?),
    };
    let mut config = tiberius::Config::from_ado_string(text).map_err(|e| {
        NimbusError::config(
            format!("cannot parse the SQL Server connection string: {e}"),
            fix,
        )
    })?;
    // tiberius reads Integrated Security in its own way per build (Windows credentials from
    // User Id and Password where ADO.NET ignores them; nothing without an integrated-auth
    // feature) and not Trusted_Connection at all: the login is Nimbus's choice.
    if login == Login::Integrated {
        config.authentication(super::auth::integrated()?);
    }
    // ADO.NET's `Application Name` names the program in `sys.dm_exec_sessions`; "nimbus" if
    // the string names none.
    config.application_name(
        get(&["application name", "app"])
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "nimbus".into()),
    );
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
        login,
        token: None,
        multi_subnet_failover,
        max_pool_size,
    })
}

/// The high-availability keywords of a connection string: `MultiSubnetFailover` (returned),
/// `ApplicationIntent` (only `ReadWrite`: a bus deletes and inserts rows, which a read-only
/// replica refuses) and `Failover Partner` (database mirroring, which the TDS client this
/// driver uses does not implement: refused rather than silently ignored).
fn high_availability_keywords(get: impl Fn(&[&str]) -> Option<String>) -> Result<bool> {
    if let Some(intent) = get(&["applicationintent", "application intent"]) {
        if !intent.eq_ignore_ascii_case("readwrite") {
            return Err(NimbusError::config(
                format!(
                    "ApplicationIntent={intent}: a bus receives (deletes rows) and sends (inserts \
                     rows), which a read-only secondary replica refuses"
                ),
                "remove ApplicationIntent or set ApplicationIntent=ReadWrite, and point Server at \
                 the availability group listener, which routes to the primary",
            ));
        }
    }
    if get(&["failover partner", "failoverpartner"]).is_some() {
        return Err(NimbusError::config(
            "Failover Partner (database mirroring) is not supported: the TDS client Nimbus uses \
             (tiberius) does not implement it, so the partner would be ignored",
            "point Server at an availability group listener (with MultiSubnetFailover=True where \
             it spans subnets), or remove Failover Partner",
        ));
    }
    match get(&["multisubnetfailover", "multi subnet failover"]) {
        None => Ok(false),
        Some(v) if ["true", "yes"].iter().any(|t| v.eq_ignore_ascii_case(t)) => Ok(true),
        Some(v) if ["false", "no"].iter().any(|t| v.eq_ignore_ascii_case(t)) => Ok(false),
        Some(v) => Err(NimbusError::config(
            format!("MultiSubnetFailover={v:?} is neither True nor False"),
            "use MultiSubnetFailover=True or MultiSubnetFailover=False",
        )),
    }
}

/// Connects to `addr` (`host:port`): with `parallel`, to every address it resolves to at once,
/// keeping the first that answers, as ADO.NET's `MultiSubnetFailover=True` does; otherwise to
/// each in turn.
async fn connect_tcp(addr: String, parallel: bool) -> std::io::Result<TcpStream> {
    if !parallel {
        return TcpStream::connect(addr).await;
    }
    use futures::stream::{FuturesUnordered, StreamExt};
    let mut attempts: FuturesUnordered<_> = tokio::net::lookup_host(&addr)
        .await?
        .map(TcpStream::connect)
        .collect();
    let mut first_error = None;
    while let Some(attempt) = attempts.next().await {
        match attempt {
            Ok(tcp) => return Ok(tcp),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{addr} resolves to no address"),
        )
    }))
}

/// Opens one connection: a fresh token where the login takes one, TCP, then TDS login
/// (following Azure SQL gateway redirects), all within the connect timeout.
pub(super) async fn open(settings: &ConnectionSettings) -> std::result::Result<Client, OpenError> {
    let attempt = async {
        let mut config = settings.config.clone();
        if let Some(login) = settings.fresh_login().await? {
            config.authentication(login);
        }
        let mut redirects = 0;
        loop {
            let tcp = connect_tcp(config.get_addr(), settings.multi_subnet_failover)
                .await
                .map_err(tiberius::error::Error::from)?;
            tcp.set_nodelay(true)
                .map_err(tiberius::error::Error::from)?;
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
                other => return other.map_err(OpenError::from),
            }
        }
    };
    // tiberius bounds its handshake by the same timeout (`handshake_timeout`): whichever
    // fires first, the error is the same.
    match tokio::time::timeout(settings.connect_timeout, attempt).await {
        Ok(Err(OpenError::Server(tiberius::error::Error::Io {
            kind: std::io::ErrorKind::TimedOut,
            ..
        })))
        | Err(_) => Err(OpenError::TimedOut(settings.connect_timeout)),
        Ok(result) => result,
    }
}

/// A pooled connection: the client, and its place in the process's connection budget, given
/// back when the connection closes.
pub(crate) struct PooledClient {
    client: Client,
    _slot: crate::driver::budget::Slot,
}

impl std::ops::Deref for PooledClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for PooledClient {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// The deadpool manager: connects on `create`, within the database's budget; a connection that failed is never returned to the
/// pool (callers take it out), so recycling checks nothing and costs no round trip.
pub(crate) struct ConnectionManager {
    pub settings: ConnectionSettings,
    /// Where connections are opened (see [`crate::driver::home`]).
    pub home: crate::driver::home::Home,
    /// The process's budget for the database.
    pub budget: std::sync::Arc<crate::driver::budget::Budget>,
}

impl managed::Manager for ConnectionManager {
    type Type = PooledClient;
    type Error = OpenError;

    /// Opens the connection on the home runtime (see [`crate::driver::home`]) once the budget
    /// has room for it.
    async fn create(&self) -> std::result::Result<PooledClient, OpenError> {
        let slot = self.budget.slot().await;
        let settings = self.settings.clone();
        let client = match self.home.spawn(async move { open(&settings).await }).await {
            Ok(opened) => opened,
            // The home runtime has shut down: open it here instead.
            Err(_) => open(&self.settings).await,
        }?;
        Ok(PooledClient {
            client,
            _slot: slot,
        })
    }

    /// A connection that failed is never given back (the driver discards it), so a connection
    /// used moments ago is handed out as it is; one idle for longer than [`CHECK_IDLE_AFTER`]
    /// (a server restart, a failover or a dropped NAT entry may have killed it meanwhile) is
    /// checked with `SELECT 1` within the connect timeout first, and replaced if that fails.
    async fn recycle(
        &self,
        client: &mut PooledClient,
        metrics: &Metrics,
    ) -> RecycleResult<Self::Error> {
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
            Ok(Err(e)) => Err(managed::RecycleError::Backend(e.into())),
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
    fn high_availability_keywords_are_taken_or_refused_with_the_reason() {
        let base = "Server=tcp:ag-listener.example.com,1433;User Id=sa;Password=x";
        let parsed = |extra: &str| parse_connection_string(&format!("{base};{extra}"));
        assert!(!parsed("").unwrap().multi_subnet_failover);
        assert!(
            parsed("MultiSubnetFailover=True")
                .unwrap()
                .multi_subnet_failover
        );
        assert!(
            parsed("multisubnetfailover=yes")
                .unwrap()
                .multi_subnet_failover
        );
        assert!(
            !parsed("MultiSubnetFailover=False")
                .unwrap()
                .multi_subnet_failover
        );
        assert!(parsed("ApplicationIntent=ReadWrite").is_ok());
        for (extra, says) in [
            ("MultiSubnetFailover=maybe", "neither True nor False"),
            ("ApplicationIntent=ReadOnly", "read-only"),
            ("Failover Partner=mirror.example.com", "not supported"),
        ] {
            let err = parsed(extra).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains("Fix"), "{extra}: {err}");
        }
    }

    #[tokio::test]
    async fn multi_subnet_failover_takes_the_first_address_that_answers() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // `localhost` resolves to ::1 and 127.0.0.1 here; only the latter listens.
        let tcp = connect_tcp(format!("localhost:{port}"), true)
            .await
            .unwrap();
        assert_eq!(tcp.peer_addr().unwrap().port(), port);
        let refused = connect_tcp("127.0.0.1:1".into(), true).await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn defaults_and_refusals() {
        let s = parse_connection_string("Server=localhost;User Id=sa;Password=x").unwrap();
        assert_eq!(s.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(s.target, "localhost/master");
        assert_eq!(s.login, Login::SqlPassword);
        for bad in [
            "Server=localhost;Integrated Security=perhaps",
            "Server=localhost;Authentication=Kerberos",
            "Server=localhost;Authentication=ActiveDirectoryDefault;Integrated Security=true",
            "Server=localhost;Connect Timeout=soon",
        ] {
            let err = parse_connection_string(bad).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{bad}: {err}");
        }
    }

    /// Seed 003's quick start, and its Trusted_Connection spelling: the process's own identity
    /// where this build has it (Windows; Kerberos with `sqlserver-kerberos`), otherwise an
    /// error naming the feature.
    #[test]
    fn integrated_security_is_the_processs_own_identity() {
        let available = cfg!(any(windows, all(unix, feature = "sqlserver-kerberos")));
        for text in [
            "Server=localhost;Database=Nimbus;Integrated Security=true;",
            "Server=localhost;Database=Nimbus;Trusted_Connection=yes;",
            "Server=localhost;Database=Nimbus;Integrated Security=SSPI;User Id=ignored",
        ] {
            match parse_connection_string(text) {
                Ok(s) => {
                    assert!(available, "{text}");
                    assert_eq!(s.login, Login::Integrated, "{text}");
                    assert_eq!(s.target, "localhost/Nimbus");
                    assert!(format!("{:?}", s.config).contains("Integrated"), "{text}");
                }
                Err(e) => {
                    assert!(!available, "{text}: {e}");
                    let e = e.to_string();
                    assert!(
                        e.contains("sqlserver-kerberos") && e.contains("Fix:"),
                        "{e}"
                    );
                }
            }
        }
        let s = parse_connection_string("Server=h;Integrated Security=false;User Id=a;Password=b")
            .unwrap();
        assert_eq!(s.login, Login::SqlPassword);
    }

    /// An Entra ID login: parsed, then needing the application's token provider, which is
    /// asked for a fresh token whenever a connection opens.
    #[tokio::test]
    async fn entra_id_takes_the_applications_token_on_every_connection() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;

        let text = "Server=tcp:orders.database.windows.net,1433;Database=Orders;\
                    Authentication=ActiveDirectoryDefault";
        let parsed = parse_connection_string(text).unwrap();
        assert!(matches!(parsed.login, Login::EntraToken { .. }));
        let err = parsed.clone().with_token(None).unwrap_err().to_string();
        assert!(
            err.contains("sql_server_token") && err.contains("Fix:"),
            "{err}"
        );

        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let token = SqlServerToken::provider(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>("eyJ0eXAi.secret-token".to_string()) }
        });
        let settings = parsed.with_token(Some(token.clone())).unwrap();
        for _ in 0..2 {
            let login = settings.fresh_login().await.unwrap();
            assert!(matches!(login, Some(tiberius::AuthMethod::AADToken(_))));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2, "one token per connection");
        assert!(!format!("{settings:?}").contains("secret-token"));

        // A string that names no login logs in with the token; a SQL login refuses one.
        let plain = parse_connection_string("Server=tcp:h,1433;Database=Orders")
            .unwrap()
            .with_token(Some(token.clone()))
            .unwrap();
        assert_eq!(plain.login, Login::EntraToken { mode: None });
        let err = parse_connection_string("Server=tcp:h,1433;User Id=sa;Password=x")
            .unwrap()
            .with_token(Some(token))
            .unwrap_err()
            .to_string();
        assert!(err.contains("Fix:"), "{err}");

        // The provider's failure is an OpenError naming it, when a connection opens.
        let failing = parse_connection_string(text)
            .unwrap()
            .with_token(Some(SqlServerToken::provider(|| async {
                Err::<String, _>("DefaultAzureCredential found no credential")
            })))
            .unwrap();
        match failing.fresh_login().await {
            Err(OpenError::Token(why)) => assert!(why.contains("no credential"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// The provider runs when the pool opens a connection, inside the connect timeout: against
    /// a server that never answers, it has been asked once and the attempt ends in time.
    #[tokio::test]
    async fn the_provider_is_called_by_the_pool_within_the_connect_timeout() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let settings = parse_connection_string(&format!(
            "Server=tcp:127.0.0.1,{port};Database=Orders;Connect Timeout=1;\
             TrustServerCertificate=true"
        ))
        .unwrap()
        .with_token(Some(SqlServerToken::provider(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>("token".to_string()) }
        })))
        .unwrap();
        let budget = crate::driver::budget::budget_for(
            "test://provider-within-connect-timeout",
            "Orders",
            crate::driver::budget::Request {
                limit: None,
                concurrency: 1,
                default_limit: crate::driver::budget::DEFAULT_CONNECTION_LIMIT,
            },
        )
        .unwrap();
        let manager = ConnectionManager {
            settings,
            home: crate::driver::home::Home::here(),
            budget,
        };
        let started = std::time::Instant::now();
        let result = managed::Manager::create(&manager).await;
        assert!(result.is_err(), "nothing answers the login");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
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
