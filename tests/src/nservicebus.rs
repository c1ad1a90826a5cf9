//! Rows exactly as NServiceBus 9 writes them, handled by a Nimbus endpoint, and the reply it
//! writes checked field by field as NServiceBus's receive path reads it. Part of
//! [`crate::suite`]. In NServiceBus's PostgreSQL table shape the rows are written and read with
//! the statements of NServiceBus's PostgreSQL transport.
//!
//! Sources (Particular's repositories):
//! * header names: `src/NServiceBus.Core/Headers.cs` (Particular/NServiceBus);
//! * the row: `MessageRow.From` and `PrepareSendCommand` in
//!   `src/NServiceBus.Transport.Sql.Shared/Queuing/MessageRow.cs` (Particular/NServiceBus.SqlServer):
//!   `Id` a new GUID of its own (not the message id), `Headers` the JSON of a
//!   `Dictionary<string, string>`, `Body` the serializer's bytes;
//! * the header JSON: `DictionarySerializer.Serialize` in
//!   `src/NServiceBus.Transport.Sql.Shared/Queuing/DictionarySerializer.cs`: System.Text.Json
//!   with relaxed escaping, then every `/` written `\/` (DataContract compatibility);
//! * `NServiceBus.ReplyToAddress`: the transport's canonical address,
//!   `CanonicalQueueAddress` in `src/NServiceBus.Transport.SqlServer/Addressing/` (`table@[schema]@[catalog]`)
//!   and `src/NServiceBus.Transport.PostgreSql/Addressing/` (`"schema"."table"`);
//! * the receive: `MessageRow.ReadRow` reads `Id` as a `Guid`, `Expired` as an `int`, `Headers`
//!   as text deserialized into `Dictionary<string, string>` (`Message.InitializeHeaders`), and
//!   `Body` as bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nimbus::{Command, Handler, HandlerContext, HandlerError, Message};
use serde::{Deserialize, Serialize};

use crate::db::{Kind, Setup, TestDatabase};
use crate::suite::wait_until;

/// NServiceBus's `PlaceOrder`, serialized by its System.Text.Json serializer (property names as
/// declared in C#).
#[derive(Debug, Clone, Serialize, Deserialize, Command)]
#[nimbus(type_name = "Shop.Messages.PlaceOrder")]
#[serde(rename_all = "PascalCase")]
struct PlaceOrder {
    order_id: String,
    quantity: u32,
}

/// The reply an NServiceBus client waits for.
#[derive(Debug, Clone, Serialize, Deserialize, Message)]
#[nimbus(type_name = "Shop.Messages.OrderAccepted")]
#[serde(rename_all = "PascalCase")]
struct OrderAccepted {
    order_id: String,
}

/// What the handler saw of each message: the message id, the attempt and the headers.
type Seen = Arc<Mutex<Vec<(String, PlaceOrder, nimbus::Headers)>>>;

#[derive(Clone, Default)]
struct TakeOrder {
    seen: Seen,
}

#[nimbus::handler]
impl Handler<PlaceOrder> for TakeOrder {
    async fn handle(&self, m: PlaceOrder, ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.seen.lock().unwrap().push((
            ctx.message_id().to_string(),
            m.clone(),
            ctx.headers().clone(),
        ));
        ctx.reply(OrderAccepted {
            order_id: m.order_id,
        })?;
        Ok(())
    }
}

const MESSAGE_ID: &str = "4a8f1c2e-9b3d-4e5f-a6b7-0c1d2e3f4a5b";
const CONVERSATION_ID: &str = "7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3f2e";

