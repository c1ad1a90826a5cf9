//! The conformance suite on SQL Server, with a harness of its own (libtest-mimic) so that its
//! output ends with one plain line saying how many SQL Server tests ran.
//!
//! Its tests need a server, so they are always ignored unless asked for (a run without one
//! reports them as ignored, never as passed). Run them with the connection string of a SQL Server
//! database in `NIMBUS_SQLSERVER` (ADO.NET format):
//!
//! ```text
//! NIMBUS_SQLSERVER='Server=tcp:127.0.0.1,1433;Database=nimbus;User Id=sa;Password=…;TrustServerCertificate=true' \
//!     cargo test -p nimbus-conformance --test sqlserver -- --include-ignored
//! ```
//!
//! Each test makes its own schema with a plain name (`nimbus_test_<id>`), which any SQL
//! Server-compatible server accepts; `sqlserver::hostile_schema_names_work` alone uses a name
//! full of quotes, brackets and spaces. The tests in `without_a_server` need no server and always
//! run.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use libtest_mimic::{Arguments, Trial};
use nimbus::StorageLayout;
use nimbus_conformance::db::{sqlserver_connection_string, SQLSERVER_HOW_TO_RUN};
use nimbus_conformance::{conformance_suite, run_actix, suite, Kind, Runner, Setup};

const TABLE_PER_QUEUE: Setup = Setup {
    kind: Kind::SqlServer,
    layout: StorageLayout::TablePerQueue,
};
const SHARED_TABLE: Setup = Setup {
    kind: Kind::SqlServer,
    layout: StorageLayout::SharedTable,
};

