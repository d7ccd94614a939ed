//! The protocol additions (docs/protocol-additions.md) over the real socket:
//! exact shapes, bad params `-32602` naming the member, and the effective
//! `config/get` view.

// Unix only: one test maps the test's own uid through the roster (a pipe carries no uid).

use crate::common;
use common::start::{config_with, echo_client, start, ECHO_ONLY};
use common::values::{items, pluck};

use serde_json::{json, Value};

fn bad_member(e: &Value, member: &str, message: &str) {
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["message"], message, "{e}");
    assert_eq!(e["data"], json!({"member": member}), "{e}");
}

#[test]
fn bad_params_name_the_member() {
    let (_d, mut c) = echo_client();
    let cases: &[(&str, Value, &str, &str)] = &[
        (
            "logs/query",
            json!({"limit": 0}),
            "limit",
            "limit must be an integer in 1..=2048",
        ),
        (
            "logs/query",
            json!({"severity_min": "x"}),
            "severity_min",
            "severity_min must be an integer in 0..=24",
        ),
        ("logs/query", json!({"q": 5}), "q", "q must be a string"),
        (
            "logs/query",
            json!({"hide_internal": "yes"}),
            "hide_internal",
            "hide_internal must be a boolean",
        ),
        (
            "logs/query",
            json!({"until_id": "abc"}),
            "until_id",
            "until_id must be an id from a previous page",
        ),
        (
            "session/git_branch",
            json!({}),
            "session_id",
            "session_id is required",
        ),
        (
            "session/git_branch",
            json!({"session_id": 5}),
            "session_id",
            "session_id must be a string",
        ),
        (
            "config/list",
            json!({"prefix": 3}),
            "prefix",
            "prefix must be a string",
        ),
        ("config/map-keys", json!({}), "path", "path is required"),
        (
            "config/map-keys",
            json!({"path": "daemon"}),
            "path",
            "path must be one of agents, users, permission_profiles",
        ),
    ];
    for (method, params, member, message) in cases {
        let e = c.fails(method, params.clone());
        bad_member(&e, member, message);
    }
    for method in [
        "config/sections",
        "config/templates",
        "agents/status",
        "health",
        "logs/subscribe",
    ] {
        let e = c.fails(method, json!([1]));
        assert_eq!(e["code"], -32602, "{method}: {e}");
    }
    let e = c.fails("session/git_branch", json!({"session_id": "nope"}));
    assert_eq!(
        e,
        json!({"code": -32000, "message": "Session not found: nope"})
    );
}

