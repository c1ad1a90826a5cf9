//! `nimbus console` in a real browser: headless Chromium, driven through chromedriver, against a
//! running endpoint on a fresh SQLite file and a fresh PostgreSQL schema. The overview shows the
//! depths, hostile content is shown as text and never runs, a failed-message group replays and
//! the endpoint then handles it, pause stops the endpoint's receiving and resume restarts it, a
//! forged post is refused, and a console bound beyond loopback refuses to start without a token
//! and refuses requests without it. Screenshots of every page go to a temporary directory
//! (printed), for people to look at.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them): without them
//! these tests fail, saying what to install.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use nimbus::admin::{Database, RawMessage};
use nimbus::{Handler, HandlerContext, HandlerError, Unrecoverable};

/// An order the test endpoint handles.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Console.Order")]
struct Order {
    id: u32,
}

/// Declines orders while `declining` is set (they go to the dead letters at once), and counts
/// those it handles.
#[derive(Clone, Default)]
struct Orders {
    declining: Arc<AtomicBool>,
    handled: Arc<AtomicUsize>,
}

impl Handler<Order> for Orders {
    async fn handle(&self, _m: Order, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        if self.declining.load(Ordering::SeqCst) {
            return Err(Unrecoverable::new("the card was declined").into());
        }
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

fn postgres_url() -> String {
    std::env::var("NIMBUS_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until `done` resolves to true, checking every 50 ms; fails after a minute.
async fn wait_until<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Headless Chromium through chromedriver.
async fn browser() -> (Killed, Client) {
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let port = free_port();
    let driver = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {chromedriver} ({e}): the console's browser tests need Chromium \
                 and chromedriver — apt-get install chromium chromium-driver (.ci/run does)"
            )
        });
    let driver = Killed(driver);
    let deadline = Instant::now() + PATIENCE;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not start listening"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update",
                     "--window-size=1280,800"],
        }),
    );
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a Chromium session through chromedriver");
    (driver, client)
}

/// `nimbus console` on a free port; returns the process and its address.
fn console(
    url: &str,
    schema: Option<&str>,
    extra: &[&str],
    token: Option<&str>,
) -> (Killed, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nimbus"));
    command.arg("--database").arg(url);
    if let Some(schema) = schema {
        command.arg("--schema").arg(schema);
    }
    command
        .args(["console", "--refresh", "1s"])
        .args(extra)
        .env_remove("NIMBUS_CONSOLE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(token) = token {
        command.env("NIMBUS_CONSOLE_TOKEN", token);
    }
    let mut child = command.spawn().expect("start nimbus console");
    let stdout = child.stdout.take().expect("its stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("the console's first line");
    let address = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("the console says where it listens: {first:?}"))
        .trim_end_matches('/')
        .to_string();
    (Killed(child), address)
}

/// Where this run's screenshots go.
fn screenshot_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nimbus-console-screenshots-{}", unique()));
    std::fs::create_dir_all(&dir).expect("a screenshot directory");
    println!("screenshots of the console: {}", dir.display());
    dir
}

async fn screenshot(client: &Client, dir: &std::path::Path, name: &str) {
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("write the screenshot");
}

/// The text of the first element `css` finds.
async fn text_of(client: &Client, css: &str) -> Option<String> {
    match client.find(Locator::Css(css)).await {
        Ok(element) => element.text().await.ok(),
        Err(_) => None,
    }
}

/// The attribute `name` of the first element `css` finds.
async fn attribute_of(client: &Client, css: &str, name: &str) -> Option<String> {
    match client.find(Locator::Css(css)).await {
        Ok(element) => element.attr(name).await.ok().flatten(),
        Err(_) => None,
    }
}

