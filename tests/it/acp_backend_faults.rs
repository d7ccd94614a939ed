//! `backend = "acp"` faults: the agent crashing, writing garbage
//! or an oversized line, hanging, not reading its stdin, flooding a client
//! that does not read; and a kill -9 of the daemon mid-turn, recovered with
//! `session/load` (or without it, recorded as a context loss).

// Unix only: one test checks that the agent is gone through /proc/<pid>/stat (sessions::process_gone).

use crate::common;

use std::io::Write as _;
use std::time::{Duration, Instant};

use common::acp::{db_int, markers, AcpEnv, INTERRUPTED};
use common::acp_agent::{
    acp_client, acp_config, events, new_acp_session, pid_of, say, turn_agent_failed, wait_update,
};
use serde_json::json;

fn env(agent_lines: &str) -> AcpEnv {
    AcpEnv::new(&acp_config(agent_lines, ""))
}

#[test]
fn a_crash_mid_turn_fails_the_turn_with_its_status_and_the_next_prompt_restarts_it() {
    let e = env("");
    let mut rpc = acp_client(&e, "acp");
    let first = pid_of(&mut rpc, "s-1");
    let t = rpc.prompt("s-1", "say before\nstderr dying now\ncrash 3");
    turn_agent_failed(&t, "the ACP agent exited with status 3: dying now");
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
    turn_agent_failed(
        &t,
        r#"the ACP agent sent invalid JSON-RPC: not JSON: "this is not json""#,
    );
    let t = rpc.prompt("s-1", "badrpc");
    turn_agent_failed(
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
    turn_agent_failed(&t, "the ACP agent sent a line over 16777216 bytes");
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
    cancel(&mut rpc, &id);
    // The same process serves the next turn.
    assert_eq!(pid_of(&mut rpc, "s-1"), pid);
}

/// How long the runtime waits for a cancelled turn to end before it drops
/// it (`CANCEL_GRACE` = `SHUTDOWN_GRACE`, docs/agents.md).
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Margin on a busy machine.
const MARGIN: Duration = Duration::from_secs(4);

/// Cancels the turn `id` of `s-1` and returns it with how long that took.
fn cancel(rpc: &mut common::acp::Rpc, id: &serde_json::Value) -> (common::acp::Turn, Duration) {
    let asked = Instant::now();
    rpc.ok("session/cancel", json!({"session_id": "s-1"}));
    let t = rpc.finish_turn("s-1", id, CANCEL_GRACE + MARGIN);
    let took = asked.elapsed();
    assert_eq!(t.result()["stop_reason"], "cancelled");
    assert_eq!(t.turn_complete()["outcome"], "cancelled");
    (t, took)
}

#[test]
fn cancel_ends_a_turn_whose_agent_went_deaf_after_the_grace_and_replaces_it() {
    let e = env("");
    let mut rpc = e.rpc();
    new_acp_session(&mut rpc, "s-1", "chat");
    let first = pid_of(&mut rpc, "s-1");
    let id = rpc.start_prompt("s-1", "say deaf now\ndeaf");
    wait_update(&mut rpc, |u| u["text"] == "deaf now");
    // `session/cancel` fits in the agent's pipe, but no answer comes: the
    // runtime ends the turn CANCEL_GRACE after the cancel and drops the
    // connection, which stops the process.
    let (_, took) = cancel(&mut rpc, &id);
    assert!(took >= CANCEL_GRACE, "cancelled after {took:?}");
    let second = pid_of(&mut rpc, "s-1");
    assert_ne!(second, first);
    assert_eq!(rpc.prompt_ok("s-1", "say back").text(), "back");
}

#[test]
fn cancel_ends_a_turn_at_once_when_the_deaf_agents_stdin_queue_is_full() {
    let e = env("");
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "chat")["workspace_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(format!("{ws}/big.txt"), "y".repeat(256 << 10)).unwrap();
    let first = pid_of(&mut rpc, "s-1");
    // 65 answers of 256 KiB to an agent that reads none: our writer blocks
    // on the first (the pipe takes 64 KiB), the other 64 fill the stdin
    // queue (64 lines); then the agent says `queued`.
    let prompt = format!("readmany 65 {ws}/big.txt\nsay queued\ndeaf");
    let id = rpc.start_prompt("s-1", &prompt);
    wait_update(&mut rpc, |u| u["text"] == "queued");
    // No room for `session/cancel`: the turn ends at once, not after the grace.
    let (_, took) = cancel(&mut rpc, &id);
    assert!(took < CANCEL_GRACE, "cancelled after {took:?}");
    assert_ne!(pid_of(&mut rpc, "s-1"), first);
    assert_eq!(rpc.prompt_ok("s-1", "say back").text(), "back");
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
    turn_agent_failed(&t, "the ACP agent did not finish the turn within 3 s");
    assert_eq!(rpc.prompt_ok("s-1", "say back").text(), "back");
}

#[test]
fn a_flood_of_one_character_chunks_to_a_client_that_does_not_read_is_complete() {
    let e = env("");
    let mut rpc = acp_client(&e, "acp");
    let id = rpc.start_prompt("s-1", "flood 20000");
    // Not reading for a while, so the reader joins the chunks it holds.
    std::thread::sleep(Duration::from_millis(1500));
    let t = rpc.finish_turn("s-1", &id, Duration::from_secs(60));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    assert_eq!(t.text(), ".".repeat(20_000));
    // Chunks already read are sent as one (docs/agents.md): how many depends
    // on how far the reader was ahead, never more than the agent sent.
    let chunks = t.of_type("agent_message_chunk").len();
    assert!((1..=20_000).contains(&chunks), "{chunks} chunks");
}

/// The most a turn may produce (src/session/turn_sink.rs).
const MAX_TURN_OUTPUT: u64 = 32 << 20;
/// The size of one `floodbig` chunk: the largest the reader and the
/// coalescer pass on unjoined, so every queue below holds whole chunks.
const BIG: u64 = 64 << 10;
/// Chunk text the daemon and the pipes may take in ahead of a client that
/// reads nothing, by the bounds docs/agents.md and src/ state: the agent's
/// pipe (64 KiB), the reader's held chunk (64 KiB) and 64-message channel
/// (4 MiB of these chunks), the turn's pending text (64 KiB), the emitter's
/// queue (4 MiB, `EMIT_QUEUE_BYTES`) and the group it commits (at most as
/// much), the connection's write queue (64 frames, 4 MiB) and the kernel's
/// socket buffers: about 17 MiB (measured: 9 to 16 MiB); 24 MiB with a margin.
const AHEAD_BOUND: u64 = 24 << 20;
/// Daemon RSS growth allowed meanwhile: the text above, the turn's text
/// kept for its answer (no more than was sent), SQLite's cache and
/// allocator slack: 48 MiB (measured: +16 to +26 MiB). A reader that did
/// not stop would hold the flood.
const RSS_GROWTH_BOUND_KIB: u64 = 48 << 10;

/// Starts `floodbig n BIG` on a fresh ACP-mode session and reads nothing
/// until the agent stalls; checks where it stalled and the daemon's RSS
/// growth; returns the turn (read at last) and the agent's `pid` answer.
fn big_flood_stalls(e: &AcpEnv, n: u64) -> (common::acp::Turn, String) {
    let mut rpc = e.rpc();
    let ws = new_acp_session(&mut rpc, "s-1", "acp")["workspace_dir"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = pid_of(&mut rpc, "s-1");
    let before = e.d().rss_kib().expect("VmRSS");
    let id = rpc.start_prompt("s-1", &format!("floodbig {n} {BIG}"));
    let written = || {
        std::fs::read_to_string(format!("{ws}/floodbig.written"))
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let quiet = (Duration::from_secs(1), Duration::from_secs(20));
    let stalled = common::wait::settled("the agent's bytes written", quiet, written);
    let growth = e.d().rss_kib().expect("VmRSS").saturating_sub(before);
    let _ = writeln!(
        std::io::stderr(),
        "floodbig {n} x {BIG}: the agent stalled at {stalled} bytes; daemon RSS +{growth} KiB"
    );
    assert!(stalled > 0, "the flood never started");
    assert!(
        stalled <= AHEAD_BOUND,
        "the agent wrote {stalled} of {} bytes to a client that reads nothing",
        n * BIG
    );
    assert!(
        growth < RSS_GROWTH_BOUND_KIB,
        "daemon RSS grew {growth} KiB"
    );
    let t = rpc.finish_turn("s-1", &id, Duration::from_secs(60));
    (t, pid)
}

#[test]
fn a_flood_of_the_most_a_turn_may_produce_stalls_the_agent_then_completes() {
    let e = env("");
    let n = MAX_TURN_OUTPUT / BIG;
    let (t, pid) = big_flood_stalls(&e, n);
    assert_eq!(t.turn_complete()["outcome"], "completed");
    let text = t.text();
    assert_eq!(text.len() as u64, MAX_TURN_OUTPUT);
    assert!(text.bytes().all(|b| b == b'x'));
    // The same process serves the next turn.
    assert_eq!(pid_of(&mut e.rpc(), "s-1"), pid);
}

#[test]
fn a_400_mib_flood_stalls_the_agent_then_fails_at_the_turn_bound_whole() {
    let e = env("");
    let (t, pid) = big_flood_stalls(&e, 6400);
    turn_agent_failed(&t, "the turn's output exceeds 33554432 bytes");
    // Everything before the bound was delivered, nothing past it.
    let text = t.text();
    assert_eq!(text.len() as u64, MAX_TURN_OUTPUT);
    assert!(text.bytes().all(|b| b == b'x'));
    // The agent, still flooding, is stopped; the next prompt starts another.
    let mut rpc = e.rpc();
    assert_ne!(pid_of(&mut rpc, "s-1"), pid);
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
