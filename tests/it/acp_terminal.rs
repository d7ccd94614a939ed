//! ACP `terminal/*` (`[agents.<a>] terminal = true`): the daemon
//! running the test agent's commands (examples/acp_test_agent/terminal.rs)
//! over the real socket: exact output and exit status, truncation from the
//! beginning, the working-directory confinement, the limit of terminals per
//! turn, cancel during `terminal/wait_for_exit`, terminals left at turn end,
//! and `terminal = false` answering method-not-found as before.

// Unix only: the test agent's terminal commands are POSIX sh (`sh -c`), and one test plants a symlink.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::acp_agent::{open_acp as open, wait_update};
use common::sessions::process_gone;
use serde_json::json;

/// `term` with `sh -c SCRIPT` and the extra `terminal/create` params.
fn term(word: &str, script: &str, extra: serde_json::Value) -> String {
    let mut p = json!({"command": "sh", "args": ["-c", script]});
    if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
        p.extend(extra.clone());
    }
    format!("{word} {p}")
}

/// The pid the command wrote to `<ws>/<name>`, once it has.
fn pid_in(ws: &str, name: &str) -> i32 {
    let file = Path::new(ws).join(name);
    common::wait::eventually("the command's pid file", Duration::from_secs(15), || {
        std::fs::read_to_string(&file).ok()?.trim().parse().ok()
    })
}

