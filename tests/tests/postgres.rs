//! The conformance suite on PostgreSQL (`NIMBUS_POSTGRES`, default 127.0.0.1:5432). An unreachable
//! server fails these tests; they never skip.

nimbus_conformance::conformance_suite!(nimbus_conformance::Kind::Postgres);

/// Seed 003's promise: a DBA creates the three tables from `schema/` once, and an application
/// whose login may not create anything runs on them with the shared-table layout.
mod dba_created_schema {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
    use nimbus_conformance::db::{pg_quote, postgres_url};
    use nimbus_conformance::suite::Numbered;

    struct Count(Arc<AtomicUsize>);

    #[nimbus::handler]
    impl Handler<Numbered> for Count {
        async fn handle(&self, _m: Numbered, _c: &mut HandlerContext) -> Result<(), HandlerError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    async fn admin() -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
            .await
            .expect("PostgreSQL is reachable (the suite never skips it)");
        actix_rt::spawn(async move {
            let _ = conn.await;
        });
        client
    }

    #[actix_rt::test]
    async fn shared_layout_runs_on_tables_a_dba_made_without_rights_to_create() {
        let id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
        let (schema, role) = (format!("nimbus dba {id}"), format!("nimbus_app_{id}"));
        let admin = admin().await;
        // The DBA: the schema, the printed creation script, and a login that may only use them.
        admin
            .batch_execute(&format!("CREATE SCHEMA {}", pg_quote(&schema)))
            .await
            .unwrap();
        // What `nimbus::admin::creation_script` prints is what the DBA runs.
        let script = nimbus::admin::creation_script(
            "postgres",
            Some(&schema),
            StorageLayout::SharedTable,
            &[],
        )
        .unwrap();
        admin.batch_execute(&script).await.unwrap();
        admin
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {s} TO {role}; \
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {role};",
                s = pg_quote(&schema)
            ))
            .await
            .unwrap();
        let config: tokio_postgres::Config = postgres_url().parse().unwrap();
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => "127.0.0.1".into(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let url = format!(
            "postgres://{role}@{host}:{port}/{}",
            config.get_dbname().unwrap_or("postgres")
        );
        let handled = Arc::new(AtomicUsize::new(0));
        let result = async {
            let bus = nimbus::Bus::builder()
                .names("Orders", "orders-1")
                .database_url(&url)
                .schema(&schema)
                .storage_layout(StorageLayout::SharedTable)
                .auto_create_schema(false)
                .peek_delay(Duration::from_millis(100))
                .route::<Numbered>("Orders")
                .handler(Count(handled.clone()))
                .build()?
                .start()
                .await?;
            for n in 0..5 {
                bus.send(Numbered { n }).await?;
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while handled.load(Ordering::SeqCst) < 5 && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            bus.stop().await?;
            // The same login cannot run the table-per-queue layout: it would need a table.
            let refused = nimbus::Bus::builder()
                .names("Orders", "orders-2")
                .database_url(&url)
                .schema(&schema)
                .auto_create_schema(false)
                .handler(Count(handled.clone()))
                .build()?
                .start()
                .await;
            // With auto-create on, the same login is told it may not create the table.
            let denied = nimbus::Bus::builder()
                .names("Orders", "orders-3")
                .database_url(&url)
                .schema(&schema)
                .handler(Count(handled.clone()))
                .build()?
                .start()
                .await;
            Ok::<_, nimbus::NimbusError>((
                refused.err().map(|e| e.to_string()),
                denied.err().map(|e| e.to_string()),
            ))
        }
        .await;
        let _ = admin
            .batch_execute(&format!(
                "DROP SCHEMA {} CASCADE; DROP ROLE {role};",
                pg_quote(&schema)
            ))
            .await;
        let (refused, denied) = result.expect("the shared layout runs with DML rights only");
        assert_eq!(handled.load(Ordering::SeqCst), 5);
        let denied = denied.expect("auto-create without the right to create fails");
        assert!(
            denied.contains("may not create") && denied.contains("42501"),
            "the error says the login lacks the right, with the server's code: {denied}"
        );
        let refused = refused.expect("the table-per-queue layout needs its tables");
        assert!(
            refused.contains("does not exist") && refused.contains("CREATE TABLE"),
            "{refused}"
        );
    }
}

/// `admin::Database::execute` with several statements: PostgreSQL runs them as one transaction,
/// and so does Nimbus, which sends them one at a time (Citus refuses several in one text): a
/// failing last statement leaves nothing of the first ones.
#[actix_rt::test]
async fn several_statements_given_to_execute_commit_together_or_not_at_all() {
    use nimbus_conformance::{Kind, Setup, TestDatabase};
    let db = TestDatabase::new(Setup::new(
        Kind::Postgres,
        nimbus::StorageLayout::TablePerQueue,
    ))
    .await;
    let table = db.table("Together");
    let failed = db
        .admin()
        .execute(&format!(
            "CREATE TABLE {table} (a int); INSERT INTO {table} VALUES (1); SELECT 1 / 0"
        ))
        .await;
    assert!(failed.is_err(), "the division by zero fails the text");
    assert!(!db.table_exists("Together").await, "the table went with it");
    db.admin()
        .execute(&format!(
            "CREATE TABLE {table} (a int); INSERT INTO {table} VALUES (1); INSERT INTO {table} VALUES (2)"
        ))
        .await
        .expect("a text that succeeds commits");
    assert_eq!(
        db.scalar(&format!("SELECT COUNT(*) FROM {table}"), &[])
            .await,
        2
    );
}
