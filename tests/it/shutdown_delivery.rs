//! A graceful shutdown delivers what it owes (§2.6, §8.4):
//! a turn running at SIGTERM is soft-cancelled, persisted, and its
//! `turn_complete` and the prompt's answer reach the client before the
//! connection closes; the daemon then exits 0 and removes its socket.

// Unix only: stops the daemon with SIGTERM.

use crate::common;

use std::time::Duration;

use common::Daemon;
use serde_json::{json, Value};

/// One round: a prompt that sleeps, SIGTERM once it streams, then read to
/// end of stream. Returns what came after the signal.
fn round(n: usize) -> Vec<Value> {
    let mut d = Daemon::start();
    let mut c = d.connect();
    c.initialize();
    let open = c.call(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "term", "chat_mode": "acp"}),
        json!("open"),
    );
    assert!(open.get("result").is_some(), "round {n}: {open}");
    c.send_json(
        &json!({"jsonrpc": "2.0", "method": "session/prompt", "id": "p",
        "params": {"session_id": "term", "prompt": "running\n::sleep 60000"}}),
    );
    // The turn is running once its first chunk is here.
    loop {
        let v = c.recv_json();
        if v["params"]["type"] == "agent_message_chunk" {
            break;
        }
        assert_ne!(v["id"], "p", "round {n}: answered before the signal: {v}");
    }
    d.signal(libc::SIGTERM);
    let mut after = Vec::new();
    loop {
        match c.try_recv_line(Duration::from_secs(20)) {
            Ok(line) => after.push(serde_json::from_str(&line).expect("JSON")),
            Err(common::RecvError::Eof(rest)) if rest.is_empty() => break,
            Err(e) => panic!("round {n}: {} after {after:?}", common::describe(&e)),
        }
    }
    let status = d.wait_exit(common::EXIT_TIMEOUT).expect("the daemon exits");
    assert_eq!(status.code(), Some(0), "round {n}");
    assert!(!d.socket.exists(), "round {n}: the socket is removed");
    after
}

#[test]
fn sigterm_mid_turn_delivers_turn_complete_then_the_answer_every_time() {
    for n in 0..10 {
        let after = round(n);
        let complete = after
            .iter()
            .position(|v| v["params"]["type"] == "turn_complete")
            .unwrap_or_else(|| panic!("round {n}: no turn_complete in {after:?}"));
        assert_eq!(
            after[complete]["params"]["outcome"], "cancelled",
            "round {n}"
        );
        let content = after[complete]["params"]["content"].clone();
        assert!(
            content.as_str().is_some_and(|c| c.starts_with("running")),
            "round {n}: {content}"
        );
        let answer = after
            .iter()
            .position(|v| v["id"] == "p")
            .unwrap_or_else(|| panic!("round {n}: no answer to the prompt in {after:?}"));
        assert!(complete < answer, "round {n}: {after:?}");
        assert_eq!(
            after[answer]["result"],
            json!({"session_id": "term", "stop_reason": "cancelled", "content": content}),
            "round {n}"
        );
        assert_eq!(
            answer,
            after.len() - 1,
            "round {n}: nothing after the answer: {after:?}"
        );
    }
}