/// Clicks the button of the form whose action ends with `action_suffix`, and accepts the
/// confirmation the page asks for. The page replaces its content every second: a button found
/// just before that is gone when clicked, so it is found again and clicked again.
async fn click_action(client: &Client, action_suffix: &str) {
    let css = format!("form[action$='{action_suffix}'] button");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let clicked = match client.find(Locator::Css(&css)).await {
            Ok(button) => button.click().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match clicked {
            Ok(()) => break,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no button for {action_suffix}: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    client
        .accept_alert()
        .await
        .expect("the page asks for confirmation");
}

/// A queue whose name is markup.
const HOSTILE_NAME: &str = "<img src=x onerror=window.pwned=4>";

async fn hostile_messages(db: &Database) {
    db.create_schema(&["Hostile", HOSTILE_NAME]).await.unwrap();
    let mut script = RawMessage::new(
        r#"{"NServiceBus.EnclosedMessageTypes":"<script>window.pwned=1</script>","X-Quote":"\"'><img src=x onerror=window.pwned=2>"}"#,
        br#"{"note":"<script>window.pwned=3</script>"}"#.to_vec(),
    );
    script.id = uuid::Uuid::new_v4();
    db.insert_raw("Hostile", &script).await.unwrap();
    let mut big = b"\xff\xfe not UTF-8 ".to_vec();
    big.resize(1024 * 1024, b'x');
    let mut big = RawMessage::new("{}", big);
    big.id = uuid::Uuid::new_v4();
    db.insert_raw("Hostile", &big).await.unwrap();
}

async fn in_the_browser(url: &str, schema: Option<&str>) {
    let db = match schema {
        Some(schema) => {
            Database::connect_with(url, nimbus::admin::ConnectOptions::new().schema(schema))
                .await
                .unwrap()
        }
        None => Database::connect(url).await.unwrap(),
    };
    let orders = Orders::default();
    orders.declining.store(true, Ordering::SeqCst);
    let mut builder = nimbus::Bus::builder()
        .names("Shop", "shop-1")
        .database_url(url)
        .peek_delay(Duration::from_millis(100))
        // A monitoring report every second, for the Monitoring page's charts.
        .monitoring_interval(Some(Duration::from_secs(1)))
        .route::<Order>("Shop")
        // Its own queue for replies: the overview lists it beside the application's.
        .enable_requests()
        .handler(orders.clone());
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let bus = builder.build().unwrap().start().await.unwrap();
    for id in 0..3 {
        bus.send(Order { id }).await.unwrap();
    }
    wait_until("three declined orders are dead letters", || async {
        db.dead_letters(10).await.unwrap().len() == 3
    })
    .await;
    hostile_messages(&db).await;

    let (_console, address) = console(url, schema, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    let shots = screenshot_dir();

    // The overview: every queue with its exact depth.
    client.goto(&format!("{address}/")).await.unwrap();
    wait_until("the overview shows the Hostile queue's depth", || async {
        text_of(&client, "tr[data-queue='Hostile'] td.depth")
            .await
            .as_deref()
            == Some("2")
    })
    .await;
    assert_eq!(
        text_of(&client, "tr[data-queue='Shop'] td.depth")
            .await
            .as_deref(),
        Some("0")
    );
    screenshot(&client, &shots, "overview").await;

    // Hostile headers and bodies are text: nothing they hold runs, a 1 MB body is cut.
    client
        .goto(&format!("{address}/queues/Hostile"))
        .await
        .unwrap();
    let page = client.source().await.unwrap();
    assert!(
        page.contains("&lt;script&gt;window.pwned=3"),
        "the body is escaped"
    );
    assert!(
        page.contains("more bytes not shown"),
        "the 1 MB body is cut"
    );
    let pwned = client
        .execute("return typeof window.pwned", vec![])
        .await
        .unwrap();
    assert_eq!(
        pwned,
        serde_json::json!("undefined"),
        "no hostile script ran"
    );
    screenshot(&client, &shots, "queue").await;

    // Failed messages: one group of three; replay it, and the endpoint handles them.
    client.goto(&format!("{address}/failed")).await.unwrap();
    wait_until("the failed-message group is listed", || async {
        text_of(&client, "tr[data-group] td.count").await.as_deref() == Some("3")
    })
    .await;
    wait_until(
        "the group's reason is the handler's, without the message id",
        || async {
            text_of(&client, "tr[data-group] td.reason")
                .await
                .is_some_and(|reason| {
                    reason == "the handler declared it unrecoverable: the card was declined"
                })
        },
    )
    .await;
    screenshot(&client, &shots, "failed").await;
    orders.declining.store(false, Ordering::SeqCst);
    click_action(&client, "/replay").await;
    wait_until("the replayed orders are handled", || async {
        orders.handled.load(Ordering::SeqCst) == 3
    })
    .await;
    wait_until(
        "the page shows the finished replay and no group",
        || async {
            let text = text_of(&client, "main").await.unwrap_or_default();
            text.contains("done in") && !text.contains("the card was declined")
        },
    )
    .await;
    screenshot(&client, &shots, "failed-replayed").await;

    // Pause stops the running endpoint's receiving; resume restarts it.
    client.goto(&format!("{address}/")).await.unwrap();
    click_action(&client, "/queues/Shop/pause").await;
    wait_until("the endpoint sees the pause", || async {
        bus.metrics().paused_queues.contains("Shop")
    })
    .await;
    wait_until("the overview shows Shop paused", || async {
        text_of(&client, "tr[data-queue='Shop'] td.state")
            .await
            .as_deref()
            == Some("paused")
    })
    .await;
    for id in 10..12 {
        bus.send(Order { id }).await.unwrap();
    }
    let peeks = bus.metrics().peeks;
    wait_until(
        "the paused queue is peeked twice with its messages in it",
        || async {
            let m = bus.metrics();
            m.peeks >= peeks + 2 && m.queue_depths.get("Shop").copied().unwrap_or(0) >= 2
        },
    )
    .await;
    assert_eq!(
        orders.handled.load(Ordering::SeqCst),
        3,
        "nothing taken while paused"
    );
    screenshot(&client, &shots, "overview-paused").await;
    click_action(&client, "/queues/Shop/resume").await;
    wait_until("the resumed queue's orders are handled", || async {
        orders.handled.load(Ordering::SeqCst) == 5
    })
    .await;

    // Monitoring: the charts of the Shop queue, drawn from the endpoint's reports: 5 handled, 3
    // failed (the declined orders), with times.
    client
        .goto(&format!("{address}/monitoring?window=15m&queue=Shop"))
        .await
        .unwrap();
    wait_until(
        "the Shop queue's charts count its 5 handled orders",
        || async {
            attribute_of(&client, "#charts", "data-total-handled")
                .await
                .as_deref()
                == Some("5")
        },
    )
    .await;
    for chart in ["throughput", "processing", "critical", "length"] {
        let css = format!("svg[data-chart='{chart}']");
        let max: f64 = attribute_of(&client, &css, "data-max")
            .await
            .unwrap_or_else(|| panic!("the {chart} chart"))
            .parse()
            .unwrap();
        if chart != "length" {
            assert!(max > 0.0, "the {chart} chart draws real numbers: {max}");
        }
        let drawn = client
            .find_all(Locator::Css(&format!("{css} [data-series]")))
            .await
            .unwrap();
        assert!(!drawn.is_empty(), "the {chart} chart has a line or a point");
    }
    let throughput = text_of(&client, "svg[data-chart='throughput']")
        .await
        .unwrap_or_default();
    assert!(
        throughput.contains("msg/s") && throughput.contains("UTC"),
        "the chart has its unit and times: {throughput}"
    );
    assert_eq!(
        text_of(&client, "#monitored-queues tr[data-name='Shop'] td.handled")
            .await
            .as_deref(),
        Some("5")
    );
    assert!(text_of(&client, "#endpoints tr[data-name='Shop']")
        .await
        .is_some());
    screenshot(&client, &shots, "monitoring").await;

    // A post without the console's token (a forged form) is refused and changes nothing.
    let status = client
        .execute(
            "return fetch('/queues/Shop/pause', {method: 'POST', headers: \
             {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'csrf=forged&back=/'})\
             .then(r => r.status)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(status, serde_json::json!(403));
    assert!(
        db.paused_queues().await.unwrap().is_empty(),
        "the forged post paused nothing"
    );

    client
        .goto(&format!("{address}/subscriptions"))
        .await
        .unwrap();
    screenshot(&client, &shots, "subscriptions").await;
    client.goto(&format!("{address}/instances")).await.unwrap();
    wait_until(
        "the running bus is listed live, with its host and process",
        || async {
            text_of(&client, "#instances tr[data-state='live']")
                .await
                .is_some_and(|row| {
                    row.contains("shop-1")
                        && row.contains(&nimbus::host_name())
                        && row.contains(&std::process::id().to_string())
                })
        },
    )
    .await;
    screenshot(&client, &shots, "instances").await;

    // The own queue of an instance that stopped is hidden from the overview, behind a link.
    let mut gone = nimbus::Bus::builder()
        .names("Shop", "shop-gone")
        .database_url(url)
        .enable_requests();
    if let Some(schema) = schema {
        gone = gone.schema(schema);
    }
    let gone = gone.build().unwrap().start().await.unwrap();
    gone.stop().await.unwrap();
    client.goto(&format!("{address}/")).await.unwrap();
    wait_until("the stopped instance's queue is hidden", || async {
        text_of(&client, "#hidden-queues")
            .await
            .is_some_and(|t| t.contains("1 queue of instances that are not running"))
    })
    .await;
    assert!(text_of(&client, "tr[data-queue='Shop.shop-gone']")
        .await
        .is_none());
    assert!(text_of(&client, "tr[data-queue='Shop.shop-1']")
        .await
        .is_some());
    client.goto(&format!("{address}/?all=1")).await.unwrap();
    wait_until("?all=1 shows it", || async {
        text_of(&client, "tr[data-queue='Shop.shop-gone']")
            .await
            .is_some()
    })
    .await;

    // Beyond loopback, with a token: the browser without it is refused.
    let (_guarded, guarded_address) =
        console(url, schema, &["--bind", "0.0.0.0:0"], Some("s3cret-token"));
    let port = guarded_address.rsplit(':').next().unwrap().to_string();
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    // (Headless Chromium cancels the login prompt of a 401 and shows an empty page.)
    let refused = client.source().await.unwrap();
    assert!(
        !refused.contains("nimbus console") && !refused.contains("Shop"),
        "a browser without the token sees nothing of the console: {refused}"
    );
    assert_eq!(http_status(&port, None), 401);
    assert_eq!(http_status(&port, Some("Bearer s3cret-token")), 200);

    client.close().await.unwrap();
    bus.stop().await.unwrap();
}

/// The status of `GET /` on 127.0.0.1:`port`, with `authorization` if given.
fn http_status(port: &str, authorization: Option<&str>) -> u16 {
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[actix_rt::test]
async fn the_console_works_in_a_browser_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-{}.db", unique()));
    in_the_browser(&format!("sqlite://{}", path.display()), None).await;
    let _ = std::fs::remove_file(&path);
}

#[actix_rt::test]
async fn the_console_works_in_a_browser_on_postgres() {
    let url = postgres_url();
    let schema = format!("nimbus console {}", unique());
    in_the_browser(&url, Some(&schema)).await;
    let db = Database::connect(&url).await.unwrap();
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(&schema)))
        .await
        .unwrap();
}

/// The console on a Citus cluster, through its coordinator, on a distributed schema (its tables
/// on one worker node): the same pages and actions as on one server. Ignored unless asked
/// (`--include-ignored`), as it needs a coordinator: `NIMBUS_CITUS`, or the one
/// `scripts/citus-cluster.sh start` makes on 127.0.0.1:9700; `.ci/run` runs it when that cluster
/// is up.
#[actix_rt::test]
#[ignore = "needs a Citus coordinator (NIMBUS_CITUS, or scripts/citus-cluster.sh start)"]
async fn the_console_works_in_a_browser_on_citus() {
    let url = std::env::var("NIMBUS_CITUS")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:9700/postgres?sslmode=disable".into());
    let db = Database::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("no Citus coordinator answers at NIMBUS_CITUS or :9700: {e}"));
    let schema = format!("nimbus console {}", unique());
    db.execute(&format!(
        "SET citus.enable_schema_based_sharding TO on; CREATE SCHEMA {}",
        db.quote(&schema)
    ))
    .await
    .unwrap();
    in_the_browser(&url, Some(&schema)).await;
    let placed = db
        .query_scalar(
            "SELECT COUNT(DISTINCT s.nodeport) FROM citus_shards AS s \
             JOIN pg_class AS c ON c.oid = s.table_name \
             JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1",
            &[schema.as_str()],
        )
        .await;
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(&schema)))
        .await
        .unwrap();
    assert_eq!(
        placed.ok(),
        Some(1),
        "the schema's tables live on one worker node"
    );
}

