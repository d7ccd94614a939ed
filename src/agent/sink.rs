//! The event sink: how a backend hands its events to the runtime.
//!
//! Every call is awaited before the next one is made, so the runtime sees
//! events in the order the backend produced them and can apply backpressure
//! (persisting, notifying) simply by not returning yet. Approvals (§8.12) and
//! asks (§8.13) are sink calls too: the runtime owns the pending request, its
//! timeout and `allow_always` memory; the backend only learns the decision.
//!
//! Backends race `request_approval` and `ask_user` against cancellation and
//! drop the call's future when the turn is cancelled, so a sink must tolerate
//! those two futures being dropped mid-way (e.g. by removing the pending
//! request in a drop guard).

use serde_json::value::RawValue;

use super::extra::Extra;

/// Returned by a sink call when the turn must stop (for example a storage
/// failure). The backend then returns promptly without further events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("event sink closed")]
pub struct SinkClosed;

/// The answer to an approval request (§8.12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run the tool this once.
    AllowOnce,
    /// Run it, and skip the request for this tool name for the rest of the
    /// live session (the runtime records this).
    AllowAlways,
    /// `reject` / `reject_once`.
    Rejected,
    /// `reject_with_edit`, with the replacement text.
    Replaced(String),
    /// Not answered within `daemon.approval_timeout_secs`.
    TimedOut,
    /// The session's channel registration went away first.
    Unreachable,
}

impl ApprovalDecision {
    /// The wire name of the decision, as `session/approve` takes it (and
    /// `timed_out`, `unreachable` for the denials nobody answered).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::AllowOnce => "allow_once",
            Self::AllowAlways => "allow_always",
            Self::Rejected => "reject",
            Self::Replaced(_) => "reject_with_edit",
            Self::TimedOut => "timed_out",
            Self::Unreachable => "unreachable",
        }
    }
}

/// The outcome of asking the user (§8.13).
#[derive(Debug, Clone)]
pub enum AskOutcome {
    /// `accept`, with the `content` object as the client wrote it.
    Accept(Box<RawValue>),
    /// `decline`.
    Decline,
    /// `cancel`.
    Cancel,
    /// No capable client, an error, a malformed result or a timeout; the
    /// reason is for logs.
    Unavailable(String),
}

impl AskOutcome {
    /// The `action` a client answered with, or `unavailable`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
            Self::Unavailable(_) => "unavailable",
        }
    }
}

/// Receives a turn's events, in order (§10.1).
#[allow(async_fn_in_trait)]
pub trait EventSink {
    /// One `agent_message_chunk`.
    async fn message_chunk(&mut self, text: &str) -> Result<(), SinkClosed>;
    /// One `agent_thought_chunk`.
    async fn thought_chunk(&mut self, text: &str) -> Result<(), SinkClosed>;
    /// A `tool_call` with its (compact) input object.
    async fn tool_call(&mut self, id: &str, name: &str, input: &RawValue)
        -> Result<(), SinkClosed>;
    /// The `tool_result` of an earlier `tool_call`.
    async fn tool_result(&mut self, id: &str, name: &str, output: &str) -> Result<(), SinkClosed>;
    /// An extra update (docs/protocol-additions.md): notified, not persisted.
    async fn extra(&mut self, update: Extra) -> Result<(), SinkClosed>;
    /// Ask the client to approve a tool call; resolves with its decision.
    async fn request_approval(
        &mut self,
        tool_name: &str,
        arguments_summary: &str,
    ) -> Result<ApprovalDecision, SinkClosed>;
    /// Ask the user a question (`elicitation/create`).
    async fn ask_user(
        &mut self,
        message: &str,
        schema: &RawValue,
    ) -> Result<AskOutcome, SinkClosed>;
}
