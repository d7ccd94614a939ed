//! `session/messages` as one verb (§8.11): which kind the session is (the
//! caller's `chat_mode`, else the live session's, else whether a durable row
//! exists), whether the caller may read it, and a page of its journal. A
//! durable history whose last turn failed unowned is recovered first, so a
//! read never shows half a turn.

use serde::Serialize;

use super::access::check_owner;
use super::journal::{ChatJournal, DurableJournal, Journal, SessionJournal};
use super::{ChatMode, Sessions};
use crate::config::Principal;
use crate::error::RpcError;
use crate::store::MessageEntry;

/// Which page of a transcript a caller asks for.
#[derive(Debug, Clone, Copy)]
pub struct PageWanted {
    /// The session kind, when the caller names it.
    pub chat_mode: Option<ChatMode>,
    /// Rows before this 0-based index (else the last ones).
    pub before_index: Option<u64>,
    /// Most rows.
    pub limit: u32,
}

/// One page of a session's transcript, as `session/messages` answers it.
#[derive(Debug, Serialize)]
pub struct Transcript {
    session_id: String,
    chat_mode: ChatMode,
    messages: Vec<MessageEntry>,
    total: u64,
    start: u64,
}

impl Sessions {
    /// The page `wanted` of session `id`'s transcript, for its owner or an admin.
    pub async fn transcript(
        &self,
        principal: &Principal,
        id: &str,
        wanted: PageWanted,
    ) -> Result<Transcript, RpcError> {
        let live_mode = self.get(id).map(|s| s.mode);
        let durable = self.store.durable_get(id).await?;
        let mode = match (wanted.chat_mode, live_mode) {
            (Some(m), _) => m,
            (None, Some(m)) => m,
            (None, None) if durable.is_some() => ChatMode::Durable,
            (None, None) => ChatMode::Chat,
        };
        let journal = match mode {
            ChatMode::Durable => {
                let row = durable.ok_or_else(RpcError::session_not_found)?;
                check_owner(principal, &row.record.owner_principal_id)?;
                self.recover_unowned(id, &row).await?;
                SessionJournal::Durable(DurableJournal::new(self.store.clone(), row.row))
            }
            ChatMode::Chat => {
                let row = self
                    .store
                    .chat_get(id)
                    .await?
                    .ok_or_else(RpcError::session_not_found)?;
                check_owner(principal, &row.owner_principal_id)?;
                SessionJournal::Chat(ChatJournal::new(self.store.clone(), id.to_owned()))
            }
        };
        let page = journal.page(wanted.before_index, wanted.limit).await?;
        Ok(Transcript {
            session_id: id.to_owned(),
            chat_mode: mode,
            messages: page.messages,
            total: page.total,
            start: page.start,
        })
    }
}
