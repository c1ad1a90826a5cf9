//! The `nimbus` binary end to end, on a fresh SQLite file and a fresh PostgreSQL schema (which
//! must be reachable: the test fails, never skips).
//!
//! This file is over 1,000 lines because it runs every command of the tool end to end, one test
//! each.

use std::process::Command;

use nimbus::admin::{ConnectOptions, Database, RawMessage};
use nimbus::{Handler, HandlerContext, HandlerError};

/// A command the test endpoint handles (so it receives), which no test message is.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Cli.Ping")]
struct Ping;

struct Nobody;

impl Handler<Ping> for Nobody {
    async fn handle(&self, _m: Ping, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// The PostgreSQL server of the tests: `NIMBUS_POSTGRES`, else the local one.
fn postgres_url() -> String {
    std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Drops a test's PostgreSQL schema with everything in it.
async fn drop_schema(url: &str, schema: &str) {
    let db = Database::connect(url)
        .await
        .expect("PostgreSQL is reachable");
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(schema)))
        .await
        .expect("drop the test schema");
}

/// Runs `test` on a fresh SQLite file (named after `what`), removed afterwards.
async fn on_sqlite(what: &str, test: impl AsyncFnOnce(&str, Option<&str>)) {
    let path = std::env::temp_dir().join(format!("nimbus-{what}-{}.db", unique()));
    test(&format!("sqlite://{}", path.display()), None).await;
    let _ = std::fs::remove_file(&path);
}

/// Runs `test` in a fresh PostgreSQL schema (named after `what`), dropped afterwards.
async fn on_postgres(what: &str, test: impl AsyncFnOnce(&str, Option<&str>)) {
    let url = postgres_url();
    let schema = format!("nimbus {what} {}", unique());
    test(&url, Some(&schema)).await;
    drop_schema(&url, &schema).await;
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Runs `nimbus` with `args`; returns (success, stdout, stderr).
fn nimbus(database: &str, schema: Option<&str>, args: &[&str]) -> (bool, String, String) {
    nimbus_with_env(database, schema, &[], args)
}

/// Runs `nimbus` as [`nimbus`] does, with `env` added to its environment.
fn nimbus_with_env(
    database: &str,
    schema: Option<&str>,
    env: &[(&str, &std::path::Path)],
    args: &[&str],
) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nimbus"));
    command.envs(env.iter().copied());
    command.arg("--database").arg(database);
    if let Some(schema) = schema {
        command.arg("--schema").arg(schema);
    }
    let output = command.args(args).output().expect("run nimbus");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `nimbus` as [`nimbus`] does, on a blocking thread: a bus running on the test's own
/// thread keeps running meanwhile. On SQLite a command waiting for the file's write lock would
/// otherwise wait for a bus that cannot go on to release it.
async fn nimbus_beside_a_bus(
    database: &str,
    schema: Option<&str>,
    args: &[&str],
) -> (bool, String, String) {
    let database = database.to_string();
    let schema = schema.map(str::to_string);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        nimbus(&database, schema.as_deref(), &args)
    })
    .await
    .expect("run nimbus on a blocking thread")
}

/// The same flow on any database: verify fails before apply and names the statement; apply,
/// verify; peek shows a message without removing it; dead letters and subscriptions list.
async fn flow(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "verify", "--queue", "Sales"]);
    assert!(!ok, "verify fails on an empty database");
    assert!(
        err.contains("Fix:") && err.contains("CREATE TABLE"),
        "{err}"
    );
    assert!(
        err.contains("nimbus schema apply"),
        "the fix names this tool's command: {err}"
    );

    let (ok, out, err) = nimbus(url, schema, &["schema", "print", "--queue", "Sales"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("NimbusSubscriptions") && out.contains("Sales"),
        "{out}"
    );

    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Sales"]);
    assert!(ok, "{err}");
    let (ok, out, err) = nimbus(
        url,
        schema,
        &["--json", "schema", "verify", "--queue", "Sales"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"verified\":true"), "{out}");
    // A missing index fails the check (a deploy gate), with the statement that makes it.
    let index = if url.starts_with("postgres") {
        format!(
            "{}.{}",
            Database::connect(url)
                .await
                .expect("connect")
                .quote(schema.unwrap_or("public")),
            "\"Sales_Index_RowVersion\""
        )
    } else {
        "\"Sales_Index_RowVersion\"".to_string()
    };
    Database::connect_with(url, {
        let mut o = ConnectOptions::new();
        if let Some(schema) = schema {
            o = o.schema(schema);
        }
        o
    })
    .await
    .expect("connect")
    .execute(&format!("DROP INDEX {index}"))
    .await
    .expect("drop an index");
    let (ok, out, err) = nimbus(
        url,
        schema,
        &["--json", "schema", "verify", "--queue", "Sales"],
    );
    assert!(!ok, "a missing index fails verify: {out}");
    assert!(out.contains("\"verified\":false"), "{out}");
    assert!(
        err.contains("Sales_Index_RowVersion") && err.contains("nimbus schema apply"),
        "{err}"
    );
    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Sales"]);
    assert!(ok, "{err}");
    let (ok, _, err) = nimbus(url, schema, &["schema", "verify", "--queue", "Sales"]);
    assert!(ok, "apply made the index again: {err}");

    let mut options = ConnectOptions::new();
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    let db = Database::connect_with(url, options).await.expect("connect");
    db.insert_raw(
        "Sales",
        &RawMessage::new(
            r#"{"NServiceBus.EnclosedMessageTypes":"Shop.PlaceOrder"}"#,
            br#"{"order":7}"#.to_vec(),
        ),
    )
    .await
    .expect("a message");
    let (ok, out, err) = nimbus(url, schema, &["--json", "peek", "Sales"]);
    assert!(ok, "{err}");
    let peeked: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        peeked["messages"][0]["body"]["order"], 7,
        "a JSON body is JSON, not a string: {out}"
    );
    assert_eq!(
        peeked["messages"][0]["headers"]["NServiceBus.EnclosedMessageTypes"], "Shop.PlaceOrder",
        "{out}"
    );
    assert_eq!(
        db.queue_depth("Sales").await.expect("depth"),
        1,
        "peek removes nothing"
    );
    // A queue named in the wrong case is an unknown queue with a suggestion, not a raw
    // database error.
    let (ok, _, err) = nimbus(url, schema, &["peek", "sales"]);
    assert!(!ok, "peeking a queue that does not exist fails");
    assert!(
        err.contains("did you mean \"Sales\"") && !err.contains("QueueName("),
        "{err}"
    );

    // A schema without the framework's tables is an error that says what to check, not an
    // empty list.
    let (ok, _, err) = nimbus(url, Some("no_such_schema_here"), &["queues"]);
    assert!(
        !ok && err.contains("no_such_schema_here") && err.contains("--schema"),
        "{err}"
    );
    let (ok, _, err) = nimbus(url, schema, &["--layout", "shared", "queues"]);
    assert!(!ok && err.contains("NimbusMessages"), "{err}");

    let (ok, out, err) = nimbus(url, schema, &["--json", "queues"]);
    assert!(ok, "{err}");
    let queues: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let sales = queues["queues"]
        .as_array()
        .and_then(|q| q.iter().find(|q| q["queue"] == "Sales"))
        .unwrap_or_else(|| panic!("Sales is listed: {out}"));
    assert_eq!(sales["depth"], 1);

    let (ok, out, err) = nimbus(url, schema, &["--json", "dead-letters", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"dead_letters\":[]"), "{out}");

    // Two messages nobody can handle become dead letters: the one peeked above (no handler for
    // its type) and one of another unknown type.
    db.insert_raw(
        "Sales",
        &RawMessage::new(
            r#"{"NServiceBus.EnclosedMessageTypes":"Shop.Unknown"}"#,
            b"{}".to_vec(),
        ),
    )
    .await
    .expect("a message");
    let mut builder = nimbus::Bus::builder()
        .names("Sales", "sales-1")
        .database_url(url)
        .peek_delay(std::time::Duration::from_millis(100))
        .handler(Nobody);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder
        .build()
        .expect("config")
        .start()
        .await
        .expect("start");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.dead_letters(10).await.expect("list").len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "both are dead-lettered"
        );
        actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    bus.stop().await.expect("stop");
    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "--json",
            "dead-letters",
            "list",
            "--type",
            "Shop.PlaceOrder",
        ],
    );
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        listed["dead_letters"].as_array().map(Vec::len),
        Some(1),
        "{out}"
    );
    // Each dead letter says what it was and why it failed.
    assert_eq!(
        listed["dead_letters"][0]["type"], "Shop.PlaceOrder",
        "{out}"
    );
    let reason = listed["dead_letters"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("Shop.PlaceOrder"),
        "the reason names the type: {out}"
    );
    let (ok, out, err) = nimbus(url, schema, &["dead-letters", "list"]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .next()
            .is_some_and(|h| h.contains("type") && h.contains("reason"))
            && out.contains("Shop.Unknown"),
        "{out}"
    );
    // The reason column starts with the cause, not with the id and type the other columns show.
    let unknown = out
        .lines()
        .find(|l| l.contains("Shop.Unknown"))
        .unwrap_or_default();
    let cause = listed_reason_of(url, schema, "Shop.Unknown");
    assert!(
        !cause.is_empty() && unknown.contains(&cause[..cause.len().min(60)]),
        "the cause {cause:?} is in the row: {unknown}"
    );
    let (ok, out, err) = nimbus(
        url,
        schema,
        &["dead-letters", "replay-all", "--type", "Shop.PlaceOrder"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("replayed 1"), "{out}");
    assert_eq!(
        db.queue_depth("Sales").await.expect("depth"),
        1,
        "back in its queue"
    );
    let (ok, _, err) = nimbus(url, schema, &["dead-letters", "purge", "--queue", "Sales"]);
    assert!(
        !ok && err.contains("1 dead letter(s) match") && err.contains("--yes"),
        "{err}"
    );
    let (ok, out, err) = nimbus(
        url,
        schema,
        &["dead-letters", "purge", "--queue", "Sales", "--yes"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("purged 1"), "{out}");
    assert!(db.dead_letters(10).await.expect("list").is_empty());
    let (ok, _, err) = nimbus(
        url,
        schema,
        &["dead-letters", "replay", &uuid::Uuid::new_v4().to_string()],
    );
    assert!(!ok && err.contains("no dead letter"), "{err}");
    let (ok, out, err) = nimbus(url, schema, &["--json", "subscriptions", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"subscriptions\""), "{out}");
    let (ok, out, err) = nimbus(url, schema, &["subscriptions", "sweep", "--idle", "4days"]);
    assert!(ok, "{err}");
    assert!(out.contains("swept 0 subscription(s)"), "{out}");
    // remove: an operator unsubscribes a queue from an event.
    let table = match schema {
        Some(schema) => format!("{}.\"NimbusSubscriptions\"", db.quote(schema)),
        None => "\"NimbusSubscriptions\"".to_string(),
    };
    db.execute(&format!(
        "INSERT INTO {table} (\"TopicName\", \"SubscriberQueue\") VALUES ('Shop.OrderPlaced', 'Sales')"
    ))
    .await
    .expect("a subscription");
    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "subscriptions",
            "remove",
            "--topic",
            "Shop.OrderPlaced",
            "--queue",
            "Sales",
        ],
    );
    assert!(ok && out.contains("removed"), "{err}{out}");
    assert!(db.subscriptions().await.expect("list").is_empty());
    let (ok, _, err) = nimbus(
        url,
        schema,
        &[
            "subscriptions",
            "remove",
            "--topic",
            "Shop.OrderPlaced",
            "--queue",
            "Sales",
        ],
    );
    assert!(!ok && err.contains("no subscription"), "{err}");

    // send: a JSON message with the headers an endpoint writes, to a queue that exists.
    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "--json",
            "send",
            "Sales",
            "--type",
            "Shop.Ping",
            "--body",
            r#"{"n":3}"#,
            "--header",
            "X-Reason=manual retry",
        ],
    );
    assert!(ok, "{err}");
    let sent: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let id = sent["id"].as_str().expect("an id").to_string();
    let queued = db.peek("Sales", 10).await.expect("peek");
    let message = queued
        .iter()
        .find(|m| m.headers.contains(&id))
        .unwrap_or_else(|| panic!("the sent message is in Sales: {queued:?}"));
    let headers: nimbus::Headers = serde_json::from_str(&message.headers).expect("headers");
    assert_eq!(headers["NServiceBus.EnclosedMessageTypes"], "Shop.Ping");
    assert_eq!(headers["NServiceBus.MessageId"], id);
    assert_eq!(headers["X-Reason"], "manual retry");
    assert!(headers.contains_key("NServiceBus.TimeSent"));
    assert_eq!(message.body, br#"{"n":3}"#);
    let (ok, _, err) = nimbus(
        url,
        schema,
        &["send", "Salez", "--type", "Shop.Ping", "--body", "{}"],
    );
    assert!(
        !ok && err.contains("Sales"),
        "names the closest queue: {err}"
    );
    let (ok, _, err) = nimbus(
        url,
        schema,
        &["send", "Sales", "--type", "Shop.Ping", "--body", "not json"],
    );
    assert!(!ok && err.contains("not JSON"), "{err}");
}

