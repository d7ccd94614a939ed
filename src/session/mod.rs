//! Agent sessions (§8.3–§8.13, §9): the live sessions of the daemon,
//! their lifecycle, and the turns they run.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the registry of live sessions, incarnations, the live limit |
//! | `live.rs` | one live session: its queue, state, channel, approvals |
//! | `locks.rs` | per-id session locks |
//! | `turn.rs` | one turn from queue to answer: compaction, begin, run, finalize |
//! | `turn_sink.rs` | the agent's event sink: notifications, checkpoints, approvals, asks |
//! | `journal/` | how each session kind keeps its turns (`Journal`: Chat, durable) |
//! | `lifecycle.rs` | resolve, rehydrate, close, kill, delete |
//! | `open.rs` | `session/new` from its decoded members: agent, id, cwd, then the lifecycle |
//! | `access.rs` | who may use a session (owner, agent), a live session as its caller may act on it |
//! | `attach.rs` | a further client joins a live session |
//! | `agent_status.rs` | each agent the caller may use, with its live and persisted sessions (`agents/status`) |
//! | `agent_links.rs` | the links from a session to its hosted agent's own session |
//! | `update.rs` | `session/update` notifications |
//! | `transcript.rs` | a page of a session's transcript (`session/messages`) |
//! | `listing.rs` | the stored sessions a caller may see (`session/list`, `session/list-acp`) |
//! | `interact.rs` | cancelling a turn, answering its approval requests |
//! | `git_head.rs` | the git branch and commit of a session's working directory |

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub mod access;
mod agent_links;
pub mod agent_status;
pub mod attach;
pub mod git_head;
pub mod interact;
pub mod journal;
pub mod lifecycle;
pub mod listing;
pub mod live;
pub mod locks;
pub mod open;
pub mod transcript;
pub mod turn;
pub mod turn_sink;
pub mod update;

pub use live::Session;
pub use locks::{SessionGuard, SessionLocks};

use crate::agent::AcpHosts;
use crate::store::{DurableRow, Store, StoreError, RPC_SURFACE};

/// Most live sessions daemon-wide (§4).
pub const MAX_LIVE_SESSIONS: usize = 64;

/// The two kinds of session (§1.2): `Chat` keeps a plain history,
/// `Durable` journals every event before a client sees it. On the wire the
/// durable kind is `"acp"` (the protocol's name); inside the code "acp"
/// means the backend only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChatMode {
    #[default]
    Chat,
    #[serde(rename = "acp")]
    Durable,
}

impl ChatMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Durable => "acp",
        }
    }
}

/// The live sessions of the daemon.
#[derive(Debug)]
pub struct Sessions {
    live: Mutex<HashMap<String, Arc<Session>>>,
    /// Per-id lifecycle locks.
    pub locks: SessionLocks,
    next_incarnation: AtomicU64,
    /// Bumped whenever a session goes live or stops being live: what a
    /// cached `status` answer was rendered at.
    changes: AtomicU64,
    /// The SQLite store.
    pub store: Arc<Store>,
    /// The processes of `backend = "acp"` agents, one per live session.
    pub acp_hosts: Arc<AcpHosts>,
}

impl Sessions {
    /// No live sessions yet.
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            live: Mutex::default(),
            locks: SessionLocks::default(),
            next_incarnation: AtomicU64::new(1),
            changes: AtomicU64::new(0),
            acp_hosts: AcpHosts::new(store.clone()),
            store,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live session with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.table().get(id).cloned()
    }

    /// Before `id`'s ACP history is read (`row` is its stored row): when no
    /// live incarnation owns it, recovers the checkpoint its last one left
    /// (§9.7), under the session lock, so a read never shows half a turn.
    pub async fn recover_unowned(&self, id: &str, row: &DurableRow) -> Result<(), StoreError> {
        let unowned = || self.get(id).is_none_or(|s| s.mode != ChatMode::Durable);
        if !unowned() || row.killed_at.is_some() || row.interaction_surface != RPC_SURFACE {
            return Ok(());
        }
        let _lock = self.locks.lock(id).await;
        if unowned() {
            self.store.recover(row.row).await?;
        }
        Ok(())
    }

    /// Number of live sessions.
    pub fn count(&self) -> usize {
        self.table().len()
    }

    /// A new, daemon-wide strictly increasing incarnation number.
    pub fn next_incarnation(&self) -> u64 {
        self.next_incarnation.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes `session` the live session of its id (the caller holds its lock).
    pub fn insert(&self, session: Arc<Session>) {
        let mut t = self.table();
        t.insert(session.id.clone(), session);
        self.changes.fetch_add(1, Ordering::Release);
    }

    /// How many times the set of live sessions has changed: equal counts
    /// mean equal sets. Read it before reading the sessions.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Removes the live session of `id` if it is still incarnation `incarnation`.
    pub fn remove(&self, id: &str, incarnation: u64) -> Option<Arc<Session>> {
        let removed = {
            let mut t = self.table();
            match t.get(id) {
                Some(s) if s.incarnation == incarnation => {
                    self.changes.fetch_add(1, Ordering::Release);
                    t.remove(id)
                }
                _ => None,
            }
        };
        if removed.is_some() {
            // Its ACP agent process (if any) stops after a grace.
            self.acp_hosts.release(id);
        }
        removed
    }

    /// Every live session.
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.table().values().cloned().collect()
    }

    /// Ids of the live sessions `principal` may see, sorted (admins see all).
    pub fn visible_ids(&self, principal: &crate::config::Principal) -> Vec<String> {
        let mut ids: Vec<String> = self
            .table()
            .values()
            .filter(|s| principal.admin || s.owner == principal.id)
            .map(|s| s.id.clone())
            .collect();
        ids.sort();
        ids
    }
}

/// A new lowercase UUIDv4 (§1.3).
pub fn new_uuid() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness: fall back to time and a counter, still unique per process.
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b[..8].copy_from_slice(&(t as u64).to_le_bytes());
        b[8..].copy_from_slice(&N.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::hex::lower(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A required `session_id` parameter, checked (`-32602` if missing or malformed).
pub fn parse_session_id(id: Option<String>) -> Result<String, crate::error::RpcError> {
    match id {
        Some(id) if valid_session_id(&id) => Ok(id),
        Some(_) => Err(crate::error::RpcError::invalid_params(
            "session_id must be 1-128 characters of [A-Za-z0-9._:-]",
        )),
        None => Err(crate::error::RpcError::invalid_params(
            "session_id is required",
        )),
    }
}

/// `session_id` syntax: 1–128 characters of `[A-Za-z0-9._:-]` (§8.3).
pub fn valid_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_v4_and_lowercase() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]));
        assert!(u
            .chars()
            .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(new_uuid(), u);
    }

    #[test]
    fn session_id_rule() {
        assert!(valid_session_id("demo"));
        assert!(valid_session_id("a.b_c:d-1"));
        assert!(!valid_session_id(""));
        assert!(!valid_session_id("a b"));
        assert!(!valid_session_id(&"x".repeat(129)));
    }
}
