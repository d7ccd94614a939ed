//! The agent's event sink for one turn (§8.5, §8.12, §8.13, §9.3).
//!
//! Every event passes here once, in order. Unless the session's journal
//! records it first (`journal::Journal::record`) it becomes a notification at
//! once. A durable session's journal hands it to the turn's emitter task,
//! which commits the visible events it has (one transaction for all that are
//! ready: group commit) and only then writes their notifications, so a
//! client never sees an event that a crash could lose. A failed commit
//! suppresses the notifications, stops the turn and leaves the checkpoint.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::journal::emit_queue::{Item, Push};
use super::journal::emitter::Emitted;
use super::journal::Recorder;
use super::live::{Session, TurnSignals};
use super::update::{notify_session, split_chunks, Event, Update};
use crate::agent::{ApprovalDecision, AskOutcome, EventSink, Extra, SinkClosed};
use crate::conn_state::Conn;
use crate::memory::Charge;
use crate::peer::PeerReply;
use crate::store::{CheckpointEvent, StoreError};

/// Timeouts of approvals and asks (from `[daemon]` at turn start), and the
/// turn's deadline: an approval or a question waits at most until the
/// earlier of its timeout and the deadline.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    pub approval: Duration,
    pub ask: Duration,
    pub deadline: Instant,
}

impl Waits {
    /// How long a wait of `timeout` may last from now: the turn's time left
    /// caps it.
    fn bounded(&self, timeout: Duration) -> Duration {
        timeout.min(self.deadline.saturating_duration_since(Instant::now()))
    }
}

/// Whole seconds announced for a wait of `d` (rounded up: the client is
/// never told less time than it has).
fn announced_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The sink of one turn.
#[derive(Debug)]
pub struct TurnSink {
    session: Arc<Session>,
    conn: Conn,
    waits: Waits,
    content: String,
    /// The journal's recorder, when it commits events before they are
    /// notified (`None`: notified at once).
    emitter: Option<Recorder>,
    /// The turn's soft cancel: notifications stop waiting on a stalled client.
    cancel: CancellationToken,
    /// Bytes of message and thought text so far.
    produced: usize,
    /// The agent went past [`MAX_TURN_OUTPUT_BYTES`].
    overflowed: bool,
    /// `produced`, charged to the daemon's memory budget until the turn ends.
    charge: Charge,
}

/// The most message and thought text one turn may produce, whatever the
/// backend: two echo items of 16 MiB. Past it the turn
/// fails; its retained context grows by at most this much.
pub const MAX_TURN_OUTPUT_BYTES: usize = 32 * 1024 * 1024;

impl TurnSink {
    /// A sink writing to `conn`, through `recorder` when the session's
    /// journal records events first (`Journal::record`).
    pub fn new(
        session: Arc<Session>,
        conn: Conn,
        waits: Waits,
        recorder: Option<Recorder>,
        signals: TurnSignals,
    ) -> Self {
        Self {
            session,
            conn,
            waits,
            content: String::new(),
            emitter: recorder,
            cancel: signals.soft,
            produced: 0,
            overflowed: false,
            charge: Charge::empty(),
        }
    }

    /// Waits for everything to be written. Returns the text the client was
    /// sent (for ACP: committed, then sent) and the commit error that
    /// stopped the turn, if one did.
    pub async fn finish(&mut self) -> Emitted {
        match self.emitter.take() {
            None => (std::mem::take(&mut self.content), Ok(())),
            Some((queue, task)) => {
                queue.close_sender();
                task.await.unwrap_or_else(|e| {
                    (
                        String::new(),
                        Err(StoreError::sqlite(format!("emitter failed: {e}"))),
                    )
                })
            }
        }
    }

    async fn send(
        &mut self,
        event: Event<'_>,
        item: impl FnOnce() -> Item,
    ) -> Result<(), SinkClosed> {
        match &self.emitter {
            None => {
                notify_session(
                    &self.session,
                    &self.conn,
                    &Update {
                        session_id: &self.session.id,
                        event,
                    },
                    &self.cancel,
                )
                .await;
                Ok(())
            }
            Some((queue, _)) => queue.push(Push::Item(item())).await,
        }
    }

    async fn flush(&mut self) -> Result<(), SinkClosed> {
        if let Some((queue, _)) = &self.emitter {
            let (ack, done) = oneshot::channel();
            queue.push(Push::Item(Item::Flush(ack))).await?;
            done.await.map_err(|_| SinkClosed)?;
        }
        Ok(())
    }
}

impl Drop for TurnSink {
    fn drop(&mut self) {
        // A turn dropped before `finish` still lets its emitter end.
        if let Some((queue, _)) = &self.emitter {
            queue.close_sender();
        }
    }
}

