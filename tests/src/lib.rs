//! The conformance suite: one set of behaviours, run unchanged against every backend.
//!
//! Each backend's test file (`tests/sqlite.rs`, `tests/postgres.rs`, `tests/sqlserver.rs`) invokes
//! [`conformance_suite!`] with its [`Kind`]; every test creates its own database (a fresh SQLite
//! file, or a fresh PostgreSQL schema whose name is full of quotes, brackets and spaces) and drops
//! it at the end, because CI reuses the same server.

mod addressing;
pub mod babelfish;
pub mod batch;
pub mod bridge;
pub mod citus;
pub mod db;
mod deduplication;
mod delayed;
pub mod failover;
mod failures;
pub mod groups;
mod leases;
pub mod limits;
mod nservicebus;
mod pause;
pub mod payloads;
mod priorities;
pub mod proxy;
mod pubsub;
mod sagas;
pub mod schedules;
pub mod suite;
pub mod tls_proxy;

pub use db::{Kind, Setup, TestDatabase};

/// One test of the suite, run to its end on the calling thread (a panic is its failure).
pub type Runner = Box<dyn Fn() + Send>;

/// Waits until `done` says so, checking every 10 ms; panics with `what` after `within`, so a
/// test that goes wrong fails instead of hanging.
pub async fn wait_for(what: &str, within: std::time::Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} (waited {within:?})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Waits until the asynchronous check `done` says so, checking every 100 ms; panics with
/// `what` after two minutes (a loaded machine is slow, never that slow).
pub async fn eventually(what: &str, done: impl AsyncFnMut() -> bool) {
    eventually_within(what, std::time::Duration::from_secs(120), done).await;
}

/// As [`eventually`], panicking after `within`: for work whose every step costs a server far
/// more than usual (fifty endpoints on a 2-core Babelfish, whose logins cost half a second of
/// its CPU each).
pub async fn eventually_within(
    what: &str,
    within: std::time::Duration,
    mut done: impl AsyncFnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + within;
    while !done().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// `prefix` and 8 random hex digits: a queue name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Sends the framework's log lines (`RUST_LOG`, by default `nimbus=info`) to the test harness's
/// captured output, so that a failing test shows what the endpoint reported on the way (threads
/// a test starts, handler arbiters included, inherit the capture). Only for libtest's harness:
/// under one that does not capture (libtest-mimic) every test's lines would be printed.
pub fn capture_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("nimbus=info"));
    // Only the first call installs it; the others find it there.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .with_ansi(false)
        .with_thread_names(true)
        .try_init();
}

