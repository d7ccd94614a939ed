//! Authorization with real OS users (§2.3 socket group, §5.2, §6,
//! §8.16 step 4): a group and users are created with `groupadd`/`useradd`,
//! written into the roster of `config.toml` before the daemon starts, and
//! connect to the socket under their own uids.
//!
//! These tests need root and the shadow tools; anywhere else each one prints
//! `SKIPPED <test>: <why>` and returns. tests/it/authz_live.rs covers the same
//! model on any machine by mapping the test's own uid.

// Unix only: OS accounts (useradd) and peer uids.

use crate::common;
use common::assert::{assert_error_exact, err_of};
use common::errors::{
    bad_entry, credential_rejected, missing_grant, not_admin, not_initialized, revoked,
};
use common::start::{traversable_dir, write_config};

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::users::{
    client_as, config_bytes, connect_as, get, initialize, new_token, set_many, Accounts, OsGroup,
    OsUser,
};
use common::{run_cli_code, Daemon, TestDir, BIN, RECV_TIMEOUT};
use serde_json::{json, Value};

/// The roster of these tests.
struct Roster {
    group: OsGroup,
    /// Member; profile `writer`: system:read, config:read+update, writes `*`.
    alice: OsUser,
    /// Member; profile `echo_tuner` (config:update, sessions:read, writes
    /// `agents.echo.*`), principal id `erin-id`.
    erin: OsUser,
    /// Member; profile `tuner2` (as `echo_tuner`), principal id = name.
    frank: OsUser,
    /// Member; profile `empty`: no grant at all.
    bob: OsUser,
    /// Member of the group, not in the roster.
    carol: OsUser,
    /// Not a member of the group.
    dave: OsUser,
}

fn roster(acc: &mut Accounts) -> Roster {
    let group = acc.group();
    Roster {
        alice: acc.user(Some(&group)),
        erin: acc.user(Some(&group)),
        frank: acc.user(Some(&group)),
        bob: acc.user(Some(&group)),
        carol: acc.user(Some(&group)),
        dave: acc.user(None),
        group,
    }
}

fn config_text(r: &Roster) -> String {
    format!(
        r#"schema_version = 1

[security]
socket_group = "{group}"

[agents.echo]
backend = "echo"

[permission_profiles.writer]
allowed_agents = ["echo"]
config_write_paths = ["*"]
grants = {{ system = ["read"], config = ["read", "update"] }}

[permission_profiles.echo_tuner]
config_write_paths = ["agents.echo.*"]
grants = {{ config = ["update"], sessions = ["read"] }}

[permission_profiles.tuner2]
config_write_paths = ["agents.echo.*"]
grants = {{ config = ["update"], sessions = ["read"] }}

[permission_profiles.empty]
allowed_agents = ["*"]
config_write_paths = ["*"]

[users.{alice}]
uid = {alice_uid}
permission_profiles = ["writer"]

[users.{erin}]
uid = {erin_uid}
permission_profiles = ["echo_tuner"]
principal_id = "erin-id"

[users.{frank}]
uid = {frank_uid}
permission_profiles = ["tuner2"]

[users.{bob}]
uid = {bob_uid}
permission_profiles = ["empty"]
"#,
        group = r.group.name,
        alice = r.alice.name,
        alice_uid = r.alice.uid,
        erin = r.erin.name,
        erin_uid = r.erin.uid,
        frank = r.frank.name,
        frank_uid = r.frank.uid,
        bob = r.bob.name,
        bob_uid = r.bob.uid,
    )
}

/// Starts a daemon serving `r`'s group, with the roster in config.toml.
/// The OS accounts, their roster and a daemon started on it (in a
/// traversable dir), or why this machine cannot create them. Dropped in
/// reverse: daemon, dir, then the accounts.
fn started(test_faults: bool) -> Result<(Accounts, Roster, TestDir, Daemon), String> {
    let mut acc = Accounts::new()?;
    let r = roster(&mut acc);
    let dir = traversable_dir();
    let cfg = dir.path().join("cfg");
    write_config(&cfg, &config_text(&r));
    let mut b = Daemon::builder().config_dir(&cfg);
    if test_faults {
        b = b.arg("--test-faults");
    }
    let d = b.spawn();
    Ok((acc, r, dir, d))
}

