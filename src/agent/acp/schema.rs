//! The ACP v1 messages the host reads, as minimal serde types (field names
//! as on the wire, camelCase; unknown members ignored).
//!
//! Not the SDK's schema crate: it turns on `serde_json/preserve_order` for
//! the whole build, which reorders every JSON object this daemon writes
//! (docs/decisions.md). What we send is written with `json!` and checked
//! against the protocol's examples in the tests.

use serde::Deserialize;
use serde_json::Value;

/// The protocol version we speak.
pub const PROTOCOL_VERSION: u64 = 1;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: u64,
    #[serde(default)]
    pub agent_capabilities: AgentCapabilities,
    #[serde(default)]
    pub auth_methods: Vec<AuthMethod>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default)]
    pub load_session: bool,
}

#[derive(Debug, Deserialize)]
pub struct AuthMethod {
    pub id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    pub stop_reason: String,
}

/// `session/update` params; `update` stays raw (its `sessionUpdate` says
/// which kind it is, and tool calls are kept as sent).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: Value,
}

/// The text of a content block, when it is a text block.
pub fn text_of(content: &Value) -> Option<&str> {
    (content.get("type")? == "text")
        .then(|| content.get("text")?.as_str())
        .flatten()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub tool_call: PermissionToolCall,
    #[serde(default)]
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionToolCall {
    pub tool_call_id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`.
    pub kind: String,
}
