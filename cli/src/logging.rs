//! Where the framework's log lines go in the commands that run endpoints or serve pages.

/// Prints the framework's log lines (`tracing` events) on standard error, at `default` level and
/// above unless `RUST_LOG` says otherwise (e.g. `RUST_LOG=nimbus=debug`); colours only on a
/// terminal. Standard output stays the command's report (its JSON line with `--json`). A second
/// call keeps the first call's setting.
///
/// The SQL Server client's own lines stay out: it warns once per connection that it trusts the
/// server's certificate without validation (what a connection string with
/// `TrustServerCertificate=true` asked for), and logs every error the server sends back, which
/// Nimbus reports itself with what it was doing and what to do.
pub fn to_stderr(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{default},tiberius=off")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
