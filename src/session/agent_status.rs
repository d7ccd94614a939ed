//! `agents/status` (protocol addition, zerocode's chat pane and dashboard):
//! one entry per configured agent the caller may use, with how many of its
//! sessions are live and how many are persisted — counted over what the
//! caller may see (§6.6: a non-admin sees its own sessions only).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Sessions;
use crate::config::Principal;
use crate::error::RpcError;
use crate::live_config::LiveConfig;

/// Persisted rows scanned per mode (the session lists' own bound).
const MAX_ROWS: u32 = 1000;

/// One entry, in zerocode's `AgentStatusEntry` shape.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct AgentStatus {
    pub alias: String,
    /// Every configured agent can run: the config has no disabled state.
    pub enabled: bool,
    pub backend: &'static str,
    pub live_sessions: usize,
    pub persisted_sessions: usize,
    /// No channels in this daemon: always empty.
    pub channels: Vec<String>,
    /// The agent a client that names none gets (`default_agent`, else the
    /// alias that sorts first): `zeroclaw agents` marks it.
    pub default: bool,
}

fn visible(principal: &Principal, owner: &str) -> bool {
    principal.admin || principal.id == owner
}

/// The entries for `principal`, under the configuration in effect now.
pub async fn agent_status(
    sessions: &Sessions,
    config: &LiveConfig,
    principal: &Principal,
) -> Result<Vec<AgentStatus>, RpcError> {
    let config = config.current();
    let mut live: BTreeMap<&str, usize> = BTreeMap::new();
    let store = &sessions.store;
    let sessions = sessions.all();
    for s in sessions.iter().filter(|s| visible(principal, &s.owner)) {
        *live.entry(s.agent_alias.as_str()).or_default() += 1;
    }
    let mut persisted: BTreeMap<String, usize> = BTreeMap::new();
    for (agent, owner) in store
        .durable_list(false, MAX_ROWS)
        .await?
        .into_iter()
        .map(|r| (r.record.agent_alias, r.record.owner_principal_id))
        .chain(
            store
                .chat_list(MAX_ROWS)
                .await?
                .into_iter()
                .map(|r| (r.agent_alias, r.owner_principal_id)),
        )
    {
        if visible(principal, &owner) {
            *persisted.entry(agent).or_default() += 1;
        }
    }
    let default = config.effective_default_agent();
    Ok(config
        .agents
        .iter()
        .filter(|(alias, _)| principal.may_use_agent(alias))
        .map(|(alias, _)| AgentStatus {
            alias: alias.clone(),
            enabled: true,
            backend: config
                .agent_spec(alias)
                .map_or("", |spec| spec.backend().name()),
            live_sessions: live.get(alias.as_str()).copied().unwrap_or(0),
            persisted_sessions: persisted.get(alias).copied().unwrap_or(0),
            channels: Vec::new(),
            default: default == Some(alias.as_str()),
        })
        .collect())
}
