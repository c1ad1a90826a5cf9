//! A handler that panics on every attempt prints its panic (and, with `RUST_BACKTRACE=1`, its
//! backtrace) once per message, not once per attempt. Its own test binary: it installs a panic
//! hook, which is global to the process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use nimbus::testing::TestBus;
use nimbus::{Command, Handler, HandlerContext, HandlerError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Command)]
struct Explode;

/// Panics on every attempt, counting them.
struct Exploder(Arc<AtomicUsize>);

impl Handler<Explode> for Exploder {
    async fn handle(&self, _: Explode, _: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("exploder panics on purpose");
    }
}

/// Panics on every attempt, as a blocking handler.
struct BlockingExploder(Arc<AtomicUsize>);

#[derive(Serialize, Deserialize, Command)]
struct ExplodeBlocking;

impl nimbus::BlockingHandler<ExplodeBlocking> for BlockingExploder {
    fn handle(&self, _: ExplodeBlocking, _: &mut HandlerContext) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("blocking exploder panics on purpose");
    }
}

#[actix_rt::test]
async fn a_panicking_handler_prints_its_panic_once_per_message() {
    // What reaches the process's panic hook: the endpoint wraps this one when it starts.
    let printed = Arc::new(AtomicUsize::new(0));
    let printed_by_hook = printed.clone();
    let standard = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.to_string().contains("panics on purpose") {
            printed_by_hook.fetch_add(1, Ordering::SeqCst);
        } else {
            standard(info);
        }
    }));

    let attempts = Arc::new(AtomicUsize::new(0));
    let blocking_attempts = Arc::new(AtomicUsize::new(0));
    let test = TestBus::start("Exploding", |b| {
        b.handler(Exploder(attempts.clone()))
            .blocking_handler(BlockingExploder(blocking_attempts.clone()))
            .route::<Explode>("Exploding")
            .route::<ExplodeBlocking>("Exploding")
            .immediate_retries(2)
            .delayed_retries(1, std::time::Duration::from_millis(50))
    })
    .await
    .unwrap();
    test.bus().send(Explode).await.unwrap();
    test.bus().send(ExplodeBlocking).await.unwrap();
    test.wait_until(|m| m.dead_lettered == 2).await.unwrap();
    test.stop().await.unwrap();

    let attempts = attempts.load(Ordering::SeqCst);
    let blocking_attempts = blocking_attempts.load(Ordering::SeqCst);
    assert_eq!(
        attempts, 4,
        "the first attempt, 2 immediate retries and 1 delayed"
    );
    assert_eq!(blocking_attempts, 4);
    assert_eq!(
        printed.load(Ordering::SeqCst),
        2,
        "one print per message ({attempts} + {blocking_attempts} attempts panicked)"
    );
}
