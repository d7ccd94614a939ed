//! What a turn asks of, and takes from, the client (§8.6, §8.12,
//! §8.13, §3.5, §3.6, §10.3): cancellation, approvals with every decision
//! and their timeout, elicitation with every answer, its timeout and its
//! id space, and prompts sent as notifications.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::no_active_turn;
use common::sessions;
use common::start::{
    config_with, echo_client, echo_session, start, start_args, start_echo, ECHO_ONLY,
};
use common::updates::{tool_call_upd, tool_result_upd};
use common::values::items;
use common::wait::eventually;

use std::time::Duration;

use common::Client;
use serde_json::{json, Value};
use sessions::*;

// ---------------------------------------------------------------------------
// Cancellation

#[test]
fn cancel_mid_turn_answers_cancelled_with_the_partial_content() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("c-{mode}");
        c.new_session(&sid, mode);
        let long = "abcdefghijklmnopqrstuvwxyz".repeat(4);
        let id = c.start_prompt(&sid, &format!("::chunk 4\n::delay 200\n{long}"));
        // The first chunk arrived: the turn is running.
        let first = c.until_update(|u| u["type"] == "agent_message_chunk");
        assert_eq!(first.len(), 1);
        let cid = c.send("session/cancel", json!({ "session_id": sid }));
        let t = c.until_answer(&id);
        // The cancel's answer, at once, among the turn's last updates.
        let cancel: Vec<&Frame> = t.frames.iter().filter(|f| f.answers(&cid)).collect();
        assert_eq!(cancel.len(), 1, "{:#?}", t.raw());
        assert_eq!(
            cancel[0].result(),
            &json!({"session_id": sid, "cancelled": true})
        );
        let turn = Turn {
            frames: first
                .into_iter()
                .chain(t.frames.iter().filter(|f| !f.answers(&cid)).cloned())
                .collect(),
            response: t.response.clone(),
        };
        turn.check(&sid);
        let partial = turn.chunks().concat();
        assert!(
            !partial.is_empty() && partial.len() < long.len() && long.starts_with(&partial),
            "partial content {partial:?}"
        );
        assert_eq!(
            turn.turn_complete(),
            &complete(&sid, "cancelled", &partial, Some("cancelled"))
        );
        assert_eq!(
            turn.result(),
            &json!({"session_id": sid, "stop_reason": "cancelled", "content": partial})
        );
        // The partial text is history.
        let m = c.ok("session/messages", json!({ "session_id": sid }));
        let rows: Vec<Value> = items(&m["messages"])
            .iter()
            .map(|r| json!([r["role"], r["content"]]))
            .collect();
        assert_eq!(
            rows,
            vec![
                json!(["user", format!("::chunk 4\n::delay 200\n{long}")]),
                json!(["assistant", partial]),
            ],
            "mode {mode}"
        );
        // Nothing is running any more.
        let e = c.fails("session/cancel", json!({ "session_id": sid }));
        no_active_turn(&e);
    }
}

#[test]
fn cancel_without_a_running_turn_is_no_active_turn() {
    let (_d, mut c) = echo_client();
    let no_turn = |e: &Value| no_active_turn(e);
    // No session at all.
    no_turn(&c.fails("session/cancel", json!({"session_id": "nope"})));
    // An idle session, before and after a turn.
    c.new_session("s-1", "acp");
    no_turn(&c.fails("session/cancel", json!({"session_id": "s-1"})));
    c.prompt("s-1", "hi");
    no_turn(&c.fails("session/cancel", json!({"session_id": "s-1"})));
    // Parameter errors come first.
    let e = c.fails("session/cancel", json!({}));
    assert_eq!(e["code"], -32602, "{e}");
    let e = c.fails("session/cancel", json!({"session_id": "bad id"}));
    assert_eq!(e["code"], -32602, "{e}");
}

#[test]
fn cancel_stops_a_sleep_and_leaves_queued_prompts_alone() {
    let (_d, mut c) = echo_session("s-1", "chat");
    let first = c.start_prompt("s-1", "before\n::sleep 3600000\nnever");
    c.until_update(|u| u["text"] == "before");
    let second = c.start_prompt("s-1", "second");
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let all = c.until_all(&[first.clone(), second.clone(), cid.clone()]);
    assert_eq!(
        all[answer_index(&all, &first)].result(),
        &json!({"session_id": "s-1", "stop_reason": "cancelled", "content": "before"})
    );
    assert_eq!(
        all[answer_index(&all, &cid)].result(),
        &json!({"session_id": "s-1", "cancelled": true})
    );
    // The queued prompt runs normally afterwards.
    assert_eq!(
        all[answer_index(&all, &second)].result(),
        &json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "second"})
    );
    assert_eq!(
        turns_of(&all),
        vec![
            vec![complete("s-1", "cancelled", "before", Some("cancelled"))],
            vec![
                msg("s-1", "second"),
                complete("s-1", "completed", "second", None)
            ],
        ]
    );
}

