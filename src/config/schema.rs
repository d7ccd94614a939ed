//! The typed configuration of `config.toml` (§11.1, §10.2, §6.2, §6.3).
//!
//! Every struct rejects unknown keys and fills defaults, and every map is a `BTreeMap`, so the
//! effective config and the file the daemon writes list entries in byte order of their keys.
//! Fields the spec calls *required* (`agents.<alias>.backend`, `users.<name>.uid`,
//! `users.<name>.permission_profiles`) are `Option` here: their absence is a validation error
//! with its own path (§11.3), not a deserialization failure. Integers are `u32` (`port`: `u16`)
//! so that every accepted value also fits TOML's signed 64-bit integers and a `Duration`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::agent_spec::{AgentSpec, Temperature};

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Format version; read-only, must be 1.
    #[serde(default = "one")]
    pub schema_version: u32,
    /// The agent a client that names none gets: `session/new`
    /// without `agent_alias`, `zeroclaw chat` and `run` without `--agent`.
    /// Must name a configured agent; unset = the alias that sorts first, for
    /// the CLI only (docs/config.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<String>,
    /// `[daemon]`.
    #[serde(default)]
    pub daemon: DaemonConfig,
    /// `[security]`.
    #[serde(default)]
    pub security: SecurityConfig,
    /// `[gateway]` (milestone 2).
    #[serde(default)]
    pub gateway: GatewayConfig,
    /// `[agents.<alias>]`.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// `[permission_profiles.<alias>]`.
    #[serde(default)]
    pub permission_profiles: BTreeMap<String, PermissionProfile>,
    /// `[users.<name>]`.
    #[serde(default)]
    pub users: BTreeMap<String, UserConfig>,
    /// Each agent parsed into its spec when the config was admitted
    /// (`validate::admit`); never in the file.
    #[serde(skip)]
    pub(super) specs: BTreeMap<String, AgentSpec>,
}

/// `[daemon]`: timeouts and idle limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// Live-session idle reclamation in seconds; 0 = never.
    pub session_idle_secs: u32,
    /// Wait for an approval answer.
    pub approval_timeout_secs: u32,
    /// Wait for an `elicitation/create` answer.
    pub ask_timeout_secs: u32,
    /// Staged upload idle limit.
    pub upload_idle_secs: u32,
    /// The daemon-wide memory budget in MiB (src/memory.rs); applied live,
    /// unless `ZEROCLAW_MEMORY_BUDGET_MIB` pins it at startup.
    pub memory_budget_mib: u32,
    /// The `server_version` a snake-dialect `initialize` reports instead of
    /// the package version, for clients that refuse any other version
    /// (docs/protocol-additions.md); unset = the true version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advertised_server_version: Option<String>,
}

/// `[security]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// The daemon's own uid binds the shared operator.
    pub trust_daemon_uid: bool,
    /// Serve this group's members (§2.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_group: Option<String>,
}

/// `[gateway]` (milestone 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Start the HTTP/WebSocket gateway.
    pub enabled: bool,
    /// Listen address.
    pub host: String,
    /// Listen port, 1–65535.
    pub port: u16,
    /// Remote clients must present a paired token.
    pub require_pairing: bool,
    /// SHA-256 hex digests of paired tokens; managed by `pairing/*` only.
    pub paired_tokens: Vec<String>,
    /// TLS certificate file (later milestone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<String>,
    /// TLS key file (later milestone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<String>,
    /// Host names (without port) a request's `Host` may name besides IP
    /// literals, `localhost` and `host` (DNS-rebinding check, docs/gateway.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) allowed besides the gateway's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
}

/// `[agents.<alias>]` (§10.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// `"echo"`, `"command"`, `"acp"` or `"openai"`; required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Defaults to `<config_dir>/agents/<alias>/workspace` (resolved by the daemon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_dir: Option<String>,
    /// Passed to the backend each turn.
    pub system_prompt: String,
    /// Compaction threshold.
    pub context_max_messages: u32,
    /// Messages kept by compaction.
    pub compact_keep_messages: u32,
    /// Echo: characters per message chunk.
    pub chunk_chars: u32,
    /// Echo: delay before each chunk.
    pub chunk_delay_ms: u32,
    /// Command: argv; required and non-empty for `backend = "command"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Command: `"prompt"` or `"context_json"`.
    pub input: String,
    /// Command: extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Command and ACP: wall-clock limit per turn.
    pub timeout_secs: u32,
    // --- backend "acp" (docs/agents.md, docs/config.md) ---
    /// ACP: `"auto"` (call `session/load` on rehydration when the agent offers
    /// it) or `"never"` (always a new ACP session).
    pub load_session: String,
    /// ACP: what an unanswered or unreachable permission request becomes:
    /// `"reject"` or `"allow_once"`.
    pub permission_default: String,
    /// ACP: `"workspace"` (serve `fs/*` inside the working directory) or `"off"`.
    pub fs: String,
    /// ACP: serve `terminal/*` (commands run in the working directory).
    pub terminal: bool,
    // --- backend = "openai" (docs/config.md): all optional and
    // omitted when unset, so other agents' entries are unchanged; defaults
    // are resolved in `crate::agent::openai::OpenAiSettings`.
    /// OpenAI: the API root (`…/v1`); default Ollama's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// OpenAI: the model name; required for `backend = "openai"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// OpenAI: the name of the environment variable holding the API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// OpenAI: the absolute path of a file (mode 600) holding the API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<String>,
    /// OpenAI: sampling temperature, 0–2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Temperature>,
    /// OpenAI: `max_tokens` of each request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// OpenAI: bound on connecting, on the response head and on each gap of the stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_timeout_secs: Option<u32>,
    /// OpenAI: the built-in tools the model may call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// OpenAI: `"always"`, `"writes"` or `"never"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// OpenAI: model requests answered with tool calls per turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// OpenAI: retries of a 429/5xx answer or refused connection before the first token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// OpenAI: the first retry's delay; each later one doubles it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_backoff_ms: Option<u32>,
}

