//! The config dir (and with it the data dir and the agent workspaces) made
//! read-only while the daemon runs, by a read-only bind mount over it (root
//! ignores permission bits, and a tmpfs holding an open database cannot be
//! remounted read-only). Config commits, uploads and new workspaces fail
//! with `-32603` `storage_read_only`; the daemon stays up and keeps serving
//! what needs no new file; nothing stored earlier changes; and once the dir
//! is writable again everything works without a restart, including the
//! database connections opened while it was read-only.
//!
//! Needs root to mount; skipped with a printed message otherwise.

// Unix only: mounts a tmpfs and a read-only bind mount over it (root).

use crate::common;

use std::time::Duration;

use common::acp::*;
use common::assert::assert_error;
use common::env_ops::*;
use common::tmpfs::{ReadOnly, TmpfsEnv};
use serde_json::{json, Value};

const SIZE: u64 = 64 * 1024 * 1024;

fn config() -> String {
    echo_config("") + "\n[agents.two]\nbackend = \"echo\"\n"
}

fn assert_read_only(e: &Value) {
    assert_error(e, -32603, Some("storage_read_only"));
}

/// Turns on `n` sessions at once, each appending many small checkpoint
/// events, so that the daemon's database pool needs several connections at
/// the same moment. Returns each turn's answer.
fn concurrent_turns(env: &TmpfsEnv, tag: &str, n: usize) -> Vec<Result<Value, Value>> {
    let mut clients: Vec<(Rpc, String, Value)> = (0..n)
        .map(|i| {
            let mut rpc = env.rpc();
            let sid = format!("{tag}{i}");
            rpc.new_session(&sid, "acp");
            (rpc, sid, Value::Null)
        })
        .collect();
    for (rpc, sid, id) in &mut clients {
        *id = rpc.start_prompt(sid, "::chunk 1\n::repeat 40 abcdefgh");
    }
    clients
        .iter_mut()
        .map(|(rpc, sid, id)| rpc.finish_turn(sid, id, Duration::from_secs(30)).answer())
        .collect()
}

#[test]
fn a_read_only_data_dir_fails_cleanly_and_recovers_without_a_restart() {
    let (mut env, mut rpc, before) = ok_or_skip!(start_with_state(&config(), SIZE));
    let cfg = env.config_dir().to_owned();

    env.read_only = match ReadOnly::bind(&cfg) {
        Ok(ro) => Some(ro),
        Err(why) => skip_test!("{why}"),
    };

    assert_config_commit_fails(&mut rpc, "storage_read_only");
    assert_read_only(&upload(&mut rpc, "a1", b"second upload").unwrap_err());
    assert_read_only(&attach(&mut rpc, "a1", b"attached").unwrap_err());
    // A session of an agent whose workspace does not exist yet.
    let e = rpc.new_session_of_fails("two", "t1", "acp");
    assert_read_only(&e);

    // What needs no new file keeps working: new connections, reads, and the
    // database the daemon already holds open.
    let mut other = env.rpc();
    other.ok("status", json!({}));
    let answers = concurrent_turns(&env, "ro", 6);
    for a in &answers {
        if let Err(e) = a {
            assert_read_only(e);
        }
    }
    eprintln!(
        "env_read_only: {} of {} concurrent turns completed while read-only",
        answers.iter().filter(|a| a.is_ok()).count(),
        answers.len()
    );
    assert!(env.d_mut().is_running());
    before.assert_files_unchanged(&env);

    // Writable again: everything works on the same process.
    env.read_only = None;
    let answers = concurrent_turns(&env, "rw", 6);
    for a in answers {
        a.unwrap_or_else(|e| panic!("a turn failed after the dir became writable: {e}"));
    }
    rpc.prompt_ok("a1", "after");
    rpc.prompt_ok("c1", "after chat");
    set_ask_timeout(&mut rpc, 78).unwrap();
    let text = std::fs::read_to_string(env.config_file()).unwrap();
    assert!(text.contains("ask_timeout_secs = 78"), "{text}");
    upload(&mut rpc, "a1", b"second upload").unwrap();
    attach(&mut rpc, "a1", b"attached").unwrap();
    rpc.new_session_of("two", "t1", "acp");
    rpc.prompt_ok("t1", "fresh");
    assert_eq!(env.d().pid, before.pid);
}