// ---------------------------------------------------------------------------
// Approvals

/// Starts a prompt and waits for its `approval_request`; returns the prompt
/// id, the frames so far and the request's params.
fn until_approval(c: &mut Client, sid: &str, prompt: &str) -> (Value, Vec<Frame>, Value) {
    let id = c.start_prompt(sid, prompt);
    let frames = c.until_update(|u| u["type"] == "approval_request");
    let req = frames.last().unwrap().params().clone();
    (id, frames, req)
}

/// Answers approval `req` with `decision` (and `replacement`); asserts the
/// acknowledgement and returns the rest of the turn (the ack removed).
fn decide(
    c: &mut Client,
    sid: &str,
    prompt_id: &Value,
    req: &Value,
    decision: &str,
    replacement: Option<&str>,
) -> Turn {
    let mut params =
        json!({"session_id": sid, "request_id": req["requestId"], "decision": decision});
    if let Some(r) = replacement {
        params["replacement"] = json!(r);
    }
    let aid = c.send("session/approve", params);
    let mut t = c.until_answer(prompt_id);
    let (acks, rest): (Vec<Frame>, Vec<Frame>) = t.frames.drain(..).partition(|f| f.answers(&aid));
    assert_eq!(acks.len(), 1, "the approve answer: {:#?}", t.raw());
    assert_eq!(
        acks[0].result(),
        &json!({"session_id": sid, "request_id": req["requestId"], "acknowledged": true})
    );
    t.frames = rest;
    t
}

#[test]
fn approval_decisions_shape_the_tool_result() {
    let (_d, mut c) = echo_session("s-1", "acp");
    let cases = [
        ("allow_once", None, "{\"path\":\"/x\",\"n\":1.0}"),
        ("reject", None, "denied: rejected"),
        ("reject_once", None, "denied: rejected"),
        (
            "reject_with_edit",
            Some("use ls"),
            "denied: replaced: use ls",
        ),
    ];
    for (decision, replacement, output) in cases {
        let (id, frames, req) = until_approval(
            &mut c,
            "s-1",
            "go\n::approve rm {\"path\": \"/x\", \"n\": 1.0}\nend",
        );
        let rid = req["requestId"].as_str().unwrap().to_owned();
        assert_eq!(rid.len(), 36, "a UUID: {rid}");
        assert_eq!(
            params_of(&frames),
            vec![
                msg("s-1", "go"),
                tool_call_upd("s-1", "tc_1", "rm", json!({"path": "/x", "n": 1.0})),
                upd(
                    "s-1",
                    "approval_request",
                    json!({"requestId": rid, "toolName": "rm",
                           "argumentsSummary": "{\"path\":\"/x\",\"n\":1.0}", "timeoutSecs": 120})
                ),
            ]
        );
        let t = decide(&mut c, "s-1", &id, &req, decision, replacement);
        assert_eq!(
            t.updates(),
            vec![
                tool_result_upd("s-1", "tc_1", "rm", output),
                msg("s-1", "\nend"),
                complete("s-1", "completed", "go\nend", None),
            ],
            "decision {decision}"
        );
        assert_eq!(t.result()["content"], "go\nend");
        // Answered once: a second answer is not acknowledged.
        let r = c.ok(
            "session/approve",
            json!({"session_id": "s-1", "request_id": rid, "decision": "allow_once"}),
        );
        assert_eq!(
            r,
            json!({"session_id": "s-1", "request_id": rid, "acknowledged": false})
        );
        // Nothing else is owed.
        c.expect_nothing_before_probe();
    }
    // Approval requests are not history; the tool rows are.
    let m = c.ok("session/messages", json!({"session_id": "s-1", "limit": 4}));
    let rows = items(&m["messages"]);
    assert_eq!(rows[1]["kind"], "tool_call");
    assert_eq!(rows[2]["content"], "denied: replaced: use ls");
}