#[test]
fn beyond_loopback_the_console_needs_a_token() {
    let path = std::env::temp_dir().join(format!("nimbus-console-{}.db", unique()));
    let output = Command::new(env!("CARGO_BIN_EXE_nimbus"))
        .args(["--database", &format!("sqlite://{}", path.display())])
        .args(["console", "--bind", "0.0.0.0:0"])
        .env_remove("NIMBUS_CONSOLE_TOKEN")
        .output()
        .expect("run nimbus console");
    let _ = std::fs::remove_file(&path);
    assert!(!output.status.success(), "it refuses to start");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("NIMBUS_CONSOLE_TOKEN"),
        "it says what to set: {err}"
    );
}

/// The body of `GET path` on 127.0.0.1:`port`.
fn http_body(port: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

#[actix_rt::test]
async fn the_console_never_shows_the_password_on_postgres() {
    // The local server trusts the login: the password in the URL is accepted and ignored.
    const SECRET: &str = "S3cret-in-console";
    let schema = format!("nimbus console secret {}", unique());
    let url = postgres_url().replacen("postgres@", &format!("postgres:{SECRET}@"), 1);
    assert!(url.contains(SECRET), "{url}");
    let mut builder = nimbus::Bus::builder()
        .names("Secret", "secret-1")
        .database_url(&url)
        .schema(&schema)
        .enable_requests()
        .handler(Orders::default());
    builder = builder.route::<Order>("Secret");
    let bus = builder.build().unwrap().start().await.unwrap();
    let (_console, address) = console(&url, Some(&schema), &["--bind", "127.0.0.1:0"], None);
    let port = address.rsplit(':').next().unwrap().to_string();
    wait_until("the console lists the bus", || async {
        http_body(&port, "/instances").contains("secret-1")
    })
    .await;
    for path in [
        "/",
        "/instances",
        "/subscriptions",
        "/failed",
        "/queues/Secret",
    ] {
        let page = http_body(&port, path);
        assert!(page.contains("nimbus console"), "{path}: {page}");
        assert!(!page.contains(SECRET), "{path} shows the password: {page}");
    }
    bus.stop().await.unwrap();
    let db = Database::connect_with(
        &postgres_url(),
        nimbus::admin::ConnectOptions::new().schema(&schema),
    )
    .await
    .unwrap();
    db.execute(&format!("DROP SCHEMA {} CASCADE", db.quote(&schema)))
        .await
        .unwrap();
}

/// A visit that starts a guest book entry; a saga keyed by the guest's name.
#[derive(serde::Serialize, serde::Deserialize, nimbus::Command)]
#[nimbus(type_name = "Console.Visit")]
struct Visit {
    guest: String,
}

#[derive(Clone)]
struct GuestBook;

impl nimbus::saga::Saga for GuestBook {
    type State = u32;
    const NAME: &'static str = "Console.GuestBook";
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

/// The Sagas page lists the running instances; *Complete* and *Delete* end one each (and the
/// database says so); the console's probes answer without its token.
#[actix_rt::test]
async fn the_console_ends_saga_instances_and_answers_probes_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-sagas-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let bus = nimbus::Bus::builder()
        .names("Guests", "guests-1")
        .database_url(&url)
        .peek_delay(Duration::from_millis(100))
        .route::<Visit>("Guests")
        .saga_handler::<Visit, _>(GuestBook)
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for guest in ["ada", "bob/builder", "cy"] {
        bus.send(Visit {
            guest: guest.into(),
        })
        .await
        .unwrap();
    }
    let db = Database::connect(&url).await.unwrap();
    wait_until("three saga instances run", || async {
        db.sagas(None, 10).await.unwrap().len() == 3
    })
    .await;
    bus.stop().await.unwrap();

    // A console that needs a token: its probes still answer without it.
    let (_guarded, guarded) = console(&url, None, &["--bind", "127.0.0.1:0"], Some("probe-token"));
    let port = guarded.rsplit(':').next().unwrap().to_string();
    // The probes need no token; the pages do.
    let live = http_body(&port, "/health/live");
    assert!(
        live.starts_with("HTTP/1.1 200") && live.contains("\"live\":true"),
        "{live}"
    );
    let ready = {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let ready = http_body(&port, "/health/ready");
            if ready.starts_with("HTTP/1.1 200") || Instant::now() > deadline {
                break ready;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    assert!(ready.contains("\"ready\":true"), "{ready}");
    assert_eq!(http_status(&port, None), 401);

    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    let shots = screenshot_dir();
    client.goto(&format!("{address}/sagas")).await.unwrap();
    wait_until("the Sagas page lists the three instances", || async {
        client
            .find_all(Locator::Css("#sagas tr[data-saga]"))
            .await
            .map(|rows| rows.len())
            .unwrap_or(0)
            == 3
    })
    .await;
    screenshot(&client, &shots, "sagas").await;
    click_action(&client, "/sagas/Console.GuestBook/ada/complete").await;
    wait_until("ada's instance is completed", || async {
        db.saga("Console.GuestBook", "ada")
            .await
            .unwrap()
            .is_some_and(|s| s.completed)
    })
    .await;
    click_action(&client, "/sagas/Console.GuestBook/bob%2Fbuilder/delete").await;
    wait_until("bob/builder's instance is deleted", || async {
        db.saga("Console.GuestBook", "bob/builder")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    wait_until("the page lists only cy", || async {
        text_of(&client, "#sagas tbody")
            .await
            .is_some_and(|t| t.contains("cy") && !t.contains("ada") && !t.contains("bob"))
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The Delayed page lists the delayed messages not delivered yet; *Cancel* deletes one (the
/// database no longer holds it) and *Deliver now* makes another due, after which an endpoint
/// handles it.
#[actix_rt::test]
async fn the_console_cancels_and_delivers_delayed_messages_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-delayed-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let sender = nimbus::Bus::builder()
        .names("Reminders", "reminders-sender")
        .database_url(&url)
        .create_queues_on_send(true)
        .route::<Visit>("Reminders")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    let later = || nimbus::SendOptions::new().delay(Duration::from_secs(3600));
    let cancelled = sender
        .send_delayed(
            Visit {
                guest: "ada".into(),
            },
            later(),
        )
        .await
        .unwrap();
    let delivered = sender
        .send_delayed(
            Visit {
                guest: "bob".into(),
            },
            later(),
        )
        .await
        .unwrap();
    sender.stop().await.unwrap();
    let db = Database::connect(&url).await.unwrap();

    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    let shots = screenshot_dir();
    client.goto(&format!("{address}/delayed")).await.unwrap();
    wait_until("the Delayed page lists both messages", || async {
        client
            .find_all(Locator::Css("#delayed tr[data-id]"))
            .await
            .map(|rows| rows.len())
            .unwrap_or(0)
            == 2
    })
    .await;
    screenshot(&client, &shots, "delayed").await;
    click_action(&client, &format!("/delayed/{cancelled}/cancel")).await;
    wait_until(
        "the cancelled message is gone from the database",
        || async {
            let left = db.delayed_messages(10).await.unwrap();
            left.len() == 1 && left[0].id.to_lowercase() == delivered.to_string()
        },
    )
    .await;
    click_action(&client, &format!("/delayed/{delivered}/now")).await;
    let handled = Arc::new(AtomicUsize::new(0));
    let receiver = nimbus::Bus::builder()
        .names("Reminders", "reminders-1")
        .database_url(&url)
        .peek_delay(Duration::from_millis(100))
        .handler(CountingVisits(handled.clone()))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    wait_until("the message made due is handled", || async {
        handled.load(Ordering::SeqCst) == 1
    })
    .await;
    wait_until("the page lists none", || async {
        let _ = client.goto(&format!("{address}/delayed")).await;
        text_of(&client, "main")
            .await
            .is_some_and(|t| t.contains("0 delayed messages"))
    })
    .await;
    assert_eq!(
        handled.load(Ordering::SeqCst),
        1,
        "the cancelled one never came"
    );
    receiver.stop().await.unwrap();
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The Schedules page lists a declared schedule and pauses and resumes it; the database says
/// so after each click.
#[actix_rt::test]
async fn the_console_pauses_and_resumes_schedules_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-schedules-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let clock = nimbus::Bus::builder()
        .names("Clock", "clock-1")
        .database_url(&url)
        .create_queues_on_send(true)
        .schedule(
            nimbus::Schedule::cron("nightly report", "0 2 * * *").send_to(
                "Reports",
                Visit {
                    guest: "report".into(),
                },
            ),
        )
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    clock.stop().await.unwrap();
    let db = Database::connect(&url).await.unwrap();
    let paused = || async {
        db.schedules(Some("Clock")).await.unwrap()[0]
            .paused_at
            .is_some()
    };

    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    let shots = screenshot_dir();
    client.goto(&format!("{address}/schedules")).await.unwrap();
    wait_until("the Schedules page lists the schedule", || async {
        text_of(&client, "#schedules")
            .await
            .is_some_and(|t| t.contains("nightly report") && t.contains("cron 0 2 * * *"))
    })
    .await;
    screenshot(&client, &shots, "schedules").await;
    click_action(&client, "/schedules/Clock/nightly%20report/pause").await;
    wait_until("the schedule is paused in the database", paused).await;
    wait_until("the page says it is paused", || async {
        let _ = client.goto(&format!("{address}/schedules")).await;
        text_of(&client, "#schedules")
            .await
            .is_some_and(|t| t.contains("paused by"))
    })
    .await;
    click_action(&client, "/schedules/Clock/nightly%20report/resume").await;
    wait_until("the schedule runs again in the database", || async {
        !paused().await
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The Deduplication page counts the keys a deduplicated send left, by scope.
#[actix_rt::test]
async fn the_console_counts_deduplication_keys_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-dedup-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let bus = nimbus::Bus::builder()
        .names("Charges", "charges-1")
        .database_url(&url)
        .create_queues_on_send(true)
        .route::<Visit>("Charges")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for key in ["ada", "bob"] {
        let visit = Visit { guest: key.into() };
        assert!(bus
            .send_deduplicated(key, visit, nimbus::SendOptions::new())
            .await
            .unwrap());
    }
    bus.stop().await.unwrap();
    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    client
        .goto(&format!("{address}/deduplication"))
        .await
        .unwrap();
    wait_until("the page counts the two keys of send:Charges", || async {
        let scope = text_of(&client, "#deduplication tr[data-scope] code").await;
        let keys = text_of(&client, "#deduplication tr[data-scope] td.num").await;
        scope.as_deref() == Some("send:Charges") && keys.as_deref().map(str::trim) == Some("2")
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The Bridges page of the database a bridge moved messages into counts them under the
/// bridge's name and lists the bridge's replies queue there.
#[actix_rt::test]
async fn the_console_shows_what_crossed_a_bridge_on_sqlite() {
    let id = unique();
    let paths = [
        std::env::temp_dir().join(format!("nimbus-console-bridge-a-{id}.db")),
        std::env::temp_dir().join(format!("nimbus-console-bridge-b-{id}.db")),
    ];
    let [from_url, to_url] = paths.clone().map(|p| format!("sqlite://{}", p.display()));
    let bus = nimbus::Bus::builder()
        .names("Front", "front-1")
        .database_url(&from_url)
        .create_queues_on_send(true)
        .route::<Visit>("ToBackOffice")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for guest in ["ada", "bob"] {
        bus.send(Visit {
            guest: guest.into(),
        })
        .await
        .unwrap();
    }
    bus.stop().await.unwrap();
    let config = nimbus::bridge::BridgeConfig::new("console-bridge")
        .side("front", nimbus::bridge::BridgeSide::new(&from_url))
        .side("back", nimbus::bridge::BridgeSide::new(&to_url))
        .queue("front", "ToBackOffice", "back", "BackOffice");
    let bridge = nimbus::bridge::Bridge::start(config).await.unwrap();
    let back = Database::connect(&to_url).await.unwrap();
    wait_until("both visits cross", || async {
        back.queue_depth("BackOffice").await.unwrap_or(0) == 2
    })
    .await;
    bridge.stop().await;
    let (_console, address) = console(&to_url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    client.goto(&format!("{address}/bridges")).await.unwrap();
    wait_until("the page counts the two messages that crossed", || async {
        let bridge = text_of(&client, "#bridges-in tr[data-bridge] code").await;
        let count = text_of(&client, "#bridges-in tr[data-bridge] td.num").await;
        bridge.as_deref() == Some("console-bridge") && count.as_deref().map(str::trim) == Some("2")
    })
    .await;
    let out = text_of(&client, "#bridges-out").await.unwrap_or_default();
    assert!(
        out.contains("Bridge.console-bridge.Replies") && out.contains("replies going back"),
        "{out}"
    );
    client.close().await.unwrap();
    for path in paths {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}

/// The Limits page shows a limit with its slots and the messages it held back.
#[actix_rt::test]
async fn the_console_shows_limits_and_what_they_held_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-limits-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let orders = Orders::default();
    let bus = nimbus::Bus::builder()
        .names("Orders", "orders-1")
        .database_url(&url)
        .route::<Order>("Orders")
        .handler(orders.clone())
        .limit::<Order>(nimbus::Limit::rate(1, std::time::Duration::from_secs(3600)))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for id in [1, 2] {
        bus.send(Order { id }).await.unwrap();
    }
    let admin = nimbus::admin::Database::connect(&url).await.unwrap();
    wait_until("the second order is held back", || async {
        let limits = admin.limits().await.unwrap();
        limits.first().is_some_and(|l| l.held >= 1)
    })
    .await;
    bus.stop().await.unwrap();
    assert_eq!(orders.handled.load(Ordering::SeqCst), 1, "one an hour");
    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    client.goto(&format!("{address}/limits")).await.unwrap();
    wait_until("the page shows the rate and its held message", || async {
        let scope = text_of(&client, "#limits tr[data-scope] code").await;
        let cells = client
            .find_all(Locator::Css("#limits tr[data-scope] td.num"))
            .await
            .unwrap_or_default();
        let mut numbers = Vec::new();
        for cell in cells {
            numbers.push(cell.text().await.unwrap_or_default().trim().to_string());
        }
        scope.as_deref() == Some("Orders|rate|Console.Order")
            && numbers.first().map(String::as_str) == Some("1")
            && numbers.get(2).is_some_and(|held| held != "0")
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The Bodies page counts a body stored apart under its queue, and the queue's page names it
/// instead of showing it.
#[actix_rt::test]
async fn the_console_shows_bodies_stored_apart_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-bodies-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let admin = nimbus::admin::Database::connect(&url).await.unwrap();
    admin.create_schema(&["Orders"]).await.unwrap();
    let bus = nimbus::Bus::builder()
        .names("Shop", "shop-1")
        .database_url(&url)
        .route::<Order>("Orders")
        .claim_check(nimbus::ClaimCheck::in_database().above(0))
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    bus.send(Order { id: 7 }).await.unwrap();
    bus.stop().await.unwrap();
    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    client.goto(&format!("{address}/bodies")).await.unwrap();
    wait_until("the page counts the body under Orders", || async {
        let queue = text_of(&client, "#bodies tr[data-queue] code").await;
        let count = text_of(&client, "#bodies tr[data-queue] td.num").await;
        queue.as_deref() == Some("Orders") && count.as_deref().map(str::trim) == Some("1")
    })
    .await;
    client
        .goto(&format!("{address}/queues/Orders"))
        .await
        .unwrap();
    wait_until("the queue's page names the body stored apart", || async {
        let page = client.source().await.unwrap_or_default();
        page.contains("Stored apart in NimbusBodies")
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// A queue's page lists its ordered groups with messages waiting, the longest first; another's
/// counts its messages per priority.
#[actix_rt::test]
async fn the_console_lists_a_queues_ordered_groups_and_priorities_on_sqlite() {
    let path = std::env::temp_dir().join(format!("nimbus-console-groups-{}.db", unique()));
    let url = format!("sqlite://{}", path.display());
    let admin = nimbus::admin::Database::connect(&url).await.unwrap();
    admin.create_schema(&["Ledger"]).await.unwrap();
    admin.create_ordered_groups("Ledger").await.unwrap();
    let bus = nimbus::Bus::builder()
        .names("Teller", "teller-1")
        .database_url(&url)
        .route::<Visit>("Ledger")
        .build()
        .unwrap()
        .start()
        .await
        .unwrap();
    for guest in ["ada", "ada", "bob"] {
        let visit = Visit {
            guest: guest.into(),
        };
        let options = nimbus::SendOptions::new().group(format!("guest-{guest}"));
        bus.send_with(visit, options).await.unwrap();
    }
    // And a queue that keeps priorities beside it.
    admin.create_schema(&["Mailer"]).await.unwrap();
    admin.create_priorities("Mailer").await.unwrap();
    for priority in [7, 0, 7] {
        let visit = Visit { guest: "cy".into() };
        let options = nimbus::SendOptions::new().to("Mailer").priority(priority);
        bus.send_with(visit, options).await.unwrap();
    }
    bus.stop().await.unwrap();
    let (_console, address) = console(&url, None, &["--bind", "127.0.0.1:0"], None);
    let (_driver, client) = browser().await;
    client
        .goto(&format!("{address}/queues/Ledger"))
        .await
        .unwrap();
    wait_until("the page lists both groups, the longest first", || async {
        let first = text_of(&client, "#groups tbody tr:first-child").await;
        let table = text_of(&client, "#groups").await;
        first.is_some_and(|t| t.contains("guest-ada") && t.contains('2'))
            && table.is_some_and(|t| t.contains("guest-bob"))
    })
    .await;
    screenshot(&client, &screenshot_dir(), "ordered-groups").await;
    client
        .goto(&format!("{address}/queues/Mailer"))
        .await
        .unwrap();
    wait_until("the page counts the messages per priority", || async {
        let first = text_of(&client, "#priorities tbody tr:first-child").await;
        first.is_some_and(|t| t.contains('7') && t.contains('2'))
    })
    .await;
    client.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Counts the visits it handles.
struct CountingVisits(Arc<AtomicUsize>);

impl Handler<Visit> for CountingVisits {
    async fn handle(&self, _m: Visit, _ctx: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
