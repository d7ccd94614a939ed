//! A client that writes frames exactly as zerocode does and checks answers
//! with the rules of zerocode's decoders. Read from zeroclaw-labs/zeroclaw
//! at commit 15d28660ff5bdc29836252648126ce28de86b9df (`apps/zerocode`,
//! package version 0.8.4):
//!
//! - requests are `serde_json::to_string` of `JsonRpcRequest {jsonrpc,
//!   method, params, id}` (that member order), `params` built with `json!`
//!   (a `BTreeMap`: sorted keys, `None` written as an explicit `null`), ids
//!   `zc-out-<n>` from 0 (`jsonrpc.rs`);
//! - `session/prompt` is a notification (`chat.rs` `spawn_prompt`);
//! - a frame with `id` and `method` is a daemon request, with `id` only an
//!   answer, with `method` only a notification (`client.rs` `route_inbound_frame`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{describe, Client, RECV_TIMEOUT};

/// The zerocode commit the shapes here come from.
pub const ZEROCODE_COMMIT: &str = "15d28660ff5bdc29836252648126ce28de86b9df";
/// Its package version: it refuses a daemon whose snake `server_version` differs.
pub const ZEROCODE_VERSION: &str = "0.8.4";

/// JSON text with object keys sorted, as serde_json's default `Map` writes it.
pub fn sorted(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), sorted(&m[*k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(sorted).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// `JsonRpcRequest` (with an id) or `JsonRpcNotification` as zerocode serializes them.
fn request_text(method: &str, params: &Value, id: Option<&str>) -> String {
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":{},"params":{}"#,
        Value::from(method),
        sorted(params)
    );
    match id {
        Some(id) => format!(r#"{head},"id":"{id}"}}"#),
        None => format!("{head}}}"),
    }
}

/// An answer: `result`, or `(code, message)`.
pub type Answer = Result<Value, (i64, String)>;

/// zerocode's connection.
#[derive(Debug)]
pub struct Zerocode {
    pub client: Client,
    next: u64,
    /// Notifications received while waiting for answers (`method`, `params`).
    pub notifications: VecDeque<(String, Value)>,
    /// Daemon requests received while waiting (`elicitation/create`).
    pub inbound: VecDeque<Value>,
    /// Every frame written, in order.
    pub sent: Vec<String>,
}

impl Zerocode {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            next: 0,
            notifications: VecDeque::new(),
            inbound: VecDeque::new(),
            sent: Vec::new(),
        }
    }

    fn write(&mut self, line: String) {
        self.client.send_line(&line);
        self.sent.push(line);
    }

    /// `RpcOutbound::request`: writes the frame; returns its id.
    pub fn send(&mut self, method: &str, params: &Value) -> String {
        let id = format!("zc-out-{}", self.next);
        self.next += 1;
        let line = request_text(method, params, Some(&id));
        self.write(line);
        id
    }

    /// `RpcOutbound::notify`.
    pub fn notify(&mut self, method: &str, params: &Value) {
        let line = request_text(method, params, None);
        self.write(line);
    }

    /// `RpcOutbound::respond` to a daemon request.
    pub fn respond(&mut self, id: &Value, result: &Value) {
        let line = format!(
            r#"{{"jsonrpc":"2.0","result":{},"id":{}}}"#,
            sorted(result),
            id
        );
        self.write(line);
    }

    /// Reads one frame and routes it; returns the answer if it is one.
    fn route_one(&mut self, deadline: Instant) -> Option<(String, Answer)> {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = self
            .client
            .try_recv_line(left.max(Duration::from_millis(1)))
            .unwrap_or_else(|e| panic!("zerocode waited for a frame: got {}", describe(&e)));
        let frame: Value = serde_json::from_str(&line).expect("zerocode skips non-JSON; we fail");
        let id = frame.get("id").cloned();
        let method = frame
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (id, method) {
            (Some(id), Some(_)) if !id.is_null() => {
                self.inbound.push_back(frame);
                None
            }
            (Some(id), None) => {
                let id = id
                    .as_str()
                    .expect("zerocode only matches string ids")
                    .to_owned();
                let answer = match frame.get("error") {
                    Some(e) => Err((
                        e["code"].as_i64().expect("error.code is an integer"),
                        e["message"]
                            .as_str()
                            .expect("error.message is a string")
                            .to_owned(),
                    )),
                    None => Ok(frame.get("result").cloned().unwrap_or(Value::Null)),
                };
                Some((id, answer))
            }
            (None, Some(m)) => {
                let params = frame.get("params").cloned().unwrap_or(Value::Null);
                self.notifications.push_back((m, params));
                None
            }
            _ => panic!("a frame zerocode cannot route: {line}"),
        }
    }

    /// Waits for the answer to `id`, routing everything else.
    pub fn answer(&mut self, id: &str) -> Answer {
        let deadline = Instant::now() + RECV_TIMEOUT;
        loop {
            if let Some((got, answer)) = self.route_one(deadline) {
                assert_eq!(got, id, "an answer to an id zerocode did not wait for");
                return answer;
            }
        }
    }

    /// `RpcClient::call`: a request and its answer.
    pub fn call(&mut self, method: &str, params: &Value) -> Answer {
        let id = self.send(method, params);
        self.answer(&id)
    }

    /// A call zerocode exits on an error from (`?`): the result.
    pub fn must(&mut self, method: &str, params: &Value) -> Value {
        match self.call(method, params) {
            Ok(v) => v,
            Err((code, msg)) => panic!("zerocode would exit: RPC {method}: {msg} ({code})"),
        }
    }

    /// Reads until a notification satisfying `pred` arrives; returns it and every one before.
    pub fn until_notification(
        &mut self,
        pred: impl Fn(&str, &Value) -> bool,
    ) -> Vec<(String, Value)> {
        let deadline = Instant::now() + RECV_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            while let Some((m, p)) = self.notifications.pop_front() {
                let hit = pred(&m, &p);
                seen.push((m, p));
                if hit {
                    return seen;
                }
            }
            if let Some((id, _)) = self.route_one(deadline) {
                panic!("an unexpected answer to {id}");
            }
        }
    }

    /// Reads until a daemon request arrives.
    pub fn until_inbound(&mut self) -> Value {
        let deadline = Instant::now() + RECV_TIMEOUT;
        loop {
            if let Some(r) = self.inbound.pop_front() {
                return r;
            }
            if let Some((id, _)) = self.route_one(deadline) {
                panic!("an unexpected answer to {id}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// zerocode's decoders, as checks

fn obj<'v>(v: &'v Value, what: &str) -> &'v Map<String, Value> {
    v.as_object()
        .unwrap_or_else(|| panic!("{what} must be an object: {v}"))
}

fn string(v: &Value, key: &str, what: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}.{key} must be a string: {v}"))
        .to_owned()
}

fn boolean(v: &Value, key: &str, what: &str) -> bool {
    v.get(key)
        .and_then(Value::as_bool)
        .unwrap_or_else(|| panic!("{what}.{key} must be a bool: {v}"))
}

/// `#[serde(default)] usize`: absent, or a non-negative integer.
fn opt_usize(v: &Value, key: &str, what: &str) {
    if let Some(x) = v.get(key) {
        assert!(x.is_u64(), "{what}.{key} must be a usize: {v}");
    }
}

fn opt_string(v: &Value, key: &str, what: &str) {
    if let Some(x) = v.get(key) {
        assert!(
            x.is_string() || x.is_null(),
            "{what}.{key} must be a string or null: {v}"
        );
    }
}

fn opt_strings(v: &Value, key: &str, what: &str) {
    if let Some(x) = v.get(key) {
        let ok = x.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        assert!(ok, "{what}.{key} must be a string array: {v}");
    }
}

/// `parse_initialize_response`: the version check, `server_pid` as u32,
/// `commands` absent or `Vec<CommandDescriptor>`.
pub fn check_initialize(r: &Value) {
    obj(r, "initialize");
    let v = r
        .get("server_version")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    assert_eq!(v, ZEROCODE_VERSION, "zerocode refuses: Version mismatch");
    if let Some(pid) = r.get("server_pid") {
        assert!(pid.as_u64().is_some_and(|p| p <= u32::MAX as u64), "{r}");
    }
    opt_string(r, "tui_id", "initialize");
    opt_string(r, "tui_sig", "initialize");
    if let Some(cmds) = r.get("commands") {
        for c in cmds.as_array().expect("commands must be an array") {
            string(c, "id", "command");
            string(c, "name", "command");
            opt_strings(c, "aliases", "command");
        }
    }
}

const SECTION_SHAPES: [&str; 4] = [
    "direct_form",
    "one_tier_alias_map",
    "typed_family_map",
    "backend_picker",
];

/// `ConfigSectionsResult`.
pub fn check_sections(r: &Value) -> Vec<Value> {
    let sections = r["sections"].as_array().expect("sections must be an array");
    for s in sections {
        for k in ["key", "label", "help"] {
            string(s, k, "section");
        }
        boolean(s, "completed", "section");
        opt_string(s, "group", "section");
        opt_string(s, "cost_category", "section");
        if let Some(shape) = s.get("shape").filter(|v| !v.is_null()) {
            assert!(
                SECTION_SHAPES.contains(&shape.as_str().unwrap_or("")),
                "section.shape: {s}"
            );
        }
    }
    sections.clone()
}

/// `ConfigTemplatesResult`.
pub fn check_templates(r: &Value) {
    for t in r["templates"]
        .as_array()
        .expect("templates must be an array")
    {
        string(t, "path", "template");
    }
}

/// `AgentsStatusResult`; the aliases of the enabled agents (what the chat pane keeps).
pub fn check_agents(r: &Value) -> Vec<String> {
    let agents = r["agents"].as_array().expect("agents must be an array");
    let mut enabled = Vec::new();
    for a in agents {
        let alias = string(a, "alias", "agent");
        opt_usize(a, "live_sessions", "agent");
        opt_usize(a, "persisted_sessions", "agent");
        opt_strings(a, "channels", "agent");
        if boolean(a, "enabled", "agent") {
            enabled.push(alias);
        }
    }
    enabled
}

const PROP_KINDS: [&str; 9] = [
    "string",
    "bool",
    "integer",
    "float",
    "enum",
    "alias_ref",
    "string_array",
    "object_array",
    "object",
];

/// `ConfigListResult` (`ConfigFieldEntry`).
pub fn check_config_list(r: &Value) -> usize {
    let entries = r["entries"].as_array().expect("entries must be an array");
    for e in entries {
        for k in ["path", "category", "type_hint", "description"] {
            string(e, k, "entry");
        }
        let kind = string(e, "kind", "entry");
        assert!(PROP_KINDS.contains(&kind.as_str()), "entry.kind: {e}");
        boolean(e, "populated", "entry");
        boolean(e, "is_secret", "entry");
        opt_strings(e, "enum_variants", "entry");
        opt_string(e, "section", "entry");
        assert!(
            e.get("tab").is_none(),
            "no tab: its enum has no default wire name here"
        );
    }
    entries.len()
}

/// `ConfigMapKeysResult`.
pub fn check_map_keys(r: &Value) -> Vec<String> {
    r["keys"]
        .as_array()
        .expect("keys must be an array")
        .iter()
        .map(|k| k.as_str().expect("keys are strings").to_owned())
        .collect()
}

/// `SessionNewResult`.
pub fn check_session_new(r: &Value) -> String {
    opt_string(r, "workspace_dir", "session/new");
    string(r, "session_id", "session/new")
}

/// `LogsQueryResult`: events, the cursors, `at_end`.
pub fn check_logs_query(r: &Value) -> Vec<Value> {
    let events = r["events"].as_array().expect("events must be an array");
    match &r["next_cursor"] {
        Value::Null => {}
        Value::Array(a) => assert!(a.len() == 2 && a.iter().all(Value::is_string), "{r}"),
        other => panic!("next_cursor: {other}"),
    }
    assert!(r["next_cursor_line_offset"].is_null() || r["next_cursor_line_offset"].is_u64());
    boolean(r, "at_end", "logs/query");
    events.iter().for_each(check_log_entry);
    events.clone()
}

/// `LogEntry::from_value`: `@timestamp` string, `severity_number` u8, `event` present.
pub fn check_log_entry(v: &Value) {
    string(v, "@timestamp", "log entry");
    assert!(
        v["severity_number"].as_u64().is_some_and(|n| n <= 255),
        "severity_number: {v}"
    );
    let event = v.get("event").expect("a log entry has event");
    opt_string(event, "category", "log entry.event");
    opt_string(event, "action", "log entry.event");
    opt_string(v, "id", "log entry");
    opt_string(v, "message", "log entry");
}

/// `SessionListResult` (`SessionEntry`): the ids zerocode's picker offers.
pub fn check_session_list(r: &Value) -> Vec<String> {
    let sessions = r["sessions"].as_array().expect("sessions must be an array");
    sessions
        .iter()
        .map(|e| {
            for k in ["session_key", "created_at", "last_activity"] {
                string(e, k, "session entry");
            }
            assert!(e["message_count"].is_u64(), "message_count: {e}");
            opt_string(e, "agent_alias", "session entry");
            opt_string(e, "name", "session entry");
            string(e, "session_id", "session entry")
        })
        .collect()
}

/// `SessionGitBranchResult`.
pub fn check_git_branch(r: &Value) -> (Option<String>, Option<String>) {
    opt_string(r, "branch", "session/git_branch");
    opt_string(r, "hash", "session/git_branch");
    (
        r["branch"].as_str().map(str::to_owned),
        r["hash"].as_str().map(str::to_owned),
    )
}

/// `parse_session_update`: the typed update, or `None` for one zerocode ignores.
pub fn parse_update(p: &Value) -> Option<(String, Value)> {
    let kind = p.get("type")?.as_str()?.to_owned();
    p.get("session_id")?.as_str()?;
    let need = |keys: &[&str]| keys.iter().all(|k| p.get(*k).is_some_and(Value::is_string));
    let ok = match kind.as_str() {
        "agent_message_chunk" | "agent_thought_chunk" => need(&["text"]),
        "tool_call" => need(&["tool_call_id", "name"]) && p.get("raw_input").is_some(),
        "tool_result" => need(&["tool_call_id", "raw_output"]),
        "approval_request" => {
            need(&["request_id", "tool_name", "arguments_summary"])
                && p.get("timeout_secs").is_some()
        }
        "turn_complete" => true,
        _ => return None,
    };
    assert!(ok, "zerocode drops this {kind} update: {p}");
    Some((kind, p.clone()))
}
