//! `status` (§8.2): what the daemon is, where it lives, who is asking.
//!
//! The constant members are serialized once at start-up
//! (`crate::state::StatusTemplate`); an answer writes the few that change
//! between them. `status` is what load balancers and health checks call in
//! a loop: it should cost almost nothing, so each connection keeps its last
//! result and shares it with each answer while nothing it shows has changed
//! (the second of uptime, the set of live sessions, the connection count,
//! the principal): the answer's only copy is into the output buffer.

use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;

use crate::authz::Principal;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::methods::StatusMethod;
use crate::request::Request;
use crate::state::Daemon;

/// The `status` service.
#[derive(Debug)]
pub struct Status {
    daemon: Arc<Daemon>,
    /// The connection's last result, while it is still true.
    last: Option<Rendered>,
}

/// The largest result a connection keeps (a few dozen session ids).
const KEEP_AT_MOST: usize = 4096;

/// A result and what it was rendered from.
#[derive(Debug)]
struct Rendered {
    at: Moment,
    principal: Arc<Principal>,
    result: Bytes,
}

/// What changes a result besides the principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Moment {
    uptime_secs: u64,
    session_changes: u64,
    connections: usize,
}

impl Status {
    /// `status` for `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Self { daemon, last: None }
    }
}

/// `status` takes no params: only an object (or nothing) is accepted.
#[derive(Deserialize)]
struct StatusParams {}

impl Status {
    pub(super) fn route(&mut self, req: Request, m: StatusMethod) -> ReplyFuture {
        match m {
            StatusMethod::Status => ReplyFuture::ready(self.answer(&req)),
        }
    }

    fn answer(&mut self, req: &Request) -> Result<Payload, RpcError> {
        let StatusParams {} = req.params()?;
        let principal = &req.binding()?.principal;
        let d = &self.daemon;
        // The change count is read before the sessions: a change in between
        // is seen again on the next call, never missed.
        let at = Moment {
            uptime_secs: d.uptime.secs(),
            session_changes: d.sessions.changes(),
            connections: d.connections(),
        };
        match &self.last {
            Some(last) if last.at == at && Arc::ptr_eq(&last.principal, principal) => {
                Ok(Payload::shared(last.result.clone()))
            }
            _ => {
                let session_ids = d.sessions.visible_ids(principal);
                let mut result = Vec::with_capacity(d.status.capacity());
                d.status.write(
                    &mut result,
                    at.uptime_secs,
                    &principal.id,
                    &session_ids,
                    at.connections,
                );
                let result = Bytes::from(result);
                let payload = Payload::shared(result.clone());
                // A long list of session ids (an admin's) is not kept: the
                // memory would stay with the connection, outside the budget.
                self.last = (result.len() <= KEEP_AT_MOST).then(|| Rendered {
                    at,
                    principal: principal.clone(),
                    result,
                });
                Ok(payload)
            }
        }
    }
}