/// `[permission_profiles.<alias>]` (§6.3). Grants stay strings here so that a bad resource or
/// verb is a validation error with a path rather than a parse failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionProfile {
    /// Grants everything.
    pub admin: bool,
    /// resource → verbs.
    pub grants: BTreeMap<String, Vec<String>>,
    /// Agent aliases the holder may use; `"*"` = every agent.
    pub allowed_agents: Vec<String>,
    /// Config write selectors: `"*"`, a prop, or a prop followed by `.*`.
    pub config_write_paths: Vec<String>,
}

/// `[users.<name>]` (§6.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UserConfig {
    /// Local uid; required and unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Profiles whose union the user holds; required and non-empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_profiles: Option<Vec<String>>,
    /// Principal id; defaults to the entry name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
}

fn one() -> u32 {
    1
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schema_version: 1,
            default_agent: None,
            daemon: DaemonConfig::default(),
            security: SecurityConfig::default(),
            gateway: GatewayConfig::default(),
            agents: BTreeMap::new(),
            specs: BTreeMap::new(),
            permission_profiles: BTreeMap::new(),
            users: BTreeMap::new(),
        }
    }
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            session_idle_secs: 1800,
            approval_timeout_secs: 120,
            ask_timeout_secs: 120,
            upload_idle_secs: 300,
            memory_budget_mib: crate::limits::DEFAULT_BUDGET_MIB,
            advertised_server_version: None,
        }
    }
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            trust_daemon_uid: true,
            socket_group: None,
        }
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            enabled: false,
            host: "127.0.0.1".to_owned(),
            port: 42617,
            require_pairing: true,
            paired_tokens: Vec::new(),
            tls_cert: None,
            tls_key: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            backend: None,
            workspace_dir: None,
            system_prompt: String::new(),
            context_max_messages: 50,
            compact_keep_messages: 10,
            chunk_chars: 16,
            chunk_delay_ms: 0,
            command: None,
            input: "prompt".to_owned(),
            env: BTreeMap::new(),
            timeout_secs: 600,
            load_session: "auto".to_owned(),
            permission_default: "reject".to_owned(),
            fs: "workspace".to_owned(),
            terminal: false,
            base_url: None,
            model: None,
            api_key_env: None,
            api_key_file: None,
            temperature: None,
            max_tokens: None,
            request_timeout_secs: None,
            tools: None,
            approval: None,
            max_tool_rounds: None,
            max_retries: None,
            retry_backoff_ms: None,
        }
    }
}

impl UserConfig {
    /// The effective principal id: `principal_id`, else the entry name (§6.1).
    pub fn effective_principal_id<'a>(&'a self, name: &'a str) -> &'a str {
        self.principal_id.as_deref().unwrap_or(name)
    }
}

impl Config {
    /// The spec of agent `alias`: present for every configured agent of an
    /// admitted config.
    pub fn agent_spec(&self, alias: &str) -> Option<&AgentSpec> {
        self.specs.get(alias)
    }

    /// Agent `alias`'s entry and its spec.
    pub fn agent(&self, alias: &str) -> Option<(&AgentConfig, &AgentSpec)> {
        Some((self.agents.get(alias)?, self.specs.get(alias)?))
    }

    /// The agent a client that names none gets: `default_agent`, else the
    /// alias that sorts first (what the CLI always did).
    pub fn effective_default_agent(&self) -> Option<&str> {
        self.default_agent
            .as_deref()
            .or_else(|| self.agents.keys().next().map(String::as_str))
    }

    /// Where an agent's sessions work (§10.2): its `workspace_dir`, or
    /// `<config_dir>/agents/<alias>/workspace`. A fact of the config, so the
    /// effective view (`config/get`) and the session lifecycle read it alike.
    pub fn agent_workspace_dir(&self, config_dir: &Path, alias: &str) -> PathBuf {
        match self
            .agents
            .get(alias)
            .and_then(|a| a.workspace_dir.as_deref())
        {
            Some(d) => PathBuf::from(d),
            None => config_dir.join("agents").join(alias).join("workspace"),
        }
    }
}
