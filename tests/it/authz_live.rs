//! The authorization model on any machine (§5.2, §6.4, §6.5, §8.16
//! steps 3–4): with `security.trust_daemon_uid = false` the test's own uid
//! (the daemon's) is mapped through the roster like any other peer, and an
//! admin connects with a pairing token seeded in `config.toml`. Real OS
//! users and the socket group are in tests/it/authz_users.rs.

// Unix only: maps the test's own uid through the roster (trust_daemon_uid = false; a pipe carries no uid).

use crate::common;
use common::assert::err_of;
use common::errors::{
    credential_rejected, missing_grant, not_admin, not_entitled, not_initialized, revoked,
};
use common::start::{start, Env};

use common::users::{config_bytes, digest, get, initialize, new_token, set_many, ADMIN_TOKEN};
use common::{euid, Client, Daemon};
use serde_json::{json, Value};

fn self_roster_config() -> String {
    format!(
        r#"schema_version = 1

[security]
trust_daemon_uid = false

[gateway]
paired_tokens = ["{digest}"]

[agents.echo]
backend = "echo"

[permission_profiles.me]
allowed_agents = ["echo"]
config_write_paths = ["agents.echo.*"]
grants = {{ system = ["read"], config = ["read", "update"], sessions = ["read"] }}

[users.me]
uid = {uid}
permission_profiles = ["me"]
"#,
        digest = digest(ADMIN_TOKEN),
        uid = euid()
    )
}

fn start_self_roster() -> Env {
    start(&self_roster_config())
}

fn admin(d: &Daemon) -> Client {
    let mut c = d.connect();
    let v = initialize(&mut c, Some(ADMIN_TOKEN));
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
    c
}

fn me(d: &Daemon) -> Client {
    let mut c = d.connect();
    let v = initialize(&mut c, None);
    assert_eq!(v["result"]["principalId"], "user:me", "{v}");
    c
}

#[test]
fn an_untrusted_daemon_uid_is_a_roster_user_held_to_its_grants() {
    let d = start_self_roster();
    let mut me = me(&d);
    assert_eq!(me.ok("status", json!({}))["principal_id"], "user:me");

    missing_grant(
        &me.fails("session/new", json!({"agent_alias": "echo"})),
        "sessions:create",
        "session/new",
    );
    for m in ["pairing/list", "pairing/create"] {
        not_admin(&me.fails(m, json!({})), m);
    }
    // Without --test-faults the method does not exist at all (§8.20).
    let v = me.call_frame("debug/set-faults", json!({"faults": []}));
    assert_eq!(v["error"]["code"], -32601, "{v}");

    let before = config_bytes(&d.config_dir);
    let v = set_many(
        &mut me,
        &[
            ("agents.echo.chunk_chars", json!(3)),
            ("agents.echo.system_prompt", json!("x")),
            ("security.trust_daemon_uid", json!(true)),
        ],
    );
    assert_eq!(
        v["error"],
        json!({"code": -32012,
               "message": "sets[2]: principal is not granted config write access to security.trust_daemon_uid",
               "data": {"reason": "config_path", "index": 2, "prop": "security.trust_daemon_uid"}}),
        "{v}"
    );
    for prop in ["daemon.ask_timeout_secs", "agents.echo.env", "users.me.uid"] {
        let v = set_many(
            &mut me,
            &[("agents.echo.chunk_chars", json!(3)), (prop, json!(1))],
        );
        assert_eq!(v["error"]["data"]["index"], 1, "{prop}: {v}");
        assert_eq!(v["error"]["data"]["prop"], prop, "{prop}: {v}");
    }
    assert_eq!(config_bytes(&d.config_dir), before);
    let v = set_many(&mut me, &[("agents.echo.chunk_chars", json!(3))]);
    assert_eq!(
        v["result"],
        json!({"props": ["agents.echo.chunk_chars"], "set": true})
    );
    assert_eq!(get(&mut me, "agents.echo.chunk_chars"), 3);
}

#[test]
fn a_revoked_permission_fails_the_next_request_of_an_open_connection() {
    let d = start_self_roster();
    let mut admin = admin(&d);
    let mut me = me(&d);

    // Narrower grants: the binding stays, the gate applies the new grants.
    admin.config_set("permission_profiles.me.grants.config", json!(["read"]));
    let v = set_many(&mut me, &[("agents.echo.chunk_chars", json!(2))]);
    missing_grant(&err_of(&v), "config:update", "config/set-many");
    assert_eq!(get(&mut me, "agents.echo.chunk_chars"), 16);

    // No grants left: revoked once, then unbound.
    admin.config_set("permission_profiles.me.grants", json!({}));
    revoked(&me.fails("config/get", json!({})));
    for _ in 0..2 {
        not_initialized(&me.fails("config/get", json!({})));
    }
    let v = initialize(&mut me, None);
    assert_eq!(v["error"]["data"]["reason"], "no_grants", "{v}");

    // Grants back: a fresh initialize binds again.
    admin.config_set("permission_profiles.me.grants", json!({"system": ["read"]}));
    let v = initialize(&mut me, None);
    assert_eq!(v["result"]["principalId"], "user:me", "{v}");
    assert_eq!(me.ok("status", json!({}))["principal_id"], "user:me");
}

