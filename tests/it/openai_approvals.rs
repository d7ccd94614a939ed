//! The two approvals of `backend = "openai"` nobody answers
//! (§8.12): one left unanswered past `daemon.approval_timeout_secs` is a
//! denial `timed_out`, one whose client goes away is a denial `unreachable`;
//! either way the tool does not run and the model is told why.

use crate::common;

use std::time::Duration;

use serde_json::json;

use common::openai::{self, config, merged, until_approval};
use common::openai_server::{sse, OpenAiServer, Reply};
use common::sessions::{complete, msg, upd};
use common::wait::eventually;

/// An answer asking for one `write_file` of `out.txt`, call id `id`.
fn write_call(id: &str) -> Reply {
    Reply::Stream(vec![
        sse::role(),
        sse::tool_start(0, id, "write_file"),
        sse::tool_args(0, "{\"path\":\"out.txt\",\"content\":\"hi\"}"),
        sse::finish("tool_calls"),
        sse::usage(5, 5),
        sse::done(),
    ])
}

/// The `tool` message the model got last in request `i`.
fn told_model(server: &OpenAiServer, i: usize) -> serde_json::Value {
    let reqs = server.wait_requests(i + 1);
    let messages = reqs[i].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages.last().cloned().unwrap_or_default()
}

#[test]
fn unanswered_approvals_time_out_and_a_gone_client_is_unreachable() {
    let server = OpenAiServer::start();
    let cfg = format!(
        "{}\n[daemon]\napproval_timeout_secs = 1\n",
        config(&server, "")
    );
    let d = openai::start(&cfg);
    let mut c = d.client();
    let r = c.new_session_of("m", "s-1", "acp");
    let ws = std::path::PathBuf::from(r["workspace_dir"].as_str().unwrap());

    // Nobody answers: after the timeout the tool is denied and the turn goes on.
    server.push(write_call("call_t"));
    server.push(Reply::Stream(sse::answer(&["fine"])));
    let pid = c.start_prompt("s-1", "write");
    let (_, req) = until_approval(&mut c);
    assert_eq!(req["toolName"], "write_file");
    let t = c.until_answer(&pid);
    assert_eq!(
        merged(t.updates()),
        vec![
            upd(
                "s-1",
                "tool_result",
                json!({"toolCallId": "call_t", "name": "write_file", "rawOutput": "denied: timed_out"})
            ),
            msg("s-1", "fine"),
            complete("s-1", "completed", "fine", None),
        ]
    );
    assert_eq!(
        told_model(&server, 1),
        json!({"role": "tool", "tool_call_id": "call_t", "content": "denied: timed_out"})
    );

    // The asking client goes away while the approval waits: unreachable.
    server.push(write_call("call_u"));
    server.push(Reply::Stream(sse::answer(&["alone"])));
    c.start_prompt("s-1", "write again");
    let (_, req) = until_approval(&mut c);
    assert_eq!(req["toolName"], "write_file");
    drop(c);
    assert_eq!(
        told_model(&server, 3),
        json!({"role": "tool", "tool_call_id": "call_u", "content": "denied: unreachable"})
    );
    assert!(!ws.join("out.txt").exists(), "a denied write_file ran");
    // The session outlived its client: the turn's answer is in its history.
    let mut c = d.client();
    let history = eventually(
        "the turn is in the history",
        Duration::from_secs(10),
        || {
            let m = c.ok("session/messages", json!({"session_id": "s-1"}));
            m.to_string().contains("alone").then_some(m)
        },
    );
    assert!(
        history.to_string().contains("denied: unreachable"),
        "{history}"
    );
}
