//! Golden-file tests: every statement of every dialect, rendered for an awkward schema and queue
//! name, compared whole against `src/sql/golden/<database>/<statement>.sql`: what a reviewer reads
//! and checks against each database's documentation (for T-SQL, SQL Server's: the live suite runs
//! on a SQL Server-compatible server, which is not SQL Server); a change to a statement shows up
//! as a change to its golden file.
//!
//! After an intended change, rewrite the files with
//! `NIMBUS_BLESS=1 cargo test -p nimbus-bus --all-features golden` and review the diff.

use std::path::PathBuf;

use super::dialect::{Dialect, POSTGRES, SQLITE, SQLSERVER};
use crate::names::{QueueName, SchemaName};

/// A schema and a queue name with every character quoting must handle.
const AWKWARD_SCHEMA: &str = "Zeb]ra \"x\" 'y'";
const AWKWARD_QUEUE: &str = "it's [Wal]] \"rus\"";

/// A watch part as the watch statement of that one queue runs it: empty where the dialect
/// has none.
fn one_look(dialect: &Dialect, part: Option<&super::ReadyPart>) -> String {
    part.map(|p| super::watch_sql(dialect.placeholder, "{ready}", &[p]).look)
        .unwrap_or_default()
}

/// Every statement of `dialect`, by name, rendered for the awkward names.
fn rendered(dialect: &'static Dialect) -> Vec<(String, String)> {
    let schema = SchemaName::new(dialect.only_schema.unwrap_or(AWKWARD_SCHEMA))
        .expect("a valid schema name");
    let queue = QueueName::new(AWKWARD_QUEUE).expect("a valid queue name");
    let s = dialect.schema_sql(&schema);
    let q = dialect.queue_sql(&schema, &queue);
    let nsb = dialect.nservicebus_subscription_sql(
        &schema,
        &QueueName::new("SubscriptionRouting").expect("a valid name"),
    );
    let expires = q
        .index_expires
        .clone()
        .expect("the seed 000 table has Index_Expires");
    let mut out: Vec<(&str, String)> = vec![
        ("nservicebus_subscription_table", nsb.create),
        ("nservicebus_subscribe", nsb.subscribe),
        ("nservicebus_subscribers", nsb.subscribers),
        ("schema", s.schema.clone().unwrap_or_default()),
        ("schema_lock", s.schema_lock.clone().unwrap_or_default()),
        ("subscriptions", s.subscriptions.clone()),
        ("dead_letters", s.dead_letters.clone()),
        ("delayed_messages", s.delayed_messages.clone()),
        ("leases", s.leases.clone()),
        ("lease_insert", s.lease_insert.clone()),
        ("lease_renew", s.lease_renew.clone()),
        ("lease_end", s.lease_end.clone()),
        ("lease_take_expired", s.lease_take_expired.clone()),
        ("paused_queues", s.paused_queues.clone()),
        ("queue_pause", s.queue_pause.clone()),
        ("queue_resume", s.queue_resume.clone()),
        ("paused_list", s.paused_list.clone()),
        ("dead_letter_get", s.dead_letter_get.clone()),
        ("sagas", s.sagas.clone()),
        ("saga_get", s.saga_get.clone()),
        ("saga_insert", s.saga_insert.clone()),
        ("saga_update", s.saga_update.clone()),
        ("saga_delete", s.saga_delete.clone()),
        ("saga_list", s.saga_list.clone()),
        ("instances", s.instances.clone()),
        ("instance_lock", s.instance_lock.clone().unwrap_or_default()),
        ("instance_holders", s.instance_holders.clone()),
        ("instance_register", s.instance_register.clone()),
        ("instance_heartbeat", s.instance_heartbeat.clone()),
        ("instance_stop", s.instance_stop.clone()),
        ("instance_list", s.instance_list.clone()),
        ("instance_cleanup", s.instance_cleanup.clone()),
        ("dead_letter_expire", s.dead_letter_expire.clone()),
        (
            "catalog_sagas_has_completed_at",
            s.catalog_sagas_has_completed_at.clone(),
        ),
        (
            "upgrade_sagas_completed_at",
            s.upgrade_sagas_completed_at.clone(),
        ),
        ("saga_complete", s.saga_complete.clone()),
        ("saga_cleanup", s.saga_cleanup.clone()),
        ("monitoring", s.monitoring.clone()),
        ("monitoring_report", s.monitoring_report.clone()),
        ("monitoring_read", s.monitoring_read.clone()),
        ("monitoring_cleanup", s.monitoring_cleanup.clone()),
        ("catalog_table_columns", s.catalog_table_columns.clone()),
        (
            "delayed_messages_index_id",
            s.delayed_messages_index_id.create.clone(),
        ),
        (
            "delayed_messages_index_id.if_missing",
            s.delayed_messages_index_id.create_if_missing.clone(),
        ),
        (
            "delayed_messages_index_id.drop",
            s.delayed_messages_index_id.drop.clone(),
        ),
        ("delayed_cancel", s.delayed_cancel.clone()),
        ("delayed_reschedule", s.delayed_reschedule.clone()),
        ("delayed_list", s.delayed_list.clone()),
        ("messages_cancel_delayed", s.messages_cancel_delayed.clone()),
        (
            "messages_reschedule_delayed",
            s.messages_reschedule_delayed.clone(),
        ),
        ("messages_list_delayed", s.messages_list_delayed.clone()),
        ("schedules", s.schedules.clone()),
        ("schedule_declare", s.schedule_declare.clone()),
        ("schedule_redefine", s.schedule_redefine.clone()),
        ("schedule_retire", s.schedule_retire.clone()),
        ("schedule_list", s.schedule_list.clone()),
        ("schedule_fire", s.schedule_fire.clone()),
        ("schedule_pause", s.schedule_pause.clone()),
        ("schedule_resume", s.schedule_resume.clone()),
        ("deduplication", s.deduplication.clone()),
        ("deduplication_claim", s.deduplication_claim.clone()),
        (
            "deduplication_claim_many",
            s.deduplication_claim_many.clone(),
        ),
        (
            "deduplication_expire_many",
            s.deduplication_expire_many.clone().unwrap_or_default(),
        ),
        ("deduplication_cleanup", s.deduplication_cleanup.clone()),
        ("deduplication_release", s.deduplication_release.clone()),
        ("deduplication_scopes", s.deduplication_scopes.clone()),
        ("deduplication_keys", s.deduplication_keys.clone()),
        ("limits", s.limits.clone()),
        ("limit_take", s.limit_take.clone()),
        ("limit_state", s.limit_state.clone()),
        ("limit_slots", s.limit_slots.clone()),
        ("limit_held", s.limit_held.clone()),
        ("limits_list", s.limits_list.clone()),
        ("limits_cleanup", s.limits_cleanup.clone()),
        ("bodies", s.bodies.clone()),
        ("body_insert", s.body_insert.clone()),
        ("body_fetch", s.body_fetch.clone()),
        ("bodies_present", s.bodies_present.clone()),
        ("body_delete", s.body_delete.clone()),
        ("body_dead_lettered", s.body_dead_lettered.clone()),
        ("body_replayed", s.body_replayed.clone()),
        ("bodies_expire", s.bodies_expire.clone()),
        (
            "bodies_dead_letter_expire",
            s.bodies_dead_letter_expire.clone(),
        ),
        ("bodies_drop_queue", s.bodies_drop_queue.clone()),
        ("bodies_summary", s.bodies_summary.clone()),
        (
            "handler_statement_timeout",
            s.handler_statement_timeout.clone().unwrap_or_default(),
        ),
        (
            "upgrade_subscriptions_last_seen_at",
            s.upgrade_subscriptions_last_seen_at.clone(),
        ),
        ("shared_messages", s.shared_messages.clone()),
        (
            "shared_messages_index_dequeue",
            s.shared_messages_index_dequeue.create.clone(),
        ),
        (
            "shared_messages_index_dequeue.if_missing",
            s.shared_messages_index_dequeue.create_if_missing.clone(),
        ),
        ("messages_insert", s.messages_insert.clone()),
        ("messages_receive", s.messages_receive.clone()),
        ("messages_peek", s.messages_peek.clone()),
        (
            "messages_ready",
            one_look(dialect, s.messages_ready.as_ref()),
        ),
        ("messages_purge_expired", s.messages_purge_expired.clone()),
        (
            "messages_delete_destination",
            s.messages_delete_destination.clone(),
        ),
        ("messages_count", s.messages_count.clone()),
        ("messages_browse", s.messages_browse.clone()),
        ("delayed_insert", s.delayed_insert.clone()),
        ("delayed_take_due", s.delayed_take_due.clone()),
        ("dead_letter_insert", s.dead_letter_insert.clone()),
        ("dead_letter_take", s.dead_letter_take.clone()),
        ("dead_letter_list", s.dead_letter_list.clone()),
        ("subscription_upsert", s.subscription_upsert.clone()),
        ("subscription_list", s.subscription_list.clone()),
        ("subscription_refresh", s.subscription_refresh.clone()),
        ("subscription_delete", s.subscription_delete.clone()),
        ("subscription_sweep", s.subscription_sweep.clone()),
        (
            "subscription_count_for_queue",
            s.subscription_count_for_queue.clone(),
        ),
        ("subscription_all", s.subscription_all.clone()),
        (
            "catalog_has_last_seen_at",
            s.catalog_has_last_seen_at.clone(),
        ),
        ("catalog_list_indexes", s.catalog_list_indexes.clone()),
        (
            "catalog_index_definitions",
            s.catalog_index_definitions.clone(),
        ),
        (
            "shared_messages_index_dequeue.drop",
            s.shared_messages_index_dequeue.drop.clone(),
        ),
        (
            "queue_index_rowversion.drop",
            q.index_rowversion.drop.clone(),
        ),
        ("queue_index_expires.drop", expires.drop.clone()),
        ("catalog_table_exists", s.catalog_table_exists.clone()),
        ("savepoint", s.savepoint.clone()),
        (
            "upgrade_subscriptions_idle_seconds",
            s.upgrade_subscriptions_idle_seconds.clone(),
        ),
        (
            "catalog_has_idle_seconds",
            s.catalog_has_idle_seconds.clone(),
        ),
        ("catalog_list_tables", s.catalog_list_tables.clone()),
        ("savepoint_rollback", s.savepoint_rollback.clone()),
        ("savepoint_release", s.savepoint_release.clone()),
        (
            "catalog_citus_installed",
            s.catalog_citus_installed.clone().unwrap_or_default(),
        ),
        (
            "catalog_citus_undistributed",
            s.catalog_citus_undistributed.clone().unwrap_or_default(),
        ),
        (
            "table_dead_rows",
            s.table_dead_rows.clone().unwrap_or_default(),
        ),
        ("wake_listen", s.wake_listen.clone().unwrap_or_default()),
        ("wake_announce", s.wake_announce.clone().unwrap_or_default()),
        (
            "wake_announce_one",
            s.wake_announce_one.clone().unwrap_or_default(),
        ),
        (
            "messages_vacuum",
            s.messages_vacuum.clone().unwrap_or_default(),
        ),
        ("queue_vacuum", q.vacuum.clone().unwrap_or_default()),
        (
            "queue_receive_batch",
            q.receive_batch.clone().unwrap_or_default(),
        ),
        (
            "messages_receive_batch",
            s.messages_receive_batch.clone().unwrap_or_default(),
        ),
        ("queue_table", q.create_table.clone()),
        ("queue_index_rowversion", q.index_rowversion.create.clone()),
        (
            "queue_index_rowversion.if_missing",
            q.index_rowversion.create_if_missing.clone(),
        ),
        ("queue_index_expires", expires.create.clone()),
        (
            "queue_index_expires.if_missing",
            expires.create_if_missing.clone(),
        ),
        (
            "queue_body_string",
            q.body_string.clone().unwrap_or_default(),
        ),
        (
            "queue_body_string_text",
            q.body_string_text.clone().unwrap_or_default(),
        ),
        ("queue_drop", q.drop.clone()),
        ("queue_group_columns", q.groups.columns.clone()),
        ("queue_index_group", q.groups.index_group.create.clone()),
        (
            "queue_index_group.if_missing",
            q.groups.index_group.create_if_missing.clone(),
        ),
        (
            "queue_index_group_position",
            q.groups.index_group_position.create.clone(),
        ),
        ("queue_insert_grouped", q.groups.insert.clone()),
        ("queue_receive_grouped", q.groups.receive.clone()),
        (
            "queue_receive_batch_grouped",
            q.groups.receive_batch.clone().unwrap_or_default(),
        ),
        (
            "queue_receive_batch_grouped_bounded",
            q.groups.receive_batch_bounded.clone().unwrap_or_default(),
        ),
        ("queue_groups", q.groups.list.clone()),
        ("queue_priority_column", q.priorities.column.clone()),
        ("queue_index_priority", q.priorities.index.create.clone()),
        (
            "queue_index_priority.if_missing",
            q.priorities.index.create_if_missing.clone(),
        ),
        ("queue_insert_priority", q.priorities.insert.clone()),
        ("queue_receive_priority", q.priorities.receive.clone()),
        (
            "queue_receive_batch_priority",
            q.priorities.receive_batch.clone().unwrap_or_default(),
        ),
        ("queue_priorities", q.priorities.list.clone()),
        (
            "messages_priority_column",
            s.shared_priorities.column.clone(),
        ),
        (
            "messages_index_priority",
            s.shared_priorities.index.create.clone(),
        ),
        (
            "messages_index_priority.if_missing",
            s.shared_priorities.index.create_if_missing.clone(),
        ),
        (
            "messages_insert_priority",
            s.shared_priorities.insert.clone(),
        ),
        (
            "messages_receive_priority",
            s.shared_priorities.receive.clone(),
        ),
        (
            "messages_receive_batch_priority",
            s.shared_priorities
                .receive_batch
                .clone()
                .unwrap_or_default(),
        ),
        ("messages_priorities", s.shared_priorities.list.clone()),
        ("messages_group_columns", s.shared_groups.columns.clone()),
        ("messages_index_group", s.shared_groups.index.create.clone()),
        (
            "messages_index_group.if_missing",
            s.shared_groups.index.create_if_missing.clone(),
        ),
        ("messages_insert_grouped", s.shared_groups.insert.clone()),
        ("messages_receive_grouped", s.shared_groups.receive.clone()),
        (
            "messages_receive_batch_grouped",
            s.shared_groups.receive_batch.clone().unwrap_or_default(),
        ),
        (
            "messages_receive_batch_grouped_bounded",
            s.shared_groups
                .receive_batch_bounded
                .clone()
                .unwrap_or_default(),
        ),
        ("messages_groups", s.shared_groups.list.clone()),
        (
            "queue_insert_grouped_priority",
            q.groups.prioritized.insert.clone(),
        ),
        (
            "queue_receive_grouped_priority",
            q.groups.prioritized.receive.clone(),
        ),
        (
            "queue_receive_batch_grouped_priority",
            q.groups
                .prioritized
                .receive_batch
                .clone()
                .unwrap_or_default(),
        ),
        (
            "messages_insert_grouped_priority",
            s.shared_groups.prioritized.insert.clone(),
        ),
        (
            "messages_receive_grouped_priority",
            s.shared_groups.prioritized.receive.clone(),
        ),
        (
            "messages_receive_batch_grouped_priority",
            s.shared_groups
                .prioritized
                .receive_batch
                .clone()
                .unwrap_or_default(),
        ),
        ("queue_insert", q.insert.clone()),
        ("queue_receive", q.receive.clone()),
        ("queue_peek", q.peek.clone()),
        ("queue_ready", one_look(dialect, q.ready.as_ref())),
        (
            // A queue table and a queue of the shared table, watched together.
            "watch_wait",
            match (&s.watch_wait, &q.ready, &s.messages_ready) {
                (Some(wait), Some(table), Some(shared)) => {
                    super::watch_sql(dialect.placeholder, wait, &[table, shared]).wait
                }
                _ => String::new(),
            },
        ),
        ("queue_purge_expired", q.purge_expired.clone()),
        ("queue_count", q.count.clone()),
        ("queue_browse", q.browse.clone()),
    ];
    // Batched sends: three rows in one INSERT, where the dialect writes batches that way.
    if dialect.rows_per_insert > 1 {
        for (name, single) in [
            ("queue_insert.3_rows", &q.insert),
            ("messages_insert.3_rows", &s.messages_insert),
        ] {
            let many = super::multi_row_insert(dialect, single, 7, 3)
                .expect("the insert has a VALUES tuple of 7 parameters");
            out.push((name, many));
        }
    }
    // NServiceBus's PostgreSQL table shape, where the database has it.
    if dialect.nservicebus_files.is_some() {
        let layout = crate::StorageLayout::NServiceBusPostgreSql;
        let n = dialect.queue_sql_for(layout, &schema, &queue);
        let ns = dialect.schema_sql_for(layout, &schema);
        out.extend([
            ("nservicebus.catalog_list_tables", ns.catalog_list_tables),
            ("nservicebus.queue_table", n.create_table.clone()),
            (
                "nservicebus.queue_index_seq",
                n.index_rowversion.create.clone(),
            ),
            (
                "nservicebus.queue_index_seq.if_missing",
                n.index_rowversion.create_if_missing.clone(),
            ),
            (
                "nservicebus.queue_index_seq.drop",
                n.index_rowversion.drop.clone(),
            ),
            ("nservicebus.queue_insert", n.insert.clone()),
            ("nservicebus.queue_receive", n.receive.clone()),
            (
                "nservicebus.queue_receive_batch",
                n.receive_batch.clone().unwrap_or_default(),
            ),
            ("nservicebus.queue_peek", n.peek.clone()),
            ("nservicebus.queue_purge_expired", n.purge_expired.clone()),
            ("nservicebus.queue_browse", n.browse.clone()),
        ]);
        let many = super::multi_row_insert(dialect, &n.insert, 5, 3)
            .expect("the insert has a VALUES tuple of 5 parameters");
        out.push(("nservicebus.queue_insert.3_rows", many));
    }
    out.sort_by(|a, b| a.0.cmp(b.0));
    out.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
}

