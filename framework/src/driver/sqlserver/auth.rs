//! How a SQL Server connection logs in: SQL authentication (`User Id`/`Password`), the process's
//! own identity (`Integrated Security` / `Trusted_Connection`: Windows authentication on
//! Windows, Kerberos through GSSAPI elsewhere with the `sqlserver-kerberos` feature), or a
//! Microsoft Entra ID (Azure AD) access token the application supplies ([`SqlServerToken`]),
//! fetched again for every new connection so that expiring tokens are renewed.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::{NimbusError, Result};

/// The error a token provider may return.
type ProviderError = Box<dyn std::error::Error + Send + Sync>;

/// Microsoft Entra ID (Azure AD) access tokens for logging in to SQL Server or Azure SQL, which
/// the application supplies: Nimbus acquires no token itself.
///
/// Give one to [`crate::BusBuilder::sql_server_token`] (or
/// [`crate::admin::ConnectOptions::sql_server_token`]) with a connection string that names no
/// SQL login, or says `Authentication=ActiveDirectoryDefault` (or another `ActiveDirectory…`
/// mode). A provider is called each time the pool opens a connection, so that a token that
/// expires (Entra ID tokens last about an hour) is replaced by a fresh one; it runs within the
/// connection string's connect timeout.
///
/// ```no_run
/// # #[cfg(feature = "sqlserver")]
/// # fn demo() -> nimbus::Result<()> {
/// # async fn fetch_token_somehow() -> Result<String, std::io::Error> { Ok(String::new()) }
/// use nimbus::SqlServerToken;
///
/// let endpoint = nimbus::Bus::builder()
///     .names("Sales", "sales-1")
///     .database_url("Server=tcp:orders.database.windows.net,1433;Database=Orders;\
///                    Authentication=ActiveDirectoryDefault")
///     // e.g. azure_identity's DefaultAzureCredential, for the scope
///     // https://database.windows.net/.default
///     .sql_server_token(SqlServerToken::provider(|| fetch_token_somehow()))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqlServerToken {
    fetch: Arc<
        dyn Fn() -> BoxFuture<'static, std::result::Result<String, ProviderError>> + Send + Sync,
    >,
}

impl std::fmt::Debug for SqlServerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqlServerToken(..)")
    }
}

impl SqlServerToken {
    /// What tells one provider from another: connections logged in by different providers are
    /// not pooled together.
    pub(crate) fn identity(&self) -> *const () {
        Arc::as_ptr(&self.fetch).cast::<()>()
    }

    /// One token, used for every connection: for short-lived tools, since the server refuses
    /// new connections once it expires. Prefer [`SqlServerToken::provider`] for services.
    pub fn fixed(token: impl Into<String>) -> Self {
        let token: Arc<str> = Arc::from(token.into());
        SqlServerToken {
            fetch: Arc::new(move || {
                let token = token.to_string();
                Box::pin(async move { Ok(token) })
            }),
        }
    }

    /// A function returning a future of a fresh access token, called for every new connection.
    /// Its error is reported (as a transient connection failure) with the provider's message.
    pub fn provider<F, Fut, E>(provider: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<String, E>> + Send + 'static,
        E: Into<ProviderError>,
    {
        SqlServerToken {
            fetch: Arc::new(move || {
                let token = provider();
                Box::pin(async move { token.await.map_err(Into::into) })
            }),
        }
    }

    /// A token for one new connection; the error is the provider's, in words (never a token).
    pub(crate) async fn fetch(&self) -> std::result::Result<String, String> {
        let token = (self.fetch)()
            .await
            .map_err(|e| crate::error::error_chain(&*e))?;
        if token.trim().is_empty() {
            return Err("it returned an empty token".into());
        }
        Ok(token)
    }
}

/// How a connection string asks to log in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Login {
    /// Nothing said: SQL authentication with whatever `User Id`/`Password` there are, or an
    /// Entra ID token when the application gives one.
    Unspecified,
    /// SQL authentication: `User Id` and `Password`, or `Authentication=SqlPassword`.
    SqlPassword,
    /// The process's own identity: `Integrated Security` or `Trusted_Connection` true, yes or
    /// SSPI (ADO.NET ignores `User Id` and `Password` then, and so does Nimbus).
    Integrated,
    /// A Microsoft Entra ID access token from the application; `mode` is the `Authentication`
    /// value that asked for it, when one did.
    EntraToken { mode: Option<String> },
}

