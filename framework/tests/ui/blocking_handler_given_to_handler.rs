// A `BlockingHandler` registered with `.handler(..)`: the error points to `.blocking_handler(..)`.
use nimbus::{BlockingHandler, Bus, Command, HandlerContext, HandlerError};

#[derive(serde::Serialize, serde::Deserialize, Command)]
struct Resize;

struct Images;

impl BlockingHandler<Resize> for Images {
    fn handle(&self, _: Resize, _: &mut HandlerContext) -> Result<(), HandlerError> {
        Ok(())
    }
}

fn main() {
    let _ = Bus::builder().handler::<Resize, _>(Images);
}
