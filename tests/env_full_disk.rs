//! The config dir (and with it the data dir and the agent workspaces) on a
//! full file system: a 2 MiB tmpfs that the test fills. Turns, config
//! commits, uploads and session creation fail with `-32603`
//! `storage_full`; the daemon stays up; what was stored before is intact,
//! byte for byte and row for row, with no temporary left behind; a turn that
//! ran out of space midway keeps exactly what the client was sent; and once
//! space is freed everything works again without a restart.
//!
//! Needs root to mount the tmpfs; skipped with a printed message otherwise.

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::acp::*;
use common::files::{b64, sha256_hex, tree, Node};
use common::tmpfs::{Filler, TmpfsEnv};
use serde_json::{json, Value};

const SIZE: u64 = 2 * 1024 * 1024;

/// A reply far larger than the space left in phase B (400 KB).
const BIG_REPLY: &str = "::repeat 40000 0123456789";

fn assert_full(e: &Value) {
    assert_error(e, -32603, Some("storage_full"));
}

/// Every file below the config dir except the session database (whose WAL
/// may hold uncommitted frames of a failed write) and the filler.
fn files(cfg: &Path) -> BTreeMap<PathBuf, Node> {
    let mut t = tree(cfg);
    t.retain(|p, _| !p.starts_with("data/sessions") && p != Path::new("filler"));
    t
}

fn upload(rpc: &mut Rpc, sid: &str, bytes: &[u8]) -> Result<Value, Value> {
    let up = rpc.ok(
        "file/upload/begin",
        json!({"session_id": sid, "size_bytes": bytes.len(), "sha256": sha256_hex(bytes),
               "filename": "notes.txt"}),
    );
    let id = up["upload_id"].as_str().unwrap().to_owned();
    rpc.ok(
        "file/upload/chunk",
        json!({"upload_id": id, "offset": 0, "data_b64": b64(bytes)}),
    );
    rpc.call("file/upload/commit", json!({ "upload_id": id }))
}

fn attach(rpc: &mut Rpc, sid: &str, bytes: &[u8]) -> Result<Value, Value> {
    rpc.call(
        "file/attach",
        json!({"session_id": sid, "files": [{"data_b64": b64(bytes), "filename": "a.bin"}]}),
    )
}

fn set_timeout(rpc: &mut Rpc, secs: u32) -> Result<Value, Value> {
    rpc.call(
        "config/set",
        json!({"prop": "daemon.ask_timeout_secs", "value": secs}),
    )
}

fn ask_timeout(rpc: &mut Rpc) -> Value {
    rpc.ok("config/get", json!({"prop": "daemon.ask_timeout_secs"}))["value"].clone()
}

