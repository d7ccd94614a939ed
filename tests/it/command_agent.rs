//! The `command` agent (§10.4) on every platform: the same tests run over a
//! Unix socket with `sh -c` and over a named pipe with `cmd.exe /C`
//! (Windows, under Wine in CI). The Unix-only depth (process groups and
//! signals, `/proc`) is tests/it/sessions_command.rs.
//!
//! "Every process dies with its owner" is shown with a real grandchild the
//! agent's shell starts: a second `zeroclaw daemon` on a config dir of its
//! own. Its ready line on the agent's stdout says it runs; its endpoint
//! accepting no more connections says it is gone.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::errors::agent_failed;
use common::sessions::*;
use common::start::{config_with, start, Env};
use common::wait::eventually;
use common::{Client, TestDir, BIN};
use serde_json::{json, Value};

/// The shell of the platform and its "run this line" arguments.
#[cfg(unix)]
const SHELL: [&str; 2] = ["sh", "-c"];
#[cfg(windows)]
const SHELL: [&str; 3] = ["cmd.exe", "/D", "/C"];

/// The line end the platform's `echo` writes.
const NL: &str = if cfg!(windows) { "\r\n" } else { "\n" };

/// A daemon whose command agent `cmd` runs `line` in the platform's shell.
fn with_line(line: &str, extra: &str) -> Env {
    let mut argv: Vec<Value> = SHELL.iter().map(|a| json!(a)).collect();
    argv.push(json!(line));
    start(&config_with(&format!(
        "[agents.cmd]\nbackend = \"command\"\ncommand = {}\n{extra}",
        Value::Array(argv)
    )))
}

fn cmd_client(d: &Env, sid: &str) -> (Client, Value) {
    let mut c = d.client();
    let r = c.new_session_of("cmd", sid, "chat");
    (c, r)
}

/// A shell line that starts `zeroclaw daemon` on `config_dir` in the
/// foreground (its ready line is the agent's output).
fn grandchild_daemon(config_dir: &Path) -> String {
    format!("{BIN} daemon --config-dir {}", config_dir.display())
}

/// The endpoint a ready line names.
fn endpoint_of(ready: &str) -> std::path::PathBuf {
    let v: Value = serde_json::from_str(ready.trim_end())
        .unwrap_or_else(|e| panic!("not a ready line ({e}): {ready:?}"));
    v["endpoint"].as_str().expect("endpoint").into()
}

/// Waits for the grandchild daemon's ready line in the turn's stream and
/// checks it serves; its endpoint.
fn grandchild_serving(c: &mut Client) -> std::path::PathBuf {
    let frames = c.until_update(|u| u["text"].as_str().is_some_and(|t| t.contains("\"ready\"")));
    let ready = update_params(&frames)
        .iter()
        .find_map(|u| u["text"].as_str().map(str::to_owned))
        .expect("the grandchild's ready line");
    let endpoint = endpoint_of(&ready);
    assert!(
        Client::try_connect(&endpoint).is_ok(),
        "the grandchild serves"
    );
    endpoint
}

/// Waits (bounded) until nobody accepts connections at `endpoint`.
fn endpoint_gone(endpoint: &Path) {
    eventually(
        &format!("{} to stop accepting", endpoint.display()),
        Duration::from_secs(10),
        || Client::try_connect(endpoint).is_err().then_some(()),
    );
}

#[test]
fn stdout_lines_are_chunks_and_the_content_is_stdout() {
    let d = with_line("echo line1&& echo line2", "");
    // `&&` runs the second after the first in both shells.
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "ignored");
    t.check("s-1");
    let content = format!("line1{NL}line2{NL}");
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", &format!("line1{NL}")),
            msg("s-1", &format!("line2{NL}")),
            complete("s-1", "completed", &content, None),
        ]
    );
    assert_eq!(
        t.result(),
        &json!({"session_id": "s-1", "stop_reason": "end_turn", "content": content})
    );
}

