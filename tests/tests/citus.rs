//! The PostgreSQL conformance suite on a Citus cluster (distributed PostgreSQL): every test's
//! schema is a distributed schema (Citus's schema-based sharding), so its queues and Nimbus's
//! tables live on one of the cluster's worker nodes, and a test with a second schema
//! (`queues_in_another_schema_are_reached_by_address`) sends across nodes.
//!
//! CI runs the suite's core on both layouts ([`CORE`]); `NIMBUS_CITUS_FULL=1` runs all of it.
//!
//! It runs against the coordinator of `NIMBUS_CITUS` (a PostgreSQL URL), or one answering on
//! 127.0.0.1:9700 (`scripts/citus-cluster.sh start` makes one where Citus is installed). With no
//! coordinator, its tests are reported as ignored, never as passed.

use std::process::ExitCode;
use std::time::Duration;

use libtest_mimic::{Arguments, Trial};
use nimbus::StorageLayout;
use nimbus_conformance::db::use_citus;
use nimbus_conformance::{citus, conformance_suite, Kind, Runner, Setup};

const TABLE_PER_QUEUE: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::TablePerQueue,
};
const SHARED_TABLE: Setup = Setup {
    kind: Kind::Postgres,
    layout: StorageLayout::SharedTable,
};

/// The tests of the suite CI runs on Citus (both layouts): sends, receives, competing
/// consumers, retries, delayed delivery, dead letters, events, request/response, sagas, business
/// data in the receive's transaction, the features that keep state in tables of their own, and
/// the SIGKILL tests. `NIMBUS_CITUS_FULL=1` runs every test of the suite instead.
const CORE: &[&str] = &[
    "fifo_order_on_one_receiver",
    "competing_consumers_handle_each_message_once",
    "handler_error_rolls_back_outgoing_and_returns_message",
    "messages_sent_while_no_endpoint_runs_are_handled_after_start",
    "concurrent_auto_create_is_safe",
    "missing_indexes_are_reported_with_their_statement",
    "batch_send_is_atomic_and_ordered",
    "always_failing_handler_ends_in_dead_letters",
    "retry_counts_survive_a_restart",
    "delayed_messages_wait_for_their_time",
    "a_delayed_message_can_be_cancelled_or_rescheduled",
    "dead_letters_can_be_replayed",
    "database_outage_is_survived_and_reported",
    "events_reach_every_subscribed_queue",
    "multicast_events_reach_every_instance",
    "request_gets_its_reply",
    "queues_in_another_schema_are_reached_by_address",
    "a_paused_queue_stops_receiving_until_resumed",
    "a_saga_applies_each_message_once_under_concurrency",
    "a_saga_timeout_reaches_its_instance_or_is_dropped",
    "a_schedule_fires_each_tick_once_across_instances",
    "a_send_with_a_seen_key_is_dropped_within_its_window",
    "the_inbox_runs_handlers_once_per_message_id",
    "ordered_groups_keep_send_order_across_instances",
    "a_group_behind_a_long_run_is_not_held_behind_it",
    "priorities_hand_out_the_highest_first",
    "a_limit_of_handlers_at_once_holds_across_instances",
    "a_rate_limit_holds_across_instances",
    "large_bodies_are_stored_apart_and_removed_with_their_message",
    "sigkill_keeps_business_data_exactly_once",
    "sigkill_keeps_saga_state_exactly_once",
    "sigkill_in_the_middle_loses_nothing",
];

/// The coordinator's URL: `NIMBUS_CITUS`, or 127.0.0.1:9700 when something listens there.
fn coordinator() -> Option<String> {
    if let Ok(url) = std::env::var("NIMBUS_CITUS") {
        return Some(url);
    }
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], 9700));
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2))
        .ok()
        .map(|_| "postgres://postgres@127.0.0.1:9700/postgres?sslmode=disable".to_string())
}

