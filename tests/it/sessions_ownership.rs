//! Sessions between two principals (§6.4, §6.6, §8.10): a roster
//! user connecting from its own uid through `security.socket_group`, and
//! the shared operator (admin). Needs root to create the OS accounts;
//! skipped with a printed message otherwise.

use crate::common;
use common::errors::{not_entitled, not_owner};
use common::sessions;
use common::values::{items, pluck};

use common::users::{alice, two_principals};
use serde_json::{json, Value};
use sessions::*;

fn ids(list: &Value) -> Vec<&str> {
    let mut v = pluck(&list["sessions"], "session_id");
    v.sort();
    v
}

#[test]
fn a_roster_user_cannot_touch_another_principals_sessions() {
    let Some((account, env)) = two_principals() else {
        return;
    };
    let mut op = env.client();
    let mut a = alice(&account, &env);

    op.new_session("op-acp", "acp");
    op.prompt("op-acp", "secret");
    op.new_session("op-chat", "chat");
    op.prompt("op-chat", "secret");
    let r = a.new_session("a-chat", "chat");
    assert_eq!(r["session_id"], "a-chat");
    a.new_session("a-acp", "acp");
    a.prompt("a-acp", "mine");

    let not_owned = |e: &Value| not_owner(e);
    for sid in ["op-acp", "op-chat"] {
        not_owned(&a.fails("session/prompt", json!({"session_id": sid, "prompt": "x"})));
        not_owned(&a.fails("session/cancel", json!({ "session_id": sid })));
        not_owned(&a.fails(
            "session/approve",
            json!({"session_id": sid, "request_id": "r", "decision": "allow_once"}),
        ));
        not_owned(&a.fails("session/messages", json!({ "session_id": sid })));
        not_owned(&a.fails("session/close", json!({ "session_id": sid })));
        not_owned(&a.fails("session/kill", json!({ "session_id": sid })));
        not_owned(&a.fails("session/delete", json!({ "session_id": sid })));
    }
    // Resuming or replacing another's session.
    not_owned(&a.new_session_fails("op-acp", "acp"));
    not_owned(&a.new_session_fails("op-chat", "chat"));
    // A persisted (not live) session of the operator's too.
    op.ok("session/close", json!({"session_id": "op-acp"}));
    not_owned(&a.fails(
        "session/prompt",
        json!({"session_id": "op-acp", "prompt": "x"}),
    ));
    not_owned(&a.fails("session/messages", json!({"session_id": "op-acp"})));
    not_owned(&a.fails("session/kill", json!({"session_id": "op-acp"})));
    // A notification prompt refused by ownership is not answered at all.
    a.notify_prompt("op-chat", "x");
    a.expect_nothing_before_probe();

    // Nothing was changed: the operator's sessions and history are intact.
    let m = op.ok("session/messages", json!({"session_id": "op-acp"}));
    assert_eq!(m["total"], 2);
    assert_eq!(op.prompt("op-chat", "still").result()["content"], "still");

    // Lists: alice sees her own only; the admin sees everything.
    assert_eq!(ids(&a.ok("session/list", json!({}))), ["a-acp", "a-chat"]);
    assert_eq!(ids(&a.ok("session/list-acp", json!({}))), ["a-acp"]);
    let st = a.status();
    assert_eq!(st["session_ids"], json!(["a-acp", "a-chat"]));
    assert_eq!(st["active_sessions"], 2);
    let all = op.ok("session/list", json!({}));
    assert_eq!(ids(&all), ["a-acp", "a-chat", "op-acp", "op-chat"]);
    for e in items(&all["sessions"]) {
        let owner = if e["session_id"].as_str().unwrap().starts_with("a-") {
            "user:alice"
        } else {
            "shared-operator"
        };
        assert_eq!(e["owner_principal_id"], owner, "{e}");
    }
    // The admin passes ownership; the session stays alice's.
    assert_eq!(op.prompt("a-chat", "admin").result()["content"], "admin");
    assert_eq!(a.prompt("a-chat", "me").result()["content"], "me");
    let m = a.ok("session/messages", json!({"session_id": "a-chat"}));
    assert_eq!(m["total"], 4);
}

#[test]
fn a_roster_user_is_held_to_its_agents_and_parameters() {
    let Some((account, env)) = two_principals() else {
        return;
    };
    let mut a = alice(&account, &env);
    let e = a.fails(
        "session/new",
        json!({"agent_alias": "other", "session_id": "x"}),
    );
    not_entitled(&e, "other");
    let e = a.fails(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "x", "cwd": "/tmp"}),
    );
    assert_eq!(e["code"], -32012, "{e}");
    assert_eq!(e["data"]["reason"], "admin_only", "{e}");
    // A session of an agent she may not use, made by the admin: ownership first.
    let mut op = env.client();
    op.new_session_of("other", "o", "chat");
    let e = a.fails("session/prompt", json!({"session_id": "o", "prompt": "x"}));
    not_owner(&e);
    // Her own sessions work end to end, approvals and cancel included.
    a.new_session("mine", "acp");
    let id = a.start_prompt("mine", "::approve rm\n::sleep 3600000");
    let frames = a.until_update(|u| u["type"] == "approval_request");
    let req = frames.last().unwrap().params().clone();
    let aid = a.send(
        "session/approve",
        json!({"session_id": "mine", "request_id": req["requestId"], "decision": "allow_once"}),
    );
    let mut all = a.until_update(|u| u["type"] == "tool_result");
    let cid = a.send("session/cancel", json!({"session_id": "mine"}));
    let mut wait = vec![id.clone(), cid];
    if !all.iter().any(|f| f.answers(&aid)) {
        wait.push(aid.clone());
    }
    all.extend(a.until_all(&wait));
    assert_eq!(all[answer_index(&all, &aid)].result()["acknowledged"], true);
    assert_eq!(
        all[answer_index(&all, &id)].result()["stop_reason"],
        "cancelled"
    );
    assert_eq!(
        a.ok("session/delete", json!({"session_id": "mine"}))["deleted"],
        true
    );
}
