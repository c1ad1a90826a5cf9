//! The conformance suite on SQL Server. Its tests need a server, so they are always `#[ignore]`d
//! (a run without one reports them as ignored, never as passed). Run them with the connection
//! string of a SQL Server database in `NIMBUS_SQLSERVER` (ADO.NET format):
//!
//! ```text
//! NIMBUS_SQLSERVER='Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;Password=…;TrustServerCertificate=true' \
//!     cargo test -p nimbus-conformance --test sqlserver -- --include-ignored
//! ```
//!
//! The tests in `without_a_server` need no server and always run.

nimbus_conformance::conformance_suite!(nimbus_conformance::Kind::SqlServer);

mod without_a_server {
    use nimbus::NimbusError;

    /// A refused TCP connection is a clear error naming server and database, within the connect
    /// timeout, whether or not a SQL Server exists anywhere.
    #[actix_rt::test]
    async fn unreachable_server_is_a_clear_error() {
        let result = nimbus::Bus::builder()
            .names("Unreachable", "1")
            .database_url(
                "Server=tcp:127.0.0.1,1;Database=Orders;User Id=sa;Password=s3cret;\
                 TrustServerCertificate=true;Connect Timeout=5",
            )
            .build()
            .expect("a valid connection string")
            .start()
            .await;
        match result {
            Err(e @ NimbusError::Connect { .. }) => {
                let text = e.to_string();
                assert!(text.contains("SQL Server"), "{text}");
                assert!(text.contains("127.0.0.1,1/Orders"), "{text}");
                assert!(text.contains("Fix:"), "{text}");
                assert!(!text.contains("s3cret"), "{text}");
            }
            Err(other) => panic!("expected a connect error, got {other}"),
            Ok(_) => panic!("nothing listens on port 1"),
        }
    }

    /// A server that accepts TCP but never answers the TDS login does not hang the start past the
    /// connect timeout.
    #[actix_rt::test]
    async fn a_silent_server_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let started = std::time::Instant::now();
        let result = nimbus::Bus::builder()
            .names("Silent", "1")
            .database_url(format!(
                "Server=tcp:127.0.0.1,{port};Database=Orders;User Id=sa;Password=x;\
                 TrustServerCertificate=true;Connect Timeout=1"
            ))
            .build()
            .unwrap()
            .start()
            .await;
        drop(listener);
        match result {
            Err(e @ NimbusError::Connect { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&format!("127.0.0.1,{port}/Orders")), "{text}");
            }
            Err(other) => panic!("expected a connect error, got {other}"),
            Ok(_) => panic!("a silent server cannot complete a login"),
        }
        // Bounded by the connect timeout (1 s), not by TCP's or tiberius's own defaults.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn connection_string_errors_name_the_fix() {
        for (text, needle) in [
            (
                "Server=tcp:h,1433;Integrated Security=SSPI",
                "not supported yet",
            ),
            ("Server=tcp:h,1433;Connect Timeout=-1", "Connect Timeout"),
            ("sqlserver://h/db", "ADO.NET connection string"),
        ] {
            let err = match nimbus::Bus::builder()
                .names("X", "1")
                .database_url(text)
                .build()
            {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{text} must be refused"),
            };
            assert!(
                err.contains(needle) && err.contains("Fix:"),
                "{text}: {err}"
            );
        }
    }
}
