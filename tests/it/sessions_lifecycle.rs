//! The life of sessions over the real socket (§8.3, §8.4, §8.7–§8.11,
//! §9.8, §9.9, §4): the prompt queue, the live-session limit, replacement,
//! close, kill, delete, store selection, listing and paging.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::{
    agent_not_configured, session_closed, session_deleted, session_killed, session_limit,
    session_not_found,
};
use common::sessions;
use common::start::{config_with, echo_client, echo_session, start, start_echo};
use common::values::{items, pluck};
use common::wait::eventually;

use common::Client;
use serde_json::{json, Value};
use sessions::*;

/// `[role, kind, content]` of every row of a `session/messages` result.
fn rows(m: &Value) -> Vec<Value> {
    m["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages: {m}"))
        .iter()
        .map(|r| json!([r["role"], r["kind"], r["content"]]))
        .collect()
}

fn user(s: &str) -> Value {
    json!(["user", "message", s])
}

fn assistant(s: &str) -> Value {
    json!(["assistant", "message", s])
}

fn marker(s: &str) -> Value {
    json!(["system", "interruption_marker", s])
}

/// Prompt `k` of the queue tests: several one-character chunks.
fn queued_prompt(k: usize) -> String {
    format!("::chunk 1\nq{k}-xyz")
}

/// The updates of `queued_prompt(k)` on `sid`.
fn queued_turn(sid: &str, k: usize) -> Vec<Value> {
    let text = format!("q{k}-xyz");
    let mut v: Vec<Value> = text.chars().map(|ch| msg(sid, &ch.to_string())).collect();
    v.push(complete(sid, "completed", &text, None));
    v
}

// ---------------------------------------------------------------------------
// The queue

#[test]
fn pipelined_prompts_run_in_fifo_order_without_interleaving() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("q-{mode}");
        c.new_session(&sid, mode);
        let ids: Vec<Value> = (0..6)
            .map(|k| c.start_prompt(&sid, &queued_prompt(k)))
            .collect();
        let all = c.until_all(&ids);
        // Turn by turn, in the order sent, each whole before the next.
        let expected: Vec<Vec<Value>> = (0..6).map(|k| queued_turn(&sid, k)).collect();
        assert_eq!(turns_of(&all), expected, "mode {mode}");
        // Each answer follows its own turn_complete, and carries its content.
        let completes: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_update() && f.kind() == "turn_complete")
            .map(|(i, _)| i)
            .collect();
        for (k, id) in ids.iter().enumerate() {
            let at = answer_index(&all, id);
            assert!(at > completes[k], "answer {k} before its turn_complete");
            assert_eq!(
                all[at].result(),
                &json!({"session_id": sid, "stop_reason": "end_turn", "content": format!("q{k}-xyz")})
            );
        }
        c.expect_nothing_before_probe();
    }
}

#[test]
fn each_queued_prompt_is_answered_before_the_next_turn_streams() {
    // The race is narrow: 3 rounds of 30 pipelined prompts make it show.
    let d = start(
        "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\ncontext_max_messages = 1000\n",
    );
    let mut c = d.session_client("s-1", "chat");
    for _round in 0..3 {
        let ids: Vec<Value> = (0..30)
            .map(|k| c.start_prompt("s-1", &queued_prompt(k)))
            .collect();
        let all = c.until_all(&ids);
        let mut expected = Vec::new();
        for (k, id) in ids.iter().enumerate() {
            expected.extend(queued_turn("s-1", k));
            expected.push(json!({"jsonrpc": "2.0", "result": {"session_id": "s-1", "stop_reason": "end_turn", "content": format!("q{k}-xyz")}, "id": id}));
        }
        let got: Vec<Value> = all
            .iter()
            .map(|f| {
                if f.is_update() {
                    f.params().clone()
                } else {
                    f.v.clone()
                }
            })
            .collect();
        if let Some(i) = (0..got.len().max(expected.len())).find(|&i| got.get(i) != expected.get(i))
        {
            panic!(
                "frame {i}: expected {:?}, got {:?}",
                expected.get(i).map(Value::to_string),
                got.get(i).map(Value::to_string)
            );
        }
    }
}

/// Sends a probe and waits for its answer: every frame sent before it was
/// dispatched (frames are read and dispatched in order, §3.7).
fn sync(c: &mut Client) {
    c.expect_nothing_before_probe();
}

/// A new `mode` session `sid` after a turn `done`, then a turn streaming
/// `text` and sleeping, and a prompt `queued` behind it, all dispatched:
/// the ids of the running and the queued prompt.
fn running_and_queued(
    c: &mut Client,
    sid: &str,
    mode: &str,
    done: &str,
    text: &str,
) -> (Value, Value) {
    c.new_session(sid, mode);
    c.prompt(sid, done);
    let running = c.start_prompt(sid, &format!("{text}\n::sleep 3600000"));
    c.until_update(|u| u["text"] == text);
    let queued = c.start_prompt(sid, "queued");
    sync(c);
    (running, queued)
}

