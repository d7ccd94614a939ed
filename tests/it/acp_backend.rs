//! `backend = "acp"`: the daemon hosting the ACP test agent
//! (examples/acp_test_agent.rs) over its stdio, driven over the real socket:
//! every update mapping, permissions, confined `fs/*`, unserved requests,
//! authentication, the SQLite link and the config keys.

// Unix only: one test plants a symlink (std::os::unix::fs::symlink).

use crate::common;

use common::acp::{db_int, db_rows, AcpEnv};
use common::acp_agent::{
    acp_client, acp_config, events, new_acp_session, plan_step, say, toml_str, wait_update,
};
use common::assert::assert_error_exact;
use common::errors::agent_failed;
use serde_json::{json, Value};

fn env(agent_lines: &str, daemon_lines: &str) -> AcpEnv {
    AcpEnv::new(&acp_config(agent_lines, daemon_lines))
}

#[test]
fn chunks_thoughts_and_tool_calls_are_mapped_exactly() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "acp");
    // `plan` sends the six ACP updates forwarded as our extra types, in
    // order, and an image chunk (not forwarded).
    let t = rpc.prompt_ok(
        "s-1",
        "say hello\nplan\nthink hmm\ntool t1 read Read foo.rs",
    );
    let output = r#"{"content":[{"content":{"text":"done","type":"text"},"type":"content"}],"rawOutput":{"ok":true},"status":"completed"}"#;
    assert_eq!(
        events(&t),
        vec![
            say("s-1", "hello"),
            plan_step("s-1"),
            json!({"sessionId": "s-1", "type": "available_commands",
                   "availableCommands": [{"description": "Search", "input": {"hint": "query"}, "name": "web"}]}),
            json!({"sessionId": "s-1", "type": "current_mode", "currentModeId": "ask"}),
            json!({"sessionId": "s-1", "type": "usage", "used": 1200, "size": 200000,
                   "cost": {"amount": 0.25, "currency": "USD"}}),
            json!({"sessionId": "s-1", "type": "config_options", "configOptions": []}),
            json!({"sessionId": "s-1", "type": "session_info", "title": "Fix it"}),
            json!({"sessionId": "s-1", "type": "agent_thought_chunk", "text": "hmm"}),
            json!({"sessionId": "s-1", "type": "tool_call", "toolCallId": "t1", "name": "read",
                   "rawInput": {"kind": "read", "rawInput": {"arg": 1}, "status": "pending", "title": "Read foo.rs"}}),
            json!({"sessionId": "s-1", "type": "tool_result", "toolCallId": "t1", "name": "read",
                   "rawOutput": output}),
        ]
    );
    assert_eq!(
        t.turn_complete(),
        &json!({"sessionId": "s-1", "type": "turn_complete", "outcome": "completed", "content": "hello"})
    );
    assert_eq!(t.result()["stop_reason"], "end_turn");
    // The transcript has the tool call and its result as rows.
    let rows = rpc.messages("s-1");
    let kinds: Vec<&str> = rows
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or(""))
        .collect();
    assert!(
        kinds.contains(&"tool_call") && kinds.contains(&"tool_result"),
        "{rows:?}"
    );
}

#[test]
fn a_plain_prompt_is_answered_and_the_link_is_in_sqlite() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "chat");
    let t = rpc.prompt_ok("s-1", "hi there");
    assert_eq!(events(&t), vec![say("s-1", "you said: hi there")]);
    assert_eq!(
        t.result(),
        &json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "you said: hi there"})
    );
    let rows = db_rows(
        &e.db(),
        "SELECT session_id || '|' || agent_alias || '|' || substr(agent_session_id, 1, 3) || '|' || context_losses FROM agent_session_links",
    );
    assert_eq!(rows, ["s-1|acp|ts-|0"]);
    // A second turn reuses the process and its session: it remembers the first.
    let t = rpc.prompt_ok("s-1", "history");
    assert_eq!(t.text(), "history: 1");
}

#[test]
fn stop_reasons_become_outcomes() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "chat");
    let t = rpc.prompt("s-1", "say x\nstop max_tokens");
    assert_eq!(t.turn_complete()["outcome"], "completed");
    let t = rpc.prompt("s-1", "say x\nstop refusal");
    assert_eq!(t.turn_complete()["outcome"], "failed");
    agent_failed(
        t.error(),
        "the ACP agent refused the prompt (stop reason refusal)",
    );
}

