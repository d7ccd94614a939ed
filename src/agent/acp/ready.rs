//! Getting a turn its agent: the session's parked process if it is still
//! usable, else a new one (`initialize`, protocol version 1), then the ACP
//! session that holds our session's context: `session/load` of the linked one
//! when the agent offers it, else `session/new` (authenticating first when
//! the agent requires it), the link recorded in SQLite before the turn.

use std::time::Instant;

use serde_json::{json, Value};

use super::host::{initialize_params, CallError, Host, Spawn};
use super::hosts::AcpHosts;
use super::schema::{AuthMethod, InitializeResponse, NewSessionResponse, PROTOCOL_VERSION};
use crate::agent::TurnInput;
use crate::config::agent_spec::{FsAccess, LoadSession};

/// ACP's `auth_required` error code.
const AUTH_REQUIRED: i64 = -32000;

/// A usable host with its agent session open.
pub async fn ready_host(
    hosts: &AcpHosts,
    input: &TurnInput<'_>,
    deadline: Instant,
) -> Result<Host, String> {
    let settings = input.settings;
    let spec = Spawn {
        alias: input.agent_alias,
        session_id: input.session_id,
        argv: &settings.command,
        env: &settings.env,
        cwd: input.cwd,
        terminal: settings.acp.terminal,
    };
    if let Some(mut host) = hosts.take(input.session_id) {
        let same = host.spawned_with == spec.fingerprint();
        if same && host.is_usable() && host.agent_session.is_some() {
            return Ok(host);
        }
        let reason = if same { "unusable" } else { "config_changed" };
        tracing::info!(event = "acp_agent_restart", session_id = %input.session_id, pid = ?host.pid, reason);
    }
    let started = Instant::now();
    let mut host = Host::spawn(&spec)?;
    let init = host
        .call(
            "initialize",
            &initialize_params(
                settings.acp.fs == FsAccess::Workspace,
                settings.acp.terminal,
            ),
            deadline,
        )
        .await;
    let init = match init {
        Ok(v) => v,
        Err(e) => return Err(super::reason::explain(&host, &e, "initialize").await),
    };
    let init: InitializeResponse = serde_json::from_value(init)
        .map_err(|e| format!("the ACP agent's initialize answer is invalid: {e}"))?;
    if init.protocol_version != PROTOCOL_VERSION {
        return Err(format!(
            "the ACP agent speaks protocol version {} (the daemon speaks 1)",
            init.protocol_version
        ));
    }
    host.load_session = init.agent_capabilities.load_session;
    host.start_time = started.elapsed();
    tracing::info!(
        event = "acp_agent_started",
        session_id = %input.session_id,
        agent = %input.agent_alias,
        pid = ?host.pid,
        start_ms = host.start_time.as_millis() as u64,
        load_session = host.load_session,
    );
    open_session(hosts, &mut host, input, &init.auth_methods, deadline).await?;
    Ok(host)
}

async fn open_session(
    hosts: &AcpHosts,
    host: &mut Host,
    input: &TurnInput<'_>,
    auth: &[AuthMethod],
    deadline: Instant,
) -> Result<(), String> {
    let links = &hosts.links;
    let link = links
        .get(input.session_id)
        .await
        .map_err(|e| format!("cannot read the session's agent link: {e}"))?
        .filter(|l| l.agent_alias == input.agent_alias);
    let cwd = input.cwd.to_string_lossy();
    if let Some(link) = &link {
        if host.load_session && input.settings.acp.load_session == LoadSession::Auto {
            let params = json!({"sessionId": link.agent_session_id, "cwd": cwd, "mcpServers": []});
            match host.call("session/load", &params, deadline).await {
                Ok(_) => {
                    tracing::info!(event = "acp_session_loaded", session_id = %input.session_id, agent_session_id = %link.agent_session_id);
                    host.agent_session = Some(link.agent_session_id.clone());
                    return Ok(());
                }
                Err(CallError::Rpc(e)) => {
                    tracing::warn!(event = "acp_session_load_refused", session_id = %input.session_id, code = e.code, message = %e.message);
                }
                Err(CallError::Lost(why)) => return Err(why),
            }
        }
    }
    let method = choose_auth(auth, &input.settings.env);
    let id = new_session(host, &cwd, method, deadline).await?;
    let lost = link.is_some();
    links
        .set(input.session_id, input.agent_alias, &id, lost)
        .await
        .map_err(|e| format!("cannot record the session's agent link: {e}"))?;
    if lost {
        // The visible transcript is whole; the agent's own memory of it is not.
        tracing::warn!(event = "agent_context_lost", session_id = %input.session_id, agent_session_id = %id);
    }
    host.agent_session = Some(id);
    Ok(())
}

