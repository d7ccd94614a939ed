//! Agent backends: what runs one turn of a session (§10).
//!
//! A backend gets a [`TurnInput`], reports what it does through an
//! [`EventSink`] (awaiting each call, so events keep their order) and ends
//! with a [`TurnOutcome`]. It owns nothing else: the runtime owns the retained
//! context, compaction, persistence, approvals memory, the 64 KiB re-splitting
//! of chunks and notifications.
//!
//! - [`echo`]: the built-in deterministic agent and its directive language.
//! - [`command`]: runs a configured local program once per turn.
//! - [`acp`]: hosts an Agent Client Protocol agent process.
//! - [`openai`]: streams from an OpenAI-compatible model server, with tools.

use std::collections::HashSet;
use std::path::Path;

use tokio_util::sync::CancellationToken;

mod acp;
mod child_env;
mod chunker;
mod coalesce;
mod command;
mod context;
mod directive;
mod echo;
mod extra;
#[cfg(windows)]
mod job;
mod json;
mod message_words;
mod openai;
mod process;
mod reaper;
mod settings;
mod sink;
#[cfg(test)]
mod testing;

pub use crate::config::agent_spec::{AcpOptions, Backend, InputMode, PermissionDefault};
pub use acp::{AcpHosts, Link as AcpLink, LinkStore, IDLE_GRACE as ACP_IDLE_GRACE};
pub use child_env::secret_names;
pub use command::{run_command, CommandRun};
pub use context::{context_document, context_json_input, ContextMessage};
pub use directive::{echo_compaction_request, CompactionRequest};
pub use extra::{Extra, ExtraKind, MAX_EXTRA_BYTES};
pub use json::compact_json;
pub use message_words::{Kind, Role};
pub use openai::{
    api_key as openai_api_key, api_key_from_file as openai_api_key_from_file,
    redirect as model_redirect, Approval, OpenAiSettings,
};
pub use reaper::{start as hold_children, stop_all as stop_children};
pub use settings::AgentSettings;
pub use sink::{ApprovalDecision, AskOutcome, EventSink, SinkClosed};

/// The failure message of a turn stopped because its sink closed.
pub const SINK_CLOSED_MESSAGE: &str = "turn stopped: event sink closed";

/// Everything a backend needs to run one turn.
#[derive(Debug, Clone, Copy)]
pub struct TurnInput<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The turn.
    pub turn_id: &'a str,
    /// The agent alias of the session.
    pub agent_alias: &'a str,
    /// The session's working directory.
    pub cwd: &'a Path,
    /// The prompt text.
    pub prompt: &'a str,
    /// The agent's system prompt (never part of the context).
    pub system_prompt: &'a str,
    /// The retained context the turn starts with (without the prompt).
    pub context: &'a [ContextMessage],
    /// The agent configuration at turn start.
    pub settings: &'a AgentSettings,
    /// Tool names already `allow_always`ed in this live session when the turn
    /// starts. Decisions made during the turn are tracked by the backend
    /// itself and recorded by the runtime's sink.
    pub always_allowed: &'a HashSet<String>,
    /// The daemon's ACP agent processes (`None` where no backend needs them:
    /// unit tests of the other backends).
    pub acp_hosts: Option<&'a std::sync::Arc<AcpHosts>>,
    /// When the turn must have ended: `timeout_secs` after it started. It
    /// bounds every await inside the turn, approvals and questions included
    /// (the runtime's sink waits for an answer at most until then).
    pub deadline: std::time::Instant,
}

/// How a turn ended (§10.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The turn ran to its end.
    Completed,
    /// Cancellation was observed; the events sent so far stand.
    Cancelled,
    /// The turn failed with this message.
    Failed(String),
    /// The model server failed the turn (backend `openai`).
    ProviderFailed(ProviderFailure),
}

impl TurnOutcome {
    /// The failure message, for a failed turn.
    pub fn failure_message(&self) -> Option<String> {
        match self {
            TurnOutcome::Failed(m) => Some(m.clone()),
            TurnOutcome::ProviderFailed(f) => Some(f.message.clone()),
            TurnOutcome::Completed | TurnOutcome::Cancelled => None,
        }
    }
}

/// Why a model server failed a turn; `src/error/reason.rs` spells each as a
/// `data.reason` of `-32603`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderReason {
    /// Connection refused, DNS, TLS.
    Unreachable,
    /// An HTTP error answer (or an error inside the stream).
    Error,
    /// No answer, or a silence of the stream, past `request_timeout_secs`.
    Timeout,
    /// Not the streaming format: a cut stream, malformed SSE or JSON.
    Protocol,
}

/// A model server failure: its class, the HTTP status of an error answer,
/// and a message for the user (never the API key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderFailure {
    pub reason: ProviderReason,
    pub status: Option<u16>,
    pub message: String,
}

/// Runs one turn with `backend`. The future is `Send` when the sink is.
pub async fn run_turn<S: EventSink>(
    backend: Backend,
    input: TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
) -> TurnOutcome {
    match backend {
        Backend::Echo => within_deadline(backend, &input, echo::run(&input, sink, cancel)).await,
        // These two end their turn at `input.deadline` themselves: they
        // stop a process gracefully, or mark a host broken, first.
        Backend::Command => run_command(&input, sink, cancel).await.outcome,
        Backend::Acp => match input.acp_hosts {
            Some(hosts) => acp::run(hosts, &input, sink, cancel).await,
            None => TurnOutcome::Failed("no ACP host registry".to_owned()),
        },
        Backend::OpenAi => {
            within_deadline(backend, &input, openai::run(&input, sink, cancel)).await
        }
    }
}

/// `turn`, ended at `input.deadline` (the deadline first: an approval its
/// sink ended at that instant must not let the turn go on).
async fn within_deadline(
    backend: Backend,
    input: &TurnInput<'_>,
    turn: impl std::future::Future<Output = TurnOutcome>,
) -> TurnOutcome {
    tokio::select! {
        biased;
        () = tokio::time::sleep_until(input.deadline.into()) => {
            deadline_passed(backend, input.settings.timeout_secs)
        }
        outcome = turn => outcome,
    }
}

/// How a turn ends at its deadline: the model server's timeout class for
/// `openai`, an agent failure otherwise.
fn deadline_passed(backend: Backend, secs: u64) -> TurnOutcome {
    match backend {
        Backend::OpenAi => TurnOutcome::ProviderFailed(ProviderFailure {
            reason: ProviderReason::Timeout,
            status: None,
            message: format!("the turn did not finish within {secs} s (timeout_secs)"),
        }),
        _ => TurnOutcome::Failed(format!("the agent did not finish the turn within {secs} s")),
    }
}
