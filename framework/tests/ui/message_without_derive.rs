// A plain struct given to `send`: the error says to derive `nimbus::Command`.
use nimbus::Bus;

#[derive(serde::Serialize, serde::Deserialize)]
struct PlaceOrder {
    id: u32,
}

async fn send(bus: Bus) -> nimbus::Result<()> {
    bus.send(PlaceOrder { id: 1 }).await
}

fn main() {
    let _ = send;
}
