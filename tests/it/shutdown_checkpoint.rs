//! A graceful shutdown folds the WAL into `sessions.db`:
//! after SIGTERM the `-wal` file is gone or empty, and a copy of
//! `sessions.db` alone holds every session and transcript row.

use crate::common;

use common::acp::{db_int, dump_all};
use common::{Daemon, TestDir, EXIT_TIMEOUT};
use serde_json::json;

#[test]
fn sigterm_leaves_a_whole_sessions_db() {
    let mut d = Daemon::start();
    let mut c = d.client();
    for (i, sid) in ["w1", "w2", "w3", "w4", "w5", "w6"].iter().enumerate() {
        let v = c.call(
            "session/new",
            json!({"agent_alias": "echo", "session_id": sid, "chat_mode": "acp"}),
            json!(i),
        );
        assert!(v.get("result").is_some(), "{v}");
        let id = format!("p{i}");
        c.send_json(&json!({"jsonrpc": "2.0", "method": "session/prompt",
            "params": {"session_id": sid, "prompt": "::repeat 100000 hello"}, "id": id}));
        while c.recv_json()["id"] != json!(id) {}
    }
    let db = d.data_dir().join("sessions/sessions.db");
    // One turn still running at SIGTERM: it is cancelled and persisted too.
    c.send_json(&json!({"jsonrpc": "2.0", "method": "session/prompt",
        "params": {"session_id": "w1", "prompt": "running\n::sleep 60000"}, "id": "run"}));
    loop {
        let v = c.recv_json();
        if v["params"]["text"] == "running" {
            break;
        }
    }
    if let Err(why) = d.stop() {
        common::skip(&why);
        return;
    }
    let status = d.wait_exit(EXIT_TIMEOUT).expect("exit after SIGTERM");
    assert_eq!(status.code(), Some(0));

    let wal = d.data_dir().join("sessions/sessions.db-wal");
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(wal_len, 0, "{} still holds data", wal.display());

    let copy_dir = TestDir::new();
    let copy = copy_dir.path().join("sessions.db");
    std::fs::copy(&db, &copy).unwrap();
    assert_eq!(db_int(&copy, "SELECT count(*) FROM acp_sessions"), 6);
    assert_eq!(dump_all(&copy), dump_all(&db));
    assert_eq!(
        db_int(&copy, "SELECT count(*) FROM acp_turn_checkpoints"),
        0,
        "the cancelled turn was finalized"
    );
}