impl TurnSink {
    /// Counts `n` more bytes of text against the turn's bound; `Err` once
    /// the turn would go past it (the turn then fails, see [`TurnSink::overflowed`]).
    fn produce(&mut self, n: usize) -> Result<(), SinkClosed> {
        if self.produced.saturating_add(n) > MAX_TURN_OUTPUT_BYTES {
            self.overflowed = true;
            return Err(SinkClosed);
        }
        self.produced += n;
        self.charge.set(self.produced);
        Ok(())
    }

    /// Whether the agent produced more than [`MAX_TURN_OUTPUT_BYTES`] of
    /// text: what came before the bound is kept, the rest refused.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

impl EventSink for TurnSink {
    async fn message_chunk(&mut self, text: &str) -> Result<(), SinkClosed> {
        self.produce(text.len())?;
        for piece in split_chunks(text) {
            match &self.emitter {
                Some((queue, _)) => queue.push(Push::Chunk(piece)).await?,
                None => {
                    self.content.push_str(piece);
                    notify_session(
                        &self.session,
                        &self.conn,
                        &Update {
                            session_id: &self.session.id,
                            event: Event::MessageChunk(piece),
                        },
                        &self.cancel,
                    )
                    .await;
                }
            }
        }
        Ok(())
    }

    async fn thought_chunk(&mut self, text: &str) -> Result<(), SinkClosed> {
        self.produce(text.len())?;
        for piece in split_chunks(text) {
            self.send(Event::ThoughtChunk(piece), || {
                Item::Thought(piece.to_owned())
            })
            .await?;
        }
        Ok(())
    }

    async fn tool_call(
        &mut self,
        id: &str,
        name: &str,
        input: &RawValue,
    ) -> Result<(), SinkClosed> {
        let item = || {
            Item::Persist(CheckpointEvent::ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                input: input.to_owned(),
            })
        };
        self.send(Event::ToolCall { id, name, input }, item).await
    }

    async fn tool_result(&mut self, id: &str, name: &str, output: &str) -> Result<(), SinkClosed> {
        let item = || {
            Item::Persist(CheckpointEvent::ToolResult {
                id: id.to_owned(),
                name: name.to_owned(),
                output: output.to_owned(),
            })
        };
        self.send(Event::ToolResult { id, name, output }, item)
            .await
    }

    async fn extra(&mut self, update: Extra) -> Result<(), SinkClosed> {
        let Some((queue, _)) = &self.emitter else {
            let update = Update {
                session_id: &self.session.id,
                event: Event::Extra(&update),
            };
            notify_session(&self.session, &self.conn, &update, &self.cancel).await;
            return Ok(());
        };
        queue.push(Push::Item(Item::Extra(update))).await
    }

    async fn request_approval(
        &mut self,
        tool_name: &str,
        summary: &str,
    ) -> Result<ApprovalDecision, SinkClosed> {
        let request_id = super::new_uuid();
        let decision = self.session.await_approval(&request_id);
        // Forgotten however the wait ends, the future dropped included.
        let _pending = Pending(self.session.clone(), &request_id);
        let wait = self.waits.bounded(self.waits.approval);
        let timeout_secs = announced_secs(wait);
        let event = Event::ApprovalRequest {
            request_id: &request_id,
            tool_name,
            summary,
            timeout_secs,
        };
        let item = || Item::Approval {
            request_id: request_id.clone(),
            tool_name: tool_name.to_owned(),
            summary: summary.to_owned(),
            timeout_secs,
        };
        self.send(event, item).await?;
        // Every client that could answer went away: the prompting one
        // (§8.12) and, with `session/attach`, every attached one.
        let inputs: Vec<_> = self
            .session
            .audience(&self.conn)
            .into_iter()
            .map(|c| c.input_closed.clone())
            .collect();
        let gone = futures_util::future::join_all(inputs.iter().map(|t| t.cancelled()));
        let outcome = tokio::select! {
            d = decision => d.unwrap_or(ApprovalDecision::Unreachable),
            _ = tokio::time::sleep(wait) => ApprovalDecision::TimedOut,
            _ = gone => ApprovalDecision::Unreachable,
        };
        if outcome == ApprovalDecision::AllowAlways {
            self.session.allow_always(tool_name);
        }
        if self.session.has_attached() {
            // Every client saw the request: tell them all it is over.
            self.extra(resolved(&request_id, &outcome)).await?;
        }
        Ok(outcome)
    }

