//! `session/list` and `session/list-acp` as verbs (§8.10): the stored
//! sessions of both kinds the caller may see (non-admins see only their
//! own), each with its state (live, persisted, killed), newest activity first.

use serde::Serialize;

use super::{ChatMode, Sessions};
use crate::config::Principal;
use crate::error::RpcError;
use crate::store::{ChatRow, DurableRow, SessionRecord};

/// Most rows any list returns (and reads from each kind's table).
pub const MAX_LIST: u32 = 1000;

/// One entry of a session list.
#[derive(Debug, Serialize)]
pub struct Entry {
    session_id: String,
    session_key: String,
    chat_mode: ChatMode,
    agent_alias: String,
    owner_principal_id: String,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    interaction_surface: Option<String>,
    created_at: String,
    last_activity: String,
    message_count: u64,
    /// Addition: where the session works, so a client can pick
    /// the session of a project directory.
    workspace_dir: String,
}

/// What `session/list` asks for.
#[derive(Debug, Clone, Copy)]
pub struct ListWanted {
    /// Only this kind, when given.
    pub chat_mode: Option<ChatMode>,
    /// Killed durable sessions too.
    pub include_killed: bool,
    /// Most entries.
    pub limit: u32,
}

fn live_state(sessions: &Sessions, id: &str, mode: ChatMode) -> bool {
    sessions.get(id).is_some_and(|s| s.mode == mode)
}

/// The entry of one stored session: its record, and what its mode decides.
fn entry(
    r: SessionRecord,
    chat_mode: ChatMode,
    session_key: String,
    state: &'static str,
    interaction_surface: Option<String>,
) -> Entry {
    Entry {
        session_id: r.session_id,
        session_key,
        chat_mode,
        agent_alias: r.agent_alias,
        owner_principal_id: r.owner_principal_id,
        state,
        interaction_surface,
        created_at: r.created_at,
        last_activity: r.last_activity,
        message_count: r.message_count,
        workspace_dir: r.workspace_dir,
    }
}

fn durable_entry(sessions: &Sessions, r: DurableRow) -> Entry {
    let id = r.record.session_id.clone();
    let state = match (&r.killed_at, live_state(sessions, &id, ChatMode::Durable)) {
        (Some(_), _) => "killed",
        (None, true) => "live",
        (None, false) => "persisted",
    };
    let surface = Some(r.interaction_surface);
    entry(r.record, ChatMode::Durable, id, state, surface)
}

fn chat_entry(sessions: &Sessions, r: ChatRow) -> Entry {
    let live = live_state(sessions, &r.session_id, ChatMode::Chat);
    let state = if live { "live" } else { "persisted" };
    let key = format!("rpc_{}", r.session_id);
    entry(r, ChatMode::Chat, key, state, None)
}

fn visible(p: &Principal, owner: &str) -> bool {
    p.admin || p.id == owner
}

fn sort(entries: &mut [Entry]) {
    entries.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then(b.created_at.cmp(&a.created_at))
    });
}

impl Sessions {
    /// `session/list`: the stored sessions of both kinds `principal` may see.
    pub async fn list(
        &self,
        principal: &Principal,
        wanted: ListWanted,
    ) -> Result<Vec<Entry>, RpcError> {
        // An admin sees every row, so the first `limit` of each kind hold the
        // first `limit` of both: the query reads `limit` rows, not `MAX_LIST`.
        // Another principal's rows are filtered after the query.
        let fetch = if principal.admin {
            wanted.limit
        } else {
            MAX_LIST
        };
        let durable = match wanted.chat_mode {
            Some(ChatMode::Chat) => Vec::new(),
            _ => {
                self.store
                    .durable_list(wanted.include_killed, fetch)
                    .await?
            }
        };
        let chat = match wanted.chat_mode {
            Some(ChatMode::Durable) => Vec::new(),
            _ => self.store.chat_list(fetch).await?,
        };
        let mut entries: Vec<Entry> = durable
            .into_iter()
            .filter(|r| visible(principal, &r.record.owner_principal_id))
            .map(|r| durable_entry(self, r))
            .chain(
                chat.into_iter()
                    .filter(|r| visible(principal, &r.owner_principal_id))
                    .map(|r| chat_entry(self, r)),
            )
            .collect();
        sort(&mut entries);
        entries.truncate(wanted.limit as usize);
        Ok(entries)
    }

    /// `session/list-acp`: the durable sessions (not killed) `principal` may see.
    pub async fn list_durable(&self, principal: &Principal) -> Result<Vec<Entry>, RpcError> {
        let rows = self.store.durable_list(false, MAX_LIST).await?;
        let mut entries: Vec<Entry> = rows
            .into_iter()
            .filter(|r| visible(principal, &r.record.owner_principal_id))
            .map(|r| durable_entry(self, r))
            .collect();
        sort(&mut entries);
        Ok(entries)
    }
}
