//! The directives of the ACP test agent (a module of
//! examples/acp_test_agent.rs) that call the client or report a tool:
//! `tool`, `ask`, `read`, `write`.

use serde_json::json;

use super::Agent;

impl Agent {
    pub(super) fn tool(&mut self, session: &str, rest: &str) {
        let mut parts = rest.splitn(3, ' ');
        let (id, kind, title) = (
            parts.next().unwrap_or("t"),
            parts.next().unwrap_or("other"),
            parts.next().unwrap_or(""),
        );
        self.update(
            session,
            json!({"sessionUpdate": "tool_call", "toolCallId": id,
            "title": title, "kind": kind, "status": "pending", "rawInput": {"arg": 1}}),
        );
        self.update(
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": "in_progress"}),
        );
        self.update(
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": "completed", "rawOutput": {"ok": true},
            "content": [{"type": "content", "content": {"type": "text", "text": "done"}}]}),
        );
    }

    pub(super) fn ask(&mut self, session: &str, rest: &str) -> String {
        let (id, title) = match rest.split_once(' ') {
            Some((id, t)) => (id, serde_json::from_str(t).unwrap_or_else(|_| t.to_owned())),
            None => (rest, format!("Edit {rest}")),
        };
        self.update(
            session,
            json!({"sessionUpdate": "tool_call", "toolCallId": id,
            "title": title, "kind": "edit", "status": "pending"}),
        );
        let r = self.request(
            "session/request_permission",
            json!({"sessionId": session,
                   "toolCall": {"toolCallId": id, "title": title, "kind": "edit"},
                   "options": [
                       {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                       {"optionId": "always", "name": "Always", "kind": "allow_always"},
                       {"optionId": "no", "name": "No", "kind": "reject_once"}]}),
        );
        let outcome = r.map(|r| r["result"]["outcome"].clone());
        let said = match outcome {
            Some(o) if o["outcome"] == "selected" => {
                format!("permission: {}", o["optionId"].as_str().unwrap_or(""))
            }
            Some(_) => "permission: cancelled".to_owned(),
            None => "permission: invalid".to_owned(),
        };
        let status = if said == "permission: yes" || said == "permission: always" {
            "completed"
        } else {
            "failed"
        };
        self.update(
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
            "status": status}),
        );
        said
    }

    pub(super) fn read(&mut self, session: &str, path: &str) -> String {
        let r = self.request(
            "fs/read_text_file",
            json!({"sessionId": session, "path": path}),
        );
        match r {
            Some(r) if r.get("result").is_some() => {
                format!("read: {}", r["result"]["content"].as_str().unwrap_or(""))
            }
            Some(r) => format!("fs error {}", r["error"]["code"]),
            None => "fs error none".into(),
        }
    }

    pub(super) fn write(&mut self, session: &str, rest: &str) -> String {
        let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
        let params = json!({"sessionId": session, "path": path, "content": content});
        match self.request("fs/write_text_file", params) {
            Some(r) if r.get("result").is_some() => "wrote".into(),
            Some(r) => format!("fs error {}", r["error"]["code"]),
            None => "fs error none".into(),
        }
    }
}