/// The rendered text of statement `name` (empty when there is none, which the assertions show).
fn statement(statements: &[(String, String)], name: &str) -> String {
    statements
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.clone())
        .unwrap_or_default()
}

fn golden_dir(dialect: &Dialect) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/sql/golden")
        .join(dialect.folder)
}

fn check(dialect: &'static Dialect) {
    let dir = golden_dir(dialect);
    let bless = std::env::var_os("NIMBUS_BLESS").is_some();
    let mut mismatches = Vec::new();
    let statements = rendered(dialect);
    for (name, text) in &statements {
        let path = dir.join(format!("{name}.sql"));
        if bless {
            std::fs::create_dir_all(&dir).expect("create the golden folder");
            std::fs::write(&path, text).expect("write a golden file");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(golden) if golden == *text => {}
            Ok(golden) => mismatches.push(format!(
                "{}: rendered statement differs from its golden file\n--- golden\n{golden}\n--- rendered\n{text}",
                path.display()
            )),
            Err(e) => mismatches.push(format!("{}: {e}", path.display())),
        }
    }
    // No golden file without a statement: a removed statement removes its file.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let stem = name.trim_end_matches(".sql");
            if !statements.iter().any(|(n, _)| n == stem) {
                mismatches.push(format!("{}: no statement has this golden file", name));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} statement(s) of {} differ (NIMBUS_BLESS=1 rewrites the files after an intended change):\n{}",
        mismatches.len(),
        dialect.name,
        mismatches.join("\n\n")
    );
}

