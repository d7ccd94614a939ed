//! Messages and their one JSON spelling.
//!
//! The echo agent's `::context`, the command agent's `context_json` stdin
//! and the rows of `session/messages` all write messages; §10.3 fixes the member order (`role`,
//! `kind`, `content`, `tool_call_id`, `tool_name`, `tool_input`), omits
//! absent members, always writes `kind`, and keeps `tool_input` as the client
//! wrote it (compacted, never reparsed). Everything goes through [`WireMessage`]
//! so the documents cannot drift apart.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use super::json::compact_raw;
use super::message_words::{Kind, Role};

/// One message: of the retained context (§10.1), and the body of a stored
/// transcript row (`store::TranscriptRow`), where the `system` role and the
/// `interruption_marker` kind also occur.
#[derive(Debug, Clone, Deserialize)]
pub struct ContextMessage {
    /// Who produced it.
    pub role: Role,
    /// What it is.
    #[serde(default)]
    pub kind: Kind,
    /// Its text (empty for tool calls).
    #[serde(default)]
    pub content: String,
    /// Tool rows: the call id.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Tool rows: the tool name.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool calls: the input object, as the client wrote it.
    #[serde(default)]
    pub tool_input: Option<Box<RawValue>>,
}

impl ContextMessage {
    /// A plain `message` row.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        ContextMessage {
            role,
            kind: Kind::Message,
            content: content.into(),
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
        }
    }

    fn wire(&self) -> WireMessage<'_> {
        WireMessage {
            role: self.role,
            kind: self.kind,
            content: &self.content,
            tool_call_id: self.tool_call_id.as_deref(),
            tool_name: self.tool_name.as_deref(),
            tool_input: self.tool_input.as_deref(),
        }
    }
}

impl PartialEq for ContextMessage {
    fn eq(&self, other: &Self) -> bool {
        self.role == other.role
            && self.kind == other.kind
            && self.content == other.content
            && self.tool_call_id == other.tool_call_id
            && self.tool_name == other.tool_name
            && self.tool_input.as_ref().map(|r| r.get())
                == other.tool_input.as_ref().map(|r| r.get())
    }
}

impl Serialize for ContextMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(serializer)
    }
}

/// The borrowed, serialized shape of a context message: declaration order is
/// the member order.
#[derive(Clone, Copy, Serialize)]
struct WireMessage<'a> {
    role: Role,
    kind: Kind,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "compact_input"
    )]
    tool_input: Option<&'a RawValue>,
}

fn compact_input<S: Serializer>(
    value: &Option<&RawValue>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(raw) => compact_raw(raw).serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// A sequence of wire messages: the context, then an optional extra one.
struct Messages<'a> {
    context: &'a [ContextMessage],
    then: Option<WireMessage<'a>>,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let head = self.context.iter().map(ContextMessage::wire);
        let tail = self.then.iter().copied();
        serializer.collect_seq(head.chain(tail))
    }
}

/// `{"messages":[...]}`: the text item of the echo agent's `::context`.
pub fn context_document(context: &[ContextMessage]) -> serde_json::Result<String> {
    let mut out = String::new();
    append_context_document(&mut out, context)?;
    Ok(out)
}

/// Appends `{"messages":[...]}` to `out` (so a caller can write a prefix
/// first without copying the document).
pub fn append_context_document(
    out: &mut String,
    context: &[ContextMessage],
) -> serde_json::Result<()> {
    append_context_document_bounded(out, context, usize::MAX).map(|_| ())
}

/// [`append_context_document`], writing at most `max` bytes of it: the
/// serializer is stopped once `out` holds `max` bytes, so a huge context
/// never exists twice in memory. Returns whether the
/// document was cut; the caller marks the cut (`…[truncated]`, §3.1).
pub fn append_context_document_bounded(
    out: &mut String,
    context: &[ContextMessage],
    max: usize,
) -> serde_json::Result<bool> {
    #[derive(Serialize)]
    struct Doc<'a> {
        messages: Messages<'a>,
    }
    let doc = Doc {
        messages: Messages {
            context,
            then: None,
        },
    };
    let mut w = Bounded {
        bytes: std::mem::take(out).into_bytes(),
        max,
        cut: false,
    };
    let written = serde_json::to_writer(&mut w, &doc);
    let cut = w.cut;
    let mut bytes = w.bytes;
    if cut {
        // The cut may split a character: keep the longest valid prefix.
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) => e.valid_up_to(),
        };
        bytes.truncate(valid);
    }
    // serde_json writes UTF-8, and `out` was a `String`.
    *out = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    match written {
        Err(_) if cut => Ok(true),
        other => other.map(|()| false),
    }
}