fn approve(rpc: &mut common::acp::Rpc, sid: &str, decision: &str) -> Value {
    let req = wait_update(rpc, |u| u["type"] == "approval_request");
    assert_eq!(req["toolName"], "edit");
    assert_eq!(req["argumentsSummary"], "Edit f1");
    rpc.ok(
        "session/approve",
        json!({"session_id": sid, "request_id": req["requestId"], "decision": decision}),
    )
}

#[test]
fn permission_requests_are_approvals_mapped_onto_the_offered_options() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "chat");
    for (decision, said) in [
        ("allow_once", "permission: yes"),
        ("reject", "permission: no"),
        ("allow_always", "permission: always"),
    ] {
        let id = rpc.start_prompt("s-1", "ask f1");
        assert_eq!(approve(&mut rpc, "s-1", decision)["acknowledged"], true);
        let t = rpc.finish_turn("s-1", &id, common::RECV_TIMEOUT);
        assert_eq!(t.text(), said, "{decision}: {:?}", t.updates());
        let results = t.of_type("tool_result");
        let status = if said == "permission: no" {
            "failed"
        } else {
            "completed"
        };
        assert_eq!(results.len(), 1);
        assert_eq!(
            results[0]["rawOutput"],
            format!(r#"{{"status":"{status}"}}"#)
        );
    }
    // After allow_always, the same tool is allowed without asking.
    let t = rpc.prompt_ok("s-1", "ask f1");
    assert!(
        t.of_type("approval_request").is_empty(),
        "{:?}",
        t.updates()
    );
    assert_eq!(t.text(), "permission: always");
}

#[test]
fn an_unanswered_permission_request_becomes_the_permission_default() {
    for (default, said) in [
        ("reject", "permission: no"),
        ("allow_once", "permission: yes"),
    ] {
        let e = env(
            &format!("permission_default = {}", toml_str(default)),
            "approval_timeout_secs = 1",
        );
        let mut rpc = acp_client(&e, "chat");
        let t = rpc.prompt_ok("s-1", "ask f1");
        assert_eq!(t.of_type("approval_request").len(), 1);
        assert_eq!(t.text(), said, "{default}");
    }
}

