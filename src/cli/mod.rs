//! The commands a person types (docs/operations.md): `zeroclaw
//! acp` (the bridge editors launch), `zeroclaw chat`, `zeroclaw logs` and `zeroclaw doctor`, and the everyday commands
//! (`stop`, `sessions`, `agents`, `config`, `run`), and the
//! one-shot `zeroclaw rpc|status|pair|upload`. They are clients of the
//! daemon through one bounded peer ([`conn`]) and share its exit statuses
//! ([`exit`]).

pub mod acp_bridge;
pub mod answers;
pub mod args;
pub mod chat;
pub mod colour;
pub mod complete;
pub mod conn;
pub mod doctor;
pub mod everyday;
pub mod exit;
pub mod field;
pub mod file_upload;
pub mod logs;
pub mod man;
pub mod one_shot;
