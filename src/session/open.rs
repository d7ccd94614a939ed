//! `session/new` from its members as decoded (§8.3): the agent (named, or
//! the configured `default_agent`), the session id (given, or a new one),
//! the working directory, the agent configured, then the lifecycle's
//! create, resume or replace. The order of these checks decides which
//! error a bad request gets.

use std::path::{Path, PathBuf};

use super::lifecycle::{new_session, NewRequest, NewResult};
use super::{new_uuid, parse_session_id, ChatMode, Sessions};
use crate::config::Principal;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::live_config::LiveConfig;

/// What `session/new` asks for, as decoded and not yet checked (the
/// admin-only `cwd` is, right after decoding, §3.5).
#[derive(Debug, Default)]
pub struct NewArgs {
    pub agent_alias: Option<String>,
    pub session_id: Option<String>,
    pub mode: Option<ChatMode>,
    pub cwd: Option<String>,
    /// Replace the live session even while another connection uses it.
    pub replace: bool,
}

/// `session/new` (§8.3): checks `args`, then opens the session.
pub async fn open(
    sessions: &Sessions,
    config: &LiveConfig,
    config_dir: &Path,
    conn: &Conn,
    principal: &Principal,
    args: NewArgs,
) -> Result<NewResult, RpcError> {
    // Without `agent_alias`, the configured `default_agent` (docs/config.md);
    // without either, the parameter is required as §8.3 says.
    let alias = match args.agent_alias {
        Some(a) => a,
        None => config
            .current()
            .default_agent
            .clone()
            .ok_or_else(|| RpcError::invalid_params("agent_alias is required"))?,
    };
    let id = match args.session_id {
        Some(id) => parse_session_id(Some(id))?,
        None => new_uuid(),
    };
    let cwd = match args.cwd {
        Some(c) => {
            let path = PathBuf::from(&c);
            if !path.is_absolute() || !path.is_dir() {
                return Err(RpcError::invalid_params(
                    "cwd must be an absolute path to an existing directory",
                ));
            }
            Some(path)
        }
        None => None,
    };
    let config = config.current();
    if !config.agents.contains_key(&alias) {
        return Err(RpcError::invalid_params(format!(
            "Agent {alias} is not configured"
        )));
    }
    let request = NewRequest {
        id,
        agent_alias: alias,
        mode: args.mode.unwrap_or_default(),
        cwd,
        replace: args.replace,
    };
    new_session(sessions, &config, config_dir, conn, principal, request).await
}
