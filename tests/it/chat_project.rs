//! `zeroclaw chat` in a project: durable sessions by default,
//! the current directory (or `--cwd`) as the agent's working directory, the
//! most recent session of that directory continued, `/upload` naming the
//! file for the agent, and another client's turn shown and approved at the
//! prompt. Real daemon, real socket, the chat as a process on pipes.

use crate::common;

use serde_json::{json, Value};

use common::chat::Chat;
use common::start::{start_echo, Env};
use common::TestDir;

/// `zeroclaw chat ARGS…` run from directory `dir`.
fn chat_in(env: &Env, dir: &std::path::Path, args: &[&str]) -> Chat {
    let mut cmd = env.cli();
    cmd.current_dir(dir).arg("chat").args(args);
    Chat::spawn(cmd)
}

/// The `session/list` entry of `sid`.
fn listed(env: &Env, sid: &str) -> Value {
    let mut c = env.client();
    let list = c.ok("session/list", json!({"limit": 100}));
    list["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["session_id"] == sid).cloned())
        .unwrap_or_else(|| panic!("{sid} not listed: {list}"))
}

/// `p` as the chat names it: canonical, and on Windows without the
/// verbatim prefix `canonicalize` gives (`C:\…`, as a person types it and
/// as the current directory reads, not `\\?\C:\…`).
fn canonical(p: &std::path::Path) -> String {
    let c = std::fs::canonicalize(p)
        .expect("canonical path")
        .to_string_lossy()
        .into_owned();
    if cfg!(windows) {
        if let Some(plain) = c.strip_prefix(r"\\?\") {
            return plain.to_owned();
        }
    }
    c
}

#[test]
fn chat_is_durable_and_works_in_the_current_directory() {
    let env = start_echo();
    let project = TestDir::new();
    let here = canonical(project.path());
    let mut c = chat_in(&env, project.path(), &[]);
    let id = c.session_id();
    c.wait_err(&format!("working in {here}\n"));
    c.send("hi");
    c.wait_out("hi\n", 0);
    assert!(c.finish().success(), "{}", c.err());
    let entry = listed(&env, &id);
    assert_eq!(entry["chat_mode"], "acp", "durable by default: {entry}");
    assert_eq!(entry["workspace_dir"], here.as_str(), "{entry}");

    // The same directory continues that session; another starts its own.
    let mut again = chat_in(&env, project.path(), &[]);
    again.wait_err(&format!("session {id} with agent echo (resumed"));
    again.wait_out("you: hi\nagent: hi\n", 0);
    assert!(again.finish().success());
    let elsewhere = TestDir::new();
    let mut other = chat_in(&env, elsewhere.path(), &[]);
    let other_id = other.session_id();
    assert_ne!(other_id, id);
    other.wait_err(&format!("working in {}\n", canonical(elsewhere.path())));
    assert!(other.finish().success());
}

#[test]
fn cwd_chooses_the_directory_and_chat_mode_the_session_kind() {
    let env = start_echo();
    let project = TestDir::new();
    let mut c = chat_in(
        &env,
        &env.config_dir,
        &[
            "--new",
            "--chat-mode",
            "--cwd",
            &project.path().to_string_lossy(),
        ],
    );
    let id = c.session_id();
    c.send("hi");
    c.wait_out("hi\n", 0);
    assert!(c.finish().success(), "{}", c.err());
    let entry = listed(&env, &id);
    assert_eq!(entry["chat_mode"], "chat", "{entry}");
    assert_eq!(
        entry["workspace_dir"],
        canonical(project.path()).as_str(),
        "{entry}"
    );
}

#[test]
fn a_cwd_that_is_not_a_directory_is_a_usage_error() {
    let env = start_echo();
    let missing = env.config_dir.join("no-such-dir");
    let mut c = chat_in(
        &env,
        &env.config_dir,
        &["--new", "--cwd", &missing.to_string_lossy()],
    );
    let status = c.finish();
    assert_eq!(status.code(), Some(2), "{}", c.err());
    assert!(
        c.err().contains(&format!(
            "--cwd {}: not an existing directory",
            missing.display()
        )),
        "{}",
        c.err()
    );
}

#[test]
fn upload_tells_the_next_prompt_the_files_name_and_where_it_came_from() {
    let env = start_echo();
    let project = TestDir::new();
    let file = project.path().join("notes.txt");
    std::fs::write(&file, b"twelve bytes").expect("writing the upload");
    let mut c = chat_in(&env, project.path(), &["--new"]);
    c.session_id();
    c.send("/upload notes.txt");
    let end = c.wait_out("uploaded notes.txt: stored at ", 0);
    let end = c.wait_out("; your next prompt tells the agent\n", end);
    let stored = c.out()["uploaded notes.txt: stored at ".len()..]
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        std::fs::read(&stored).ok().as_deref(),
        Some(&b"twelve bytes"[..]),
        "{stored}"
    );
    // The echo agent answers the prompt it got: the marker is in it.
    c.send("what is in it?");
    let from = canonical(&file);
    c.wait_out(
        &format!("what is in it?\n\n[Document: notes.txt] {stored} (uploaded from {from})\n"),
        end,
    );
    // Only the next prompt carries it.
    let end = c.out().len();
    c.send("and now?");
    c.wait_out("and now?\n", end);
    assert!(c.finish().success());
    assert_eq!(c.out().matches("(uploaded from").count(), 1, "{}", c.out());
}

#[test]
fn a_chat_at_its_prompt_shows_another_clients_turn_and_answers_its_approval() {
    let env = start_echo();
    let mut c = chat_in(&env, &env.config_dir, &["--new"]);
    let id = c.session_id();
    c.wait_err("/help for commands");
    let mut b = env.client();
    b.ok("session/attach", json!({"session_id": id}));
    let prompt = b.send(
        "session/prompt",
        json!({"session_id": id, "prompt": "::approve rm {\"f\":1}"}),
    );
    let end = c.wait_out("[a turn from another client]\n", 0);
    let end = c.wait_out(
        "[approval asked: rm; answer with /approve once|always|reject]\n",
        end,
    );
    c.send("/approve once");
    let end = c.wait_out("answered: allow_once\n", end);
    c.wait_out("[result rm: {\"f\":1}]\n", end);
    b.wait(&prompt).expect("b's turn succeeds");
    let resolved: Vec<Value> = b
        .take_updates()
        .into_iter()
        .filter(|u| u["type"] == "approval_resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0]["decision"], "allow_once");
    // Nothing is waiting any more.
    let end = c.out().len();
    c.send("/approve once");
    c.wait_out("no approval is waiting\n", end);
    assert!(c.finish().success());
}