#[test]
fn allow_always_skips_later_requests_for_that_tool_in_this_live_session() {
    let (_d, mut c) = echo_session("s-1", "chat");
    // allow_always on the first call: the second in the same turn is not asked.
    let (id, _, req) = until_approval(&mut c, "s-1", "::approve rm {\"a\":1}\n::approve rm");
    let t = decide(&mut c, "s-1", &id, &req, "allow_always", None);
    assert_eq!(
        t.updates(),
        vec![
            tool_result_upd("s-1", "tc_1", "rm", "{\"a\":1}"),
            tool_call_upd("s-1", "tc_2", "rm", json!({})),
            tool_result_upd("s-1", "tc_2", "rm", "{}"),
            complete("s-1", "completed", "", None),
        ]
    );
    // A later turn: rm goes through, another tool is still asked.
    let (id, frames, req) = until_approval(&mut c, "s-1", "::approve rm {\"b\":2}\n::approve cp");
    assert_eq!(
        params_of(&frames),
        vec![
            tool_call_upd("s-1", "tc_1", "rm", json!({"b": 2})),
            tool_result_upd("s-1", "tc_1", "rm", "{\"b\":2}"),
            tool_call_upd("s-1", "tc_2", "cp", json!({})),
            upd(
                "s-1",
                "approval_request",
                json!({"requestId": req["requestId"], "toolName": "cp",
                       "argumentsSummary": "{}", "timeoutSecs": 120})
            ),
        ]
    );
    let t = decide(&mut c, "s-1", &id, &req, "reject", None);
    assert_eq!(t.updates()[0]["rawOutput"], "denied: rejected");
    // A new live session (replacement, same id) asks again.
    let r = c.new_session("s-1", "chat");
    assert_eq!(r["resumed"], true);
    let (id, _, req) = until_approval(&mut c, "s-1", "::approve rm");
    let t = decide(&mut c, "s-1", &id, &req, "allow_once", None);
    assert_eq!(t.updates()[0]["rawOutput"], "{}");
}

