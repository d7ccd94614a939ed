//! Lifecycle of sessions (§8.3, §8.4 step 1, §8.7–§8.9, §9.6, §9.9):
//! create, resume, rehydrate, close, kill, delete, idle reclamation.
//!
//! Every operation here holds the session lock of its id (lock (2) of
//! §6.8) for its whole check-then-act, so two lifecycle operations on one
//! id never interleave. Kill and delete signal cancellation before any
//! storage operation that can fail, and tear the live session down only
//! once storage succeeded (§9.9).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::live::{Ending, NewSession, Session};
use super::{ChatMode, Sessions, MAX_LIVE_SESSIONS};
use crate::config::{Config, Principal};
use crate::conn_state::Conn;
use crate::error::{ErrorData, Reason, RpcError};
use crate::store::DurableRow;

use super::access::{check_agent, check_owner};
pub use crate::store::RPC_SURFACE;

fn unsupported(row: &DurableRow) -> RpcError {
    RpcError::SessionNotFound {
        message: "Session not found: unsupported interaction surface".into(),
        data: Some(
            ErrorData::reason(Reason::UnsupportedInteractionSurface)
                .with("interaction_surface", row.interaction_surface.as_str()),
        ),
    }
}

fn killed() -> RpcError {
    Ending::Killed.error()
}