#[test]
fn prompts_from_two_clients_share_one_fifo_queue() {
    let d = start_echo();
    let mut a = client_caps(&d);
    let mut b = d.client();
    a.new_session("s-1", "acp");
    // A holds the session with an unanswered question.
    let hold = a.start_prompt("s-1", "::ask hold");
    let (_, ask) = a.until("the ask", |f| f.method() == Some("elicitation/create"));
    // Then B, A, B, A, B queue up, each dispatched before the next is sent.
    let mut sent: Vec<(char, Value)> = Vec::new();
    for k in 1..=5 {
        let (name, c) = if k % 2 == 1 {
            ('b', &mut b)
        } else {
            ('a', &mut a)
        };
        let id = c.start_prompt("s-1", &format!("p{k}\n::context"));
        sync(c);
        sent.push((name, id));
    }
    a.send_json(&json!({"jsonrpc": "2.0", "result": {"action": "decline"}, "id": ask.v["id"]}));
    let a_ids: Vec<Value> = std::iter::once(hold.clone())
        .chain(
            sent.iter()
                .filter(|(n, _)| *n == 'a')
                .map(|(_, id)| id.clone()),
        )
        .collect();
    let b_ids: Vec<Value> = sent
        .iter()
        .filter(|(n, _)| *n == 'b')
        .map(|(_, id)| id.clone())
        .collect();
    let a_all = a.until_all(&a_ids);
    let b_all = b.until_all(&b_ids);
    // Each client streams only its own turns, whole.
    let a_turns = turns_of(&a_all);
    let b_turns = turns_of(&b_all);
    assert_eq!(a_turns.len(), 3);
    assert_eq!(b_turns.len(), 3);
    // The context each turn saw proves the order they ran in: FIFO.
    let content_of = |all: &[Frame], id: &Value| {
        all[answer_index(all, id)].result()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(content_of(&a_all, &hold), "answer: declined");
    let mut history = vec![
        json!({"role": "user", "kind": "message", "content": "::ask hold"}),
        json!({"role": "assistant", "kind": "message", "content": "answer: declined"}),
    ];
    for (k, (name, id)) in sent.iter().enumerate() {
        let all = if *name == 'a' { &a_all } else { &b_all };
        let content = content_of(all, id);
        let p = format!("p{}", k + 1);
        let (first, ctx) = content.split_once('\n').unwrap();
        assert_eq!(first, p);
        let ctx: Value = serde_json::from_str(ctx).unwrap();
        assert_eq!(ctx["messages"], json!(history), "turn {p} ran out of order");
        history
            .push(json!({"role": "user", "kind": "message", "content": format!("{p}\n::context")}));
        history.push(json!({"role": "assistant", "kind": "message", "content": content}));
    }
}

#[test]
fn the_33rd_waiting_prompt_is_queue_full() {
    // No auto-compaction in the 34 turns (§9.5).
    let d = start(
        "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\ncontext_max_messages = 1000\n",
    );
    let mut c = d.session_client("s-1", "chat");
    let first = c.start_prompt("s-1", "go\n::sleep 3600000");
    c.until_update(|u| u["text"] == "go");
    let waiting: Vec<Value> = (0..32)
        .map(|k| c.start_prompt("s-1", &format!("w{k}")))
        .collect();
    let e = c.fails(
        "session/prompt",
        json!({"session_id": "s-1", "prompt": "one too many"}),
    );
    assert_error_exact(
        &e,
        -32002,
        Some("Session busy: queue full"),
        Some(json!({"reason": "queue_full", "max": 32})),
    );
    // Releasing the first turn lets the 32 run, in order.
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let mut ids = vec![first.clone(), cid];
    ids.extend(waiting.iter().cloned());
    let all = c.until_all(&ids);
    let turns = turns_of(&all);
    assert_eq!(turns.len(), 33);
    assert_eq!(
        turns[0],
        vec![complete("s-1", "cancelled", "go", Some("cancelled"))]
    );
    for (k, id) in waiting.iter().enumerate() {
        let text = format!("w{k}");
        assert_eq!(
            turns[k + 1],
            vec![msg("s-1", &text), complete("s-1", "completed", &text, None)]
        );
        assert_eq!(all[answer_index(&all, id)].result()["content"], text);
    }
    // The queue has room again.
    assert_eq!(c.prompt("s-1", "again").result()["content"], "again");
}

// ---------------------------------------------------------------------------
// The live-session limit and replacement

#[test]
fn the_65th_live_session_is_refused_and_replacement_makes_a_new_incarnation() {
    let (_d, mut c) = echo_client();
    let mut incarnations = Vec::new();
    for k in 0..64 {
        let mode = if k % 2 == 0 { "chat" } else { "acp" };
        let r = c.new_session(&format!("s{k}"), mode);
        incarnations.push(r["incarnation"].as_u64().unwrap());
    }
    assert!(
        incarnations.windows(2).all(|w| w[0] < w[1]),
        "{incarnations:?}"
    );
    assert_eq!(c.status()["active_sessions"], 64);
    for mode in ["chat", "acp"] {
        let e = c.new_session_fails("s64", mode);
        session_limit(&e);
    }
    let e = c.fails("session/new", json!({"agent_alias": "echo"}));
    assert_eq!(e["code"], -32001);

    // Replacing a live one is allowed at the limit: a new incarnation.
    let r = c.new_session("s1", "acp");
    assert_eq!(r["resumed"], true);
    assert!(r["incarnation"].as_u64().unwrap() > incarnations[63]);
    assert_eq!(c.status()["active_sessions"], 64);

    // Rehydrating a closed ACP session counts too.
    c.ok("session/close", json!({"session_id": "s3"}));
    c.new_session("extra", "chat");
    let e = c.fails(
        "session/prompt",
        json!({"session_id": "s3", "prompt": "hi"}),
    );
    session_limit(&e);
    // With room again, the prompt rehydrates it.
    c.ok("session/close", json!({"session_id": "extra"}));
    let t = c.prompt("s3", "hi");
    t.check("s3");
    assert_eq!(t.result()["content"], "hi");
}

#[test]
fn replacing_a_session_fails_its_queued_prompts_with_closed() {
    let (d, mut a) = echo_client();
    let mut b = d.client();
    let r = a.new_session("s-1", "acp");
    let old = r["incarnation"].as_u64().unwrap();
    let running = a.start_prompt("s-1", "abc\n::sleep 3600000");
    a.until_update(|u| u["text"] == "abc");
    let queued = a.start_prompt("s-1", "queued");
    sync(&mut a);
    // B replaces it (explicitly: otherwise it joins a session in use):
    // the running turn is soft-cancelled and waited for.
    let r = b.ok(
        "session/new",
        json!({"session_id": "s-1", "agent_alias": "echo", "chat_mode": "acp", "replace": true}),
    );
    assert_eq!(r["resumed"], true);
    assert!(r["incarnation"].as_u64().unwrap() > old);
    let all = a.until_all(&[running.clone(), queued.clone()]);
    assert_eq!(
        all[answer_index(&all, &running)].result(),
        &json!({"session_id": "s-1", "stop_reason": "cancelled", "content": "abc"})
    );
    session_closed(all[answer_index(&all, &queued)].error());
    assert_eq!(
        turns_of(&all),
        vec![vec![complete("s-1", "cancelled", "abc", Some("cancelled"))]]
    );
    // The new incarnation has the history and takes prompts.
    let t = b.prompt("s-1", "::context");
    assert_eq!(
        t.result()["content"],
        r#"{"messages":[{"role":"user","kind":"message","content":"abc\n::sleep 3600000"},{"role":"assistant","kind":"message","content":"abc"}]}"#
    );
}

// ---------------------------------------------------------------------------
// close, kill, delete

#[test]
fn close_waits_for_the_running_turn_and_keeps_the_history() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("c-{mode}");
        let (running, queued) = running_and_queued(&mut c, &sid, mode, "one", "two");
        let close = c.send("session/close", json!({ "session_id": sid }));
        let all = c.until_all(&[running.clone(), queued.clone(), close.clone()]);
        // The queued prompt never runs.
        session_closed(all[answer_index(&all, &queued)].error());
        assert_eq!(turns_of(&all).len(), 1);
        let tc = all
            .iter()
            .position(|f| f.is_update() && f.kind() == "turn_complete")
            .expect("turn_complete");
        assert!(
            tc < answer_index(&all, &close),
            "close answered before the turn ended"
        );
        assert_eq!(
            all[answer_index(&all, &close)].result(),
            &json!({"session_id": sid, "closed": true})
        );
        assert_eq!(
            all[answer_index(&all, &running)].result(),
            &json!({"session_id": sid, "stop_reason": "cancelled", "content": "two"})
        );
        // Gone from memory...
        let e = c.fails("session/close", json!({ "session_id": sid }));
        session_not_found(&e);
        assert_eq!(c.status()["session_ids"], json!([]));
        // ...not from storage.
        let m = c.ok("session/messages", json!({ "session_id": sid }));
        assert_eq!(m["chat_mode"], mode);
        assert_eq!(
            rows(&m),
            vec![
                user("one"),
                assistant("one"),
                user("two\n::sleep 3600000"),
                assistant("two")
            ]
        );
        // A chat session is not rehydrated by a prompt; an ACP one is.
        if mode == "chat" {
            let e = c.fails("session/prompt", json!({"session_id": sid, "prompt": "x"}));
            session_not_found(&e);
        }
        // session/new resumes it.
        let r = c.new_session(&sid, mode);
        assert_eq!(r["resumed"], true);
        assert_eq!(r["message_count"], 4);
        let t = c.prompt(&sid, "::context");
        assert_eq!(
            t.result()["content"],
            r#"{"messages":[{"role":"user","kind":"message","content":"one"},{"role":"assistant","kind":"message","content":"one"},{"role":"user","kind":"message","content":"two\n::sleep 3600000"},{"role":"assistant","kind":"message","content":"two"}]}"#
        );
        c.ok("session/close", json!({ "session_id": sid }));
    }
}

