//! The `axum_service` example's shutdown order: requests in flight when SIGTERM comes are all
//! answered (their commands committed), then the bus stops and the process exits 0. The example
//! is built here as the `axum_service` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use nimbus::admin::Database;

/// `POST path` on `address`: the status line's code.
fn post(address: &str, path: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the answer");
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[actix_rt::test]
async fn requests_in_flight_at_sigterm_are_all_answered_then_the_bus_stops() {
    const REQUESTS: u32 = 6;
    let file = std::env::temp_dir().join(format!("nimbus-axum-{}.db", uuid::Uuid::new_v4()));
    let url = format!("sqlite://{}", file.display());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let mut service = Command::new(env!("CARGO_BIN_EXE_axum_service"))
        .args([url.as_str(), address.as_str(), "1500"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the service");
    let mut stdout = BufReader::new(service.stdout.take().unwrap()).lines();
    let listening = stdout.next().unwrap().unwrap();
    assert!(listening.starts_with("listening on"), "{listening}");
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let stderr = service.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("placing an order") {
                let _ = started_tx.send(());
            }
        }
    });
    let requests: Vec<_> = (0..REQUESTS)
        .map(|id| {
            let address = address.clone();
            std::thread::spawn(move || post(&address, &format!("/orders/{id}")))
        })
        .collect();
    for _ in 0..REQUESTS {
        started_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("every request reaches its handler");
    }
    // Every request is in flight (each takes 1.5 s before it sends): stop the service now.
    let killed = Command::new("kill")
        .args(["-TERM", &service.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let statuses: Vec<u16> = requests.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(
        statuses,
        vec![202; REQUESTS as usize],
        "every request in flight at SIGTERM is answered"
    );
    let rest: Vec<String> = stdout.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l == "stopped"), "{rest:?}");
    let status = tokio::task::spawn_blocking(move || service.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "the service exits 0: {status}");
    let db = Database::connect(&url).await.unwrap();
    assert_eq!(
        db.queue_depth("Sales").await.unwrap(),
        i64::from(REQUESTS),
        "every answered order was committed"
    );
    let _ = std::fs::remove_file(&file);
}
