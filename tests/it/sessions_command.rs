//! The `command` agent (§10.4) and the client side of sessions: the
//! `zeroclaw rpc` command with `--approve` and `--elicitation-reply` (§13)
//! and the quick test of §14, verbatim.

// Unix only: POSIX shell scripts, process groups, /proc.

use crate::common;
use common::errors::agent_failed;
use common::sessions;
use common::start::{config_with, start, start_echo, Env};
use common::wait::eventually;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{hermetic_env, run_cli, Client, Daemon, DaemonBuilder, TestDir, BIN, VERSION};
use serde_json::{json, Value};
use sessions::*;

/// A TOML string literal of `s`.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A daemon with the command agent `cmd` running `sh -c SCRIPT` and `extra` lines.
fn with_script(script: &str, extra: &str) -> Env {
    start(&config_with(&format!(
        "[agents.cmd]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", {}]\n{extra}",
        toml_str(script)
    )))
}

/// A fresh chat session of `cmd` on a new client.
/// A command agent running `script` (`{pids}` in it: a file for the pids
/// of the shell and of the program it starts, then "ready" on stdout), a
/// client of session `s-1` whose prompt is running, its id, and the pids.
fn script_running(script: &str) -> (Env, Client, Value, Vec<i32>) {
    let dir = TestDir::new();
    let file = dir.path().join("pids");
    let d = with_script(&script.replace("{pids}", &file.display().to_string()), "");
    let (mut c, _) = cmd_client(&d, "s-1");
    let id = c.start_prompt("s-1", "x");
    c.until_update(|u| u["text"] == "ready\n");
    let text = std::fs::read_to_string(&file).expect("the script wrote its pids");
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2, "{text:?}");
    (d, c, id, pids)
}

/// Waits (bounded) until every process of `pids` has ended.
fn all_gone(pids: &[i32]) {
    for &pid in pids {
        eventually(
            &format!("process {pid} to end"),
            Duration::from_secs(5),
            || process_gone(pid).then_some(()),
        );
    }
}

fn cmd_client(d: &Daemon, sid: &str) -> (Client, Value) {
    let mut c = d.client();
    let r = c.new_session_of("cmd", sid, "chat");
    (c, r)
}

// ---------------------------------------------------------------------------
// The command agent

#[test]
fn stdout_lines_are_chunks_and_the_content_is_stdout() {
    let d = with_script("printf 'line1\\nline2\\n'; printf '\\n'; printf tail", "");
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "ignored");
    t.check("s-1");
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", "line1\n"),
            msg("s-1", "line2\n"),
            msg("s-1", "\n"),
            msg("s-1", "tail"),
            complete("s-1", "completed", "line1\nline2\n\ntail", None),
        ]
    );
    assert_eq!(
        t.result(),
        &json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "line1\nline2\n\ntail"})
    );
}

#[test]
fn long_lines_are_split_at_64_kib_and_invalid_utf8_is_replaced() {
    let d = with_script(
        "head -c 70000 /dev/zero | tr '\\000' a; echo; printf 'x\\377y\\n'",
        "",
    );
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    t.check("s-1");
    assert_eq!(
        t.chunks(),
        [
            "a".repeat(65_536),
            format!("{}\n", "a".repeat(70_000 - 65_536)),
            "x\u{fffd}y\n".to_owned()
        ]
    );
}

#[test]
fn the_prompt_is_stdin_and_the_environment_names_the_turn() {
    let d = with_script(
        "cat; echo; echo \"$ZEROCLAW_SESSION_ID|$ZEROCLAW_AGENT_ALIAS|$FOO|${#ZEROCLAW_TURN_ID}\"; pwd",
        "env = { FOO = \"bar baz\" }\n",
    );
    let (mut c, r) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "a\nb");
    t.check("s-1");
    let ws = r["workspace_dir"].as_str().unwrap();
    assert_eq!(
        t.chunks(),
        [
            "a\n".to_owned(),
            "b\n".to_owned(),
            "s-1|cmd|bar baz|36\n".to_owned(),
            format!("{ws}\n")
        ]
    );
    // A new turn id each turn.
    let d2 = with_script("echo $ZEROCLAW_TURN_ID", "");
    let (mut c, _) = cmd_client(&d2, "s-2");
    let a = c.prompt("s-2", "x").result()["content"].clone();
    let b = c.prompt("s-2", "x").result()["content"].clone();
    assert_ne!(a, b);
    assert_eq!(a.as_str().unwrap().len(), 37, "{a}");
}

