//! `Bus::health` and its axum routes: ready while the database answers, not ready (503, with the
//! reason) while it does not and once a queue has failed longer than `critical_error_after`,
//! ready again when it is back, and not live once stopped. The database is cut off through a
//! loopback proxy (PostgreSQL, SQL Server); an SQLite file cannot be cut off from its process,
//! so there only the live, ready and stopped states are checked.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use nimbus::{Handler, HandlerContext, HandlerError, StorageLayout};
use nimbus_conformance::proxy::Proxy;
use nimbus_conformance::suite::Numbered;
use nimbus_conformance::{Kind, Setup, TestDatabase};

struct Quiet;

impl Handler<Numbered> for Quiet {
    async fn handle(&self, _m: Numbered, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `GET path` on 127.0.0.1:`port`: the status and the body.
async fn get(port: u16, path: &str) -> (u16, String) {
    let path = path.to_string();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .expect("send the request");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("read the answer");
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    })
    .await
    .expect("the request ran")
}

/// Serves `bus`'s health routes on a free port of 127.0.0.1.
async fn serve(bus: &nimbus::Bus) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    let app: axum::Router = bus.health_routes();
    actix_rt::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

async fn health_follows_the_database(setup: Setup) {
    nimbus_conformance::capture_logs();
    let db = TestDatabase::new(setup).await;
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let through = db.url_through(probe.local_addr().unwrap());
    drop(probe);
    let (url, proxy) = match through {
        Some((_, upstream)) => {
            let proxy = Proxy::start(upstream).await;
            let (url, _) = db.url_through(proxy.addr).unwrap();
            (url, Some(proxy))
        }
        None => (db.url(), None),
    };
    let mut builder = nimbus::Bus::builder()
        .names("Healthy", "healthy-1")
        .database_url(url)
        .storage_layout(db.layout)
        .peek_delay(Duration::from_millis(100))
        .critical_error_after(Duration::from_millis(500))
        .database_timeout(Duration::from_secs(2))
        .handler(Quiet);
    if let Some(schema) = db.schema() {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    let port = serve(&bus).await;

    wait_for("the queue's first peek is recorded", async || {
        bus.health().await.queues[0]
            .seconds_since_database_answered
            .is_some()
    })
    .await;
    let health = bus.health().await;
    assert!(health.live && health.ready, "{health:?}");
    assert!(health.database_reachable && health.reasons.is_empty());
    assert_eq!(health.queues.len(), 1);
    assert_eq!(health.queues[0].queue, "Healthy");
    assert!(health.queues[0].receiving && !health.queues[0].critical);
    let (status, body) = get(port, "/health/ready").await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["ready"], true);
    assert_eq!(json["instance"], "healthy-1");
    assert_eq!(get(port, "/health/live").await.0, 200);

    if let Some(proxy) = &proxy {
        proxy.cut();
        wait_for(
            "the readiness route says the database is gone",
            async || {
                let (status, body) = get(port, "/health/ready").await;
                status == 503 && body.contains("the database does not answer")
            },
        )
        .await;
        assert_eq!(get(port, "/health/live").await.0, 200, "still live");
        wait_for("the queue's outage goes critical", async || {
            bus.health().await.queues[0].critical
        })
        .await;
        let health = bus.health().await;
        assert!(!health.ready && !health.database_reachable, "{health:?}");
        assert!(
            health
                .reasons
                .iter()
                .any(|r| r.contains("longer than critical_error_after")),
            "{health:?}"
        );
        assert!(health.queues[0].last_error.is_some());
        proxy.restore();
        wait_for("ready again once the database is back", async || {
            bus.health().await.ready
        })
        .await;
        let (status, _) = get(port, "/health/ready").await;
        assert_eq!(status, 200);
    }

    bus.stop().await.unwrap();
    let health = bus.health().await;
    assert!(!health.live && !health.ready, "{health:?}");
    assert!(!health.queues[0].receiving);
    let (status, body) = get(port, "/health/live").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("the bus was stopped"), "{body}");
}

#[actix_rt::test]
async fn health_follows_the_bus_on_sqlite() {
    health_follows_the_database(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
}

#[actix_rt::test]
async fn health_follows_the_database_on_postgres() {
    health_follows_the_database(Setup::new(Kind::Postgres, StorageLayout::TablePerQueue)).await;
    health_follows_the_database(Setup::new(Kind::Postgres, StorageLayout::SharedTable)).await;
}

#[actix_rt::test]
#[ignore = "needs SQL Server: NIMBUS_SQLSERVER=<ADO.NET connection string> cargo test -p nimbus-conformance --test health -- --include-ignored"]
async fn health_follows_the_database_on_sql_server() {
    health_follows_the_database(Setup::new(Kind::SqlServer, StorageLayout::TablePerQueue)).await;
}
