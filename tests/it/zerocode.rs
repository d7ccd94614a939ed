//! zerocode, ZeroClaw's own terminal client, against the real
//! daemon: its exact startup sequence and chat turns, frames written as its
//! source writes them and every answer checked with its decoders' rules
//! (tests/it/common/zerocode.rs names the commit read).

// Unix only: one test stops the daemon with SIGTERM.

use crate::common;
use common::start::{start, start_echo, write_config, Env};

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use common::zerocode::*;
use common::{TestDir, VERSION};

/// The config of a user running a stock zerocode 0.8.4 against this daemon.
fn zerocode_config() -> String {
    format!(
        "schema_version = 1\n[daemon]\nadvertised_server_version = \"{ZEROCODE_VERSION}\"\n\
         [agents.echo]\nbackend = \"echo\"\nchunk_chars = 4\n"
    )
}

/// A directory inside a git repository on branch `zc-test` (zerocode's cwd).
fn repo_dir(dir: &TestDir) -> (PathBuf, &'static str) {
    const HASH: &str = "1111111111111111111111111111111111111111";
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/zc-test\n").unwrap();
    std::fs::write(repo.join(".git/refs/heads/zc-test"), format!("{HASH}\n")).unwrap();
    (repo.join("src"), HASH)
}

fn group_rank(group: &str) -> usize {
    const ORDER: [&str; 9] = [
        "Foundation",
        "Agent",
        "Multi-agent",
        "Tools",
        "Integrations",
        "Network",
        "Storage",
        "Operations",
        "Other",
    ];
    ORDER
        .iter()
        .position(|g| *g == group)
        .unwrap_or(ORDER.len() - 1)
}

