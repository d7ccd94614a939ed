//! The Chat session's journal (§9.2): nothing is written while the turn
//! runs; when it ends, the prompt and the reply are appended to the
//! session's history in one transaction.

use std::sync::Arc;

use super::emitter::keep_answer_prefix;
use super::{Journal, Recorder};
use crate::agent::{ContextMessage, Role};
use crate::conn_state::Conn;
use crate::session::live::{Session, TurnSignals};
use crate::store::{MessagesPage, Store, StoreError};

/// The history of Chat session `session_id`.
#[derive(Debug)]
pub struct ChatJournal {
    store: Arc<Store>,
    session_id: String,
}

impl ChatJournal {
    pub fn new(store: Arc<Store>, session_id: String) -> Self {
        Self { store, session_id }
    }
}

impl Journal for ChatJournal {
    /// A Chat turn leaves nothing half-written to recover.
    async fn recover(&self, _session: &Session) -> Result<(), StoreError> {
        Ok(())
    }

    /// Nothing is written before the turn ends.
    async fn begin(&self, _turn_id: &str, _prompt: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// Events are notified at once.
    fn record(&self, _: &Arc<Session>, _: &Conn, _: &TurnSignals) -> Option<Recorder> {
        None
    }

    async fn finalize(
        &self,
        _session: &Session,
        emitted: Result<(), StoreError>,
        (prompt, _failure): (&str, Option<&str>),
        content: &mut String,
    ) -> Result<Vec<ContextMessage>, StoreError> {
        emitted?;
        let reply = (!content.is_empty()).then_some(content.as_str());
        self.store
            .chat_append_turn(&self.session_id, prompt, reply)
            .await?;
        let mut added = vec![ContextMessage::text(Role::User, prompt)];
        if !content.is_empty() {
            // The reply moves into the context; the answer keeps only what
            // it shows (as a durable turn's emitter does).
            let mut shown = String::new();
            keep_answer_prefix(&mut shown, content);
            let reply = std::mem::replace(content, shown);
            added.push(ContextMessage::text(Role::Assistant, reply));
        }
        Ok(added)
    }

    /// The history itself is the record: the boundary is its last message.
    async fn snapshot(&self, _context: &[ContextMessage]) -> Result<i64, StoreError> {
        Ok(self.store.chat_max_seq(&self.session_id).await.unwrap_or(0))
    }

    async fn page(
        &self,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        self.store
            .chat_messages(&self.session_id, before_index, limit)
            .await
    }
}
