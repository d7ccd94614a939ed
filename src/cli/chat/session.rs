//! Which session a chat talks to: the one named, the most recent chat
//! session, or a new one; with which agent; and the transcript lines shown
//! on resume and by `/history`.

use serde_json::{json, Value};

use super::super::conn::{CallError, Conn};
use super::render::TOOL_PREVIEW;
use crate::shown::Shown;

/// The chat's session.
#[derive(Debug, Clone)]
pub struct Current {
    pub id: String,
    pub agent: String,
}

/// What `/resume ID` and `--resume ID` say of an id `session/list` does not
/// show (one line: the id is the person's, sanitized all the same).
pub fn no_session(id: &str) -> String {
    format!("no session \"{}\" (/sessions lists them)", Shown::line(id))
}

/// The agent of session `id` (live or persisted, among the 1000 most
/// recent), from `session/list`; `None` when there is no such session.
pub async fn stored_agent(conn: &mut Conn, id: &str) -> Result<Option<String>, CallError> {
    let list = conn.call("session/list", json!({"limit": 1000})).await?;
    Ok(sessions(&list)
        .iter()
        .find(|s| s.get("session_id").and_then(Value::as_str) == Some(id))
        .and_then(|s| s.get("agent_alias").and_then(Value::as_str))
        .map(str::to_owned))
}

/// The most recent chat-mode session, as (id, agent).
pub async fn most_recent(conn: &mut Conn) -> Result<Option<Current>, CallError> {
    let list = conn
        .call("session/list", json!({"chat_mode": "chat", "limit": 1}))
        .await?;
    Ok(sessions(&list).first().and_then(|s| {
        Some(Current {
            id: s.get("session_id")?.as_str()?.to_owned(),
            agent: s.get("agent_alias")?.as_str()?.to_owned(),
        })
    }))
}

/// The agent to use when none is named: the configured `default_agent`,
/// else the first configured agent (`config/get`, keys sorted).
pub async fn default_agent(conn: &mut Conn) -> Result<Option<String>, CallError> {
    let config = conn.call("config/get", json!({})).await?;
    if let Some(alias) = config.get("default_agent").and_then(Value::as_str) {
        return Ok(Some(alias.to_owned()));
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

/// Attaches to `id` when it is live (`session/attach`, issue 25: a second
/// window no longer replaces the first's session and ends its turn), else
/// `session/new` (resuming when `id` has history); the result, with
/// `resumed` and `message_count` as `session/new` gives them.
pub async fn open(conn: &mut Conn, agent: &str, id: Option<&str>) -> Result<Value, CallError> {
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
    let mut params = json!({"agent_alias": agent, "chat_mode": "chat"});
    if let Some(id) = id {
        params["session_id"] = json!(id);
    }
    conn.call("session/new", params).await
}

/// The last `n` transcript rows as display lines (shown through the
/// renderer, which sanitizes them; names and results are one line here).
pub async fn history(conn: &mut Conn, id: &str, n: usize) -> Result<Vec<String>, CallError> {
    let page = conn
        .call(
            "session/messages",
            json!({"session_id": id, "chat_mode": "chat", "limit": n}),
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
    match (s("role"), s("kind")) {
        (_, "tool_call") => format!("[tool {}]", Shown::line(s("tool_name"))),
        (_, "tool_result") => format!(
            "[result {}: {}]",
            Shown::line(s("tool_name")),
            Shown::preview(&content, TOOL_PREVIEW)
        ),
        (_, "interruption_marker") => format!("[{content}]"),
        ("user", _) => format!("you: {content}"),
        ("assistant", _) => format!("agent: {content}"),
        (role, _) => format!("{role}: {content}"),
    }
}

/// One line per session for `/sessions`.
pub fn session_lines(list: &Value) -> Vec<String> {
    sessions(list)
        .iter()
        .map(|s| {
            let f = |k: &str| crate::client::field_text(s, k);
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
