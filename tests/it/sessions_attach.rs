//! `session/attach` (protocol addition) over the real
//! socket: a second client joins a live session without replacing it, sees
//! the same `session/update` stream frame for frame, answers approvals
//! (first answer wins, every client sees `approval_resolved`), and a client
//! going away changes nothing for the others. Ownership as §6.6; a session
//! that is not live is not found.

// Unix only: OS accounts (useradd).

use crate::common;
use common::chat::plain_chat;
use common::errors::{invalid_params, not_owner, session_not_found};
use common::sessions;
use common::start::start_echo;
use common::updates::{tool_call_upd, tool_result_upd};
use common::users::{alice, two_principals};

use common::Client;
use serde_json::{json, Value};
use sessions::*;

/// `session/attach` of `sid`; the result.
#[track_caller]
fn attach(c: &mut Client, sid: &str) -> Value {
    c.ok("session/attach", json!({ "session_id": sid }))
}

/// Reads `c`'s frames up to the `turn_complete` of `sid`; the raw frames.
#[track_caller]
fn until_complete(c: &mut Client, sid: &str) -> Vec<Frame> {
    let sid = json!(sid);
    c.until_update(|u| u["type"] == "turn_complete" && u["sessionId"] == sid)
}

fn raw(frames: &[Frame]) -> Vec<String> {
    frames.iter().map(|f| f.raw.clone()).collect()
}

#[test]
fn two_clients_see_identical_streams_of_a_turn_either_prompts() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let sid = format!("s-{mode}");
        let mut a = d.session_client(&sid, mode);
        let mut b = d.client();
        let r = attach(&mut b, &sid);
        assert_eq!(r["session_id"], sid.as_str());
        assert_eq!(r["agent_alias"], "echo");
        assert_eq!(r["chat_mode"], mode);
        assert_eq!(r["running"], false);
        assert_eq!(r["clients"], 2, "the session's channel and b: {r}");
        // Attaching again is idempotent.
        assert_eq!(attach(&mut b, &sid)["clients"], 2);

        let expect = vec![
            msg(&sid, "he"),
            msg(&sid, "ll"),
            msg(&sid, "o"),
            tool_call_upd(&sid, "tc_1", "echo", json!({"a": 1})),
            tool_result_upd(&sid, "tc_1", "echo", "{\"a\":1}"),
            thought(&sid, "hm"),
            complete(&sid, "completed", "hello", None),
        ];
        let prompt = "::chunk 2\nhello\n::tool echo {\"a\":1}\n::think hm";
        // a prompts: a's turn, and b's stream, are the same frames in the same order.
        let t = a.prompt_ok(&sid, prompt);
        t.check(&sid);
        assert_eq!(t.updates(), expect);
        let seen = until_complete(&mut b, &sid);
        assert_eq!(raw(&seen), t.raw(), "b's stream is a's, byte for byte");
        // b prompts: now a watches.
        let t = b.prompt_ok(&sid, prompt);
        assert_eq!(t.updates(), expect);
        let seen = until_complete(&mut a, &sid);
        assert_eq!(raw(&seen), t.raw(), "a's stream is b's, byte for byte");
        // The session was never replaced: one turn each, both kept.
        let m = a.ok("session/messages", json!({ "session_id": sid }));
        if mode == "acp" {
            assert_eq!(m["total"], 8, "{m}");
        }
        a.ok("session/close", json!({ "session_id": sid }));
    }
}

#[test]
fn the_second_clients_answer_resolves_the_firsts_approval() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let sid = format!("s-{mode}");
        let mut a = d.session_client(&sid, mode);
        let mut b = d.client();
        attach(&mut b, &sid);
        let pid = a.start_prompt(&sid, "::approve rm {\"p\":1}\nafter");
        let on_a = a.until_update(|u| u["type"] == "approval_request");
        let on_b = b.until_update(|u| u["type"] == "approval_request");
        assert_eq!(raw(&on_a), raw(&on_b), "both were asked");
        let req = on_a.last().unwrap().params().clone();
        let rid = req["requestId"].clone();
        let ack = b.ok(
            "session/approve",
            json!({"session_id": sid, "request_id": rid, "decision": "allow_once"}),
        );
        assert_eq!(ack["acknowledged"], true, "{ack}");
        let t = a.until_answer(&pid);
        let resolved = upd(
            &sid,
            "approval_resolved",
            json!({"requestId": rid, "decision": "allow_once"}),
        );
        let rest = vec![
            resolved,
            tool_result_upd(&sid, "tc_1", "rm", "{\"p\":1}"),
            msg(&sid, "after"),
            complete(&sid, "completed", "after", None),
        ];
        assert_eq!(t.updates(), rest, "a sees its request resolved by b");
        let seen = until_complete(&mut b, &sid);
        assert_eq!(raw(&seen), t.raw(), "b's stream is a's");
        // a's late answer: the request is no longer pending (§8.12).
        let late = a.ok(
            "session/approve",
            json!({"session_id": sid, "request_id": rid, "decision": "reject"}),
        );
        assert_eq!(
            late,
            json!({"session_id": sid, "request_id": rid, "acknowledged": false})
        );
        a.ok("session/close", json!({ "session_id": sid }));
    }
}