/// The headers NServiceBus 9 sets on a command sent from an endpoint `Shop.Web` whose input
/// queue is at `reply_to`, as its transport writes them into the `Headers` column.
fn nservicebus_headers(reply_to: &str, retried: bool) -> String {
    let mut pairs = vec![
        ("NServiceBus.MessageId", MESSAGE_ID.to_string()),
        ("NServiceBus.MessageIntent", "Send".into()),
        ("NServiceBus.ConversationId", CONVERSATION_ID.into()),
        ("NServiceBus.CorrelationId", MESSAGE_ID.into()),
        ("NServiceBus.ReplyToAddress", reply_to.into()),
        ("NServiceBus.OriginatingMachine", "WEB01".into()),
        ("NServiceBus.OriginatingEndpoint", "Shop.Web".into()),
        (
            "$.diagnostics.originating.hostid",
            "8f14e45fceea167a5a36dedd4bea2543".into(),
        ),
        ("NServiceBus.ContentType", "application/json".into()),
        (
            "NServiceBus.EnclosedMessageTypes",
            "Shop.Messages.PlaceOrder, Shop.Messages, Version=1.0.0.0, Culture=neutral, \
             PublicKeyToken=null"
                .into(),
        ),
        ("NServiceBus.Version", "9.2.3".into()),
        (
            "NServiceBus.TimeSent",
            "2026-12-02 18:30:15:123456 Z".into(),
        ),
        (
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        ),
    ];
    if retried {
        // A delayed retry: NServiceBus's recoverability adds these when it sends the message
        // back through its delayed delivery.
        pairs.push(("NServiceBus.Retries", "1".into()));
        pairs.push((
            "NServiceBus.Retries.Timestamp",
            "2026-12-02 18:30:25:654321 Z".into(),
        ));
        pairs.push(("NServiceBus.ProcessingEndpoint", "Shop.Sales".into()));
    }
    // System.Text.Json's order is the dictionary's insertion order; then `/` becomes `\/`.
    let body = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
        .collect::<Vec<_>>()
        .join(",");
    format!("{{{body}}}").replace('/', "\\/")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `queue` in `db`'s schema as NServiceBus's transport for that database writes an address.
fn nservicebus_address(queue: &str, db: &TestDatabase) -> String {
    match db.kind {
        Kind::SqlServer => {
            let catalog = crate::db::sqlserver_connection_string()
                .and_then(|c| {
                    c.split(';')
                        .filter_map(|kv| kv.split_once('='))
                        .find(|(k, _)| {
                            let k = k.trim().to_ascii_lowercase();
                            k == "database" || k == "initial catalog"
                        })
                        .map(|(_, v)| v.trim().to_string())
                })
                .unwrap_or_else(|| "master".into());
            format!(
                "{queue}@[{}]@[{catalog}]",
                db.schema().unwrap_or("dbo").replace(']', "]]")
            )
        }
        Kind::Postgres => format!(
            "\"{}\".\"{queue}\"",
            db.schema().unwrap_or("public").replace('"', "\"\"")
        ),
        Kind::Sqlite => queue.to_string(),
    }
}

/// A row as NServiceBus's receive reads it (`MessageRow.ReadRow`): `Id`, `Expired`, `Headers`,
/// `Body`.
struct NServiceBusRow {
    id: String,
    expired: bool,
    headers: String,
    body: Vec<u8>,
}

/// NServiceBus's PostgreSQL transport's send (`SendText` in
/// `src/NServiceBus.Transport.PostgreSql/PostgreSqlConstants.cs`, parameters as
/// `MessageRow.PrepareSendCommand` types them: a Guid, an Int32 time to be received or NULL, the
/// headers text and the body bytes), into the table its addressing names `"schema"."queue"`.
const NSERVICEBUS_POSTGRES_SEND: &str = "INSERT INTO {table} (Id, Expires, Headers, Body) \
     VALUES ($1, (now() AT TIME ZONE 'UTC') + ($2 || ' ms')::INTERVAL, $3, $4)";

/// NServiceBus's PostgreSQL transport's receive (`ReceiveText`, same file): the oldest row by
/// `Seq` no other transaction holds, deleted, returning `Expired` as an integer.
const NSERVICEBUS_POSTGRES_RECEIVE: &str = "DELETE FROM {table} rs \
     WHERE rs.id = (SELECT id FROM {table} ORDER BY Seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
     RETURNING rs.id, CASE WHEN Expires IS NULL THEN 0 \
     WHEN Expires > now() AT TIME ZONE 'UTC' THEN 0 ELSE 1 END Expired, rs.Headers, rs.Body";

/// Writes a message into `queue` as an NServiceBus endpoint on `db` does: in NServiceBus's
/// PostgreSQL table shape with its own statement; otherwise (seed 000's table, NServiceBus's SQL
/// Server shape) with the columns its SQL Server transport fills.
async fn send_as_nservicebus(db: &TestDatabase, queue: &str, headers: &str, body: &[u8]) {
    if !db.nservicebus_shape() {
        db.insert_raw(queue, headers, body, false).await;
        return;
    }
    use tokio_postgres::types::Type;
    let client = crate::db::pg_client().await;
    let sql = NSERVICEBUS_POSTGRES_SEND.replace("{table}", &db.table(queue));
    let statement = client
        .prepare_typed(&sql, &[Type::UUID, Type::INT4, Type::TEXT, Type::BYTEA])
        .await
        .expect("NServiceBus's send prepares against the queue table");
    let no_time_to_be_received: Option<i32> = None;
    client
        .execute(
            &statement,
            &[
                &uuid::Uuid::new_v4(),
                &no_time_to_be_received,
                &headers,
                &body,
            ],
        )
        .await
        .expect("NServiceBus's send writes the row");
}

/// Takes every message of `queue` as an NServiceBus endpoint on `db` reads them: with its
/// PostgreSQL receive in NServiceBus's PostgreSQL table shape; otherwise the rows as they are.
async fn receive_as_nservicebus(db: &TestDatabase, queue: &str) -> Vec<NServiceBusRow> {
    if !db.nservicebus_shape() {
        return db
            .admin()
            .peek(queue, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|row| {
                assert!(row.unreadable.is_none());
                NServiceBusRow {
                    id: row.id,
                    expired: row.expires.is_some(),
                    headers: row.headers,
                    body: row.body,
                }
            })
            .collect();
    }
    let client = crate::db::pg_client().await;
    let sql = NSERVICEBUS_POSTGRES_RECEIVE.replace("{table}", &db.table(queue));
    let mut rows = Vec::new();
    while let Some(row) = client
        .query_opt(&sql, &[])
        .await
        .expect("NServiceBus's receive runs against the queue table")
    {
        let id: uuid::Uuid = row.get(0);
        let expired: i32 = row.get(1);
        rows.push(NServiceBusRow {
            id: id.to_string(),
            expired: expired == 1,
            headers: row.get(2),
            body: row.get(3),
        });
    }
    rows
}

pub async fn rows_as_nservicebus_writes_them_are_handled_and_answered(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    if db.shared_table() {
        // NServiceBus has no shared table: its endpoints share the table-per-queue layout.
        return;
    }
    db.admin()
        .create_schema(&["Shop.Sales", "Shop.Web"])
        .await
        .unwrap();
    let reply_to = nservicebus_address("Shop.Web", &db);
    let body = br#"{"OrderId":"order-17","Quantity":3}"#;
    send_as_nservicebus(
        &db,
        "Shop.Sales",
        &nservicebus_headers(&reply_to, false),
        body,
    )
    .await;

    let handler = TakeOrder::default();
    let sales = db
        .builder("Shop.Sales", "sales-1")
        .handler(handler.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_until("the NServiceBus command is handled", || async {
        handler.seen.lock().unwrap().len() == 1
    })
    .await;
    // A delayed retry of the same message arrives too: handled again, with the same id.
    send_as_nservicebus(
        &db,
        "Shop.Sales",
        &nservicebus_headers(&reply_to, true),
        body,
    )
    .await;
    wait_until("the delayed retry is handled", || async {
        handler.seen.lock().unwrap().len() == 2
    })
    .await;
    sales.stop().await.unwrap();

    let seen = handler.seen.lock().unwrap().clone();
    for (message_id, order, headers) in &seen {
        // The message id is NServiceBus's header, not the row's own Id.
        assert_eq!(message_id, MESSAGE_ID);
        assert_eq!((order.order_id.as_str(), order.quantity), ("order-17", 3));
        assert_eq!(headers["NServiceBus.ContentType"], "application/json");
        assert_eq!(headers["NServiceBus.Version"], "9.2.3");
    }
    assert_eq!(seen[1].2["NServiceBus.Retries"], "1");

    // The replies, read as NServiceBus's receive reads a row.
    let replies = receive_as_nservicebus(&db, "Shop.Web").await;
    assert_eq!(replies.len(), 2, "one reply per handled message");
    for row in &replies {
        let id = uuid::Uuid::parse_str(&row.id).expect("Id reads as a Guid");
        assert!(!row.expired, "Expires NULL: Expired reads 0");
        // Dictionary<string, string>: every value a JSON string.
        let headers: HashMap<String, serde_json::Value> =
            serde_json::from_str(&row.headers).expect("Headers is a JSON object");
        let text = |name: &str| -> &str {
            headers
                .get(name)
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| panic!("{name} missing or not a string: {}", row.headers))
        };
        assert!(headers.values().all(|v| v.is_string()), "{}", row.headers);
        assert_eq!(text("NServiceBus.MessageIntent"), "Reply");
        assert_eq!(text("NServiceBus.CorrelationId"), MESSAGE_ID);
        assert_eq!(text("NServiceBus.ConversationId"), CONVERSATION_ID);
        assert_eq!(text("NServiceBus.RelatedTo"), MESSAGE_ID);
        assert_eq!(text("NServiceBus.ContentType"), "application/json");
        assert_eq!(
            text("NServiceBus.EnclosedMessageTypes"),
            "Shop.Messages.OrderAccepted"
        );
        assert_eq!(text("NServiceBus.OriginatingEndpoint"), "Shop.Sales");
        assert_eq!(text("NServiceBus.OriginatingMachine"), "sales-1");
        assert_eq!(
            uuid::Uuid::parse_str(text("NServiceBus.MessageId")).ok(),
            Some(id)
        );
        assert!(
            nimbus::headers::parse_time(text("NServiceBus.TimeSent")).is_some(),
            "TimeSent in NServiceBus's wire format: {}",
            text("NServiceBus.TimeSent")
        );
        // Its own address, in the form NServiceBus's transport parses.
        let back = nimbus::QueueName::parse(text("NServiceBus.ReplyToAddress")).unwrap();
        assert_eq!(back.as_str(), "Shop.Sales");
        if kind.kind != Kind::Sqlite {
            assert_eq!(back.schema().map(|s| s.as_str()), db.schema());
        }
        let reply: serde_json::Value = serde_json::from_slice(&row.body).unwrap();
        assert_eq!(reply, serde_json::json!({"OrderId": "order-17"}));
    }
    assert_eq!(db.count("Shop.Sales").await, 0);
    assert!(db.dead_letters().await.is_empty());
}

/// An event NServiceBus endpoints subscribe to by its type's full name.
#[derive(Debug, Clone, Serialize, Deserialize, nimbus::Event)]
#[nimbus(type_name = "Shop.Messages.OrderPlaced")]
#[serde(rename_all = "PascalCase")]
struct OrderPlaced {
    order_id: String,
}

#[derive(Clone, Default)]
struct Ship {
    seen: Arc<Mutex<Vec<String>>>,
}

#[nimbus::handler]
impl Handler<OrderPlaced> for Ship {
    async fn handle(&self, m: OrderPlaced, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.seen.lock().unwrap().push(m.order_id);
        Ok(())
    }
}

/// The address Nimbus writes for its own queue `queue` in `db`'s schema.
fn nimbus_address(queue: &str, db: &TestDatabase) -> String {
    match db.kind {
        Kind::SqlServer => format!(
            "{queue}@[{}]",
            db.schema().unwrap_or("dbo").replace(']', "]]")
        ),
        _ => nservicebus_address(queue, db),
    }
}

pub async fn subscriptions_are_shared_with_nservicebus_both_ways(kind: Setup) {
    let db = TestDatabase::new(kind).await;
    if db.shared_table() {
        let refused = db
            .builder("Shop.Sales", "sales-1")
            .nservicebus_subscriptions("SubscriptionRouting")
            .build();
        assert!(refused.is_err(), "NServiceBus reads queue tables only");
        return;
    }
    db.admin().create_schema(&["Shop.Billing"]).await.unwrap();
    // A Nimbus subscriber: it subscribes in NServiceBus's table (made where missing).
    let ship = Ship::default();
    let shipping = db
        .builder("Shop.Shipping", "shipping-1")
        .nservicebus_subscriptions("SubscriptionRouting")
        .handler(ship.clone())
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let routing = db.table("SubscriptionRouting");
    let (p1, p2, p3) = (db.param(1), db.param(2), db.param(3));
    let ours = db
        .scalar(
            &format!(
                "SELECT count(*) FROM {routing} WHERE Endpoint = {p1} AND Topic = {p2} \
                 AND QueueAddress = {p3}"
            ),
            &[
                "Shop.Shipping",
                "Shop.Messages.OrderPlaced",
                &nimbus_address("Shop.Shipping", &db),
            ],
        )
        .await;
    assert_eq!(ours, 1, "the subscription NServiceBus publishers read");
    // An NServiceBus subscriber, as its SubscribeText writes it.
    db.scalar(
        &format!("INSERT INTO {routing} (QueueAddress, Endpoint, Topic) VALUES ({p1}, {p2}, {p3})"),
        &[
            &nservicebus_address("Shop.Billing", &db),
            "Shop.Billing",
            "Shop.Messages.OrderPlaced",
        ],
    )
    .await;

    let sales = db
        .builder("Shop.Sales", "sales-1")
        .nservicebus_subscriptions("SubscriptionRouting")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    sales
        .publish(OrderPlaced {
            order_id: "order-18".into(),
        })
        .await
        .unwrap();
    wait_until("the Nimbus subscriber handles the event once", || async {
        !ship.seen.lock().unwrap().is_empty()
    })
    .await;
    let to_nservicebus = receive_as_nservicebus(&db, "Shop.Billing").await;
    assert_eq!(
        to_nservicebus.len(),
        1,
        "one copy for the NServiceBus subscriber"
    );
    let headers: HashMap<String, String> =
        serde_json::from_str(&to_nservicebus[0].headers).unwrap();
    assert_eq!(headers["NServiceBus.MessageIntent"], "Publish");
    assert_eq!(
        headers["NServiceBus.EnclosedMessageTypes"],
        "Shop.Messages.OrderPlaced"
    );
    let body: serde_json::Value = serde_json::from_slice(&to_nservicebus[0].body).unwrap();
    assert_eq!(body, serde_json::json!({"OrderId": "order-18"}));

    // An NServiceBus publisher delivers to the address the Nimbus subscriber wrote.
    let mut headers = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(
        &nservicebus_headers(&nservicebus_address("Shop.Sales", &db), false),
    )
    .unwrap();
    headers.insert("NServiceBus.MessageIntent".into(), "Publish".into());
    headers.insert(
        "NServiceBus.EnclosedMessageTypes".into(),
        "Shop.Messages.OrderPlaced, Shop.Messages, Version=1.0.0.0, Culture=neutral, \
         PublicKeyToken=null"
            .into(),
    );
    let address = nimbus::QueueName::parse(&nimbus_address("Shop.Shipping", &db)).unwrap();
    send_as_nservicebus(
        &db,
        address.as_str(),
        &serde_json::Value::Object(headers).to_string(),
        br#"{"OrderId":"order-19"}"#,
    )
    .await;
    wait_until("the NServiceBus event is handled", || async {
        ship.seen.lock().unwrap().len() == 2
    })
    .await;
    sales.stop().await.unwrap();
    shipping.stop().await.unwrap();
    assert_eq!(
        ship.seen.lock().unwrap().clone(),
        vec!["order-18".to_string(), "order-19".to_string()],
        "each event once: the subscriber listed in both tables got one copy"
    );
    assert!(db.dead_letters().await.is_empty());
}
