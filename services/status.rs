//! `status` (§8.2): what the daemon is, where it lives, who is asking.
//!
//! The constant members are serialized once at start-up
//! (`crate::state::StatusTemplate`); an answer writes the few that change
//! between them. `status` is what load balancers and health checks call in
//! a loop: it should cost almost nothing.

use std::sync::Arc;

use serde::Deserialize;

use super::RouteFuture;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::methods::StatusMethod;
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

/// `status` takes no params: only an object (or nothing) is accepted.
#[derive(Deserialize)]
struct StatusParams {}

impl Status {
    pub(super) fn route(&mut self, req: Request, m: StatusMethod) -> RouteFuture {
        match m {
            StatusMethod::Status => RouteFuture::ready(self.answer(&req)),
        }
    }

    fn answer(&self, req: &Request) -> Result<Payload, RpcError> {
        let StatusParams {} = req.params()?;
        let binding = req.binding()?;
        let d = &self.daemon;
        let session_ids = d.sessions.visible_ids(&binding.principal);
        Ok(d.status.render(
            d.started.elapsed().as_secs(),
            &binding.principal.id,
            &session_ids,
            d.connections(),
        ))
    }
}
