//! The daemon's `session/update`s and transcript rows as ACP
//! `session/update` notifications (docs/clients.md has the table).
//!
//! Chunks, the bulk of a turn, are spliced without decoding by the bridge's
//! loop (`chunk_splice`) before they reach this mapping; one in another form
//! is decoded here into borrowed fields and written straight back (no JSON
//! tree); every other update is rare and goes through a `Value`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::agent::{ExtraKind, Kind, Role};

/// What one daemon update becomes.
#[derive(Debug)]
pub enum Mapped {
    /// An ACP `session/update` frame for the editor (without its `\n`).
    Frame(Vec<u8>),
    /// A tool call's frame; the bridge remembers the call for the
    /// permission request that may follow.
    ToolCall {
        frame: Vec<u8>,
        session_id: String,
        tool_call_id: String,
    },
    /// An approval: asked of the editor as `session/request_permission`.
    Approval(Approval),
    /// Nothing for the editor (`turn_complete`: the prompt's answer says
    /// it; `compaction_notice`, `approval_resolved`, `elicitation_resolved`
    /// and unknown types have no ACP form).
    Nothing,
}

/// An `approval_request` of the daemon's.
#[derive(Debug, Clone)]
pub struct Approval {
    pub session_id: String,
    pub request_id: String,
    pub tool_name: String,
    pub arguments: String,
}

#[derive(Deserialize)]
struct ChunkLine<'a> {
    #[serde(borrow)]
    params: ChunkParams<'a>,
}

#[derive(Deserialize)]
struct ChunkParams<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Serialize)]
struct Note<'a, U> {
    jsonrpc: &'static str,
    method: &'static str,
    params: NoteParams<'a, U>,
}

#[derive(Serialize)]
struct NoteParams<'a, U> {
    #[serde(rename = "sessionId")]
    session_id: &'a str,
    update: U,
}

#[derive(Serialize)]
struct ChunkUpdate<'a> {
    #[serde(rename = "sessionUpdate")]
    session_update: &'static str,
    content: TextBlock<'a>,
}

#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// The ACP frame of a text chunk: `kind` is `agent_message_chunk`,
/// `agent_thought_chunk` or `user_message_chunk`.
pub fn chunk_frame(session_id: &str, kind: &'static str, text: &str) -> Vec<u8> {
    let note = Note {
        jsonrpc: "2.0",
        method: "session/update",
        params: NoteParams {
            session_id,
            update: ChunkUpdate {
                session_update: kind,
                content: TextBlock { kind: "text", text },
            },
        },
    };
    // Serializing borrowed strings into a Vec cannot fail.
    serde_json::to_vec(&note).unwrap_or_default()
}

/// The ACP frame of any update object.
pub fn update_frame(session_id: &str, update: Value) -> Vec<u8> {
    let note = Note {
        jsonrpc: "2.0",
        method: "session/update",
        params: NoteParams { session_id, update },
    };
    serde_json::to_vec(&note).unwrap_or_default()
}

/// Maps one daemon `session/update` line.
pub fn map_update(line: &str) -> Mapped {
    if let Ok(c) = serde_json::from_str::<ChunkLine>(line) {
        let kind = match &*c.params.kind {
            "agent_message_chunk" => Some("agent_message_chunk"),
            "agent_thought_chunk" => Some("agent_thought_chunk"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Mapped::Frame(chunk_frame(&c.params.session_id, kind, &c.params.text));
        }
    }
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else {
        return Mapped::Nothing;
    };
    let Some(Value::Object(p)) = msg.remove("params") else {
        return Mapped::Nothing;
    };
    let s = |k: &str| {
        p.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let sid = s("sessionId");
    let kind = s("type");
    let update = match kind.as_str() {
        "tool_call" => {
            let id = s("toolCallId");
            return Mapped::ToolCall {
                frame: update_frame(&sid, tool_call(&id, &s("name"), p.get("rawInput"))),
                session_id: sid,
                tool_call_id: id,
            };
        }
        "tool_result" => tool_result(&s("toolCallId"), &s("rawOutput")),
        "approval_request" => {
            return Mapped::Approval(Approval {
                session_id: sid,
                request_id: s("requestId"),
                tool_name: s("toolName"),
                arguments: s("argumentsSummary"),
            })
        }
        other => match ExtraKind::of_type(other).and_then(|k| Some((k, k.acp_name()?))) {
            Some((k, name)) => {
                let mut u = serde_json::Map::new();
                u.insert("sessionUpdate".into(), json!(name));
                for m in k.members() {
                    if let Some(v) = p.get(*m) {
                        u.insert((*m).into(), v.clone());
                    }
                }
                Value::Object(u)
            }
            None => return Mapped::Nothing,
        },
    };
    Mapped::Frame(update_frame(&sid, update))
}

/// ACP `tool_call` of ours: the name is its title; the input as it came.
pub fn tool_call(id: &str, name: &str, input: Option<&Value>) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": name,
        "kind": "other",
        "status": "in_progress",
        "rawInput": input.cloned().unwrap_or(json!({})),
    })
}

/// ACP `tool_call_update` that completes a call with our `tool_result`'s
/// output (as text content and as `rawOutput`).
pub fn tool_result(id: &str, output: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": output}}],
        "rawOutput": output,
    })
}

