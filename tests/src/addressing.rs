//! Queues in other schemas, by address (`Billing@[schema]`, NServiceBus's form): sends, routes,
//! sends from a handler that commit or roll back with its receive, and replies that find their
//! way back to a requester in another schema. Part of [`crate::suite`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use nimbus::{Command, Handler, HandlerContext, HandlerError, Message, NimbusError};
use serde::{Deserialize, Serialize};

use crate::db::{Kind, Setup, TestDatabase};
use crate::suite::{count_of, seen_list, wait_until, Numbered, Recorder};

/// Asks the receiver to forward `n` to the queue at `to`, failing the first attempt after the
/// send when `fail_first`.
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.Forward")]
struct Forward {
    n: u32,
    to: String,
}

#[derive(Clone, Default)]
struct Forwarder {
    attempts: Arc<AtomicUsize>,
}

#[nimbus::handler]
impl Handler<Forward> for Forwarder {
    async fn handle(&self, m: Forward, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        ctx.send_to(&m.to, Numbered { n: m.n })?;
        if self.attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err("the first attempt fails after its send".into());
        }
        Ok(())
    }
}

/// A request answered from another schema.
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Conformance.Ping")]
struct Ping {
    n: u32,
}

/// The reply to [`Ping`].
#[derive(Debug, Clone, Serialize, Deserialize, Message)]
#[nimbus(type_name = "Conformance.Pong")]
struct Pong {
    n: u32,
    reply_to: String,
}

struct Ponger;

#[nimbus::handler]
impl Handler<Ping> for Ponger {
    async fn handle(&self, m: Ping, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        let reply_to = ctx
            .headers()
            .get(nimbus::headers::REPLY_TO_ADDRESS)
            .cloned()
            .unwrap_or_default();
        ctx.reply(Pong { n: m.n, reply_to })?;
        Ok(())
    }
}

/// `queue` in `db`'s schema, as an address in NServiceBus's SQL Server form.
fn address(queue: &str, db: &TestDatabase) -> String {
    let schema = db.schema().unwrap_or("main");
    format!("{queue}@[{}]", schema.replace(']', "]]"))
}

pub async fn queues_in_another_schema_are_reached_by_address(kind: Setup) {
    let here = TestDatabase::new(kind).await;
    if kind.kind == Kind::Sqlite || here.shared_table() {
        // One database file has one schema; the shared table is one table per schema.
        let bus = here
            .builder("Sales", "sales-1")
            .build()
            .unwrap()
            .start()
            .await
            .unwrap();
        let err = bus
            .send_to("Billing@[elsewhere]", Numbered { n: 1 })
            .await
            .unwrap_err();
        assert!(matches!(err, NimbusError::Config { .. }), "{err}");
        let text = err.to_string();
        let reason = if kind.kind == Kind::Sqlite {
            "one database file"
        } else {
            "not supported yet"
        };
        assert!(text.contains(reason), "{text}");
        let route = here
            .builder("Sales", "sales-2")
            .route::<Numbered>("Billing@[elsewhere]")
            .build();
        assert!(
            route.is_err(),
            "a route the database cannot reach fails build"
        );
        bus.stop().await.unwrap();
        return;
    }
    let there = TestDatabase::new(kind).await;
    let billing = address("Billing", &there);

    // The receiver in the other schema.
    let seen = seen_list();
    let receiver = there
        .builder("Billing", "billing-1")
        .handler::<Numbered, _>(Recorder::new("billing-1", &seen))
        .handler(Ponger)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();

    // Bus::send_to and a route name it by address.
    let forwarder = Forwarder::default();
    let sales = here
        .builder("Sales", "sales-1")
        .route::<Numbered>(billing.as_str())
        .route::<Ping>(billing.as_str())
        .enable_requests()
        .handler(forwarder.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sales.send_to(&billing, Numbered { n: 1 }).await.unwrap();
    sales.send(Numbered { n: 2 }).await.unwrap();
    wait_until("both sends reach the other schema", || async {
        count_of(&seen) == 2
    })
    .await;

    // A handler's send there commits with its receive: the failed first attempt's is gone.
    sales
        .send_to(
            "Sales",
            Forward {
                n: 3,
                to: billing.clone(),
            },
        )
        .await
        .unwrap();
    wait_until("the forwarded message arrives", || async {
        count_of(&seen) == 3
    })
    .await;
    assert_eq!(forwarder.attempts.load(Ordering::SeqCst), 2);

    // The reply goes back to the requester's schema, by the address it wrote.
    let pong: Pong = sales.request(Ping { n: 4 }).await.unwrap();
    assert_eq!(pong.n, 4);
    let requester = nimbus::QueueName::parse(&pong.reply_to).unwrap();
    assert_eq!(requester.schema().map(|s| s.as_str()), here.schema());
    assert_eq!(requester.as_str(), "Sales.sales-1");

    // A queue missing there is named, not created.
    let missing = address("Nobody", &there);
    let err = sales
        .send_to(&missing, Numbered { n: 5 })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist"), "{err}");
    assert!(!there.queue_exists("Nobody").await);

    sales.stop().await.unwrap();
    receiver.stop().await.unwrap();
    let mut got: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    got.sort();
    assert_eq!(
        got,
        vec![1, 2, 3],
        "each message once, none from the failed attempt"
    );
    assert_eq!(there.count("Billing").await, 0);
    assert!(here.dead_letters().await.is_empty());
    assert!(there.dead_letters().await.is_empty());

    // The admin API takes the same addresses: a handle on this schema refuses the other's
    // queue, saying how to reach it, and connect_for opens a handle there.
    let err = here
        .admin()
        .queue_depth(&billing)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("connect_for"), "{err}");
    let options = nimbus::admin::ConnectOptions::new().layout(kind.layout);
    let (admin, queue) = nimbus::admin::Database::connect_for(&here.url(), options, &billing)
        .await
        .unwrap();
    assert_eq!(queue, "Billing");
    let headers = r#"{"NServiceBus.EnclosedMessageTypes":"Conformance.Numbered"}"#;
    admin
        .insert_raw(
            &queue,
            &nimbus::admin::RawMessage::new(headers, b"{\"n\":6}"),
        )
        .await
        .unwrap();
    assert_eq!(admin.queue_depth(&queue).await.unwrap(), 1);
    assert_eq!(
        there.count("Billing").await,
        1,
        "written in the other schema"
    );
}

