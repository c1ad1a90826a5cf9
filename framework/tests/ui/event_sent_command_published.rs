// An event given to `send` and a command given to `publish`: each error says which is which.
use nimbus::{Bus, Command, Event};

#[derive(serde::Serialize, serde::Deserialize, Command)]
struct PlaceOrder;

#[derive(serde::Serialize, serde::Deserialize, Event)]
struct OrderPlaced;

async fn mixed_up(bus: Bus) -> nimbus::Result<()> {
    bus.send(OrderPlaced).await?;
    bus.publish(PlaceOrder).await?;
    Ok(())
}

fn main() {
    let _ = mixed_up;
}