#[test]
fn a_command_runs_with_its_exact_output_and_exit_status() {
    let (_e, mut rpc, ws) = open("terminal = true");
    assert_eq!(rpc.prompt_ok("s-1", "caps").text(), "terminal: true");
    let t = rpc.prompt_ok(
        "s-1",
        &term("term", "echo out; echo err >&2; exit 3", json!({})),
    );
    assert_eq!(
        t.text(),
        r#"exit {"exitCode":3,"signal":null} output "out\nerr\n" truncated false"#
    );
    // The default working directory is the session's; `env` is added.
    let real = PathBuf::from(&ws).canonicalize().unwrap();
    let env = json!({"env": [{"name": "ZC_T", "value": "v 1"}]});
    let t = rpc.prompt_ok("s-1", &term("term", "pwd -P; echo \"$ZC_T\"", env));
    let out = json!(format!("{}\nv 1\n", real.display()));
    assert_eq!(
        t.text(),
        format!(r#"exit {{"exitCode":0,"signal":null}} output {out} truncated false"#)
    );
}

#[test]
fn output_beyond_the_limit_is_dropped_from_its_beginning_at_a_char_boundary() {
    let (_e, mut rpc, _ws) = open("terminal = true");
    let limit = |n: u64| json!({"outputByteLimit": n});
    let t = rpc.prompt_ok("s-1", &term("term", "printf 0123456789", limit(4)));
    assert_eq!(
        t.text(),
        r#"exit {"exitCode":0,"signal":null} output "6789" truncated true"#
    );
    // `a` `é` (2 bytes) `€` (3 bytes): the last 4 bytes start inside `é`.
    let t = rpc.prompt_ok(
        "s-1",
        &term("term", "printf 'a\\303\\251\\342\\202\\254'", limit(4)),
    );
    assert_eq!(
        t.text(),
        r#"exit {"exitCode":0,"signal":null} output "€" truncated true"#
    );
}

#[test]
fn a_working_directory_outside_the_workspace_is_refused() {
    let (e, mut rpc, ws) = open("terminal = true");
    std::fs::create_dir_all(format!("{ws}/sub")).unwrap();
    let outside = e.config_dir();
    std::os::unix::fs::symlink(&outside, format!("{ws}/out")).unwrap();
    let t = rpc.prompt_ok(
        "s-1",
        &term("term", "pwd -P", json!({"cwd": format!("{ws}/sub")})),
    );
    let sub = PathBuf::from(&ws).join("sub").canonicalize().unwrap();
    let out = json!(format!("{}\n", sub.display()));
    assert_eq!(
        t.text(),
        format!(r#"exit {{"exitCode":0,"signal":null}} output {out} truncated false"#)
    );
    for (cwd, why) in [
        (
            outside.display().to_string(),
            "outside the session's working directory",
        ),
        (format!("{ws}/../"), "the path must not contain `..`"),
        (
            format!("{ws}/out"),
            "a symlink leads outside the session's working directory",
        ),
        ("sub".to_owned(), "the path must be absolute"),
    ] {
        let t = rpc.prompt_ok("s-1", &term("term", "echo no > ran", json!({"cwd": cwd})));
        assert_eq!(t.text(), format!("terminal error -32602 {cwd}: {why}"));
    }
    assert!(!outside.join("ran").exists() && !Path::new(&ws).join("ran").exists());
}

#[test]
fn with_terminal_false_the_agent_gets_method_not_found_as_before() {
    let (_e, mut rpc, _ws) = open("");
    assert_eq!(rpc.prompt_ok("s-1", "caps").text(), "terminal: false");
    let t = rpc.prompt_ok("s-1", &term("term", "echo hi", json!({})));
    assert_eq!(
        t.text(),
        "terminal error -32601 terminal/create is not served by this client"
    );
}

#[test]
fn an_unknown_terminal_is_invalid_params() {
    // Terminals live for one turn: the next turn's `terminal/output` of an
    // earlier id is refused as unknown.
    let (_e, mut rpc, _ws) = open("terminal = true");
    let t = rpc.prompt_ok("s-1", "termleave {\"command\":\"true\"}");
    assert_eq!(t.text(), "created term-1");
    let t = rpc.prompt_ok("s-1", "termout term-1");
    assert_eq!(
        t.text(),
        "terminal error -32602 unknown terminal \"term-1\""
    );
}

#[test]
fn cancel_during_wait_for_exit_kills_the_command_and_the_turn_ends_cancelled() {
    let (_e, mut rpc, ws) = open("terminal = true");
    let script = "echo $$ > term.pid; exec sleep 1000";
    let id = rpc.start_prompt(
        "s-1",
        &format!("say waiting\n{}", term("term", script, json!({}))),
    );
    wait_update(&mut rpc, |u| u["text"] == "waiting");
    let pid = pid_in(&ws, "term.pid");
    assert!(!process_gone(pid));
    rpc.ok("session/cancel", json!({"session_id": "s-1"}));
    let t = rpc.finish_turn("s-1", &id, Duration::from_secs(15));
    assert_eq!(t.turn_complete()["outcome"], "cancelled");
    assert_eq!(t.result()["stop_reason"], "cancelled");
    assert!(process_gone(pid), "the command {pid} still runs");
    // The agent was answered: it saw the kill as the exit status.
    assert!(
        t.text()
            .starts_with(r#"waitingexit {"exitCode":null,"signal":"SIGKILL"}"#),
        "{}",
        t.text()
    );
}

#[test]
fn terminals_left_at_turn_end_are_killed_and_at_most_16_are_held() {
    let (_e, mut rpc, ws) = open("terminal = true");
    let script = "echo $$ > left.pid; exec sleep 1000";
    // The second command waits for the first to have written its pid.
    let wait = "while [ ! -s left.pid ]; do sleep 0.05; done";
    let prompt = format!(
        "{}\n{}",
        term("termleave", script, json!({})),
        term("term", wait, json!({}))
    );
    let t = rpc.prompt_ok("s-1", &prompt);
    assert_eq!(
        t.text(),
        r#"created term-1exit {"exitCode":0,"signal":null} output "" truncated false"#
    );
    let pid = pid_in(&ws, "left.pid");
    assert!(process_gone(pid), "the command {pid} outlived its turn");
    let mut prompt = vec!["termleave {\"command\":\"sleep\",\"args\":[\"1000\"]}"; 17].join("\n");
    prompt.push_str("\nsay .");
    let t = rpc.prompt_ok("s-1", &prompt);
    let created: String = (1..=16).map(|i| format!("created term-{i}")).collect();
    assert_eq!(
        t.text(),
        format!("{created}terminal error -32602 at most 16 terminals are held at once in a turn; release one first.")
    );
}