/// `nimbus bench`, in builds that have it (`--features bench`; `.ci/run` runs these).
#[cfg(feature = "bench")]
mod bench_command {
    use super::*;

    /// The workloads `nimbus bench` reports, in its order.
    const WORKLOADS: [&str; 4] = ["send_1", "send_batch", "receive_handle", "end_to_end"];

    /// `nimbus bench` with tiny sizes, as a script runs it: every workload has a positive rate on
    /// both sides and a ratio in every round, the rounds alternate which side goes first, and the run
    /// leaves no queue and no dead letter behind. Not a timed test: nothing is asserted about speed.
    async fn bench(url: &str, schema: Option<&str>, layout: &str) {
        let (ok, out, err) = nimbus(
            url,
            schema,
            &[
                "--json",
                "--layout",
                layout,
                "bench",
                "--messages",
                "60",
                "--rounds",
                "2",
                "--concurrency",
                "2",
                "--batch",
                "7",
            ],
        );
        assert!(ok, "{err}");
        assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let bench = &report["bench"];
        assert_eq!(
            (bench["messages"].as_u64(), bench["rounds"].as_u64()),
            (Some(60), Some(2))
        );
        assert_eq!(bench["layout"], layout, "{out}");
        let workloads = bench["workloads"].as_array().expect("workloads");
        let names: Vec<_> = workloads.iter().map(|w| w["name"].as_str()).collect();
        assert_eq!(names, WORKLOADS.map(Some), "{out}");
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for w in workloads {
            for key in [
                "nimbus_per_s",
                "bare_per_s",
                "ratio",
                "ratio_min",
                "ratio_max",
            ] {
                assert!(positive(&w[key]), "{key} of {}: {out}", w["name"]);
            }
            let rounds = w["rounds"].as_array().expect("rounds");
            let first: Vec<_> = rounds.iter().map(|r| r["first"].as_str()).collect();
            assert_eq!(
                first,
                [Some("nimbus"), Some("bare")],
                "A B, then B A: {out}"
            );
            for r in rounds {
                assert!(
                    positive(&r["nimbus_per_s"])
                        && positive(&r["bare_per_s"])
                        && positive(&r["ratio"]),
                    "{out}"
                );
            }
        }
        for side in ["nimbus", "bare"] {
            assert!(positive(&bench["latency_ms"][side]["max"]), "{out}");
        }
        // Two concurrent senders share a commit at most two by two.
        let per_commit = bench["send_1_messages_per_commit"].as_f64();
        assert!(
            per_commit.is_some_and(|x| (1.0..=2.0).contains(&x)),
            "messages per commit of send 1/tx at concurrency 2: {out}"
        );
        cpu_keys(bench, url, &out);
        no_queue_left(url, schema).await;
    }

    /// The CPU per message of every workload and side: the process's is a number (a clock tick is
    /// 10 ms, so one fast side of a tiny run may read 0) and positive over the run; the database's
    /// is a number where `db_cpu` says the server's processes are read (PostgreSQL on this machine),
    /// and null where it says they are not (SQLite: in process; a remote server).
    fn cpu_keys(bench: &serde_json::Value, url: &str, out: &str) {
        let workloads = bench["workloads"].as_array().expect("workloads");
        let db_measured = match bench["db_cpu"].as_str() {
            Some("postgres_processes") => true,
            Some("in_process") => {
                assert!(url.starts_with("sqlite"), "{out}");
                false
            }
            Some("unavailable") => false,
            other => panic!("db_cpu is {other:?}: {out}"),
        };
        let (mut process_total, mut switches_total) = (0.0, 0.0);
        for w in workloads {
            for side in ["nimbus", "bare"] {
                let switches = w["process_switches_per_msg"][side]
                    .as_f64()
                    .unwrap_or_else(|| panic!("context switches of {} {side}: {out}", w["name"]));
                assert!(switches >= 0.0, "{out}");
                switches_total += switches;
                let process = w["process_cpu_us_per_msg"][side]
                    .as_f64()
                    .unwrap_or_else(|| panic!("process CPU of {} {side}: {out}", w["name"]));
                assert!(process >= 0.0, "{out}");
                process_total += process;
                let db = &w["db_cpu_us_per_msg"][side];
                if db_measured {
                    assert!(db.as_f64().is_some_and(|x| x >= 0.0), "{out}");
                } else {
                    assert!(db.is_null(), "{out}");
                }
            }
        }
        assert!(process_total > 0.0, "the benchmark used CPU: {out}");
        assert!(
            switches_total > 0.0,
            "the benchmark's threads waited on the database: {out}"
        );
    }

    /// The benchmark left no queue and no dead letter behind.
    async fn no_queue_left(url: &str, schema: Option<&str>) {
        let mut options = ConnectOptions::new();
        if let Some(schema) = schema {
            options = options.schema(schema);
        }
        let db = Database::connect_with(url, options).await.expect("connect");
        let left: Vec<_> = db
            .queues()
            .await
            .expect("queues")
            .into_iter()
            .filter(|q| q.name.starts_with("Bench"))
            .map(|q| (q.name, q.depth))
            .collect();
        assert!(left.is_empty(), "the benchmark drops its queues: {left:?}");
        assert!(
            db.dead_letters(10).await.expect("dead letters").is_empty(),
            "no benchmark message failed"
        );
    }

    /// The latency series `nimbus bench --latency` reports, in its order.
    const SERIES: [&str; 4] = [
        "same_process",
        "cross_process",
        "request_response",
        "bare_round_trip",
    ];

    /// `nimbus bench --latency 50` with 20 messages and one round, as a script runs it: every series
    /// (the one across processes included) has 20 samples with 0 < p50 <= p99 <= max, after 5
    /// warm-up messages reported apart, and the run leaves no queue behind. Not a timed test:
    /// nothing is asserted about speed.
    async fn bench_latency(url: &str, schema: Option<&str>) {
        let (ok, out, err) = nimbus(
            url,
            schema,
            &[
                "--json",
                "bench",
                "--latency",
                "50",
                "--messages",
                "20",
                "--rounds",
                "1",
            ],
        );
        assert!(ok, "{err}");
        assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let latency = &report["bench_latency"];
        assert_eq!(latency["rate_per_s"].as_f64(), Some(50.0), "{out}");
        assert_eq!(latency["peek_delay_ms"].as_u64(), Some(1000), "{out}");
        assert_eq!(latency["warm_up"].as_u64(), Some(5), "{out}");
        let wakeup = if url.starts_with("postgres") {
            "listen_notify"
        } else if url.starts_with("sqlite") {
            "data_version_watch"
        } else {
            "idle_poll"
        };
        assert_eq!(latency["cross_process_wakeup"], wakeup, "{out}");
        let series = latency["latency_ms"].as_object().expect("latency_ms");
        assert_eq!(series.len(), SERIES.len(), "{out}");
        for name in SERIES {
            let s = &series[name];
            let [p50, p99, max] = ["p50", "p99", "max"]
                .map(|k| s[k].as_f64().unwrap_or_else(|| panic!("{name} {k}: {out}")));
            assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{name}: {out}");
            assert_eq!(s["samples"].as_u64(), Some(20), "{name}: {out}");
            assert_eq!(s["p50_rounds"].as_array().map(Vec::len), Some(1), "{out}");
            let warm_up_max = s["warm_up_max"].as_f64();
            assert!(warm_up_max.is_some_and(|ms| ms > 0.0), "{name}: {out}");
        }
        no_queue_left(url, schema).await;
    }

    /// The endpoints `nimbus bench` runs in its own process say what they do on stderr (here a
    /// receiver's start, at `RUST_LOG=nimbus=info`; by default their warnings), while stdout stays
    /// one JSON line.
    #[test]
    fn bench_prints_the_framework_s_log_lines_on_stderr() {
        let path = std::env::temp_dir().join(format!("nimbus-bench-log-{}.db", unique()));
        let output = Command::new(env!("CARGO_BIN_EXE_nimbus"))
            .env("RUST_LOG", "nimbus=info")
            .arg("--database")
            .arg(format!("sqlite://{}", path.display()))
            .args(["--json", "bench", "--latency", "50", "--messages", "3"])
            .args(["--rounds", "1", "--warm-up", "0"])
            .output()
            .expect("run nimbus");
        let _ = std::fs::remove_file(&path);
        let (out, err) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert!(output.status.success(), "{err}");
        assert_eq!(out.lines().count(), 1, "one JSON line: {out}");
        assert!(
            err.lines().any(|l| l.contains("INFO")
                && l.contains("receiving")
                && l.contains("BenchLatLocal")),
            "the start of the receiver in the benchmark's own process, on stderr: {err}"
        );
    }