/// `connection` with its database replaced by `database`.
fn with_database(connection: &str, database: &str) -> String {
    let mut parts: Vec<String> = connection
        .split(';')
        .filter(|kv| {
            let key = kv
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            !kv.trim().is_empty() && key != "database" && key != "initial catalog"
        })
        .map(str::to_string)
        .collect();
    parts.push(format!("Database={database}"));
    parts.join(";")
}

/// SQL Server: a queue in another database on the same server, by `Queue@[schema]@[database]`,
/// takes a handler's send in the receive's transaction (rolled back with a failed attempt).
pub async fn a_queue_in_another_database_on_the_same_server_takes_sends(kind: Setup) {
    assert_eq!(kind.kind, Kind::SqlServer, "SQL Server only");
    let here = TestDatabase::new(kind).await;
    let other = format!("nimbus_other_{}", uuid::Uuid::new_v4().simple());
    let other = &other[..26];
    here.execute(&format!("CREATE DATABASE [{other}]")).await;
    let elsewhere = with_database(&here.url(), other);
    let seen = seen_list();
    let billing = nimbus::Bus::builder()
        .names("Billing", "billing-1")
        .database_url(elsewhere.clone())
        .peek_delay(std::time::Duration::from_millis(100))
        .handler::<Numbered, _>(Recorder::new("billing-1", &seen))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let address = format!("Billing@[dbo]@[{other}]");
    let forwarder = Forwarder::default();
    let sales = here
        .builder("Sales", "sales-1")
        .handler(forwarder.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sales.send_to(&address, Numbered { n: 1 }).await.unwrap();
    sales
        .send_to(
            "Sales",
            Forward {
                n: 2,
                to: address.clone(),
            },
        )
        .await
        .unwrap();
    wait_until("both messages reach the other database", || async {
        count_of(&seen) == 2
    })
    .await;
    assert_eq!(forwarder.attempts.load(Ordering::SeqCst), 2);
    sales.stop().await.unwrap();
    billing.stop().await.unwrap();
    let mut got: Vec<u32> = seen.lock().unwrap().iter().map(|(_, n)| *n).collect();
    got.sort();
    assert_eq!(
        got,
        vec![1, 2],
        "the failed attempt's send rolled back with it"
    );
    // The buses' connections close as their handles go; the database can be dropped once the
    // server has seen the last of its sessions end.
    drop((sales, billing));
    let drop_database = format!("DROP DATABASE [{other}]");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match here.admin().execute(&drop_database).await {
            Ok(()) => break,
            Err(e) if e.to_string().contains("in use") && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("dropping database {other}: {e}"),
        }
    }
}