/// The working directory of an agent's sessions by default, created on demand (0700).
pub fn agent_workspace(
    config: &Config,
    config_dir: &Path,
    alias: &str,
) -> Result<PathBuf, RpcError> {
    let dir = config.agent_workspace_dir(config_dir, alias);
    create_private_dir(&dir).map_err(|e| {
        RpcError::storage_io(
            &e,
            format!("cannot create workspace {}: {e}", dir.display()),
        )
    })?;
    Ok(dir)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// `session/new` after parameter validation (§8.3).
#[derive(Debug)]
pub struct NewRequest {
    pub id: String,
    pub agent_alias: String,
    pub mode: ChatMode,
    pub cwd: Option<PathBuf>,
    /// Replace a live session even while another connection uses it
    /// (`replace: true`); otherwise such a session is joined.
    pub replace: bool,
}

/// The `session/new` result.
#[derive(Debug, serde::Serialize)]
pub struct NewResult {
    pub session_id: String,
    pub agent_alias: String,
    pub chat_mode: ChatMode,
    pub incarnation: u64,
    pub message_count: u64,
    pub workspace_dir: String,
    pub resumed: bool,
    /// The request joined a live session another connection uses;
    /// absent otherwise, so version-1 results keep their exact shape.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub attached: bool,
}

/// Creates, resumes or replaces a live session (§8.3 steps 1–7).
pub async fn new_session(
    sessions: &Sessions,
    config: &Config,
    config_dir: &Path,
    conn: &Conn,
    principal: &Principal,
    req: NewRequest,
) -> Result<NewResult, RpcError> {
    let store = &sessions.store;
    // A new session (its rehydrated context above all) is new work.
    crate::memory::budget().check()?;
    let _lock = sessions.locks.lock(&req.id).await;
    let live = sessions.get(&req.id);
    let (acp, chat) = match req.mode {
        ChatMode::Durable => (store.durable_get(&req.id).await?, None),
        ChatMode::Chat => (None, store.chat_get(&req.id).await?),
    };
    // 1. Ownership of the live session and of the record this request resumes.
    if let Some(s) = &live {
        check_owner(principal, &s.owner)?;
    }
    if let Some(r) = &acp {
        check_owner(principal, &r.record.owner_principal_id)?;
    }
    if let Some(r) = &chat {
        check_owner(principal, &r.owner_principal_id)?;
    }
    // 2. Agent selector.
    check_agent(principal, &req.agent_alias)?;
    // 3. Resume state.
    if let Some(r) = &acp {
        if r.killed_at.is_some() {
            return Err(killed());
        }
        if r.interaction_surface != RPC_SURFACE {
            return Err(unsupported(r));
        }
        if r.record.agent_alias != req.agent_alias {
            return Err(RpcError::invalid_params(
                "ACP session belongs to a different agent",
            ));
        }
    }
    if let Some(r) = &chat {
        if r.agent_alias != req.agent_alias {
            return Err(RpcError::invalid_params(
                "Chat session belongs to a different agent",
            ));
        }
    }
    // 4. Limit.
    if live.is_none() && sessions.count() >= MAX_LIVE_SESSIONS {
        return Err(RpcError::SessionLimit {
            max: MAX_LIVE_SESSIONS as u64,
        });
    }
    // 5. Join or replace: a session another open connection
    //    still uses is joined unless the request says `replace`.
    if let Some(s) = live.as_ref().filter(|s| {
        !req.replace && s.mode == req.mode && s.ending().is_none() && s.used_by_another(conn)
    }) {
        let (joined, message_count) =
            super::attach::join_live(sessions, s, conn, principal).await?;
        return Ok(NewResult {
            session_id: joined.session_id,
            agent_alias: joined.agent_alias,
            chat_mode: joined.chat_mode,
            incarnation: joined.incarnation,
            message_count,
            workspace_dir: joined.workspace_dir,
            resumed: true,
            attached: true,
        });
    }
    if let Some(old) = live {
        close_live(sessions, &old, "replaced", Actor::client(conn, principal)).await;
    }
    // 6. Create.
    let stored_dir = acp
        .as_ref()
        .map(|r| &r.record.workspace_dir)
        .or(chat.as_ref().map(|r| &r.workspace_dir));
    let workspace = match (&req.cwd, stored_dir) {
        (Some(cwd), _) => cwd.clone(),
        (None, Some(dir)) => PathBuf::from(dir),
        (None, None) => agent_workspace(config, config_dir, &req.agent_alias)?,
    };
    let workspace_text = workspace.to_string_lossy().into_owned();
    let (durable_row, context, message_count, resumed) = match (req.mode, acp, chat) {
        (ChatMode::Durable, Some(row), _) => {
            store.recover(row.row).await?;
            let context = store.rebuild_context(row.row).await?;
            if req.cwd.is_some() {
                store
                    .durable_set_workspace(row.row, &workspace_text)
                    .await?;
            }
            let count = store.durable_message_count(row.row).await?;
            tracing::info!(event = "session_recovered", session_id = %req.id, principal_id = %principal.id, peer = %conn.peer.label);
            (Some(row.row), context, count, true)
        }
        (ChatMode::Durable, None, _) => {
            let row = store
                .durable_create(&req.id, &req.agent_alias, &principal.id, &workspace_text)
                .await?;
            (Some(row.row), Vec::new(), 0, false)
        }
        (ChatMode::Chat, _, Some(row)) => {
            if req.cwd.is_some() {
                store.chat_set_workspace(&req.id, &workspace_text).await?;
            }
            let context = store.chat_history(&req.id).await?;
            (None, context, row.message_count, true)
        }
        (ChatMode::Chat, _, None) => {
            store
                .chat_create(&req.id, &req.agent_alias, &principal.id, &workspace_text)
                .await?;
            (None, Vec::new(), 0, false)
        }
    };
    let owner = match (&durable_row, resumed) {
        // A resumed record keeps its owner (an admin may resume another's session).
        (Some(_), true) => store
            .durable_get(&req.id)
            .await?
            .map(|r| r.record.owner_principal_id),
        (None, true) => store.chat_get(&req.id).await?.map(|r| r.owner_principal_id),
        _ => None,
    }
    .unwrap_or_else(|| principal.id.clone());
    let incarnation = sessions.next_incarnation();
    let session = Session::new(NewSession {
        id: req.id.clone(),
        incarnation,
        mode: req.mode,
        agent_alias: req.agent_alias.clone(),
        owner,
        workspace_dir: workspace,
        durable_row,
        context,
        channel: conn.clone(),
    });
    sessions.insert(session);
    tracing::info!(event = "session_created", session_id = %req.id, principal_id = %principal.id, peer = %conn.peer.label, incarnation, chat_mode = req.mode.as_str());
    Ok(NewResult {
        session_id: req.id,
        agent_alias: req.agent_alias,
        chat_mode: req.mode,
        incarnation,
        message_count,
        workspace_dir: workspace_text,
        resumed,
        attached: false,
    })
}

/// Who asked for a lifecycle operation, for its audit event (§2.5): a
/// client's peer label and bound principal, or the daemon itself (idle
/// reclamation), logged as `peer = "daemon"` without `principal_id`.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    pub peer: &'a str,
    pub principal_id: Option<&'a str>,
}

