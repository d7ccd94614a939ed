//! `zeroclaw`: a local JSON-RPC 2.0 daemon speaking NDJSON over a Unix
//! socket (a named pipe on Windows). See `docs/architecture.md` for the path
//! of one request through these modules.

#![warn(missing_debug_implementations)]

pub mod agent;
pub mod authz;
pub mod bounded;
pub mod bounded_file;
pub mod call_error;
pub mod cli;
pub mod codec;
pub mod config;
pub mod confine;
pub mod conn_state;
pub mod connection;
pub mod daemon;
pub mod dialect;
pub mod endpoint;
pub mod error;
pub mod faults;
pub mod files;
pub mod gateway;
pub mod hex;
pub mod jsonrpc;
pub mod limits;
pub mod live_config;
pub mod logging;
pub mod memory;
pub mod methods;
pub mod outbound;
pub mod peer;
pub mod private_dir;
pub mod request;
pub mod session;
pub mod shown;
pub mod state;
pub mod storage_fault;
pub mod store;
pub mod systemd;

#[path = "../layers/mod.rs"]
pub mod layers;
#[path = "../services/mod.rs"]
pub mod services;

// Checks the arrows between the modules above (docs/architecture.md).
#[cfg(test)]
mod architecture_tests;
