//! The `backend = "openai"` variant of an [`super::AgentSpec`]: the model
//! server settings with their defaults resolved from `[agents.<alias>]`
//! (docs/config.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::choices::{Approval, Tool};

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

/// A sampling temperature: an `f64` compared by its bits, so the config
/// stays `Eq` (validation keeps it finite, in 0–2).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Temperature(pub f64);

impl PartialEq for Temperature {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Temperature {}

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
    /// The defaults of an entry that sets no `openai` key (its model empty).
    fn default() -> Self {
        let tools = Tool::ALL.to_vec();
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: String::new(),
            api_key_env: None,
            api_key_file: None,
            temperature: None,
            max_tokens: None,
            request_timeout: Duration::from_secs(u64::from(DEFAULT_REQUEST_TIMEOUT_SECS)),
            tools,
            approval: Approval::default(),
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            max_retries: DEFAULT_MAX_RETRIES,
            retry_backoff: Duration::from_millis(u64::from(DEFAULT_RETRY_BACKOFF_MS)),
        }
    }
}

impl OpenAiSettings {
    /// The chat completions endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}