#[test]
fn an_acp_session_closed_is_rehydrated_by_a_prompt() {
    let (_d, mut c) = echo_client();
    let r = c.new_session("s-1", "acp");
    let first = r["incarnation"].as_u64().unwrap();
    c.prompt("s-1", "hi");
    c.ok("session/close", json!({"session_id": "s-1"}));
    let t = c.prompt("s-1", "::context");
    t.check("s-1");
    assert_eq!(
        t.result()["content"],
        r#"{"messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hi"}]}"#
    );
    assert_eq!(c.status()["session_ids"], json!(["s-1"]));
    let l = c.ok("session/list", json!({}));
    assert_eq!(l["sessions"][0]["state"], "live");
    let r = c.new_session("s-1", "acp");
    assert!(r["incarnation"].as_u64().unwrap() > first + 1);
    assert_eq!(r["message_count"], 4);
}

#[test]
fn kill_mid_turn_answers_killed_and_tombstones_the_session() {
    let (_d, mut c) = echo_session("k", "acp");
    c.prompt("k", "before");
    let running = c.start_prompt("k", "abc\n::sleep 3600000");
    c.until_update(|u| u["text"] == "abc");
    let queued = c.start_prompt("k", "queued");
    sync(&mut c);
    let kill = c.send("session/kill", json!({"session_id": "k"}));
    let all = c.until_all(&[running.clone(), queued.clone(), kill.clone()]);
    // No turn_complete for the killed turn; its prompt and the queued one fail.
    assert!(
        all.iter().all(|f| !f.is_update()),
        "{:#?}",
        all.iter().map(|f| &f.raw).collect::<Vec<_>>()
    );
    session_killed(all[answer_index(&all, &running)].error());
    session_killed(all[answer_index(&all, &queued)].error());
    assert_eq!(
        all[answer_index(&all, &kill)].result(),
        &json!({"session_id": "k", "killed": true})
    );
    c.expect_nothing_before_probe();
    // Never rehydrated again.
    let e = c.new_session_fails("k", "acp");
    session_killed(&e);
    let e = c.fails("session/prompt", json!({"session_id": "k", "prompt": "x"}));
    session_killed(&e);
    // The history stays readable, the killed turn's progress folded in.
    let m = c.ok("session/messages", json!({"session_id": "k"}));
    assert_eq!(
        rows(&m),
        vec![
            user("before"),
            assistant("before"),
            user("abc\n::sleep 3600000"),
            assistant("abc"),
            marker("Turn killed"),
        ]
    );
    // Listed as killed only on request; not in list-acp.
    let l = c.ok("session/list", json!({}));
    assert_eq!(l["sessions"], json!([]));
    let l = c.ok("session/list", json!({"include_killed": true}));
    assert_eq!(items(&l["sessions"]).len(), 1);
    assert_eq!(l["sessions"][0]["state"], "killed");
    assert_eq!(c.ok("session/list-acp", json!({}))["sessions"], json!([]));
    // Nothing left to kill; a new chat session may take the id.
    let e = c.fails("session/kill", json!({"session_id": "k"}));
    session_not_found(&e);
    let r = c.new_session("k", "chat");
    assert_eq!(r["resumed"], false);
}