impl<'a> Actor<'a> {
    /// The daemon acting on its own.
    pub const DAEMON: Actor<'static> = Actor {
        peer: "daemon",
        principal_id: None,
    };

    /// A bound client.
    pub fn client(conn: &'a Conn, principal: &'a Principal) -> Self {
        Self {
            peer: &conn.peer.label,
            principal_id: Some(&principal.id),
        }
    }
}

/// Closes a live session (§8.7): mark closing, soft-cancel, wait for the
/// turn to end and be persisted, unregister, remove. The caller holds its lock.
pub async fn close_live(
    sessions: &Sessions,
    session: &Arc<Session>,
    why: &'static str,
    by: Actor<'_>,
) {
    session.end(Ending::Closed);
    session.soft_cancel();
    session.wait_idle().await;
    session.clear_channel();
    sessions.remove(&session.id, session.incarnation);
    match by.principal_id {
        Some(principal_id) => {
            tracing::info!(event = "session_closed", session_id = %session.id, principal_id, peer = by.peer, incarnation = session.incarnation, reason = why)
        }
        None => {
            tracing::info!(event = "session_closed", session_id = %session.id, peer = by.peer, incarnation = session.incarnation, reason = why)
        }
    }
}

/// The live session `session/prompt` runs on (§8.4 step 1), rehydrating a
/// persisted durable row if needed.
pub async fn resolve_for_prompt(
    sessions: &Sessions,
    conn: &Conn,
    principal: &Principal,
    id: &str,
) -> Result<Arc<Session>, RpcError> {
    let store = &sessions.store;
    // A session being closed, killed or deleted holds its lock until the
    // turn is over: a prompt for it fails now rather than queue behind the
    // lock and rehydrate what was just closed (§8.7).
    if let Some(s) = sessions.get(id) {
        if let Some(end) = s.ending() {
            check_owner(principal, &s.owner)?;
            return Err(end.error());
        }
    }
    let _lock = sessions.locks.lock(id).await;
    if let Some(s) = sessions.get(id) {
        check_owner(principal, &s.owner)?;
        check_agent(principal, &s.agent_alias)?;
        return Ok(s);
    }
    let Some(row) = store.durable_get(id).await? else {
        return Err(RpcError::session_not_found());
    };
    check_owner(principal, &row.record.owner_principal_id)?;
    check_agent(principal, &row.record.agent_alias)?;
    if row.killed_at.is_some() {
        return Err(killed());
    }
    if row.interaction_surface != RPC_SURFACE {
        return Err(unsupported(&row));
    }
    if sessions.count() >= MAX_LIVE_SESSIONS {
        return Err(RpcError::SessionLimit {
            max: MAX_LIVE_SESSIONS as u64,
        });
    }
    store.recover(row.row).await?;
    let context = store.rebuild_context(row.row).await?;
    let incarnation = sessions.next_incarnation();
    let session = Session::new(NewSession {
        id: id.to_owned(),
        incarnation,
        mode: ChatMode::Durable,
        agent_alias: row.record.agent_alias.clone(),
        owner: row.record.owner_principal_id.clone(),
        workspace_dir: PathBuf::from(&row.record.workspace_dir),
        durable_row: Some(row.row),
        context,
        channel: conn.clone(),
    });
    sessions.insert(session.clone());
    tracing::info!(event = "session_recovered", session_id = %id, principal_id = %principal.id, peer = %conn.peer.label, incarnation);
    Ok(session)
}

/// Tears a live session down after a kill or delete.
fn tear_down(sessions: &Sessions, s: &Arc<Session>, why: Ending) {
    s.end(why);
    s.clear_channel();
    sessions.remove(&s.id, s.incarnation);
}

