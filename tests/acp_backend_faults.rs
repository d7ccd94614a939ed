//! `backend = "acp"` faults (issue 16): the agent crashing, writing garbage
//! or an oversized line, hanging, not reading its stdin, flooding a client
//! that does not read; and a kill -9 of the daemon mid-turn, recovered with
//! `session/load` (or without it, recorded as a context loss).

mod common;

use std::time::Duration;

use common::acp::{db_int, markers, AcpEnv, INTERRUPTED};
use common::acp_agent::{acp_client, acp_config, events, new_acp_session, say, wait_update};
use serde_json::json;

fn env(agent_lines: &str) -> AcpEnv {
    AcpEnv::new(&acp_config(agent_lines, ""))
}

fn agent_failed(t: &common::acp::Turn, message: &str) {
    common::errors::agent_failed(t.error(), message);
    assert_eq!(t.turn_complete()["outcome"], "failed");
    assert_eq!(t.turn_complete()["reason"], message);
}

fn pid_of(rpc: &mut common::acp::Rpc, sid: &str) -> String {
    rpc.prompt_ok(sid, "pid").text()
}

#[test]
fn a_crash_mid_turn_fails_the_turn_with_its_status_and_the_next_prompt_restarts_it() {
    let e = env("");
    let mut rpc = acp_client(&e, "acp");
    let first = pid_of(&mut rpc, "s-1");
    let t = rpc.prompt("s-1", "say before\nstderr dying now\ncrash 3");
    agent_failed(&t, "the ACP agent exited with status 3: dying now");
    assert_eq!(events(&t), vec![say("s-1", "before")]);
    // Restarted on the next prompt, with the session loaded (it remembers
    // the `pid` turn; the replayed history is not sent again).
    let second = pid_of(&mut rpc, "s-1");
    assert_ne!(first, second);
    let t = rpc.prompt_ok("s-1", "history");
    assert_eq!(events(&t), vec![say("s-1", "history: 2")]);
    // stderr went to our log.
    let logged = e.d().log.events_named("acp_agent_stderr");
    assert!(
        logged.iter().any(|l| l["line"] == "dying now"),
        "{logged:?}"
    );
}

#[test]
fn garbage_and_invalid_json_rpc_fail_the_turn_and_the_agent_is_replaced() {
    let e = env("");
    let mut rpc = acp_client(&e, "chat");
    let t = rpc.prompt("s-1", "say a\ngarbage");
    agent_failed(
        &t,
        r#"the ACP agent sent invalid JSON-RPC: not JSON: "this is not json""#,
    );
    let t = rpc.prompt("s-1", "badrpc");
    agent_failed(
        &t,
        r#"the ACP agent sent invalid JSON-RPC: no "jsonrpc": "2.0": "{\"hello\":1}""#,
    );
    assert_eq!(rpc.prompt_ok("s-1", "say fine").text(), "fine");
    let bad = e.d().log.events_named("acp_agent_bad_output");
    assert_eq!(bad.len(), 2, "{bad:?}");
}

#[test]
fn an_oversized_line_fails_the_turn_with_bounded_memory() {
    let e = env("");
    let mut rpc = acp_client(&e, "chat");
    let t = rpc.prompt("s-1", "oversized");
    agent_failed(&t, "the ACP agent sent a line over 16777216 bytes");
    // At most one line's bound (16 MiB) plus its read buffer is ever held.
    let peak = e.d().peak_rss_kib().expect("VmHWM");
    assert!(peak < 160 * 1024, "peak RSS {peak} KiB");
    assert_eq!(rpc.prompt_ok("s-1", "say fine").text(), "fine");
}

#[test]
fn cancel_reaches_a_hanging_agent_as_session_cancel() {
    let e = env("");
    let mut rpc = acp_client(&e, "chat");
    let pid = pid_of(&mut rpc, "s-1");
    let id = rpc.start_prompt("s-1", "say waiting\nhang");
    wait_update(&mut rpc, |u| u["text"] == "waiting");
    rpc.ok("session/cancel", json!({"session_id": "s-1"}));
    let t = rpc.finish_turn("s-1", &id, common::RECV_TIMEOUT);
    assert_eq!(t.result()["stop_reason"], "cancelled");
    assert_eq!(t.turn_complete()["outcome"], "cancelled");
    // The same process serves the next turn.
    assert_eq!(pid_of(&mut rpc, "s-1"), pid);
}

