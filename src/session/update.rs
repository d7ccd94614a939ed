//! `session/update` notifications (§8.5) and their frames.
//!
//! Params are written with camelCase member names, `sessionId` and `type`
//! first as in the spec's examples; on a `snake` connection the dialect
//! serializer renames them (§3.8). Text is bounded at its source here:
//! nothing this module writes can exceed the frame limit.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::agent::Extra;
use crate::bounded::bound_text;
use crate::conn_state::Conn;
use crate::dialect::Dialect;
use crate::jsonrpc::notification_frame;

/// Longest streamed chunk text (§3.1).
pub const MAX_CHUNK_BYTES: usize = 64 * 1024;
/// Bound of `tool_result.rawOutput` in notifications.
pub const MAX_RAW_OUTPUT_BYTES: usize = 1024 * 1024;
/// Bound of `turn_complete.content` and of the prompt result's `content`.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// How a turn ended, as `turn_complete.outcome` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    Completed,
    Cancelled,
    Failed,
}

impl Completion {
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// One event of a session, as the client sees it.
#[derive(Debug)]
pub enum Event<'a> {
    MessageChunk(&'a str),
    ThoughtChunk(&'a str),
    ToolCall {
        id: &'a str,
        name: &'a str,
        input: &'a RawValue,
    },
    ToolResult {
        id: &'a str,
        name: &'a str,
        output: &'a str,
    },
    ApprovalRequest {
        request_id: &'a str,
        tool_name: &'a str,
        summary: &'a str,
        timeout_secs: u64,
    },
    /// An extra update (docs/protocol-additions.md).
    Extra(&'a Extra),
    CompactionNotice {
        compacted: u64,
        retained: u64,
        boundary_seq: i64,
    },
    TurnComplete {
        outcome: Completion,
        content: &'a str,
        reason: Option<&'a str>,
    },
}

/// The `turn_complete` owed to a prompt sent as a notification that ended
/// without one (§3.5): `failed`, with `e` as its reason and what the client
/// was sent so far as its content.
pub async fn turn_failed(conn: &Conn, session_id: &str, e: &crate::error::RpcError, content: &str) {
    let event = Event::TurnComplete {
        outcome: Completion::Failed,
        content,
        reason: Some(&e.to_string()),
    };
    let never = CancellationToken::new();
    notify(conn, &Update { session_id, event }, &never).await;
}

/// The params of one `session/update`.
#[derive(Debug)]
pub struct Update<'a> {
    pub session_id: &'a str,
    pub event: Event<'a>,
}

impl Serialize for Update<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Update", 6)?;
        m.serialize_field("sessionId", self.session_id)?;
        match &self.event {
            Event::MessageChunk(text) => {
                m.serialize_field("type", "agent_message_chunk")?;
                m.serialize_field("text", text)?;
            }
            Event::ThoughtChunk(text) => {
                m.serialize_field("type", "agent_thought_chunk")?;
                m.serialize_field("text", text)?;
            }
            Event::ToolCall { id, name, input } => {
                m.serialize_field("type", "tool_call")?;
                m.serialize_field("toolCallId", id)?;
                m.serialize_field("name", name)?;
                m.serialize_field("rawInput", input)?;
            }
            Event::ToolResult { id, name, output } => {
                m.serialize_field("type", "tool_result")?;
                m.serialize_field("toolCallId", id)?;
                m.serialize_field("name", name)?;
                m.serialize_field("rawOutput", &*bound_text(output, MAX_RAW_OUTPUT_BYTES))?;
            }
            Event::ApprovalRequest {
                request_id,
                tool_name,
                summary,
                timeout_secs,
            } => {
                m.serialize_field("type", "approval_request")?;
                m.serialize_field("requestId", request_id)?;
                m.serialize_field("toolName", tool_name)?;
                m.serialize_field("argumentsSummary", summary)?;
                m.serialize_field("timeoutSecs", timeout_secs)?;
            }
            Event::Extra(extra) => {
                m.serialize_field("type", extra.kind.as_str())?;
                for (key, value) in &extra.members {
                    m.serialize_field(key, value)?;
                }
            }
            Event::CompactionNotice {
                compacted,
                retained,
                boundary_seq,
            } => {
                m.serialize_field("type", "compaction_notice")?;
                m.serialize_field("compactedMessages", compacted)?;
                m.serialize_field("retainedMessages", retained)?;
                m.serialize_field("boundarySeq", boundary_seq)?;
            }
            Event::TurnComplete {
                outcome,
                content,
                reason,
            } => {
                m.serialize_field("type", "turn_complete")?;
                m.serialize_field("outcome", outcome.as_str())?;
                m.serialize_field("content", &*bound_text(content, MAX_CONTENT_BYTES))?;
                if let Some(r) = reason {
                    m.serialize_field("reason", r)?;
                }
            }
        }
        m.end()
    }
}