    /// `nimbus bench --handler-shapes` with tiny sizes: every shape named, in order, with a
    /// positive rate on both sides of every round and a ratio; the failing shape's first attempts
    /// failed on both sides; nothing left behind. Not a timed test.
    async fn bench_handler_shapes(url: &str, schema: Option<&str>) {
        let (ok, out, err) = nimbus(
            url,
            schema,
            &[
                "--json",
                "bench",
                "--handler-shapes",
                "none,disjoint,hot:2,failing:50",
                "--messages",
                "20",
                "--rounds",
                "2",
                "--concurrency",
                "2",
            ],
        );
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "handler_shapes", "{out}");
        let shapes = report["shapes"].as_array().expect("shapes");
        let names: Vec<_> = shapes.iter().map(|s| s["shape"].as_str()).collect();
        assert_eq!(
            names,
            [
                Some("none"),
                Some("disjoint"),
                Some("hot:2"),
                Some("failing:50")
            ],
            "{out}"
        );
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for shape in shapes {
            assert!(positive(&shape["ratio_median"]), "{out}");
            let rounds = shape["rounds"].as_array().expect("rounds");
            assert_eq!(rounds.len(), 2, "{out}");
            for r in rounds {
                assert!(
                    positive(&r["default_per_s"]) && positive(&r["one_at_a_time_per_s"]),
                    "{out}"
                );
                let failed = (
                    r["default_failed"].as_u64(),
                    r["one_at_a_time_failed"].as_u64(),
                );
                if shape["shape"] == "failing:50" {
                    assert_eq!(failed, (Some(10), Some(10)), "half of 20 fail once: {out}");
                } else {
                    assert_eq!(failed, (Some(0), Some(0)), "{out}");
                }
            }
        }
        no_queue_left(url, schema).await;
    }

    /// `nimbus bench --deduplication` with tiny sizes: both comparisons, each with a positive
    /// rate on both sides and a ratio; nothing left behind. Not a timed test.
    async fn bench_deduplication(url: &str, schema: Option<&str>) {
        let (ok, out, err) = nimbus(
            url,
            schema,
            &[
                "--json",
                "bench",
                "--deduplication",
                "--messages",
                "20",
                "--rounds",
                "2",
                "--concurrency",
                "2",
            ],
        );
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "deduplication", "{out}");
        let results = report["results"].as_array().expect("results");
        let names: Vec<_> = results.iter().map(|r| r["what"].as_str()).collect();
        assert_eq!(names, [Some("send_deduplicated"), Some("inbox")], "{out}");
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for r in results {
            for key in ["ratio_median", "plain_per_s", "deduplicated_per_s"] {
                assert!(positive(&r[key]), "{key}: {out}");
            }
        }
        no_queue_left(url, schema).await;
    }

    /// `nimbus bench --groups` with tiny sizes: sends and drains, each with a positive rate on
    /// both sides and a ratio; nothing left behind. Not a timed test.
    async fn bench_groups(url: &str, schema: Option<&str>) {
        let (ok, out, err) = nimbus(
            url,
            schema,
            &[
                "--json",
                "bench",
                "--groups",
                "--group-count",
                "4",
                "--messages",
                "40",
                "--rounds",
                "2",
                "--concurrency",
                "2",
            ],
        );
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "groups", "{out}");
        assert_eq!(report["groups"], 4, "{out}");
        let results = report["results"].as_array().expect("results");
        let names: Vec<_> = results.iter().map(|r| r["what"].as_str()).collect();
        assert_eq!(names, [Some("send"), Some("receive")], "{out}");
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for r in results {
            for key in ["ratio_median", "ungrouped_per_s", "grouped_per_s"] {
                assert!(positive(&r[key]), "{key}: {out}");
            }
        }
        no_queue_left(url, schema).await;
    }

    /// `nimbus bench --limits` with tiny sizes: drains with and without a limit, each with a
    /// positive rate and a ratio; nothing left behind. Not a timed test.
    async fn bench_limits(url: &str, schema: Option<&str>) {
        let args = [
            "--json",
            "bench",
            "--limits",
            "--messages",
            "40",
            "--rounds",
            "2",
            "--concurrency",
            "2",
        ];
        let (ok, out, err) = nimbus(url, schema, &args);
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "limits", "{out}");
        let result = &report["results"][0];
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for key in ["ratio_median", "plain_per_s", "limited_per_s"] {
            assert!(positive(&result[key]), "{key}: {out}");
        }
        no_queue_left(url, schema).await;
    }

    /// `nimbus bench --bridge` with tiny sizes: forwards within the database and crosses to a
    /// new SQLite file, each with a positive rate and a ratio; nothing left behind on this side
    /// and the file removed (the command runs with a temporary directory of its own). Not a
    /// timed test.
    async fn bench_bridge(url: &str, schema: Option<&str>) {
        let temp = std::env::temp_dir().join(format!("nimbus-bench-bridge-test-{}", unique()));
        std::fs::create_dir(&temp).expect("a temporary directory");
        let args = [
            "--json",
            "bench",
            "--bridge",
            "--messages",
            "40",
            "--rounds",
            "2",
            "--concurrency",
            "2",
        ];
        let (ok, out, err) = nimbus_with_env(url, schema, &[("TMPDIR", &temp)], &args);
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "bridge", "{out}");
        assert_eq!(report["bridge_to"], "SQLite", "{out}");
        let result = &report["results"][0];
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for key in ["ratio_median", "forward_per_s", "bridge_per_s"] {
            assert!(positive(&result[key]), "{key}: {out}");
        }
        no_queue_left(url, schema).await;
        let left: Vec<_> = std::fs::read_dir(&temp)
            .expect("the temporary directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        assert!(
            left.is_empty(),
            "the benchmark removes its SQLite file: {left:?}"
        );
        let _ = std::fs::remove_dir(&temp);
    }

    /// `nimbus bench --bodies` with tiny sizes: the four variants, each with positive rates and
    /// ratios; gzip stores less than plain, encryption a little more; nothing left behind. Not a
    /// timed test.
    async fn bench_bodies(url: &str, schema: Option<&str>) {
        let args = [
            "--json",
            "bench",
            "--bodies",
            "--messages",
            "20",
            "--rounds",
            "2",
            "--concurrency",
            "2",
            "--body-size",
            "2000",
        ];
        let (ok, out, err) = nimbus(url, schema, &args);
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "bodies", "{out}");
        let results = report["results"].as_array().expect("results");
        let names: Vec<_> = results.iter().map(|r| r["what"].as_str()).collect();
        assert_eq!(
            names,
            [
                Some("plain"),
                Some("gzip"),
                Some("zstd"),
                Some("aes-256-gcm"),
                Some("gzip+aes"),
                Some("stored-apart")
            ],
            "{out}"
        );
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        for r in results {
            for key in [
                "send_ratio_median",
                "receive_ratio_median",
                "send_per_s",
                "receive_per_s",
            ] {
                assert!(positive(&r[key]), "{key}: {out}");
            }
        }
        let stored = |i: usize| results[i]["stored_bytes"].as_u64().unwrap_or_default();
        assert!(stored(1) < stored(0) / 2, "gzip stores less: {out}");
        assert!(stored(2) < stored(0) / 2, "zstd stores less: {out}");
        assert!(
            stored(3) > stored(0),
            "encryption adds its nonce and tag: {out}"
        );
        assert_eq!(
            stored(5),
            stored(0),
            "a body stored apart keeps its size: {out}"
        );
        no_queue_left(url, schema).await;
    }

    /// `nimbus bench --large-bodies`: one message per size sent and handled, the memory read
    /// before, at the peak and after.
    async fn bench_large_bodies(url: &str, schema: Option<&str>) {
        let args = ["--json", "bench", "--large-bodies", "1,2"];
        let (ok, out, err) = nimbus(url, schema, &args);
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
        assert_eq!(report["mode"], "large_bodies", "{out}");
        assert_eq!(report["bodies"], "stored apart", "{out}");
        let results = report["results"].as_array().expect("results");
        assert_eq!(results.len(), 2, "{out}");
        for (r, megabytes) in results.iter().zip([1, 2]) {
            assert_eq!(r["megabytes"], megabytes, "{out}");
            let mb = |key: &str| r[key].as_f64().unwrap_or_default();
            assert!(mb("rss_before_mb") > 0.0, "{out}");
            assert!(mb("rss_peak_mb") >= mb("rss_before_mb"), "{out}");
            assert!(mb("rss_after_mb") > 0.0 && mb("seconds") > 0.0, "{out}");
        }
    }

    #[actix_rt::test]
    async fn bench_large_bodies_runs_on_sqlite() {
        on_sqlite("large", bench_large_bodies).await;
    }

    #[actix_rt::test]
    async fn bench_large_bodies_runs_on_postgres() {
        on_postgres("large", bench_large_bodies).await;
    }

    #[actix_rt::test]
    async fn bench_bodies_runs_on_sqlite() {
        on_sqlite("bodies", bench_bodies).await;
    }

    #[actix_rt::test]
    async fn bench_bodies_runs_on_postgres() {
        on_postgres("bodies", bench_bodies).await;
    }

    #[actix_rt::test]
    async fn bench_bridge_runs_on_sqlite() {
        on_sqlite("bridge", bench_bridge).await;
    }

    #[actix_rt::test]
    async fn bench_bridge_runs_on_postgres() {
        on_postgres("bridge", bench_bridge).await;
    }

    #[actix_rt::test]
    async fn bench_limits_runs_on_sqlite() {
        on_sqlite("limits", bench_limits).await;
    }

    #[actix_rt::test]
    async fn bench_limits_runs_on_postgres() {
        on_postgres("limits", bench_limits).await;
    }

    #[actix_rt::test]
    async fn bench_groups_runs_on_sqlite() {
        on_sqlite("groups", bench_groups).await;
    }

    #[actix_rt::test]
    async fn bench_groups_runs_on_postgres() {
        on_postgres("groups", bench_groups).await;
    }

    #[actix_rt::test]
    async fn bench_deduplication_runs_on_sqlite() {
        on_sqlite("dedup", bench_deduplication).await;
    }

    #[actix_rt::test]
    async fn bench_deduplication_runs_on_postgres() {
        on_postgres("dedup", bench_deduplication).await;
    }

    #[actix_rt::test]
    async fn bench_handler_shapes_run_on_sqlite() {
        on_sqlite("shapes", bench_handler_shapes).await;
    }

    #[actix_rt::test]
    async fn bench_handler_shapes_run_on_postgres() {
        on_postgres("shapes", bench_handler_shapes).await;
    }

    #[actix_rt::test]
    async fn bench_latency_runs_on_sqlite() {
        on_sqlite("latency", bench_latency).await;
    }

    #[actix_rt::test]
    async fn bench_latency_runs_on_postgres() {
        on_postgres("latency", bench_latency).await;
    }

    #[actix_rt::test]
    async fn bench_runs_on_sqlite_in_both_layouts() {
        for layout in ["table", "shared"] {
            let path = std::env::temp_dir().join(format!("nimbus-bench-{}.db", unique()));
            let url = format!("sqlite://{}", path.display());
            bench(&url, None, layout).await;
            let _ = std::fs::remove_file(&path);
        }
    }

    #[actix_rt::test]
    async fn bench_runs_on_postgres() {
        let url = postgres_url();
        let schema = format!("nimbus bench {}", unique());
        bench(&url, Some(&schema), "table").await;
        drop_schema(&url, &schema).await;
    }

    /// `url` with its database replaced by `database` (its query string kept).
    fn with_database(url: &str, database: &str) -> String {
        let (path, query) = url.split_once('?').map_or((url, ""), |(p, q)| (p, q));
        let base = path.rsplit_once('/').map_or(path, |(base, _)| base);
        match query {
            "" => format!("{base}/{database}"),
            query => format!("{base}/{database}?{query}"),
        }
    }

    /// Where the server has pgmq, `nimbus bench` runs pgmq's own functions as a third side in a
    /// database that created the extension (every workload gets pgmq's rate and the ratio to it,
    /// each round starts with the next side, and pgmq's queues are dropped at the end); where it
    /// has not, the report says so (pgmq null) and the run goes on without it.
    #[actix_rt::test]
    async fn bench_compares_with_pgmq_where_the_database_has_it() {
        let server = Database::connect(&postgres_url())
            .await
            .expect("PostgreSQL is reachable");
        let name = format!("nimbus_pgmq_{}", unique());
        server
            .execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create the test database");
        let url = with_database(&postgres_url(), &name);
        let db = Database::connect(&url).await.expect("the new database");
        let available = db
            .execute("CREATE EXTENSION pgmq")
            .await
            .map_err(|e| {
                eprintln!("pgmq is not installed on this server ({e}): checking the run without it")
            })
            .is_ok();
        let (ok, out, err) = nimbus(
            &url,
            None,
            &[
                "--json",
                "bench",
                "--messages",
                "40",
                "--rounds",
                "3",
                "--concurrency",
                "2",
                "--batch",
                "5",
            ],
        );
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let bench = &report["bench"];
        let workloads = bench["workloads"].as_array().expect("workloads");
        let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0);
        if available {
            assert!(bench["pgmq"].as_str().is_some(), "its version: {out}");
            for w in workloads {
                for key in ["per_s", "ratio", "ratio_min", "ratio_max"] {
                    assert!(
                        positive(&w["pgmq"][key]),
                        "pgmq {key} of {}: {out}",
                        w["name"]
                    );
                }
                let rounds = w["rounds"].as_array().expect("rounds");
                let first: Vec<_> = rounds.iter().map(|r| r["first"].as_str()).collect();
                assert_eq!(first, [Some("nimbus"), Some("bare"), Some("bare")], "{out}");
                assert!(rounds.iter().all(|r| positive(&r["pgmq_per_s"])), "{out}");
            }
            assert!(positive(&bench["latency_ms"]["pgmq"]["max"]), "{out}");
            let left = db
                .query_scalar(
                    "SELECT count(*) FROM pgmq.list_queues() WHERE queue_name LIKE 'pgmq_bench%'",
                    &[],
                )
                .await
                .expect("pgmq's queues listed");
            assert_eq!(left, 0, "the benchmark drops pgmq's queues too");
        } else {
            assert!(bench["pgmq"].is_null(), "{out}");
            assert!(workloads.iter().all(|w| w["pgmq"].is_null()), "{out}");
            assert!(err.contains("pgmq is not installed"), "{err}");
        }
        drop(db);
        server
            .execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .await
            .expect("drop the test database");
    }

    /// `nimbus bench --json` with tiny sizes and `extra` options; returns the report's `bench`
    /// object, with the output for messages.
    fn bench_json(url: &str, schema: Option<&str>, extra: &[&str]) -> (serde_json::Value, String) {
        let mut args = vec![
            "--json",
            "bench",
            "--messages",
            "30",
            "--rounds",
            "1",
            "--concurrency",
            "2",
            "--batch",
            "5",
        ];
        args.extend_from_slice(extra);
        let (ok, out, err) = nimbus(url, schema, &args);
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        (report["bench"].clone(), out)
    }

    /// `--e2e-send-batch` is in the report, and every workload still has a rate on both sides (its
    /// senders sent whole batches, and the receivers handled them all).
    fn e2e_send_batch_reported(bench: &serde_json::Value, out: &str) {
        assert_eq!(bench["e2e_send_batch"].as_u64(), Some(7), "{out}");
        assert_eq!(bench["receive_batch"].as_u64(), Some(3), "{out}");
        // pgmq's loops take what --pgmq-batch says, whatever the framework's receive takes.
        assert_eq!(bench["pgmq_batch"].as_u64(), Some(4), "{out}");
        let workloads = bench["workloads"].as_array().expect("workloads");
        assert_eq!(workloads.len(), WORKLOADS.len(), "{out}");
        for w in workloads {
            for key in ["nimbus_per_s", "bare_per_s", "ratio"] {
                assert!(
                    w[key].as_f64().is_some_and(|x| x > 0.0),
                    "{key} of {}: {out}",
                    w["name"]
                );
            }
        }
    }

    /// The statement breakdown of every workload and side: per message totals and the top
    /// statements, each with its calls per message, mean time, time per message and rows per call.
    fn statements_reported(bench: &serde_json::Value, out: &str) {
        assert_eq!(bench["statements"], "pg_stat_statements", "{out}");
        for w in bench["workloads"].as_array().expect("workloads") {
            for side in ["nimbus", "bare"] {
                let s = &w["statements"][side];
                assert!(s["messages"].as_u64().is_some_and(|m| m >= 30), "{out}");
                assert!(
                    s["calls_per_msg"].as_f64().is_some_and(|c| c > 0.0),
                    "{out}"
                );
                assert!(
                    s["exec_us_per_msg"].as_f64().is_some_and(|t| t >= 0.0),
                    "{out}"
                );
                let top = s["top"].as_array().expect("top");
                assert!(!top.is_empty() && top.len() <= 8, "{out}");
                for t in top {
                    assert!(t["query"].as_str().is_some_and(|q| !q.is_empty()), "{out}");
                    for key in [
                        "calls_per_msg",
                        "mean_ms",
                        "exec_us_per_msg",
                        "rows_per_call",
                    ] {
                        assert!(t[key].as_f64().is_some_and(|x| x >= 0.0), "{key}: {out}");
                    }
                }
            }
        }
    }

    /// `--workloads` runs only the workloads it names, and refuses receive+handle without the send
    /// that fills its queue.
    #[actix_rt::test]
    async fn bench_runs_only_the_workloads_named_on_sqlite() {
        let path = std::env::temp_dir().join(format!("nimbus-bench-{}.db", unique()));
        let url = format!("sqlite://{}", path.display());
        let (bench, out) = bench_json(&url, None, &["--workloads", "end_to_end,send_1"]);
        let workloads = bench["workloads"].as_array().expect("workloads");
        let names: Vec<_> = workloads.iter().map(|w| w["name"].as_str()).collect();
        assert_eq!(names, [Some("send_1"), Some("end_to_end")], "{out}");
        for w in workloads {
            assert!(w["ratio"].as_f64().is_some_and(|x| x > 0.0), "{out}");
        }
        no_queue_left(&url, None).await;

        let (ok, out, err) = nimbus(&url, None, &["bench", "--workloads", "receive_handle"]);
        assert!(!ok, "{out}");
        assert!(
            err.contains("receive_handle") && err.contains("send_1"),
            "the error says what to add: {err}"
        );
        let (ok, out, err) = nimbus(&url, None, &["bench", "--workloads", "send_2"]);
        assert!(!ok, "{out}");
        assert!(
            err.contains("send_2"),
            "an unknown workload is named: {err}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[actix_rt::test]
    async fn bench_e2e_send_batch_and_statements_on_sqlite() {
        let path = std::env::temp_dir().join(format!("nimbus-bench-{}.db", unique()));
        let url = format!("sqlite://{}", path.display());
        let (bench, out) = bench_json(
            &url,
            None,
            &[
                "--receive-batch",
                "3",
                "--e2e-send-batch",
                "7",
                "--pgmq-batch",
                "4",
            ],
        );
        e2e_send_batch_reported(&bench, &out);
        assert!(bench["statements"].is_null(), "{out}");
        for w in bench["workloads"].as_array().expect("workloads") {
            assert!(w["statements"].is_null(), "{out}");
        }
        no_queue_left(&url, None).await;

        // --statements needs PostgreSQL: a clear error before anything is made.
        let (ok, out, err) = nimbus(&url, None, &["bench", "--statements", "--messages", "10"]);
        assert!(!ok, "{out}");
        assert!(
            err.contains("--statements")
                && err.contains("pg_stat_statements")
                && err.contains("sqlite")
                && err.contains("Fix:"),
            "{err}"
        );
        no_queue_left(&url, None).await;
        let (ok, _, err) = nimbus(&url, None, &["bench", "--statements", "--latency", "10"]);
        assert!(!ok && err.contains("--latency"), "{err}");
        let _ = std::fs::remove_file(&path);
    }

    #[actix_rt::test]
    async fn bench_e2e_send_batch_and_statements_on_postgres() {
        let url = postgres_url();
        let schema = format!("nimbus bench {}", unique());
        let (bench, out) = bench_json(
            &url,
            Some(&schema),
            &[
                "--receive-batch",
                "3",
                "--e2e-send-batch",
                "7",
                "--pgmq-batch",
                "4",
            ],
        );
        e2e_send_batch_reported(&bench, &out);
        no_queue_left(&url, Some(&schema)).await;

        // --statements: the breakdown where the server preloads pg_stat_statements (the cluster of
        // scripts/pg-stat-statements-cluster.sh), else a clear error that leaves the server as it
        // was (the shared test server does not preload it).
        let (ok, out, err) = nimbus(
            &url,
            Some(&schema),
            &[
                "--json",
                "bench",
                "--statements",
                "--messages",
                "30",
                "--rounds",
                "1",
                "--concurrency",
                "2",
            ],
        );
        if ok {
            let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
            statements_reported(&report["bench"], &out);
        } else {
            assert!(
                err.contains("does not preload pg_stat_statements") && err.contains("Fix:"),
                "{err}"
            );
        }
        no_queue_left(&url, Some(&schema)).await;
        drop_schema(&url, &schema).await;
    }
}

/// Without `--features bench`, `nimbus bench` says how to get it.
#[cfg(not(feature = "bench"))]
#[test]
fn bench_says_how_to_install_it_where_it_is_not_built_in() {
    let (ok, _, err) = nimbus("sqlite::memory:", None, &["bench", "--messages", "10"]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("without the benchmark") && err.contains("--features bench"),
        "{err}"
    );
}

#[actix_rt::test]
async fn every_command_works_on_sqlite() {
    on_sqlite("cli", flow).await;
}

#[actix_rt::test]
async fn every_command_works_on_postgres() {
    on_postgres("cli", flow).await;
}

#[test]
fn a_missing_database_is_a_clear_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_nimbus"))
        .env_remove("DATABASE_URL")
        .args(["peek", "Sales"])
        .output()
        .expect("run nimbus");
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("--database") && err.contains("DATABASE_URL"),
        "{err}"
    );
}