#[test]
fn approve_parameter_errors_and_unknown_requests() {
    let (_d, mut c) = echo_session("s-1", "chat");
    let (id, _, req) = until_approval(&mut c, "s-1", "::approve rm");
    let rid = req["requestId"].clone();
    // reject_with_edit without a replacement, an unknown decision, no decision.
    let e = c.fails(
        "session/approve",
        json!({"session_id": "s-1", "request_id": rid, "decision": "reject_with_edit"}),
    );
    assert_error_exact(
        &e,
        -32602,
        Some("replacement is required with reject_with_edit"),
        None,
    );
    let e = c.fails(
        "session/approve",
        json!({"session_id": "s-1", "request_id": rid, "decision": "maybe"}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    let e = c.fails(
        "session/approve",
        json!({"session_id": "s-1", "request_id": rid}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    // An unknown request id, or one of another session: not acknowledged.
    c.new_session("s-2", "chat");
    for (sid, request) in [("s-1", json!("nope")), ("s-2", rid.clone())] {
        let r = c.ok(
            "session/approve",
            json!({"session_id": sid, "request_id": request, "decision": "allow_once"}),
        );
        assert_eq!(
            r,
            json!({"session_id": sid, "request_id": request, "acknowledged": false})
        );
    }
    // A replacement given with another decision is ignored.
    let t = decide(&mut c, "s-1", &id, &req, "allow_once", Some("ignored"));
    assert_eq!(t.updates()[0]["rawOutput"], "{}");
}

#[test]
fn approvals_time_out_as_denied_timed_out_and_late_answers_are_not_acknowledged() {
    let d = start(&config_with("[daemon]\napproval_timeout_secs = 1\n"));
    let mut c = d.session_client("s-1", "acp");
    let (id, _, req) = until_approval(&mut c, "s-1", "::approve rm\nafter");
    assert_eq!(req["timeoutSecs"], 1);
    let t = c.until_answer(&id);
    assert_eq!(
        t.updates(),
        vec![
            tool_result_upd("s-1", "tc_1", "rm", "denied: timed_out"),
            msg("s-1", "after"),
            complete("s-1", "completed", "after", None),
        ]
    );
    let r = c.ok(
        "session/approve",
        json!({"session_id": "s-1", "request_id": req["requestId"], "decision": "allow_once"}),
    );
    assert_eq!(r["acknowledged"], false);
}

#[test]
fn an_approval_whose_client_went_away_is_denied_unreachable() {
    let (d, mut a) = echo_session("s-1", "acp");
    let _ = until_approval(&mut a, "s-1", "::approve rm\nafter");
    drop(a);
    let mut b = d.client();
    let m = eventually("the turn to be persisted", Duration::from_secs(10), || {
        let m = b.ok("session/messages", json!({"session_id": "s-1"}));
        (m["total"] == 4).then_some(m)
    });
    let rows: Vec<Value> = items(&m["messages"])
        .iter()
        .map(|r| json!([r["kind"], r["content"]]))
        .collect();
    assert_eq!(
        rows,
        vec![
            json!(["message", "::approve rm\nafter"]),
            json!(["tool_call", ""]),
            json!(["tool_result", "denied: unreachable"]),
            json!(["message", "after"]),
        ]
    );
}

// ---------------------------------------------------------------------------
// Elicitation

/// Starts `::ask` prompt; returns the prompt id, the updates before the
/// question and the `elicitation/create` frame.
fn until_ask(c: &mut Client, sid: &str, prompt: &str) -> (Value, Vec<Frame>, Frame) {
    let id = c.start_prompt(sid, prompt);
    let (before, ask) = c.until("elicitation/create", |f| {
        f.method() == Some("elicitation/create")
    });
    (id, before, ask)
}

/// The exact `elicitation/create` frame for `message` with `id`.
fn ask_frame(sid: &str, message: &str, id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"elicitation/create","params":{{"sessionId":"{sid}","mode":"form","message":"{message}","requestedSchema":{ASK_SCHEMA}}},"id":"{id}"}}"#
    )
}

/// Answers the ask with `response` (a whole frame minus the id) and
/// returns the rest of the turn.
fn answer_ask(c: &mut Client, prompt_id: &Value, ask: &Frame, response: Value) -> Turn {
    let mut frame = response;
    frame["jsonrpc"] = json!("2.0");
    frame["id"] = ask.v["id"].clone();
    c.send_json(&frame);
    c.until_answer(prompt_id)
}

#[test]
fn ask_round_trips_with_every_kind_of_answer() {
    let d = start_echo();
    let mut c = client_caps(&d);
    c.new_session("s-1", "chat");
    let cases = [
        (
            json!({"result": {"action": "accept", "content": {"answer": "yes"}}}),
            "answer: yes",
        ),
        (
            json!({"result": {"action": "accept", "content": {"answer": 42, "x": [true]}}}),
            "answer: {\"answer\":42,\"x\":[true]}",
        ),
        (
            json!({"result": {"action": "accept", "content": {"other": "z"}}}),
            "answer: {\"other\":\"z\"}",
        ),
        (json!({"result": {"action": "decline"}}), "answer: declined"),
        (json!({"result": {"action": "cancel"}}), "answer: cancelled"),
        (
            json!({"error": {"code": -32000, "message": "no"}}),
            "answer: unavailable",
        ),
        (json!({ "result": null }), "answer: unavailable"),
        (
            json!({"result": {"action": "accept"}}),
            "answer: unavailable",
        ),
        (
            json!({"result": {"action": "accept", "content": "yes"}}),
            "answer: unavailable",
        ),
        (
            json!({"result": {"action": "maybe"}}),
            "answer: unavailable",
        ),
    ];
    for (n, (response, text)) in cases.into_iter().enumerate() {
        let (id, before, ask) = until_ask(&mut c, "s-1", "first\n::ask Continue?\nlast");
        assert_eq!(params_of(&before), vec![msg("s-1", "first")]);
        // One zc-out-<n> per daemon request on this connection.
        assert_eq!(
            ask.raw,
            ask_frame("s-1", "Continue?", &format!("zc-out-{n}"))
        );
        let t = answer_ask(&mut c, &id, &ask, response.clone()).after(before);
        t.check("s-1");
        assert_eq!(
            t.result()["content"],
            format!("first\n{text}\nlast"),
            "{response}"
        );
        c.expect_nothing_before_probe();
    }
}

#[test]
fn ask_without_the_capability_is_unavailable_at_once() {
    let d = start_echo();
    for caps in [
        json!({"protocolVersion": 1}),
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    ] {
        let mut c = client_with(&d, caps);
        c.new_session("s-1", "chat");
        let t = c.prompt("s-1", "::ask Continue?");
        t.check("s-1");
        assert_eq!(t.result()["content"], "answer: unavailable");
        assert!(t.frames.iter().all(|f| f.is_update()), "{:#?}", t.raw());
    }
    // {"elicitation":{}} also means form support.
    let mut c = client_with(
        &d,
        json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}}),
    );
    c.new_session("s-2", "chat");
    let (id, _, ask) = until_ask(&mut c, "s-2", "::ask q");
    let t = answer_ask(&mut c, &id, &ask, json!({"result": {"action": "decline"}}));
    assert_eq!(t.result()["content"], "answer: declined");
}