/// Runs the `sender` program (`sender`: its path, `env!("CARGO_BIN_EXE_sender")`), which sends
/// `count` `Numbered` messages to `queue` from a process of its own, 200 ms apart, and waits for
/// it to finish; fails the test if it failed. Its output holds each send's time.
pub async fn send_from_another_process(
    sender: &str,
    url: &str,
    schema: Option<&str>,
    queue: &str,
    count: u32,
) -> std::process::Output {
    let output = tokio::process::Command::new(sender)
        .args([url, schema.unwrap_or("-"), queue, &count.to_string()])
        .output()
        .await
        .expect("run the sender process");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The arguments of a worker binary (`crash_worker`, `clock_worker`), as
/// [`suite::start_worker`] passes them: `<database-url> <table|shared|nservicebus> [schema]`.
pub struct WorkerArgs {
    pub url: String,
    pub layout: nimbus::StorageLayout,
    pub schema: Option<String>,
}

impl WorkerArgs {
    /// Reads the process's arguments; `usage` is the error when they do not fit.
    pub fn read(usage: &str) -> Result<WorkerArgs, String> {
        let mut args = std::env::args().skip(1);
        let url = args.next().ok_or(usage)?;
        let layout = match args.next().as_deref() {
            Some("table") => nimbus::StorageLayout::TablePerQueue,
            Some("shared") => nimbus::StorageLayout::SharedTable,
            Some("nservicebus") => nimbus::StorageLayout::NServiceBusPostgreSql,
            _ => return Err(usage.into()),
        };
        Ok(WorkerArgs {
            url,
            layout,
            schema: args.next(),
        })
    }
}

/// Runs an async test to its end in an actix `System` of its own, as `#[actix_rt::test]` does.
pub fn run_actix(test: impl std::future::Future<Output = ()>) {
    actix_rt::System::new().block_on(test)
}

/// Expands to two modules, `table_per_queue` and `shared_table`, each with one `#[test]` per
/// behaviour of [`suite`] for the backend `$kind` (a path to a [`Kind`] variant) in that storage
/// layout; on PostgreSQL a third, `nservicebus_postgresql`, in NServiceBus's table shape.
///
/// The SQL Server tests are always `#[ignore]`d, so that a run without a server reports them as
/// ignored, never as passed; run them with
/// `NIMBUS_SQLSERVER=… cargo test -p nimbus-conformance --test sqlserver -- --include-ignored`
/// (see [`db::SQLSERVER_HOW_TO_RUN`]).
#[macro_export]
macro_rules! conformance_suite {
    ($(::)? $($segment:ident)::+) => {
        $crate::conformance_suite!(@pick [$($segment)::+] $($segment)+);
    };
    // The attributes every test of the kind gets, by the last segment of its path.
    (@pick [$($kind:tt)*] SqlServer) => {
        $crate::conformance_suite!(@suite [#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test sqlserver -- --include-ignored"]] $($kind)*);
    };
    // PostgreSQL also runs every test in NServiceBus's PostgreSQL table shape.
    (@pick [$($kind:tt)*] Postgres) => {
        $crate::conformance_suite!(@suite [] $($kind)*);
        mod nservicebus_postgresql {
            $crate::conformance_suite!(@layout [] $($kind)*, ::nimbus::StorageLayout::NServiceBusPostgreSql);
        }
    };
    (@pick [$($kind:tt)*] $last:ident) => {
        $crate::conformance_suite!(@suite [] $($kind)*);
    };
    (@pick [$($kind:tt)*] $first:ident $($rest:ident)+) => {
        $crate::conformance_suite!(@pick [$($kind)*] $($rest)+);
    };
    (@suite $attrs:tt $kind:expr) => {
        mod table_per_queue {
            $crate::conformance_suite!(@layout $attrs $kind, ::nimbus::StorageLayout::TablePerQueue);
        }
        mod shared_table {
            $crate::conformance_suite!(@layout $attrs $kind, ::nimbus::StorageLayout::SharedTable);
        }
    };
    (@layout $attrs:tt $kind:expr, $layout:expr) => {
        const SETUP: $crate::Setup = $crate::Setup { kind: $kind, layout: $layout };
        $crate::conformance_suite!(@names [@tests $attrs SETUP]);
        $crate::conformance_suite!(@sigkill $attrs SETUP);
    };
    // The behaviours of the suite, handed to the arm `$args` names (one list for the
    // `#[test]` functions and for the trials of a custom harness, `@trials`).
    (@names [$($args:tt)*]) => {
        $crate::conformance_suite! {$($args)*;
            fifo_order_on_one_receiver,
            competing_consumers_handle_each_message_once,
            handler_error_rolls_back_outgoing_and_returns_message,
            handler_panic_rolls_back_and_endpoint_keeps_running,
            messages_sent_while_no_endpoint_runs_are_handled_after_start,
            configuration_errors_are_clear,
            unreachable_database_is_a_clear_error,
            a_run_time_queue_name_over_the_limit_is_refused,
            awkward_queue_names_work,
            business_tables_in_the_schema_are_not_queues,
            events_reach_every_subscribed_queue,
            a_refused_subscriber_name_does_not_stop_publishing,
            concurrency_limit_is_never_exceeded,
            missing_indexes_are_reported_with_their_statement,
            missing_tables_without_auto_create_name_the_statement,
            concurrent_auto_create_is_safe,
            a_starting_instance_waits_for_no_running_handler,
            a_send_behind_a_running_handler_commits_with_it_or_says_why_it_waited,
            a_slow_handler_does_not_hide_other_processes_messages,
            peeks_do_not_count_rows_other_instances_hold,
            stop_lets_in_flight_handlers_finish,
            stop_takes_no_new_message,
            batch_send_is_atomic_and_ordered,
            concurrent_sends_share_commits_and_fail_alone,
            version_1_columns_are_null_unless_asked_for,
            a_dropped_queue_is_made_again_not_failed_forever,
            always_failing_handler_ends_in_dead_letters,
            a_send_the_database_refuses_is_a_failed_attempt,
            an_unrecoverable_failure_is_dead_lettered_at_once,
            a_caller_can_set_the_message_id,
            bus_send_inside_a_handler_is_refused_where_it_would_deadlock,
            unreadable_values_become_dead_letters_and_the_queue_flows,
            a_frozen_database_is_a_reported_timeout_not_a_hang,
            a_send_to_a_queue_no_endpoint_made_names_the_closest,
            a_hostile_attempt_count_is_dead_lettered_not_overflowed,
            retry_counts_survive_a_restart,
            panicking_handler_is_retried_then_dead_lettered,
            hanging_handler_is_bounded_by_the_timeout,
            bad_input_goes_to_dead_letters_at_once,
            expired_messages_are_discarded_when_received,
            expired_messages_are_purged,
            delayed_messages_wait_for_their_time,
            a_delayed_message_can_be_cancelled_or_rescheduled,
            a_cancel_racing_the_delivery_has_one_outcome,
            the_delayed_id_index_is_added_to_an_existing_table,
            dead_letters_can_be_replayed,
            database_outage_is_survived_and_reported,
            multicast_events_reach_every_instance,
            competing_events_reach_one_instance,
            lapsed_instance_is_swept_with_its_queue,
            concurrent_sweeps_do_not_fail,
            request_gets_its_reply,
            request_times_out,
            old_subscriptions_table_is_upgraded,
            each_subscription_lapses_by_its_own_subscribers_idle_period,
            the_heartbeat_repairs_a_queue_a_sweep_dropped,
            a_wrongly_defined_index_is_reported_with_its_fix,
            a_handler_under_a_lease_holds_nothing_and_outlives_its_lease,
            stop_hands_a_leased_message_back_without_counting_an_attempt,
            a_paused_queue_stops_receiving_until_resumed,
            a_saga_applies_each_message_once_under_concurrency,
            a_saga_timeout_reaches_its_instance_or_is_dropped,
            a_saga_cancels_its_timeout,
            queues_in_another_schema_are_reached_by_address,
            rows_as_nservicebus_writes_them_are_handled_and_answered,
            subscriptions_are_shared_with_nservicebus_both_ways,
            a_schedule_fires_each_tick_once_across_instances,
            a_paused_schedule_fires_nothing_until_resumed,
            schedules_follow_the_code_that_declares_them,
            missed_ticks_fire_once_or_are_skipped,
            an_existing_schema_gains_the_schedules_table,
            a_send_with_a_seen_key_is_dropped_within_its_window,
            the_inbox_runs_handlers_once_per_message_id,
            ordered_groups_keep_send_order_across_instances,
            a_group_behind_a_long_run_is_not_held_behind_it,
            a_grouped_send_needs_a_queue_that_keeps_groups,
            priorities_hand_out_the_highest_first,
            a_prioritized_send_needs_a_queue_that_keeps_priorities,
            groups_and_priorities_share_one_queue,
            encrypted_bodies_are_read_across_a_key_rotation,
            a_body_that_cannot_be_decrypted_is_dead_lettered,
            compressed_bodies_are_read_by_any_receiver,
            large_bodies_are_stored_apart_and_removed_with_their_message,
            bodies_in_an_object_store_are_swept_once_no_message_names_them,
            a_bridge_moves_commands_and_events_between_databases,
            a_reply_crosses_back_over_the_bridge,
            a_reply_without_the_bridges_header_finds_its_way_back,
            a_limit_of_handlers_at_once_holds_across_instances,
            a_limit_per_key_holds_each_key_and_lets_others_run,
            a_rate_limit_holds_across_instances,
            a_batch_runs_its_messages_under_one_slot,
        }
    };
    (@tests $attrs:tt $setup:expr; $($name:ident),* $(,)?) => {
        $($crate::conformance_suite!(@test $attrs $setup, $name);)*
    };
    (@test [$(#[$attr:meta])*] $setup:expr, $name:ident) => {
        $(#[$attr])*
        #[actix_rt::test]
        async fn $name() {
            $crate::capture_logs();
            $crate::suite::$name($setup).await;
        }
    };
    // For a harness of its own (`harness = false`, libtest-mimic): every test of the suite, its
    // sigkill tests included, as `(name, runner)` pairs for the backend and layout of `$setup`,
    // named `<$prefix>::<test>` as the `#[test]` functions are.
    (@trials $setup:expr, $prefix:literal) => {{
        let mut trials: ::std::vec::Vec<(&'static str, $crate::Runner)> =
            $crate::conformance_suite!(@names [@trial_list $setup, $prefix]);
        trials.push((
            concat!($prefix, "::sigkill_keeps_business_data_exactly_once"),
            ::std::boxed::Box::new(move || {
                $crate::suite::sigkill_keeps_business_data_exactly_once(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_under_a_lease_loses_nothing_and_repeats_only_what_was_in_flight"),
            ::std::boxed::Box::new(move || {
                $crate::suite::sigkill_under_a_lease_loses_nothing_and_repeats_only_what_was_in_flight(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_keeps_saga_state_exactly_once"),
            ::std::boxed::Box::new(move || {
                $crate::suite::sigkill_keeps_saga_state_exactly_once(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_of_the_firing_instance_leaves_no_gap"),
            ::std::boxed::Box::new(move || {
                $crate::schedules::sigkill_of_the_firing_instance_leaves_no_gap(
                    $setup,
                    env!("CARGO_BIN_EXE_clock_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_frees_the_slots_of_a_limit"),
            ::std::boxed::Box::new(move || {
                $crate::limits::sigkill_frees_the_slots_of_a_limit(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_loses_no_body_stored_apart"),
            ::std::boxed::Box::new(move || {
                $crate::payloads::sigkill_loses_no_body_stored_apart(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_loses_no_body_in_an_object_store"),
            ::std::boxed::Box::new(move || {
                $crate::payloads::sigkill_loses_no_body_in_an_object_store(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_of_the_bridge_loses_nothing_and_doubles_nothing"),
            ::std::boxed::Box::new(move || {
                $crate::bridge::sigkill_of_the_bridge_loses_nothing_and_doubles_nothing(
                    $setup,
                    env!("CARGO_BIN_EXE_bridge_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_keeps_each_groups_order"),
            ::std::boxed::Box::new(move || {
                $crate::groups::sigkill_keeps_each_groups_order(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials.push((
            concat!($prefix, "::sigkill_in_the_middle_loses_nothing"),
            ::std::boxed::Box::new(move || {
                $crate::suite::sigkill_in_the_middle_loses_nothing(
                    $setup,
                    env!("CARGO_BIN_EXE_crash_worker"),
                )
            }),
        ));
        trials
    }};
    (@trial_list $setup:expr, $prefix:literal; $($name:ident),* $(,)?) => {
        ::std::vec![$((
            concat!($prefix, "::", stringify!($name)),
            ::std::boxed::Box::new(move || $crate::run_actix($crate::suite::$name($setup)))
                as $crate::Runner,
        )),*]
    };
    (@sigkill [$(#[$attr:meta])*] $setup:expr) => {
        $(#[$attr])*
        #[test]
        fn sigkill_keeps_business_data_exactly_once() {
            $crate::suite::sigkill_keeps_business_data_exactly_once(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_under_a_lease_loses_nothing_and_repeats_only_what_was_in_flight() {
            $crate::suite::sigkill_under_a_lease_loses_nothing_and_repeats_only_what_was_in_flight(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_keeps_saga_state_exactly_once() {
            $crate::suite::sigkill_keeps_saga_state_exactly_once(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_of_the_firing_instance_leaves_no_gap() {
            $crate::schedules::sigkill_of_the_firing_instance_leaves_no_gap(
                $setup,
                env!("CARGO_BIN_EXE_clock_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_frees_the_slots_of_a_limit() {
            $crate::limits::sigkill_frees_the_slots_of_a_limit(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_loses_no_body_stored_apart() {
            $crate::payloads::sigkill_loses_no_body_stored_apart(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_loses_no_body_in_an_object_store() {
            $crate::payloads::sigkill_loses_no_body_in_an_object_store(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_of_the_bridge_loses_nothing_and_doubles_nothing() {
            $crate::bridge::sigkill_of_the_bridge_loses_nothing_and_doubles_nothing(
                $setup,
                env!("CARGO_BIN_EXE_bridge_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_keeps_each_groups_order() {
            $crate::groups::sigkill_keeps_each_groups_order(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }

        $(#[$attr])*
        #[test]
        fn sigkill_in_the_middle_loses_nothing() {
            $crate::suite::sigkill_in_the_middle_loses_nothing(
                $setup,
                env!("CARGO_BIN_EXE_crash_worker"),
            );
        }
    };
}
