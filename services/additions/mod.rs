//! The protocol additions (docs/protocol-additions.md): methods outside
//! SPEC version 1 that ZeroClaw's own terminal client, zerocode, calls.
//! They sit in the method table like every other method, so the handshake,
//! authorization and limit layers treat them the same; nothing of version 1
//! changes.

pub mod agents;
pub mod config_list;
pub mod git_branch;
pub mod health;
pub mod logs;
pub mod params;
pub mod sections;

use std::sync::Arc;

use serde_json::json;

use super::RouteFuture;
use crate::confine::pool;
use crate::context::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::logging::capture::Subscription;
use crate::methods::Method;
use crate::request::Request;
use crate::session::access::check_owner;
use crate::state::Daemon;

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

method_family!(AdditionsService);

fn payload(v: &serde_json::Value) -> Result<Payload, RpcError> {
    Payload::new(v, Default::default())
}

impl AdditionsService {
    fn route(&mut self, req: Request) -> RouteFuture {
        let daemon = self.daemon.clone();
        match req.method.id {
            Method::ConfigSections => RouteFuture::ready(params::object(&req).and_then(|_| {
                payload(&json!({"sections": sections::sections(&daemon.config.current())}))
            })),
            Method::ConfigTemplates => RouteFuture::ready(
                params::object(&req).and_then(|_| payload(&sections::templates())),
            ),
            Method::ConfigList => {
                RouteFuture::ready(config_list::list(&daemon, &req).and_then(|v| payload(&v)))
            }
            Method::ConfigMapKeys => {
                RouteFuture::ready(config_list::map_keys(&daemon, &req).and_then(|v| payload(&v)))
            }
            Method::LogsSubscribe => RouteFuture::ready(
                logs::subscribe(&daemon, &self.conn, &req, &mut self.logs)
                    .and_then(|v| payload(&v)),
            ),
            Method::LogsQuery => {
                RouteFuture::ready(logs::query(&daemon, &self.conn, &req).and_then(|v| payload(&v)))
            }
            Method::Health => RouteFuture::boxed(async move {
                params::object(&req)?;
                payload(&health::health(&daemon).await)
            }),
            Method::AgentsStatus => RouteFuture::boxed(async move {
                params::object(&req)?;
                let principal = req.binding()?.principal.clone();
                let agents = agents::status(&daemon, &principal).await?;
                payload(&json!({ "agents": agents }))
            }),
            Method::SessionGitBranch => RouteFuture::boxed(async move {
                let m = params::object(&req)?;
                let id = params::req_str(&m, "session_id")?;
                let principal = &req.binding()?.principal;
                let session =
                    daemon
                        .sessions
                        .get(&id)
                        .ok_or_else(|| RpcError::SessionNotFound {
                            message: format!("Session not found: {id}").into(),
                            data: None,
                        })?;
                check_owner(principal, &session.owner)?;
                let dir = session.workspace_dir.clone();
                // Bounded like every read of a path the agent controls: a
                // stuck read or a full pool answers `null`s, never holds on.
                let head = pool::run(pool::Work::GitHead, move || Ok(git_branch::head(&dir)))
                    .await
                    .unwrap_or_default();
                payload(&json!(head))
            }),
            _ => crate::services::misrouted(&req),
        }
    }
}