#[test]
fn ask_params_stay_camel_case_on_a_snake_connection() {
    let d = start_echo();
    let mut c = client_snake(&d);
    c.new_session("s-1", "chat");
    let (id, _, ask) = until_ask(&mut c, "s-1", "::ask Name?");
    assert_eq!(ask.raw, ask_frame("s-1", "Name?", "zc-out-0"));
    let t = answer_ask(
        &mut c,
        &id,
        &ask,
        json!({"result": {"action": "accept", "content": {"answer": "Zed"}}}),
    );
    assert_eq!(
        t.turn_complete(),
        &json!({"session_id": "s-1", "type": "turn_complete", "outcome": "completed", "content": "answer: Zed"})
    );
}

#[test]
fn ask_times_out_as_unavailable_and_the_late_answer_is_dropped() {
    let d = start(&config_with("[daemon]\nask_timeout_secs = 1\n"));
    let mut c = client_caps(&d);
    c.new_session("s-1", "chat");
    let (id, _, ask) = until_ask(&mut c, "s-1", "::ask q\nafter");
    let t = c.until_answer(&id);
    t.check("s-1");
    assert_eq!(t.result()["content"], "answer: unavailable\nafter");
    let from = d.log.len();
    c.send_json(&json!({"jsonrpc": "2.0", "result": {"action": "accept", "content": {"answer": "late"}}, "id": ask.v["id"]}));
    c.expect_nothing_before_probe();
    d.log
        .wait_event(from, "response_dropped", Duration::from_secs(10))
        .expect("the late answer is logged as response_dropped");
    // The next ask takes the next id.
    let (id, _, ask) = until_ask(&mut c, "s-1", "::ask again");
    assert_eq!(ask.v["id"], "zc-out-1");
    let t = answer_ask(&mut c, &id, &ask, json!({"result": {"action": "cancel"}}));
    assert_eq!(t.result()["content"], "answer: cancelled");
}

#[test]
fn a_pending_ask_fails_when_its_connection_closes() {
    let d = start_echo();
    let mut a = client_caps(&d);
    a.new_session("s-1", "acp");
    let _ = until_ask(&mut a, "s-1", "::ask q\nafter");
    drop(a);
    let mut b = d.client();
    let m = eventually("the turn to be persisted", Duration::from_secs(10), || {
        let m = b.ok("session/messages", json!({"session_id": "s-1"}));
        (m["total"] == 2).then_some(m)
    });
    assert_eq!(m["messages"][1]["content"], "answer: unavailable\nafter");
}

