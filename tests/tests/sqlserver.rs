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
use nimbus_conformance::{babelfish, conformance_suite, run_actix, suite, Kind, Runner, Setup};

const TABLE_PER_QUEUE: Setup = Setup {
    kind: Kind::SqlServer,
    layout: StorageLayout::TablePerQueue,
};
const SHARED_TABLE: Setup = Setup {
    kind: Kind::SqlServer,
    layout: StorageLayout::SharedTable,
};

/// How many SQL Server tests started, how many of those passed, and how many failed because of
/// a known Babelfish gap.
#[derive(Default)]
struct Counts {
    ran: AtomicUsize,
    passed: AtomicUsize,
    gaps: AtomicUsize,
    /// Run twice after Babelfish's catalog race (see `babelfish::is_catalog_race`).
    retried: AtomicUsize,
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs one SQL Server test. On Babelfish, a test listed under a gap that fails with the gap's
/// symptom is reported as that gap (and passes the harness); every other failure fails it.
fn run_one(
    name: &'static str,
    run: Runner,
    babelfish: Option<&str>,
    counts: &Counts,
) -> Result<(), libtest_mimic::Failed> {
    counts.ran.fetch_add(1, Ordering::SeqCst);
    let mut outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&run));
    if let (Some(_), Err(payload)) = (babelfish, &outcome) {
        let message = panic_text(payload.as_ref());
        if babelfish::is_catalog_race(&message) {
            // Babelfish lost a concurrent test's dropped table while it checked this one's
            // DDL; SQL Server has no such race. Run once more, and say so.
            counts.retried.fetch_add(1, Ordering::SeqCst);
            println!(
                "note: {name} met Babelfish's catalog race ({}); running it once more",
                message.lines().next().unwrap_or_default()
            );
            outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&run));
        }
    }
    match outcome {
        Ok(()) => {
            counts.passed.fetch_add(1, Ordering::SeqCst);
            if babelfish.is_some() && babelfish::listed(name).is_some() {
                println!(
                    "note: {name} is listed as a Babelfish gap but passed on this server: \
                     take it off the list in tests/src/babelfish.rs"
                );
            }
            Ok(())
        }
        Err(payload) => {
            let message = panic_text(payload.as_ref());
            match babelfish.and_then(|_| babelfish::explaining(name, &message)) {
                Some(gap) => {
                    counts.gaps.fetch_add(1, Ordering::SeqCst);
                    println!("{}", gap.report(name));
                    Ok(())
                }
                None => Err(message.into()),
            }
        }
    }
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
    server_tests.push((
        "sqlserver::body_string_columns_read_as_defined",
        Box::new(|| run_actix(suite::body_string_columns_read_as_defined(TABLE_PER_QUEUE))),
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
    server_tests.push((
        "sqlserver::a_backlog_of_fast_messages_is_received_several_at_a_time",
        Box::new(|| {
            run_actix(
                nimbus_conformance::batch::a_backlog_of_fast_messages_is_received_several_at_a_time(
                    SHARED_TABLE,
                ),
            )
        }),
    ));
    server_tests.push((
        "sqlserver::slow_messages_are_received_one_at_a_time",
        Box::new(|| {
            run_actix(
                nimbus_conformance::batch::slow_messages_are_received_one_at_a_time(
                    TABLE_PER_QUEUE,
                ),
            )
        }),
    ));
    server_tests.push((
        "sqlserver::handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock",
        Box::new(|| {
            run_actix(
                nimbus_conformance::batch::handlers_with_statements_of_their_own_batch_only_where_rows_cannot_deadlock(
                    TABLE_PER_QUEUE,
                ),
            )
        }),
    ));
    server_tests.push((
        "sqlserver::a_queue_in_another_database_on_the_same_server_takes_sends",
        Box::new(|| {
            run_actix(
                suite::a_queue_in_another_database_on_the_same_server_takes_sends(TABLE_PER_QUEUE),
            )
        }),
    ));
    let total = server_tests.len();
    let counts = Arc::new(Counts::default());
    // Only when the server tests are asked for: a run without a server connects nowhere.
    let babelfish: Option<Arc<str>> = match sqlserver_connection_string() {
        Some(connection) if args.include_ignored || args.ignored => {
            run_actix_value(babelfish::version(&connection)).map(Arc::from)
        }
        _ => None,
    };
    if let Some(version) = &babelfish {
        println!(
            "the SQL Server of NIMBUS_SQLSERVER is Babelfish for PostgreSQL ({}); the known \
             Babelfish gaps of tests/src/babelfish.rs apply",
            version.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    let mut trials: Vec<Trial> = server_tests
        .into_iter()
        .map(|(name, run)| {
            let counts = counts.clone();
            let babelfish = babelfish.clone();
            Trial::test(name, move || {
                run_one(name, run, babelfish.as_deref(), &counts)
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
            Ran {
                ran: counts.ran.load(Ordering::SeqCst),
                passed: counts.passed.load(Ordering::SeqCst),
                gaps: counts.gaps.load(Ordering::SeqCst),
            },
            sqlserver_connection_string().is_some(),
            babelfish.as_deref().is_some(),
        )
    );
    let retried = counts.retried.load(Ordering::SeqCst);
    if retried > 0 {
        println!(
            "SQL Server: {retried} test(s) ran twice after Babelfish's catalog race (notes above)"
        );
    }
    conclusion.exit_code()
}

/// What ran: tests started, passed, and failed because of a known Babelfish gap.
#[derive(Clone, Copy)]
struct Ran {
    ran: usize,
    passed: usize,
    gaps: usize,
}

/// The line the run ends with.
fn summary(total: usize, counts: Ran, configured: bool, babelfish: bool) -> String {
    let Ran { ran, passed, gaps } = counts;
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
            "SQL Server: {ran} of the {total} SQL Server tests ran{}: {passed} passed, {}{} failed{}",
            if babelfish { " on Babelfish" } else { "" },
            if babelfish {
                format!("{gaps} failed for a known Babelfish gap (listed above), ")
            } else {
                String::new()
            },
            ran - passed - gaps,
            if configured {
                ""
            } else {
                " (NIMBUS_SQLSERVER is not set)"
            }
        ),
    }
}

/// Runs a future to its end in an actix `System` of its own and returns its value.
fn run_actix_value<T>(future: impl std::future::Future<Output = T>) -> T {
    actix_rt::System::new().block_on(future)
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
            Trial::test(
                "without_a_server::the_guide_lists_every_babelfish_gap",
                || {
                    the_guide_lists_every_babelfish_gap();
                    Ok(())
                },
            ),
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

    /// The guide's SQL Server chapter names every test the list of Babelfish gaps excuses.
    fn the_guide_lists_every_babelfish_gap() {
        let guide = include_str!("../../docs/sql-server.md");
        for gap in nimbus_conformance::babelfish::GAPS {
            for test in gap.tests {
                let (_, name) = test.rsplit_once("::").unwrap_or(("", test));
                let name = match name {
                    "table_per_queue" | "shared_table" => test
                        .trim_end_matches(name)
                        .trim_end_matches("::")
                        .rsplit("::")
                        .next()
                        .unwrap_or(test),
                    other => other,
                };
                assert!(
                    guide.contains(name),
                    "docs/sql-server.md does not name the Babelfish gap of {test}"
                );
            }
        }
    }

    fn the_summary_says_what_ran() {
        let nothing = super::Ran {
            ran: 0,
            passed: 0,
            gaps: 0,
        };
        let none = super::summary(97, nothing, false, false);
        assert!(
            none.starts_with("SQL Server: none of the 97 SQL Server tests ran")
                && none.contains("NIMBUS_SQLSERVER is not set"),
            "{none}"
        );
        let ran = super::Ran {
            ran: 97,
            passed: 94,
            gaps: 2,
        };
        let some = super::summary(97, super::Ran { gaps: 0, ..ran }, true, false);
        assert_eq!(
            some,
            "SQL Server: 97 of the 97 SQL Server tests ran: 94 passed, 3 failed"
        );
        let babelfish = super::summary(97, ran, true, true);
        assert_eq!(
            babelfish,
            "SQL Server: 97 of the 97 SQL Server tests ran on Babelfish: 94 passed, 2 failed \
             for a known Babelfish gap (listed above), 1 failed"
        );
    }
}
