//! `status` (SPEC §8.2): what the daemon is, where it lives, who is asking.

use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Serialize;
use tower::Service;

use super::RouteFuture;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::state::Daemon;

/// The `status` service.
#[derive(Debug)]
pub struct Status {
    daemon: Arc<Daemon>,
}

impl Status {
    /// `status` for `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Self { daemon }
    }
}

#[derive(Serialize)]
struct StatusResult<'a> {
    server_version: &'static str,
    protocol_version: u32,
    server_pid: u32,
    uptime_secs: u64,
    principal_id: &'a str,
    active_sessions: usize,
    session_ids: &'a [String],
    connections: usize,
    ephemeral: bool,
    config_dir: &'a str,
    config_file: &'a str,
    data_dir: &'a str,
    local_ipc_endpoint: &'a str,
}

impl Service<Request> for Status {
    type Response = Payload;
    type Error = RpcError;
    type Future = RouteFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> RouteFuture {
        RouteFuture::ready(self.answer(&req))
    }
}

impl Status {
    fn answer(&self, req: &Request) -> Result<Payload, RpcError> {
        req.no_params()?;
        let binding = req.binding()?;
        let d = &self.daemon;
        let session_ids = d.sessions.visible_ids(&binding.principal);
        let result = StatusResult {
            server_version: env!("CARGO_PKG_VERSION"),
            protocol_version: 1,
            server_pid: std::process::id(),
            uptime_secs: d.started.elapsed().as_secs(),
            principal_id: &binding.principal.id,
            active_sessions: session_ids.len(),
            session_ids: &session_ids,
            connections: d.connections(),
            ephemeral: d.ephemeral,
            config_dir: &d.paths.config_dir.to_string_lossy(),
            config_file: &d.paths.config_file.to_string_lossy(),
            data_dir: &d.paths.data_dir.to_string_lossy(),
            local_ipc_endpoint: &d.paths.endpoint,
        };
        Payload::new(&result, crate::dialect::Dialect::Camel)
    }
}
