//! `debug/set-faults` (§8.20): served only with `--test-faults`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::methods::DebugMethod;
use crate::request::Request;
use crate::state::Daemon;

/// The `debug/*` service.
#[derive(Debug)]
pub struct DebugService {
    daemon: Arc<Daemon>,
}

impl DebugService {
    /// `debug/*` for `daemon`.
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Self { daemon }
    }
}

#[derive(Deserialize)]
struct SetFaultsParams {
    faults: Vec<String>,
}

fn set_faults(daemon: &Daemon, req: &Request) -> Result<Payload, RpcError> {
    let p: SetFaultsParams = req.params()?;
    let active = daemon
        .faults
        .set_named(&p.faults)
        .map_err(|name| RpcError::invalid_params(format!("unknown fault point {name}")))?;
    tracing::warn!(event = "faults_set", faults = ?p.faults);
    Payload::new(&json!({ "faults": active }), Default::default())
}

impl DebugService {
    pub(super) fn route(&mut self, req: Request, m: DebugMethod) -> ReplyFuture {
        match m {
            DebugMethod::SetFaults => ReplyFuture::ready(set_faults(&self.daemon, &req)),
        }
    }
}
