//! The request body: the retained context (§10.1) as the `messages`
//! array of the chat completions API, plus the tools offered.
//!
//! - The system prompt comes first, as a `system` message; it is never part
//!   of the context, so it is never persisted.
//! - A `summary` row (compaction, §9.5) is a `user` message: several chat
//!   templates (Mistral, Gemma) reject a second `system` message or one that
//!   is not first (docs/decisions.md).
//! - Consecutive `tool_call` rows become one `assistant` message with
//!   `tool_calls` (merged into the assistant text right before them, which
//!   is how the model sent them); each `tool_result` a `tool` message with its
//!   `tool_call_id`.

use serde_json::{json, Value};

use super::tools::Tool;
use crate::agent::{ContextMessage, Kind, Role};
use crate::config::agent_spec::OpenAiSettings;

/// The messages of a turn's first request.
pub fn messages(system_prompt: &str, context: &[ContextMessage], prompt: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(context.len() + 2);
    if !system_prompt.is_empty() {
        out.push(json!({"role": "system", "content": system_prompt}));
    }
    for m in context {
        match (m.role, m.kind) {
            (_, Kind::ToolCall) => {
                let call = tool_call(
                    m.tool_call_id.as_deref().unwrap_or_default(),
                    m.tool_name.as_deref().unwrap_or_default(),
                    m.tool_input.as_ref().map_or("{}", |r| r.get()),
                );
                push_call(&mut out, call);
            }
            (_, Kind::ToolResult) => out.push(tool_result(
                m.tool_call_id.as_deref().unwrap_or_default(),
                &m.content,
            )),
            (Role::Assistant, _) => {
                out.push(json!({"role": "assistant", "content": m.content}));
            }
            // User messages, summaries, and (never stored) plain tool text.
            _ => out.push(json!({"role": "user", "content": m.content})),
        }
    }
    out.push(json!({"role": "user", "content": prompt}));
    out
}

/// One `tool_calls` element; `arguments` is the JSON text as the API wants it.
pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// A `tool` message answering the call `id`.
pub fn tool_result(id: &str, output: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": output})
}

/// Appends `call` to the last message if it is an assistant message (its
/// text or earlier calls of the same answer), else as a new one.
fn push_call(out: &mut Vec<Value>, call: Value) {
    if let Some(last) = out.last_mut() {
        if last["role"] == "assistant" {
            match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                Some(calls) => calls.push(call),
                None => last["tool_calls"] = Value::Array(vec![call]),
            }
            return;
        }
    }
    out.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
}

/// The assistant message of one answer of this turn: its text and calls.
pub fn assistant(text: &str, calls: Vec<Value>) -> Value {
    let content = if text.is_empty() {
        Value::Null
    } else {
        Value::from(text)
    };
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

/// The whole body.
pub fn body(settings: &OpenAiSettings, messages: &[Value]) -> serde_json::Result<Vec<u8>> {
    let mut body = json!({
        "model": settings.model,
        "messages": messages,
        "stream": true,
    });
    if let Some(t) = settings.temperature {
        body["temperature"] = json!(t.0);
    }
    if let Some(n) = settings.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if !settings.tools.is_empty() {
        let tools: Vec<Value> = settings.tools.iter().map(|t| tool_spec(*t)).collect();
        body["tools"] = Value::Array(tools);
    }
    serde_json::to_vec(&body)
}

fn tool_spec(tool: Tool) -> Value {
    json!({"type": "function", "function": {
        "name": tool.name(),
        "description": tool.description(),
        "parameters": tool.parameters(),
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn row(role: Role, kind: Kind, content: &str, id: Option<&str>) -> ContextMessage {
        ContextMessage {
            role,
            kind,
            content: content.into(),
            tool_call_id: id.map(Into::into),
            tool_name: id.map(|_| "read_file".into()),
            tool_input: (kind == Kind::ToolCall)
                .then(|| RawValue::from_string(r#"{"path":"a"}"#.into()).unwrap()),
        }
    }

    #[test]
    fn context_becomes_api_messages() {
        let ctx = [
            row(
                Role::User,
                Kind::Summary,
                "[compacted 4 earlier messages]",
                None,
            ),
            row(Role::User, Kind::Message, "look", None),
            row(Role::Assistant, Kind::Message, "reading", None),
            row(Role::Assistant, Kind::ToolCall, "", Some("c1")),
            row(Role::Assistant, Kind::ToolCall, "", Some("c2")),
            row(Role::Tool, Kind::ToolResult, "A", Some("c1")),
            row(Role::Tool, Kind::ToolResult, "B", Some("c2")),
            row(Role::Assistant, Kind::Message, "done", None),
        ];
        let got = Value::Array(messages("be brief", &ctx, "again"));
        let call = |id| json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}});
        assert_eq!(
            got,
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "[compacted 4 earlier messages]"},
                {"role": "user", "content": "look"},
                {"role": "assistant", "content": "reading", "tool_calls": [call("c1"), call("c2")]},
                {"role": "tool", "tool_call_id": "c1", "content": "A"},
                {"role": "tool", "tool_call_id": "c2", "content": "B"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "again"},
            ])
        );
    }

    #[test]
    fn no_system_message_without_a_prompt_and_calls_without_text() {
        let ctx = [row(Role::Assistant, Kind::ToolCall, "", Some("c1"))];
        let got = messages("", &ctx, "p");
        assert_eq!(got[0]["role"], "assistant");
        assert_eq!(got[0]["content"], Value::Null);
        assert_eq!(got.len(), 2);
    }
}
