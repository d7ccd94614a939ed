//! What one turn of an agent runs with: its [`AgentSpec`] and the keys every
//! backend shares, read when the turn starts (§10.2), so a config change
//! applies from the next turn on.

use std::collections::{BTreeMap, BTreeSet};

use super::{secret_names, AcpOptions, InputMode, OpenAiSettings};
use crate::config::agent_spec::AgentSpec;
use crate::config::{AgentConfig, Config};

/// The per-turn agent configuration (§10.2), read when the turn starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// Echo: Unicode scalar values per message chunk (0 is treated as 1).
    pub chunk_chars: u32,
    /// Echo: delay before each chunk.
    pub chunk_delay_ms: u64,
    /// Command: argv.
    pub command: Vec<String>,
    /// Command: what goes to stdin.
    pub input: InputMode,
    /// Command, ACP, openai (its `shell` tool): extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Command: the credentials' variable names withheld from the daemon's
    /// environment it inherits ([`secret_names`] of the config).
    pub withheld: BTreeSet<String>,
    /// Wall-clock limit per turn, whatever the backend (see `TurnInput::deadline`).
    pub timeout_secs: u64,
    /// ACP: the backend's own keys.
    pub acp: AcpOptions,
    /// OpenAI: the model server and tools.
    pub openai: OpenAiSettings,
}

impl Default for AgentSettings {
    /// The §10.2 defaults.
    fn default() -> Self {
        AgentSettings {
            chunk_chars: 16,
            chunk_delay_ms: 0,
            command: Vec::new(),
            input: InputMode::Prompt,
            env: BTreeMap::new(),
            withheld: BTreeSet::new(),
            timeout_secs: 600,
            acp: AcpOptions::default(),
            openai: OpenAiSettings::default(),
        }
    }
}

impl AgentSettings {
    /// The settings of the agent `agent` whose spec is `spec`. A command
    /// agent's environment withholds the config's credentials.
    pub fn of(spec: &AgentSpec, agent: &AgentConfig, config: &Config) -> Self {
        let mut settings = AgentSettings {
            env: agent.env.clone(),
            timeout_secs: u64::from(agent.timeout_secs),
            ..AgentSettings::default()
        };
        match spec {
            AgentSpec::Echo {
                chunk_chars,
                chunk_delay_ms,
            } => {
                settings.chunk_chars = *chunk_chars;
                settings.chunk_delay_ms = u64::from(*chunk_delay_ms);
            }
            AgentSpec::Command { argv, input } => {
                settings.command = argv.clone();
                settings.input = *input;
                settings.withheld = secret_names(config);
            }
            AgentSpec::Acp { argv, options } => {
                settings.command = argv.clone();
                settings.acp = *options;
            }
            AgentSpec::OpenAi(openai) => settings.openai = openai.clone(),
        }
        settings
    }
}
