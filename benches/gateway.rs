//! `status` over the WebSocket gateway vs the local socket (docs/gateway.md).
//! Placeholder until the measuring code lands.

fn main() {
    println!("gateway bench: not implemented yet");
}
