//! What the bridge reads on its side connection: a session's transcript
//! for `session/load`'s replay, oldest row first, a bounded page at a time;
//! and the sessions of the agent for `session/list`, titled by their first
//! prompt.

use serde_json::{json, Value};

use super::editor::{Gone, Out};
use super::to_acp::row_frame;
use crate::cli::conn::{CallError, ClientPeer};

/// Rows asked for per `session/messages` page (the daemon also cuts a
/// page at 4 MiB of JSON).
const PAGE_ROWS: u64 = 200;
/// Sessions per `session/list` page of the editor's.
pub const LIST_PAGE: usize = 50;
/// Characters of a title (the first line of the first prompt).
const TITLE_CHARS: usize = 80;

/// Why a replay stopped.
#[derive(Debug)]
pub enum ReplayError {
    Daemon(CallError),
    Editor(Gone),
}

/// Replays the transcript of `sid` to the editor, in order, each row once;
/// the number of rows replayed. A session without rows replays nothing.
pub async fn replay(side: &mut ClientPeer, out: &mut Out, sid: &str) -> Result<u64, ReplayError> {
    let page = |before: u64, limit: u64| json!({"session_id": sid, "chat_mode": "acp", "limit": limit, "before_index": before});
    let total = match side
        .call(
            "session/messages",
            json!({"session_id": sid, "chat_mode": "acp", "limit": 1}),
        )
        .await
    {
        Ok(r) => r.get("total").and_then(Value::as_u64).unwrap_or(0),
        // No transcript yet (a new session): nothing to replay.
        Err(CallError::Rpc(e)) if e.get("code") == Some(&json!(-32000)) => return Ok(0),
        Err(e) => return Err(ReplayError::Daemon(e)),
    };
    let mut at = 0u64;
    let mut want = PAGE_ROWS;
    while at < total {
        let before = (at + want).min(total);
        let r = side
            .call("session/messages", page(before, before - at))
            .await
            .map_err(ReplayError::Daemon)?;
        let start = r.get("start").and_then(Value::as_u64).unwrap_or(at);
        if start > at {
            // The page was cut at 4 MiB: ask again for as many rows as fitted.
            want = (before - start).max(1);
            continue;
        }
        let rows = r
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for row in &rows {
            if let Some(f) = row_frame(sid, row) {
                out.send_line(f).await.map_err(ReplayError::Editor)?;
            }
        }
        at = before;
        want = PAGE_ROWS;
    }
    Ok(total)
}

/// One page of `session/list` for the editor: durable sessions of `agent`
/// (not killed), most recent first, from `cursor` (an offset we gave out).
pub async fn list(
    side: &mut ClientPeer,
    agent: &str,
    cursor: Option<&str>,
    cwd: &str,
) -> Result<Value, CallError> {
    let all = side
        .call("session/list", json!({"chat_mode": "acp", "limit": 1000}))
        .await?;
    let mine: Vec<Value> = all
        .get("sessions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("agent_alias").and_then(Value::as_str) == Some(agent))
        .cloned()
        .collect();
    let from: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut sessions = Vec::new();
    for s in mine.iter().skip(from).take(LIST_PAGE) {
        let id = s
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut info = json!({"sessionId": id, "cwd": cwd});
        if let Some(t) = title(side, id).await? {
            info["title"] = json!(t);
        }
        if let Some(at) = s.get("last_activity") {
            info["updatedAt"] = at.clone();
        }
        sessions.push(info);
    }
    let mut result = json!({"sessions": sessions});
    if from + LIST_PAGE < mine.len() {
        result["nextCursor"] = json!((from + LIST_PAGE).to_string());
    }
    Ok(result)
}

/// The first line of a session's first prompt, if it has one.
async fn title(side: &mut ClientPeer, sid: &str) -> Result<Option<String>, CallError> {
    let params = json!({"session_id": sid, "chat_mode": "acp", "limit": 1, "before_index": 1});
    match side.call("session/messages", params).await {
        Ok(r) => Ok(r
            .pointer("/messages/0")
            .filter(|row| row.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|row| row.get("content").and_then(Value::as_str))
            .map(|c| {
                c.lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(TITLE_CHARS)
                    .collect()
            })),
        Err(CallError::Rpc(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
