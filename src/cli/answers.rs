//! What `zeroclaw rpc` answers while its request runs (§13): the daemon's
//! requests (`elicitation/create` with `--elicitation-reply`, declined
//! without it; any other refused) and, with `--approve`, every
//! `approval_request` the turn streams.

use serde_json::{json, Value};

/// How the client answers what the daemon asks while a request runs.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// `--approve DECISION`: answer every `approval_request` with it.
    pub approve: Option<&'static str>,
    /// `--elicitation-reply JSON`: the result for every `elicitation/create`.
    pub elicitation_reply: Option<Value>,
}

impl Answers {
    /// The message to send for `msg` (a daemon request or notification),
    /// if any; `next_id` numbers an approval request of ours.
    pub fn reply(&self, msg: &Value, next_id: impl FnOnce() -> u64) -> Option<Value> {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let (Some(id), "elicitation/create") = (msg.get("id"), method) {
            let result = self
                .elicitation_reply
                .clone()
                .unwrap_or_else(|| json!({"action": "decline"}));
            return Some(json!({"jsonrpc": "2.0", "result": result, "id": id}));
        }
        if let Some(id) = msg.get("id") {
            let error = json!({"code": -32601, "message": format!("Unknown method: {method}")});
            return Some(json!({"jsonrpc": "2.0", "error": error, "id": id}));
        }
        let decision = self.approve?;
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let field =
            |camel: &str, snake: &str| params.get(camel).or_else(|| params.get(snake)).cloned();
        if method != "session/update" || field("type", "type") != Some(json!("approval_request")) {
            return None;
        }
        Some(json!({
            "jsonrpc": "2.0",
            "method": "session/approve",
            "params": {
                "session_id": field("sessionId", "session_id"),
                "request_id": field("requestId", "request_id"),
                "decision": decision,
            },
            "id": format!("approve-{}", next_id()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_to_questions_and_approvals() {
        let ask = json!({"jsonrpc": "2.0", "method": "elicitation/create", "id": "zc-out-0"});
        let none = Answers::default();
        assert_eq!(
            none.reply(&ask, || 1),
            Some(json!({"jsonrpc": "2.0", "result": {"action": "decline"}, "id": "zc-out-0"}))
        );
        let other = json!({"jsonrpc": "2.0", "method": "fs/read", "id": 9});
        assert_eq!(
            none.reply(&other, || 1)
                .and_then(|r| r.pointer("/error/code").cloned()),
            Some(json!(-32601))
        );
        let approval = json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "type": "approval_request", "requestId": "r"}});
        assert_eq!(none.reply(&approval, || 1), None);
        let allow = Answers {
            approve: Some("allow_once"),
            elicitation_reply: None,
        };
        let sent = allow.reply(&approval, || 7);
        assert_eq!(
            sent,
            Some(json!({"jsonrpc": "2.0", "method": "session/approve",
                "params": {"session_id": "s", "request_id": "r", "decision": "allow_once"},
                "id": "approve-7"}))
        );
        let chunk = json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"type": "agent_message_chunk", "text": "x"}});
        assert_eq!(allow.reply(&chunk, || 8), None);
    }
}