#[test]
fn a_notification_after_a_revocation_drops_the_binding_silently() {
    let d = start_self_roster();
    let mut admin = admin(&d);
    let mut me = me(&d);
    admin.config_set("permission_profiles.me.grants", json!({}));
    // §6.5: the gate runs before notifications too. A notification is never
    // answered, but the revocation it meets drops the binding, so the next
    // request is not_initialized rather than revoked.
    me.send_line(r#"{"jsonrpc":"2.0","method":"status","params":{}}"#);
    me.expect_nothing_before_probe();
    not_initialized(&me.fails("status", json!({})));
}

#[test]
fn turning_trust_daemon_uid_off_revokes_the_shared_operator_of_the_daemon_uid() {
    let (d, mut uid_admin) = Daemon::with_client();
    let token = new_token(&mut uid_admin);
    let mut token_admin = d.connect();
    let v = initialize(&mut token_admin, Some(&token));
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");

    // The request that turns trust off is answered; the next one is not.
    let v = set_many(
        &mut uid_admin,
        &[("security.trust_daemon_uid", json!(false))],
    );
    assert_eq!(
        v["result"],
        json!({"props": ["security.trust_daemon_uid"], "set": true})
    );
    revoked(&uid_admin.fails("status", json!({})));
    let v = uid_admin.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
    // Root included: an unmapped uid is rejected (§5.2).
    let v = initialize(&mut uid_admin, None);
    credential_rejected(&err_of(&v));
    let mut fresh = d.connect();
    let v = initialize(&mut fresh, None);
    assert_eq!(v["error"]["data"]["reason"], "credential_rejected", "{v}");

    // The token's binding does not depend on the uid.
    assert_eq!(
        token_admin.ok("status", json!({}))["principal_id"],
        "shared-operator"
    );
    token_admin.config_set("security.trust_daemon_uid", json!(true));
    let v = initialize(&mut uid_admin, None);
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
}

#[test]
fn a_profile_added_to_the_roster_user_widens_its_grants_live() {
    let d = start_self_roster();
    let mut admin = admin(&d);
    let mut me = me(&d);
    let v = me.call_frame("session/new", json!({"agent_alias": "echo"}));
    assert_eq!(v["error"]["data"]["reason"], "missing_grant", "{v}");
    // One request creates a profile and gives it to the user (union, §6.3).
    let v = set_many(
        &mut admin,
        &[
            (
                "permission_profiles.creator.grants",
                json!({"sessions": ["create"]}),
            ),
            ("permission_profiles.creator.allowed_agents", json!(["*"])),
            ("users.me.permission_profiles", json!(["me", "creator"])),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    let v = me.call_frame(
        "session/new",
        json!({"agent_alias": "echo", "chat_mode": "acp"}),
    );
    assert!(v.get("result").is_some(), "{v}");
    // The other profile's grants are still there.
    assert_eq!(me.ok("status", json!({}))["principal_id"], "user:me");
}

/// Sends `session/prompt` and returns the streamed `agent_message_chunk`
/// texts and the answer frame.
fn prompt(c: &mut Client, session_id: &str, text: &str) -> (Vec<String>, Value) {
    c.send_json(&json!({"jsonrpc": "2.0", "method": "session/prompt",
        "params": {"session_id": session_id, "prompt": text}, "id": "p"}));
    let mut chunks = Vec::new();
    loop {
        let v = c.recv_json();
        if v["id"] == "p" {
            return (chunks, v);
        }
        if v["params"]["type"] == "agent_message_chunk" {
            chunks.push(v["params"]["text"].as_str().unwrap().to_owned());
        }
    }
}

#[test]
fn agents_created_by_set_many_run_at_once_behind_the_agent_selector() {
    let d = start_self_roster();
    let mut admin = admin(&d);
    admin.config_set(
        "permission_profiles.me.grants.sessions",
        json!(["create", "execute", "read"]),
    );
    let mut me = me(&d);

    // A new agent, usable by the next session without a restart.
    let v = set_many(
        &mut admin,
        &[
            ("agents.tiny.backend", json!("echo")),
            ("agents.tiny.chunk_chars", json!(3)),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    // §6.6: the user's profile allows only `echo`.
    let v = me.call_frame(
        "session/new",
        json!({"agent_alias": "tiny", "session_id": "t1", "chat_mode": "acp"}),
    );
    not_entitled(&err_of(&v), "tiny");
    admin.config_set(
        "permission_profiles.me.allowed_agents",
        json!(["echo", "tiny"]),
    );
    me.new_session_of("tiny", "t1", "acp");
    let (chunks, v) = prompt(&mut me, "t1", "abcdefgh");
    assert_eq!(v["result"]["content"], "abcdefgh", "{v}");
    assert_eq!(chunks, ["abc", "def", "gh"]);

    // A tuning prop the user may write applies to the next turn.
    let v = set_many(&mut me, &[("agents.echo.chunk_chars", json!(5))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    me.new_session_of("echo", "e1", "acp");
    let (chunks, _) = prompt(&mut me, "e1", "abcdefgh");
    assert_eq!(chunks, ["abcde", "fgh"]);
}

#[test]
fn an_admin_profile_makes_a_roster_user_admin_until_it_is_taken_away() {
    let d = start_self_roster();
    let mut admin = admin(&d);
    let mut me = me(&d);
    let v = set_many(
        &mut admin,
        &[
            ("permission_profiles.boss.admin", json!(true)),
            ("users.me.permission_profiles", json!(["me", "boss"])),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    // Admin passes every check: admin-only methods and props.
    assert_eq!(
        me.ok("pairing/list", json!({}))["token_hashes"],
        json!([digest(ADMIN_TOKEN)])
    );
    let v = set_many(
        &mut me,
        &[
            ("gateway.port", json!(4000)),
            ("agents.echo.backend", json!("echo")),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(me.ok("status", json!({}))["principal_id"], "user:me");

    admin.config_set("permission_profiles.boss.admin", json!(false));
    not_admin(&me.fails("pairing/list", json!({})), "pairing/list");
    let v = set_many(&mut me, &[("gateway.port", json!(4001))]);
    assert_eq!(v["error"]["data"]["reason"], "config_path", "{v}");
    assert_eq!(get(&mut me, "gateway.port"), 4000);
}