#[test]
fn sqlserver_statements_match_their_golden_files() {
    check(&SQLSERVER);
}

#[test]
fn postgres_statements_match_their_golden_files() {
    check(&POSTGRES);
}

#[test]
fn sqlite_statements_match_their_golden_files() {
    check(&SQLITE);
}

/// What the seeds and SQL Server's documentation require of the T-SQL, checked on top of the
/// golden files so that a blessed regression still fails.
#[test]
fn sqlserver_statements_keep_the_seed_guarantees() {
    let statements = rendered(&SQLSERVER);
    let get = |name: &str| statement(&statements, name);
    for receive in [
        "queue_receive",
        "messages_receive",
        "delayed_take_due",
        "lease_take_expired",
    ] {
        let text = get(receive);
        assert!(
            text.contains("WITH (UPDLOCK, READPAST, ROWLOCK)"),
            "{receive} must skip and lock rows as seed 000 says:\n{text}"
        );
        assert!(text.contains("OUTPUT deleted."), "{receive}: {text}");
        // One form SQL Server and Babelfish both accept: no DELETE through a CTE, and only
        // plain deleted.<column> in OUTPUT (no CASE, ISNULL or CAST over deleted.*), which goes
        // INTO a table variable; one DELETE statement, so the receive stays atomic.
        assert!(!text.trim_start().starts_with("WITH"), "{receive}: {text}");
        assert_eq!(text.matches("DELETE FROM").count(), 1, "{receive}: {text}");
        assert!(text.contains("INTO @"), "{receive}: {text}");
        let output = output_clause(&text);
        for item in output.split(',').map(str::trim) {
            assert!(
                item.starts_with("deleted.[") && item.ends_with(']') && !item.contains('('),
                "{receive}: OUTPUT carries only plain deleted columns, not {item:?}:\n{text}"
            );
        }
        // The deleted rows are chosen by the locking subquery, never by a bare scan: the
        // DELETE itself reads past rows other receivers hold too.
        assert!(
            text.contains("DELETE FROM") && text.contains("WITH (ROWLOCK, READPAST)"),
            "{receive}: {text}"
        );
    }
    // One row, oldest first (seed 000).
    let receive = get("queue_receive");
    assert!(receive.contains("WHERE [RowVersion] = ("), "{receive}");
    assert!(receive.contains("SELECT TOP (1) [RowVersion]"), "{receive}");
    assert!(receive.contains("ORDER BY [RowVersion]"), "{receive}");
    let shared = get("messages_receive");
    assert!(shared.contains("SELECT TOP (1) [MessageId]"), "{shared}");
    assert!(
        shared.contains("ORDER BY [VisibleAfter], [MessageId]"),
        "{shared}"
    );
    let due = get("delayed_take_due");
    assert!(due.contains("SELECT TOP (@P1) [RowVersion]"), "{due}");
    assert!(
        due.trim_end().ends_with("ORDER BY [Due], [RowVersion];"),
        "due messages come back in due order: {due}"
    );
    // The peek: max - min + 1 (seed 000), skipping locked rows with locking reads even where
    // READ_COMMITTED_SNAPSHOT is on (NServiceBus's PeekText: READPAST, READCOMMITTEDLOCK).
    let peek = get("queue_peek");
    assert!(
        peek.contains("MAX([RowVersion]) - MIN([RowVersion]) + 1"),
        "{peek}"
    );
    for peek in [
        "queue_peek",
        "messages_peek",
        "queue_ready",
        "messages_ready",
        "watch_wait",
    ] {
        assert!(
            get(peek).contains("WITH (READPAST, READCOMMITTEDLOCK)"),
            "{peek}: {}",
            get(peek)
        );
    }
    // BodyString as NServiceBus defines it (AddMessageBodyStringColumn).
    assert!(
        get("queue_body_string").contains("ADD [BodyString] AS CAST([Body] AS nvarchar(max))"),
        "{}",
        get("queue_body_string")
    );
    // and the form that reads as the body's text.
    assert!(
        get("queue_body_string_text").contains("ADD [BodyString] AS CAST([Body] AS varchar(max))"),
        "{}",
        get("queue_body_string_text")
    );
    // The index check reads the definition, as NServiceBus's does: type and key columns.
    let definitions = get("catalog_index_definitions");
    for needle in [
        "sys.index_columns",
        "[type_desc]",
        "[key_ordinal]",
        "[is_included_column]",
    ] {
        assert!(definitions.contains(needle), "{needle}: {definitions}");
    }
    // The awkward names appear only bracketed, their `]` doubled.
    let bracketed_queue = "[it's [Wal]]]] \"rus\"]";
    assert!(get("queue_insert").contains(bracketed_queue));
    for (name, text) in &statements {
        let outside = text
            .replace(bracketed_queue, "")
            .replace("[Zeb]]ra \"x\" 'y']", "");
        assert!(
            !outside.contains("Wal]") && !outside.contains("Zeb]ra"),
            "{name} has a name outside its brackets:\n{text}"
        );
    }
    // Values are parameters: no value is spliced into the text.
    assert!(get("queue_insert").contains("@P7"));
    // What is sent carries no comment header (the files keep it).
    assert!(!get("queue_insert").contains("--"));
}

/// The column list of a statement's `OUTPUT` clause (up to its `INTO`).
fn output_clause(text: &str) -> String {
    let after = text
        .split_once("OUTPUT ")
        .map(|(_, a)| a)
        .unwrap_or_default();
    let end = after.find("INTO").unwrap_or(after.len());
    after[..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// PostgreSQL's peeks leave out the rows receives hold, so that idle receivers are not sent
/// after rows nobody can take: both ends of the per-queue estimate and every counted row of the
/// shared table are tested with `SKIP LOCKED`, under the weakest lock that can test.
#[test]
fn postgres_peeks_skip_the_rows_receives_hold() {
    let statements = rendered(&POSTGRES);
    let get = |name: &str| statement(&statements, name);
    let queue = get("queue_peek");
    assert_eq!(
        queue.matches("FOR KEY SHARE SKIP LOCKED").count(),
        2,
        "both ends of the estimate skip held rows: {queue}"
    );
    let shared = get("messages_peek");
    assert!(shared.contains("FOR KEY SHARE SKIP LOCKED"), "{shared}");
    assert!(shared.contains("LIMIT 1000"), "{shared}");
}