#[test]
fn an_admin_cwd_is_the_programs_working_directory() {
    let d = with_script("pwd", "");
    let cwd = TestDir::new();
    let mut c = d.client();
    let r = c.ok(
        "session/new",
        json!({"agent_alias": "cmd", "session_id": "s-1", "cwd": cwd.path()}),
    );
    assert_eq!(r["workspace_dir"], cwd.path().display().to_string());
    let t = c.prompt("s-1", "x");
    assert_eq!(t.result()["content"], format!("{}\n", cwd.path().display()));
    // Kept on resume without cwd.
    c.ok("session/close", json!({"session_id": "s-1"}));
    let r = c.new_session_of("cmd", "s-1", "chat");
    assert_eq!(r["workspace_dir"], cwd.path().display().to_string());
    // Not a directory, or relative: -32602.
    for bad in ["relative/dir", "/nonexistent/zeroclaw"] {
        let e = c.fails(
            "session/new",
            json!({"agent_alias": "cmd", "session_id": "s-2", "cwd": bad}),
        );
        assert_eq!(e["code"], -32602, "{bad}: {e}");
    }
}

#[test]
fn a_non_zero_exit_fails_the_turn_with_the_last_stderr_line() {
    let d = with_script(
        "echo out; echo first >&2; echo 'last err  ' >&2; echo >&2; exit 3",
        "",
    );
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("f-{mode}");
        c.new_session_of("cmd", &sid, mode);
        let t = c.prompt(&sid, "x");
        t.check(&sid);
        let message = "agent command exited with status 3: last err";
        assert_eq!(
            t.updates(),
            vec![
                msg(&sid, "out\n"),
                complete(&sid, "failed", "out\n", Some(message)),
            ]
        );
        agent_failed(t.error(), message);
    }
    // Without stderr: just the status.
    let d = with_script("exit 7", "");
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    agent_failed(t.error(), "agent command exited with status 7");
}

#[test]
fn a_program_that_cannot_start_fails_the_turn() {
    let d = start(&config_with(
        "[agents.cmd]\nbackend = \"command\"\ncommand = [\"/nonexistent/zeroclaw-agent\"]\n",
    ));
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    t.check("s-1");
    let e = t.error();
    assert_eq!(e["code"], -32603);
    assert_eq!(e["data"], json!({"reason": "agent_failed"}));
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("/nonexistent/zeroclaw-agent"),
        "names the program: {m}"
    );
    assert_eq!(t.turn_complete()["reason"], m);
}

#[test]
fn timeout_secs_fails_a_turn_that_runs_too_long() {
    let d = with_script("echo started; exec sleep 30", "timeout_secs = 1\n");
    let (mut c, _) = cmd_client(&d, "s-1");
    let start = Instant::now();
    let t = c.prompt("s-1", "x");
    let took = start.elapsed();
    t.check("s-1");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(8),
        "stopped by SIGTERM: {took:?}"
    );
    let message = "agent command timed out after 1 s";
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", "started\n"),
            complete("s-1", "failed", "started\n", Some(message)),
        ]
    );
    agent_failed(t.error(), message);
}

