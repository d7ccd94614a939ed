//! The protocol additions (docs/protocol-additions.md): methods outside
//! SPEC version 1 that ZeroClaw's own terminal client, zerocode, calls.
//! They sit in the method table like every other method, so the handshake,
//! authorization and limit layers treat them the same; nothing of version 1
//! changes.

pub mod config_list;
pub mod logs;
pub mod params;
pub mod sections;

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::logging::capture::Subscription;
use crate::methods::AdditionsMethod;
use crate::request::Request;
use crate::session::agent_status::agent_status;
use crate::session::git_head::git_head;
use crate::state::Daemon;
use params::Member;

/// The additions of one connection (it owns the connection's log subscription).
#[allow(missing_debug_implementations)]
pub struct AdditionsService {
    daemon: Arc<Daemon>,
    conn: Conn,
    logs: Option<Arc<Subscription>>,
}

impl AdditionsService {
    /// The additions for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self {
            daemon,
            conn,
            logs: None,
        }
    }
}

fn payload(v: &serde_json::Value) -> Result<Payload, RpcError> {
    Payload::new(v, Default::default())
}

/// `config/sections` takes no params: only an object (or nothing).
#[derive(Deserialize, Default)]
struct SectionsParams {}

/// `config/templates` takes no params: only an object (or nothing).
#[derive(Deserialize, Default)]
struct TemplatesParams {}

/// `health` takes no params: only an object (or nothing).
#[derive(Deserialize, Default)]
struct HealthParams {}

/// `agents/status` takes no params: only an object (or nothing).
#[derive(Deserialize, Default)]
struct AgentsStatusParams {}

#[derive(Deserialize, Default)]
#[serde(default)]
struct GitBranchParams {
    session_id: Member<String>,
}

impl AdditionsService {
    pub(super) fn route(&mut self, req: Request, m: AdditionsMethod) -> ReplyFuture {
        let daemon = self.daemon.clone();
        match m {
            AdditionsMethod::ConfigSections => {
                ReplyFuture::ready(params::decode(&req).and_then(|SectionsParams {}| {
                    payload(&json!({"sections": sections::sections(&daemon.config.current())}))
                }))
            }
            AdditionsMethod::ConfigTemplates => ReplyFuture::ready(
                params::decode(&req).and_then(|TemplatesParams {}| payload(&sections::templates())),
            ),
            AdditionsMethod::ConfigList => {
                ReplyFuture::ready(config_list::list(&daemon, &req).and_then(|v| payload(&v)))
            }
            AdditionsMethod::ConfigMapKeys => {
                ReplyFuture::ready(config_list::map_keys(&daemon, &req).and_then(|v| payload(&v)))
            }
            AdditionsMethod::LogsSubscribe => ReplyFuture::ready(
                logs::subscribe(&daemon, &self.conn, &req, &mut self.logs)
                    .and_then(|v| payload(&v)),
            ),
            AdditionsMethod::LogsQuery => {
                ReplyFuture::ready(logs::query(&daemon, &self.conn, &req).and_then(|v| payload(&v)))
            }
            AdditionsMethod::Health => ReplyFuture::boxed(async move {
                let HealthParams {} = params::decode(&req)?;
                payload(&daemon.health().await)
            }),
            AdditionsMethod::AgentsStatus => ReplyFuture::boxed(async move {
                let AgentsStatusParams {} = params::decode(&req)?;
                let principal = req.binding()?.principal.clone();
                let agents = agent_status(&daemon.sessions, &daemon.config, &principal).await?;
                payload(&json!({ "agents": agents }))
            }),
            AdditionsMethod::SessionGitBranch => ReplyFuture::boxed(async move {
                let p: GitBranchParams = params::decode(&req)?;
                let id = p.session_id.required("session_id")?;
                let principal = &req.binding()?.principal;
                payload(&json!(git_head(&daemon.sessions, principal, &id).await?))
            }),
        }
    }
}
