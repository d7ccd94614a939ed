//! The `session/update` params of tool rows (camel dialect), one line each
//! where a test spells out the updates a turn sent.

use serde_json::{json, Value};

use super::sessions::upd;

/// A `tool_call` update of `session`: call `id` of tool `name` with `input`.
pub fn tool_call_upd(session: &str, id: &str, name: &str, input: Value) -> Value {
    upd(
        session,
        "tool_call",
        json!({"toolCallId": id, "name": name, "rawInput": input}),
    )
}

/// A `tool_result` update of `session`: call `id` of tool `name` gave `output`.
pub fn tool_result_upd(session: &str, id: &str, name: &str, output: &str) -> Value {
    upd(
        session,
        "tool_result",
        json!({"toolCallId": id, "name": name, "rawOutput": output}),
    )
}
