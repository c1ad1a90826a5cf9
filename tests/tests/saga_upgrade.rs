//! A `NimbusSagas` made before completed instances were kept (no `CompletedAt`) is upgraded by
//! auto-create, and named by the schema check when auto-create is off; its running instances
//! go on.

use nimbus::saga::{Saga, SagaHandler, SagaInstance};
use nimbus::{HandlerContext, HandlerError, NimbusError, StorageLayout};
use nimbus_conformance::{Kind, Setup, TestDatabase};

#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Upgrade.Step")]
struct Step {
    key: String,
}

#[derive(Clone)]
struct Steps;

impl Saga for Steps {
    type State = u32;
    const NAME: &'static str = "Upgrade.Steps";
}

impl SagaHandler<Step> for Steps {
    const STARTS: bool = true;
    fn correlation(m: &Step) -> String {
        m.key.clone()
    }
    async fn handle(
        &self,
        _m: Step,
        saga: &mut SagaInstance<u32>,
        _ctx: &mut HandlerContext,
    ) -> Result<(), HandlerError> {
        saga.state += 1;
        Ok(())
    }
}

/// The table as it was made before `CompletedAt`, with one running instance at 1 step.
async fn old_table(db: &TestDatabase) {
    let table = db.table("NimbusSagas");
    let (create, insert) = match db.kind {
        Kind::Sqlite => (
            format!(
                "CREATE TABLE {table} (\"Id\" TEXT NOT NULL PRIMARY KEY, \"SagaType\" TEXT NOT \
                 NULL, \"CorrelationId\" TEXT NOT NULL, \"State\" TEXT NOT NULL, \"Version\" \
                 INTEGER NOT NULL, \"StartedAt\" TEXT NOT NULL, \"UpdatedAt\" TEXT NOT NULL)"
            ),
            format!(
                "INSERT INTO {table} VALUES ('00000000-0000-0000-0000-000000000001', \
                 'Upgrade.Steps', 'a', '1', 1, '2026-01-01 00:00:00.000', \
                 '2026-01-01 00:00:00.000')"
            ),
        ),
        Kind::Postgres => (
            format!(
                "CREATE TABLE {table} (\"Id\" uuid NOT NULL PRIMARY KEY, \"SagaType\" \
                 varchar(255) NOT NULL, \"CorrelationId\" varchar(255) NOT NULL, \"State\" text \
                 NOT NULL, \"Version\" bigint NOT NULL, \"StartedAt\" timestamp NOT NULL, \
                 \"UpdatedAt\" timestamp NOT NULL)"
            ),
            format!(
                "INSERT INTO {table} VALUES ('00000000-0000-0000-0000-000000000001', \
                 'Upgrade.Steps', 'a', '1', 1, now(), now())"
            ),
        ),
        Kind::SqlServer => (
            format!(
                "CREATE TABLE {table} ([Id] uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED, \
                 [SagaType] nvarchar(255) NOT NULL, [CorrelationId] nvarchar(255) NOT NULL, \
                 [State] nvarchar(max) NOT NULL, [Version] bigint NOT NULL, [StartedAt] \
                 datetime2 NOT NULL, [UpdatedAt] datetime2 NOT NULL)"
            ),
            format!(
                "INSERT INTO {table} VALUES ('00000000-0000-0000-0000-000000000001', \
                 'Upgrade.Steps', 'a', '1', 1, SYSUTCDATETIME(), SYSUTCDATETIME())"
            ),
        ),
    };
    db.execute(&create).await;
    db.execute(&insert).await;
}

async fn an_old_saga_table_is_upgraded(setup: Setup) {
    nimbus_conformance::capture_logs();
    let db = TestDatabase::new(setup).await;
    // Everything else in place, NimbusSagas in its old shape.
    let bus = db
        .builder("Upgrade", "upgrade-1")
        .saga_handler::<Step, _>(Steps)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.stop().await.unwrap();
    db.execute(&format!("DROP TABLE {}", db.table("NimbusSagas")))
        .await;
    old_table(&db).await;

    let refused = db
        .builder("Upgrade", "upgrade-1")
        .auto_create_schema(false)
        .saga_handler::<Step, _>(Steps)
        .build()
        .unwrap()
        .start()
        .await
        .expect_err("the old table lacks a column");
    assert!(
        matches!(&refused, NimbusError::MissingSchema { object, statement, .. }
            if object.contains("CompletedAt") && statement.contains("CompletedAt")),
        "{refused}"
    );

    let bus = db
        .builder("Upgrade", "upgrade-1")
        .route::<Step>("Upgrade")
        .saga_handler::<Step, _>(Steps)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(Step { key: "a".into() }).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while bus.metrics().handled < 1 {
        assert!(std::time::Instant::now() < deadline, "the step is handled");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let saga = db
        .admin()
        .saga("Upgrade.Steps", "a")
        .await
        .unwrap()
        .expect("the running instance went on");
    assert_eq!((saga.state.as_str(), saga.completed), ("2", false));
    bus.stop().await.unwrap();
}

#[actix_rt::test]
async fn an_old_saga_table_is_upgraded_on_sqlite() {
    an_old_saga_table_is_upgraded(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
}

#[actix_rt::test]
async fn an_old_saga_table_is_upgraded_on_postgres() {
    an_old_saga_table_is_upgraded(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test saga_upgrade -- --include-ignored"]
async fn an_old_saga_table_is_upgraded_on_sql_server() {
    an_old_saga_table_is_upgraded(Setup::new(Kind::SqlServer, StorageLayout::TablePerQueue)).await;
}
