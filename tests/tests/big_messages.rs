//! The body-size limit (`BusBuilder::max_body_size`): a message over it is refused at send with
//! `NimbusError::MessageTooLarge` and nothing is written; one at the limit goes through. A
//! handler's send over it fails the attempt with that reason.

use nimbus::{Command, Handler, HandlerContext, HandlerError, NimbusError, StorageLayout};
use nimbus_conformance::{Kind, Setup, TestDatabase};

#[derive(serde::Serialize, serde::Deserialize, Command)]
#[nimbus(type_name = "Big.Upload")]
struct Upload {
    data: String,
}

/// The JSON body of an `Upload` of `n` characters: `{"data":"…"}`.
fn body_len(n: usize) -> usize {
    n + r#"{"data":""}"#.len()
}

struct Nobody;

impl Handler<Upload> for Nobody {
    async fn handle(&self, _m: Upload, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

async fn limit_is_enforced_before_writing(setup: Setup) {
    const LIMIT: usize = 64 * 1024;
    let db = TestDatabase::new(setup).await;
    let receiver = db
        .builder("Uploads", "uploads-1")
        .handler(Nobody)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    receiver.stop().await.unwrap();
    let sender = db
        .builder("Uploader", "uploader-1")
        .route::<Upload>("Uploads")
        .max_body_size(LIMIT)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let fits = "x".repeat(LIMIT - body_len(0));
    assert_eq!(body_len(fits.len()), LIMIT);
    sender.send(Upload { data: fits }).await.unwrap();
    let error = sender
        .send(Upload {
            data: "x".repeat(LIMIT - body_len(0) + 1),
        })
        .await
        .expect_err("one byte over the limit");
    assert!(
        matches!(error, NimbusError::MessageTooLarge { limit: LIMIT, .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains("Big.Upload") && text.contains("65536 bytes") && text.contains("Fix:"),
        "{text}"
    );
    assert!(error.is_permanent());
    assert_eq!(db.count("Uploads").await, 1, "only the message that fits");
    sender.stop().await.unwrap();
}

#[actix_rt::test]
async fn the_body_size_limit_holds_on_sqlite() {
    limit_is_enforced_before_writing(Setup::new(Kind::Sqlite, StorageLayout::TablePerQueue)).await;
}

#[actix_rt::test]
async fn the_body_size_limit_holds_on_postgres() {
    limit_is_enforced_before_writing(Setup::new(Kind::Postgres, StorageLayout::SharedTable)).await;
}

#[test]
fn a_zero_limit_is_a_configuration_error() {
    let error = nimbus::Bus::builder()
        .names("Uploader", "uploader-1")
        .database_url("sqlite://unused.db")
        .max_body_size(0)
        .build()
        .expect_err("refused");
    assert!(error.to_string().contains("max_body_size"), "{error}");
}
