//! The checks of the session methods and their order (§8 "Check order
//! for session methods", §8.3 steps 1–5, §8.4): parameters first, then
//! existence, then state; a refused `session/new` changes nothing.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::{agent_not_configured, session_killed, session_not_found};
use common::sessions;
use common::start::{config_with, echo_client, start, Env};
use common::values::items;

use serde_json::json;
use sessions::*;

fn two_agents() -> Env {
    start(&config_with("[agents.other]\nbackend = \"echo\"\n"))
}

#[test]
fn parameters_are_checked_before_existence() {
    let (_d, mut c) = echo_client();
    let cases = [
        (
            "session/prompt",
            json!({"session_id": "nope", "prompt": ""}),
        ),
        ("session/prompt", json!({"session_id": "nope"})),
        ("session/prompt", json!({"prompt": "x"})),
        ("session/prompt", json!({"session_id": "nope", "prompt": 7})),
        (
            "session/prompt",
            json!({"session_id": "a b", "prompt": "x"}),
        ),
        ("session/cancel", json!({"session_id": ""})),
        ("session/close", json!({})),
        ("session/kill", json!({"session_id": "bad id"})),
        (
            "session/delete",
            json!({"session_id": "nope", "chat_mode": "bogus"}),
        ),
        (
            "session/messages",
            json!({"session_id": "nope", "limit": 0}),
        ),
        (
            "session/messages",
            json!({"session_id": "nope", "before_index": -1}),
        ),
        (
            "session/approve",
            json!({"session_id": "nope", "request_id": "r", "decision": "bogus"}),
        ),
        (
            "session/approve",
            json!({"session_id": "nope", "request_id": "r", "decision": "reject_with_edit"}),
        ),
        (
            "session/approve",
            json!({"session_id": "nope", "decision": "reject"}),
        ),
        ("session/list", json!({"include_killed": "yes"})),
        (
            "session/new",
            json!({"agent_alias": "echo", "session_id": "s", "cwd": "relative"}),
        ),
    ];
    for (method, params) in cases {
        let e = c.fails(method, params.clone());
        assert_eq!(e["code"], -32602, "{method} {params}: {e}");
    }
    // Positional params are refused too.
    let f = c.call_alone("session/list", json!([]));
    assert_eq!(f.error()["code"], -32602, "{}", f.raw);
    // With valid params, an unknown session is -32000.
    for (method, params) in [
        (
            "session/prompt",
            json!({"session_id": "nope", "prompt": "x"}),
        ),
        ("session/close", json!({"session_id": "nope"})),
        ("session/kill", json!({"session_id": "nope"})),
        ("session/messages", json!({"session_id": "nope"})),
        (
            "session/approve",
            json!({"session_id": "nope", "request_id": "r", "decision": "reject"}),
        ),
    ] {
        let e = c.fails(method, params.clone());
        session_not_found(&e);
    }
    // Null members are absent (§1.3).
    c.new_session("s", "chat");
    let r = c.ok(
        "session/list",
        json!({"chat_mode": null, "limit": null, "include_killed": null}),
    );
    assert_eq!(items(&r["sessions"]).len(), 1);
    let r = c.ok(
        "session/messages",
        json!({"session_id": "s", "chat_mode": null, "limit": null, "before_index": null}),
    );
    assert_eq!(r["total"], 0);
}

#[test]
fn a_refused_session_new_leaves_the_live_session_and_its_turn_alone() {
    let d = two_agents();
    let mut c = d.session_client("s", "chat");
    let running = c.start_prompt("s", "a\n::sleep 3600000");
    c.until_update(|u| u["text"] == "a");
    // Another agent for the chat history: refused before anything is closed.
    let e = c.new_session_of_fails("other", "s", "chat");
    assert_error_exact(
        &e,
        -32602,
        Some("Chat session belongs to a different agent"),
        None,
    );
    let e = c.new_session_of_fails("nope", "s", "chat");
    agent_not_configured(&e, "nope");
    c.expect_nothing_before_probe();
    // The turn still runs and is ours to cancel.
    let cid = c.send("session/cancel", json!({"session_id": "s"}));
    let all = c.until_all(&[running.clone(), cid.clone()]);
    assert_eq!(
        all[answer_index(&all, &cid)].result(),
        &json!({"session_id": "s", "cancelled": true})
    );
    assert_eq!(
        all[answer_index(&all, &running)].result(),
        &json!({"session_id": "s", "stop_reason": "cancelled", "content": "a"})
    );
    assert_eq!(c.status()["session_ids"], json!(["s"]));

    // The same for an ACP row of another agent.
    c.new_session("x", "acp");
    c.prompt("x", "hi");
    c.ok("session/close", json!({"session_id": "x"}));
    let e = c.new_session_of_fails("other", "x", "acp");
    assert_error_exact(
        &e,
        -32602,
        Some("ACP session belongs to a different agent"),
        None,
    );
    let r = c.new_session("x", "acp");
    assert_eq!(
        (r["resumed"].clone(), r["message_count"].clone()),
        (json!(true), json!(2))
    );
}

#[test]
fn the_other_mode_of_an_id_does_not_block_session_new() {
    // A same-id record of the other mode is ignored (§8.3 step 6); the live
    // session of the other mode is replaced.
    let d = two_agents();
    let mut c = d.session_client("s", "chat");
    c.prompt("s", "chat");
    let running = c.start_prompt("s", "b\n::sleep 3600000");
    c.until_update(|u| u["text"] == "b");
    let nid = c.send(
        "session/new",
        json!({"agent_alias": "other", "session_id": "s", "chat_mode": "acp"}),
    );
    let all = c.until_all(&[running.clone(), nid.clone()]);
    let r = all[answer_index(&all, &nid)].result();
    assert_eq!(
        (
            r["agent_alias"].clone(),
            r["chat_mode"].clone(),
            r["resumed"].clone()
        ),
        (json!("other"), json!("acp"), json!(false))
    );
    assert_eq!(
        all[answer_index(&all, &running)].result()["stop_reason"],
        "cancelled"
    );
    // The chat history of the other agent is still there, under chat_mode.
    let m = c.ok(
        "session/messages",
        json!({"session_id": "s", "chat_mode": "chat"}),
    );
    assert_eq!(m["total"], 4);
    assert_eq!(c.prompt("s", "acp").result()["content"], "acp");
}

#[test]
fn killed_acp_rows_refuse_resume_whatever_the_agent() {
    let d = two_agents();
    let mut c = d.session_client("k", "acp");
    c.ok("session/kill", json!({"session_id": "k"}));
    for agent in ["echo", "other"] {
        let e = c.new_session_of_fails(agent, "k", "acp");
        session_killed(&e);
    }
    // Deleting the tombstoned row frees the id.
    assert_eq!(
        c.ok("session/delete", json!({"session_id": "k"}))["deleted"],
        true
    );
    let r = c.new_session_of("other", "k", "acp");
    assert_eq!(r["resumed"], false);
}
