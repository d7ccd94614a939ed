//! A prompt arriving while its session is closing fails at once with
//! `-32000` `closed` (§8.7): it neither waits for the
//! close nor rehydrates the session behind it.

// Unix only: a command agent in POSIX sh that traps SIGTERM.

use crate::common;
use common::errors::session_closed;
use common::start::{config_with, start_in};
use common::wait::eventually;

use std::time::Duration;

use common::RecvError;
use serde_json::json;

/// A command agent that ignores `SIGTERM` (so a close waits the 5 s kill
/// grace) and marks in `marker` that the signal came.
fn stubborn_agent(marker: &std::path::Path) -> String {
    let script = format!(
        "trap 'echo t > {}' TERM; echo started; while :; do sleep 0.05; done",
        marker.display()
    );
    config_with(&format!(
        "[agents.cmd]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", {}]\n",
        serde_json::to_string(&script).unwrap()
    ))
}

#[test]
fn a_prompt_during_close_fails_at_once_with_closed() {
    let dir = common::TestDir::new();
    let marker = dir.path().join("term");
    let d = start_in(common::TestDir::new(), &stubborn_agent(&marker));
    let mut a = d.client();
    a.new_session_of("cmd", "c1", "acp");
    let turn = a.start_prompt("c1", "go");
    a.until_update(|u| u["text"] == "started\n");

    let mut b = d.client();
    let close = b.send("session/close", json!({"session_id": "c1"}));
    // The close has soft-cancelled the turn: the agent got SIGTERM.
    eventually("the agent to get SIGTERM", Duration::from_secs(10), || {
        marker.exists().then_some(())
    });

    let mut c = d.client();
    let e = c.fails(
        "session/prompt",
        json!({"session_id": "c1", "prompt": "late"}),
    );
    session_closed(&e);
    // Answered while the close is still waiting for the turn.
    assert!(
        matches!(b.try_recv_line(Duration::ZERO), Err(RecvError::Timeout(p)) if p.is_empty()),
        "the close was answered before the late prompt"
    );
    let closed = b.until_answer(&close);
    assert_eq!(
        closed.result(),
        &json!({"session_id": "c1", "closed": true}),
        "{:?}",
        closed.raw()
    );
    let t = a.until_answer(&turn);
    assert_eq!(t.result()["stop_reason"], "cancelled", "{:?}", t.raw());
    // No new incarnation was made by the late prompt.
    let status = c.ok("status", json!({}));
    assert_eq!(status["session_ids"], json!([]), "{status}");
}
