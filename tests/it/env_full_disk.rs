//! The config dir (and with it the data dir and the agent workspaces) on a
//! full file system: a 2 MiB tmpfs that the test fills. Turns, config
//! commits, uploads and session creation fail with `-32603`
//! `storage_full`; the daemon stays up; what was stored before is intact,
//! byte for byte and row for row, with no temporary left behind; a turn that
//! ran out of space midway keeps exactly what the client was sent; and once
//! space is freed everything works again without a restart.
//!
//! Needs root to mount the tmpfs; skipped with a printed message otherwise.

// Unix only: mounts a 2 MiB tmpfs (root), and stops the daemon with SIGTERM.

use crate::common;

use std::path::Path;

use common::acp::*;
use common::assert::assert_error;
use common::env_ops::*;
use common::tmpfs::{Filler, Tmpfs};
use common::{DaemonBuilder, TestDir};
use serde_json::{json, Value};

const SIZE: u64 = 2 * 1024 * 1024;

/// A reply far larger than the space left in phase B (400 KB).
const BIG_REPLY: &str = "::repeat 40000 0123456789";

fn assert_full(e: &Value) {
    assert_error(e, -32603, Some("storage_full"));
}

#[test]
fn a_full_file_system_fails_cleanly_and_recovers_without_a_restart() {
    // State stored while there is room.
    let (mut env, mut rpc, before) = ok_or_skip!(start_with_state(&echo_config(""), SIZE));
    let cfg = env.config_dir().to_owned();
    let db_before = dump_all(&env.db());
    let a1_before = rpc.messages("a1");
    let c1_before = rpc.messages("c1");

    // Phase A: not a byte free.
    let filler = Filler::fill(&cfg);

    let t = rpc.prompt("a1", "no room");
    assert_full(t.error());
    assert!(
        t.updates().is_empty(),
        "a turn whose begin failed sent updates: {:?}",
        t.updates()
    );

    let t = rpc.prompt("c1", "no room in chat");
    assert_full(t.error());
    assert_eq!(t.turn_complete()["outcome"], "failed");

    assert_config_commit_fails(&mut rpc, "storage_full");

    assert_full(&upload(&mut rpc, "a1", &[7u8; 64 * 1024]).unwrap_err());
    assert_full(&attach(&mut rpc, "a1", &[9u8; 32 * 1024]).unwrap_err());
    let e = rpc.new_session_fails("a2", "acp");
    assert_full(&e);

    // Up, and nothing stored earlier changed; no temporary file survived.
    assert!(env.d_mut().is_running());
    rpc.ok("status", json!({}));
    before.assert_files_unchanged(&env);
    assert_eq!(dump_all(&env.db()), db_before);
    assert_eq!(rpc.messages("a1"), a1_before);
    assert_eq!(rpc.messages("c1"), c1_before);

    // Phase B: room for the begin, not for the reply. The turn stops at the
    // first append that does not fit; what the client saw is what was kept.
    filler.leave_free(64 * 1024);
    let t = rpc.prompt("a1", BIG_REPLY);
    assert_full(t.error());
    assert_eq!(t.turn_complete()["outcome"], "failed");
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
    assert_eq!(rpc.context("c1"), echo_ctx(&["hi chat", "after chat"]));

    set_ask_timeout(&mut rpc, 78).unwrap();
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
    assert_eq!(env.d().pid, before.pid);
}

#[test]
fn starting_on_a_full_file_system_exits_1_says_why_and_changes_nothing() {
    let dir = TestDir::new();
    let fs = ok_or_skip!(Tmpfs::mount(&dir.config_dir(), SIZE));
    let cfg = fs.path();
    let refused = |what: &str| {
        let f = match DaemonBuilder::new().config_dir(cfg).try_spawn() {
            Ok(_) => panic!("the daemon started on a full file system ({what})"),
            Err(f) => f,
        };
        assert_eq!(f.status.code(), Some(1), "{}", f.log.text());
        let text = f.log.text();
        assert!(text.contains("free space on its file system"), "{text}");
        text
    };

    // A first start: not even config.toml can be created; nothing is left.
    let filler = Filler::fill(cfg);
    let text = refused("first start");
    assert!(text.contains("config.toml: cannot create: "), "{text}");
    assert!(!cfg.join("config.toml").exists());
    assert!(!cfg.join(".config.toml.new").exists());
    drop(filler);

    // A restart with state, once the disk is full again: SQLite cannot
    // create its shared-memory file. The database is left as it was.
    let mut d = DaemonBuilder::new().config_dir(cfg).spawn();
    let mut rpc = d.session_client("a1", "acp");
    rpc.prompt_ok("a1", "hello");
    drop(rpc);
    d.wait_for_handler(libc::SIGTERM);
    d.signal(libc::SIGTERM);
    assert!(d
        .wait_exit(common::EXIT_TIMEOUT)
        .is_some_and(|s| s.success()));
    let db = cfg.join("data/sessions/sessions.db");
    fold_wal(&db);
    let db_bytes = std::fs::read(&db).unwrap();
    let filler = Filler::fill(cfg);
    let text = refused("restart");
    assert!(text.contains(&db.display().to_string()), "{text}");
    assert_eq!(std::fs::read(&db).unwrap(), db_bytes);
    for suffix in ["-wal", "-shm"] {
        let p = format!("{}{suffix}", db.display());
        assert!(!Path::new(&p).exists(), "{p} was left behind");
    }

    // Space again: the same state serves.
    drop(filler);
    let d = DaemonBuilder::new().config_dir(cfg).spawn();
    let mut rpc = d.client();
    assert_eq!(shape(&rpc.messages("a1")).len(), 2);
}
