//! The emitter of a durable turn (§9.3): a task that takes the events the
//! turn's sink queued, commits every one that is ready in one transaction
//! (group commit), and only then sends their notifications, so a client
//! never sees an event that a crash could lose. A failed commit suppresses
//! the notifications and stops the turn; the checkpoint stays.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::emit_queue::{Item, Queue};
use crate::conn_state::Conn;
use crate::session::live::{Session, TurnSignals};
use crate::session::update::{notify_session, Event, Update, MAX_CONTENT_BYTES};
use crate::store::{CheckpointEvent, Store, StoreError};

/// What a durable turn's emitter delivered: the text it committed and sent (its
/// first [`MAX_CONTENT_BYTES`] + 4 bytes, all an answer shows), and the
/// commit error that stopped it, if one did.
pub type Emitted = (String, Result<(), StoreError>);

/// Where a taken item goes while its batch is committed.
#[derive(Debug)]
enum Slot {
    /// The next committed event; a run of chunks carries where each ends.
    Committed(Option<Vec<usize>>),
    /// Notified (or acknowledged) only.
    Other(Item),
}

/// Marks the queue closed on the emitter's side however the emitter ends.
struct ReceiverGuard(Arc<Queue>);

impl Drop for ReceiverGuard {
    fn drop(&mut self) {
        self.0.close_receiver();
    }
}

/// The emitter of a durable turn: commit what is ready, then notify it.
pub(in crate::session) async fn emit(
    store: Arc<Store>,
    row: i64,
    conn: Conn,
    session: Arc<Session>,
    queue: Arc<Queue>,
    signals: TurnSignals,
) -> Emitted {
    let (hard, cancel) = (signals.hard, signals.soft);
    let _guard = ReceiverGuard(queue.clone());
    let to = Notifier {
        conn: &conn,
        session: &session,
        cancel: &cancel,
    };
    let mut sent = String::new();
    let mut batch: Vec<Item> = Vec::with_capacity(64);
    let mut slots: Vec<Slot> = Vec::with_capacity(64);
    let mut events: Vec<CheckpointEvent> = Vec::with_capacity(64);
    while queue.take(&mut batch).await {
        if hard.is_cancelled() {
            // Killed or deleted: the turn writes no further checkpoint events.
            return (sent, Ok(()));
        }
        // Take the events out for the commit; they come back for the notifications.
        for item in batch.drain(..) {
            match item {
                Item::Texts { text, ends } => {
                    slots.push(Slot::Committed(Some(ends)));
                    events.push(CheckpointEvent::Text(text));
                }
                Item::Persist(e) => {
                    slots.push(Slot::Committed(None));
                    events.push(e);
                }
                other => slots.push(Slot::Other(other)),
            }
        }
        if !events.is_empty() {
            if let Err(e) = store.checkpoint_append(row, &events).await {
                return (sent, Err(e));
            }
        }
        let mut committed = events.drain(..);
        for slot in slots.drain(..) {
            match slot {
                Slot::Committed(ends) => {
                    let Some(e) = committed.next() else { continue };
                    match (&e, ends) {
                        (CheckpointEvent::Text(t), Some(ends)) => {
                            let mut start = 0;
                            for end in ends {
                                let piece = t.get(start..end).unwrap_or_default();
                                start = end;
                                to.send(Event::MessageChunk(piece)).await;
                            }
                            keep_answer_prefix(&mut sent, t);
                        }
                        (e, _) => {
                            to.send(event_of(e)).await;
                            if let CheckpointEvent::Text(t) = e {
                                keep_answer_prefix(&mut sent, t);
                            }
                        }
                    }
                }
                Slot::Other(Item::Thought(t)) => to.send(Event::ThoughtChunk(&t)).await,
                Slot::Other(Item::Extra(x)) => to.send(Event::Extra(&x)).await,
                Slot::Other(Item::Approval {
                    request_id,
                    tool_name,
                    summary,
                    timeout_secs,
                }) => {
                    let event = Event::ApprovalRequest {
                        request_id: &request_id,
                        tool_name: &tool_name,
                        summary: &summary,
                        timeout_secs,
                    };
                    to.send(event).await;
                }
                Slot::Other(Item::Flush(ack)) => {
                    let _ = ack.send(());
                }
                Slot::Other(Item::Texts { .. } | Item::Persist(_)) => {}
            }
        }
    }
    (sent, Ok(()))
}

/// Where the turn's updates go: its session's notifications on the
/// prompting connection, given up once the turn is cancelled.
struct Notifier<'a> {
    conn: &'a Conn,
    session: &'a Session,
    cancel: &'a CancellationToken,
}

impl Notifier<'_> {
    async fn send(&self, event: Event<'_>) {
        let update = Update {
            session_id: &self.session.id,
            event,
        };
        notify_session(self.session, self.conn, &update, self.cancel).await;
    }
}

/// Appends to `sent` only what the answer can show: `turn_complete` and the
/// prompt result carry the text bounded at [`MAX_CONTENT_BYTES`], so a few
/// bytes past it are enough for the same cut and its `…[truncated]`; the
/// whole text is in the transcript (one copy less of a
/// 16 MiB turn).
pub(in crate::session) fn keep_answer_prefix(sent: &mut String, t: &str) {
    let room = (MAX_CONTENT_BYTES + 4).saturating_sub(sent.len());
    if t.len() <= room {
        sent.push_str(t);
        return;
    }
    let mut end = room;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    sent.push_str(&t[..end]);
}

fn event_of(e: &CheckpointEvent) -> Event<'_> {
    match e {
        CheckpointEvent::Text(t) => Event::MessageChunk(t),
        CheckpointEvent::ToolCall { id, name, input } => Event::ToolCall { id, name, input },
        CheckpointEvent::ToolResult { id, name, output } => Event::ToolResult { id, name, output },
    }
}