#[test]
fn an_agent_that_stops_reading_times_out_without_blocking_other_sessions() {
    let e = env("timeout_secs = 3");
    let mut rpc = acp_client(&e, "chat");
    new_acp_session(&mut rpc, "s-2", "chat");
    let id = rpc.start_prompt("s-1", "say deaf now\ndeaf");
    wait_update(&mut rpc, |u| u["text"] == "deaf now");
    // Another session's agent answers meanwhile.
    let mut other = e.rpc();
    assert_eq!(other.prompt_ok("s-2", "say other").text(), "other");
    let t = rpc.finish_turn("s-1", &id, Duration::from_secs(20));
    agent_failed(&t, "the ACP agent did not finish the turn within 3 s");
    assert_eq!(rpc.prompt_ok("s-1", "say back").text(), "back");
}

#[test]
fn a_flood_to_a_client_that_does_not_read_is_bounded_and_complete() {
    let e = env("");
    let mut rpc = acp_client(&e, "acp");
    let id = rpc.start_prompt("s-1", "flood 20000");
    // Not reading: the socket, our queues and the agent's pipe fill, then
    // the agent blocks on its stdout.
    std::thread::sleep(Duration::from_millis(1500));
    let rss = e.d().rss_kib().expect("VmRSS");
    let t = rpc.finish_turn("s-1", &id, Duration::from_secs(60));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    assert_eq!(t.text(), ".".repeat(20_000));
    // Chunks already read are sent as one (docs/agents.md): how many depends
    // on how far the reader was ahead, never more than the agent sent.
    let chunks = t.of_type("agent_message_chunk").len();
    assert!((1..=20_000).contains(&chunks), "{chunks} chunks");
    assert!(
        rss < 100 * 1024,
        "RSS while the client does not read: {rss} KiB"
    );
}

#[test]
fn kill_9_mid_turn_then_recovery_loads_the_agent_session() {
    let mut e = env("");
    let mut rpc = acp_client(&e, "acp");
    rpc.prompt_ok("s-1", "say first");
    let _ = rpc.start_prompt("s-1", "say partial\nhang");
    wait_update(&mut rpc, |u| u["text"] == "partial");
    drop(rpc);
    let mut rpc = e.restart();
    let rows = rpc.messages("s-1");
    assert_eq!(markers(&rows, INTERRUPTED), 1, "{rows:?}");
    assert!(rows.iter().any(|r| r["content"] == "partial"), "{rows:?}");
    let t = rpc.prompt_ok("s-1", "history");
    // session/load replayed the agent's history: not sent, not persisted.
    assert_eq!(events(&t), vec![say("s-1", "history: 1")]);
    let rows = rpc.messages("s-1");
    let firsts = rows.iter().filter(|r| r["content"] == "first").count();
    assert_eq!(firsts, 1, "{rows:?}");
    let loaded = e.d().log.events_named("acp_session_loaded");
    assert_eq!(loaded.len(), 1, "{loaded:?}");
}

#[test]
fn without_load_session_a_new_agent_session_is_recorded_as_a_context_loss() {
    let mut e = env("env = { ACP_TEST_NO_LOAD = \"1\" }");
    let mut rpc = acp_client(&e, "acp");
    rpc.prompt_ok("s-1", "say first");
    drop(rpc);
    let mut rpc = e.restart();
    assert_eq!(rpc.prompt_ok("s-1", "history").text(), "history: 0");
    let losses = db_int(
        &e.db(),
        "SELECT context_losses FROM agent_session_links WHERE session_id = 's-1'",
    );
    assert_eq!(losses, 1);
    assert_eq!(e.d().log.events_named("agent_context_lost").len(), 1);
    // The visible transcript is whole.
    let rows = rpc.messages("s-1");
    assert!(rows.iter().any(|r| r["content"] == "first"), "{rows:?}");
}

#[test]
fn the_agent_process_stops_after_a_grace_once_its_session_is_closed() {
    let e = env("");
    let mut rpc = acp_client(&e, "chat");
    let text = pid_of(&mut rpc, "s-1");
    let pid: i32 = text.trim_start_matches("pid: ").parse().expect("a pid");
    rpc.ok("session/close", json!({"session_id": "s-1"}));
    // IDLE_GRACE (5 s), then SIGKILL and reaping.
    common::wait::eventually("the agent process to stop", Duration::from_secs(15), || {
        common::sessions::process_gone(pid).then_some(())
    });
    let stopped = e.d().log.events_named("acp_agent_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["reason"], "idle");
}