#[test]
fn sections_templates_map_keys_and_list_have_exact_shapes() {
    let (_d, mut c) = echo_client();
    let s = c.ok("config/sections", json!({}));
    let keys: Vec<(&str, bool, &str, &str)> = items(&s["sections"])
        .iter()
        .map(|s| {
            (
                s["key"].as_str().unwrap(),
                s["completed"].as_bool().unwrap(),
                s["group"].as_str().unwrap(),
                s["shape"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("daemon", false, "Foundation", "direct_form"),
            ("security", false, "Foundation", "direct_form"),
            ("agents", true, "Agent", "one_tier_alias_map"),
            ("gateway", false, "Network", "direct_form"),
            ("users", false, "Operations", "one_tier_alias_map"),
            (
                "permission_profiles",
                false,
                "Operations",
                "one_tier_alias_map"
            ),
        ]
    );
    let t = c.ok("config/templates", json!({}));
    let paths = pluck(&t["templates"], "path");
    assert_eq!(
        paths,
        [
            "agents.<alias>",
            "agents.<alias>",
            "users.<name>",
            "permission_profiles.<alias>"
        ]
    );
    assert_eq!(
        c.ok("config/map-keys", json!({"path": "agents"})),
        json!({"keys": ["echo"]})
    );
    assert_eq!(
        c.ok("config/map-keys", json!({"path": "users"})),
        json!({"keys": []})
    );
    let l = c.ok("config/list", json!({"prefix": "agents.echo.backend"}));
    assert_eq!(
        l,
        json!({"entries": [{"path": "agents.echo.backend", "category": "agents", "section": "agents",
            "kind": "enum", "type_hint": "string", "populated": true, "value": "echo",
            "is_secret": false, "is_env_overridden": false, "enum_variants": ["echo", "command", "acp", "openai"],
            "description": ""}]})
    );
    // A prefix is whole segments: `agents.echo.chunk` is not `agents.echo.chunk_chars`.
    assert_eq!(
        c.ok("config/list", json!({"prefix": "agents.echo.chunk"})),
        json!({"entries": []})
    );
    let daemon = c.ok("config/list", json!({"prefix": "daemon"}));
    let paths = pluck(&daemon["entries"], "path");
    assert_eq!(
        paths,
        [
            "daemon.advertised_server_version",
            "daemon.approval_timeout_secs",
            "daemon.ask_timeout_secs",
            "daemon.memory_budget_mib",
            "daemon.session_idle_secs",
            "daemon.upload_idle_secs"
        ]
    );
    let tokens = c.ok("config/list", json!({"prefix": "gateway.paired_tokens"}));
    assert_eq!(tokens["entries"][0]["is_secret"], true);
}

/// An ACP agent's credentials live in its `env`: reads never show
/// them, whichever read; a version-1 `command` agent's `env` reads as written.
#[test]
fn an_acp_agents_env_reads_masked_and_a_command_agents_as_written() {
    let d = start(&config_with(
        "[agents.claude]\nbackend = \"acp\"\ncommand = [\"claude-code-acp\"]\n\
         env = { ANTHROPIC_API_KEY = \"sk-ant-secret\", LANG = \"C\" }\n\
         [agents.cmd]\nbackend = \"command\"\ncommand = [\"cat\"]\nenv = { LANG = \"C\" }\n",
    ));
    let mut c = d.client();
    let masked = json!({"ANTHROPIC_API_KEY": "****", "LANG": "****"});
    assert_eq!(
        c.ok("config/get", json!({"prop": "agents.claude.env"})),
        json!({"prop": "agents.claude.env", "value": masked})
    );
    let all = c.ok("config/get", json!({}));
    assert_eq!(all["agents"]["claude"]["env"], masked, "{all}");
    assert_eq!(all["agents"]["cmd"]["env"], json!({"LANG": "C"}));
    let listed = c.ok("config/list", json!({"prefix": "agents.claude.env"}));
    assert_eq!(listed["entries"][0]["value"], masked, "{listed}");
    assert_eq!(listed["entries"][0]["is_secret"], true, "{listed}");
    let listed = c.ok("config/list", json!({"prefix": "agents.cmd.env"}));
    assert_eq!(listed["entries"][0]["is_secret"], false, "{listed}");
    assert!(!all.to_string().contains("sk-ant-secret"), "{all}");
}

#[test]
fn agents_status_counts_live_and_persisted_sessions() {
    let (_d, mut c) = echo_client();
    let empty = c.ok("agents/status", json!({}));
    assert_eq!(
        empty,
        json!({"agents": [{"alias": "echo", "backend": "echo", "channels": [], "default": true,
                           "enabled": true, "live_sessions": 0, "persisted_sessions": 0}]})
    );
    c.new_session("s-1", "chat");
    c.new_session("s-2", "acp");
    c.ok("session/close", json!({"session_id": "s-2"}));
    let after = c.ok("agents/status", json!({}));
    assert_eq!(after["agents"][0]["live_sessions"], 1);
    assert_eq!(after["agents"][0]["persisted_sessions"], 2);
}

#[test]
fn health_and_git_branch_outside_a_repository() {
    let (_d, mut c) = echo_client();
    let h = c.ok("health", json!({}));
    let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "connections",
            "live_sessions",
            "logging",
            "session_store",
            "status",
            "uptime_secs"
        ]
    );
    assert_eq!(h["status"], "ok");
    assert_eq!(h["session_store"], json!({"status": "ok"}));
    assert_eq!(h["logging"], json!({"dropped_lines": 0}));
    assert_eq!(h["connections"], 1);
    // The default workspace is under the test's config dir: no repository above it.
    c.new_session("s-1", "chat");
    let g = c.ok("session/git_branch", json!({"session_id": "s-1"}));
    assert_eq!(g, json!({"branch": null, "hash": null}));
}

#[test]
fn logs_subscribe_streams_other_connections_records_to_an_admin() {
    let (d, mut c) = echo_client();
    let r = c.ok("logs/subscribe", json!({}));
    assert_eq!(
        r,
        json!({"subscribed": true, "method": "logs/event", "queue_records": 256})
    );
    // Subscribing again is a no-op (one stream per connection).
    c.ok("logs/subscribe", json!({}));
    let _other = d.session_client("s-9", "chat");
    let (_, f) = c.until("the session_created record", |f| {
        f.method() == Some("logs/event") && f.params()["event"]["action"] == "session_created"
    });
    let p = f.params();
    assert_eq!(p["session_id"], "s-9");
    assert_eq!(p["severity_number"], 9);
    assert_eq!(p["severity_text"], "INFO");
    assert_eq!(p["event"]["category"], "session");
    assert!(p["id"].as_str().unwrap().parse::<u64>().is_ok(), "{p}");
    assert!(p["@timestamp"].as_str().unwrap().ends_with('Z'), "{p}");
    // The ring holds it too, newest first, paged by id.
    let page = c.ok(
        "logs/query",
        json!({"action": "session_created", "limit": 1}),
    );
    assert_eq!(page["events"][0]["session_id"], "s-9");
    assert_eq!(page["at_end"], true);
    let all = c.ok("logs/query", json!({"limit": 2}));
    assert_eq!(all["at_end"], false);
    let cursor = all["next_cursor"][1].as_str().unwrap().to_owned();
    let older = c.ok("logs/query", json!({"limit": 2, "until_id": cursor}));
    let first_older: u64 = older["events"][0]["id"].as_str().unwrap().parse().unwrap();
    assert!(first_older < cursor.parse::<u64>().unwrap());
}

