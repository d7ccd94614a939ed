//! The durable session's journal (§9.3, §9.5, §9.6): a checkpoint opened
//! when the turn begins, every visible event committed by the turn's
//! emitter before it is notified, the checkpoint folded into the transcript
//! when the turn ends, and recovery of a checkpoint a failed turn left.

use std::sync::Arc;

use super::emit_queue::Queue;
use super::emitter::emit;
use super::{Journal, Recorder};
use crate::agent::ContextMessage;
use crate::conn_state::Conn;
use crate::session::live::{Session, TurnSignals};
use crate::store::{provider_safe, MessagesPage, Store, StoreError};

/// The transcript of the durable session in row `row`.
#[derive(Debug)]
pub struct DurableJournal {
    store: Arc<Store>,
    row: i64,
}

impl DurableJournal {
    pub fn new(store: Arc<Store>, row: i64) -> Self {
        Self { store, row }
    }
}

impl Journal for DurableJournal {
    async fn recover(&self, session: &Session) -> Result<(), StoreError> {
        if !session.needs_recovery() {
            return Ok(());
        }
        self.store.recover(self.row).await?;
        let context = self.store.rebuild_context(self.row).await?;
        session.set_context(context);
        session.set_needs_recovery(false);
        Ok(())
    }

    async fn begin(&self, turn_id: &str, prompt: &str) -> Result<(), StoreError> {
        self.store.turn_begin(self.row, turn_id, prompt).await
    }

    fn record(
        &self,
        session: &Arc<Session>,
        conn: &Conn,
        signals: &TurnSignals,
    ) -> Option<Recorder> {
        let queue = Arc::new(Queue::default());
        let task = tokio::spawn(emit(
            self.store.clone(),
            self.row,
            conn.clone(),
            session.clone(),
            queue.clone(),
            signals.clone(),
        ));
        Some((queue, task))
    }

    /// A failed commit or finalization leaves the checkpoint: the next turn
    /// recovers it first.
    async fn finalize(
        &self,
        session: &Session,
        emitted: Result<(), StoreError>,
        (_prompt, failure): (&str, Option<&str>),
        _content: &mut String,
    ) -> Result<Vec<ContextMessage>, StoreError> {
        let finalized = match emitted {
            Ok(()) => self.store.turn_finalize(self.row, failure).await,
            Err(e) => Err(e),
        };
        if finalized.is_err() {
            session.set_needs_recovery(true);
        }
        finalized.map(provider_safe)
    }

    async fn snapshot(&self, context: &[ContextMessage]) -> Result<i64, StoreError> {
        let boundary = self.store.durable_last_seq(self.row).await?;
        self.store
            .write_snapshot(self.row, boundary, context)
            .await?;
        Ok(boundary)
    }

    async fn page(
        &self,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        self.store
            .durable_messages(self.row, before_index, limit)
            .await
    }
}