/// A writer that takes at most `max` bytes in all, then fails.
struct Bounded {
    bytes: Vec<u8>,
    max: usize,
    cut: bool,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.bytes.len());
        if buf.len() > room {
            self.bytes.extend_from_slice(&buf[..room]);
            self.cut = true;
            return Err(std::io::Error::other("document bound reached"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `{"system_prompt":...,"messages":[context..., prompt]}`: the command
/// agent's stdin in `context_json` mode.
pub fn context_json_input(
    system_prompt: &str,
    context: &[ContextMessage],
    prompt: &str,
) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Doc<'a> {
        system_prompt: &'a str,
        messages: Messages<'a>,
    }
    let user = WireMessage {
        role: Role::User,
        kind: Kind::Message,
        content: prompt,
        tool_call_id: None,
        tool_name: None,
        tool_input: None,
    };
    serde_json::to_vec(&Doc {
        system_prompt,
        messages: Messages {
            context,
            then: Some(user),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_call() -> ContextMessage {
        ContextMessage {
            role: Role::Assistant,
            kind: Kind::ToolCall,
            content: String::new(),
            tool_call_id: Some("tc_1".into()),
            tool_name: Some("echo".into()),
            tool_input: Some(RawValue::from_string("{ \"z\": 1.50, \"a\": [ ] }".into()).unwrap()),
        }
    }

    #[test]
    fn member_order_and_omission() {
        let json = serde_json::to_string(&tool_call()).unwrap();
        assert_eq!(
            json,
            r#"{"role":"assistant","kind":"tool_call","content":"","tool_call_id":"tc_1","tool_name":"echo","tool_input":{"z":1.50,"a":[]}}"#
        );
        let plain = serde_json::to_string(&ContextMessage::text(Role::Tool, "x")).unwrap();
        assert_eq!(plain, r#"{"role":"tool","kind":"message","content":"x"}"#);
    }

    #[test]
    fn kind_names_are_snake_case() {
        for (kind, name) in [
            (Kind::Message, "message"),
            (Kind::ToolCall, "tool_call"),
            (Kind::ToolResult, "tool_result"),
            (Kind::Summary, "summary"),
            (Kind::InterruptionMarker, "interruption_marker"),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
        }
    }

    #[test]
    fn document_matches_spec_example() {
        let ctx = [
            ContextMessage::text(Role::User, "hi"),
            ContextMessage::text(Role::Assistant, "hi"),
        ];
        assert_eq!(
            context_document(&ctx).unwrap(),
            r#"{"messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hi"}]}"#
        );
        assert_eq!(context_document(&[]).unwrap(), r#"{"messages":[]}"#);
    }

    #[test]
    fn context_json_matches_spec_example() {
        let ctx = [
            ContextMessage::text(Role::User, "hi"),
            ContextMessage::text(Role::Assistant, "hello"),
        ];
        let bytes = context_json_input("", &ctx, "again").unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"system_prompt":"","messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hello"},{"role":"user","kind":"message","content":"again"}]}"#
        );
    }

    #[test]
    fn deserializes_with_default_kind_and_round_trips() {
        let msg: ContextMessage = serde_json::from_str(r#"{"role":"user","content":"a"}"#).unwrap();
        assert_eq!(msg, ContextMessage::text(Role::User, "a"));
        let back: ContextMessage =
            serde_json::from_str(&serde_json::to_string(&tool_call()).unwrap()).unwrap();
        assert_eq!(back.tool_input.unwrap().get(), r#"{"z":1.50,"a":[]}"#);
    }
}
