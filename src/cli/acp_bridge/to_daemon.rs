//! What the editor says, in the daemon's terms: the `initialize` answer
//! (what the bridge can do), a prompt's content blocks as our prompt text
//! and attachments, and a permission answer as a `session/approve`
//! decision (docs/clients.md has the table).

use base64::Engine;
use serde_json::{json, Value};

use super::to_acp::Approval;

/// ACP protocol version 1, the deployed one.
pub const PROTOCOL_VERSION: u64 = 1;

/// The `initialize` answer: only what is true.
pub fn initialize_result() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": false, "sse": false},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
        },
        // The socket's OS permissions are the authentication.
        "authMethods": [],
        "agentInfo": {"name": "zeroclaw", "title": "ZeroClaw", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// A prompt as `session/prompt` takes it.
#[derive(Debug, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// `file/attach` entries (base64), one per embedded resource or image.
    pub attachments: Vec<Value>,
}

/// The content blocks of an ACP prompt: text joined as it came; a
/// resource link as a line naming it; an embedded resource or an image as
/// an attachment (stored in the agent's workspace, its marker added to the
/// prompt by the daemon). Audio (not advertised) is refused.
pub fn prompt(blocks: &[Value]) -> Result<Prompt, String> {
    let mut text = String::new();
    let mut attachments = Vec::new();
    for b in blocks {
        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or_default();
        match s("type") {
            "text" => text.push_str(s("text")),
            "resource_link" => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!("[Link: {}] {}", s("name"), s("uri")));
            }
            "resource" => {
                let r = b.get("resource").cloned().unwrap_or(Value::Null);
                let rs = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
                let data = match (rs("text"), rs("blob")) {
                    (Some(t), _) => base64::engine::general_purpose::STANDARD.encode(t),
                    (None, Some(blob)) => blob,
                    (None, None) => return Err("an embedded resource without text or blob".into()),
                };
                let mut entry = json!({"data_b64": data, "filename": file_name(&rs("uri").unwrap_or_default())});
                if let Some(m) = rs("mimeType") {
                    entry["mime_type"] = json!(m);
                }
                attachments.push(entry);
            }
            "image" => {
                let ext = image_ext(s("mimeType"));
                let name = match s("uri") {
                    "" => format!("image.{ext}"),
                    uri => file_name(uri),
                };
                attachments.push(
                    json!({"data_b64": s("data"), "filename": name, "mime_type": s("mimeType")}),
                );
            }
            other => return Err(format!("content of type \"{other}\" is not supported")),
        }
    }
    if text.is_empty() && attachments.is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(Prompt { text, attachments })
}

/// The file extension of an image's MIME type (`image/png` → `png`): only
/// a short run of letters, digits and `+.-` is taken from the editor's
/// text, else `png`, so that the name made from it stays one short path
/// segment (a `/` or a long subtype would make a name the daemon refuses).
fn image_ext(mime: &str) -> &str {
    match mime.strip_prefix("image/") {
        Some(ext)
            if (1..=16).contains(&ext.len())
                && ext
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')) =>
        {
            ext
        }
        _ => "png",
    }
}

/// The last segment of a URI (`file:///a/b.rs` → `b.rs`), else `resource`.
fn file_name(uri: &str) -> String {
    let name = uri.rsplit('/').next().unwrap_or_default();
    let name: String = name.chars().take(200).collect();
    if name.is_empty() {
        "resource".into()
    } else {
        name
    }
}

/// The `session/request_permission` params for an approval: the three
/// decisions our approvals take without a replacement text, as ACP option
/// kinds. The option ids are the decisions themselves.
pub fn permission_params(a: &Approval, tool_call_id: &str) -> Value {
    let input = serde_json::from_str::<Value>(&a.arguments).unwrap_or_else(|_| json!(a.arguments));
    json!({
        "sessionId": a.session_id,
        "toolCall": {
            "toolCallId": tool_call_id,
            "title": a.tool_name,
            "kind": "other",
            "status": "pending",
            "rawInput": input,
        },
        "options": [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    })
}

/// The decision of the editor's answer: the option it selected; a
/// cancelled request, an error or anything unknown rejects (an approval
/// nobody granted is never a yes).
pub fn decision(answer: &Result<Value, Value>) -> &'static str {
    let selected = answer
        .as_ref()
        .ok()
        .and_then(|r| r.get("outcome"))
        .filter(|o| o.get("outcome").and_then(Value::as_str) == Some("selected"))
        .and_then(|o| o.get("optionId"))
        .and_then(Value::as_str);
    match selected {
        Some("allow_once") => "allow_once",
        Some("allow_always") => "allow_always",
        _ => "reject",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_blocks() {
        let p = prompt(&[
            json!({"type":"text","text":"look at"}),
            json!({"type":"resource_link","name":"a.rs","uri":"file:///w/a.rs"}),
            json!({"type":"resource","resource":{"uri":"file:///w/b.rs","text":"fn b() {}","mimeType":"text/x-rust"}}),
        ])
        .unwrap();
        assert_eq!(p.text, "look at\n[Link: a.rs] file:///w/a.rs");
        assert_eq!(
            p.attachments,
            vec![json!({"data_b64":"Zm4gYigpIHt9","filename":"b.rs","mime_type":"text/x-rust"})]
        );
        assert!(prompt(&[json!({"type":"audio","data":"","mimeType":"audio/wav"})]).is_err());
        assert!(prompt(&[]).is_err());
    }

    #[test]
    fn an_image_name_is_one_short_segment_whatever_its_mime_type() {
        // Found by the fuzz target `bridge_input`: the extension was the
        // whole subtype, `/` and length included.
        let name = |mime: &str| {
            let p = prompt(&[json!({"type":"image","mimeType":mime,"data":"AA=="})]).unwrap();
            p.attachments[0]["filename"].as_str().unwrap().to_owned()
        };
        assert_eq!(name("image/png"), "image.png");
        assert_eq!(name("image/svg+xml"), "image.svg+xml");
        assert_eq!(name("image/a/../../b"), "image.png");
        assert_eq!(name(&format!("image/{}", "x".repeat(300))), "image.png");
        assert_eq!(name("text/plain"), "image.png");
    }

    #[test]
    fn decisions() {
        let sel = |id: &str| Ok(json!({"outcome":{"outcome":"selected","optionId":id}}));
        assert_eq!(decision(&sel("allow_once")), "allow_once");
        assert_eq!(decision(&sel("allow_always")), "allow_always");
        assert_eq!(decision(&sel("reject")), "reject");
        assert_eq!(decision(&sel("bogus")), "reject");
        assert_eq!(
            decision(&Ok(json!({"outcome":{"outcome":"cancelled"}}))),
            "reject"
        );
        assert_eq!(decision(&Err(json!({"code":-32603}))), "reject");
    }
}
