//! `TestBus::start_on`: the test kit's endpoint in a schema of its own on the PostgreSQL or SQL
//! Server database a test names — handlers run, a failure ends in the dead letters, what a
//! handler sent waits in its queue — and the schema is gone once the test bus is dropped.

use nimbus::testing::TestBus;
use nimbus::{Handler, HandlerContext, HandlerError};
use nimbus_conformance::suite::Numbered;

/// Forwards each number to `Forwarded`, and fails on 13.
struct Forward;

impl Handler<Numbered> for Forward {
    async fn handle(&self, m: Numbered, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if m.n == 13 {
            return Err("unlucky".into());
        }
        ctx.send_to("Forwarded", Numbered { n: m.n * 10 })?;
        Ok(())
    }
}

/// `placeholder`: the database's first parameter (`$1`, `@P1`).
async fn a_test_bus_runs_in_a_schema_of_its_own(url: &str, placeholder: &str) {
    nimbus_conformance::capture_logs();
    let test = TestBus::start_on(url, "Kit", |b| {
        b.handler(Forward)
            .route::<Numbered>("Kit")
            .immediate_retries(0)
            .delayed_retries(1, std::time::Duration::from_millis(100))
    })
    .await
    .unwrap();
    let schema = test.schema().expect("a schema of its own").to_string();
    assert!(schema.starts_with("nimbus_test_"), "{schema}");
    assert_eq!(test.database_url(), url);
    test.bus().send(Numbered { n: 1 }).await.unwrap();
    test.bus().send(Numbered { n: 13 }).await.unwrap();
    test.wait_until(|m| m.handled == 1 && m.dead_lettered == 1)
        .await
        .unwrap();
    assert_eq!(test.messages_in("Forwarded").await.unwrap().len(), 1);
    assert_eq!(test.dead_letters().await.unwrap().len(), 1);
    test.stop().await.unwrap();
    drop(test);
    let db = nimbus::admin::Database::connect(url).await.unwrap();
    let left = db
        .query_scalar(
            &format!("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = {placeholder}"),
            &[&schema],
        )
        .await;
    assert_eq!(left.unwrap(), 0, "the test bus dropped {schema}");
}

#[actix_rt::test]
async fn a_test_bus_runs_in_a_schema_of_its_own_on_postgres() {
    a_test_bus_runs_in_a_schema_of_its_own(&nimbus_conformance::db::postgres_url(), "$1").await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test test_kit -- --include-ignored"]
async fn a_test_bus_runs_in_a_schema_of_its_own_on_sql_server() {
    let url =
        std::env::var("NIMBUS_SQLSERVER").expect(nimbus_conformance::db::SQLSERVER_HOW_TO_RUN);
    a_test_bus_runs_in_a_schema_of_its_own(&url, "@P1").await;
}

#[actix_rt::test]
async fn an_sqlite_url_is_refused_with_the_way_to_go() {
    let error = TestBus::start_on("sqlite://kit.db", "Kit", |b| b)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("TestBus::start"), "{error}");
    assert!(!std::path::Path::new("kit.db").exists());
}
