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

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::acp::*;
use common::files::{b64, sha256_hex, tree, Node};
use common::tmpfs::{ReadOnly, TmpfsEnv};
use serde_json::{json, Value};

const SIZE: u64 = 64 * 1024 * 1024;

fn config() -> String {
    echo_config("") + "\n[agents.two]\nbackend = \"echo\"\n"
}

fn assert_read_only(e: &Value) {
    assert_error(e, -32603, Some("storage_read_only"));
}

/// Every file below the config dir except the session database.
fn files(cfg: &Path) -> BTreeMap<PathBuf, Node> {
    let mut t = tree(cfg);
    t.retain(|p, _| !p.starts_with("data/sessions"));
    t
}

fn upload(rpc: &mut Rpc, sid: &str, bytes: &[u8]) -> Result<Value, Value> {
    let up = rpc.ok(
        "file/upload/begin",
        json!({"session_id": sid, "size_bytes": bytes.len(), "sha256": sha256_hex(bytes)}),
    );
    let id = up["upload_id"].as_str().unwrap().to_owned();
    rpc.ok(
        "file/upload/chunk",
        json!({"upload_id": id, "offset": 0, "data_b64": b64(bytes)}),
    );
    rpc.call("file/upload/commit", json!({ "upload_id": id }))
}

fn set_timeout(rpc: &mut Rpc, secs: u32) -> Result<Value, Value> {
    rpc.call(
        "config/set",
        json!({"prop": "daemon.ask_timeout_secs", "value": secs}),
    )
}

/// Turns on `n` sessions at once, each appending many small checkpoint
/// events, so that the daemon's database pool needs several connections at
/// the same moment. Returns each turn's answer.
fn concurrent_turns(env: &TmpfsEnv, tag: &str, n: usize) -> Vec<Result<Value, Value>> {
    let mut clients: Vec<(Rpc, String, u64)> = (0..n)
        .map(|i| {
            let mut rpc = env.rpc();
            let sid = format!("{tag}{i}");
            rpc.new_session(&sid, "acp");
            (rpc, sid, 0)
        })
        .collect();
    for (rpc, sid, id) in &mut clients {
        *id = rpc.send_prompt(sid, "::chunk 1\n::repeat 40 abcdefgh");
    }
    clients
        .iter_mut()
        .map(|(rpc, sid, id)| rpc.finish_turn(sid, *id, Duration::from_secs(30)).answer)
        .collect()
}

#[test]
fn a_read_only_data_dir_fails_cleanly_and_recovers_without_a_restart() {
    let mut env = match TmpfsEnv::start(&config(), SIZE) {
        Ok(env) => env,
        Err(why) => skip_test!("{why}"),
    };
    let cfg = env.config_dir().to_owned();
    let pid = env.d().pid;
    let mut rpc = env.rpc();
    rpc.new_session("a1", "acp");
    rpc.prompt_ok("a1", "hello");
    rpc.new_session("c1", "chat");
    rpc.prompt_ok("c1", "hi chat");
    set_timeout(&mut rpc, 77).unwrap();
    upload(&mut rpc, "a1", b"first upload").unwrap();
    let config_bytes = std::fs::read(env.config_file()).unwrap();
    let files_before = files(&cfg);

    env.read_only = match ReadOnly::bind(&cfg) {
        Ok(ro) => Some(ro),
        Err(why) => skip_test!("{why}"),
    };

    let e = set_timeout(&mut rpc, 78).unwrap_err();
    assert_read_only(&e);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Config save failed: "),
        "{e}"
    );
    let got = rpc.ok("config/get", json!({"prop": "daemon.ask_timeout_secs"}));
    assert_eq!(got["value"], 77);
    assert_read_only(&upload(&mut rpc, "a1", b"second upload").unwrap_err());
    let e = rpc.err(
        "file/attach",
        json!({"session_id": "a1", "files": [{"data_b64": b64(b"attached"), "filename": "x.txt"}]}),
    );
    assert_read_only(&e);
    // A session of an agent whose workspace does not exist yet.
    let e = rpc.err(
        "session/new",
        json!({"agent_alias": "two", "session_id": "t1", "chat_mode": "acp"}),
    );
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
    assert_eq!(std::fs::read(env.config_file()).unwrap(), config_bytes);
    assert_eq!(files(&cfg), files_before);

    // Writable again: everything works on the same process.
    env.read_only = None;
    let answers = concurrent_turns(&env, "rw", 6);
    for a in answers {
        a.unwrap_or_else(|e| panic!("a turn failed after the dir became writable: {e}"));
    }
    rpc.prompt_ok("a1", "after");
    rpc.prompt_ok("c1", "after chat");
    set_timeout(&mut rpc, 78).unwrap();
    let text = std::fs::read_to_string(env.config_file()).unwrap();
    assert!(text.contains("ask_timeout_secs = 78"), "{text}");
    upload(&mut rpc, "a1", b"second upload").unwrap();
    rpc.ok(
        "file/attach",
        json!({"session_id": "a1", "files": [{"data_b64": b64(b"attached"), "filename": "x.txt"}]}),
    );
    rpc.ok(
        "session/new",
        json!({"agent_alias": "two", "session_id": "t1", "chat_mode": "acp"}),
    );
    rpc.prompt_ok("t1", "fresh");
    assert_eq!(env.d().pid, pid);
}
