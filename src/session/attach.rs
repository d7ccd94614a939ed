//! `session/attach`: a connection joins a live session as a
//! further client, replacing nothing (docs/protocol-additions.md). The
//! fan-out of updates to attached clients is `Session::audience`'s.

use super::access::live_for;
use super::live::Session;
use super::{ChatMode, Sessions};
use crate::config::Principal;
use crate::conn_state::Conn;
use crate::error::{ErrorData, Reason, RpcError};

/// The `session/attach` result.
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

/// `session/attach`: joins `conn` to the LIVE session `id` as a
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
    let s = live_for(sessions, principal, id)?;
    join(&s, conn, principal)
}

/// Joins `conn` to the live session `s` (its lock held, ownership and the
/// selector checked): `session/attach`, and `session/new` on a session
/// another open connection still uses ([`join_live`]).
fn join(s: &Session, conn: &Conn, principal: &Principal) -> Result<AttachResult, RpcError> {
    if let Some(end) = s.ending() {
        return Err(end.error());
    }
    let clients = s.attach(conn).map_err(|max| RpcError::SessionBusy {
        detail: "too many attached clients",
        data: ErrorData::reason(Reason::TooManyClients).with("max", max),
    })?;
    tracing::info!(event = "session_attached", session_id = %s.id, principal_id = %principal.id, peer = %conn.peer.label, incarnation = s.incarnation, clients);
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

/// `session/new` on a live session that another open connection still uses
/// (its lock held, steps 1-3 passed): the caller joins it as
/// `session/attach` does, so a second window never ends the first one's
/// turn (docs/protocol-additions.md). The join and the session's message
/// count, from which `session/new` answers with `resumed` and `attached`.
pub(super) async fn join_live(
    sessions: &Sessions,
    s: &Session,
    conn: &Conn,
    principal: &Principal,
) -> Result<(AttachResult, u64), RpcError> {
    let joined = join(s, conn, principal)?;
    let message_count = match s.durable_row {
        Some(row) => sessions.store.durable_message_count(row).await?,
        None => sessions
            .store
            .chat_get(&s.id)
            .await?
            .map_or(0, |r| r.message_count),
    };
    Ok((joined, message_count))
}