#[test]
fn cancel_terminates_the_program_and_its_children() {
    let (_d, mut c, id, pids) = script_running("sleep 60 & echo $$ $! > {pids}; echo ready; wait");
    assert!(pids.iter().all(|p| !process_gone(*p)), "running: {pids:?}");
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let all = c.until_all(&[id.clone(), cid]);
    assert_eq!(
        all[answer_index(&all, &id)].result(),
        &json!({"session_id": "s-1", "stop_reason": "cancelled", "content": "ready\n"})
    );
    assert_eq!(
        turns_of(&all),
        vec![vec![complete(
            "s-1",
            "cancelled",
            "ready\n",
            Some("cancelled")
        )]]
    );
    // The shell and the sleep it started are gone (SIGTERM to the group).
    all_gone(&pids);
}

#[test]
fn context_json_input_carries_the_system_prompt_and_the_history() {
    let d = start(&config_with(
        "[agents.cmd]\nbackend = \"command\"\ncommand = [\"cat\"]\ninput = \"context_json\"\nsystem_prompt = \"be brief\"\n",
    ));
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("j-{mode}");
        c.new_session_of("cmd", &sid, mode);
        let t = c.prompt(&sid, "hi");
        let first = r#"{"system_prompt":"be brief","messages":[{"role":"user","kind":"message","content":"hi"}]}"#;
        assert_eq!(t.result()["content"], first);
        let t = c.prompt(&sid, "again \"q\"");
        assert_eq!(
            t.result()["content"],
            format!(
                r#"{{"system_prompt":"be brief","messages":[{{"role":"user","kind":"message","content":"hi"}},{{"role":"assistant","kind":"message","content":{}}},{{"role":"user","kind":"message","content":"again \"q\""}}]}}"#,
                serde_json::to_string(first).unwrap()
            ),
            "mode {mode}"
        );
    }
}

// ---------------------------------------------------------------------------
// zeroclaw rpc