#[test]
fn one_client_disconnecting_mid_turn_changes_nothing_for_the_other() {
    let d = start_echo();
    let long = "abcdefghij".repeat(4);
    let prompt = format!("::chunk 4\n::delay 50\n{long}");
    let expect = |sid: &str| {
        let mut v: Vec<Value> = long
            .as_bytes()
            .chunks(4)
            .map(|c| msg(sid, std::str::from_utf8(c).unwrap()))
            .collect();
        v.push(complete(sid, "completed", &long, None));
        v
    };
    for mode in ["chat", "acp"] {
        // The watcher goes away: the prompter's turn is exact.
        let sid = format!("w-{mode}");
        let mut a = d.session_client(&sid, mode);
        let mut b = d.client();
        attach(&mut b, &sid);
        let pid = a.start_prompt(&sid, &prompt);
        b.until_update(|u| u["type"] == "agent_message_chunk");
        drop(b);
        let t = a.until_answer(&pid);
        assert_eq!(t.updates(), expect(&sid));
        assert_eq!(t.result()["content"], long.as_str());

        // The prompter goes away: the watcher still sees the whole turn.
        let sid = format!("p-{mode}");
        let mut a = d.session_client(&sid, mode);
        let mut b = d.client();
        attach(&mut b, &sid);
        a.start_prompt(&sid, &prompt);
        let first = b.until_update(|u| u["type"] == "agent_message_chunk");
        drop(a);
        let rest = until_complete(&mut b, &sid);
        let all: Vec<Value> = update_params(first.iter().chain(rest.iter()));
        assert_eq!(all, expect(&sid));
        // The session is still live and b may go on with it.
        assert_eq!(b.prompt_ok(&sid, "more").result()["content"], "more");
    }
}

#[test]
fn an_approval_stays_answerable_while_any_attached_client_is_there() {
    let d = start_echo();
    let sid = "s-1";
    let mut a = d.session_client(sid, "acp");
    let mut b = d.client();
    attach(&mut b, sid);
    a.start_prompt(sid, "::approve rm\nafter");
    let req = b.until_update(|u| u["type"] == "approval_request");
    let rid = req.last().unwrap().params()["requestId"].clone();
    // The prompting client goes away: b can still answer (not `unreachable`).
    drop(a);
    let ack = b.ok(
        "session/approve",
        json!({"session_id": sid, "request_id": rid, "decision": "allow_once"}),
    );
    assert_eq!(ack["acknowledged"], true, "{ack}");
    let rest = until_complete(&mut b, sid);
    assert_eq!(
        update_params(&rest),
        vec![
            upd(
                sid,
                "approval_resolved",
                json!({"requestId": rid, "decision": "allow_once"})
            ),
            tool_result_upd(sid, "tc_1", "rm", "{}"),
            msg(sid, "after"),
            complete(sid, "completed", "after", None),
        ]
    );
}

/// Reads `c`'s frames up to its `elicitation/create`; that frame.
#[track_caller]
fn until_ask(c: &mut Client) -> Frame {
    c.until("elicitation/create", |f| {
        f.method() == Some("elicitation/create")
    })
    .1
}

#[test]
fn a_question_goes_to_every_attached_client_and_the_first_answer_wins() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let sid = format!("q-{mode}");
        let mut a = client_caps(&d);
        a.new_session(&sid, mode);
        let mut b = client_caps(&d);
        attach(&mut b, &sid);
        let pid = a.start_prompt(&sid, "::ask Go?\nafter");
        let ask_a = until_ask(&mut a);
        let ask_b = until_ask(&mut b);
        assert_eq!(ask_a.params(), ask_b.params(), "both were asked the same");
        assert_eq!(ask_a.params()["message"], "Go?");
        // b answers first.
        b.send_json(&json!({"jsonrpc": "2.0", "id": ask_b.v["id"],
            "result": {"action": "accept", "content": {"answer": "yes"}}}));
        let t = a.until_answer(&pid);
        let expect = vec![
            upd(&sid, "elicitation_resolved", json!({"action": "accept"})),
            msg(&sid, "answer: yes"),
            msg(&sid, "\nafter"),
            complete(&sid, "completed", "answer: yes\nafter", None),
        ];
        assert_eq!(t.updates(), expect, "a sees the question resolved by b");
        assert_eq!(update_params(&until_complete(&mut b, &sid)), expect);
        // a's late answer is an unknown id (§3.6): dropped, never answered,
        // and the session goes on.
        a.send_json(&json!({"jsonrpc": "2.0", "id": ask_a.v["id"],
            "result": {"action": "decline"}}));
        a.expect_nothing_before_probe();
        assert_eq!(a.prompt_ok(&sid, "next").result()["content"], "next");
        a.ok("session/close", json!({ "session_id": sid }));
    }
}