/// `dead-letters list --queue` finds the letters of its queue however many older letters of
/// other queues there are (the filter is in the statement, and pages are read until enough
/// match), and `show` finds a letter past the first page.
async fn dead_letters_are_filtered_and_paged(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Old"]);
    assert!(ok, "{err}");
    let mut options = ConnectOptions::new();
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    let db = Database::connect_with(url, options).await.expect("connect");
    // 10,200 dead letters one second apart: the 10,190 oldest failed in Old, the 10 newest in New,
    // beside a business table of the application in the same schema.
    let insert = if url.starts_with("postgres") {
        format!(
            "INSERT INTO {}.\"NimbusDeadLetters\" \
             (\"MessageId\", \"OriginalDestination\", \"Body\", \"DeliveryAttempts\", \"FailedAt\") \
             SELECT ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid, \
                    CASE WHEN i <= 10190 THEN 'Old' ELSE 'New' END, '{{}}'::bytea, 1, \
                    (now() AT TIME ZONE 'utc') - make_interval(secs => 20000 - i) \
             FROM generate_series(1, 10200) AS i",
            db.quote(schema.expect("a schema on PostgreSQL"))
        )
    } else {
        "INSERT INTO \"NimbusDeadLetters\" \
         (\"MessageId\", \"OriginalDestination\", \"Body\", \"DeliveryAttempts\", \"FailedAt\") \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10200) \
         SELECT printf('00000000-0000-0000-0000-%012d', i), \
                CASE WHEN i <= 10190 THEN 'Old' ELSE 'New' END, CAST('{}' AS BLOB), 1, \
                strftime('%Y-%m-%d %H:%M:%f', 'now', printf('-%d seconds', 20000 - i)) \
         FROM n"
            .to_string()
    };
    db.execute(&insert).await.expect("dead letters");
    db.execute(&format!(
        "CREATE TABLE {} (id integer PRIMARY KEY, total integer)",
        db.qualified_table("shop_invoices")
    ))
    .await
    .expect("a business table");
    let (ok, out, err) = nimbus(url, schema, &["--json", "queues"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let names: Vec<&str> = listed["queues"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|q| q["queue"].as_str())
        .collect();
    assert_eq!(names, vec!["Old"], "a business table is no queue: {out}");

    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "--json",
            "dead-letters",
            "list",
            "--queue",
            "New",
            "-n",
            "5",
        ],
    );
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let letters = listed["dead_letters"].as_array().expect("a list");
    assert_eq!(letters.len(), 5, "{out}");
    assert!(letters.iter().all(|d| d["queue"] == "New"), "{out}");
    assert_eq!(
        letters[0]["id"], "00000000-0000-0000-0000-000000010191",
        "the oldest of New first: {out}"
    );

    let (ok, out, err) = nimbus(
        url,
        schema,
        &["--json", "dead-letters", "list", "-n", "20000"],
    );
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let letters = listed["dead_letters"].as_array().expect("a list");
    assert_eq!(letters.len(), 10200, "every page, each letter once");
    let ids: std::collections::BTreeSet<&str> =
        letters.iter().filter_map(|d| d["id"].as_str()).collect();
    assert_eq!(ids.len(), 10200);

    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "dead-letters",
            "show",
            "00000000-0000-0000-0000-000000010199",
        ],
    );
    assert!(ok && out.contains("\"New\""), "{err}{out}");
}