/// `app.rs` `build_panes` on a fresh daemon: dashboard, config, ACP pane,
/// chat pane, logs, quickstart, then the chrome's status/health poll.
/// Returns the chat pane's session id.
fn startup(zc: &mut Zerocode, cwd: &Path) -> String {
    let env: Value = json!({"HOME": "/home/zc", "PATH": "/usr/bin:/bin", "TERM": "xterm-256color"});
    let init = zc.must(
        "initialize",
        &json!({"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}, "env": env}),
    );
    check_initialize(&init);
    assert!(
        zc.sent[0].starts_with(
            r#"{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{"elicitation":{"form":{}}},"env":{"HOME""#
        ),
        "{}",
        zc.sent[0]
    );

    // Dashboard::init (Overview tab): all three tolerated.
    assert_eq!(
        zc.call("cost/query", &json!({"agent": null}))
            .unwrap_err()
            .0,
        -32601
    );
    let agents = zc.must("agents/status", &json!({}));
    assert_eq!(check_agents(&agents), ["echo"]);
    assert_eq!(zc.call("tui/list", &json!({})).unwrap_err().0, -32601);

    // config_manager::App::init: exits on any error here.
    let mut sections = check_sections(&zc.must("config/sections", &json!({})));
    sections.sort_by_key(|s| group_rank(s["group"].as_str().unwrap_or("")));
    check_templates(&zc.must("config/templates", &json!({})));
    let first = &sections[0];
    let key = first["key"].as_str().unwrap();
    match first["shape"].as_str() {
        Some("one_tier_alias_map") => {
            let keys = check_map_keys(&zc.must("config/map-keys", &json!({"path": key})));
            for alias in keys {
                let prefix = format!("{key}.{alias}.enabled");
                let _ = zc.call("config/list", &json!({"prefix": prefix}));
            }
        }
        _ => {
            let n = check_config_list(&zc.must("config/list", &json!({"prefix": key})));
            assert!(n > 0, "the first section {key} lists its props");
        }
    }

    // The ACP pane: one enabled agent, no recent ACP session, a fresh one in zerocode's cwd.
    let acp_agents = zc.must("agents/status", &json!({}));
    assert_eq!(check_agents(&acp_agents), ["echo"]);
    let recent = zc.must("session/list-acp", &json!({}));
    assert_eq!(recent["sessions"], json!([]));
    let todo = zc.call("config/list", &json!({"prefix": "todotracker"}));
    assert_eq!(todo.map(|r| check_config_list(&r)), Ok(0));
    let cwd_text = cwd.to_str().unwrap();
    let acp = zc.must(
        "session/new",
        &json!({"agent_alias": "echo", "cwd": cwd_text, "session_id": null, "tui_id": null,
                "exclude_memory": true, "chat_mode": "acp"}),
    );
    check_session_new(&acp);

    // The chat pane.
    check_agents(&zc.must("agents/status", &json!({})));
    let _ = zc.call("config/list", &json!({"prefix": "todotracker"}));
    let chat = zc.must(
        "session/new",
        &json!({"agent_alias": "echo", "cwd": cwd_text, "session_id": null, "tui_id": null}),
    );
    let sid = check_session_new(&chat);
    assert_eq!(chat["workspace_dir"], cwd_text);

    // Logs::init: subscribe exits on error; the first page is tolerated but must decode.
    zc.must("logs/subscribe", &json!({}));
    let page = zc.must(
        "logs/query",
        &json!({"hide_internal": true, "limit": 200, "severity_min": 5}),
    );
    let events = check_logs_query(&page);
    assert!(
        events
            .iter()
            .any(|e| e["event"]["action"] == "session_created"),
        "the first page holds this startup's records: {page}"
    );

    // QuickstartPane::init, then ChromeStatus's poll.
    assert_eq!(
        zc.call("quickstart/state", &json!({})).unwrap_err().0,
        -32601
    );
    let status = zc.must("status", &json!({}));
    assert!(status["server_version"].is_string() && status["protocol_version"].is_u64());
    assert!(status["active_sessions"].is_u64());
    let health = zc.must("health", &json!({}));
    assert_eq!(health["status"], "ok", "{health}");
    sid
}

/// Reads one turn's `session/update`s (zerocode's router), up to `turn_complete`;
/// `logs/event`s on the way must decode as Logs-pane entries.
fn turn(zc: &mut Zerocode, sid: &str) -> Vec<(String, Value)> {
    let seen = zc.until_notification(|m, p| {
        m == "session/update" && p["type"] == "turn_complete" && p["session_id"] == sid
    });
    let mut updates = Vec::new();
    for (m, p) in seen {
        match m.as_str() {
            "session/update" => {
                if let Some(u) = parse_update(&p) {
                    updates.push(u);
                }
            }
            "logs/event" => check_log_entry(&p),
            other => panic!("zerocode ignores {other}, but we did not expect it"),
        }
    }
    updates
}

fn text_of(updates: &[(String, Value)]) -> String {
    updates
        .iter()
        .filter(|(k, _)| k == "agent_message_chunk")
        .map(|(_, p)| p["text"].as_str().unwrap())
        .collect()
}

fn zerocode_daemon() -> (Env, Zerocode) {
    let env = start(&zerocode_config());
    let zc = Zerocode::new(env.connect());
    (env, zc)
}

#[test]
fn zerocode_startup_sequence_and_one_streamed_chat_turn() {
    let (env, mut zc) = zerocode_daemon();
    let (cwd, hash) = repo_dir(&env.dir);
    let sid = startup(&mut zc, &cwd);

    let (branch, got_hash) =
        check_git_branch(&zc.must("session/git_branch", &json!({"session_id": sid})));
    assert_eq!(branch.as_deref(), Some("zc-test"));
    assert_eq!(got_hash.as_deref(), Some(hash));

    zc.notify(
        "session/prompt",
        &json!({"session_id": sid, "prompt": "Hello zerocode"}),
    );
    assert_eq!(
        zc.sent.last().unwrap(),
        &format!(
            r#"{{"jsonrpc":"2.0","method":"session/prompt","params":{{"prompt":"Hello zerocode","session_id":"{sid}"}}}}"#
        )
    );
    let updates = turn(&mut zc, &sid);
    assert_eq!(text_of(&updates), "Hello zerocode");
    let chunks = updates
        .iter()
        .filter(|(k, _)| k == "agent_message_chunk")
        .count();
    assert_eq!(chunks, 4, "streamed in chunk_chars = 4 pieces: {updates:?}");
    let (_, done) = updates.last().unwrap();
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["content"], "Hello zerocode");

    // The Logs pane saw this turn's records live.
    zc.must("status", &json!({}));
    let page =
        check_logs_query(&zc.must("logs/query", &json!({"limit": 50, "q": "session_created"})));
    assert!(!page.is_empty());
}

#[test]
fn zerocode_approval_choice_cancel_and_failure_screens() {
    let (env, mut zc) = zerocode_daemon();
    let (cwd, _) = repo_dir(&env.dir);
    let sid = startup(&mut zc, &cwd);

    // A tool call with approval (allow once).
    zc.notify(
        "session/prompt",
        &json!({"session_id": sid, "prompt": "::approve rm {\"path\":\"x\"}\ndone"}),
    );
    let seen = zc.until_notification(|_, p| p["type"] == "approval_request");
    let (_, req) = seen.last().unwrap();
    let (_, req) = parse_update(req).unwrap();
    assert_eq!(req["tool_name"], "rm");
    let approved = zc.must(
        "session/approve",
        &json!({"session_id": sid, "request_id": req["request_id"], "decision": "allow_once"}),
    );
    assert!(approved.is_object());
    let updates = turn(&mut zc, &sid);
    let result = updates
        .iter()
        .find(|(k, _)| k == "tool_result")
        .expect("a tool_result");
    assert_eq!(result.1["raw_output"], "{\"path\":\"x\"}");
    assert_eq!(text_of(&updates), "done");

    // A choice question: zerocode renders a modal only for this shape.
    zc.notify(
        "session/prompt",
        &json!({"session_id": sid, "prompt": "::choose Pick a fruit | Apple | Banana"}),
    );
    let ask = zc.until_inbound();
    assert_eq!(ask["method"], "elicitation/create");
    let p = &ask["params"];
    assert_eq!(p["sessionId"], sid.as_str());
    assert_eq!(p["mode"], "form");
    assert_eq!(p["message"], "Pick a fruit");
    let (property, schema) = p["requestedSchema"]["properties"]
        .as_object()
        .and_then(|o| o.iter().next())
        .expect("ElicitationShape::from_schema: a first property");
    assert_eq!(property, "choice");
    assert_eq!(schema["type"], "string");
    assert_eq!(
        schema["oneOf"],
        json!([{"const": "choice-0", "title": "Apple"}, {"const": "choice-1", "title": "Banana"}])
    );
    zc.respond(
        &ask["id"],
        &json!({"action": "accept", "content": {"choice": "choice-1"}}),
    );
    let updates = turn(&mut zc, &sid);
    assert_eq!(text_of(&updates), "choice: Banana");

    // Cancel: the partial text streams once, `content` is the closing notice.
    zc.notify(
        "session/prompt",
        &json!({"session_id": sid, "prompt": "::chunk 1\n::delay 300\nabcdefghijklmnopqrstuvwxyz"}),
    );
    zc.until_notification(|_, p| p["type"] == "agent_message_chunk");
    let cancelled = zc.call("session/cancel", &json!({"session_id": sid}));
    assert!(cancelled.is_ok(), "{cancelled:?}");
    let updates = turn(&mut zc, &sid);
    let (_, done) = updates.last().unwrap();
    assert_eq!(done["outcome"], "cancelled");
    assert_eq!(done["content"], "turn cancelled");
    assert_eq!(done["reason"], "cancelled");

    // Failure: zerocode shows only `content`, so it names the reason.
    zc.notify(
        "session/prompt",
        &json!({"session_id": sid, "prompt": "::fail the disk is on fire"}),
    );
    let updates = turn(&mut zc, &sid);
    let (_, done) = updates.last().unwrap();
    assert_eq!(done["outcome"], "failed");
    assert_eq!(done["content"], "turn failed: the disk is on fire");

    // The ACP pane's recent-session picker (after a restart) decodes our list.
    let listed = check_session_list(&zc.must("session/list-acp", &json!({})));
    assert_eq!(listed.len(), 1, "the ACP pane's session: {listed:?}");
}

#[test]
fn the_advertised_version_is_for_snake_clients_only_and_logged() {
    let (env, mut zc) = zerocode_daemon();
    let r = zc.must("initialize", &json!({"protocol_version": 1}));
    assert_eq!(r["server_version"], ZEROCODE_VERSION);
    let mut camel = env.connect();
    assert_eq!(camel.initialize()["serverVersion"], VERSION);
    // The log is written by its own thread: wait for the line, then count.
    let seen = env
        .log
        .wait_event(0, "advertised_server_version", common::RECV_TIMEOUT);
    assert!(seen.is_some(), "{}", env.log.text());
    let logged = env.log.events_named("advertised_server_version");
    assert_eq!(logged.len(), 1, "{}", env.log.text());
    assert_eq!(logged[0]["advertised"], ZEROCODE_VERSION);
    assert_eq!(logged[0]["actual"], VERSION);

    // Without the setting a stock zerocode refuses us, as its source says it must.
    let plain = start_echo();
    let mut zc = Zerocode::new(plain.connect());
    let r = zc.must("initialize", &json!({"protocol_version": 1}));
    assert_eq!(r["server_version"], VERSION);
    assert_ne!(VERSION, ZEROCODE_VERSION);
}

#[test]
fn a_malformed_advertised_version_refuses_to_start_naming_the_key() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(
        &cfg,
        "schema_version = 1\n[daemon]\nadvertised_server_version = \"0.8.4 beta\"\n[agents.echo]\nbackend = \"echo\"\n",
    );
    let failed = common::DaemonBuilder::new()
        .config_dir(&cfg)
        .try_spawn()
        .expect_err("the daemon must refuse the value");
    assert_eq!(failed.status.code(), Some(1));
    let text = failed.log.text();
    assert!(
        text.contains("daemon.advertised_server_version") && text.contains("[0-9A-Za-z.+-]"),
        "{text}"
    );
}