#[test]
fn kill_of_an_idle_or_persisted_session() {
    let (_d, mut c) = echo_client();
    // A persisted ACP row with no live session.
    c.new_session("p", "acp");
    c.prompt("p", "hi");
    c.ok("session/close", json!({"session_id": "p"}));
    assert_eq!(
        c.ok("session/kill", json!({"session_id": "p"})),
        json!({"session_id": "p", "killed": true})
    );
    let e = c.fails("session/prompt", json!({"session_id": "p", "prompt": "x"}));
    assert_eq!(e["data"], json!({"reason": "killed"}));
    let m = c.ok("session/messages", json!({"session_id": "p"}));
    assert_eq!(rows(&m), vec![user("hi"), assistant("hi")]);
    // An idle chat session: removed from memory, history kept.
    c.new_session("ch", "chat");
    c.prompt("ch", "yo");
    assert_eq!(
        c.ok("session/kill", json!({"session_id": "ch"}))["killed"],
        true
    );
    assert_eq!(c.status()["session_ids"], json!([]));
    let m = c.ok("session/messages", json!({"session_id": "ch"}));
    assert_eq!(rows(&m), vec![user("yo"), assistant("yo")]);
    // Unknown.
    let e = c.fails("session/kill", json!({"session_id": "nope"}));
    session_not_found(&e);
}

