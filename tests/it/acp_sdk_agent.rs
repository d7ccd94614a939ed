//! `backend = "acp"` hosting the agent written with the official
//! SDK's agent side (tests/acp-sdk-agent/), driven over the real socket:
//! the update mapping, permissions, confined `fs/*`, cancel, a crash and a
//! flood mid-turn, and recovery with `session/load` after a kill -9 of the
//! daemon mid-turn. Faults an SDK would never write are
//! tests/it/acp_backend_faults.rs's, with the stdio agent.

use crate::common;

use common::acp::{db_rows, markers, row, shape, AcpEnv, INTERRUPTED};
use common::acp_agent::{
    acp_client, acp_config_for, events, new_acp_session, pid_of, plan_step, say, turn_agent_failed,
    wait_update,
};
use common::acp_sdk_agent::sdk_agent_bin;
use serde_json::json;

/// A daemon hosting the SDK agent as `acp`, or why it cannot be built here.
fn env() -> Result<AcpEnv, String> {
    let bin = sdk_agent_bin()?;
    Ok(AcpEnv::new(&acp_config_for(&bin, "", "")))
}

#[test]
fn chunks_thoughts_and_tool_calls_are_mapped_exactly() {
    let e = ok_or_skip!(env());
    let mut rpc = acp_client(&e, "acp");
    let t = rpc.prompt_ok("s-1", "say hello\nthink hmm\ntool t1 read Read foo.rs");
    // The SDK leaves out `status` when it is the default (`pending`).
    let output = r#"{"content":[{"content":{"text":"done","type":"text"},"type":"content"}],"rawOutput":{"ok":true},"status":"completed"}"#;
    assert_eq!(
        events(&t),
        vec![
            say("s-1", "hello"),
            json!({"sessionId": "s-1", "type": "agent_thought_chunk", "text": "hmm"}),
            json!({"sessionId": "s-1", "type": "tool_call", "toolCallId": "t1", "name": "read",
                   "rawInput": {"kind": "read", "rawInput": {"arg": 1}, "title": "Read foo.rs"}}),
            json!({"sessionId": "s-1", "type": "tool_result", "toolCallId": "t1", "name": "read",
                   "rawOutput": output}),
        ]
    );
    assert_eq!(
        t.turn_complete(),
        &json!({"sessionId": "s-1", "type": "turn_complete", "outcome": "completed", "content": "hello"})
    );
    assert_eq!(t.result()["stop_reason"], "end_turn");
    // The SDK agent's session id is linked to ours in SQLite.
    let link = db_rows(
        &e.db(),
        "SELECT session_id || '|' || agent_alias || '|' || substr(agent_session_id, 1, 4) FROM agent_session_links",
    );
    assert_eq!(link, ["s-1|acp|sdk-"]);
}

#[test]
fn a_plan_update_leaves_the_turn_whole() {
    let e = ok_or_skip!(env());
    let mut rpc = acp_client(&e, "acp");
    let t = rpc.prompt_ok("s-1", "say a\nplan\nsay b");
    // `plan` is forwarded as our extra update type, in turn order.
    assert_eq!(
        events(&t),
        vec![say("s-1", "a"), plan_step("s-1"), say("s-1", "b"),]
    );
    assert_eq!(t.result()["content"], "ab");
}

#[test]
fn a_crash_mid_turn_fails_the_turn_with_its_status_and_the_next_prompt_restarts_it() {
    let e = ok_or_skip!(env());
    let mut rpc = e.rpc();
    new_acp_session(&mut rpc, "s-1", "acp");
    let first = pid_of(&mut rpc, "s-1");
    let t = rpc.prompt("s-1", "say before\ncrash 3");
    turn_agent_failed(&t, "the ACP agent exited with status 3");
    assert_eq!(events(&t), vec![say("s-1", "before")]);
    // A new process, the session loaded (it remembers the `pid` turn).
    assert_ne!(pid_of(&mut rpc, "s-1"), first);
    let t = rpc.prompt_ok("s-1", "history");
    assert_eq!(events(&t), vec![say("s-1", "history: 2")]);
    let rows = rpc.messages("s-1");
    let kept = rows.iter().filter(|r| r["content"] == "before").count();
    assert_eq!(kept, 1, "{rows:?}");
}

#[test]
fn a_flood_to_a_client_that_does_not_read_arrives_whole() {
    let e = ok_or_skip!(env());
    let mut rpc = e.rpc();
    new_acp_session(&mut rpc, "s-1", "acp");
    let id = rpc.start_prompt("s-1", "flood 20000\nsay end");
    // Not reading for a while: the daemon holds back, the SDK queues.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let t = rpc.finish_turn("s-1", &id, std::time::Duration::from_secs(60));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    assert_eq!(t.text(), format!("{}end", ".".repeat(20_000)));
    let chunks = t.of_type("agent_message_chunk").len();
    assert!((1..=20_001).contains(&chunks), "{chunks} chunks");
}

