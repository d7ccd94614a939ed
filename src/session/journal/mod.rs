//! Where a session's turns are kept: one interface, [`Journal`], for the two
//! session kinds (§9.2, §9.3, §9.5, §9.6).
//!
//! A Chat session appends each finished turn to its history ([`ChatJournal`]).
//! A durable session (wire kind `"acp"`) opens a checkpoint when the turn
//! begins, commits every visible event before a client sees it (its emitter,
//! fed by the emit queue), folds the checkpoint into the transcript when the
//! turn ends, and recovers a checkpoint a failed turn left ([`DurableJournal`]).
//! The turn (`session/turn.rs`) speaks only this interface; [`SessionJournal`]
//! picks the implementation from the session, the one place the kind decides.

mod chat;
mod durable;
pub(in crate::session) mod emit_queue;
pub(in crate::session) mod emitter;

use std::future::Future;
use std::sync::Arc;

pub use chat::ChatJournal;
pub use durable::DurableJournal;

use super::live::{Session, TurnSignals};
use crate::agent::ContextMessage;
use crate::conn_state::Conn;
use crate::store::{MessagesPage, Store, StoreError};

/// The queue into a durable turn's emitter task, and the task: what the
/// turn's sink writes its events to when the journal records them first.
pub type Recorder = (
    Arc<emit_queue::Queue>,
    tokio::task::JoinHandle<emitter::Emitted>,
);

/// How one session kind keeps its turns. Every step fails with the store's
/// error; what the turn does about it is the turn's.
pub trait Journal {
    /// Before a turn: folds back what a failed turn left (its checkpoint)
    /// and rebuilds the session's context from it. A no-op when nothing is owed.
    fn recover(&self, session: &Session) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The turn begins: what a crash must not lose from here on.
    fn begin(
        &self,
        turn_id: &str,
        prompt: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Where the turn's sink sends its events: `None` notifies at once;
    /// `Some` commits each event before it is notified.
    fn record(
        &self,
        session: &Arc<Session>,
        conn: &Conn,
        signals: &TurnSignals,
    ) -> Option<Recorder>;

    /// The turn ended (`emitted`: whether every event was committed;
    /// `failure`: why the agent failed, if it did). Returns the messages the
    /// session's context gains. `content`, the text the client was sent, may
    /// be cut to what the answer shows once the reply has moved into the context.
    fn finalize(
        &self,
        session: &Session,
        emitted: Result<(), StoreError>,
        turn: (&str, Option<&str>),
        content: &mut String,
    ) -> impl Future<Output = Result<Vec<ContextMessage>, StoreError>> + Send;

    /// Compaction: keeps `context` as the session's retained context and
    /// returns the boundary (`boundary_seq`) the notice names.
    fn snapshot(
        &self,
        context: &[ContextMessage],
    ) -> impl Future<Output = Result<i64, StoreError>> + Send;

    /// A page of what the journal kept (`session/messages`): at most `limit`
    /// rows before `before_index` (else the last ones).
    fn page(
        &self,
        before_index: Option<u64>,
        limit: u32,
    ) -> impl Future<Output = Result<MessagesPage, StoreError>> + Send;
}

/// The journal of one session, by its kind.
#[derive(Debug)]
pub enum SessionJournal {
    Chat(ChatJournal),
    Durable(DurableJournal),
}

impl SessionJournal {
    /// The journal of `session` in `store`.
    pub fn of(session: &Session, store: &Arc<Store>) -> Self {
        match session.durable_row {
            Some(row) => Self::Durable(DurableJournal::new(store.clone(), row)),
            None => Self::Chat(ChatJournal::new(store.clone(), session.id.clone())),
        }
    }
}

impl Journal for SessionJournal {
    async fn recover(&self, session: &Session) -> Result<(), StoreError> {
        match self {
            Self::Chat(j) => j.recover(session).await,
            Self::Durable(j) => j.recover(session).await,
        }
    }

    async fn begin(&self, turn_id: &str, prompt: &str) -> Result<(), StoreError> {
        match self {
            Self::Chat(j) => j.begin(turn_id, prompt).await,
            Self::Durable(j) => j.begin(turn_id, prompt).await,
        }
    }

    fn record(
        &self,
        session: &Arc<Session>,
        conn: &Conn,
        signals: &TurnSignals,
    ) -> Option<Recorder> {
        match self {
            Self::Chat(j) => j.record(session, conn, signals),
            Self::Durable(j) => j.record(session, conn, signals),
        }
    }

    async fn finalize(
        &self,
        session: &Session,
        emitted: Result<(), StoreError>,
        turn: (&str, Option<&str>),
        content: &mut String,
    ) -> Result<Vec<ContextMessage>, StoreError> {
        match self {
            Self::Chat(j) => j.finalize(session, emitted, turn, content).await,
            Self::Durable(j) => j.finalize(session, emitted, turn, content).await,
        }
    }

    async fn snapshot(&self, context: &[ContextMessage]) -> Result<i64, StoreError> {
        match self {
            Self::Chat(j) => j.snapshot(context).await,
            Self::Durable(j) => j.snapshot(context).await,
        }
    }

    async fn page(
        &self,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        match self {
            Self::Chat(j) => j.page(before_index, limit).await,
            Self::Durable(j) => j.page(before_index, limit).await,
        }
    }
}