#[test]
fn delete_mid_turn_answers_deleted_then_reports_nothing_left() {
    let d = start_echo();
    for mode in ["acp", "chat"] {
        let mut c = d.client();
        let sid = format!("d-{mode}");
        let (running, queued) = running_and_queued(&mut c, &sid, mode, "before", "abc");
        let del = c.send("session/delete", json!({ "session_id": sid }));
        let all = c.until_all(&[running.clone(), queued.clone(), del.clone()]);
        assert!(all.iter().all(|f| !f.is_update()));
        for id in [&running, &queued] {
            session_deleted(all[answer_index(&all, id)].error());
        }
        assert_eq!(
            all[answer_index(&all, &del)].result(),
            &json!({"session_id": sid, "deleted": true})
        );
        let e = c.fails("session/messages", json!({ "session_id": sid }));
        session_not_found(&e);
        assert_eq!(
            c.ok("session/delete", json!({ "session_id": sid })),
            json!({"session_id": sid, "deleted": false})
        );
        // The id starts afresh.
        let r = c.new_session(&sid, mode);
        assert_eq!(
            (r["resumed"].clone(), r["message_count"].clone()),
            (json!(false), json!(0))
        );
    }
}

#[test]
fn chat_and_acp_stores_of_one_id_stay_isolated() {
    let (_d, mut c) = echo_session("same", "chat");
    c.prompt("same", "chat words");
    // An ACP session with the same id replaces the live chat one, and starts empty.
    let r = c.new_session("same", "acp");
    assert_eq!(
        (r["resumed"].clone(), r["message_count"].clone()),
        (json!(false), json!(0))
    );
    c.prompt("same", "acp words");
    let chat = c.ok(
        "session/messages",
        json!({"session_id": "same", "chat_mode": "chat"}),
    );
    assert_eq!(chat["chat_mode"], "chat");
    assert_eq!(
        rows(&chat),
        vec![user("chat words"), assistant("chat words")]
    );
    let acp = c.ok(
        "session/messages",
        json!({"session_id": "same", "chat_mode": "acp"}),
    );
    assert_eq!(rows(&acp), vec![user("acp words"), assistant("acp words")]);
    // Without chat_mode: the live session's mode.
    let m = c.ok("session/messages", json!({"session_id": "same"}));
    assert_eq!(m["chat_mode"], "acp");
    // Both are listed, with their keys.
    let l = c.ok("session/list", json!({}));
    let mut keys: Vec<(Value, Value, Value)> = items(&l["sessions"])
        .iter()
        .map(|s| {
            (
                s["chat_mode"].clone(),
                s["session_key"].clone(),
                s["state"].clone(),
            )
        })
        .collect();
    keys.sort_by_key(|k| k.0.to_string());
    assert_eq!(
        keys,
        vec![
            (json!("acp"), json!("same"), json!("live")),
            (json!("chat"), json!("rpc_same"), json!("persisted")),
        ]
    );
    // Deleting the chat history leaves the live ACP session and its row.
    assert_eq!(
        c.ok(
            "session/delete",
            json!({"session_id": "same", "chat_mode": "chat"})
        )["deleted"],
        true
    );
    let e = c.fails(
        "session/messages",
        json!({"session_id": "same", "chat_mode": "chat"}),
    );
    session_not_found(&e);
    assert_eq!(c.prompt("same", "still").result()["content"], "still");
    // Resuming in chat mode now starts empty; the ACP row is untouched.
    let r = c.new_session("same", "chat");
    assert_eq!(r["resumed"], false);
    let acp = c.ok(
        "session/messages",
        json!({"session_id": "same", "chat_mode": "acp"}),
    );
    assert_eq!(acp["total"], 4);
    // Without chat_mode and with a live chat session: the chat store.
    assert_eq!(
        c.ok("session/delete", json!({"session_id": "same"}))["deleted"],
        true
    );
    assert_eq!(c.status()["session_ids"], json!([]));
    // No live session now: the ACP row is selected.
    let m = c.ok("session/messages", json!({"session_id": "same"}));
    assert_eq!(m["chat_mode"], "acp");
    assert_eq!(
        c.ok("session/delete", json!({"session_id": "same"}))["deleted"],
        true
    );
    assert_eq!(
        c.ok("session/delete", json!({"session_id": "same"}))["deleted"],
        false
    );
}