#[actix_rt::test]
async fn dead_letters_are_filtered_and_paged_on_sqlite() {
    on_sqlite("cli", dead_letters_are_filtered_and_paged).await;
}

#[actix_rt::test]
async fn dead_letters_are_filtered_and_paged_on_postgres() {
    on_postgres("cli", dead_letters_are_filtered_and_paged).await;
}

/// `schema print --dialect` needs no database, and prints what `--database` of that kind prints.
#[test]
fn schema_print_takes_a_dialect_instead_of_a_database() {
    let print = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_nimbus"))
            .env_remove("DATABASE_URL")
            .args(args)
            .output()
            .expect("run nimbus");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    for (dialect, url) in [
        ("sqlite", "sqlite://never-opened.db"),
        ("postgres", "postgres://nobody@127.0.0.1:1/none"),
        ("sqlserver", "Server=tcp:127.0.0.1,1;Database=none"),
    ] {
        let by_dialect = print(&["schema", "print", "--dialect", dialect, "--queue", "Sales"]);
        assert!(by_dialect.contains("Sales"), "{dialect}: {by_dialect}");
        let by_url = print(&["--database", url, "schema", "print", "--queue", "Sales"]);
        assert_eq!(by_dialect, by_url, "{dialect}");
    }
    assert!(!std::path::Path::new("never-opened.db").exists());
}

