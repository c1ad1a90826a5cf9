//! The `nimbus` binary end to end, on a fresh SQLite file and a fresh PostgreSQL schema (which
//! must be reachable: the test fails, never skips).

use std::process::Command;

use nimbus::admin::{ConnectOptions, Database, RawMessage};

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Runs `nimbus` with `args`; returns (success, stdout, stderr).
fn nimbus(database: &str, schema: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nimbus"));
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

/// The same flow on any database: verify fails before apply and names the statement; apply,
/// verify; peek shows a message without removing it; dead letters and subscriptions list.
async fn flow(url: &str, schema: Option<&str>) {
    let (ok, _, err) = nimbus(url, schema, &["schema", "verify", "--queue", "Sales"]);
    assert!(!ok, "verify fails on an empty database");
    assert!(
        err.contains("Fix:") && err.contains("CREATE TABLE"),
        "{err}"
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
    assert_eq!(peeked["messages"][0]["body"], r#"{"order":7}"#);
    assert_eq!(
        db.queue_depth("Sales").await.expect("depth"),
        1,
        "peek removes nothing"
    );

    let (ok, out, err) = nimbus(url, schema, &["--json", "dead-letters", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"dead_letters\":[]"), "{out}");
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
}

#[actix_rt::test]
async fn every_command_works_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-cli-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    flow(&url, None).await;
    let _ = std::fs::remove_file(&path);
}

#[actix_rt::test]
async fn every_command_works_on_postgres() {
    let url = std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let schema = format!("nimbus cli {}", unique());
    flow(&url, Some(&schema)).await;
    let db = Database::connect(&url)
        .await
        .expect("PostgreSQL is reachable");
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(&schema)))
        .await
        .expect("drop the test schema");
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
