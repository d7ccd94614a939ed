//! `config/get`, `config/set` and `config/set-many` over the socket
//! (§8.14–§8.16, §11): the seed example byte for byte, atomicity of a failing
//! batch, every `-32602` shape of the pipeline with its exact `data`, value
//! rules, and persistence across restarts.

use crate::common;
use common::assert::{assert_error_exact, err_of};
use common::errors::{bad_entry, invalid_config};

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use common::users::{config_bytes, get, set_many};
use common::{Client, Daemon, TestDir};
use serde_json::{json, Value};
use zeroclaw::config::Config;

fn file_config(d: &Daemon) -> Config {
    let text = String::from_utf8(config_bytes(&d.config_dir)).expect("UTF-8");
    Config::from_toml_str(&text).expect("config.toml is valid")
}

/// `(prop, value)` entries of one batch.
type Sets = Vec<(&'static str, Value)>;

/// A `config/set-many` with raw JSON `sets`.
fn set_many_raw(c: &mut Client, sets: Value) -> Value {
    c.call_frame("config/set-many", json!({ "sets": sets }))
}

/// Runs `f`, then checks that `config.toml` and `config/get` did not change.
fn unchanged<T>(d: &Daemon, c: &mut Client, f: impl FnOnce(&mut Client) -> T) -> T {
    let bytes = config_bytes(&d.config_dir);
    let running = c.ok("config/get", json!({}));
    let out = f(c);
    assert_eq!(
        config_bytes(&d.config_dir),
        bytes,
        "config.toml must stay byte-identical"
    );
    assert_eq!(
        c.ok("config/get", json!({})),
        running,
        "the running config must not change"
    );
    assert!(!d.config_dir.join("config.toml.tmp").exists());
    out
}

fn create_operator(c: &mut Client) {
    let v = set_many(
        c,
        &[
            (
                "permission_profiles.operator.allowed_agents",
                json!(["echo"]),
            ),
            (
                "permission_profiles.operator.config_write_paths",
                json!(["agents.echo.*"]),
            ),
            (
                "permission_profiles.operator.grants",
                json!({"sessions": ["create", "read", "update", "delete", "execute"], "files": ["create"], "system": ["read"]}),
            ),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
}

#[test]
fn the_seed_example_creates_a_user_in_one_request_byte_for_byte() {
    if cfg!(windows) {
        // A configured roster makes a uid-less peer present authToken (`roster_required`).
        return common::skip(
            "a pipe peer has no uid: once a user exists it must present authToken (roster_required)",
        );
    }
    let (d, mut c) = Daemon::with_client();
    create_operator(&mut c);
    // The request and answer of §8.16, exactly as the spec writes them.
    c.send_line(r#"{"jsonrpc":"2.0","method":"config/set-many","params":{"sets":[{"prop":"users.example.uid","value":1001},{"prop":"users.example.permission_profiles","value":["operator"]}]},"id":2}"#);
    assert_eq!(
        c.recv_line(),
        r#"{"jsonrpc":"2.0","result":{"props":["users.example.uid","users.example.permission_profiles"],"set":true},"id":2}"#
    );
    assert_eq!(
        c.ok("config/get", json!({"prop": "users.example.uid"})),
        json!({"prop": "users.example.uid", "value": 1001})
    );
    assert_eq!(
        c.ok("config/get", json!({}))["users"],
        json!({"example": {"uid": 1001, "permission_profiles": ["operator"], "principal_id": null}})
    );
    let file = file_config(&d);
    assert_eq!(file.users["example"].uid, Some(1001));
    assert_eq!(
        file.users["example"].permission_profiles.as_deref(),
        Some(&["operator".to_owned()][..])
    );
    assert_eq!(
        file.permission_profiles["operator"].config_write_paths,
        ["agents.echo.*"]
    );

    // One entry at a time cannot create a user (§6.2): config/set fails
    // validation naming the missing field, without an index.
    let v = unchanged(&d, &mut c, |c| {
        c.call_frame(
            "config/set",
            json!({"prop": "users.other.uid", "value": 1002}),
        )
    });
    invalid_config(&err_of(&v), "users.other.permission_profiles", "required");
    // Nor a one-entry set-many: the failing path is not an entry's prop.
    let v = unchanged(&d, &mut c, |c| {
        set_many(c, &[("users.other.uid", json!(1002))])
    });
    invalid_config(&err_of(&v), "users.other.permission_profiles", "required");
}

#[test]
fn an_invalid_entry_at_index_1_changes_neither_the_file_nor_the_running_config() {
    let (d, mut c) = Daemon::with_client();
    create_operator(&mut c);
    let cases: Vec<(Sets, &str, Value)> = vec![
        // Step 5: an entry that cannot be applied.
        (
            vec![
                ("daemon.ask_timeout_secs", json!(5)),
                ("agents.echo.chunk_chars", json!("many")),
            ],
            "sets[1]: agents.echo.chunk_chars: expected an integer in 0..=4294967295",
            json!({"index": 1, "prop": "agents.echo.chunk_chars"}),
        ),
        // Step 6: the candidate fails validation at entry 1's prop.
        (
            vec![
                ("agents.echo.chunk_chars", json!(3)),
                ("agents.echo.timeout_secs", json!(0)),
            ],
            "sets[1]: invalid configuration: agents.echo.timeout_secs: must be at least 1",
            json!({"index": 1, "path": "agents.echo.timeout_secs"}),
        ),
        (
            vec![
                ("users.example.uid", json!(1001)),
                ("users.example.permission_profiles", json!(["nope"])),
            ],
            "sets[1]: invalid configuration: users.example.permission_profiles: unknown permission profile \"nope\"",
            json!({"index": 1, "path": "users.example.permission_profiles"}),
        ),
        // An ancestor prop (a grants table) identifies the entry.
        (
            vec![
                ("daemon.ask_timeout_secs", json!(5)),
                (
                    "permission_profiles.operator.grants",
                    json!({"pairing": ["read"]}),
                ),
            ],
            "sets[1]: invalid configuration: permission_profiles.operator.grants.pairing: unknown resource \"pairing\"",
            json!({"index": 1, "path": "permission_profiles.operator.grants.pairing"}),
        ),
        // A reference to an agent that does not exist.
        (
            vec![
                ("agents.echo.chunk_chars", json!(3)),
                (
                    "permission_profiles.operator.allowed_agents",
                    json!(["echo", "ghost"]),
                ),
            ],
            "sets[1]: invalid configuration: permission_profiles.operator.allowed_agents: unknown agent \"ghost\"",
            json!({"index": 1, "path": "permission_profiles.operator.allowed_agents"}),
        ),
        // A selector that is not "*", a prop, or a prop followed by ".*".
        (
            vec![
                ("agents.echo.chunk_chars", json!(3)),
                (
                    "permission_profiles.operator.config_write_paths",
                    json!(["agents.*.chunk_chars"]),
                ),
            ],
            "sets[1]: invalid configuration: permission_profiles.operator.config_write_paths: invalid selector \"agents.*.chunk_chars\" (expected \"*\", a prop, or a prop followed by \".*\")",
            json!({"index": 1, "path": "permission_profiles.operator.config_write_paths"}),
        ),
    ];
    for (sets, message, data) in cases {
        let v = unchanged(&d, &mut c, |c| set_many(c, &sets));
        assert_error_exact(&err_of(&v), -32602, Some(message), Some(data));
    }
    // The entries before index 1 were valid on their own.
    let v = set_many(&mut c, &[("daemon.ask_timeout_secs", json!(5))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 5);
}

#[test]
fn every_shape_and_entry_error_of_set_many_has_its_exact_data() {
    let (d, mut c) = Daemon::with_client();
    let ok_entry = json!({"prop": "daemon.ask_timeout_secs", "value": 7});

    // Step 1, `sets` itself: no index, no data.
    let mut not_arrays = vec![
        json!({}),
        json!({"sets": "x"}),
        json!({"sets": {}}),
        json!({"sets": 1}),
        json!({"sets": null}),
    ];
    not_arrays.push(json!({"sets": {"prop": "daemon.ask_timeout_secs", "value": 7}}));
    for params in not_arrays {
        let v = unchanged(&d, &mut c, |c| {
            c.call_frame("config/set-many", params.clone())
        });
        assert_error_exact(&err_of(&v), -32602, Some("sets must be an array"), None);
    }
    let too_many: Vec<Value> = (0..257).map(|_| ok_entry.clone()).collect();
    for sets in [json!([]), Value::Array(too_many)] {
        let v = unchanged(&d, &mut c, |c| set_many_raw(c, sets));
        assert_error_exact(
            &err_of(&v),
            -32602,
            Some("sets must have 1 to 256 entries"),
            None,
        );
    }
    // Positional params are not supported (§1.3).
    let v = c.call_frame("config/set-many", json!([[ok_entry.clone()]]));
    assert_eq!(v["error"]["code"], -32602, "{v}");

    // Step 1, one entry: named sets[<i>] with data.index only.
    let shape_cases: Vec<(Value, &str)> = vec![
        (json!(5), "must be an object"),
        (json!("daemon.ask_timeout_secs"), "must be an object"),
        (json!([]), "must be an object"),
        (json!(null), "must be an object"),
        (json!({"value": 7}), "prop must be a string"),
        (json!({"prop": 5, "value": 7}), "prop must be a string"),
        (json!({"prop": null, "value": 7}), "prop must be a string"),
        (
            json!({"prop": ["daemon.ask_timeout_secs"], "value": 7}),
            "prop must be a string",
        ),
        (
            json!({"prop": "daemon.ask_timeout_secs"}),
            "value is required",
        ),
    ];
    for (entry, why) in shape_cases {
        let v = unchanged(&d, &mut c, |c| {
            set_many_raw(c, json!([ok_entry.clone(), entry.clone()]))
        });
        bad_entry(&err_of(&v), 1, why);
    }
    // The shape of every entry is checked before any is staged: a malformed
    // entry 2 is reported although entry 0 names an unknown prop.
    let v = unchanged(&d, &mut c, |c| {
        set_many_raw(
            c,
            json!([{"prop": "nope", "value": 1}, ok_entry.clone(), 3]),
        )
    });
    bad_entry(&err_of(&v), 2, "must be an object");

    // Step 5: entries that cannot be applied carry index and prop.
    const U32: &str = "expected an integer in 0..=4294967295";
    const U16: &str = "expected an integer in 0..=65535";
    const BOOL: &str = "expected a boolean";
    const STRING: &str = "expected a string";
    const STRINGS: &str = "expected an array of strings";
    const STRING_MAP: &str = "expected an object of string values";
    const GRANTS: &str = "expected an object of resource to array of verbs";
    const NO_NULL: &str = "null is not accepted (deleting a prop is out of scope)";
    let entry_cases: Vec<(&str, Value, String)> = vec![
        ("nope", json!(1), "unknown prop".into()),
        ("daemon", json!({}), "unknown prop".into()),
        ("agents", json!({}), "unknown prop".into()),
        ("agents.echo", json!({}), "unknown prop".into()),
        ("daemon.nope", json!(1), "unknown prop".into()),
        ("agents.echo.env.HOME", json!("/"), "unknown prop".into()),
        ("agents.bad!.chunk_chars", json!(1), "unknown prop".into()),
        ("agents..chunk_chars", json!(1), "unknown prop".into()),
        ("users.x.grants", json!({}), "unknown prop".into()),
        ("", json!(1), "unknown prop".into()),
        ("agents.echo.chunk_chars", json!("many"), U32.into()),
        ("agents.echo.chunk_chars", json!(-1), U32.into()),
        ("agents.echo.chunk_chars", json!(1.5), U32.into()),
        (
            "agents.echo.chunk_chars",
            json!(4_294_967_296u64),
            U32.into(),
        ),
        ("agents.echo.chunk_chars", json!([1]), U32.into()),
        ("gateway.port", json!(65536), U16.into()),
        ("security.trust_daemon_uid", json!("yes"), BOOL.into()),
        ("security.trust_daemon_uid", json!(1), BOOL.into()),
        ("agents.echo.system_prompt", json!(["a"]), STRING.into()),
        ("agents.echo.system_prompt", json!({}), STRING.into()),
        ("agents.echo.command", json!("sh"), STRINGS.into()),
        ("agents.echo.command", json!(["sh", 1]), STRINGS.into()),
        ("agents.echo.env", json!({"A": 1}), STRING_MAP.into()),
        (
            "permission_profiles.p.grants",
            json!(["sessions"]),
            GRANTS.into(),
        ),
        (
            "permission_profiles.p.grants",
            json!({"sessions": "read"}),
            GRANTS.into(),
        ),
        ("agents.echo.chunk_chars", json!(null), NO_NULL.into()),
        ("users.x.uid", json!(null), NO_NULL.into()),
        ("schema_version", json!(1), "read-only prop".into()),
        (
            "gateway.paired_tokens",
            json!([]),
            "read-only prop; use pairing/*".into(),
        ),
    ];
    for (prop, value, why) in entry_cases {
        let v = unchanged(&d, &mut c, |c| {
            set_many_raw(
                c,
                json!([ok_entry.clone(), {"prop": prop, "value": value.clone()}]),
            )
        });
        assert_error_exact(
            &err_of(&v),
            -32602,
            Some(&format!("sets[1]: {prop}: {why}")),
            Some(json!({"index": 1, "prop": prop})),
        );
    }
    // The first entry that cannot be applied is the one reported.
    let v = unchanged(&d, &mut c, |c| {
        set_many(
            c,
            &[
                ("daemon.ask_timeout_secs", json!(7)),
                ("schema_version", json!(1)),
                ("nope", json!(1)),
            ],
        )
    });
    assert_eq!(
        v["error"]["data"],
        json!({"index": 1, "prop": "schema_version"}),
        "{v}"
    );
    // 256 entries are accepted.
    let max: Vec<Value> = (0..256)
        .map(|i| json!({"prop": "daemon.ask_timeout_secs", "value": 1000 + i}))
        .collect();
    let v = set_many_raw(&mut c, Value::Array(max));
    assert_eq!(
        v["result"],
        json!({"props": ["daemon.ask_timeout_secs"], "set": true}),
        "{v}"
    );
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 1255);
}

#[test]
fn value_rules_and_later_entries_overriding_earlier_ones() {
    let (d, mut c) = Daemon::with_client();
    let v = set_many(
        &mut c,
        &[
            ("agents.echo.chunk_chars", json!(0)),
            ("daemon.ask_timeout_secs", json!("007")),
            ("agents.echo.chunk_chars", json!(7)),
            ("security.trust_daemon_uid", json!("true")),
            ("agents.echo.system_prompt", json!(1.5)),
            ("gateway.host", json!(true)),
            ("agents.echo.chunk_chars", json!("9")),
        ],
    );
    // Distinct props, in order of first appearance.
    assert_eq!(
        v["result"],
        json!({"props": ["agents.echo.chunk_chars", "daemon.ask_timeout_secs", "security.trust_daemon_uid", "agents.echo.system_prompt", "gateway.host"], "set": true}),
        "{v}"
    );
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 9);
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 7);
    assert_eq!(get(&mut c, "security.trust_daemon_uid"), true);
    assert_eq!(get(&mut c, "agents.echo.system_prompt"), "1.5");
    assert_eq!(get(&mut c, "gateway.host"), "true");
    // A grants list replaces the whole list; a table replaces the table.
    let v = set_many(
        &mut c,
        &[
            (
                "permission_profiles.p.grants",
                json!({"system": ["read"], "files": ["create"]}),
            ),
            ("permission_profiles.p.grants.sessions", json!(["read"])),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(
        get(&mut c, "permission_profiles.p.grants"),
        json!({"files": ["create"], "sessions": ["read"], "system": ["read"]})
    );
    // An unlisted resource of an existing profile reads as an empty list.
    assert_eq!(
        get(&mut c, "permission_profiles.p.grants.config"),
        json!([])
    );
    // An env table replaces the whole table.
    c.config_set("agents.echo.env", json!({"A": "1", "B": "2"}));
    c.config_set("agents.echo.env", json!({"C": "3"}));
    assert_eq!(get(&mut c, "agents.echo.env"), json!({"C": "3"}));

    // config/get: unknown props are -32602; unset optional fields are null.
    for prop in [
        "nope",
        "agents",
        "agents.echo",
        "daemon",
        "agents.ghost.backend",
    ] {
        let v = c.call_frame("config/get", json!({"prop": prop}));
        assert_eq!(v["error"]["code"], -32602, "{prop}: {v}");
    }
    assert_eq!(get(&mut c, "security.socket_group"), Value::Null);
    let all = c.ok("config/get", json!({}));
    assert_eq!(
        all["daemon"],
        json!({"session_idle_secs": 1800, "approval_timeout_secs": 120, "ask_timeout_secs": 7, "upload_idle_secs": 300, "memory_budget_mib": 1024, "advertised_server_version": null})
    );
    assert_eq!(all["schema_version"], 1);
    assert_eq!(all["gateway"]["port"], 42617);
    assert_eq!(all["agents"]["echo"]["timeout_secs"], 600);
    // The effective default (§8.14, §10.2), not null.
    let workspace = d.config_dir.join("agents").join("echo").join("workspace");
    assert_eq!(
        all["agents"]["echo"]["workspace_dir"],
        json!(workspace.to_str().unwrap())
    );
}

#[test]
fn config_set_runs_the_same_pipeline_naming_the_prop() {
    let (d, mut c) = Daemon::with_client();
    let v = c.call_frame(
        "config/set",
        json!({"prop": "agents.echo.chunk_chars", "value": 4}),
    );
    assert_eq!(
        v["result"],
        json!({"prop": "agents.echo.chunk_chars", "set": true})
    );
    let cases: Vec<(Value, &str, Value)> = vec![
        (
            json!({"prop": "agents.echo.chunk_chars", "value": "x"}),
            "agents.echo.chunk_chars: expected an integer in 0..=4294967295",
            json!({"prop": "agents.echo.chunk_chars"}),
        ),
        (
            json!({"prop": "agents.echo.chunk_chars", "value": null}),
            "agents.echo.chunk_chars: null is not accepted (deleting a prop is out of scope)",
            json!({"prop": "agents.echo.chunk_chars"}),
        ),
        (
            json!({"prop": "schema_version", "value": 1}),
            "schema_version: read-only prop",
            json!({"prop": "schema_version"}),
        ),
        (
            json!({"prop": "agents.echo", "value": {}}),
            "agents.echo: unknown prop",
            json!({"prop": "agents.echo"}),
        ),
        (
            json!({"prop": "agents.echo.chunk_chars", "value": 0}),
            "invalid configuration: agents.echo.chunk_chars: must be at least 1",
            json!({"path": "agents.echo.chunk_chars"}),
        ),
    ];
    for (params, message, data) in cases {
        let v = unchanged(&d, &mut c, |c| c.call_frame("config/set", params.clone()));
        assert_error_exact(&err_of(&v), -32602, Some(message), Some(data));
    }
    // Missing members fail decoding.
    for params in [
        json!({"prop": "agents.echo.chunk_chars"}),
        json!({"value": 1}),
    ] {
        let v = unchanged(&d, &mut c, |c| c.call_frame("config/set", params.clone()));
        assert_eq!(v["error"]["code"], -32602, "{v}");
    }
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 4);
}

#[test]
fn commits_are_persisted_privately_and_survive_a_restart() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    {
        let d = Daemon::builder().config_dir(&cfg).spawn();
        let mut c = d.client();
        let v = set_many(
            &mut c,
            &[
                ("agents.echo.chunk_chars", json!(3)),
                ("agents.second.backend", json!("echo")),
                (
                    "agents.second.system_prompt",
                    json!("line\n\"quoted\" = [x]"),
                ),
                ("daemon.session_idle_secs", json!(0)),
            ],
        );
        assert_eq!(v["result"]["set"], true, "{v}");
        let meta = std::fs::metadata(cfg.join("config.toml")).unwrap();
        #[cfg(unix)]
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        #[cfg(windows)]
        assert!(meta.is_file());
        assert!(!cfg.join("config.toml.tmp").exists());
        // The default file, edited: what was set and nothing else (docs/config.md,
        // "What a write changes").
        assert_eq!(
            String::from_utf8(config_bytes(&cfg)).unwrap(),
            "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\nchunk_chars = 3\n\n\
             [agents.second]\nbackend = \"echo\"\nsystem_prompt = \"\"\"\nline\n\"quoted\" = [x]\"\"\"\n\n\
             [daemon]\nsession_idle_secs = 0\n"
        );
    }
    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 3);
    assert_eq!(get(&mut c, "daemon.session_idle_secs"), 0);
    assert_eq!(
        get(&mut c, "agents.second.system_prompt"),
        "line\n\"quoted\" = [x]"
    );
    // The restarted daemon can commit on top of the file it read.
    let v = set_many(&mut c, &[("agents.second.chunk_chars", json!(2))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(file_config(&d).agents["second"].chunk_chars, 2);
}