// ---------------------------------------------------------------------------
// Listing and paging

#[test]
fn session_list_entries_states_and_limit() {
    let (_d, mut c) = echo_session("a-chat", "chat");
    c.prompt("a-chat", "hi");
    c.new_session("b-acp", "acp");
    c.prompt("b-acp", "hi");
    c.prompt("b-acp", "again");
    c.new_session("c-closed", "acp");
    c.ok("session/close", json!({"session_id": "c-closed"}));
    c.new_session("d-chat-closed", "chat");
    c.ok("session/close", json!({"session_id": "d-chat-closed"}));

    let l = c.ok("session/list", json!({}));
    let entries = items(&l["sessions"]);
    assert_eq!(entries.len(), 4, "{l}");
    let find = |id: &str| -> Value {
        entries
            .iter()
            .find(|e| e["session_id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {l}"))
            .clone()
    };
    let stamp = |v: &Value| {
        let s = v.as_str().unwrap();
        assert!(
            s.len() == 20 && s.ends_with('Z') && &s[10..11] == "T",
            "RFC 3339 UTC: {s}"
        );
    };
    for e in entries {
        stamp(&e["created_at"]);
        stamp(&e["last_activity"]);
    }
    let strip = |mut e: Value| {
        let o = e.as_object_mut().unwrap();
        o.remove("created_at");
        o.remove("last_activity");
        // Addition: where the session works.
        let ws = o.remove("workspace_dir").unwrap();
        assert!(
            std::path::Path::new(ws.as_str().unwrap()).ends_with("agents/echo/workspace"),
            "{ws}"
        );
        e
    };
    assert_eq!(
        strip(find("a-chat")),
        json!({"session_id": "a-chat", "session_key": "rpc_a-chat", "chat_mode": "chat",
               "agent_alias": "echo", "owner_principal_id": "shared-operator",
               "state": "live", "message_count": 2})
    );
    assert_eq!(
        strip(find("b-acp")),
        json!({"session_id": "b-acp", "session_key": "b-acp", "chat_mode": "acp",
               "agent_alias": "echo", "owner_principal_id": "shared-operator",
               "state": "live", "interaction_surface": "rpc", "message_count": 4})
    );
    assert_eq!(find("c-closed")["state"], "persisted");
    assert_eq!(find("c-closed")["message_count"], 0);
    assert_eq!(find("d-chat-closed")["state"], "persisted");
    assert!(find("d-chat-closed").get("interaction_surface").is_none());

    // Filters.
    let only = |mode: &str| -> Vec<String> {
        let mut ids: Vec<String> = entries
            .iter()
            .filter(|e| e["chat_mode"] == mode)
            .map(|e| e["session_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    for mode in ["chat", "acp"] {
        let l = c.ok("session/list", json!({ "chat_mode": mode }));
        let mut ids = pluck(&l["sessions"], "session_id");
        ids.sort();
        assert_eq!(ids, only(mode));
    }
    // session/list-acp: the ACP rows, with the same entries.
    let acp = c.ok("session/list-acp", json!({}));
    let mut ids = pluck(&acp["sessions"], "session_id");
    ids.sort();
    assert_eq!(ids, ["b-acp", "c-closed"]);
    assert!(items(&acp["sessions"]).contains(&find("b-acp")));

    // limit.
    for n in [1, 3] {
        let l = c.ok("session/list", json!({ "limit": n }));
        assert_eq!(items(&l["sessions"]).len(), n);
    }
    for bad in [json!(0), json!(1001), json!(-1), json!("x")] {
        let e = c.fails("session/list", json!({ "limit": bad }));
        assert_eq!(e["code"], -32602, "limit {bad}: {e}");
    }
    assert_eq!(
        items(&c.ok("session/list", json!({"limit": 1000}))["sessions"]).len(),
        4
    );
    let e = c.fails("session/list", json!({"chat_mode": "other"}));
    assert_eq!(e["code"], -32602, "{e}");
}

#[test]
fn session_messages_pages_from_the_newest_rows() {
    let d = start_echo();
    for mode in ["acp", "chat"] {
        let mut c = d.client();
        let sid = format!("m-{mode}");
        c.new_session(&sid, mode);
        for k in 1..=3 {
            c.prompt(&sid, &format!("p{k}"));
        }
        let page = |c: &mut Client, extra: Value| {
            let mut p = json!({ "session_id": sid });
            for (k, v) in extra.as_object().unwrap() {
                p[k] = v.clone();
            }
            c.ok("session/messages", p)
        };
        let all = page(&mut c, json!({}));
        assert_eq!(all["session_id"], sid);
        assert_eq!(all["chat_mode"], mode);
        assert_eq!(
            (all["total"].clone(), all["start"].clone()),
            (json!(6), json!(0))
        );
        let seqs: Vec<Value> = items(&all["messages"])
            .iter()
            .map(|r| r["seq"].clone())
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6].map(|n| json!(n)));
        assert_eq!(
            rows(&all),
            vec![
                user("p1"),
                assistant("p1"),
                user("p2"),
                assistant("p2"),
                user("p3"),
                assistant("p3")
            ]
        );
        // The newest two, then the two before them, then the rest.
        let p = page(&mut c, json!({"limit": 2}));
        assert_eq!(
            (p["total"].clone(), p["start"].clone()),
            (json!(6), json!(4))
        );
        assert_eq!(rows(&p), vec![user("p3"), assistant("p3")]);
        let p = page(&mut c, json!({"limit": 2, "before_index": 4}));
        assert_eq!(p["start"], 2);
        assert_eq!(rows(&p), vec![user("p2"), assistant("p2")]);
        let p = page(&mut c, json!({"limit": 5, "before_index": 2}));
        assert_eq!(p["start"], 0);
        assert_eq!(rows(&p), vec![user("p1"), assistant("p1")]);
        let p = page(&mut c, json!({"before_index": 0}));
        assert_eq!(
            (p["messages"].clone(), p["start"].clone()),
            (json!([]), json!(0))
        );
        // before_index above total is total.
        let p = page(&mut c, json!({"limit": 1, "before_index": 100}));
        assert_eq!(
            (p["total"].clone(), p["start"].clone()),
            (json!(6), json!(5))
        );
        assert_eq!(p["messages"][0]["seq"], 6);
        // limit bounds.
        for bad in [json!(0), json!(1001)] {
            let e = c.fails("session/messages", json!({"session_id": sid, "limit": bad}));
            assert_eq!(e["code"], -32602, "limit {bad}: {e}");
        }
        assert_eq!(
            items(&page(&mut c, json!({"limit": 1000}))["messages"]).len(),
            6
        );
    }
    // Unknown session, bad ids.
    let mut c = d.client();
    let e = c.fails("session/messages", json!({"session_id": "nope"}));
    session_not_found(&e);
    let e = c.fails(
        "session/messages",
        json!({"session_id": "nope", "chat_mode": "acp"}),
    );
    session_not_found(&e);
    let e = c.fails("session/messages", json!({}));
    assert_eq!(e["code"], -32602);
}

