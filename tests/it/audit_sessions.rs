//! The session lifecycle audit events carry the peer label and the bound
//! principal (§2.5): `session_created`,
//! `session_closed` (closed and replaced), `session_recovered` (by prompt
//! and by `session/new`), `session_killed`, `session_deleted`, read from the
//! daemon's stderr JSON lines.

use crate::common;
use common::start::echo_session;

use common::own_peer_label;
use serde_json::{json, Value};

const PRINCIPAL: &str = "shared-operator";

fn events(d: &common::Daemon, name: &str, sid: &str) -> Vec<Value> {
    d.log
        .events_named(name)
        .into_iter()
        .filter(|e| e["session_id"] == sid)
        .collect()
}

#[track_caller]
fn assert_audited(d: &common::Daemon, name: &str, sid: &str, count: usize) {
    let found = events(d, name, sid);
    assert_eq!(found.len(), count, "{name} for {sid}: {found:?}");
    for e in &found {
        assert_eq!(e["peer"], own_peer_label(), "{name}: {e}");
        assert_eq!(e["principal_id"], PRINCIPAL, "{name}: {e}");
        assert_eq!(e["level"], "INFO", "{name}: {e}");
    }
}

#[test]
fn every_lifecycle_event_names_the_peer_and_the_principal() {
    let (d, mut c) = echo_session("a1", "acp");
    c.prompt("a1", "one").check("a1");
    c.ok("session/close", json!({"session_id": "a1"}));
    // Rehydrated by a prompt.
    c.prompt("a1", "two").check("a1");
    // Replaced (closed), then resumed from the store by session/new.
    c.new_session("a1", "acp");
    c.ok("session/kill", json!({"session_id": "a1"}));
    c.new_session("c1", "chat");
    c.ok("session/delete", json!({"session_id": "c1"}));
    // The log is written asynchronously: wait for the last event.
    d.log
        .wait_for(0, common::RECV_TIMEOUT, |e| e["event"] == "session_deleted")
        .expect("session_deleted logged");

    // session/new logs `session_created` for the resumed incarnation too.
    assert_audited(&d, "session_created", "a1", 2);
    assert_audited(&d, "session_closed", "a1", 2);
    let reasons: Vec<Value> = events(&d, "session_closed", "a1")
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(reasons, vec![json!("closed"), json!("replaced")]);
    assert_audited(&d, "session_recovered", "a1", 2);
    assert_audited(&d, "session_killed", "a1", 1);
    assert_audited(&d, "session_created", "c1", 1);
    assert_audited(&d, "session_deleted", "c1", 1);
}