#[test]
fn a_full_file_system_fails_cleanly_and_recovers_without_a_restart() {
    let mut env = match TmpfsEnv::start(&echo_config(""), SIZE) {
        Ok(env) => env,
        Err(why) => skip_test!("{why}"),
    };
    let cfg = env.config_dir().to_owned();
    let pid = env.d().pid;
    let mut rpc = env.rpc();

    // State stored while there is room.
    rpc.new_session("a1", "acp");
    rpc.prompt_ok("a1", "hello");
    rpc.new_session("c1", "chat");
    rpc.prompt_ok("c1", "hi chat");
    set_timeout(&mut rpc, 77).unwrap();
    upload(&mut rpc, "a1", b"first upload").unwrap();
    let config_bytes = std::fs::read(env.config_file()).unwrap();
    let files_before = files(&cfg);
    let db_before = dump_all(&env.db());
    let a1_before = rpc.messages("a1");
    let c1_before = rpc.messages("c1");

    // Phase A: not a byte free.
    let filler = Filler::fill(&cfg);

    let t = rpc.prompt("a1", "no room");
    assert_full(t.err());
    assert!(
        t.updates.is_empty(),
        "a turn whose begin failed sent updates: {:?}",
        t.updates
    );

    let t = rpc.prompt("c1", "no room in chat");
    assert_full(t.err());
    assert_eq!(t.complete()["outcome"], "failed");

    let e = set_timeout(&mut rpc, 78).unwrap_err();
    assert_full(&e);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Config save failed: "),
        "{e}"
    );
    assert_eq!(ask_timeout(&mut rpc), 77, "the running config changed");

    assert_full(&upload(&mut rpc, "a1", &[7u8; 64 * 1024]).unwrap_err());
    assert_full(&attach(&mut rpc, "a1", &[9u8; 32 * 1024]).unwrap_err());
    let e = rpc.err(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "a2", "chat_mode": "acp"}),
    );
    assert_full(&e);

    // Up, and nothing stored earlier changed; no temporary file survived.
    assert!(env.d_mut().is_running());
    rpc.ok("status", json!({}));
    assert_eq!(std::fs::read(env.config_file()).unwrap(), config_bytes);
    assert_eq!(files(&cfg), files_before);
    assert_eq!(dump_all(&env.db()), db_before);
    assert_eq!(rpc.messages("a1"), a1_before);
    assert_eq!(rpc.messages("c1"), c1_before);

    // Phase B: room for the begin, not for the reply. The turn stops at the
    // first append that does not fit; what the client saw is what was kept.
    filler.leave_free(64 * 1024);
    let t = rpc.prompt("a1", BIG_REPLY);
    assert_full(t.err());
    assert_eq!(t.complete()["outcome"], "failed");
    let sent = t.text();
    assert!(
        !sent.is_empty() && sent.len() < 400_000,
        "{} bytes sent",
        sent.len()
    );
    assert!("0123456789".repeat(40_000).starts_with(&sent));
    eprintln!(
        "env_full_disk: 64 KiB free: {} of 400000 reply bytes streamed and kept before storage_full",
        sent.len()
    );

    // Phase C: space again. Everything works on the same process.
    filler.remove();
    rpc.prompt_ok("a1", "after");
    let rows = rpc.messages("a1");
    assert_contiguous(&rows);
    let mut want = shape(&a1_before);
    want.extend([
        row("user", "message", BIG_REPLY),
        row("assistant", "message", &sent),
        row("system", "interruption_marker", INTERRUPTED),
        row("user", "message", "after"),
        row("assistant", "message", "after"),
    ]);
    assert_eq!(shape(&rows), want);
    // The retained context the next turn sees is what a rebuild from disk gives.
    assert_eq!(
        rpc.context("a1"),
        vec![
            ctx("user", "hello"),
            ctx("assistant", "hello"),
            ctx("user", BIG_REPLY),
            ctx("assistant", &sent),
            ctx("user", "after"),
            ctx("assistant", "after"),
        ]
    );

    rpc.prompt_ok("c1", "after chat");
    let mut want = shape(&c1_before);
    want.extend([
        row("user", "message", "after chat"),
        row("assistant", "message", "after chat"),
    ]);
    assert_eq!(shape(&rpc.messages("c1")), want);
    // The failed chat turn is in neither the history nor the live context.
    assert_eq!(
        rpc.context("c1"),
        vec![
            ctx("user", "hi chat"),
            ctx("assistant", "hi chat"),
            ctx("user", "after chat"),
            ctx("assistant", "after chat"),
        ]
    );

    set_timeout(&mut rpc, 78).unwrap();
    assert_eq!(ask_timeout(&mut rpc), 78);
    let text = std::fs::read_to_string(env.config_file()).unwrap();
    assert!(text.contains("ask_timeout_secs = 78"), "{text}");
    let stored = upload(&mut rpc, "a1", &[7u8; 64 * 1024]).unwrap();
    assert_eq!(
        std::fs::read(stored["workspace_path"].as_str().unwrap()).unwrap(),
        vec![7u8; 64 * 1024]
    );
    attach(&mut rpc, "a1", &[9u8; 32 * 1024]).unwrap();
    rpc.new_session("a2", "acp");
    rpc.prompt_ok("a2", "fresh");
    assert!(env.d_mut().is_running());
    assert_eq!(env.d().pid, pid);
}