/// A connection as `user` that completed `initialize` as `principal`.
fn session_as(d: &Daemon, user: &OsUser, principal: &str) -> common::Client {
    let mut c = client_as(&d.socket, user);
    let v = initialize(&mut c, None);
    assert_eq!(v["result"]["principalId"], principal, "{v}");
    c
}

fn mode_and_group(p: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.permissions().mode() & 0o7777, m.uid(), m.gid())
}

fn forbidden_path(index: usize, prop: &str) -> (String, Value) {
    (
        format!("sets[{index}]: principal is not granted config write access to {prop}"),
        json!({"reason": "config_path", "index": index, "prop": prop}),
    )
}

#[test]
fn roster_users_reach_the_group_socket_and_map_to_their_principals() {
    let (_acc, r, _dir, d) = ok_or_skip!(started(false));

    // §2.3: socket 0660 and data dir 0750 owned by the group; the config dir
    // is search-only for the group (docs/decisions.md); config.toml stays 0600.
    let gid = r.group.gid;
    assert_eq!(d.socket, d.data_dir().join("daemon.sock"));
    assert_eq!(mode_and_group(&d.socket), (0o660, common::euid(), gid));
    assert_eq!(mode_and_group(&d.data_dir()), (0o750, common::euid(), gid));
    assert_eq!(mode_and_group(&d.config_dir), (0o710, common::euid(), gid));
    let (m, _, _) = mode_and_group(&d.config_dir.join("config.toml"));
    assert_eq!(m, 0o600);

    // Outside the group the OS refuses the connection.
    let e = connect_as(&d.socket, r.dave.uid, r.dave.gid).expect_err("dave is not a member");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");

    // §5.2: a mapped uid binds `user:<principal_id>`.
    let alice_id = format!("user:{}", r.alice.name);
    let mut alice = session_as(&d, &r.alice, &alice_id);
    assert_eq!(alice.ok("status", json!({}))["principal_id"], alice_id);
    let mut erin = session_as(&d, &r.erin, "user:erin-id");
    let mut frank = session_as(&d, &r.frank, &format!("user:{}", r.frank.name));
    let bound = d
        .log
        .wait_for(0, RECV_TIMEOUT, |v| {
            v["event"] == "principal_bound" && v["principal_id"] == alice_id
        })
        .expect("a principal_bound event for alice")
        .1;
    assert_eq!(bound["auth_provider"], "peercred", "{bound}");
    let peer = bound["peer"].as_str().unwrap_or_default();
    assert!(
        peer.starts_with("unix:pid=") && peer.ends_with(&format!(",uid={}", r.alice.uid)),
        "{bound}"
    );

    // A member not in the roster: rejected; root is not trusted either way
    // except as the daemon's own uid, which binds the shared operator.
    let mut carol = client_as(&d.socket, &r.carol);
    let v = initialize(&mut carol, None);
    credential_rejected(&err_of(&v));
    not_initialized(&carol.fails("status", json!({})));

    // A mapped user whose profiles grant nothing fails initialize.
    let mut bob = client_as(&d.socket, &r.bob);
    let v = initialize(&mut bob, None);
    assert_error_exact(
        &err_of(&v),
        -32012,
        Some("Authenticated, but no permission profile grants this identity anything"),
        Some(json!({"reason": "no_grants"})),
    );
    let v = bob.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");

    let mut admin = d.client();
    assert_eq!(
        admin.ok("status", json!({}))["principal_id"],
        "shared-operator"
    );
    // The roster connections are still served under their own principals.
    assert_eq!(alice.ok("status", json!({}))["principal_id"], alice_id);
    for c in [&mut erin, &mut frank] {
        assert_eq!(c.ok("session/list", json!({}))["sessions"], json!([]));
    }
}

