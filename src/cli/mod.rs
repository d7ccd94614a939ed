//! The commands a person types (issue 18, docs/operations.md): `zeroclaw
//! acp` (the bridge editors launch, issue 27), `zeroclaw chat`, `zeroclaw logs` and `zeroclaw doctor`, and the everyday commands
//! of issue 25 (`stop`, `sessions`, `agents`, `config`, `run`). They are clients of the
//! daemon like `zeroclaw rpc`, and share its exit statuses
//! ([`crate::client::exit`]).

pub mod acp_bridge;
pub mod args;
pub mod chat;
pub mod colour;
pub mod complete;
pub mod conn;
pub mod doctor;
pub mod everyday;
pub mod logs;
pub mod man;
