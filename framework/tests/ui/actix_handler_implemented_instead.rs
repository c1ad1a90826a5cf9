// With `actix::prelude::*` in scope, `impl Handler<M>` names actix's trait: the error says to
// write `nimbus::Handler`.
use actix::prelude::*;
use nimbus::{Bus, Command};

#[derive(serde::Serialize, serde::Deserialize, Command)]
struct PlaceOrder;

impl actix::Message for PlaceOrder {
    type Result = ();
}

struct Sales;

impl Actor for Sales {
    type Context = Context<Self>;
}

impl Handler<PlaceOrder> for Sales {
    type Result = ();
    fn handle(&mut self, _: PlaceOrder, _: &mut Context<Self>) {}
}

fn main() {
    let _ = Bus::builder().handler::<PlaceOrder, _>(Sales);
}