/// How many SQL Server tests started, and how many of those passed.
#[derive(Default)]
struct Counts {
    ran: AtomicUsize,
    passed: AtomicUsize,
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let mut server_tests: Vec<(&'static str, Runner)> =
        conformance_suite!(@trials TABLE_PER_QUEUE, "table_per_queue");
    server_tests.extend(conformance_suite!(@trials SHARED_TABLE, "shared_table"));
    server_tests.push((
        "sqlserver::a_clustered_rowversion_index_is_reported",
        Box::new(|| {
            run_actix(suite::a_clustered_rowversion_index_is_reported(
                TABLE_PER_QUEUE,
            ))
        }),
    ));
    for (name, setup) in [
        (
            "sqlserver::hostile_schema_names_work::table_per_queue",
            TABLE_PER_QUEUE,
        ),
        (
            "sqlserver::hostile_schema_names_work::shared_table",
            SHARED_TABLE,
        ),
    ] {
        server_tests.push((
            name,
            Box::new(move || run_actix(suite::hostile_schema_names_work(setup))),
        ));
    }
    for (name, setup) in [
        (
            "sqlserver::each_message_of_a_batch_keeps_its_own_outcome::table_per_queue",
            TABLE_PER_QUEUE,
        ),
        (
            "sqlserver::each_message_of_a_batch_keeps_its_own_outcome::shared_table",
            SHARED_TABLE,
        ),
    ] {
        server_tests.push((
            name,
            Box::new(move || {
                run_actix(
                    nimbus_conformance::batch::each_message_of_a_batch_keeps_its_own_outcome(setup),
                )
            }),
        ));
    }
    let total = server_tests.len();
    let counts = Arc::new(Counts::default());
    let mut trials: Vec<Trial> = server_tests
        .into_iter()
        .map(|(name, run)| {
            let counts = counts.clone();
            Trial::test(name, move || {
                counts.ran.fetch_add(1, Ordering::SeqCst);
                // A panic is caught by the harness and reported as this test's failure.
                run();
                counts.passed.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .with_ignored_flag(true)
        })
        .collect();
    trials.extend(without_a_server::trials());
    let conclusion = libtest_mimic::run(&args, trials);
    println!(
        "{}",
        summary(
            total,
            counts.ran.load(Ordering::SeqCst),
            counts.passed.load(Ordering::SeqCst),
            sqlserver_connection_string().is_some(),
        )
    );
    conclusion.exit_code()
}

/// The line the run ends with.
fn summary(total: usize, ran: usize, passed: usize, configured: bool) -> String {
    match (ran, configured) {
        (0, false) => format!(
            "SQL Server: none of the {total} SQL Server tests ran: NIMBUS_SQLSERVER is not set \
             (they are listed as ignored). To run them, {SQLSERVER_HOW_TO_RUN}"
        ),
        (0, true) => format!(
            "SQL Server: none of the {total} SQL Server tests ran: they are ignored unless asked \
             for; add -- --include-ignored"
        ),
        (ran, configured) => format!(
            "SQL Server: {ran} of the {total} SQL Server tests ran: {passed} passed, {} failed{}",
            ran - passed,
            if configured {
                ""
            } else {
                " (NIMBUS_SQLSERVER is not set)"
            }
        ),
    }
}

mod without_a_server {
    use libtest_mimic::Trial;
    use nimbus::NimbusError;
    use nimbus_conformance::run_actix;

    /// These need no server and always run.
    pub fn trials() -> Vec<Trial> {
        vec![
            Trial::test(
                "without_a_server::unreachable_server_is_a_clear_error",
                || {
                    run_actix(unreachable_server_is_a_clear_error());
                    Ok(())
                },
            ),
            Trial::test("without_a_server::a_silent_server_times_out", || {
                run_actix(a_silent_server_times_out());
                Ok(())
            }),
            Trial::test(
                "without_a_server::connection_string_errors_name_the_fix",
                || {
                    connection_string_errors_name_the_fix();
                    Ok(())
                },
            ),
            Trial::test("without_a_server::the_summary_says_what_ran", || {
                the_summary_says_what_ran();
                Ok(())
            }),
        ]
    }

    /// A refused TCP connection is a clear error naming server and database, within the connect
    /// timeout, whether or not a SQL Server exists anywhere.
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

    fn build(text: &str) -> Result<(), String> {
        nimbus::Bus::builder()
            .names("X", "1")
            .database_url(text)
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn connection_string_errors_name_the_fix() {
        for (text, needle) in [
            (
                "Server=tcp:h,1433;Authentication=ActiveDirectoryDefault",
                "sql_server_token",
            ),
            ("Server=tcp:h,1433;Authentication=Kerberos", "SqlPassword"),
            ("Server=tcp:h,1433;Integrated Security=maybe", "true"),
            ("Server=tcp:h,1433;Connect Timeout=-1", "Connect Timeout"),
            ("sqlserver://h/db", "ADO.NET connection string"),
        ] {
            let err = build(text).expect_err(text);
            assert!(
                err.contains(needle) && err.contains("Fix:"),
                "{text}: {err}"
            );
        }
        // Seed 003's quick start: accepted where this build can log in as the current user
        // (Windows; Kerberos with the `sqlserver-kerberos` feature), otherwise refused with the
        // feature to enable.
        for text in [
            "Server=localhost;Database=Nimbus;Integrated Security=true;",
            "Server=localhost;Database=Nimbus;Trusted_Connection=yes;",
        ] {
            if let Err(err) = build(text) {
                assert!(
                    err.contains("sqlserver-kerberos") && err.contains("Fix:"),
                    "{text}: {err}"
                );
            }
        }
    }

    fn the_summary_says_what_ran() {
        let none = super::summary(97, 0, 0, false);
        assert!(
            none.starts_with("SQL Server: none of the 97 SQL Server tests ran")
                && none.contains("NIMBUS_SQLSERVER is not set"),
            "{none}"
        );
        let some = super::summary(97, 97, 95, true);
        assert_eq!(
            some,
            "SQL Server: 97 of the 97 SQL Server tests ran: 95 passed, 2 failed"
        );
    }
}
