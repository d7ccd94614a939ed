//! Which session a chat talks to: the one named, the most recent chat
//! session, or a new one; with which agent; and the transcript lines shown
//! on resume and by `/history`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::super::conn::{CallError, ClientPeer};
use super::render::TOOL_PREVIEW;
use super::Options;
use crate::agent::{Kind, Role};
use crate::shown::Shown;

/// The chat's session.
#[derive(Debug, Clone)]
pub struct Current {
    pub id: String,
    pub agent: String,
    /// Its `chat_mode`: [`DURABLE`] unless `--chat-mode` or a resumed
    /// chat-mode session.
    pub mode: &'static str,
}

/// The wire name of durable sessions (every event persisted as it
/// happens): `zeroclaw chat`'s default.
pub const DURABLE: &str = "acp";
/// The wire name of chat-mode sessions (history written at turn end).
pub const CHAT: &str = "chat";

fn mode_of(wire: Option<&str>) -> &'static str {
    if wire == Some(CHAT) {
        CHAT
    } else {
        DURABLE
    }
}

/// The working directory `--cwd` names (made absolute, it must exist),
/// else the current one.
pub fn work_dir(cwd: Option<&Path>) -> Result<PathBuf, String> {
    match cwd {
        // The plain form, as `current_dir` spells it on Windows (no `\\?\`).
        Some(d) => crate::confine::canonical(d)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| format!("--cwd {}: not an existing directory", d.display())),
        None => std::env::current_dir()
            .map_err(|e| format!("the current directory cannot be read ({e}); give --cwd DIR")),
    }
}

/// The session and agent the options name (`--session`, `--resume`,
/// `--new`, or the most recent session working in `dir`), and whether it is
/// a stored session.
pub async fn choose(
    conn: &mut ClientPeer,
    opts: &Options,
    dir: &Path,
) -> Result<(Current, bool), String> {
    let msg = |e: CallError| e.message();
    let mode = if opts.chat_mode { CHAT } else { DURABLE };
    let named = match (&opts.session, &opts.resume, opts.new) {
        (Some(id), _, _) | (None, Some(id), _) => Some(id.clone()),
        (None, None, true) => None,
        (None, None, false) => match most_recent(conn, mode, dir).await.map_err(msg)? {
            Some(c) if opts.agent.as_ref().is_none_or(|a| *a == c.agent) => return Ok((c, true)),
            _ => None,
        },
    };
    let stored = match &named {
        Some(id) => stored(conn, id).await.map_err(msg)?,
        None => None,
    };
    if let (Some(id), None) = (&opts.resume, &stored) {
        return Err(no_session(id));
    }
    let agent = match (opts.agent.clone(), &stored) {
        (Some(a), _) => a,
        (None, Some(s)) => s.agent.clone(),
        (None, None) => default_agent(conn)
            .await
            .map_err(msg)?
            .ok_or("no agent is configured (add one under [agents] in config.toml)")?,
    };
    let current = Current {
        id: named.unwrap_or_default(),
        agent,
        mode: stored.as_ref().map_or(mode, |s| s.mode),
    };
    Ok((current, stored.is_some()))
}

/// What `/resume ID` and `--resume ID` say of an id `session/list` does not
/// show (one line: the id is the person's, sanitized all the same).
pub fn no_session(id: &str) -> String {
    format!("no session \"{}\" (/sessions lists them)", Shown::line(id))
}

/// Session `id` (live or persisted, among the 1000 most recent) with its
/// agent and mode, from `session/list`; `None` when there is no such session.
pub async fn stored(conn: &mut ClientPeer, id: &str) -> Result<Option<Current>, CallError> {
    let list = conn.call("session/list", json!({"limit": 1000})).await?;
    Ok(sessions(&list)
        .iter()
        .find(|s| s.get("session_id").and_then(Value::as_str) == Some(id))
        .and_then(current_of))
}

fn current_of(s: &Value) -> Option<Current> {
    Some(Current {
        id: s.get("session_id")?.as_str()?.to_owned(),
        agent: s.get("agent_alias")?.as_str()?.to_owned(),
        mode: mode_of(s.get("chat_mode").and_then(Value::as_str)),
    })
}

