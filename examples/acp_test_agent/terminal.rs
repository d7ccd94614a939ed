//! The `terminal/*` directives of the ACP test agent (a module of
//! examples/acp_test_agent.rs): `term JSON` creates a terminal with the
//! `terminal/create` params in JSON (`sessionId` added), waits for its exit,
//! reads its output and releases it, then says
//! `exit <exitStatus> output <output as JSON> truncated <bool>`;
//! `termleave JSON` only creates it and says `created <terminalId>`;
//! `termout ID` asks for the output of terminal ID and says it. Any error
//! is said as `terminal error <code> <message>`.

use serde_json::{json, Value};

use super::Agent;

/// Runs the directive `word` (`term`, `termleave`, `termout`) with `rest`.
pub fn directive(agent: &mut Agent, session: &str, word: &str, rest: &str) -> String {
    if word == "termout" {
        let by = json!({"sessionId": session, "terminalId": rest});
        return call(agent, "terminal/output", by).map_or_else(|e| e, |out| out.to_string());
    }
    let mut params: Value = match serde_json::from_str(rest) {
        Ok(v @ Value::Object(_)) => v,
        _ => return format!("terminal error bad directive {rest}"),
    };
    params["sessionId"] = json!(session);
    let created = match call(agent, "terminal/create", params) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let id = created["terminalId"].clone();
    if word == "termleave" {
        return format!("created {}", id.as_str().unwrap_or(""));
    }
    let by = json!({"sessionId": session, "terminalId": id});
    let steps = call(agent, "terminal/wait_for_exit", by.clone()).and_then(|exit| {
        let out = call(agent, "terminal/output", by.clone())?;
        call(agent, "terminal/release", by.clone())?;
        Ok(format!(
            "exit {exit} output {} truncated {}",
            out["output"], out["truncated"]
        ))
    });
    steps.unwrap_or_else(|e| e)
}

/// One request; its result, or what the agent says of its error.
fn call(agent: &mut Agent, method: &str, params: Value) -> Result<Value, String> {
    match agent.request(method, params) {
        Some(r) if r.get("result").is_some() => Ok(r["result"].clone()),
        Some(r) => Err(format!(
            "terminal error {} {}",
            r["error"]["code"],
            r["error"]["message"].as_str().unwrap_or("")
        )),
        None => Err("terminal error none".into()),
    }
}