/// The ACP updates of one transcript row (`session/messages`), for
/// `session/load`'s replay.
pub fn row_frame(session_id: &str, row: &Value) -> Option<Vec<u8>> {
    let s = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or_default();
    Some(match (Role::parse(s("role")), Kind::parse(s("kind"))) {
        (_, Some(Kind::ToolCall)) => update_frame(
            session_id,
            tool_call(s("tool_call_id"), s("tool_name"), row.get("tool_input")),
        ),
        (_, Some(Kind::ToolResult)) => {
            update_frame(session_id, tool_result(s("tool_call_id"), s("content")))
        }
        (_, Some(Kind::InterruptionMarker)) => chunk_frame(
            session_id,
            "agent_message_chunk",
            &format!("[{}]", s("content")),
        ),
        (Some(Role::User), _) => chunk_frame(session_id, "user_message_chunk", s("content")),
        (Some(Role::Assistant), _) => chunk_frame(session_id, "agent_message_chunk", s("content")),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(m: Mapped) -> Value {
        match m {
            Mapped::Frame(f) => serde_json::from_slice(&f).unwrap(),
            other => panic!("not a frame: {other:?}"),
        }
    }

    #[test]
    fn maps_every_update_type() {
        let up = |p: &str| format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{p}}}"#);
        let v = frame(map_update(&up(
            r#"{"sessionId":"s","type":"agent_message_chunk","text":"a\"b"}"#,
        )));
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"b"}}}})
        );
        let v = frame(map_update(&up(
            r#"{"sessionId":"s","type":"agent_thought_chunk","text":"hm"}"#,
        )));
        assert_eq!(
            v["params"]["update"]["sessionUpdate"],
            "agent_thought_chunk"
        );
        let Mapped::ToolCall {
            frame: f,
            session_id,
            tool_call_id,
        } = map_update(&up(
            r#"{"sessionId":"s","type":"tool_call","toolCallId":"tc_1","name":"echo","rawInput":{"id":1}}"#,
        ))
        else {
            panic!("not a tool call")
        };
        assert_eq!((session_id.as_str(), tool_call_id.as_str()), ("s", "tc_1"));
        let v: Value = serde_json::from_slice(&f).unwrap();
        assert_eq!(
            v["params"]["update"],
            json!({"sessionUpdate":"tool_call","toolCallId":"tc_1","title":"echo","kind":"other","status":"in_progress","rawInput":{"id":1}})
        );
        let v = frame(map_update(&up(
            r#"{"sessionId":"s","type":"tool_result","toolCallId":"tc_1","name":"echo","rawOutput":"out"}"#,
        )));
        assert_eq!(v["params"]["update"]["status"], "completed");
        assert_eq!(v["params"]["update"]["rawOutput"], "out");
        let v = frame(map_update(&up(
            r#"{"sessionId":"s","type":"plan","entries":[{"content":"x","priority":"high","status":"pending"}]}"#,
        )));
        assert_eq!(
            v["params"]["update"],
            json!({"sessionUpdate":"plan","entries":[{"content":"x","priority":"high","status":"pending"}]})
        );
        for (ours, acp) in [
            ("available_commands", "available_commands_update"),
            ("current_mode", "current_mode_update"),
            ("usage", "usage_update"),
            ("config_options", "config_option_update"),
            ("session_info", "session_info_update"),
        ] {
            let v = frame(map_update(&up(&format!(
                r#"{{"sessionId":"s","type":"{ours}"}}"#
            ))));
            assert_eq!(v["params"]["update"]["sessionUpdate"], acp);
        }
        assert!(matches!(
            map_update(&up(
                r#"{"sessionId":"s","type":"approval_request","requestId":"r","toolName":"t","argumentsSummary":"{}","timeoutSecs":120}"#
            )),
            Mapped::Approval(a) if a.request_id == "r" && a.tool_name == "t"
        ));
        for none in [
            r#"{"sessionId":"s","type":"turn_complete","outcome":"completed","content":""}"#,
            r#"{"sessionId":"s","type":"compaction_notice"}"#,
            r#"{"sessionId":"s","type":"approval_resolved","requestId":"r","decision":"reject"}"#,
            r#"{"sessionId":"s","type":"something_new"}"#,
        ] {
            assert!(matches!(map_update(&up(none)), Mapped::Nothing), "{none}");
        }
    }

    #[test]
    fn maps_transcript_rows() {
        let f = |row: Value| -> Value {
            serde_json::from_slice(&row_frame("s", &row).unwrap()).unwrap()
        };
        let u = f(json!({"seq":1,"role":"user","kind":"message","content":"hi"}));
        assert_eq!(u["params"]["update"]["sessionUpdate"], "user_message_chunk");
        let u = f(
            json!({"seq":4,"role":"system","kind":"interruption_marker","content":"Turn interrupted"}),
        );
        assert_eq!(
            u["params"]["update"]["content"]["text"],
            "[Turn interrupted]"
        );
        let u = f(
            json!({"seq":2,"role":"assistant","kind":"tool_call","content":"","tool_call_id":"tc_1","tool_name":"echo","tool_input":{"text":"x"}}),
        );
        assert_eq!(u["params"]["update"]["rawInput"], json!({"text":"x"}));
    }
}