/// The most recent session of `mode` working in `dir` (among the 1000
/// most recent): `zeroclaw chat` in a project continues that project's.
pub async fn most_recent(
    conn: &mut ClientPeer,
    mode: &'static str,
    dir: &Path,
) -> Result<Option<Current>, CallError> {
    let list = conn
        .call("session/list", json!({"chat_mode": mode, "limit": 1000}))
        .await?;
    let dir = dir.to_string_lossy();
    Ok(sessions(&list)
        .iter()
        .find(|s| s.get("workspace_dir").and_then(Value::as_str) == Some(&dir))
        .and_then(current_of))
}

/// The agent a chat uses when none is named: the configured
/// `default_agent`, else the first configured alias (`config/get`, keys sorted).
pub async fn default_agent(conn: &mut ClientPeer) -> Result<Option<String>, CallError> {
    let config = conn.call("config/get", json!({})).await?;
    if let Some(a) = config.get("default_agent").and_then(Value::as_str) {
        return Ok(Some(a.to_owned()));
    }
    Ok(config
        .get("agents")
        .and_then(Value::as_object)
        .and_then(|a| a.keys().next().cloned()))
}

fn sessions(list: &Value) -> Vec<Value> {
    list.get("sessions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Attaches to `current` when it is live (`session/attach`: a
/// second window no longer replaces the first's session and ends its
/// turn), else `session/new` (resuming when it has history; a new id when
/// empty) in `cwd` when given; the result, with `resumed` and
/// `message_count` as `session/new` gives them.
pub async fn open(
    conn: &mut ClientPeer,
    current: &Current,
    cwd: Option<&Path>,
) -> Result<Value, CallError> {
    let id = (!current.id.is_empty()).then_some(current.id.as_str());
    if let Some(id) = id {
        if let Ok(mut attached) = conn.call("session/attach", json!({"session_id": id})).await {
            let count = conn
                .call("session/messages", json!({"session_id": id, "limit": 1}))
                .await
                .ok()
                .and_then(|m| m.get("total").cloned())
                .unwrap_or(json!(0));
            attached["resumed"] = json!(true);
            attached["message_count"] = count;
            return Ok(attached);
        }
    }
    let mut params = json!({"agent_alias": current.agent, "chat_mode": current.mode});
    if let Some(id) = id {
        params["session_id"] = json!(id);
    }
    if let Some(dir) = cwd {
        params["cwd"] = json!(dir.to_string_lossy());
    }
    conn.call("session/new", params).await
}

/// Whether `e` refused `cwd` as admin-only (a principal that is not an
/// admin: its sessions work in the agent's workspace).
pub fn cwd_refused(e: &CallError) -> bool {
    matches!(e, CallError::Rpc(v)
        if v.pointer("/data/reason").and_then(Value::as_str) == Some("admin_only"))
}

/// The last `n` transcript rows as display lines (shown through the
/// renderer, which sanitizes them; names and results are one line here).
pub async fn history(
    conn: &mut ClientPeer,
    id: &str,
    mode: &str,
    n: usize,
) -> Result<Vec<String>, CallError> {
    let page = conn
        .call(
            "session/messages",
            json!({"session_id": id, "chat_mode": mode, "limit": n}),
        )
        .await?;
    let rows = page
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(rows.iter().map(row_line).collect())
}

/// One transcript row as a display line (`you: …`, `agent: …`, `[tool …]`).
pub fn row_line(row: &Value) -> String {
    let s = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or_default();
    let content: String = s("content").chars().take(2000).collect();
    match (Role::parse(s("role")), Kind::parse(s("kind"))) {
        (_, Some(Kind::ToolCall)) => format!("[tool {}]", Shown::line(s("tool_name"))),
        (_, Some(Kind::ToolResult)) => format!(
            "[result {}: {}]",
            Shown::line(s("tool_name")),
            Shown::preview(&content, TOOL_PREVIEW)
        ),
        (_, Some(Kind::InterruptionMarker)) => format!("[{content}]"),
        (Some(Role::User), _) => format!("you: {content}"),
        (Some(Role::Assistant), _) => format!("agent: {content}"),
        _ => format!("{}: {content}", s("role")),
    }
}

/// One line per session for `/sessions`.
pub fn session_lines(list: &Value) -> Vec<String> {
    sessions(list)
        .iter()
        .map(|s| {
            let f = |k: &str| crate::cli::field::field_text(s, k);
            format!(
                "{}  {}  {}  {}  {} messages  {}",
                f("session_id"),
                f("chat_mode"),
                f("agent_alias"),
                f("state"),
                f("message_count"),
                f("last_activity")
            )
        })
        .collect()
}