/// The JSON lines of a stream.
fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn rpc_session_prompt_streams_updates_on_stderr_and_the_result_on_stdout() {
    let d = start_echo();
    let (code, out, err) = d.rpc_cli(&[
        "session/new",
        r#"{"agent_alias":"echo","session_id":"demo","chat_mode":"acp"}"#,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(err, "");
    assert_eq!(json_lines(&out)[0]["session_id"], "demo");

    let (code, out, err) = d.rpc_cli(&[
        "session/prompt",
        r#"{"session_id":"demo","prompt":"Hello\n::tool echo {\"text\":\"x\"}\n::think done"}"#,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        json_lines(&out),
        vec![json!({"session_id": "demo", "stop_reason": "end_turn", "content": "Hello"})]
    );
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"agent_message_chunk","text":"Hello"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"tool_call","toolCallId":"tc_1","name":"echo","rawInput":{"text":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"tool_result","toolCallId":"tc_1","name":"echo","rawOutput":"{\"text\":\"x\"}"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"agent_thought_chunk","text":"done"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"turn_complete","outcome":"completed","content":"Hello"}}"#,
        ]
    );

    // A failed turn: the updates, then the error on stderr; exit 1.
    let (code, out, err) = d.rpc_cli(&[
        "session/prompt",
        r#"{"session_id":"demo","prompt":"a\n::fail no"}"#,
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(
        json_lines(&err),
        vec![
            json!({"jsonrpc": "2.0", "method": "session/update", "params": msg("demo", "a")}),
            json!({"jsonrpc": "2.0", "method": "session/update", "params": complete("demo", "failed", "a", Some("no"))}),
            json!({"code": -32603, "message": "no", "data": {"reason": "agent_failed"}}),
        ]
    );
}

#[test]
fn rpc_approve_answers_every_approval_request() {
    let d = start_echo();
    d.rpc_cli(&[
        "session/new",
        r#"{"agent_alias":"echo","session_id":"s-1"}"#,
    ]);
    for (decision, outputs) in [
        ("allow_once", ["{\"f\":1}", "{}"]),
        ("reject", ["denied: rejected", "denied: rejected"]),
    ] {
        let (code, out, err) = d.rpc_cli(&[
            "--approve",
            decision,
            "session/prompt",
            r#"{"session_id":"s-1","prompt":"::approve rm {\"f\":1}\n::approve cp\nend"}"#,
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_eq!(
            json_lines(&out),
            vec![json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "end"})]
        );
        let lines = json_lines(&err);
        let kinds: Vec<&str> = lines
            .iter()
            .map(|l| l["params"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "tool_call",
                "approval_request",
                "tool_result",
                "tool_call",
                "approval_request",
                "tool_result",
                "agent_message_chunk",
                "turn_complete"
            ],
            "{decision}: {err}"
        );
        assert_eq!(lines[2]["params"]["rawOutput"], outputs[0], "{decision}");
        assert_eq!(lines[5]["params"]["rawOutput"], outputs[1], "{decision}");
    }
    // allow_always: the second call of the same tool is not asked (the
    // session stays live between the two commands).
    let (code, out, err) = d.rpc_cli(&[
        "--approve",
        "allow_always",
        "session/prompt",
        r#"{"session_id":"s-1","prompt":"::approve rm"}"#,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = d.rpc_cli(&[
        "session/prompt",
        r#"{"session_id":"s-1","prompt":"::approve rm"}"#,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let kinds: Vec<Value> = json_lines(&err)
        .iter()
        .map(|l| l["params"]["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("tool_call"),
            json!("tool_result"),
            json!("turn_complete")
        ]
    );
}

#[test]
fn rpc_elicitation_reply_answers_every_question() {
    let d = start_echo();
    d.rpc_cli(&[
        "session/new",
        r#"{"agent_alias":"echo","session_id":"s-1"}"#,
    ]);
    let prompt = r#"{"session_id":"s-1","prompt":"::ask Continue?\n::ask Again?"}"#;
    let (code, out, err) = d.rpc_cli(&[
        "session/prompt",
        prompt,
        "--elicitation-reply",
        r#"{"action":"accept","content":{"answer":"yes"}}"#,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        json_lines(&out),
        vec![
            json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "answer: yes\nanswer: yes"})
        ]
    );
    // The daemon's requests are on stderr, whole, with their ids.
    let asks: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("elicitation/create"))
        .collect();
    assert_eq!(
        asks,
        [
            format!(
                r#"{{"jsonrpc":"2.0","method":"elicitation/create","params":{{"sessionId":"s-1","mode":"form","message":"Continue?","requestedSchema":{ASK_SCHEMA}}},"id":"zc-out-0"}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"elicitation/create","params":{{"sessionId":"s-1","mode":"form","message":"Again?","requestedSchema":{ASK_SCHEMA}}},"id":"zc-out-1"}}"#
            ),
        ]
    );
    // The default reply declines.
    let (code, out, err) = d.rpc_cli(&["session/prompt", prompt]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        json_lines(&out)[0]["content"],
        "answer: declined\nanswer: declined"
    );
    // Another action.
    let (code, out, _) = d.rpc_cli(&[
        "--elicitation-reply",
        r#"{"action":"cancel"}"#,
        "session/prompt",
        r#"{"session_id":"s-1","prompt":"::ask q"}"#,
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(json_lines(&out)[0]["content"], "answer: cancelled");
}

// ---------------------------------------------------------------------------
// The quick test of §14

/// A daemon whose config dir is `$HOME/.zeroclaw`, the default one.
fn home_daemon() -> Env {
    let dir = TestDir::new();
    let daemon = DaemonBuilder::new()
        .config_dir(dir.path().join(".zeroclaw"))
        .spawn();
    assert_eq!(
        daemon.socket,
        dir.path().join(".zeroclaw/data/daemon.sock"),
        "the endpoint of §14"
    );
    Env { daemon, dir }
}

/// `zeroclaw ARGS` with `HOME` and nothing else: the default endpoint.
fn zeroclaw(home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(BIN);
    hermetic_env(&mut cmd, home);
    cmd.args(args);
    let (status, out, err) = run_cli(cmd);
    (status.code(), out, err)
}

#[test]
fn the_quick_test_works_verbatim_over_the_socket() {
    let d = home_daemon();
    let home = &d.dir;
    let mut c = Client::connect(&home.path().join(".zeroclaw/data/daemon.sock"));
    c.send_line(r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}"#);
    let init = c.frame();
    assert_eq!(init.v["id"], 1);
    let r = init.result();
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["serverVersion"], VERSION);
    assert_eq!(r["serverPid"], d.pid);
    assert_eq!(r["principalId"], "shared-operator");
    c.send_line(r#"{"jsonrpc":"2.0","method":"status","params":{},"id":2}"#);
    let status = c.frame();
    assert_eq!(status.v["id"], 2);
    assert_eq!(status.result()["active_sessions"], 0);
    assert_eq!(
        status.result()["local_ipc_endpoint"],
        d.socket.display().to_string()
    );
    c.send_line(r#"{"jsonrpc":"2.0","method":"session/new","params":{"agent_alias":"echo","session_id":"demo","chat_mode":"acp"},"id":3}"#);
    let new = c.frame();
    assert_eq!(new.v["id"], 3);
    assert_eq!(
        new.result()["workspace_dir"],
        home.path()
            .join(".zeroclaw/agents/echo/workspace")
            .display()
            .to_string()
    );
    let mut r = new.result().clone();
    r.as_object_mut().unwrap().remove("workspace_dir");
    assert_eq!(
        r,
        json!({"session_id": "demo", "agent_alias": "echo", "chat_mode": "acp",
               "incarnation": r["incarnation"], "message_count": 0, "resumed": false})
    );
    c.send_line(r#"{"jsonrpc":"2.0","method":"session/prompt","params":{"session_id":"demo","prompt":"Hello"},"id":4}"#);
    let t = c.until_answer(&json!(4));
    assert_eq!(
        t.raw(),
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"agent_message_chunk","text":"Hello"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"turn_complete","outcome":"completed","content":"Hello"}}"#,
        ]
    );
    assert_eq!(
        t.response.raw,
        r#"{"jsonrpc":"2.0","result":{"session_id":"demo","stop_reason":"end_turn","content":"Hello"},"id":4}"#
    );
    c.expect_nothing_before_probe();
}

#[test]
fn the_quick_test_works_verbatim_with_the_cli() {
    let d = home_daemon();
    let home = &d.dir;
    let (code, out, err) = zeroclaw(home.path(), &["status"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&d.pid.to_string()), "{out}");
    let (code, out, err) = zeroclaw(
        home.path(),
        &[
            "rpc",
            "session/new",
            r#"{"agent_alias":"echo","session_id":"demo","chat_mode":"acp"}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(json_lines(&out)[0]["session_id"], "demo");
    let (code, out, err) = zeroclaw(
        home.path(),
        &[
            "rpc",
            "session/prompt",
            r#"{"session_id":"demo","prompt":"Hello"}"#,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        json_lines(&out),
        vec![json!({"session_id": "demo", "stop_reason": "end_turn", "content": "Hello"})]
    );
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"agent_message_chunk","text":"Hello"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"demo","type":"turn_complete","outcome":"completed","content":"Hello"}}"#,
        ]
    );
}

#[test]
fn a_program_that_ignores_sigterm_is_killed_after_the_grace() {
    // `trap '' TERM` is inherited by the sleep: only SIGKILL stops them.
    let (_d, mut c, id, pids) = script_running(
        "trap '' TERM; sleep 60 & echo $$ $! > {pids}; echo ready; wait; echo after",
    );
    let start = Instant::now();
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let all = c.until_all(&[id.clone(), cid]);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(4),
        "SIGKILL only after the grace: {took:?}"
    );
    assert_eq!(
        all[answer_index(&all, &id)].result(),
        &json!({"session_id": "s-1", "stop_reason": "cancelled", "content": "ready\n"})
    );
    all_gone(&pids);
}
