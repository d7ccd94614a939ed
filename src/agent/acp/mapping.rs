//! ACP `session/update` → our events (§8.5; docs/agents.md lists what
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
//! - `plan`, `available_commands_update`, `current_mode_update`,
//!   `usage_update`, `config_option_update`, `session_info_update` → our
//!   extra updates (`plan`, `available_commands`, `current_mode`, `usage`,
//!   `config_options`, `session_info`; docs/protocol-additions.md), not
//!   persisted;
//! - everything else (user message replays, unknown kinds) is not forwarded.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::incoming::Chunk;
use super::schema::{text_of, SessionNotification};
use crate::agent::coalesce::Coalesce;
use crate::agent::extra::{Extra, ExtraKind, MAX_EXTRA_BYTES};
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

/// Adds a text chunk of `agent_session` to `pending` (another session's is
/// not ours to show).
pub async fn chunk<S: EventSink>(
    c: &Chunk,
    agent_session: &str,
    pending: &mut Coalesce,
    sink: &mut S,
) -> Result<(), SinkClosed> {
    if c.session_id != agent_session {
        tracing::debug!(event = "acp_update_other_session", agent_session_id = %c.session_id);
        return Ok(());
    }
    pending.add(sink, c.thought, &c.text).await
}

/// Applies one `session/update` (its params) of `agent_session`. Chunk
/// text joins `pending` (the caller flushes it); any other event sends
/// `pending` first.
pub async fn apply<S: EventSink>(
    params: Value,
    agent_session: &str,
    tools: &mut Tools,
    pending: &mut Coalesce,
    sink: &mut S,
) -> Result<(), SinkClosed> {
    let n: SessionNotification = match serde_json::from_value(params) {
        Ok(n) => n,
        Err(e) => {
            tracing::debug!(event = "acp_update_not_mapped", reason = %e);
            return Ok(());
        }
    };
    if n.session_id != agent_session {
        tracing::debug!(event = "acp_update_other_session", agent_session_id = %n.session_id);
        return Ok(());
    }
    let raw = &n.update;
    let kind = raw
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    let id = raw.get("toolCallId").and_then(Value::as_str);
    let thought = match kind {
        "agent_message_chunk" => Some(false),
        "agent_thought_chunk" => Some(true),
        _ => None,
    };
    if let Some(thought) = thought {
        return match raw.get("content").and_then(text_of) {
            Some(text) => pending.add(sink, thought, text).await,
            None => Ok(()),
        };
    }
    pending.flush(sink).await?;
    match (kind, id) {
        ("tool_call", Some(id)) => {
            let name = raw
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| kind_name(raw), str::to_owned);
            let input = pick(
                raw,
                &[
                    "content",
                    "kind",
                    "locations",
                    "rawInput",
                    "status",
                    "title",
                ],
            );
            let Ok(input) = serde_json::value::to_raw_value(&input) else {
                return Ok(());
            };
            if !tools.calls.contains_key(id) {
                sink.tool_call(id, &name, &input).await?;
                tools.calls.insert(id.to_owned(), (name, false));
            }
            finish_if_done(raw, id, tools, sink).await
        }
        ("tool_call_update", Some(id)) => finish_if_done(raw, id, tools, sink).await,
        (kind, _) if ExtraKind::of_acp(kind).is_some() => match extra_of(kind, raw) {
            Some(extra) => sink.extra(extra).await,
            None => Ok(()),
        },
        _ => {
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
    let output = pick(raw, &["content", "rawOutput", "status"]).to_string();
    let name = name.clone();
    sink.tool_result(id, &name, &output).await
}

/// The extra update of an ACP update of kind `kind`; `None` (logged) when
/// it is past [`MAX_EXTRA_BYTES`].
fn extra_of(kind: &str, raw: &Value) -> Option<Extra> {
    let kind = ExtraKind::of_acp(kind)?;
    let members: Vec<_> = kind
        .members()
        .iter()
        .filter_map(|k| {
            let v = raw.get(*k)?;
            Some((*k, serde_json::value::to_raw_value(v).ok()?))
        })
        .collect();
    let extra = Extra { kind, members };
    if extra.json_len() > MAX_EXTRA_BYTES {
        tracing::warn!(event = "acp_update_too_large", kind = %kind.as_str(), bytes = extra.json_len());
        return None;
    }
    Some(extra)
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