    async fn ask_user(
        &mut self,
        message: &str,
        schema: &RawValue,
    ) -> Result<AskOutcome, SinkClosed> {
        // With attached clients, every one that supports elicitation is
        // asked; the first answer wins. Otherwise the channel only.
        let attached = self.session.has_attached();
        let askers: Vec<Conn> = if attached {
            self.session.audience(&self.conn)
        } else {
            vec![self.conn.clone()]
        };
        let askers: Vec<Conn> = askers
            .into_iter()
            .filter(|c| c.supports_elicitation())
            .collect();
        if askers.is_empty() {
            return Ok(AskOutcome::Unavailable(
                "the client does not support elicitation".into(),
            ));
        }
        // The question comes after every event before it.
        self.flush().await?;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            session_id: &'a str,
            mode: &'static str,
            message: &'a str,
            requested_schema: &'a RawValue,
        }
        let params = Params {
            session_id: &self.session.id,
            mode: "form",
            message,
            requested_schema: schema,
        };
        let wait = self.waits.bounded(self.waits.ask);
        // The first result wins; an error answer (a client that cannot show
        // the question) or a gone client only loses while another may still
        // answer. Dropping the losers forgets their requests: a late answer
        // is an unknown id (§3.6).
        let params = &params;
        let asks = askers.iter().map(|c| {
            Box::pin(async move {
                match c
                    .peer_requests
                    .request(&c.outbound, "elicitation/create", params, wait)
                    .await
                {
                    Ok(PeerReply::Result(r)) => Ok(r),
                    Ok(PeerReply::Error(_)) => Err("the client answered with an error".into()),
                    Err(e) => Err(e.to_string()),
                }
            })
        });
        let outcome = match futures_util::future::select_ok(asks).await {
            Ok((r, _losers)) => parse_elicitation(&r),
            Err(why) => AskOutcome::Unavailable(why),
        };
        if attached {
            self.extra(daemon_update(
                crate::agent::ExtraKind::ElicitationResolved,
                &[("action", outcome.as_str())],
            ))
            .await?;
        }
        Ok(outcome)
    }
}

/// A daemon update of `kind` whose members are strings.
fn daemon_update(kind: crate::agent::ExtraKind, members: &[(&'static str, &str)]) -> Extra {
    let text = |v: &str| serde_json::value::to_raw_value(v).unwrap_or_default();
    Extra {
        kind,
        members: members.iter().map(|(k, v)| (*k, text(v))).collect(),
    }
}

/// The `approval_resolved` update of `request_id`.
fn resolved(request_id: &str, outcome: &ApprovalDecision) -> Extra {
    daemon_update(
        crate::agent::ExtraKind::ApprovalResolved,
        &[("requestId", request_id), ("decision", outcome.as_str())],
    )
}

/// A pending approval of the session, removed when the wait ends (or its
/// future is dropped: cancellation, the turn's deadline).
struct Pending<'a>(Arc<Session>, &'a str);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.forget_approval(self.1);
    }
}

/// `{"action":"accept","content":{...}}`, `{"action":"decline"}` or
/// `{"action":"cancel"}`; anything else (an explicit `null` included) is unavailable.
fn parse_elicitation(raw: &RawValue) -> AskOutcome {
    #[derive(serde::Deserialize)]
    struct Reply<'a> {
        action: String,
        #[serde(borrow)]
        content: Option<&'a RawValue>,
    }
    match serde_json::from_str::<Reply<'_>>(raw.get()) {
        Ok(r) if r.action == "accept" => match r.content {
            Some(c) if c.get().starts_with('{') => AskOutcome::Accept(c.to_owned()),
            _ => AskOutcome::Unavailable("accept without an object content".into()),
        },
        Ok(r) if r.action == "decline" => AskOutcome::Decline,
        Ok(r) if r.action == "cancel" => AskOutcome::Cancel,
        _ => AskOutcome::Unavailable("malformed elicitation result".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_results() {
        let r = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(
            matches!(parse_elicitation(&r(r#"{"action":"accept","content":{"answer":"yes"}}"#)), AskOutcome::Accept(c) if c.get() == r#"{"answer":"yes"}"#)
        );
        assert!(matches!(
            parse_elicitation(&r(r#"{"action":"decline"}"#)),
            AskOutcome::Decline
        ));
        assert!(matches!(
            parse_elicitation(&r(r#"{"action":"cancel"}"#)),
            AskOutcome::Cancel
        ));
        for bad in [
            "null",
            r#"{"action":"accept"}"#,
            r#"{"action":"accept","content":1}"#,
            r#"{"action":"x"}"#,
            "[]",
        ] {
            assert!(
                matches!(parse_elicitation(&r(bad)), AskOutcome::Unavailable(_)),
                "{bad}"
            );
        }
    }
}