#[test]
fn a_roster_user_is_held_to_grants_admin_only_methods_and_write_paths() {
    let (_acc, r, _dir, d) = ok_or_skip!(started(true));
    let alice_id = format!("user:{}", r.alice.name);
    let mut alice = session_as(&d, &r.alice, &alice_id);
    let mut erin = session_as(&d, &r.erin, "user:erin-id");

    // §6.4: a missing grant names the required grant and is audited.
    let v = alice.call_frame("session/new", json!({"agent_alias": "echo"}));
    missing_grant(&err_of(&v), "sessions:create", "session/new");
    let denied = d
        .log
        .wait_for(0, RECV_TIMEOUT, |v| {
            v["event"] == "authorization_denied" && v["principal_id"] == alice_id
        })
        .expect("an authorization_denied event")
        .1;
    assert_eq!(denied["method"], "session/new", "{denied}");
    assert_eq!(denied["resource"], "sessions", "{denied}");
    assert_eq!(denied["verb"], "create", "{denied}");
    assert!(
        denied["peer"]
            .as_str()
            .is_some_and(|p| p.ends_with(&format!(",uid={}", r.alice.uid))),
        "{denied}"
    );
    for (method, required) in [("config/get", "config:read"), ("status", "system:read")] {
        assert_error_exact(
            &erin.fails(method, json!({})),
            -32012,
            Some(&format!(
                "Principal is not granted {required} (required by {method})"
            )),
            Some(json!({"reason": "missing_grant", "required": required})),
        );
    }

    // Admin-only methods.
    for (method, params) in [
        ("pairing/list", json!({})),
        ("pairing/create", json!({})),
        ("pairing/revoke", json!({"token_hash": "00".repeat(32)})),
        ("debug/set-faults", json!({"faults": ["config_commit"]})),
    ] {
        not_admin(&alice.fails(method, params), method);
    }

    let before = config_bytes(&d.config_dir);

    // §8.16 step 4: the lowest forbidden index, even after allowed entries.
    let v = set_many(
        &mut alice,
        &[
            ("agents.echo.chunk_chars", json!(5)),
            ("security.trust_daemon_uid", json!(false)),
        ],
    );
    assert_eq!(
        v["error"],
        json!({
            "code": -32012,
            "message": "sets[1]: principal is not granted config write access to security.trust_daemon_uid",
            "data": {"reason": "config_path", "index": 1, "prop": "security.trust_daemon_uid"}
        }),
        "{v}"
    );
    let v = set_many(
        &mut alice,
        &[
            ("daemon.ask_timeout_secs", json!(9)),
            ("agents.echo.chunk_chars", json!(5)),
            ("users.someone.uid", json!(4242)),
            ("gateway.port", json!(1)),
        ],
    );
    let (msg, data) = forbidden_path(2, "users.someone.uid");
    assert_error_exact(&err_of(&v), -32012, Some(&msg), Some(data));

    // §6.3: admin-only props whatever config_write_paths says (alice has "*").
    let admin_only: Vec<(String, Value)> = vec![
        ("security.trust_daemon_uid".into(), json!(false)),
        ("security.socket_group".into(), json!("root")),
        (format!("users.{}.uid", r.alice.name), json!(r.alice.uid)),
        (
            format!("users.{}.permission_profiles", r.alice.name),
            json!(["writer"]),
        ),
        (format!("users.{}.principal_id", r.alice.name), json!("x")),
        ("permission_profiles.writer.admin".into(), json!(true)),
        (
            "permission_profiles.writer.grants".into(),
            json!({"sessions": ["create"]}),
        ),
        (
            "permission_profiles.writer.grants.sessions".into(),
            json!(["create"]),
        ),
        (
            "permission_profiles.writer.config_write_paths".into(),
            json!(["*"]),
        ),
        ("permission_profiles.new.admin".into(), json!(true)),
        ("gateway.enabled".into(), json!(true)),
        ("gateway.port".into(), json!(4000)),
        ("gateway.paired_tokens".into(), json!([])),
        ("agents.echo.backend".into(), json!("echo")),
        ("agents.echo.command".into(), json!(["sh"])),
        ("agents.echo.env".into(), json!({"A": "1"})),
        ("agents.echo.workspace_dir".into(), json!("/tmp")),
        ("agents.other.backend".into(), json!("echo")),
    ];
    for (prop, value) in &admin_only {
        let v = set_many(
            &mut alice,
            &[
                ("agents.echo.chunk_chars", json!(5)),
                (prop.as_str(), value.clone()),
            ],
        );
        let (msg, data) = forbidden_path(1, prop);
        assert_error_exact(&err_of(&v), -32012, Some(&msg), Some(data));
        let v = alice.call_frame("config/set", json!({"prop": prop, "value": value}));
        assert_error_exact(
            &err_of(&v),
            -32012,
            Some(&format!(
                "principal is not granted config write access to {prop}"
            )),
            Some(json!({"reason": "config_path", "prop": prop})),
        );
    }
    // Step 4 comes before staging (step 5): a forbidden prop at index 1
    // wins over an entry at index 0 that could not be applied.
    let v = set_many(
        &mut alice,
        &[
            ("agents.echo.chunk_chars", json!("five")),
            ("gateway.host", json!("0.0.0.0")),
        ],
    );
    let (msg, data) = forbidden_path(1, "gateway.host");
    assert_error_exact(&err_of(&v), -32012, Some(&msg), Some(data));
    // ... and the shape check (step 1) comes before both.
    let v = alice.call_frame(
        "config/set-many",
        json!({"sets": [{"prop": "gateway.host", "value": "x"}, 7]}),
    );
    bad_entry(&err_of(&v), 1, "must be an object");

    // Nothing of it reached the file or the running config.
    assert_eq!(config_bytes(&d.config_dir), before);
    assert_eq!(get(&mut alice, "agents.echo.chunk_chars"), 16);
    assert_eq!(get(&mut alice, "security.trust_daemon_uid"), true);

    // A narrower selector (`agents.echo.*`): other props are forbidden, and
    // admin-only props below the selector too.
    let v = set_many(
        &mut erin,
        &[
            ("agents.echo.chunk_chars", json!(6)),
            ("daemon.ask_timeout_secs", json!(8)),
        ],
    );
    let (msg, data) = forbidden_path(1, "daemon.ask_timeout_secs");
    assert_error_exact(&err_of(&v), -32012, Some(&msg), Some(data));
    let v = set_many(&mut erin, &[("agents.echo.backend", json!("echo"))]);
    let (msg, data) = forbidden_path(0, "agents.echo.backend");
    assert_error_exact(&err_of(&v), -32012, Some(&msg), Some(data));
    assert_eq!(config_bytes(&d.config_dir), before);

    // Allowed paths succeed and are persisted.
    let v = set_many(
        &mut alice,
        &[
            ("agents.echo.chunk_chars", json!(5)),
            ("daemon.ask_timeout_secs", json!(7)),
            ("agents.echo.system_prompt", json!("hi")),
        ],
    );
    assert_eq!(
        v["result"],
        json!({"props": ["agents.echo.chunk_chars", "daemon.ask_timeout_secs", "agents.echo.system_prompt"], "set": true}),
        "{v}"
    );
    assert_eq!(get(&mut alice, "agents.echo.chunk_chars"), 5);
    assert_eq!(get(&mut alice, "daemon.ask_timeout_secs"), 7);
    let v = set_many(
        &mut erin,
        &[
            ("agents.echo.chunk_delay_ms", json!(1)),
            ("agents.echo.chunk_chars", json!(4)),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    let v = erin.call_frame(
        "config/set",
        json!({"prop": "agents.echo.system_prompt", "value": "tuned"}),
    );
    assert_eq!(
        v["result"],
        json!({"prop": "agents.echo.system_prompt", "set": true}),
        "{v}"
    );
    let text = String::from_utf8(config_bytes(&d.config_dir)).unwrap();
    let file = zeroclaw::config::Config::from_toml_str(&text).expect("config.toml is valid");
    assert_eq!(file.agents["echo"].chunk_chars, 4);
    assert_eq!(file.agents["echo"].chunk_delay_ms, 1);
    assert_eq!(file.agents["echo"].system_prompt, "tuned");
    assert_eq!(file.daemon.ask_timeout_secs, 7);
}

#[test]
fn policy_changes_reach_open_connections_at_their_next_request() {
    let (_acc, r, _dir, d) = ok_or_skip!(started(false));
    let alice_id = format!("user:{}", r.alice.name);
    let mut alice = session_as(&d, &r.alice, &alice_id);
    let mut erin = session_as(&d, &r.erin, "user:erin-id");
    let mut frank = session_as(&d, &r.frank, &format!("user:{}", r.frank.name));
    let mut admin = d.client();

    // A grant taken away applies at alice's next request; she stays bound.
    admin.config_set("permission_profiles.writer.grants.config", json!([]));
    missing_grant(
        &alice.fails("config/get", json!({})),
        "config:read",
        "config/get",
    );
    assert_eq!(alice.ok("status", json!({}))["principal_id"], alice_id);
    // A grant given applies too, without reconnecting.
    admin.config_set("permission_profiles.writer.grants.config", json!(["read"]));
    assert_eq!(get(&mut alice, "agents.echo.backend"), "echo");
    // Read but no longer update: set-many is refused by the gate.
    let v = set_many(&mut alice, &[("daemon.ask_timeout_secs", json!(3))]);
    missing_grant(&err_of(&v), "config:update", "config/set-many");

    // Profiles granting nothing: revoked, then the binding is gone.
    admin.config_set("permission_profiles.writer.grants", json!({}));
    revoked(&alice.fails("status", json!({})));
    not_initialized(&alice.fails("status", json!({})));
    let v = initialize(&mut alice, None);
    assert_eq!(v["error"]["data"]["reason"], "no_grants", "{v}");

    // The roster entry no longer maps erin's uid (map keys cannot be deleted
    // through the protocol, §8.16; remapping the uid is the removal).
    admin.config_set(
        &format!("users.{}.uid", r.erin.name),
        json!(3_999_999_999u32),
    );
    revoked(&erin.fails("session/list", json!({})));
    let v = erin.call_frame("session/list", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
    let v = initialize(&mut erin, None);
    assert_eq!(v["error"]["data"]["reason"], "credential_rejected", "{v}");

    // A renamed principal is another principal: revoked too, and a new
    // initialize binds the new id.
    admin.config_set(
        &format!("users.{}.principal_id", r.frank.name),
        json!("renamed"),
    );
    let v = frank.call_frame("session/list", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "revoked", "{v}");
    let v = initialize(&mut frank, None);
    assert_eq!(v["result"]["principalId"], "user:renamed", "{v}");
    assert!(frank
        .call_frame("session/list", json!({}))
        .get("result")
        .is_some());

    // A config change that leaves frank's principal alone keeps him bound.
    admin.config_set("daemon.ask_timeout_secs", json!(60));
    assert!(frank
        .call_frame("session/list", json!({}))
        .get("result")
        .is_some());

    // binding_dropped audit lines name the principals that lost their binding.
    for id in [alice_id.as_str(), "user:erin-id"] {
        let e = d
            .log
            .wait_for(0, RECV_TIMEOUT, |v| {
                v["event"] == "binding_dropped" && v["principal_id"] == id
            })
            .unwrap_or_else(|| panic!("no binding_dropped for {id}"));
        assert_eq!(e.1["reason"], "revoked", "{}", e.1);
    }
}

#[test]
fn a_failed_reinitialize_leaves_the_user_connection_unbound() {
    let (_acc, r, _dir, d) = ok_or_skip!(started(false));
    let alice_id = format!("user:{}", r.alice.name);
    let mut alice = session_as(&d, &r.alice, &alice_id);
    // §5.3: a token presented by a roster user is checked, with no fallback
    // to the uid; the failure leaves the connection unbound.
    let v = initialize(&mut alice, Some(&format!("zc_{}", "0".repeat(64))));
    credential_rejected(&err_of(&v));
    let v = alice.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
    let v = initialize(&mut alice, None);
    assert_eq!(v["result"]["principalId"], alice_id, "{v}");
    // A token from the admin binds the roster user's connection to the shared
    // operator (a token authenticates as the shared operator, §6.7).
    let mut admin = d.client();
    let token = new_token(&mut admin);
    let v = initialize(&mut alice, Some(&token));
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
    assert!(alice
        .call_frame("pairing/list", json!({}))
        .get("result")
        .is_some());
}

/// `zeroclaw --config-dir <cfg> rpc ARGS…` run as `user` (or as this
/// process when `None`): (exit code, stdout, stderr).
fn rpc_as(d: &Daemon, user: Option<&OsUser>, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = d.rpc_command(args);
    if let Some(u) = user {
        cmd.uid(u.uid).gid(u.gid);
    }
    run_cli_code(cmd)
}

/// Whether `user` may execute the zeroclaw binary where it was built.
fn binary_runnable_by(user: &OsUser) -> bool {
    Command::new(BIN)
        .arg("--help")
        .uid(user.uid)
        .gid(user.gid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_worked_example_of_docs_config_md() {
    let mut acc = ok_or_skip!(Accounts::new());
    let group = acc.group();
    let alice = acc.user(Some(&group));
    if !binary_runnable_by(&alice) {
        skip_test!("{BIN} cannot be executed by other users");
    }
    let dir = traversable_dir();
    // Stands for /srv/zeroclaw.
    let cfg = dir.path().join("cfg");
    let d = Daemon::builder().config_dir(&cfg).spawn();

    // Step 2: one atomic request as root.
    let sets = json!({"sets": [
        {"prop": "permission_profiles.tuner.grants", "value": {"system": ["read"], "config": ["read", "update"], "sessions": ["create", "read", "update", "delete", "execute"]}},
        {"prop": "permission_profiles.tuner.allowed_agents", "value": ["echo"]},
        {"prop": "permission_profiles.tuner.config_write_paths", "value": ["agents.echo.*"]},
        {"prop": "users.alice.uid", "value": alice.uid},
        {"prop": "users.alice.permission_profiles", "value": ["tuner"]},
        {"prop": "security.socket_group", "value": group.name},
    ]});
    let (code, out, err) = rpc_as(&d, None, &["config/set-many", &sets.to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        out,
        "{\"props\":[\"permission_profiles.tuner.grants\",\"permission_profiles.tuner.allowed_agents\",\"permission_profiles.tuner.config_write_paths\",\"users.alice.uid\",\"users.alice.permission_profiles\",\"security.socket_group\"],\"set\":true}\n"
    );
    let text = String::from_utf8(config_bytes(&cfg)).unwrap();
    for line in [
        format!("socket_group = \"{}\"", group.name),
        "[permission_profiles.tuner]".to_owned(),
        "config_write_paths = [\"agents.echo.*\"]".to_owned(),
        "sessions = [\"create\", \"read\", \"update\", \"delete\", \"execute\"]".to_owned(),
        "[users.alice]".to_owned(),
        format!("uid = {}", alice.uid),
        "permission_profiles = [\"tuner\"]".to_owned(),
    ] {
        assert!(text.contains(&line), "{line:?} not in:\n{text}");
    }
    // The group applies from the next start only.
    let e = connect_as(&d.socket, alice.uid, alice.gid).expect_err("not yet");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");

    // Step 3.
    drop(d);
    let d = Daemon::builder().config_dir(&cfg).spawn();
    assert_eq!(
        mode_and_group(&d.socket),
        (0o660, common::euid(), group.gid)
    );

    // Step 4, as alice.
    let (code, out, err) = rpc_as(&d, Some(&alice), &["status"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let status: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(status["principal_id"], "user:alice");
    let (code, out, err) = rpc_as(
        &d,
        Some(&alice),
        &[
            "session/new",
            r#"{"agent_alias":"echo","session_id":"demo","chat_mode":"acp"}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = rpc_as(
        &d,
        Some(&alice),
        &[
            "session/prompt",
            r#"{"session_id":"demo","prompt":"Hello"}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        serde_json::from_str::<Value>(out.trim()).unwrap()["content"],
        "Hello"
    );
    let (code, out, _) = rpc_as(
        &d,
        Some(&alice),
        &[
            "config/set",
            r#"{"prop":"agents.echo.chunk_chars","value":4}"#,
        ],
    );
    assert_eq!(
        (code, out.as_str()),
        (
            Some(0),
            "{\"prop\":\"agents.echo.chunk_chars\",\"set\":true}\n"
        )
    );
    let (code, out, err) = rpc_as(
        &d,
        Some(&alice),
        &[
            "config/set",
            r#"{"prop":"security.trust_daemon_uid","value":false}"#,
        ],
    );
    assert_eq!((code, out.as_str()), (Some(1), ""));
    let one_line = |err: &str| -> Value {
        assert!(err.ends_with('\n') && err.lines().count() == 1, "{err:?}");
        serde_json::from_str(err.trim()).unwrap()
    };
    assert_eq!(
        one_line(&err),
        json!({"code": -32012, "message": "principal is not granted config write access to security.trust_daemon_uid", "data": {"reason": "config_path", "prop": "security.trust_daemon_uid"}})
    );
    let (code, _, err) = rpc_as(&d, Some(&alice), &["pairing/list"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        one_line(&err),
        json!({"code": -32012, "message": "Principal is not an admin (required by pairing/list)", "data": {"reason": "admin_only"}})
    );

    // Step 5: revoked while connected.
    let mut open = session_as(&d, &alice, "user:alice");
    let (code, out, err) = rpc_as(
        &d,
        None,
        &[
            "config/set",
            r#"{"prop":"permission_profiles.tuner.grants","value":{}}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let v = open.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "revoked", "{v}");
    let v = open.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
}

#[test]
fn the_socket_group_follows_the_config_from_one_start_to_the_next() {
    let mut acc = ok_or_skip!(Accounts::new());
    let (g1, g2) = (acc.group(), acc.group());
    let (alice, bob) = (acc.user(Some(&g1)), acc.user(Some(&g2)));
    let dir = traversable_dir();
    let cfg = dir.path().join("cfg");
    let roster = |group: Option<&OsGroup>| {
        let security = group
            .map(|g| format!("[security]\nsocket_group = \"{}\"\n", g.name))
            .unwrap_or_default();
        format!(
            "schema_version = 1\n{security}[agents.echo]\nbackend = \"echo\"\n\
             [permission_profiles.r]\ngrants = {{ system = [\"read\"] }}\n\
             [users.alice]\nuid = {}\npermission_profiles = [\"r\"]\n\
             [users.bob]\nuid = {}\npermission_profiles = [\"r\"]\n",
            alice.uid, bob.uid
        )
    };
    let reaches = |d: &Daemon, u: &OsUser| match connect_as(&d.socket, u.uid, u.gid) {
        Ok(s) => {
            let mut c = common::Client::over(s);
            let v = initialize(&mut c, None);
            assert!(v.get("result").is_some(), "{v}");
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => false,
        Err(e) => panic!("connect as {}: {e}", u.name),
    };

    write_config(&cfg, &roster(Some(&g1)));
    let d = Daemon::builder().config_dir(&cfg).spawn();
    assert!(reaches(&d, &alice) && !reaches(&d, &bob));
    // Changed by the admin: applies at the next start.
    let mut admin = d.client();
    admin.config_set("security.socket_group", json!(g2.name));
    assert!(reaches(&d, &alice) && !reaches(&d, &bob));
    drop(admin);
    drop(d);
    let d = Daemon::builder().config_dir(&cfg).spawn();
    assert!(!reaches(&d, &alice) && reaches(&d, &bob));
    assert_eq!(mode_and_group(&d.socket), (0o660, common::euid(), g2.gid));
    assert_eq!(mode_and_group(&d.data_dir()).2, g2.gid);
    assert_eq!(mode_and_group(&cfg).2, g2.gid);
    drop(d);

    // Without a group (props cannot be deleted through the protocol: the
    // file is edited while the daemon is stopped), nobody else gets in.
    write_config(&cfg, &roster(None));
    let d = Daemon::builder().config_dir(&cfg).spawn();
    assert!(!reaches(&d, &alice) && !reaches(&d, &bob));
    assert_eq!(mode_and_group(&d.socket).0, 0o600);
    assert_eq!(mode_and_group(&d.data_dir()).0, 0o700);
}
