//! `session/attach` (issue 25): a connection joins a live session as a
//! further client, replacing nothing (docs/protocol-additions.md). The
//! fan-out of updates to attached clients is `Session::audience`'s.

use super::lifecycle::{check_agent, check_owner};
use super::{ChatMode, Sessions};
use crate::config::Principal;
use crate::context::Conn;
use crate::error::{ErrorData, Reason, RpcError};

/// The `session/attach` result (issue 25).
#[derive(Debug, serde::Serialize)]
pub struct AttachResult {
    pub session_id: String,
    pub agent_alias: String,
    pub chat_mode: ChatMode,
    pub incarnation: u64,
    pub workspace_dir: String,
    /// A turn is running now: its updates follow from the next event on.
    pub running: bool,
    /// Clients attached now, this one included.
    pub clients: usize,
}

/// `session/attach` (issue 25): joins `conn` to the LIVE session `id` as a
/// further client, replacing nothing. Ownership and the agent selector as
/// for `session/prompt`; a session that is not live is not found (resume
/// it with `session/new`).
pub async fn attach(
    sessions: &Sessions,
    conn: &Conn,
    principal: &Principal,
    id: &str,
) -> Result<AttachResult, RpcError> {
    let _lock = sessions.locks.lock(id).await;
    let s = sessions.get(id).ok_or_else(RpcError::session_not_found)?;
    check_owner(principal, &s.owner)?;
    check_agent(principal, &s.agent_alias)?;
    if let Some(end) = s.ending() {
        return Err(end.error());
    }
    let clients = s.attach(conn).map_err(|max| RpcError::SessionBusy {
        detail: "too many attached clients",
        data: ErrorData::reason(Reason::TooManyClients).with("max", max),
    })?;
    tracing::info!(event = "session_attached", session_id = %id, principal_id = %principal.id, peer = %conn.peer.label, incarnation = s.incarnation, clients);
    Ok(AttachResult {
        session_id: s.id.clone(),
        agent_alias: s.agent_alias.clone(),
        chat_mode: s.mode,
        incarnation: s.incarnation,
        workspace_dir: s.workspace_dir.to_string_lossy().into_owned(),
        running: s.is_running(),
        clients,
    })
}