#[test]
fn zerocode_resumes_its_acp_session_after_a_daemon_restart() {
    let (mut env, mut zc) = zerocode_daemon();
    let (cwd, _) = repo_dir(&env.dir);
    startup(&mut zc, &cwd);
    let listed = check_session_list(&zc.must("session/list-acp", &json!({})));
    let acp = listed[0].clone();
    zc.notify(
        "session/prompt",
        &json!({"session_id": acp, "prompt": "remember me"}),
    );
    assert_eq!(text_of(&turn(&mut zc, &acp)), "remember me");

    env.daemon.signal(libc::SIGTERM);
    let status = env
        .daemon
        .wait_exit(common::EXIT_TIMEOUT)
        .expect("the daemon exits");
    assert_eq!(status.code(), Some(0));
    let daemon = common::DaemonBuilder::new()
        .config_dir(&env.daemon.config_dir)
        .spawn();

    // zerocode's reconnect: a new handshake, then the carried ACP session id
    // with no cwd (the daemon keeps the session's own).
    let mut zc = Zerocode::new(daemon.connect());
    check_initialize(&zc.must(
        "initialize",
        &json!({"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}}),
    ));
    let resumed = zc.must(
        "session/new",
        &json!({"agent_alias": "echo", "cwd": null, "session_id": acp, "tui_id": null,
                "exclude_memory": true, "chat_mode": "acp"}),
    );
    assert_eq!(check_session_new(&resumed), acp);
    assert_eq!(resumed["resumed"], true, "{resumed}");
    assert_eq!(resumed["message_count"], 2, "{resumed}");
    assert_eq!(resumed["workspace_dir"], cwd.to_str().unwrap());
}