#[test]
fn config_get_shows_each_agents_effective_workspace() {
    let d = start(&format!(
        "{ECHO_ONLY}\n[agents.other]\nbackend = \"echo\"\nworkspace_dir = \"/srv/other\"\n"
    ));
    let mut c = d.client();
    let all = c.ok("config/get", json!({}));
    let echo = d.config_dir.join("agents").join("echo").join("workspace");
    assert_eq!(
        all["agents"]["echo"]["workspace_dir"],
        echo.to_str().unwrap()
    );
    assert_eq!(all["agents"]["other"]["workspace_dir"], "/srv/other");
}

#[test]
fn a_subscriber_that_stops_reading_loses_the_oldest_records_and_is_told() {
    let (d, mut slow) = echo_client();
    slow.ok("logs/subscribe", json!({}));
    // `slow` reads nothing while 600 other connections come and go (three
    // records each): its socket buffer, its write queue and then its 256
    // records of queue fill. Every one of them is still served at once.
    for i in 0..600 {
        let mut c = d.client();
        let v = c.call("status", json!({}), json!(i));
        assert_eq!(v["id"], i, "{v}");
    }
    let (_, notice) = slow.until("the dropped-records notice", |f| {
        f.method() == Some("logs/event") && f.params()["event"]["action"] == "log_records_dropped"
    });
    let dropped = notice.params()["attributes"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{}", notice.raw);
    assert_eq!(notice.params()["severity_number"], 13);
    // The stream goes on after the notice.
    let (_, next) = slow.until("a record after the notice", |f| {
        f.method() == Some("logs/event")
    });
    assert!(next.params()["id"].as_str().unwrap().parse::<u64>().is_ok());
}

#[test]
fn a_non_admin_sees_its_agents_and_its_own_records_only() {
    let d = start(&format!(
        "schema_version = 1\n[security]\ntrust_daemon_uid = false\n\
         [agents.echo]\nbackend = \"echo\"\n[agents.hidden]\nbackend = \"echo\"\n\
         [permission_profiles.p]\nallowed_agents = [\"echo\"]\n\
         [permission_profiles.p.grants]\nsessions = [\"create\", \"read\", \"update\", \"execute\"]\n\
         system = [\"read\"]\nconfig = [\"read\"]\n\
         [users.ann]\nuid = {}\npermission_profiles = [\"p\"]\n",
        common::euid()
    ));
    let mut c = d.connect();
    let me = c.initialize()["principalId"].as_str().unwrap().to_owned();
    assert_ne!(me, "shared-operator");
    let agents = c.ok("agents/status", json!({}));
    let aliases = pluck(&agents["agents"], "alias");
    assert_eq!(aliases, ["echo"]);

    c.ok("logs/subscribe", json!({}));
    c.new_session("s-a", "chat");
    let (_, f) = c.until("my session_created", |f| {
        f.method() == Some("logs/event") && f.params()["event"]["action"] == "session_created"
    });
    assert_eq!(f.params()["session_id"], "s-a");
    // Another connection (same principal) comes and goes: its connection
    // records are not this connection's, its handshake is this principal's.
    let mut other = d.connect();
    other.initialize();
    drop(other);
    // Subscribed: records may come before an answer.
    let id = c.send("status", json!({}));
    c.until_answer(&id);
    let id = c.send("logs/query", json!({"limit": 2048}));
    let page = c.until_answer(&id).result().clone();
    let events = items(&page["events"]);
    let actions: Vec<&str> = events
        .iter()
        .map(|e| e["event"]["action"].as_str().unwrap())
        .collect();
    assert!(
        !actions.contains(&"listening"),
        "daemon records are the admin's: {actions:?}"
    );
    let accepted = actions
        .iter()
        .filter(|a| **a == "connection_accepted")
        .count();
    assert_eq!(accepted, 1, "only this connection's: {actions:?}");
    for e in events {
        let mine =
            e["principal_id"] == me.as_str() || e["session_id"] == "s-a" || e["conn"].is_u64();
        assert!(mine, "{e}");
    }
}
