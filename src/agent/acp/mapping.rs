//! ACP `session/update` → our events (SPEC §8.5; docs/agents.md lists what
//! is mapped and what is not).
//!
//! - `agent_message_chunk` / `agent_thought_chunk` with text content → our
//!   chunks (other content kinds are not mapped);
//! - `tool_call` → our `tool_call`, named by the ACP tool's `name`, else its
//!   `kind`; `rawInput` keeps `{content, kind, locations, rawInput, status,
//!   title}` as the agent sent them (members in byte order);
//! - `tool_call_update` reaching `completed` or `failed` → our `tool_result`
//!   with `{content, rawOutput, status}` (one per tool call; intermediate
//!   updates are not mapped);
//! - everything else (`plan`, `available_commands_update`, mode and usage
//!   updates, user message replays) is not forwarded.

use std::collections::HashMap;

use agent_client_protocol_schema::v1::{ContentBlock, SessionNotification, SessionUpdate};
use serde_json::{json, Map, Value};

use crate::agent::sink::{EventSink, SinkClosed};

/// What the turn remembers of its tool calls.
#[derive(Debug, Default)]
pub struct Tools {
    /// Tool call id → (our name, its result was sent).
    calls: HashMap<String, (String, bool)>,
}

impl Tools {
    /// The name of a known tool call.
    pub fn name_of(&self, id: &str) -> Option<&str> {
        self.calls.get(id).map(|(n, _)| n.as_str())
    }
}

/// Applies one `session/update` (its params) of `agent_session`.
pub async fn apply<S: EventSink>(
    params: Value,
    agent_session: &str,
    tools: &mut Tools,
    sink: &mut S,
) -> Result<(), SinkClosed> {
    let raw = params.get("update").cloned().unwrap_or(Value::Null);
    let n: SessionNotification = match serde_json::from_value(params) {
        Ok(n) => n,
        Err(e) => {
            tracing::debug!(event = "acp_update_not_mapped", reason = %e);
            return Ok(());
        }
    };
    if &*n.session_id.0 != agent_session {
        tracing::debug!(event = "acp_update_other_session", agent_session_id = %n.session_id.0);
        return Ok(());
    }
    match n.update {
        SessionUpdate::AgentMessageChunk(c) => match c.content {
            ContentBlock::Text(t) => sink.message_chunk(&t.text).await,
            _ => Ok(()),
        },
        SessionUpdate::AgentThoughtChunk(c) => match c.content {
            ContentBlock::Text(t) => sink.thought_chunk(&t.text).await,
            _ => Ok(()),
        },
        SessionUpdate::ToolCall(call) => {
            let id = call.tool_call_id.0.to_string();
            let name = call.name.clone().unwrap_or_else(|| kind_name(&raw));
            let input = pick(
                &raw,
                &[
                    "title",
                    "kind",
                    "status",
                    "rawInput",
                    "content",
                    "locations",
                ],
            );
            let Ok(input) = serde_json::value::to_raw_value(&input) else {
                return Ok(());
            };
            let known = tools.calls.contains_key(&id);
            if !known {
                sink.tool_call(&id, &name, &input).await?;
                tools.calls.insert(id.clone(), (name, false));
            }
            finish_if_done(&raw, &id, tools, sink).await
        }
        SessionUpdate::ToolCallUpdate(update) => {
            let id = update.tool_call_id.0.to_string();
            finish_if_done(&raw, &id, tools, sink).await
        }
        _ => {
            let kind = raw
                .get("sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or("");
            tracing::debug!(event = "acp_update_not_mapped", kind = %kind);
            Ok(())
        }
    }
}

/// Sends the `tool_result` of a known call whose status is final.
async fn finish_if_done<S: EventSink>(
    raw: &Value,
    id: &str,
    tools: &mut Tools,
    sink: &mut S,
) -> Result<(), SinkClosed> {
    let status = raw.get("status").and_then(Value::as_str).unwrap_or("");
    if !matches!(status, "completed" | "failed") {
        return Ok(());
    }
    let Some((name, done)) = tools.calls.get_mut(id) else {
        return Ok(()); // an update of a call we never saw: nothing to close
    };
    if *done {
        return Ok(());
    }
    *done = true;
    let output = pick(raw, &["status", "rawOutput", "content"]).to_string();
    let name = name.clone();
    sink.tool_result(id, &name, &output).await
}

fn kind_name(raw: &Value) -> String {
    raw.get("kind")
        .and_then(Value::as_str)
        .unwrap_or("other")
        .to_owned()
}

/// The members `keys` of `raw` that are present, in that order.
fn pick(raw: &Value, keys: &[&str]) -> Value {
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = raw.get(*k) {
            m.insert((*k).to_owned(), v.clone());
        }
    }
    json!(m)
}