/// The auth method to use when the agent requires one: the first whose id
/// names a variable of the agent's `env` (`openai-api-key` →
/// `OPENAI_API_KEY`), else one whose id says it takes an API key when the
/// `env` has any `*_API_KEY`, else the agent's first.
fn choose_auth<'a>(
    auth: &'a [AuthMethod],
    env: &std::collections::BTreeMap<String, String>,
) -> Option<&'a AuthMethod> {
    let var_of = |id: &str| id.to_ascii_uppercase().replace(['-', '.'], "_");
    let has_key = env.keys().any(|k| k.ends_with("_API_KEY"));
    auth.iter()
        .find(|m| env.contains_key(&var_of(&m.id)))
        .or_else(|| {
            auth.iter()
                .find(|m| has_key && var_of(&m.id).contains("API_KEY"))
        })
        .or_else(|| auth.first())
}

/// `session/new`, authenticating once with `method` when the agent answers
/// `auth_required` (its credentials come from the agent's `env`).
async fn new_session(
    host: &mut Host,
    cwd: &str,
    method: Option<&AuthMethod>,
    deadline: Instant,
) -> Result<String, String> {
    let params = json!({"cwd": cwd, "mcpServers": []});
    let first = host.call("session/new", &params, deadline).await;
    let answer = match (first, method) {
        (Err(CallError::Rpc(e)), Some(method)) if e.code == AUTH_REQUIRED => {
            let auth_params = json!({"methodId": method.id});
            if let Err(e) = host.call("authenticate", &auth_params, deadline).await {
                return Err(super::reason::explain(host, &e, "authenticate").await);
            }
            host.call("session/new", &params, deadline).await
        }
        (first, _) => first,
    };
    let answer = match answer {
        Ok(v) => v,
        Err(e) => return Err(super::reason::explain(host, &e, "session/new").await),
    };
    parse_new_session(answer)
}

fn parse_new_session(answer: Value) -> Result<String, String> {
    let r: NewSessionResponse = serde_json::from_value(answer)
        .map_err(|e| format!("the ACP agent's session/new answer is invalid: {e}"))?;
    Ok(r.session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_and_initialize_answers_are_read() {
        assert_eq!(
            parse_new_session(json!({"sessionId": "x-1"})).unwrap(),
            "x-1"
        );
        assert!(parse_new_session(json!({})).is_err());
        // The protocol's own initialize example (agentclientprotocol.com).
        let init: InitializeResponse = serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true,
                "promptCapabilities": {"image": true, "audio": true, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": true}},
            "agentInfo": {"name": "agent", "title": "Agent", "version": "1.0.0"},
            "authMethods": [{"id": "api-key", "name": "API key", "description": null}]
        }))
        .unwrap();
        assert!(init.agent_capabilities.load_session);
        assert_eq!(init.auth_methods[0].id, "api-key");
        let methods: Vec<AuthMethod> = serde_json::from_value(json!([
            {"id": "chatgpt"}, {"id": "codex-api-key"}, {"id": "openai-api-key"}
        ]))
        .unwrap();
        let env = |k: &str| [(k.to_owned(), "x".to_owned())].into_iter().collect();
        let pick = |e| choose_auth(&methods, &e).map(|m| m.id.clone());
        assert_eq!(
            pick(env("OPENAI_API_KEY")).as_deref(),
            Some("openai-api-key")
        );
        assert_eq!(pick(env("CODEX_API_KEY")).as_deref(), Some("codex-api-key"));
        assert_eq!(pick(env("OTHER_API_KEY")).as_deref(), Some("codex-api-key"));
        assert_eq!(pick(env("HOME")).as_deref(), Some("chatgpt"));
        let bare: InitializeResponse =
            serde_json::from_value(json!({"protocolVersion": 1})).unwrap();
        assert!(!bare.agent_capabilities.load_session && bare.auth_methods.is_empty());
    }
}