#[test]
fn a_client_request_with_the_daemons_pending_id_is_answered_normally() {
    let d = start_echo();
    let mut c = client_caps(&d);
    c.new_session("s-1", "chat");
    let (id, _, ask) = until_ask(&mut c, "s-1", "::ask Continue?");
    assert_eq!(ask.v["id"], "zc-out-0");
    // A request of ours with the same textual id: dispatched and answered.
    c.send_line(
        r#"{"jsonrpc":"2.0","method":"session/list","params":{"limit":1},"id":"zc-out-0"}"#,
    );
    let f = c.frame();
    assert!(f.answers(&json!("zc-out-0")), "{}", f.raw);
    assert_eq!(f.result()["sessions"][0]["session_id"], "s-1");
    // And an unknown method with it: -32601 with that id.
    c.send_line(r#"{"jsonrpc":"2.0","method":"zc-test/x","id":"zc-out-0"}"#);
    assert_eq!(
        c.recv_line(),
        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Unknown method: zc-test/x"},"id":"zc-out-0"}"#
    );
    // The daemon's request is still pending and resolves with our answer.
    let t = answer_ask(
        &mut c,
        &id,
        &ask,
        json!({"result": {"action": "accept", "content": {"answer": "yes"}}}),
    );
    t.check("s-1");
    assert_eq!(t.result()["content"], "answer: yes");
}

#[test]
fn a_17th_pending_ask_on_one_connection_is_unavailable_and_takes_no_id() {
    // §4: 16 daemon requests pending per connection; §3.6: a request that
    // fails for it consumes no zc-out-<n>.
    let d = start_echo();
    let mut c = client_caps(&d);
    let mut prompts = Vec::new();
    let mut asks = Vec::new();
    for k in 0..16 {
        let sid = format!("s{k}");
        c.new_session(&sid, "chat");
        let (id, _, ask) = until_ask(&mut c, &sid, "::ask q");
        assert_eq!(ask.v["id"], format!("zc-out-{k}"));
        prompts.push(id);
        asks.push(ask);
    }
    c.new_session("s16", "chat");
    let t = c.prompt("s16", "::ask q");
    t.check("s16");
    assert_eq!(t.result()["content"], "answer: unavailable");
    // One answered: the next ask takes zc-out-16.
    let t = answer_ask(
        &mut c,
        &prompts[0],
        &asks[0],
        json!({"result": {"action": "decline"}}),
    );
    assert_eq!(t.result()["content"], "answer: declined");
    let (id, _, ask) = until_ask(&mut c, "s16", "::ask again");
    assert_eq!(ask.v["id"], "zc-out-16");
    let t = answer_ask(&mut c, &id, &ask, json!({"result": {"action": "decline"}}));
    assert_eq!(t.result()["content"], "answer: declined");
    for (id, ask) in prompts.iter().zip(&asks).skip(1) {
        let t = answer_ask(&mut c, id, ask, json!({"result": {"action": "cancel"}}));
        assert_eq!(t.result()["content"], "answer: cancelled");
    }
}

#[test]
fn cancel_ends_a_turn_waiting_for_an_ask_or_an_approval() {
    let d = start_echo();
    let mut c = client_caps(&d);
    c.new_session("s-1", "chat");
    let (id, _, _ask) = until_ask(&mut c, "s-1", "x\n::ask q\nnever");
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let t = c.until_answer(&id);
    assert!(t.frames.iter().any(|f| f.answers(&cid)));
    assert_eq!(
        t.result(),
        &json!({"session_id": "s-1", "stop_reason": "cancelled", "content": "x"})
    );
    let (id, _, _req) = until_approval(&mut c, "s-1", "::approve rm\nnever");
    c.send("session/cancel", json!({"session_id": "s-1"}));
    let t = c.until_answer(&id);
    assert_eq!(t.result()["stop_reason"], "cancelled");
    let tc = t.updates();
    assert_eq!(
        tc.last().unwrap(),
        &complete("s-1", "cancelled", "", Some("cancelled"))
    );
}

// ---------------------------------------------------------------------------
// Prompts sent as notifications

#[test]
fn a_prompt_sent_as_a_notification_runs_and_is_never_answered() {
    let (_d, mut c) = echo_session("s-1", "acp");
    c.notify_prompt("s-1", "Hello\n::tool t");
    let frames = c.until_update(|u| u["type"] == "turn_complete");
    assert_eq!(
        params_of(&frames),
        vec![
            msg("s-1", "Hello"),
            tool_call_upd("s-1", "tc_1", "t", json!({})),
            tool_result_upd("s-1", "tc_1", "t", "{}"),
            complete("s-1", "completed", "Hello", None),
        ]
    );
    c.expect_nothing_before_probe();
    // A failing one: its turn_complete says so, still no answer.
    c.notify_prompt("s-1", "a\n::fail nope");
    let frames = c.until_update(|u| u["type"] == "turn_complete");
    assert_eq!(
        frames.last().unwrap().params(),
        &complete("s-1", "failed", "a", Some("nope"))
    );
    c.expect_nothing_before_probe();
    // It was persisted like any turn.
    let m = c.ok("session/messages", json!({"session_id": "s-1"}));
    assert_eq!(m["total"], 7, "{m}");
}

#[test]
fn a_notification_prompt_that_cannot_run_still_gets_a_failed_turn_complete() {
    let (_d, mut c) = echo_session("k", "acp");
    c.prompt("k", "hi");
    c.ok("session/kill", json!({"session_id": "k"}));
    c.notify_prompt("k", "x");
    let f = c.frame();
    assert_eq!(
        f.raw,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"k","type":"turn_complete","outcome":"failed","content":"","reason":"Session killed"}}"#
    );
    c.expect_nothing_before_probe();

    // No such session: rejected before the ownership check, nothing is sent.
    c.notify_prompt("nope", "x");
    c.expect_nothing_before_probe();
}

