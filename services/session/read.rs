//! `session/list`, `session/list-acp`, `session/messages` (§8.10, §8.11).
//! Non-admins see only the sessions they own.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{payload, session_id};
use crate::config::Principal;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::request::Request;
use crate::session::access::check_owner;
use crate::session::{ChatMode, Sessions};
use crate::state::Daemon;
use crate::store::{ChatRow, DurableRow, SessionRecord};

/// Most rows any list returns.
const MAX_LIST: u32 = 1000;

fn limit(v: Option<u32>, default: u32) -> Result<u32, RpcError> {
    match v.unwrap_or(default) {
        n @ 1..=MAX_LIST => Ok(n),
        _ => Err(RpcError::invalid_params(format!(
            "limit must be 1..={MAX_LIST}"
        ))),
    }
}

/// One entry of a session list.
#[derive(Debug, Serialize)]
struct Entry<'a> {
    session_id: &'a str,
    session_key: String,
    chat_mode: ChatMode,
    agent_alias: &'a str,
    owner_principal_id: &'a str,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    interaction_surface: Option<&'a str>,
    created_at: &'a str,
    last_activity: &'a str,
    message_count: u64,
    /// Addition (issue 25): where the session works, so a client can pick
    /// the session of a project directory.
    workspace_dir: &'a str,
}

fn live_state(sessions: &Sessions, id: &str, mode: ChatMode) -> bool {
    sessions.get(id).is_some_and(|s| s.mode == mode)
}

/// The entry of one stored session: its record, and what its mode decides.
fn entry<'a>(
    r: &'a SessionRecord,
    chat_mode: ChatMode,
    session_key: String,
    state: &'static str,
    interaction_surface: Option<&'a str>,
) -> Entry<'a> {
    Entry {
        session_id: &r.session_id,
        session_key,
        chat_mode,
        agent_alias: &r.agent_alias,
        owner_principal_id: &r.owner_principal_id,
        state,
        interaction_surface,
        created_at: &r.created_at,
        last_activity: &r.last_activity,
        message_count: r.message_count,
        workspace_dir: &r.workspace_dir,
    }
}

fn acp_entry<'a>(sessions: &Sessions, r: &'a DurableRow) -> Entry<'a> {
    let id = &r.record.session_id;
    let state = match (&r.killed_at, live_state(sessions, id, ChatMode::Durable)) {
        (Some(_), _) => "killed",
        (None, true) => "live",
        (None, false) => "persisted",
    };
    let surface = Some(r.interaction_surface.as_str());
    entry(&r.record, ChatMode::Durable, id.clone(), state, surface)
}

fn chat_entry<'a>(sessions: &Sessions, r: &'a ChatRow) -> Entry<'a> {
    let id = &r.session_id;
    let live = live_state(sessions, id, ChatMode::Chat);
    let state = if live { "live" } else { "persisted" };
    entry(r, ChatMode::Chat, format!("rpc_{id}"), state, None)
}

fn visible(p: &Principal, owner: &str) -> bool {
    p.admin || p.id == owner
}

fn sort(entries: &mut [Entry<'_>]) {
    entries.sort_by(|a, b| {
        b.last_activity
            .cmp(a.last_activity)
            .then(b.created_at.cmp(a.created_at))
    });
}

#[derive(Deserialize)]
struct ListParams {
    chat_mode: Option<ChatMode>,
    include_killed: Option<bool>,
    limit: Option<u32>,
}

pub(super) async fn list(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let p: ListParams = req.params()?;
    let n = limit(p.limit, 100)?;
    let principal = req.binding()?.principal.clone();
    let store = &daemon.sessions.store;
    // An admin sees every row, so the first `n` of each kind hold the first
    // `n` of both: the query reads `n` rows, not `MAX_LIST` (issue 24).
    // Another principal's rows are filtered after the query, as before.
    let fetch = if principal.admin { n } else { MAX_LIST };
    let acp = match p.chat_mode {
        Some(ChatMode::Chat) => Vec::new(),
        _ => {
            store
                .durable_list(p.include_killed.unwrap_or(false), fetch)
                .await?
        }
    };
    let chat = match p.chat_mode {
        Some(ChatMode::Durable) => Vec::new(),
        _ => store.chat_list(fetch).await?,
    };
    let sessions = &daemon.sessions;
    let mut entries: Vec<Entry<'_>> = acp
        .iter()
        .filter(|r| visible(&principal, &r.record.owner_principal_id))
        .map(|r| acp_entry(sessions, r))
        .chain(
            chat.iter()
                .filter(|r| visible(&principal, &r.owner_principal_id))
                .map(|r| chat_entry(sessions, r)),
        )
        .collect();
    sort(&mut entries);
    entries.truncate(n as usize);
    payload(&serde_json::json!({ "sessions": entries }))
}

pub(super) async fn list_acp(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    req.no_params()?;
    let principal = req.binding()?.principal.clone();
    let rows = daemon.sessions.store.durable_list(false, MAX_LIST).await?;
    let mut entries: Vec<Entry<'_>> = rows
        .iter()
        .filter(|r| visible(&principal, &r.record.owner_principal_id))
        .map(|r| acp_entry(&daemon.sessions, r))
        .collect();
    sort(&mut entries);
    payload(&serde_json::json!({ "sessions": entries }))
}

#[derive(Deserialize)]
struct MessagesParams {
    session_id: Option<String>,
    chat_mode: Option<ChatMode>,
    limit: Option<u32>,
    before_index: Option<u64>,
}

pub(super) async fn messages(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let p: MessagesParams = req.params()?;
    let id = session_id(p.session_id)?;
    let n = limit(p.limit, 200)?;
    let principal = req.binding()?.principal.clone();
    let sessions = &daemon.sessions;
    let store = &sessions.store;
    let live = sessions.get(&id);
    let acp = store.durable_get(&id).await?;
    let mode = match (p.chat_mode, &live) {
        (Some(m), _) => m,
        (None, Some(s)) => s.mode,
        (None, None) if acp.is_some() => ChatMode::Durable,
        (None, None) => ChatMode::Chat,
    };
    let page = match mode {
        ChatMode::Durable => {
            let row = acp.ok_or_else(RpcError::session_not_found)?;
            check_owner(&principal, &row.record.owner_principal_id)?;
            sessions.recover_unowned(&id, &row).await?;
            store.durable_messages(row.row, p.before_index, n).await?
        }
        ChatMode::Chat => {
            let row = store
                .chat_get(&id)
                .await?
                .ok_or_else(RpcError::session_not_found)?;
            check_owner(&principal, &row.owner_principal_id)?;
            store.chat_messages(&id, p.before_index, n).await?
        }
    };
    #[derive(Serialize)]
    struct Page<'a, M: Serialize> {
        session_id: &'a str,
        chat_mode: ChatMode,
        messages: &'a [M],
        total: u64,
        start: u64,
    }
    payload(&Page {
        session_id: &id,
        chat_mode: mode,
        messages: &page.messages,
        total: page.total,
        start: page.start,
    })
}