impl Login {
    /// What a connection string's keys ask for. `get` looks a key up (lower case).
    pub(crate) fn of(get: impl Fn(&[&str]) -> Option<String>) -> Result<Login> {
        let integrated =
            match get(&[
                "integrated security",
                "integratedsecurity",
                "trusted_connection",
            ]) {
                None => false,
                Some(value) => match value.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "sspi" => true,
                    "false" | "no" => false,
                    _ => return Err(NimbusError::config(
                        format!("Integrated Security={value:?} is neither true nor false"),
                        "write Integrated Security=true (or SSPI, yes) to log in as the process's \
                         own Windows or Kerberos identity, or leave it out for SQL authentication",
                    )),
                },
            };
        let authentication = get(&["authentication"]);
        let credentials = get(&["user id", "uid", "user", "username", "password", "pwd"]).is_some();
        match (authentication, integrated) {
            (Some(mode), true) => Err(NimbusError::config(
                format!("Authentication={mode} and Integrated Security both choose how to log in"),
                "keep one of them: Integrated Security=true for the process's own Windows or \
                 Kerberos identity, or Authentication=... for another method",
            )),
            (None, true) => Ok(Login::Integrated),
            (Some(mode), false) => {
                let normal: String = mode
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_lowercase();
                match normal.as_str() {
                    "sqlpassword" => Ok(Login::SqlPassword),
                    "activedirectorypassword"
                    | "activedirectoryintegrated"
                    | "activedirectoryinteractive"
                    | "activedirectoryserviceprincipal"
                    | "activedirectorydevicecodeflow"
                    | "activedirectorymanagedidentity"
                    | "activedirectorymsi"
                    | "activedirectorydefault"
                    | "activedirectoryworkloadidentity" => {
                        Ok(Login::EntraToken { mode: Some(mode) })
                    }
                    _ => Err(NimbusError::config(
                        format!("Authentication={mode} is not a SQL Server login method"),
                        "use Authentication=SqlPassword (User Id and Password), an \
                         ActiveDirectory... method (ActiveDirectoryDefault, \
                         ActiveDirectoryManagedIdentity, ...) with a token from \
                         BusBuilder::sql_server_token, or Integrated Security=true",
                    )),
                }
            }
            (None, false) if credentials => Ok(Login::SqlPassword),
            (None, false) => Ok(Login::Unspecified),
        }
    }

    /// How the connection string's login and the application's token (if any) combine.
    pub(crate) fn with_token(self, token: bool) -> Result<Login> {
        match (self, token) {
            (Login::EntraToken { mode }, _) if token => Ok(Login::EntraToken { mode }),
            (Login::Unspecified, true) => Ok(Login::EntraToken { mode: None }),
            (Login::EntraToken { mode }, _) => Err(NimbusError::config(
                format!(
                    "Authentication={} logs in with a Microsoft Entra ID access token, and \
                     Nimbus acquires none itself",
                    mode.unwrap_or_default()
                ),
                "give the bus a token provider: Bus::builder().sql_server_token(\
                 nimbus::SqlServerToken::provider(|| async { ... })), for example with \
                 azure_identity's DefaultAzureCredential and the scope \
                 https://database.windows.net/.default; or use SQL authentication (User Id, \
                 Password) or Integrated Security=true",
            )),
            (Login::SqlPassword, true) => Err(NimbusError::config(
                "both a SQL login (User Id, Password or Authentication=SqlPassword) and an \
                 Entra ID token were given",
                "remove User Id and Password from the connection string to log in with the \
                 token (as ADO.NET refuses an AccessToken beside them), or drop the token",
            )),
            (Login::Integrated, true) => Err(NimbusError::config(
                "both Integrated Security and an Entra ID token were given",
                "remove Integrated Security from the connection string to log in with the \
                 token, or drop the token to log in as the process's own identity",
            )),
            (login, false) => Ok(login),
        }
    }
}

/// tiberius's login as the process's own identity, where this build has one: Windows
/// authentication (SSPI) on Windows; Kerberos through GSSAPI on other systems with the
/// `sqlserver-kerberos` feature.
#[cfg(any(windows, all(unix, feature = "sqlserver-kerberos")))]
pub(crate) fn integrated() -> Result<tiberius::AuthMethod> {
    Ok(tiberius::AuthMethod::Integrated)
}