#[test]
fn a_notification_prompt_killed_mid_turn_gets_a_failed_turn_complete_with_the_streamed_text() {
    // §3.5: the turn_complete of a notification prompt that ends without
    // one carries "content set to the text streamed so far".
    let (_d, mut c) = echo_session("k2", "chat");
    c.notify_prompt("k2", "abc\n::sleep 3600000");
    c.until_update(|u| u["text"] == "abc");
    let kid = c.send("session/kill", json!({"session_id": "k2"}));
    let t = c.until_answer(&kid);
    assert_eq!(
        t.result(),
        &json!({"session_id": "k2", "killed": true}),
        "{:#?}",
        t.raw()
    );
    let mut updates = t.updates();
    if updates.is_empty() {
        updates.push(c.frame().params().clone());
    }
    assert_eq!(
        updates,
        vec![complete("k2", "failed", "abc", Some("Session killed"))]
    );
    c.expect_nothing_before_probe();
}

#[test]
fn a_notification_prompt_waits_in_the_queue_like_any_prompt() {
    let (_d, mut c) = echo_session("s-1", "chat");
    let first = c.start_prompt("s-1", "::chunk 1\n::delay 20\nabc");
    c.notify_prompt("s-1", "n");
    let last = c.start_prompt("s-1", "z");
    let all = c.until_all(&[first.clone(), last.clone()]);
    // The notification's turn came in between, complete, unanswered.
    assert_eq!(
        turns_of(&all),
        vec![
            vec![
                msg("s-1", "a"),
                msg("s-1", "b"),
                msg("s-1", "c"),
                complete("s-1", "completed", "abc", None)
            ],
            vec![msg("s-1", "n"), complete("s-1", "completed", "n", None)],
            vec![msg("s-1", "z"), complete("s-1", "completed", "z", None)],
        ]
    );
    assert_eq!(all.len(), 8 + 2);
    c.expect_nothing_before_probe();
}

#[test]
fn storage_failures_of_a_turn_reach_prompts_sent_either_way() {
    // §9.3 step 1 and §9.8: a failed begin (ACP) or history append (chat)
    // answers -32603 storage; a notification prompt hears it through a
    // failed turn_complete.
    let d = start_args(ECHO_ONLY, &["--test-faults"]);
    let mut c = d.session_client("a", "acp");
    c.new_session("ch", "chat");
    assert_eq!(
        c.ok(
            "debug/set-faults",
            json!({"faults": ["turn_begin", "chat_append"]})
        ),
        json!({"faults": ["turn_begin", "chat_append"]})
    );
    let begin = "storage failure: injected storage fault: turn_begin";
    let append = "storage failure: injected storage fault: chat_append";
    // ACP: the turn never starts, nothing is streamed.
    let t = c.prompt("a", "x");
    assert!(t.frames.is_empty(), "{:#?}", t.raw());
    assert_error_exact(
        t.error(),
        -32603,
        Some(begin),
        Some(json!({"reason": "storage"})),
    );
    c.notify_prompt("a", "x");
    assert_eq!(
        c.frame().params(),
        &complete("a", "failed", "", Some(begin))
    );
    c.expect_nothing_before_probe();
    // Chat: streamed, then failed.
    let t = c.prompt("ch", "hello");
    t.check("ch");
    assert_eq!(
        t.updates(),
        vec![
            msg("ch", "hello"),
            complete("ch", "failed", "hello", Some(append))
        ]
    );
    assert_error_exact(
        t.error(),
        -32603,
        Some(append),
        Some(json!({"reason": "storage"})),
    );
    c.notify_prompt("ch", "y");
    let frames = c.until_update(|u| u["type"] == "turn_complete");
    assert_eq!(
        frames.last().unwrap().params(),
        &complete("ch", "failed", "y", Some(append))
    );
    c.expect_nothing_before_probe();
    // Nothing was kept: neither the history nor the in-memory context.
    c.ok("debug/set-faults", json!({"faults": []}));
    let t = c.prompt("ch", "::context");
    assert_eq!(t.result()["content"], r#"{"messages":[]}"#);
    let m = c.ok("session/messages", json!({"session_id": "a"}));
    assert_eq!(m["total"], 0);
    assert_eq!(c.prompt("a", "ok").result()["content"], "ok");
}
