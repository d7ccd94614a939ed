//! The `backend = "openai"` settings of one turn, with their defaults
//! resolved from `[agents.<alias>]` (docs/config.md).

use std::time::Duration;

use crate::config::{AgentConfig, Temperature};

use super::tools::Tool;

/// Ollama's OpenAI-compatible root: the most common local server.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// Connect, response head and each silence of the stream.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u32 = 120;
/// Tool rounds per turn.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;
/// Retries of a 429/5xx answer.
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The first retry's delay (doubled for each later one).
pub const DEFAULT_RETRY_BACKOFF_MS: u32 = 500;

/// Which tool calls wait for the user's approval (§8.12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Approval {
    /// Every call.
    Always,
    /// Calls that change something: `write_file`, `shell`.
    #[default]
    Writes,
    /// None.
    Never,
}

impl Approval {
    /// The config spelling, or `None` for an unknown one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "always" => Some(Self::Always),
            "writes" => Some(Self::Writes),
            "never" => Some(Self::Never),
            _ => None,
        }
    }

    /// Whether a call of `tool` needs approval.
    pub fn needs(self, tool: Tool) -> bool {
        match self {
            Self::Always => true,
            Self::Writes => tool.writes(),
            Self::Never => false,
        }
    }
}

/// One turn's model server settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// The API root; requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The environment variable holding the bearer token, if any.
    pub api_key_env: Option<String>,
    /// The file holding the bearer token, if any (wins over `api_key_env`;
    /// the config allows one of them).
    pub api_key_file: Option<std::path::PathBuf>,
    /// Sent when set.
    pub temperature: Option<Temperature>,
    /// Sent when set.
    pub max_tokens: Option<u32>,
    /// Bound on connecting, on the response head and on each stream silence.
    pub request_timeout: Duration,
    /// The tools offered to the model, in config order.
    pub tools: Vec<Tool>,
    /// Which calls need approval.
    pub approval: Approval,
    /// Model answers with tool calls that are run, per turn.
    pub max_tool_rounds: u32,
    /// Retries of a 429/5xx answer.
    pub max_retries: u32,
    /// The first retry's delay.
    pub retry_backoff: Duration,
}

impl Default for OpenAiSettings {
    fn default() -> Self {
        Self::from_config(&AgentConfig::default())
    }
}

impl OpenAiSettings {
    /// The settings of `agent`, defaults filled (the config is validated, so
    /// unknown names cannot occur; they are skipped all the same).
    pub fn from_config(agent: &AgentConfig) -> Self {
        let tools = match &agent.tools {
            Some(names) => names.iter().filter_map(|n| Tool::parse(n)).collect(),
            None => Tool::ALL.to_vec(),
        };
        OpenAiSettings {
            base_url: agent
                .base_url
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            model: agent.model.clone().unwrap_or_default(),
            api_key_env: agent.api_key_env.clone(),
            api_key_file: agent.api_key_file.as_ref().map(Into::into),
            temperature: agent.temperature,
            max_tokens: agent.max_tokens,
            request_timeout: Duration::from_secs(u64::from(
                agent
                    .request_timeout_secs
                    .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
            )),
            tools,
            approval: agent
                .approval
                .as_deref()
                .and_then(Approval::parse)
                .unwrap_or_default(),
            max_tool_rounds: agent.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS),
            max_retries: agent.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            retry_backoff: Duration::from_millis(u64::from(
                agent.retry_backoff_ms.unwrap_or(DEFAULT_RETRY_BACKOFF_MS),
            )),
        }
    }

    /// The chat completions endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}