/// How many worker nodes the coordinator has, or why it is not a usable Citus coordinator.
fn worker_nodes(url: &str) -> Result<String, String> {
    actix_rt::System::new().block_on(async {
        let db = nimbus::admin::Database::connect(url)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let workers = db
            .query_scalar(
                "SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0",
                &[],
            )
            .await
            .map_err(|e| format!("{url} is not a Citus coordinator: {e}"))?;
        if workers < 1 {
            return Err(format!(
                "the Citus coordinator at {url} has no worker node (citus_add_node)"
            ));
        }
        Ok(format!("{workers} worker node(s)"))
    })
}

/// Logs the framework's warnings and errors (or what `RUST_LOG` asks for) to standard output.
fn log_to_stdout() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("nimbus=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_thread_names(true)
        .try_init();
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    log_to_stdout();
    let coordinator = coordinator();
    let mut about = None;
    if let Some(url) = &coordinator {
        match worker_nodes(url) {
            Ok(version) => about = Some(version),
            Err(why) => {
                eprintln!("{why}");
                return ExitCode::FAILURE;
            }
        }
        use_citus(url.clone());
    }
    let mut trials: Vec<(&'static str, Runner)> =
        conformance_suite!(@trials TABLE_PER_QUEUE, "table_per_queue");
    trials.extend(conformance_suite!(@trials SHARED_TABLE, "shared_table"));
    let test_of = |name: &str| name.rsplit("::").next().unwrap_or(name).to_string();
    if let Some(unknown) = CORE
        .iter()
        .find(|core| !trials.iter().any(|(name, _)| test_of(name) == **core))
    {
        eprintln!("{unknown} in CORE is no test of the suite");
        return ExitCode::FAILURE;
    }
    if std::env::var_os("NIMBUS_CITUS_FULL").is_none() {
        trials.retain(|(name, _)| CORE.contains(&test_of(name).as_str()));
    }
    trials.push((
        "citus::sigkill_across_nodes_loses_nothing_and_doubles_nothing",
        Box::new(|| {
            citus::sigkill_across_nodes_loses_nothing_and_doubles_nothing(
                TABLE_PER_QUEUE,
                env!("CARGO_BIN_EXE_crash_worker"),
            )
        }),
    ));
    trials.push((
        "citus::a_schema_left_on_the_coordinator_is_warned_about",
        Box::new(|| citus::a_schema_left_on_the_coordinator_is_warned_about(TABLE_PER_QUEUE)),
    ));
    let ignored = coordinator.is_none();
    let to_trials = |list: Vec<(&'static str, Runner)>| -> Vec<Trial> {
        list.into_iter()
            .map(|(name, run)| {
                Trial::test(name, move || {
                    run();
                    Ok(())
                })
                .with_ignored_flag(ignored)
            })
            .collect()
    };
    let trials = to_trials(trials);
    // Stops and starts a node, which would fail every other test running meanwhile: run alone,
    // after them, and only on the cluster scripts/citus-cluster.sh made.
    let mut alone: Vec<(&'static str, Runner)> = Vec::new();
    if citus::cluster_script().is_some() {
        alone.push((
            "citus::a_worker_node_stopped_in_the_middle_loses_nothing",
            Box::new(|| {
                citus::a_worker_node_stopped_in_the_middle_loses_nothing(
                    TABLE_PER_QUEUE,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
    }
    let alone = to_trials(alone);
    if let Some(about) = &about {
        println!("Citus: the suite runs on the coordinator of {about}");
    }
    let conclusion = libtest_mimic::run(&args, trials);
    let alone = libtest_mimic::run(&args, alone);
    if coordinator.is_none() {
        println!(
            "Citus: no coordinator answers (NIMBUS_CITUS is not set and nothing listens on \
             127.0.0.1:9700): the Citus tests were ignored; scripts/citus-cluster.sh start \
             makes a cluster where the Citus extension is installed"
        );
    }
    if conclusion.has_failed() {
        conclusion.exit_code()
    } else {
        alone.exit_code()
    }
}
