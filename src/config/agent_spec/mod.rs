//! An agent as the daemon runs it: `[agents.<alias>]` parsed once, when the
//! config is admitted (`admit.rs`), into one variant per backend with its
//! choices as enums. An entry that does not parse never gets past
//! validation, and no code downstream reads a backend or a choice as a
//! string: the turn, `zeroclaw doctor`, `agents/list` and `config/list`
//! match on [`AgentSpec`] (or name the words through [`choices`]).
//!
//! What every backend shares (the system prompt, the context bounds, `env`,
//! `timeout_secs`, the workspace) stays in the entry (`AgentConfig`), read
//! as it is. This module names no schema type: the schema uses its words.

pub mod choices;
mod openai;

pub use choices::{Approval, Backend, FsAccess, InputMode, LoadSession, PermissionDefault, Tool};
pub use openai::{
    OpenAiSettings, Temperature, DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_RETRY_BACKOFF_MS,
};

/// One agent's backend and what that backend needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// The built-in deterministic agent: it streams the prompt back.
    Echo {
        /// Unicode scalar values per message chunk.
        chunk_chars: u32,
        /// Delay before each chunk, in milliseconds.
        chunk_delay_ms: u32,
    },
    /// A local program run once per turn.
    Command {
        /// Its argv (non-empty, the program named).
        argv: Vec<String>,
        /// What goes to its stdin.
        input: InputMode,
    },
    /// A hosted Agent Client Protocol agent.
    Acp {
        /// The agent's argv (non-empty, the program named).
        argv: Vec<String>,
        /// The backend's own keys.
        options: AcpOptions,
    },
    /// An OpenAI-compatible model server.
    OpenAi(OpenAiSettings),
}

/// The `acp` backend's keys (docs/config.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcpOptions {
    /// `load_session`: rehydration calls `session/load` when offered.
    pub load_session: LoadSession,
    /// What an unanswered or unreachable permission request becomes.
    pub permission_default: PermissionDefault,
    /// `fs`: whether `fs/*` is served inside the working directory.
    pub fs: FsAccess,
    /// `terminal`: serve `terminal/*` (commands in the working directory).
    pub terminal: bool,
}

impl Default for AcpOptions {
    /// The defaults of an entry that sets none of the keys.
    fn default() -> Self {
        AcpOptions {
            load_session: LoadSession::Auto,
            permission_default: PermissionDefault::Reject,
            fs: FsAccess::Workspace,
            terminal: false,
        }
    }
}

impl AgentSpec {
    /// Its backend.
    pub fn backend(&self) -> Backend {
        match self {
            AgentSpec::Echo { .. } => Backend::Echo,
            AgentSpec::Command { .. } => Backend::Command,
            AgentSpec::Acp { .. } => Backend::Acp,
            AgentSpec::OpenAi(_) => Backend::OpenAi,
        }
    }

    /// The program it runs, for the backends that run one.
    pub fn argv(&self) -> Option<&[String]> {
        match self {
            AgentSpec::Command { argv, .. } | AgentSpec::Acp { argv, .. } => Some(argv),
            AgentSpec::Echo { .. } | AgentSpec::OpenAi(_) => None,
        }
    }
}
