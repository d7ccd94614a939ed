//! `session/cancel`, `session/approve`, `session/close`, `session/kill`,
//! `session/delete` (§8.6–§8.9, §8.12).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::{payload, session_id};
use crate::agent::ApprovalDecision;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::lifecycle;
use crate::session::ChatMode;
use crate::state::Daemon;

#[derive(Deserialize)]
struct CancelParams {
    session_id: Option<String>,
}

pub(super) fn cancel(daemon: &Daemon, req: &Request) -> Result<Payload, RpcError> {
    let p: CancelParams = req.params()?;
    let id = session_id(p.session_id)?;
    let principal = &req.binding()?.principal;
    daemon.sessions.cancel_turn(principal, &id)?;
    payload(&json!({"session_id": id, "cancelled": true}))
}

#[derive(Deserialize)]
struct ApproveParams {
    session_id: Option<String>,
    request_id: Option<String>,
    decision: Option<String>,
    replacement: Option<String>,
}

pub(super) fn approve(daemon: &Daemon, req: &Request) -> Result<Payload, RpcError> {
    let p: ApproveParams = req.params()?;
    let id = session_id(p.session_id)?;
    let request_id = p
        .request_id
        .ok_or_else(|| RpcError::invalid_params("request_id is required"))?;
    let decision = match p.decision.as_deref() {
        Some("allow_once") => ApprovalDecision::AllowOnce,
        Some("allow_always") => ApprovalDecision::AllowAlways,
        Some("reject" | "reject_once") => ApprovalDecision::Rejected,
        Some("reject_with_edit") => match p.replacement {
            Some(r) => ApprovalDecision::Replaced(r),
            None => {
                return Err(RpcError::invalid_params(
                    "replacement is required with reject_with_edit",
                ))
            }
        },
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "unknown decision {other}"
            )))
        }
        None => return Err(RpcError::invalid_params("decision is required")),
    };
    let principal = &req.binding()?.principal;
    let acknowledged = daemon
        .sessions
        .approve(principal, &id, &request_id, decision)?;
    payload(&json!({"session_id": id, "request_id": request_id, "acknowledged": acknowledged}))
}

#[derive(Deserialize)]
struct CloseParams {
    session_id: Option<String>,
}

pub(super) async fn close(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let p: CloseParams = req.params()?;
    let id = session_id(p.session_id)?;
    let principal = req.binding()?.principal.clone();
    lifecycle::close(&daemon.sessions, &conn, &principal, &id).await?;
    payload(&json!({"session_id": id, "closed": true}))
}

#[derive(Deserialize)]
struct KillParams {
    session_id: Option<String>,
}

pub(super) async fn kill(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let p: KillParams = req.params()?;
    let id = session_id(p.session_id)?;
    let principal = req.binding()?.principal.clone();
    if !lifecycle::kill(&daemon.sessions, &conn, &principal, &id).await? {
        return Err(RpcError::session_not_found());
    }
    payload(&json!({"session_id": id, "killed": true}))
}

/// `session/delete` (§8.9), the only ending with a `chat_mode` param.
#[derive(Deserialize)]
struct DeleteParams {
    session_id: Option<String>,
    chat_mode: Option<ChatMode>,
}

pub(super) async fn delete(
    daemon: Arc<Daemon>,
    conn: Conn,
    req: Request,
) -> Result<Payload, RpcError> {
    let p: DeleteParams = req.params()?;
    let id = session_id(p.session_id)?;
    let principal = req.binding()?.principal.clone();
    let deleted = lifecycle::delete(&daemon.sessions, &conn, &principal, &id, p.chat_mode).await?;
    payload(&json!({"session_id": id, "deleted": deleted}))
}