/// §8.12: an approval whose client is gone resolves `unreachable`;
/// for an ACP agent that is `permission_default` (docs/agents.md), mapped
/// onto the option of that kind the agent offered.
#[test]
fn a_permission_request_after_the_client_left_becomes_the_permission_default() {
    for (default, option, status) in [
        ("reject", "no", "failed"),
        ("allow_once", "yes", "completed"),
    ] {
        let e = env(&format!("permission_default = {}", toml_str(default)), "");
        let mut rpc = e.rpc();
        new_acp_session(&mut rpc, "s-1", "acp");
        let prompt = "say waiting\nsleep 300\nask f1";
        let _ = rpc.start_prompt("s-1", prompt);
        wait_update(&mut rpc, |u| u["text"] == "waiting");
        // The client leaves while the agent sleeps: it asks after that.
        drop(rpc);
        let mut other = e.rpc();
        let said = format!("permission: {option}");
        let checkpoints = "SELECT COUNT(*) FROM acp_turn_checkpoints";
        let rows = common::wait::eventually("the turn finalized", common::RECV_TIMEOUT, || {
            let done = db_int(&e.db(), checkpoints) == 0;
            done.then(|| other.messages("s-1"))
        });
        let rows: Vec<Value> = rows
            .iter()
            .map(|r| json!([r["role"], r["kind"], r["content"], r["tool_name"]]))
            .collect();
        // The agent received `selected` with the option of the default's
        // kind (it says the option id); no row for the approval itself.
        assert_eq!(
            rows,
            vec![
                json!(["user", "message", prompt, null]),
                json!(["assistant", "message", "waiting", null]),
                json!(["assistant", "tool_call", "", "edit"]),
                json!([
                    "tool",
                    "tool_result",
                    format!(r#"{{"status":"{status}"}}"#),
                    "edit"
                ]),
                json!(["assistant", "message", said, null]),
            ],
            "{default}"
        );
    }
}

#[test]
fn fs_requests_are_served_inside_the_working_directory_only() {
    let e = env("", "");
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "chat")["workspace_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    let outside = e.config_dir().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, format!("{ws}/link")).unwrap();
    let t = rpc.prompt_ok(
        "s-1",
        &format!("write {ws}/sub/a.txt hello world\nread {ws}/sub/a.txt"),
    );
    assert_eq!(t.text(), "wroteread: hello world");
    assert_eq!(
        std::fs::read(format!("{ws}/sub/a.txt")).unwrap(),
        b"hello world"
    );
    let leftovers: Vec<_> = std::fs::read_dir(format!("{ws}/sub")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left");
    for path in [
        format!("{ws}/../outside.txt"),
        outside.to_string_lossy().into_owned(),
        format!("{ws}/link"),
        "relative.txt".to_owned(),
    ] {
        let t = rpc.prompt_ok("s-1", &format!("read {path}"));
        assert_eq!(t.text(), "fs error -32602", "{path}");
        let t = rpc.prompt_ok("s-1", &format!("write {path} x"));
        assert_eq!(t.text(), "fs error -32602", "{path}");
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    let t = rpc.prompt_ok("s-1", &format!("read {ws}/missing"));
    assert_eq!(t.text(), "fs error -32002");
}

#[test]
fn with_fs_off_and_for_terminal_requests_the_agent_gets_method_not_found() {
    let e = env("fs = \"off\"", "");
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "chat")["workspace_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    let t = rpc.prompt_ok("s-1", &format!("read {ws}/a\nunknown"));
    assert_eq!(t.text(), "fs error -32601terminal error -32601");
}

#[test]
fn authentication_uses_the_agents_env() {
    let e = env(
        "env = { ACP_TEST_AUTH = \"1\", ACP_TEST_TOKEN = \"secret\" }",
        "",
    );
    let mut rpc = acp_client(&e, "chat");
    assert_eq!(rpc.prompt_ok("s-1", "say in").text(), "in");

    let e = env(
        "env = { ACP_TEST_AUTH = \"1\", ACP_TEST_TOKEN = \"wrong\" }",
        "",
    );
    let mut rpc = acp_client(&e, "chat");
    let t = rpc.prompt("s-1", "say in");
    agent_failed(
        t.error(),
        "the ACP agent answered authenticate with error -32000: authentication failed",
    );
}

#[test]
fn acp_keys_are_validated_at_staging() {
    let e = env("", "");
    let mut rpc = e.rpc();
    for (prop, value, message) in [
        (
            "agents.acp.load_session",
            json!("sometimes"),
            r#"invalid configuration: agents.acp.load_session: unknown load_session "sometimes" (expected "auto" or "never")"#,
        ),
        (
            "agents.acp.permission_default",
            json!("allow_always"),
            r#"invalid configuration: agents.acp.permission_default: unknown permission_default "allow_always" (expected "reject" or "allow_once")"#,
        ),
        (
            "agents.acp.fs",
            json!("all"),
            r#"invalid configuration: agents.acp.fs: unknown fs "all" (expected "workspace" or "off")"#,
        ),
        (
            "agents.acp.command",
            json!([]),
            r#"invalid configuration: agents.acp.command: required and non-empty for backend "acp""#,
        ),
    ] {
        let err = rpc.fails("config/set", json!({"prop": prop, "value": value}));
        assert_error_exact(&err, -32602, Some(message), Some(json!({"path": prop})));
    }
    let err = rpc.fails(
        "config/set",
        json!({"prop": "agents.acp.terminal", "value": "no"}),
    );
    assert_eq!(err["code"], -32602, "{err}");
    rpc.ok(
        "config/set",
        json!({"prop": "agents.acp.load_session", "value": "never"}),
    );
    rpc.ok(
        "config/set",
        json!({"prop": "agents.acp.terminal", "value": true}),
    );
}

#[test]
fn attachments_reach_the_agent_as_resource_links_into_the_workspace() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "chat");
    let id = rpc.send(
        "session/prompt",
        json!({"session_id": "s-1", "prompt": "links",
               "attachments": [common::files::entry(b"hello", Some("notes.txt"))]}),
    );
    let t = rpc.finish_turn("s-1", &id, common::RECV_TIMEOUT);
    let text = t.text();
    let uri = text
        .strip_prefix("links: file://")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(uri.contains("/uploads/") && uri.ends_with(".txt"), "{uri}");
    assert_eq!(std::fs::read(uri).unwrap(), b"hello");
}

#[test]
fn a_changed_command_or_env_restarts_the_agent_and_reloads_its_session() {
    let e = env("", "");
    let mut rpc = acp_client(&e, "chat");
    let first = rpc.prompt_ok("s-1", "pid").text();
    assert_eq!(
        rpc.prompt_ok("s-1", "pid").text(),
        first,
        "reused while unchanged"
    );
    rpc.ok(
        "config/set",
        json!({"prop": "agents.acp.env", "value": {"X": "1"}}),
    );
    let second = rpc.prompt_ok("s-1", "pid").text();
    assert_ne!(second, first);
    assert_eq!(rpc.prompt_ok("s-1", "history").text(), "history: 3");
}