#[test]
fn permission_requests_become_approvals_answered_with_the_chosen_option() {
    let e = ok_or_skip!(env());
    let mut rpc = acp_client(&e, "chat");
    for (decision, said, status) in [
        ("allow_once", "permission: yes", "completed"),
        ("reject", "permission: no", "failed"),
    ] {
        let id = rpc.start_prompt("s-1", "ask f1");
        let req = wait_update(&mut rpc, |u| u["type"] == "approval_request");
        assert_eq!(req["toolName"], "edit");
        assert_eq!(req["argumentsSummary"], "Edit f1");
        let ack = rpc.ok(
            "session/approve",
            json!({"session_id": "s-1", "request_id": req["requestId"], "decision": decision}),
        );
        assert_eq!(ack["acknowledged"], true);
        let t = rpc.finish_turn("s-1", &id, common::RECV_TIMEOUT);
        assert_eq!(t.text(), said, "{decision}: {:?}", t.updates());
        let results = t.of_type("tool_result");
        assert_eq!(results.len(), 1, "{decision}: {:?}", t.updates());
        assert_eq!(
            results[0]["rawOutput"],
            format!(r#"{{"status":"{status}"}}"#)
        );
    }
}

#[test]
fn fs_requests_are_served_inside_the_working_directory_only() {
    let e = ok_or_skip!(env());
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "chat")["workspace_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    let outside = e.config_dir().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    let t = rpc.prompt_ok(
        "s-1",
        &format!("write {ws}/sub/a.txt hello world\nread {ws}/sub/a.txt"),
    );
    assert_eq!(t.text(), "wroteread: hello world");
    assert_eq!(
        std::fs::read(format!("{ws}/sub/a.txt")).unwrap(),
        b"hello world"
    );
    for path in [
        format!("{ws}/../outside.txt"),
        outside.to_string_lossy().into_owned(),
    ] {
        let t = rpc.prompt_ok("s-1", &format!("read {path}"));
        assert_eq!(t.text(), "fs error -32602", "{path}");
        let t = rpc.prompt_ok("s-1", &format!("write {path} x"));
        assert_eq!(t.text(), "fs error -32602", "{path}");
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
}

#[test]
fn cancel_ends_a_hanging_turn_cancelled_and_the_agent_serves_the_next() {
    let e = ok_or_skip!(env());
    let mut rpc = acp_client(&e, "chat");
    let pid = pid_of(&mut rpc, "s-1");
    let id = rpc.start_prompt("s-1", "say waiting\nhang");
    wait_update(&mut rpc, |u| u["text"] == "waiting");
    rpc.ok("session/cancel", json!({"session_id": "s-1"}));
    let t = rpc.finish_turn("s-1", &id, common::RECV_TIMEOUT);
    assert_eq!(t.result()["stop_reason"], "cancelled");
    assert_eq!(t.turn_complete()["outcome"], "cancelled");
    assert_eq!(pid_of(&mut rpc, "s-1"), pid);
}

#[test]
fn kill_9_mid_turn_then_recovery_loads_the_agent_session_without_resending_it() {
    let mut e = ok_or_skip!(env());
    let mut rpc = acp_client(&e, "acp");
    for p in ["say one", "say two"] {
        rpc.prompt_ok("s-1", p);
    }
    let _ = rpc.start_prompt("s-1", "say partial\nsleep 60000");
    wait_update(&mut rpc, |u| u["text"] == "partial");
    drop(rpc);
    e.restart();

    // The agent's replay of its two turns (four chunks) is neither this
    // turn's updates nor new rows; the agent remembers both turns.
    let mut rpc = e.rpc();
    let t = rpc.prompt_ok("s-1", "history");
    assert_eq!(events(&t), vec![say("s-1", "history: 2")]);
    let rows = rpc.messages("s-1");
    assert_eq!(markers(&rows, INTERRUPTED), 1, "{rows:?}");
    assert_eq!(
        shape(&rows),
        vec![
            row("user", "message", "say one"),
            row("assistant", "message", "one"),
            row("user", "message", "say two"),
            row("assistant", "message", "two"),
            row("user", "message", "say partial\nsleep 60000"),
            row("assistant", "message", "partial"),
            row("system", "interruption_marker", INTERRUPTED),
            row("user", "message", "history"),
            row("assistant", "message", "history: 2"),
        ]
    );
    let loaded = e.d().log.events_named("acp_session_loaded");
    assert_eq!(loaded.len(), 1, "{loaded:?}");
}
