//! The everyday commands against a real daemon over its socket:
//! `zeroclaw stop`, `sessions [show|kill|delete]`, `agents`,
//! `config get|set` and `run`: their human output, their `--json`
//! documents, their exit statuses, and colour only on a terminal.

// Unix only: `zeroclaw stop` (SIGTERM) and a pseudo-terminal through util-linux `script`.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::start::{echo_client, start_echo, Env};
use common::{hermetic_env, run_cli_code, Client, TestDir, BIN};
use serde_json::{json, Value};

/// `zeroclaw ARGS…` against `env`'s daemon: (status, stdout, stderr).
fn cli(env: &Env, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = env.cli();
    cmd.args(args);
    run_cli_code(cmd)
}

/// As [`cli`], expecting exit 0; stdout.
#[track_caller]
fn cli_ok(env: &Env, args: &[&str]) -> String {
    let (code, out, err) = cli(env, args);
    assert_eq!(code, Some(0), "{args:?}: stdout {out}\nstderr {err}");
    out
}

/// As [`cli_ok`] with `--json`: the one JSON document on stdout.
#[track_caller]
fn cli_json(env: &Env, args: &[&str]) -> Value {
    let out = cli_ok(env, args);
    assert_eq!(out.lines().count(), 1, "one document: {out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// A session `sid` of `echo` in `mode` with one finished turn of `prompt`.
fn session_with_turn(c: &mut Client, sid: &str, mode: &str, prompt: &str) {
    c.ok(
        "session/new",
        json!({"agent_alias": "echo", "session_id": sid, "chat_mode": mode}),
    );
    c.ok(
        "session/prompt",
        json!({"session_id": sid, "prompt": prompt}),
    );
}

#[test]
fn sessions_lists_shows_kills_and_deletes() {
    let (env, mut c) = echo_client();
    session_with_turn(&mut c, "s-a", "acp", "hello");

    let out = cli_ok(&env, &["sessions"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0], "ID   AGENT  MODE  STATE  MESSAGES  LAST ACTIVITY");
    assert!(
        lines[1].starts_with("s-a  echo   acp   live   2         20"),
        "{out}"
    );
    assert!(!out.contains('\x1b'), "no colour in a pipe: {out:?}");

    let list = cli_json(&env, &["sessions", "--json"]);
    let s = &list["sessions"][0];
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        (
            &s["session_id"],
            &s["agent_alias"],
            &s["chat_mode"],
            &s["state"],
            &s["message_count"]
        ),
        (
            &json!("s-a"),
            &json!("echo"),
            &json!("acp"),
            &json!("live"),
            &json!(2)
        )
    );

    assert_eq!(
        cli_ok(&env, &["sessions", "show", "s-a"]),
        "you: hello\nagent: hello\n"
    );
    let page = cli_json(&env, &["sessions", "show", "s-a", "--json"]);
    assert_eq!(page["total"], json!(2));
    assert_eq!(page["messages"][1]["content"], json!("hello"));

    assert_eq!(cli_ok(&env, &["sessions", "kill", "s-a"]), "killed s-a\n");
    let list = cli_json(&env, &["sessions", "list", "--json"]);
    assert_eq!(list["sessions"][0]["state"], json!("killed"));
    assert_eq!(
        cli_ok(&env, &["sessions", "delete", "s-a"]),
        "deleted s-a\n"
    );
    assert_eq!(cli_ok(&env, &["sessions"]), "no sessions\n");

    // Unknown sessions: the daemon's error, exit 1, nothing on stdout.
    for args in [
        &["sessions", "show", "nope"][..],
        &["sessions", "kill", "nope"],
    ] {
        let (code, out, err) = cli(&env, args);
        assert_eq!(code, Some(1), "{args:?}: {out} {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(err.starts_with("zeroclaw: "), "{args:?}: {err}");
    }
    let (code, out, err) = cli(&env, &["sessions", "kill", "nope", "--json"]);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    let e: Value = serde_json::from_str(err.trim()).expect("the error object as JSON");
    assert_eq!(e["code"], json!(-32000), "{err}");
}

#[test]
fn a_transcript_reaches_the_terminal_sanitized() {
    let (env, mut c) = echo_client();
    session_with_turn(&mut c, "s-evil", "chat", "red\x1b[31m\u{202e}x");
    let out = cli_ok(&env, &["sessions", "show", "s-evil"]);
    assert_eq!(out, "you: red␛[31m<U+202E>x\nagent: red␛[31m<U+202E>x\n");
}

#[test]
fn agents_shows_backends_and_counts() {
    let (env, mut c) = echo_client();
    session_with_turn(&mut c, "s-1", "acp", "hi");
    assert_eq!(
        cli_ok(&env, &["agents"]),
        "ALIAS  BACKEND  LIVE  PERSISTED  DEFAULT\necho   echo     1     1          *\n"
    );
    let v = cli_json(&env, &["agents", "--json"]);
    let a = &v["agents"][0];
    assert_eq!(v["agents"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        (
            &a["alias"],
            &a["backend"],
            &a["live_sessions"],
            &a["persisted_sessions"]
        ),
        (&json!("echo"), &json!("echo"), &json!(1), &json!(1))
    );
}

#[test]
fn config_gets_and_sets_one_prop() {
    let env = start_echo();
    assert_eq!(
        cli_ok(&env, &["config", "set", "agents.echo.chunk_chars", "7"]),
        "set agents.echo.chunk_chars\n"
    );
    assert_eq!(
        cli_ok(&env, &["config", "get", "agents.echo.chunk_chars"]),
        "7\n"
    );
    let v = cli_json(
        &env,
        &["config", "get", "agents.echo.chunk_chars", "--json"],
    );
    assert_eq!(v, json!({"prop": "agents.echo.chunk_chars", "value": 7}));
    // A value that is not JSON is a string: the daemon refuses it for an integer.
    let (code, out, err) = cli(&env, &["config", "set", "agents.echo.chunk_chars", "seven"]);
    assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
    assert!(
        err.starts_with("zeroclaw: agents.echo.chunk_chars: "),
        "{err}"
    );
    let v = cli_json(
        &env,
        &[
            "config",
            "set",
            "agents.echo.chunk_chars",
            "\"9\"",
            "--json",
        ],
    );
    assert_eq!(v, json!({"prop": "agents.echo.chunk_chars", "set": true}));
    let (code, _, err) = cli(&env, &["config", "get", "agents.nope"]);
    assert_eq!(code, Some(1), "{err}");
}

#[test]
fn run_streams_the_answer_and_exits_with_the_outcome() {
    let env = start_echo();
    let (code, out, err) = cli(&env, &["run", "hello\nworld"]);
    assert_eq!((code, out.as_str()), (Some(0), "hello\nworld\n"), "{err}");

    let (code, out, err) = cli(&env, &["run", "partial\n::fail boom"]);
    assert_eq!(code, Some(1), "{out} {err}");
    assert!(err.contains("the turn failed: boom"), "{err}");

    let v = cli_json(&env, &["run", "--agent", "echo", "hi", "--json"]);
    assert_eq!(
        (&v["stop_reason"], &v["content"]),
        (&json!("end_turn"), &json!("hi"))
    );
    let sid = v["session_id"].as_str().expect("a session id").to_owned();

    // The fresh session was closed after its turn, not left live.
    let list = cli_json(&env, &["sessions", "--json"]);
    let entry = list["sessions"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["session_id"] == json!(sid)))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["state"], json!("persisted"), "{list}");
    // --session: the same session goes on, resumed (its context holds "hi").
    let out = cli_ok(&env, &["run", "--session", &sid, "::context"]);
    assert!(out.contains(r#""content":"hi""#), "{out}");
    let (code, out, err) = cli(&env, &["run", "--session", "nope", "x"]);
    assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
    assert!(err.contains("no session \"nope\""), "{err}");
    let (code, _, err) = cli(&env, &["run", "--agent", "nope", "x"]);
    assert_eq!(code, Some(1), "{err}");
}

#[test]
fn run_refuses_approvals_unless_told() {
    let env = start_echo();
    let tool_output = |v: &Value| {
        let sid = v["session_id"].as_str().expect("a session id").to_owned();
        let page = cli_json(&env, &["sessions", "show", &sid, "--json"]);
        page["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|r| r["kind"] == "tool_result"))
            .map(|r| r["content"].clone())
    };
    let (code, out, err) = cli(&env, &["run", "--json", "::approve rm {}"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("zeroclaw: refused rm (pass --approve"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(tool_output(&v), Some(json!("denied: rejected")));

    let (code, out, err) = cli(
        &env,
        &[
            "run",
            "--json",
            "--approve",
            "allow_once",
            "::approve rm {}",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("refused"), "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(tool_output(&v), Some(json!("{}")));

    // A typo in the decision is a usage error before any connection.
    let (code, _, err) = cli(&env, &["run", "--approve", "allow", "x"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn stop_ends_the_daemon_gracefully() {
    let mut env = start_echo();
    let pid = env.daemon.pid;
    let out = cli_ok(&env, &["stop"]);
    assert_eq!(out, format!("stopped the daemon (pid {pid})\n"));
    assert!(!env.daemon.socket.exists(), "the endpoint is gone");
    let status = env.daemon.wait_exit(Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "exited 0");

    // With no daemon, every command exits 3 and says why on stderr.
    for args in [
        &["stop"][..],
        &["stop", "--json"],
        &["sessions"],
        &["sessions", "show", "x"],
        &["agents", "--json"],
        &["config", "get", "daemon.max_connections"],
        &["run", "hi"],
    ] {
        let (code, out, err) = cli(&env, args);
        assert_eq!(code, Some(3), "{args:?}: {out} {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(err.starts_with("zeroclaw: "), "{args:?}: {err}");
    }
}

#[test]
fn stop_json_reports_the_pid() {
    let mut env = start_echo();
    let v = cli_json(&env, &["stop", "--json"]);
    assert_eq!(v, json!({"stopped": true, "pid": env.daemon.pid}));
    assert!(env.daemon.wait_exit(Duration::from_secs(10)).is_some());
}

/// `zeroclaw ARGS…` under a real pty (util-linux `script`), with `vars`
/// set: what the terminal received, or `None` without `script`.
fn on_a_terminal(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Option<String> {
    let probe = Command::new("script").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return None;
    }
    // The chat waits for input after its first turn: ended after 4 s.
    let mut line = format!(
        "timeout 4 {BIN} --config-dir '{}'",
        env.daemon.config_dir.display()
    );
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = Command::new("script");
    let home = TestDir::new();
    hermetic_env(&mut cmd, home.path());
    cmd.env_remove("NO_COLOR");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"]);
    // What reached the terminal is the point, not how the command ended.
    let (_, out, _) = run_cli_code(cmd);
    Some(out)
}

#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let env = start_echo();
    let Some(tty) = on_a_terminal(&env, &["agents"], &[]) else {
        println!("SKIPPED colour_only_on_a_terminal_without_no_color: no `script` (util-linux)");
        return;
    };
    assert!(
        tty.contains("\x1b[1mALIAS  BACKEND  LIVE  PERSISTED  DEFAULT\x1b[0m"),
        "{tty:?}"
    );
    let plain = on_a_terminal(&env, &["agents"], &[("NO_COLOR", "1")]).unwrap_or_default();
    assert!(plain.contains("ALIAS  BACKEND"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR: {plain:?}");
    let piped = cli_ok(&env, &["agents"]);
    assert!(!piped.contains('\x1b'), "{piped:?}");

    // The chat follows the same rule: its dim thought line is styled on a
    // terminal, plain under NO_COLOR (its line editor still drives the
    // terminal: that is not colour).
    let chat = ["chat", "--new", "::think hm\nhello"];
    let styled = on_a_terminal(&env, &chat, &[]).unwrap_or_default();
    assert!(styled.contains("\x1b[2m"), "{styled:?}");
    let plain = on_a_terminal(&env, &chat, &[("NO_COLOR", "1")]).unwrap_or_default();
    assert!(plain.contains(" hm"), "{plain:?}");
    assert!(
        !plain.contains("\x1b[2m") && !plain.contains("\x1b[0m"),
        "{plain:?}"
    );
}