/// `session/kill` (§8.8, §9.9). `Ok(false)` when there is nothing to kill.
pub async fn kill(
    sessions: &Sessions,
    conn: &Conn,
    principal: &Principal,
    id: &str,
) -> Result<bool, RpcError> {
    let store = &sessions.store;
    let _lock = sessions.locks.lock(id).await;
    let live = sessions.get(id);
    let row = store.durable_get(id).await?;
    let row = match (&live, row) {
        (Some(s), row) if s.mode == ChatMode::Durable => row,
        (Some(_), _) => None, // a Chat session has no ACP row to tombstone
        (None, Some(r)) if r.killed_at.is_none() => Some(r),
        (None, _) => return Ok(false),
    };
    match (&live, &row) {
        (Some(s), _) => check_owner(principal, &s.owner)?,
        (None, Some(r)) => check_owner(principal, &r.record.owner_principal_id)?,
        (None, None) => return Ok(false),
    }
    // 1. Cancellation first: a running turn is hard-cancelled and its live owner torn down now.
    if let Some(s) = &live {
        if s.hard_cancel() {
            tear_down(sessions, s, Ending::Killed);
        }
    }
    // 2. Storage.
    if let Some(r) = &row {
        store
            .durable_kill(r.row, r.interaction_surface == RPC_SURFACE)
            .await?;
    }
    // 3. Success.
    if let Some(s) = &live {
        tear_down(sessions, s, Ending::Killed);
    }
    tracing::info!(event = "session_killed", session_id = %id, principal_id = %principal.id, peer = %conn.peer.label);
    Ok(true)
}

/// `session/delete` (§8.9, §9.9). `Ok(false)` when the selected store has nothing.
pub async fn delete(
    sessions: &Sessions,
    conn: &Conn,
    principal: &Principal,
    id: &str,
    mode: Option<ChatMode>,
) -> Result<bool, RpcError> {
    let store = &sessions.store;
    let _lock = sessions.locks.lock(id).await;
    let live = sessions.get(id);
    let acp = store.durable_get(id).await?;
    let mode = match (mode, &live) {
        (Some(m), _) => m,
        (None, Some(s)) => s.mode,
        (None, None) if acp.is_some() => ChatMode::Durable,
        (None, None) => ChatMode::Chat,
    };
    let live = live.filter(|s| s.mode == mode);
    let owner = match (mode, &live) {
        (_, Some(s)) => Some(s.owner.clone()),
        (ChatMode::Durable, None) => acp.as_ref().map(|r| r.record.owner_principal_id.clone()),
        (ChatMode::Chat, None) => store.chat_get(id).await?.map(|r| r.owner_principal_id),
    };
    let Some(owner) = owner else { return Ok(false) };
    check_owner(principal, &owner)?;
    if let Some(s) = &live {
        if s.hard_cancel() {
            tear_down(sessions, s, Ending::Deleted);
        }
    }
    let deleted = match mode {
        ChatMode::Durable => store.durable_delete(id).await,
        ChatMode::Chat => store.chat_delete(id).await,
    }?;
    if let Some(s) = &live {
        tear_down(sessions, s, Ending::Deleted);
    }
    tracing::info!(event = "session_deleted", session_id = %id, principal_id = %principal.id, peer = %conn.peer.label, chat_mode = mode.as_str());
    Ok(deleted || live.is_some())
}

/// `session/close` (§8.7).
pub async fn close(
    sessions: &Sessions,
    conn: &Conn,
    principal: &Principal,
    id: &str,
) -> Result<(), RpcError> {
    let _lock = sessions.locks.lock(id).await;
    let s = sessions.get(id).ok_or_else(RpcError::session_not_found)?;
    check_owner(principal, &s.owner)?;
    close_live(sessions, &s, "closed", Actor::client(conn, principal)).await;
    Ok(())
}

/// Closes every live session idle for `idle` (§9.6 idle reclamation).
pub async fn reclaim_idle(sessions: &Sessions, idle: std::time::Duration) {
    for s in sessions.all() {
        if !s.idle_for(idle) {
            continue;
        }
        let _lock = sessions.locks.lock(&s.id).await;
        // Still the same, still idle, under the lock.
        if sessions.get(&s.id).is_some_and(|cur| Arc::ptr_eq(&cur, &s)) && s.idle_for(idle) {
            close_live(sessions, &s, "idle", Actor::DAEMON).await;
        }
    }
}

/// Shutdown (§2.6): soft-cancel every turn and give them the grace to persist.
pub async fn shut_down(sessions: &Sessions, grace: std::time::Duration) {
    let all = sessions.all();
    for s in &all {
        s.end(Ending::Closed);
        s.soft_cancel();
    }
    let idle = futures_util::future::join_all(all.iter().map(|s| s.wait_idle()));
    let _ = tokio::time::timeout(grace, idle).await;
}
