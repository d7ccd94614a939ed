//! `interaction_surface` (§9.7, §8.3 step 3, §8.4 step 1, §8.11):
//! an ACP row written by another surface (`acp_stdio`), with finished
//! transcript rows, a snapshot and an unfinished checkpoint, is inserted
//! into the database while the daemon is stopped. The daemon must refuse to
//! prompt or resume it, read it without recovery, and leave every one of its
//! rows byte-identical; kill sets only the tombstone, delete deletes.

// Unix only: stops the daemon gracefully with SIGTERM (AcpEnv::stop).

use crate::common;

use common::values::items;
use std::collections::BTreeMap;

use common::acp::*;
use common::assert::assert_error;
use serde_json::json;

const SURFACE: &str = "acp_stdio";

/// Inserts a foreign-surface row `sid` with two finished rows, a snapshot,
/// and a checkpoint of two events (daemon stopped).
fn insert_foreign(env: &AcpEnv, sid: &str, owner: &str) {
    let ws = env.config_dir().display().to_string();
    let row = format!("(SELECT id FROM acp_sessions WHERE session_id = '{sid}')");
    db_exec(
        &env.db(),
        &[
            &format!(
                "INSERT INTO acp_sessions (session_id, agent_alias, owner_principal_id, workspace_dir, \
                 interaction_surface, created_at, last_activity) VALUES ('{sid}', 'echo', '{owner}', '{ws}', \
                 '{SURFACE}', '2026-01-02T03:04:05Z', '2026-01-02T03:05:00Z')"
            ),
            &format!(
                "INSERT INTO acp_transcript (session_row, seq, turn_id, role, kind, content, created_at) VALUES \
                 ({row}, 1, 'turn-1', 'user', 'message', 'hello', '2026-01-02T03:04:06Z'), \
                 ({row}, 2, 'turn-1', 'assistant', 'message', 'hi there', '2026-01-02T03:04:07Z')"
            ),
            &format!(
                "INSERT INTO acp_context_snapshots (session_row, boundary_seq, messages_json, created_at) \
                 VALUES ({row}, 2, '[]', '2026-01-02T03:04:08Z')"
            ),
            &format!(
                "INSERT INTO acp_turn_checkpoints (session_row, turn_id, started_at) \
                 VALUES ({row}, 'turn-2', '2026-01-02T03:04:09Z')"
            ),
            &format!(
                "INSERT INTO acp_checkpoint_events (session_row, payload) VALUES \
                 ({row}, '{{\"kind\":\"user\",\"text\":\"unfinished\"}}'), \
                 ({row}, '{{\"kind\":\"text\",\"text\":\"partial reply\"}}')"
            ),
        ],
    );
}

/// The ACP tables only (a same-id Chat session may be created meanwhile).
fn acp_dump(env: &AcpEnv) -> BTreeMap<&'static str, Vec<String>> {
    let mut d = dump_all(&env.db());
    d.retain(|t, _| t.starts_with("acp_"));
    d
}

/// Every way to touch `sid` that must be refused or read-only.
fn attempts(env: &AcpEnv, sid: &str) {
    let mut rpc = env.rpc();
    let want = json!({"reason": "unsupported_interaction_surface", "interaction_surface": SURFACE});
    let t = rpc.prompt(sid, "resume me");
    assert_error(t.error(), -32000, Some("unsupported_interaction_surface"));
    assert_eq!(t.error()["data"], want, "{}", t.error());
    assert!(t.updates().is_empty(), "{:?}", t.updates());
    for _ in 0..2 {
        let e = rpc.new_session_fails(sid, "acp");
        assert_error(&e, -32000, Some("unsupported_interaction_surface"));
        assert_eq!(e["data"], want, "{e}");
    }
    // As a notification: refused after the ownership check, so a failed turn_complete (§3.5).
    rpc.notify(
        "session/prompt",
        json!({"session_id": sid, "prompt": "resume me"}),
    );
    let id = rpc.send("status", json!({}));
    let deadline = std::time::Instant::now() + common::RECV_TIMEOUT;
    let mut tc = None;
    let mut answered = false;
    while tc.is_none() || !answered {
        let v = rpc
            .read_frame(deadline.saturating_duration_since(std::time::Instant::now()))
            .unwrap_or_else(|e| panic!("{}", common::describe(&e)));
        if v["method"] == "session/update" {
            assert!(tc.is_none(), "a second update {v}");
            tc = Some(v["params"].clone());
        } else {
            assert_eq!(v["id"], json!(id), "{v}");
            answered = true;
        }
    }
    let tc = tc.unwrap();
    assert_eq!(tc["type"], "turn_complete", "{tc}");
    assert_eq!(tc["outcome"], "failed", "{tc}");
    assert_eq!(tc["content"], "", "{tc}");
    // Readable: the finished rows only, without recovery, twice, both selections.
    for mode in [None, Some("acp"), None] {
        let rows = rpc.messages_mode(sid, mode).unwrap();
        assert_contiguous(&rows);
        assert_eq!(
            shape(&rows),
            vec![
                row("user", "message", "hello"),
                row("assistant", "message", "hi there")
            ]
        );
    }
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    let listed = rpc.ok("session/list-acp", json!({}));
    let entry = items(&listed["sessions"])
        .iter()
        .find(|s| s["session_id"] == sid)
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(entry["interaction_surface"], SURFACE);
    assert_eq!(entry["state"], "persisted");
    assert_eq!(entry["message_count"], 2);
}