#[test]
fn the_prompt_is_stdin_and_the_environment_names_the_turn() {
    // `cat` and `more` both copy stdin to stdout as is.
    let copy = if cfg!(windows) { "more" } else { "cat" };
    let vars = if cfg!(windows) {
        "echo %ZEROCLAW_SESSION_ID%-%ZEROCLAW_AGENT_ALIAS%-%FOO%"
    } else {
        "echo $ZEROCLAW_SESSION_ID-$ZEROCLAW_AGENT_ALIAS-$FOO"
    };
    let d = with_line(&format!("{copy}&& {vars}"), "env = { FOO = \"bar baz\" }\n");
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "a\nb\n");
    t.check("s-1");
    assert_eq!(
        t.result()["content"],
        format!("a\nb\ns-1-cmd-bar baz{NL}"),
        "{:?}",
        t.chunks()
    );
}

#[test]
fn a_non_zero_exit_fails_the_turn_with_the_last_stderr_line() {
    let d = with_line(
        "echo out&& echo first 1>&2&& echo last err 1>&2&& exit 3",
        "",
    );
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    t.check("s-1");
    // The line's trailing blanks (cmd.exe keeps the one before `1>&2`) are cut.
    let message = "agent command exited with status 3: last err";
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", &format!("out{NL}")),
            complete("s-1", "failed", &format!("out{NL}"), Some(message)),
        ]
    );
    agent_failed(t.error(), message);
}

#[test]
fn a_program_that_cannot_start_fails_the_turn_naming_it() {
    let d = start(&config_with(
        "[agents.cmd]\nbackend = \"command\"\ncommand = [\"zeroclaw-no-such-agent\"]\n",
    ));
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    t.check("s-1");
    let e = t.error();
    assert_eq!(e["code"], -32603);
    assert_eq!(e["data"], json!({"reason": "agent_failed"}));
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("zeroclaw-no-such-agent"),
        "names the program: {m}"
    );
    assert_eq!(t.turn_complete()["reason"], m);
}

#[test]
fn cancel_ends_the_program_and_what_it_started() {
    let inner = TestDir::new();
    let d = with_line(&grandchild_daemon(&inner.config_dir()), "");
    let (mut c, _) = cmd_client(&d, "s-1");
    let id = c.start_prompt("s-1", "x");
    let endpoint = grandchild_serving(&mut c);
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let all = c.until_all(&[id.clone(), cid]);
    assert_eq!(
        all[answer_index(&all, &id)].result()["stop_reason"],
        "cancelled"
    );
    // The shell and the daemon it started are gone (the process group on
    // Unix, the Job Object on Windows).
    endpoint_gone(&endpoint);
}

#[test]
fn a_turn_over_its_timeout_ends_the_program_and_what_it_started() {
    let inner = TestDir::new();
    let d = with_line(
        &grandchild_daemon(&inner.config_dir()),
        "timeout_secs = 6\n",
    );
    let (mut c, _) = cmd_client(&d, "s-1");
    let t = c.prompt("s-1", "x");
    t.check("s-1");
    agent_failed(t.error(), "agent command timed out after 6 s");
    let ready = t.chunks().into_iter().next().expect("the ready line");
    endpoint_gone(&endpoint_of(&ready));
}

/// Windows: killing the daemon (`TerminateProcess`, no cleanup of ours
/// runs) closes its handle of the agent's Job Object, and the system kills
/// every process in it. (On Unix the agent gets `PR_SET_PDEATHSIG`; its own
/// children are not covered, see docs/operations.md.)
#[cfg(windows)]
#[test]
fn killing_the_daemon_ends_the_agents_job() {
    let inner = TestDir::new();
    let mut d = with_line(&grandchild_daemon(&inner.config_dir()), "");
    let (mut c, _) = cmd_client(&d, "s-1");
    c.start_prompt("s-1", "x");
    let endpoint = grandchild_serving(&mut c);
    d.daemon.kill9();
    endpoint_gone(&endpoint);
}