/// Counts the pings it handles.
#[derive(Clone, Default)]
struct CountingPings(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Handler<Ping> for CountingPings {
    async fn handle(&self, _m: Ping, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// Waits until `done` holds, for at most a minute (a loaded machine is slow, never this slow).
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Two processes: this one runs an endpoint, the `nimbus` tool pauses its queue, sends to it,
/// lists it as paused and resumes it; the endpoint takes nothing while it is paused and
/// everything once it is resumed.
async fn pause_and_resume(url: &str, schema: Option<&str>) {
    let handled = CountingPings::default();
    let mut builder = nimbus::Bus::builder()
        .names("Pausable", "pausable-1")
        .database_url(url)
        .peek_delay(std::time::Duration::from_millis(100))
        .handler(handled.clone());
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    let count = || handled.0.load(std::sync::atomic::Ordering::SeqCst);

    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["pause", "Pausable", "--by", "on-call"]).await;
    assert!(ok && out.contains("paused \"Pausable\""), "{out}{err}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["pause", "Pausable"]).await;
    assert!(ok && out.contains("was paused already"), "{out}");
    let (ok, _, err) = nimbus_beside_a_bus(url, schema, &["pause", "Pausabel"]).await;
    assert!(
        !ok && err.contains("Pausable"),
        "a typo names the queue: {err}"
    );
    wait_until("the endpoint sees the pause", || {
        bus.metrics().paused_queues.contains("Pausable")
    })
    .await;

    for _ in 0..3 {
        let (ok, _, err) = nimbus_beside_a_bus(
            url,
            schema,
            &["send", "Pausable", "--type", "Cli.Ping", "--body", "null"],
        )
        .await;
        assert!(ok, "sends to a paused queue go in: {err}");
    }
    let peeks = bus.metrics().peeks;
    wait_until(
        "the paused queue is peeked twice with its messages in it",
        || {
            let m = bus.metrics();
            m.peeks >= peeks + 2 && m.queue_depths.get("Pausable").copied().unwrap_or(0) >= 3
        },
    )
    .await;
    assert_eq!(count(), 0, "nothing is received while paused");
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "queues"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = listed["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == "Pausable")
        .cloned()
        .unwrap();
    assert_eq!(
        (row["paused"].as_bool(), row["depth"].as_i64()),
        (Some(true), Some(3)),
        "{out}"
    );
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["queues"]).await;
    assert!(ok && out.contains("paused"), "{out}");

    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["resume", "Pausable"]).await;
    assert!(ok && out.contains("resumed"), "{out}{err}");
    wait_until("every message is handled after the resume", || count() == 3).await;
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["resume", "Pausable"]).await;
    assert!(ok && out.contains("was not paused"), "{out}");
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn pause_and_resume_reach_a_running_endpoint_on_sqlite() {
    on_sqlite("cli-pause", pause_and_resume).await;
}

#[actix_rt::test]
async fn pause_and_resume_reach_a_running_endpoint_on_postgres() {
    on_postgres("cli pause", pause_and_resume).await;
}

/// Another process (this one) sends delayed pings; `nimbus delayed` lists them, reschedules
/// one to now (an endpoint then handles it), cancels the other (never handled) and says so when
/// asked again about either.
async fn delayed_list_cancel_and_reschedule(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["delayed", "list"]);
    assert!(
        !ok && err.contains("no table NimbusDelayedMessages") && err.contains("Fix:"),
        "before any endpoint ran, the listing says what to check: {err}"
    );
    let mut builder = nimbus::Bus::builder()
        .names("Delaying", "delaying-1")
        .database_url(url)
        .create_queues_on_send(true)
        .route::<Ping>("Delaying");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let sender = builder.build().unwrap().start().await.unwrap();
    let later = || nimbus::SendOptions::new().delay(std::time::Duration::from_secs(3600));
    let kept = sender
        .send_delayed(Ping, later())
        .await
        .unwrap()
        .to_string();
    let moved = sender
        .send_delayed(Ping, later())
        .await
        .unwrap()
        .to_string();

    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "delayed", "list"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut ids: Vec<String> = listed["delayed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_lowercase())
        .collect();
    ids.sort();
    let mut both = vec![kept.clone(), moved.clone()];
    both.sort();
    assert_eq!(ids, both, "{out}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["delayed", "list"]).await;
    assert!(
        ok && out.contains("Cli.Ping") && out.contains("Delaying"),
        "{out}"
    );

    let (ok, out, err) = nimbus_beside_a_bus(
        url,
        schema,
        &["delayed", "reschedule", &moved, "--in", "0s"],
    )
    .await;
    assert!(ok && out.contains("rescheduled"), "{out}{err}");
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["delayed", "cancel", &kept]).await;
    assert!(ok && out.contains("will not be delivered"), "{out}{err}");
    let (ok, out, _) =
        nimbus_beside_a_bus(url, schema, &["--json", "delayed", "cancel", &kept]).await;
    assert!(ok && out.contains("\"cancelled\":false"), "{out}");
    let (ok, _, err) = nimbus_beside_a_bus(url, schema, &["delayed", "reschedule", &kept]).await;
    assert!(
        !ok && err.contains("--in"),
        "a reschedule without a time says how: {err}"
    );

    let handled = CountingPings::default();
    let mut builder = nimbus::Bus::builder()
        .names("Delaying", "delaying-2")
        .database_url(url)
        .peek_delay(std::time::Duration::from_millis(100))
        .handler(handled.clone());
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let receiver = builder.build().unwrap().start().await.unwrap();
    let count = || handled.0.load(std::sync::atomic::Ordering::SeqCst);
    wait_until("the rescheduled ping is handled", || count() == 1).await;
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["delayed", "cancel", &moved]).await;
    assert!(ok && out.contains("was not pending"), "delivered: {out}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["delayed", "list"]).await;
    assert!(ok && out.contains("no delayed message"), "{out}");
    assert_eq!(count(), 1, "the cancelled ping never came");
    receiver.stop().await.unwrap();
    sender.stop().await.unwrap();
}

#[actix_rt::test]
async fn delayed_messages_are_listed_cancelled_and_rescheduled_on_sqlite() {
    on_sqlite("cli-delayed", delayed_list_cancel_and_reschedule).await;
}

#[actix_rt::test]
async fn delayed_messages_are_listed_cancelled_and_rescheduled_on_postgres() {
    on_postgres("cli delayed", delayed_list_cancel_and_reschedule).await;
}

/// `nimbus schedules list|pause|resume` on the schedule a running endpoint declared; an
/// unknown schedule is an error naming the ones there are.
async fn schedules_list_pause_and_resume(url: &str, schema: Option<&str>) {
    let mut builder = nimbus::Bus::builder()
        .names("Reports", "reports-1")
        .database_url(url)
        .create_queues_on_send(true)
        .schedule(nimbus::Schedule::cron("nightly", "0 2 * * *").send_to("Reports", Ping));
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "schedules", "list"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nightly = &listed["schedules"][0];
    assert_eq!(nightly["endpoint"], "Reports", "{out}");
    assert_eq!(nightly["name"], "nightly", "{out}");
    assert_eq!(nightly["when"], "cron 0 2 * * *", "{out}");
    assert_eq!(nightly["target"], "send Reports", "{out}");
    assert!(
        nightly["next_due"].as_str().unwrap().ends_with("02:00:00"),
        "{out}"
    );
    assert!(nightly["paused_at"].is_null(), "{out}");

    let (ok, out, err) = nimbus_beside_a_bus(
        url,
        schema,
        &["schedules", "pause", "Reports", "nightly", "--by", "ops"],
    )
    .await;
    assert!(ok && out.contains("paused schedule"), "{out}{err}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["schedules", "list"]).await;
    assert!(
        ok && out.contains("paused by ops") && out.contains("cron 0 2 * * *"),
        "{out}"
    );
    let (ok, out, _) = nimbus_beside_a_bus(
        url,
        schema,
        &["--json", "schedules", "pause", "Reports", "nightly"],
    )
    .await;
    assert!(ok && out.contains("\"already_paused\":true"), "{out}");
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["schedules", "resume", "Reports", "nightly"]).await;
    assert!(ok && out.contains("resumed schedule"), "{out}{err}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["schedules", "list"]).await;
    assert!(ok && out.contains("running"), "{out}");
    let (ok, _, err) =
        nimbus_beside_a_bus(url, schema, &["schedules", "pause", "Reports", "weekly"]).await;
    assert!(!ok && err.contains("nightly of Reports"), "{err}");
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn schedules_are_listed_paused_and_resumed_on_sqlite() {
    on_sqlite("cli-schedules", schedules_list_pause_and_resume).await;
}

#[actix_rt::test]
async fn schedules_are_listed_paused_and_resumed_on_postgres() {
    on_postgres("cli schedules", schedules_list_pause_and_resume).await;
}

/// `nimbus deduplication list|forget` on a key a deduplicated send left: counted in its scope,
/// forgotten, and the same send then goes through again.
async fn deduplication_list_and_forget(url: &str, schema: Option<&str>) {
    let mut builder = nimbus::Bus::builder()
        .names("Charges", "charges-1")
        .database_url(url)
        .create_queues_on_send(true)
        .route::<Ping>("Charges");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    let send = || bus.send_deduplicated("order-7", Ping, nimbus::SendOptions::new());
    assert!(send().await.unwrap());
    assert!(!send().await.unwrap());
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["--json", "deduplication", "list"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["scopes"][0]["scope"], "send:Charges", "{out}");
    assert_eq!(listed["scopes"][0]["keys"], 1, "{out}");
    let (ok, out, err) = nimbus_beside_a_bus(
        url,
        schema,
        &["deduplication", "forget", "send:Charges", "order-7"],
    )
    .await;
    assert!(ok && out.contains("forgot"), "{out}{err}");
    let (ok, out, _) = nimbus_beside_a_bus(
        url,
        schema,
        &[
            "--json",
            "deduplication",
            "forget",
            "send:Charges",
            "order-7",
        ],
    )
    .await;
    assert!(ok && out.contains("\"forgotten\":false"), "{out}");
    assert!(
        send().await.unwrap(),
        "forgotten: the send goes through again"
    );
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn deduplication_keys_are_listed_and_forgotten_on_sqlite() {
    on_sqlite("cli-dedup", deduplication_list_and_forget).await;
}

#[actix_rt::test]
async fn deduplication_keys_are_listed_and_forgotten_on_postgres() {
    on_postgres("cli dedup", deduplication_list_and_forget).await;
}

/// `nimbus limits` beside a bus whose pings are limited to one an hour: the rate's slot is
/// listed from the bus's start; the first ping is handled, the second waits in its queue, and
/// the listing shows the one slot taken and the messages it held back.
async fn limits_are_listed(url: &str, schema: Option<&str>) {
    let pings = CountingPings::default();
    let mut builder = nimbus::Bus::builder()
        .names("Charges", "charges-1")
        .database_url(url)
        .route::<Ping>("Charges")
        .handler(pings.clone())
        .limit::<Ping>(nimbus::Limit::rate(1, std::time::Duration::from_secs(3600)));
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    // The start made the rate's slot: listed, nothing taken or held yet.
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "limits"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let limit = &listed["limits"][0];
    assert_eq!(limit["scope"], "Charges|rate|Cli.Ping", "{listed}");
    assert_eq!(
        (&limit["taken"], &limit["held"]),
        (&0.into(), &0.into()),
        "{listed}"
    );
    bus.send(Ping).await.unwrap();
    bus.send(Ping).await.unwrap();
    let mut listed = serde_json::Value::Null;
    for _ in 0..600 {
        let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "limits"]).await;
        assert!(ok, "{err}");
        listed = serde_json::from_str(&out).unwrap();
        if listed["limits"][0]["held"].as_i64().unwrap_or(0) >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let limit = &listed["limits"][0];
    assert_eq!(limit["scope"], "Charges|rate|Cli.Ping", "{listed}");
    assert_eq!(
        (&limit["slots"], &limit["taken"]),
        (&1.into(), &1.into()),
        "{listed}"
    );
    assert!(limit["held"].as_i64().unwrap() >= 1, "{listed}");
    assert_eq!(
        pings.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one an hour"
    );
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["limits"]).await;
    assert!(ok && out.contains("Charges|rate|Cli.Ping"), "{out}{err}");
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn limits_are_listed_on_sqlite() {
    on_sqlite("cli-limits", limits_are_listed).await;
}

#[actix_rt::test]
async fn limits_are_listed_on_postgres() {
    on_postgres("cli limits", limits_are_listed).await;
}

/// `nimbus schema apply|verify|print --grouped-queue` and `nimbus groups`: a queue made with
/// the group columns verifies, one without them is named with the statements it lacks, and the
/// groups of messages waiting are listed longest first.
async fn groups_and_grouped_schema(url: &str, schema: Option<&str>) {
    let run = |args: &'static [&'static str]| nimbus(url, schema, args);
    let (ok, _, err) = run(&[
        "schema",
        "apply",
        "--grouped-queue",
        "Ledger",
        "--queue",
        "Plain",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["schema", "verify", "--grouped-queue", "Ledger"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["schema", "verify", "--grouped-queue", "Plain"]);
    assert!(
        !ok && err.contains("GroupKey"),
        "names what is missing: {err}"
    );
    let dialect = if url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgres"
    };
    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "schema",
            "print",
            "--dialect",
            dialect,
            "--grouped-queue",
            "Ledger",
        ],
    );
    assert!(
        ok && out.contains("GroupKey") && out.contains("Index_Group"),
        "{out}{err}"
    );
    let mut builder = nimbus::Bus::builder()
        .names("Teller", "teller-1")
        .database_url(url)
        .route::<Ping>("Ledger");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for account in ["ACC-1", "ACC-1", "ACC-2", "ACC-1"] {
        let options = nimbus::SendOptions::new().group(account);
        bus.send_with(Ping, options).await.unwrap();
    }
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "groups", "Ledger"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let groups = listed["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2, "{out}");
    assert_eq!(
        (&groups[0]["group"], &groups[0]["waiting"]),
        (&"ACC-1".into(), &3.into()),
        "{out}"
    );
    assert_eq!(groups[0]["held_until"], serde_json::Value::Null, "{out}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["groups", "Ledger"]).await;
    assert!(ok && out.contains("ACC-2"), "{out}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["groups", "Plain"]).await;
    assert!(ok && out.contains("no group"), "{out}");
    bus.stop().await.unwrap();
}

/// `nimbus schema apply|verify|print --priority-queue` and `nimbus priorities`: a queue made
/// with the Priority column verifies, one without it is named with the statements it lacks,
/// and its messages are counted per priority, the highest first.
async fn priorities_and_priority_schema(url: &str, schema: Option<&str>) {
    let run = |args: &'static [&'static str]| nimbus(url, schema, args);
    let (ok, _, err) = run(&[
        "schema",
        "apply",
        "--priority-queue",
        "Mailer",
        "--queue",
        "Plain",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["schema", "verify", "--priority-queue", "Mailer"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["schema", "verify", "--priority-queue", "Plain"]);
    assert!(
        !ok && err.contains("Priority"),
        "names what is missing: {err}"
    );
    let dialect = if url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgres"
    };
    let (ok, out, err) = nimbus(
        url,
        schema,
        &[
            "schema",
            "print",
            "--dialect",
            dialect,
            "--priority-queue",
            "Mailer",
        ],
    );
    assert!(ok && out.contains("Index_Priority"), "{out}{err}");
    let mut builder = nimbus::Bus::builder()
        .names("Teller", "teller-1")
        .database_url(url)
        .route::<Ping>("Mailer");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for priority in [0, 9, 9, -2] {
        let options = nimbus::SendOptions::new().priority(priority);
        bus.send_with(Ping, options).await.unwrap();
    }
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["--json", "priorities", "Mailer"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let wanted = serde_json::json!([
        {"priority": 9, "waiting": 2},
        {"priority": 0, "waiting": 1},
        {"priority": -2, "waiting": 1}
    ]);
    assert_eq!(listed["priorities"], wanted, "{out}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["priorities", "Plain"]).await;
    assert!(ok && out.contains("keeps no priorities"), "{out}");
    bus.stop().await.unwrap();
}

/// The same in the shared-table layout: `--layout shared schema apply --grouped-queue
/// --priority-queue` gives NimbusMessages the columns and indexes of both (printed once however
/// many queues name them), and the groups and priorities of one destination are listed.
async fn groups_and_priorities_in_the_shared_table(url: &str, schema: Option<&str>) {
    let shared = |args: &[&'static str]| {
        let mut all = vec!["--layout", "shared"];
        all.extend_from_slice(args);
        all
    };
    let (ok, _, err) = nimbus(
        url,
        schema,
        &shared(&[
            "schema",
            "apply",
            "--grouped-queue",
            "Ledger",
            "--priority-queue",
            "Mailer",
        ]),
    );
    assert!(ok, "{err}");
    let (ok, _, err) = nimbus(
        url,
        schema,
        &shared(&[
            "schema",
            "verify",
            "--grouped-queue",
            "Ledger",
            "--priority-queue",
            "Mailer",
        ]),
    );
    assert!(ok, "{err}");
    let dialect = if url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgres"
    };
    let (ok, out, err) = nimbus(
        url,
        schema,
        &shared(&[
            "schema",
            "print",
            "--dialect",
            dialect,
            "--grouped-queue",
            "Ledger",
            "--grouped-queue",
            "Journal",
            "--priority-queue",
            "Mailer",
        ]),
    );
    assert!(ok, "{err}");
    assert_eq!(out.matches("IX_NimbusMessages_Group").count(), 1, "{out}");
    assert_eq!(
        out.matches("IX_NimbusMessages_Priority").count(),
        1,
        "{out}"
    );
    let mut builder = nimbus::Bus::builder()
        .names("Teller", "teller-1")
        .database_url(url)
        .storage_layout(nimbus::StorageLayout::SharedTable)
        .route::<Ping>("Ledger");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for account in ["ACC-1", "ACC-1", "ACC-2"] {
        let options = nimbus::SendOptions::new().group(account);
        bus.send_with(Ping, options).await.unwrap();
    }
    for priority in [7, 0, 7] {
        let options = nimbus::SendOptions::new().priority(priority).to("Mailer");
        bus.send_with(Ping, options).await.unwrap();
    }
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &shared(&["--json", "groups", "Ledger"])).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let groups = listed["groups"].as_array().expect("groups");
    let keys: Vec<(&str, i64)> = groups
        .iter()
        .map(|g| (g["group"].as_str().unwrap(), g["waiting"].as_i64().unwrap()))
        .collect();
    assert_eq!(keys, [("ACC-1", 2), ("ACC-2", 1)], "{out}");
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &shared(&["--json", "priorities", "Mailer"])).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let wanted = serde_json::json!([
        {"priority": 7, "waiting": 2},
        {"priority": 0, "waiting": 1}
    ]);
    assert_eq!(listed["priorities"], wanted, "{out}");
    bus.stop().await.unwrap();
}

/// A message the CLI peeks at: what it carries, secret when encrypted.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
struct Note {
    text: String,
}

/// `nimbus peek` names an encrypted body's key and never shows it; a compressed body is shown
/// decompressed.
async fn peek_hides_encrypted_bodies(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Vault"]);
    assert!(ok, "{err}");
    let mut builder = nimbus::Bus::builder()
        .names("Writer", "writer-1")
        .database_url(url)
        .route::<Note>("Vault");
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let secret = Note {
        text: "TOP-SECRET".repeat(200),
    };
    let encrypting = builder
        .body_encryption(nimbus::BodyEncryption::new("2026-12", [9; 32]))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    encrypting.send(secret).await.unwrap();
    encrypting.stop().await.unwrap();
    let (ok, out, err) = nimbus(url, schema, &["peek", "Vault"]);
    assert!(ok, "{err}");
    assert!(out.contains("encrypted with key \"2026-12\""), "{out}");
    assert!(!out.contains("TOP-SECRET\""), "{out}");
    let (ok, out, err) = nimbus(url, schema, &["--json", "peek", "Vault", "--full"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        listed["messages"][0]["encrypted"]["key_id"], "2026-12",
        "{out}"
    );
    assert_eq!(
        listed["messages"][0]["body"],
        serde_json::Value::Null,
        "{out}"
    );
    // Given the key explicitly (a file: never on the command line), it decrypts.
    let key_file = std::env::temp_dir().join(format!("nimbus-cli-keys-{}", uuid::Uuid::new_v4()));
    std::fs::write(
        &key_file,
        "# id and key\nother AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n2026-12 CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=\n",
    )
    .unwrap();
    let key_path = key_file.display().to_string();
    let (ok, out, err) = nimbus(
        url,
        schema,
        &["peek", "Vault", "--full", "--key-file", key_path.as_str()],
    );
    assert!(ok, "{err}");
    assert!(out.contains("TOP-SECRETTOP-SECRET"), "decrypted: {out}");
    assert!(!out.contains("CQkJCQkJ"), "the key is never printed: {out}");
    std::fs::write(&key_file, "2026-12 not-base64\n").unwrap();
    let (ok, _, err) = nimbus(
        url,
        schema,
        &["peek", "Vault", "--key-file", key_path.as_str()],
    );
    assert!(!ok && err.contains("line 1"), "{err}");
    assert!(
        !err.contains("not-base64"),
        "the key's text is never printed: {err}"
    );
    let _ = std::fs::remove_file(&key_file);
    let mut builder = nimbus::Bus::builder()
        .names("Packer", "packer-1")
        .database_url(url)
        .route::<Note>("Vault")
        .body_compression(nimbus::BodyCompression::gzip());
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let compressing = builder.build().unwrap().start().await.unwrap();
    let open = Note {
        text: "open ".repeat(400),
    };
    compressing.send(open).await.unwrap();
    compressing.stop().await.unwrap();
    let (ok, out, err) = nimbus(url, schema, &["--json", "peek", "Vault", "--full"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = listed["messages"][1]["body"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("open open"), "decompressed: {out}");
}

/// `nimbus peek` names a body the claim check stored apart instead of showing it, and
/// `nimbus bodies` counts it under its queue until it is handled.
async fn bodies_stored_apart_are_listed(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Scans"]);
    assert!(ok, "{err}");
    let (ok, out, err) = nimbus(url, schema, &["bodies"]);
    assert!(ok && out.contains("no body is stored apart"), "{out}{err}");
    let mut builder = nimbus::Bus::builder()
        .names("Scanner", "scanner-1")
        .database_url(url)
        .route::<Note>("Scans")
        .claim_check(nimbus::ClaimCheck::in_database().above(1024));
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let sender = builder.build().unwrap().start().await.unwrap();
    sender
        .send(Note {
            text: "SCANNED-PAGE ".repeat(200),
        })
        .await
        .unwrap();
    sender.stop().await.unwrap();
    let (ok, out, err) = nimbus(url, schema, &["peek", "Scans", "--full"]);
    assert!(ok, "{err}");
    assert!(out.contains("stored apart in NimbusBodies"), "{out}");
    assert!(!out.contains("SCANNED-PAGE"), "{out}");
    let (ok, out, err) = nimbus(url, schema, &["--json", "peek", "Scans"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let stored = &listed["messages"][0]["body"]["stored_apart"];
    assert_eq!(stored["bytes"], 2611, "{out}");
    let (ok, out, err) = nimbus(url, schema, &["--json", "bodies"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["bodies"][0]["queue"], "Scans", "{out}");
    assert_eq!(listed["bodies"][0]["bodies"], 1, "{out}");
    assert_eq!(listed["bodies"][0]["bytes"], 2611, "{out}");
    let (ok, out, err) = nimbus(url, schema, &["bodies"]);
    assert!(
        ok && out.contains("Scans") && out.contains("2611"),
        "{out}{err}"
    );
}

#[actix_rt::test]
async fn bodies_stored_apart_are_listed_on_sqlite() {
    on_sqlite("cli-bodies", bodies_stored_apart_are_listed).await;
}

#[actix_rt::test]
async fn bodies_stored_apart_are_listed_on_postgres() {
    on_postgres("cli bodies", bodies_stored_apart_are_listed).await;
}

#[actix_rt::test]
async fn peek_hides_encrypted_bodies_on_sqlite() {
    on_sqlite("cli-encrypted", peek_hides_encrypted_bodies).await;
}

#[actix_rt::test]
async fn peek_hides_encrypted_bodies_on_postgres() {
    on_postgres("cli encrypted", peek_hides_encrypted_bodies).await;
}

#[actix_rt::test]
async fn groups_and_priorities_are_listed_in_the_shared_table_on_sqlite() {
    on_sqlite(
        "cli-shared-groups",
        groups_and_priorities_in_the_shared_table,
    )
    .await;
}

#[actix_rt::test]
async fn groups_and_priorities_are_listed_in_the_shared_table_on_postgres() {
    on_postgres(
        "cli shared groups",
        groups_and_priorities_in_the_shared_table,
    )
    .await;
}

#[actix_rt::test]
async fn priorities_are_counted_and_priority_queues_verified_on_sqlite() {
    on_sqlite("cli-priorities", priorities_and_priority_schema).await;
}

#[actix_rt::test]
async fn priorities_are_counted_and_priority_queues_verified_on_postgres() {
    on_postgres("cli priorities", priorities_and_priority_schema).await;
}

#[actix_rt::test]
async fn groups_are_listed_and_grouped_queues_verified_on_sqlite() {
    on_sqlite("cli-groups", groups_and_grouped_schema).await;
}

#[actix_rt::test]
async fn groups_are_listed_and_grouped_queues_verified_on_postgres() {
    on_postgres("cli groups", groups_and_grouped_schema).await;
}

/// A visit that starts a guest book entry; a saga keyed by the guest's name.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Cli.Visit")]
struct Visit {
    guest: String,
}

#[derive(Clone)]
struct GuestBook;

impl nimbus::saga::Saga for GuestBook {
    type State = u32;
    const NAME: &'static str = "Cli.GuestBook";
}

impl nimbus::saga::SagaHandler<Visit> for GuestBook {
    const STARTS: bool = true;
    fn correlation(m: &Visit) -> String {
        m.guest.clone()
    }
    async fn handle(
        &self,
        _m: Visit,
        saga: &mut nimbus::saga::SagaInstance<u32>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state += 1;
        Ok(())
    }
}

/// `nimbus sagas list|show` on what a running endpoint's saga stored.
async fn sagas_are_listed(url: &str, schema: Option<&str>) {
    let mut builder = nimbus::Bus::builder()
        .names("Guests", "guests-1")
        .database_url(url)
        .peek_delay(std::time::Duration::from_millis(100))
        .route::<Visit>("Guests")
        .saga_handler::<Visit, _>(GuestBook);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for guest in ["ada", "ada", "grace"] {
        bus.send(Visit {
            guest: guest.into(),
        })
        .await
        .unwrap();
    }
    wait_until("three visits are handled", || bus.metrics().handled == 3).await;
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "sagas", "list"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut rows: Vec<(String, i64)> = listed["sagas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["correlation"].as_str().unwrap_or_default().to_string(),
                s["state"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(rows, vec![("ada".into(), 2), ("grace".into(), 1)], "{out}");
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["sagas", "show", "Cli.GuestBook", "ada"]).await;
    assert!(
        ok && out.contains("\"state\": 2") && out.contains("\"version\": 2"),
        "{out}{err}"
    );
    let (ok, _, err) =
        nimbus_beside_a_bus(url, schema, &["sagas", "show", "Cli.GuestBook", "nobody"]).await;
    assert!(!ok && err.contains("nimbus sagas list"), "{err}");
    let (ok, out, _) =
        nimbus_beside_a_bus(url, schema, &["sagas", "list", "--type", "Cli.Other"]).await;
    assert!(ok && !out.contains("ada"), "{out}");
    // Ended by hand: completed (kept, no longer listed), then deleted.
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["sagas", "complete", "Cli.GuestBook", "ada"]).await;
    assert!(ok && out.contains("completed saga"), "{out}{err}");
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["sagas", "list"]).await;
    assert!(ok && !out.contains("ada") && out.contains("grace"), "{out}");
    let (ok, out, _) =
        nimbus_beside_a_bus(url, schema, &["sagas", "show", "Cli.GuestBook", "ada"]).await;
    assert!(ok && out.contains("\"completed\": true"), "{out}");
    let (ok, _, err) =
        nimbus_beside_a_bus(url, schema, &["sagas", "complete", "Cli.GuestBook", "ada"]).await;
    assert!(!ok && err.contains("completed already"), "{err}");
    let (ok, out, err) =
        nimbus_beside_a_bus(url, schema, &["sagas", "delete", "Cli.GuestBook", "ada"]).await;
    assert!(ok && out.contains("deleted saga"), "{out}{err}");
    let (ok, _, _) =
        nimbus_beside_a_bus(url, schema, &["sagas", "show", "Cli.GuestBook", "ada"]).await;
    assert!(!ok, "deleted");
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn sagas_are_listed_on_sqlite() {
    on_sqlite("cli-sagas", sagas_are_listed).await;
}

#[actix_rt::test]
async fn sagas_are_listed_on_postgres() {
    on_postgres("cli sagas", sagas_are_listed).await;
}

/// `send`, `peek`, `pause` and `resume` take a queue's address (`Billing@[schema]`, as
/// endpoints do), reaching a schema other than `--schema`; another database is refused.
#[tokio::test]
async fn queue_addresses_reach_other_schemas_on_postgres() {
    let url = postgres_url();
    let (here, there) = (
        format!("nimbus cli here {}", unique()),
        format!("nimbus cli there {}", unique()),
    );
    let (ok, _, err) = nimbus(
        &url,
        Some(&there),
        &["schema", "apply", "--queue", "Billing"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = nimbus(&url, Some(&here), &["schema", "apply", "--queue", "Sales"]);
    assert!(ok, "{err}");
    let address = format!("Billing@[{}]", there.replace(']', "]]"));
    let (ok, out, err) = nimbus(
        &url,
        Some(&here),
        &[
            "--json",
            "send",
            &address,
            "--type",
            "Billing.Invoice",
            "--body",
            "{\"n\":1}",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"id\""), "{out}");
    // The message is in the other schema, not in --schema.
    let (ok, out, err) = nimbus(&url, Some(&there), &["--json", "peek", "Billing"]);
    assert!(ok, "{err}");
    assert!(out.contains("Billing.Invoice"), "{out}");
    let postgres_form = format!("\"{}\".\"Billing\"", there.replace('"', "\"\""));
    let (ok, out, err) = nimbus(&url, Some(&here), &["--json", "peek", &postgres_form]);
    assert!(ok, "{err}");
    assert!(out.contains("Billing.Invoice"), "{out}");
    let (ok, _, err) = nimbus(&url, Some(&here), &["pause", &address]);
    assert!(ok, "{err}");
    let (ok, out, err) = nimbus(&url, Some(&there), &["--json", "queues"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"paused\":true"), "{out}");
    let (ok, _, err) = nimbus(&url, Some(&here), &["resume", &address]);
    assert!(ok, "{err}");
    let (ok, _, err) = nimbus(
        &url,
        Some(&here),
        &[
            "send",
            "Billing@[dbo]@[Accounts]",
            "--type",
            "T",
            "--body",
            "{}",
        ],
    );
    assert!(!ok);
    assert!(err.contains("--database"), "{err}");
    drop_schema(&url, &here).await;
    drop_schema(&url, &there).await;
}

/// The names of the subcommands `help` lists under "Commands:" (without `help` itself).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Runs `nimbus` with `args` and `DATABASE_URL` set to `url`; returns stdout and stderr
/// together.
fn output_with_database_env(url: &str, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_nimbus"))
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "trace")
        .args(args)
        .output()
        .expect("run nimbus");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn no_help_text_shows_the_password_of_database_url() {
    const SECRET: &str = "S3cret-in-help";
    let url = format!("postgres://app:{SECRET}@db.example:5432/orders");
    let mut pending = vec![Vec::<String>::new()];
    let mut seen = 0;
    while let Some(path) = pending.pop() {
        for flag in ["-h", "--help"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let text = output_with_database_env(&url, &args);
            assert!(
                !text.contains(SECRET),
                "`nimbus {}` shows the password:\n{text}",
                args.join(" ")
            );
            assert!(
                text.contains("DATABASE_URL") || !path.is_empty(),
                "the top-level help still names the variable: {text}"
            );
            seen += 1;
            if flag == "--help" {
                for sub in subcommands(&text) {
                    let mut next = path.clone();
                    next.push(sub);
                    pending.push(next);
                }
            }
        }
    }
    assert!(
        seen > 30,
        "every command's help was read ({seen} texts): the walk found the subcommands"
    );
}

#[test]
fn commands_that_fail_to_connect_never_print_the_password() {
    const SECRET: &str = "S3cret-on-error";
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port();
    for url in [
        format!("postgres://app:{SECRET}@127.0.0.1:{port}/orders"),
        format!(
            "Server=tcp:127.0.0.1,{port};Database=Orders;User Id=sa;Password={SECRET};\
             TrustServerCertificate=true"
        ),
    ] {
        for args in [
            &["queues"][..],
            &["dead-letters", "list"],
            &["schema", "verify"],
        ] {
            let text = output_with_database_env(&url, args);
            assert!(
                text.contains("cannot connect"),
                "`nimbus {}` reports the failed connection: {text}",
                args.join(" ")
            );
            assert!(
                !text.contains(SECRET),
                "`nimbus {}` shows the password: {text}",
                args.join(" ")
            );
        }
    }
}

#[actix_rt::test]
async fn commands_that_work_never_print_the_password_on_postgres() {
    // The local server trusts the login, so the password is accepted and ignored: each command
    // runs to the end with it in its URL.
    const SECRET: &str = "S3cret-at-work";
    let url = postgres_url().replacen("postgres@", &format!("postgres:{SECRET}@"), 1);
    assert!(
        url.contains(SECRET),
        "the test URL carries a password: {url}"
    );
    let schema = format!("nimbus secrets {}", unique());
    let (ok, _, err) = nimbus(
        &url,
        Some(&schema),
        &["schema", "apply", "--queue", "Sales"],
    );
    assert!(ok, "{err}");
    for args in [
        &["queues"][..],
        &["dead-letters", "list"],
        &["subscriptions", "list"],
        &["peek", "Sales"],
        &["schema", "verify", "--queue", "Sales"],
        &["sagas", "list"],
    ] {
        let mut with_schema = vec!["--schema", schema.as_str()];
        with_schema.extend_from_slice(args);
        let text = output_with_database_env(&url, &with_schema);
        assert!(
            !text.contains(SECRET),
            "`nimbus {}` shows the password: {text}",
            args.join(" ")
        );
    }
    drop_schema(&postgres_url(), &schema).await;
}

#[actix_rt::test]
async fn a_main_returning_the_error_prints_what_the_cli_prints() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port();
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let error = Database::connect(&url)
        .await
        .expect_err("nothing listens on the port");
    // `fn main() -> Result<(), NimbusError>` prints `Error: {:?}`.
    let printed_by_main = format!("{error:?}");
    assert_eq!(printed_by_main, error.to_string());
    assert!(
        printed_by_main.contains("Fix:") && !printed_by_main.contains("DbError"),
        "{printed_by_main}"
    );
    let (ok, _, err) = nimbus(&url, None, &["queues"]);
    assert!(!ok);
    assert_eq!(err.trim_end(), format!("error: {printed_by_main}"));
}

/// `nimbus instances` lists a running bus as live with its host and process, hides it once
/// stopped (saying so), and shows it as stopped with `--all`.
async fn instances_are_listed(url: &str, schema: Option<&str>) {
    let mut builder = nimbus::Bus::builder()
        .names("Listed", "listed-1")
        .database_url(url)
        .handler(Nobody);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    let pid = std::process::id().to_string();
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["instances"]).await;
    assert!(ok, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("listed-1"))
        .unwrap_or_else(|| panic!("the running bus is listed: {out}"));
    assert!(
        line.contains("Listed")
            && line.contains("live")
            && line.contains(&nimbus::host_name())
            && line.contains(&pid),
        "{line}"
    );
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["--json", "instances"]).await;
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let row = &listed["instances"][0];
    assert_eq!(row["instance"], "listed-1", "{listed}");
    assert_eq!(row["state"], "live");
    assert_eq!(row["handlers"], serde_json::json!(["Cli.Ping"]));
    bus.stop().await.unwrap();
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["instances"]).await;
    assert!(
        ok && !out.contains("listed-1") && out.contains("1 stopped instances not shown"),
        "{out}"
    );
    let (ok, out, _) = nimbus_beside_a_bus(url, schema, &["instances", "--all"]).await;
    assert!(
        ok && out
            .lines()
            .any(|l| l.contains("listed-1") && l.contains("stopped")),
        "{out}"
    );
}

#[actix_rt::test]
async fn instances_are_listed_on_sqlite() {
    on_sqlite("cli-instances", instances_are_listed).await;
}

#[actix_rt::test]
async fn instances_are_listed_on_postgres() {
    on_postgres("cli instances", instances_are_listed).await;
}

/// `nimbus monitoring` reads what a running bus reported: its queue with the messages it
/// handled, as a table and as JSON.
async fn monitoring_is_reported(url: &str, schema: Option<&str>) {
    let handled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = nimbus::Bus::builder()
        .names("Watched", "watched-1")
        .database_url(url)
        .peek_delay(std::time::Duration::from_millis(100))
        .monitoring_interval(Some(std::time::Duration::from_secs(1)))
        .route::<Ping>("Watched")
        .handler(CountingPings(handled.clone()));
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for _ in 0..3 {
        bus.send(Ping).await.unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let row = loop {
        let (ok, out, err) =
            nimbus_beside_a_bus(url, schema, &["--json", "monitoring", "--window", "15m"]).await;
        assert!(ok, "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let row = report["monitoring"].as_array().and_then(|rows| {
            rows.iter()
                .find(|r| r["kind"] == "queue" && r["name"] == "Watched" && r["handled"] == 3)
                .cloned()
        });
        if let Some(row) = row {
            break row;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the report never showed 3 handled: {out}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(row["instances"], serde_json::json!(["watched-1"]), "{row}");
    assert!(row["processing_p95_ms"].as_f64().is_some(), "{row}");
    let (ok, out, err) = nimbus_beside_a_bus(url, schema, &["monitoring"]).await;
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.contains("queue") && l.contains("Watched") && l.contains(" 3 ")),
        "{out}"
    );
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn monitoring_is_reported_on_sqlite() {
    on_sqlite("cli-monitoring", monitoring_is_reported).await;
}

#[actix_rt::test]
async fn monitoring_is_reported_on_postgres() {
    on_postgres("cli monitoring", monitoring_is_reported).await;
}

/// The reason of the dead letter of `message_type`, without its "message <id> (<type>): ",
/// as `--json dead-letters list` gives it.
fn listed_reason_of(url: &str, schema: Option<&str>, message_type: &str) -> String {
    let (_, out, _) = nimbus(url, schema, &["--json", "dead-letters", "list"]);
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let reason = listed["dead_letters"]
        .as_array()
        .and_then(|l| l.iter().find(|d| d["type"] == message_type))
        .and_then(|d| d["reason"].as_str())
        .unwrap_or_default()
        .to_string();
    reason
        .split_once("): ")
        .map_or(reason.clone(), |(_, cause)| cause.to_string())
}

/// `nimbus peek` cuts long bodies unless `--full`, and a reader that goes away (`| head`) ends
/// it quietly.
async fn peek_cuts_bodies_and_minds_closed_pipes(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "apply", "--queue", "Long"]);
    assert!(ok, "{err}");
    let db = match schema {
        Some(schema) => Database::connect_with(url, ConnectOptions::new().schema(schema))
            .await
            .unwrap(),
        None => Database::connect(url).await.unwrap(),
    };
    let body = format!("\"{}\"", "y".repeat(5_000));
    for _ in 0..60 {
        db.insert_raw(
            "Long",
            &RawMessage::new(
                r#"{"NServiceBus.EnclosedMessageTypes":"Cli.Long"}"#,
                body.clone(),
            ),
        )
        .await
        .unwrap();
    }
    let (ok, out, err) = nimbus(url, schema, &["peek", "Long", "-n", "1"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("3002 more characters; --full prints them") && out.len() < 3_000,
        "{out}"
    );
    let (ok, out, _) = nimbus(url, schema, &["peek", "Long", "-n", "1", "--full"]);
    assert!(ok && out.contains(&body), "--full prints the body whole");
    // 60 bodies of 5,000 characters overflow the pipe long after `head` has gone.
    let mut command = format!(
        "'{}' --database '{url}' peek Long -n 60 --full",
        env!("CARGO_BIN_EXE_nimbus")
    );
    if let Some(schema) = schema {
        command.push_str(&format!(" --schema '{schema}'"));
    }
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} | head -c 100 >/dev/null"))
        .output()
        .expect("run sh");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

#[actix_rt::test]
async fn peek_cuts_bodies_and_minds_closed_pipes_on_sqlite() {
    on_sqlite("cli-peek-long", peek_cuts_bodies_and_minds_closed_pipes).await;
}

/// `nimbus bridge --config`: a message sent to a queue of one SQLite file crosses to a queue of
/// another, and a stop signal ends the bridge with what it moved.
#[actix_rt::test]
async fn the_bridge_command_moves_a_queue_between_databases_until_stopped() {
    let (left, right) = (
        std::env::temp_dir().join(format!("nimbus-bridge-left-{}.db", unique())),
        std::env::temp_dir().join(format!("nimbus-bridge-right-{}.db", unique())),
    );
    let (left_url, right_url) = (
        format!("sqlite://{}", left.display()),
        format!("sqlite://{}", right.display()),
    );
    let config = std::env::temp_dir().join(format!("nimbus-bridge-{}.json", unique()));
    std::fs::write(
        &config,
        serde_json::json!({
            "name": "left-right",
            "sides": {"left": {"database_url": left_url}, "right": {"database_url": right_url}},
            "queues": [{"from": "left", "queue": "Outbox", "to": "right", "to_queue": "Inbox"}],
            "idle_poll": "50ms",
        })
        .to_string(),
    )
    .unwrap();
    let bridge = Command::new(env!("CARGO_BIN_EXE_nimbus"))
        .args(["bridge", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let right_db = Database::connect(&right_url).await.unwrap();
    // The bridge makes both queues when it starts.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let made = async || {
        right_db
            .queues()
            .await
            .is_ok_and(|queues| queues.iter().any(|q| q.name == "Inbox"))
    };
    while !made().await {
        assert!(std::time::Instant::now() < deadline, "the bridge started");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let sender = nimbus::Bus::builder()
        .names("Writer", "writer-1")
        .database_url(&left_url)
        .route::<Note>("Outbox")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sender
        .send(Note {
            text: "across".into(),
        })
        .await
        .unwrap();
    while right_db.queue_depth("Inbox").await.unwrap_or(0) < 1 {
        assert!(std::time::Instant::now() < deadline, "the message crossed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    sender.stop().await.unwrap();
    let stopped = Command::new("kill")
        .args(["-TERM", &bridge.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let output = bridge.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        out.contains("1 message(s) crossed, 0 duplicate(s)"),
        "{out}"
    );
    let body = &right_db.peek("Inbox", 1).await.unwrap()[0];
    assert!(
        body.headers.contains("Nimbus.Bridge.Crossed"),
        "{}",
        body.headers
    );
    for file in [left, right, config] {
        let _ = std::fs::remove_file(file);
    }
}