#[test]
fn unsupported_surface_rows_are_refused_read_without_recovery_and_untouched() {
    let mut env = AcpEnv::new(&echo_config(""));
    let owner = env.d().connect().initialize()["principalId"]
        .as_str()
        .unwrap()
        .to_owned();
    env.stop();
    for sid in ["stdio-1", "stdio-kill", "stdio-del"] {
        insert_foreign(&env, sid, &owner);
    }
    env.start();
    let before = dump_all(&env.db());
    assert_eq!(before["acp_checkpoint_events"].len(), 6);
    attempts(&env, "stdio-1");
    assert_eq!(
        dump_all(&env.db()),
        before,
        "refused attempts changed the store"
    );
    // And again after a crash and restart (startup touches nothing either).
    env.restart();
    attempts(&env, "stdio-1");
    assert_eq!(dump_all(&env.db()), before, "a restart changed the store");

    // A same-id Chat session is another store: the ACP rows stay as they are.
    let mut rpc = env.rpc();
    rpc.new_session("stdio-1", "chat");
    rpc.prompt_ok("stdio-1", "chat turn");
    assert_eq!(acp_dump(&env), {
        let mut b = before.clone();
        b.retain(|t, _| t.starts_with("acp_"));
        b
    });

    // Kill sets the tombstone and nothing else: no folding, no marker (§9.7).
    let kill_row = acp_row_id(&env.db(), "stdio-kill");
    let r = rpc.ok("session/kill", json!({"session_id": "stdio-kill"}));
    assert_eq!(r["killed"], true);
    let after = dump_all(&env.db());
    for t in TABLES {
        if t == "acp_sessions" || t.starts_with("chat_") {
            continue;
        }
        assert_eq!(after[t], before[t], "kill changed {t}");
    }
    let changed: Vec<(&String, &String)> = before["acp_sessions"]
        .iter()
        .zip(&after["acp_sessions"])
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    let (old, new) = changed[0];
    assert!(old.starts_with(&format!("{kill_row}|")), "{old}");
    let (old_head, old_tail) = old.rsplit_once('|').unwrap();
    let (new_head, new_tail) = new.rsplit_once('|').unwrap();
    assert_eq!(old_head, new_head, "kill changed more than killed_at");
    assert_eq!(old_tail, "NULL");
    assert_ne!(new_tail, "NULL");
    let t = rpc.prompt("stdio-kill", "x");
    assert_error(t.error(), -32000, Some("killed"));
    assert_eq!(rpc.messages("stdio-kill").len(), 2);

    // Delete deletes the row with everything under it, checkpoint included.
    let del_row = acp_row_id(&env.db(), "stdio-del");
    let r = rpc.ok("session/delete", json!({"session_id": "stdio-del"}));
    assert_eq!(r["deleted"], true);
    assert_no_rows_of(&env.db(), del_row);
    assert_error(
        &rpc.messages_mode("stdio-del", None).unwrap_err(),
        -32000,
        None,
    );
    // stdio-1 is still exactly as inserted.
    let now = dump_all(&env.db());
    let rows_of = |d: &BTreeMap<&str, Vec<String>>, t: &str, id: i64| -> Vec<String> {
        d[t].iter()
            .filter(|r| {
                let cols: Vec<&str> = r.split('|').collect();
                let key = if t == "acp_sessions" || t == "acp_turn_checkpoints" {
                    cols[0]
                } else {
                    cols[1]
                };
                key == id.to_string()
            })
            .cloned()
            .collect()
    };
    let one = acp_row_id(&env.db(), "stdio-1");
    for t in std::iter::once("acp_sessions").chain(SESSION_TABLES) {
        assert_eq!(rows_of(&now, t, one), rows_of(&before, t, one), "{t}");
        assert!(!rows_of(&now, t, one).is_empty(), "{t}");
    }
}