#[test]
fn attaching_to_a_session_that_is_not_live_is_not_found() {
    let d = start_echo();
    let mut c = d.client();
    session_not_found(&c.fails("session/attach", json!({"session_id": "never"})));
    // Closed: persisted, not live. Resume it with session/new.
    c.new_session("s-1", "acp");
    c.prompt_ok("s-1", "hi");
    c.ok("session/close", json!({"session_id": "s-1"}));
    session_not_found(&c.fails("session/attach", json!({"session_id": "s-1"})));
    invalid_params(&c.fails("session/attach", json!({})));
    invalid_params(&c.fails("session/attach", json!({"session_id": "a b"})));
}

#[test]
fn session_new_on_a_session_another_client_uses_joins_it_mid_turn() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let sid = format!("s-{mode}");
        let mut a = d.session_client(&sid, mode);
        let first = a.ok("session/attach", json!({ "session_id": sid }));
        let long = "abcdefghij".repeat(4);
        let pid = a.start_prompt(&sid, &format!("::chunk 4\n::delay 100\n{long}"));
        a.until_update(|u| u["type"] == "agent_message_chunk");
        // zerocode's resume: session/new on the live id, from another connection.
        let mut b = d.client();
        let joined = b.new_session(&sid, mode);
        assert_eq!(
            joined["incarnation"], first["incarnation"],
            "joined: {joined}"
        );
        assert_eq!(joined["attached"], true, "{joined}");
        assert_eq!(joined["resumed"], true, "{joined}");
        // a's turn goes on to the end; b sees its rest, ending the same way.
        let t = a.until_answer(&pid);
        assert_eq!(t.turn_complete()["outcome"], "completed", "{:#?}", t.raw());
        assert_eq!(t.result()["content"], long.as_str());
        let seen = until_complete(&mut b, &sid);
        assert_eq!(
            seen.last().map(|f| f.raw.clone()),
            t.raw().last().map(|s| s.to_string()),
            "b sees the same turn_complete"
        );
        a.ok("session/close", json!({ "session_id": sid }));
    }
}

#[test]
fn session_new_with_replace_still_replaces_a_session_in_use() {
    let d = start_echo();
    let mut a = d.session_client("s-1", "chat");
    let mut b = d.client();
    let first = attach(&mut b, "s-1");
    let again = b.ok(
        "session/new",
        json!({"session_id": "s-1", "agent_alias": "echo", "chat_mode": "chat", "replace": true}),
    );
    assert_ne!(again["incarnation"], first["incarnation"], "replaced");
    assert!(again.get("attached").is_none(), "{again}");
    // b's new incarnation streams to b only: a attached the old one.
    let t = b.prompt_ok("s-1", "solo");
    assert_eq!(t.result()["content"], "solo");
    a.expect_nothing_before_probe();
    // A session nobody else uses is replaced as in version 1 (the owner's own connection).
    let again2 = b.new_session("s-1", "chat");
    assert_ne!(again2["incarnation"], again["incarnation"], "{again2}");
    assert!(again2.get("attached").is_none(), "{again2}");
}

#[test]
fn chat_resume_attaches_to_a_live_session_and_its_turn_goes_on() {
    let d = start_echo();
    let mut a = d.session_client("s-1", "chat");
    let long = "abcdefghij".repeat(4);
    let pid = a.start_prompt("s-1", &format!("::chunk 4\n::delay 100\n{long}"));
    a.until_update(|u| u["type"] == "agent_message_chunk");
    // A second window on the same session, mid-turn.
    let mut chat = plain_chat(&d, &["--resume", "s-1"]);
    chat.wait_err("session s-1 with agent echo (resumed");
    // a's turn was not replaced: it completes with the whole text.
    let t = a.until_answer(&pid);
    assert_eq!(t.turn_complete()["outcome"], "completed", "{:#?}", t.raw());
    assert_eq!(t.result()["content"], long.as_str());
    // The chat prompts the same live session; a watches its turn.
    chat.send("from chat");
    chat.wait_out("from chat", 0);
    let seen = until_complete(&mut a, "s-1");
    assert_eq!(
        update_params(&seen),
        vec![
            msg("s-1", "from chat"),
            complete("s-1", "completed", "from chat", None)
        ]
    );
}

#[test]
fn a_non_owner_is_refused_and_an_admin_may_attach() {
    let Some((account, env)) = two_principals() else {
        return;
    };
    let mut op = env.client();
    let mut alice = alice(&account, &env);

    op.new_session("op-1", "acp");
    not_owner(&alice.fails("session/attach", json!({"session_id": "op-1"})));
    // Refused before anything changed: op's turn streams to op only.
    let t = op.prompt_ok("op-1", "secret");
    assert_eq!(t.result()["content"], "secret");
    alice.expect_nothing_before_probe();

    // The admin may act on others' sessions (§6.6), attach included.
    alice.new_session("a-1", "chat");
    assert_eq!(attach(&mut op, "a-1")["clients"], 2);
    let t = alice.prompt_ok("a-1", "mine");
    let seen = until_complete(&mut op, "a-1");
    assert_eq!(raw(&seen), t.raw());
}
