//! The turn's deadline (the agent's `timeout_secs`) bounds every await
//! inside the turn, approvals included: with `timeout_secs = 2`
//! and `daemon.approval_timeout_secs = 120`, an approval nobody answers
//! ends the turn at about 2 s with the backend's timeout error, for an ACP
//! agent, an `openai` agent and the echo agent. (It used to wait the whole
//! approval timeout, overrunning the turn's bound by two minutes.)

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::acp::AcpEnv;
use common::acp_agent::{acp_client, acp_config, turn_agent_failed};
use common::assert::assert_error_exact;
use common::openai::{self, until_approval};
use common::openai_server::{sse, Reply};
use common::sessions::{Frame, Turn};
use common::start::{start, ECHO_ONLY};
use common::Client;

const DAEMON: &str = "approval_timeout_secs = 120";
/// The turn's bound, and how much later than it the answer may come on a
/// busy machine (far less than the approval timeout).
const TURN: Duration = Duration::from_secs(2);
const SLACK: Duration = Duration::from_secs(3);

/// Waits for the approval request of prompt `id` (sent at `sent`), leaves it
/// unanswered, and returns the turn once answered; checks it ended near the
/// deadline and that the request announced no more time than the turn had.
fn unanswered(c: &mut Client, sid: &str, id: &Value, sent: Instant) -> Turn {
    let frames = c.until_update(|u| u["type"] == "approval_request");
    let req = frames
        .last()
        .map(Frame::params)
        .cloned()
        .unwrap_or_default();
    let announced = req["timeoutSecs"].as_u64().expect("timeoutSecs");
    assert!(
        announced <= 2,
        "announced {announced} s for a 2 s turn: {req}"
    );
    let t = c.finish_turn(sid, id, TURN + SLACK + Duration::from_secs(5));
    let took = sent.elapsed();
    assert!(
        took >= TURN && took < TURN + SLACK,
        "the turn ended after {took:?}, not at its {TURN:?} deadline"
    );
    t
}

#[test]
fn an_acp_agents_unanswered_permission_ends_at_the_turn_deadline() {
    let e = AcpEnv::new(&acp_config("timeout_secs = 2", DAEMON));
    let mut c = acp_client(&e, "acp");
    let sent = Instant::now();
    let id = c.start_prompt("s-1", "ask f1");
    let t = unanswered(&mut c, "s-1", &id, sent);
    turn_agent_failed(&t, "the ACP agent did not finish the turn within 2 s");
    // The agent was never told an answer: it is replaced, and the next turn works.
    assert_eq!(c.prompt_ok("s-1", "say back").text(), "back");
}

#[test]
fn an_openai_agents_unanswered_approval_ends_at_the_turn_deadline() {
    // The `[daemon]` table after the agent's own keys.
    let (server, _d, mut c, ws) =
        openai::session(&format!("timeout_secs = 2\n[daemon]\n{DAEMON}"), "acp");
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::tool_start(0, "call_t", "write_file"),
        sse::tool_args(0, "{\"path\":\"out.txt\",\"content\":\"hi\"}"),
        sse::finish("tool_calls"),
        sse::done(),
    ]));
    server.push(Reply::Stream(sse::answer(&["too late"])));
    let sent = Instant::now();
    let id = c.start_prompt("s-1", "write");
    let (_, req) = until_approval(&mut c);
    assert_eq!(req["toolName"], "write_file");
    let t = c.finish_turn("s-1", &id, TURN + SLACK + Duration::from_secs(5));
    let took = sent.elapsed();
    assert!(took < TURN + SLACK, "the turn ended after {took:?}");
    let m = "the turn did not finish within 2 s (timeout_secs)";
    assert_error_exact(
        t.error(),
        -32603,
        Some(m),
        Some(json!({"reason": "provider_timeout"})),
    );
    assert_eq!(t.turn_complete()["reason"], m);
    // The tool never ran and the model was not asked again.
    assert!(!ws.join("out.txt").exists());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_echo_agents_unanswered_approval_ends_at_the_turn_deadline() {
    let cfg = format!("{ECHO_ONLY}timeout_secs = 2\n\n[daemon]\n{DAEMON}\n");
    let d = start(&cfg);
    let mut c = d.session_client("s-1", "acp");
    let sent = Instant::now();
    let id = c.start_prompt("s-1", "::approve rm\nafter");
    let t = unanswered(&mut c, "s-1", &id, sent);
    common::errors::agent_failed(t.error(), "the agent did not finish the turn within 2 s");
    assert_eq!(t.turn_complete()["outcome"], "failed");
}