/// Splits `text` into pieces of at most [`MAX_CHUNK_BYTES`], on character boundaries, in order.
pub fn split_chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(MAX_CHUNK_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

/// Writes one update to `conn` in its dialect. A closed connection, or one
/// a revocation cut off, discards it (the turn goes on and is persisted).
/// `cancel` is the turn's soft cancel: once it fired, a stalled client no
/// longer holds the turn back ([`crate::outbound::Outbound::send_or_cancelled`]).
pub async fn notify(conn: &Conn, update: &Update<'_>, cancel: &CancellationToken) {
    if !conn.hears() {
        return;
    }
    let dialect = conn.dialect();
    let notice;
    let update = match (&update.event, dialect) {
        (
            Event::TurnComplete {
                outcome, reason, ..
            },
            Dialect::Snake,
        ) if *outcome != Completion::Completed => {
            notice = ended_notice(*outcome, *reason);
            &Update {
                session_id: update.session_id,
                event: Event::TurnComplete {
                    outcome: *outcome,
                    content: &notice,
                    reason: *reason,
                },
            }
        }
        _ => update,
    };
    if let Ok(frame) = notification_frame("session/update", update, dialect) {
        let _ = conn.outbound.send_or_cancelled(frame, cancel).await;
    }
}

/// Writes one update of `session`, for a turn prompted on `prompter`, to
/// every client of the session ([`super::Session::audience`]), one after
/// the other in the same order, so attached clients see identical streams.
/// The prompter is written directly: the common case (nobody attached)
/// costs no copy of its handle and no allocation per update.
pub async fn notify_session(
    session: &super::Session,
    prompter: &Conn,
    update: &Update<'_>,
    cancel: &CancellationToken,
) {
    notify(prompter, update, cancel).await;
    for conn in session.others(prompter) {
        notify(&conn, update, cancel).await;
    }
}

/// The snake dialect's `turn_complete.content` for a cancelled or failed
/// turn (docs/decisions.md): ZeroClaw's snake clients show `content` as the
/// turn's closing notice and have already shown the streamed text from its
/// chunks, so `content` carries why the turn ended, as zeroclaw's own
/// daemon writes it. The camel dialect keeps §8.5 (the streamed text).
pub fn ended_notice(outcome: Completion, reason: Option<&str>) -> String {
    match (outcome, reason) {
        (Completion::Failed, Some(r)) => format!("turn failed: {r}"),
        (Completion::Failed, None) => "turn failed".into(),
        (_, None | Some("cancelled")) => "turn cancelled".into(),
        (_, Some(r)) => format!("turn cancelled: {r}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{write_json, Dialect};

    fn json(u: &Update<'_>, d: Dialect) -> String {
        let mut v = Vec::new();
        write_json(&mut v, u, d).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn the_snake_notice_says_why_the_turn_ended() {
        assert_eq!(
            ended_notice(Completion::Failed, Some("boom")),
            "turn failed: boom"
        );
        assert_eq!(
            ended_notice(Completion::Cancelled, Some("cancelled")),
            "turn cancelled"
        );
        assert_eq!(
            ended_notice(Completion::Cancelled, Some("session closed")),
            "turn cancelled: session closed"
        );
    }

    #[test]
    fn updates_match_the_spec_examples() {
        let input = RawValue::from_string(r#"{"command":"ls"}"#.into()).unwrap();
        let cases = [
            (
                Event::MessageChunk("Hello"),
                r#"{"sessionId":"s-1","type":"agent_message_chunk","text":"Hello"}"#,
            ),
            (
                Event::ToolCall {
                    id: "tc_1",
                    name: "bash",
                    input: &input,
                },
                r#"{"sessionId":"s-1","type":"tool_call","toolCallId":"tc_1","name":"bash","rawInput":{"command":"ls"}}"#,
            ),
            (
                Event::CompactionNotice {
                    compacted: 30,
                    retained: 11,
                    boundary_seq: 40,
                },
                r#"{"sessionId":"s-1","type":"compaction_notice","compactedMessages":30,"retainedMessages":11,"boundarySeq":40}"#,
            ),
            (
                Event::TurnComplete {
                    outcome: Completion::Cancelled,
                    content: "Hel",
                    reason: Some("cancelled"),
                },
                r#"{"sessionId":"s-1","type":"turn_complete","outcome":"cancelled","content":"Hel","reason":"cancelled"}"#,
            ),
        ];
        for (event, expect) in cases {
            assert_eq!(
                json(
                    &Update {
                        session_id: "s-1",
                        event
                    },
                    Dialect::Camel
                ),
                expect
            );
        }
        let u = Update {
            session_id: "s-1",
            event: Event::ToolCall {
                id: "tc_1",
                name: "bash",
                input: &input,
            },
        };
        assert_eq!(
            json(&u, Dialect::Snake),
            r#"{"session_id":"s-1","type":"tool_call","tool_call_id":"tc_1","name":"bash","raw_input":{"command":"ls"}}"#
        );
    }

    #[test]
    fn extra_updates_rename_member_names_only() {
        use crate::agent::{Extra, ExtraKind};
        let raw = |s: &str| RawValue::from_string(s.into()).unwrap();
        let extra = Extra {
            kind: ExtraKind::AvailableCommands,
            members: vec![(
                "availableCommands",
                raw(r#"[{"name":"web","input":{"hintText":"q"}}]"#),
            )],
        };
        let u = Update {
            session_id: "s-1",
            event: Event::Extra(&extra),
        };
        assert_eq!(
            json(&u, Dialect::Camel),
            r#"{"sessionId":"s-1","type":"available_commands","availableCommands":[{"name":"web","input":{"hintText":"q"}}]}"#
        );
        assert_eq!(
            json(&u, Dialect::Snake),
            r#"{"session_id":"s-1","type":"available_commands","available_commands":[{"name":"web","input":{"hintText":"q"}}]}"#
        );
    }

    #[test]
    fn bounding_and_splitting_respect_char_boundaries() {
        assert_eq!(bound_text("héllo", 2), "h…[truncated]");
        assert_eq!(bound_text("hé", 3), "hé");
        let s = "é".repeat(40_000); // 80,000 bytes
        let parts: Vec<&str> = split_chunks(&s).collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 65_536);
        assert_eq!(parts.concat(), s);
        assert_eq!(split_chunks("").count(), 0);
    }
}