/// Without a way to log in as the process's own identity, the error names the one to build in.
#[cfg(not(any(windows, all(unix, feature = "sqlserver-kerberos"))))]
pub(crate) fn integrated() -> Result<tiberius::AuthMethod> {
    Err(NimbusError::config(
        "Integrated Security (the process's own identity) needs Windows, or Kerberos through \
         GSSAPI, which this build of nimbus-bus does not include",
        if cfg!(unix) {
            "enable the `sqlserver-kerberos` feature of nimbus-bus (it links the system's GSSAPI \
             library: install libkrb5-dev or krb5-devel to build, and obtain a Kerberos ticket \
             with kinit, or a keytab, before starting); or use SQL authentication (User Id, \
             Password) or an Entra ID token (BusBuilder::sql_server_token)"
        } else {
            "use SQL authentication (User Id, Password) or an Entra ID token \
             (BusBuilder::sql_server_token)"
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn login(pairs: &[(&str, &str)]) -> Result<Login> {
        Login::of(|keys| {
            keys.iter().find_map(|k| {
                pairs
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.to_string())
            })
        })
    }

    #[test]
    fn the_connection_string_chooses_the_login() {
        assert_eq!(login(&[]).unwrap(), Login::Unspecified);
        assert_eq!(
            login(&[("user id", "app"), ("password", "x")]).unwrap(),
            Login::SqlPassword
        );
        for (key, value) in [
            ("integrated security", "true"),
            ("integrated security", "SSPI"),
            ("integratedsecurity", "yes"),
            ("trusted_connection", "Yes"),
        ] {
            assert_eq!(login(&[(key, value)]).unwrap(), Login::Integrated, "{key}");
        }
        // ADO.NET ignores User Id and Password with Integrated Security.
        assert_eq!(
            login(&[("trusted_connection", "true"), ("user id", "sa")]).unwrap(),
            Login::Integrated
        );
        assert_eq!(
            login(&[("integrated security", "false"), ("user id", "sa")]).unwrap(),
            Login::SqlPassword
        );
        assert_eq!(
            login(&[("authentication", "Active Directory Default")]).unwrap(),
            Login::EntraToken {
                mode: Some("Active Directory Default".into())
            }
        );
        assert_eq!(
            login(&[("authentication", "ActiveDirectoryManagedIdentity")]).unwrap(),
            Login::EntraToken {
                mode: Some("ActiveDirectoryManagedIdentity".into())
            }
        );
        assert_eq!(
            login(&[("authentication", "SqlPassword")]).unwrap(),
            Login::SqlPassword
        );
    }

    #[test]
    fn contradictions_and_unknown_values_are_refused_with_a_fix() {
        for pairs in [
            vec![("integrated security", "maybe")],
            vec![("authentication", "Kerberos")],
            vec![
                ("authentication", "ActiveDirectoryDefault"),
                ("integrated security", "true"),
            ],
        ] {
            let err = login(&pairs).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{pairs:?}: {err}");
        }
    }

    #[test]
    fn a_token_decides_with_the_connection_string() {
        let entra = Login::EntraToken {
            mode: Some("ActiveDirectoryDefault".into()),
        };
        assert_eq!(entra.clone().with_token(true).unwrap(), entra);
        assert_eq!(
            Login::Unspecified.with_token(true).unwrap(),
            Login::EntraToken { mode: None }
        );
        assert_eq!(
            Login::Unspecified.with_token(false).unwrap(),
            Login::Unspecified
        );
        let err = entra.with_token(false).unwrap_err().to_string();
        assert!(
            err.contains("sql_server_token") && err.contains("Fix:"),
            "{err}"
        );
        for login in [Login::SqlPassword, Login::Integrated] {
            let err = login.clone().with_token(true).unwrap_err().to_string();
            assert!(err.contains("Fix:"), "{login:?}: {err}");
            assert_eq!(login.clone().with_token(false).unwrap(), login);
        }
    }

    #[test]
    fn integrated_security_is_there_or_names_the_feature() {
        let result = integrated();
        if cfg!(any(windows, all(unix, feature = "sqlserver-kerberos"))) {
            assert!(result.is_ok());
        } else {
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains("sqlserver-kerberos") && err.contains("Fix:"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn a_provider_is_asked_every_time_and_its_failures_are_words() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let token = SqlServerToken::provider(move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, std::io::Error>(format!("token-{n}")) }
        });
        assert_eq!(token.fetch().await.unwrap(), "token-0");
        assert_eq!(token.fetch().await.unwrap(), "token-1");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let failing =
            SqlServerToken::provider(|| async { Err::<String, _>("no credential found") });
        assert_eq!(failing.fetch().await.unwrap_err(), "no credential found");
        let empty = SqlServerToken::fixed("  ");
        assert!(empty.fetch().await.is_err());
        assert_eq!(SqlServerToken::fixed("t").fetch().await.unwrap(), "t");
        assert_eq!(
            format!("{:?}", SqlServerToken::fixed("secret")),
            "SqlServerToken(..)"
        );
    }
}