#[test]
fn session_new_validation() {
    let (d, mut c) = echo_client();
    let e = c.fails("session/new", json!({"agent_alias": "nope"}));
    agent_not_configured(&e, "nope");
    let e = c.fails("session/new", json!({}));
    assert_eq!(e["code"], -32602);
    for bad in ["", "a b", "x/y", &"x".repeat(129)] {
        let e = c.fails(
            "session/new",
            json!({"agent_alias": "echo", "session_id": bad}),
        );
        assert_eq!(e["code"], -32602, "{bad:?}: {e}");
    }
    let e = c.fails(
        "session/new",
        json!({"agent_alias": "echo", "chat_mode": "other"}),
    );
    assert_eq!(e["code"], -32602);
    // A generated id is a lowercase UUIDv4; null means absent.
    let r = c.ok(
        "session/new",
        json!({"agent_alias": "echo", "session_id": null, "chat_mode": null}),
    );
    let id = r["session_id"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4");
    assert_eq!(r["chat_mode"], "chat");
    assert_eq!(r["agent_alias"], "echo");
    assert_eq!(r["resumed"], false);
    assert_eq!(r["message_count"], 0);
    assert_eq!(
        r["workspace_dir"],
        d.config_dir
            .join("agents")
            .join("echo")
            .join("workspace")
            .display()
            .to_string()
    );
    // The longest id and every allowed character.
    let long = format!("A.b_c:d-{}", "9".repeat(120));
    assert_eq!(c.new_session(&long, "acp")["session_id"], long);
}

#[test]
fn big_replies_are_bounded_in_answers_and_pages_stay_within_4_mib() {
    let (_d, mut c) = echo_session("big", "acp");
    let n = 1_050_000;
    let bounded = format!("{}\u{2026}[truncated]", "a".repeat(1_048_576));
    for k in 0..4 {
        let t = c.prompt("big", &format!("::chunk 2000000\n::repeat {n} a"));
        // Streamed in 64 KiB chunks, in full.
        let chunks = t.chunks();
        assert!(chunks.iter().all(|ch| ch.len() <= 65_536));
        assert_eq!(chunks.iter().map(String::len).sum::<usize>(), n);
        // Bounded at 1 MiB in turn_complete and in the answer (§3.1).
        assert_eq!(t.turn_complete()["content"], bounded.as_str(), "turn {k}");
        assert_eq!(t.result()["content"], bounded.as_str(), "turn {k}");
    }
    // The transcript keeps the full text; a page bounds each row at 1 MiB,
    // marks it, and holds no more than 4 MiB of messages.
    let mut before: Option<u64> = None;
    let mut seen = Vec::new();
    loop {
        let mut p = json!({"session_id": "big"});
        if let Some(b) = before {
            p["before_index"] = json!(b);
        }
        let f = c.call_alone("session/messages", p);
        let r = f.result();
        assert_eq!(r["total"], 8);
        let msgs = items(&r["messages"]);
        assert!(!msgs.is_empty());
        assert!(
            serde_json::to_string(msgs).unwrap().len() <= 4 * 1_048_576,
            "page of {} rows is over 4 MiB",
            msgs.len()
        );
        for m in msgs.iter().rev() {
            seen.push(m["seq"].as_u64().unwrap());
            if m["role"] == "assistant" {
                assert_eq!(m["content"], bounded.as_str());
                assert_eq!(m["truncated"], true);
            } else {
                assert!(
                    m.get("truncated").is_none_or(|t| t == false),
                    "{}",
                    m["seq"]
                );
            }
        }
        let start = r["start"].as_u64().unwrap();
        if start == 0 {
            break;
        }
        assert!(msgs.len() < 8, "one page cannot hold 4 big rows");
        before = Some(start);
    }
    seen.reverse();
    assert_eq!(seen, (1..=8).collect::<Vec<u64>>());
}

#[test]
fn idle_sessions_are_reclaimed_and_busy_ones_kept() {
    let d = start(&config_with("[daemon]\nsession_idle_secs = 1\n"));
    let mut c = d.session_client("idle-acp", "acp");
    c.prompt("idle-acp", "hi");
    c.new_session("idle-chat", "chat");
    c.new_session("busy", "chat");
    let running = c.start_prompt("busy", "x\n::sleep 3600000");
    c.until_update(|u| u["text"] == "x");
    let mut probe = d.client();
    eventually(
        "the idle sessions to be reclaimed",
        std::time::Duration::from_secs(10),
        || (probe.status()["session_ids"] == json!(["busy"])).then_some(()),
    );
    // Closed, not lost: the ACP one is rehydrated by a prompt, with its context.
    let t = probe.prompt("idle-acp", "::context");
    assert_eq!(
        t.result()["content"],
        r#"{"messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hi"}]}"#
    );
    let l = probe.ok("session/list", json!({"chat_mode": "chat"}));
    let states: Vec<(Value, Value)> = items(&l["sessions"])
        .iter()
        .map(|e| (e["session_id"].clone(), e["state"].clone()))
        .filter(|(id, _)| id == "idle-chat")
        .collect();
    assert_eq!(states, vec![(json!("idle-chat"), json!("persisted"))]);
    c.send("session/cancel", json!({"session_id": "busy"}));
    let t = c.until_answer(&running);
    assert_eq!(t.result()["stop_reason"], "cancelled");
}

/// `status` on one connection, asked again and again, follows what it
/// shows: sessions going live and ending (from this connection or
/// another), other clients, and the clock. Each connection keeps its last
/// `status` result while nothing in it changed; a stale copy fails here.
#[test]
fn repeated_status_follows_sessions_clients_and_uptime() {
    let (env, mut c) = echo_client();
    let shown = |c: &mut Client| {
        let s = c.status();
        (s["active_sessions"].clone(), s["session_ids"].clone())
    };
    assert_eq!(shown(&mut c), (json!(0), json!([])));
    c.new_session("s-b", "chat");
    assert_eq!(shown(&mut c), (json!(1), json!(["s-b"])));
    let mut other = env.client();
    other.new_session("s-a", "acp");
    assert_eq!(shown(&mut c), (json!(2), json!(["s-a", "s-b"])));
    assert_eq!(c.status()["connections"], 2);
    other.ok("session/close", json!({"session_id": "s-a"}));
    assert_eq!(shown(&mut c), (json!(1), json!(["s-b"])));
    let before = c.status()["uptime_secs"].as_u64().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let after = c.status()["uptime_secs"].as_u64().unwrap();
    assert!(after > before, "uptime_secs stayed at {before}");
}
