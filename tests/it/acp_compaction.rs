//! Auto-compaction of ACP sessions (§9.4, §9.5, §9.6, §10.3): the
//! exact `compaction_notice` figures, a transcript that is never renumbered
//! or rewritten, the snapshot as the authority after a restart (`[]`
//! included), and a failed snapshot write that changes nothing.
//!
//! A model of the retained context runs beside the daemon: every notice and
//! every `::context` reply is compared with it.

use crate::common;

use common::acp::*;
use common::values::items;
use serde_json::{json, Value};

const MAX: usize = 6;
const KEEP: usize = 2;

fn config() -> String {
    echo_config(&format!(
        "context_max_messages = {MAX}\ncompact_keep_messages = {KEEP}"
    ))
}

/// How a prompt asks for compaction (§10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forced {
    No,
    Compact,
    Empty,
}

fn forced_of(prompt: &str) -> Forced {
    let lines: Vec<&str> = prompt.lines().map(str::trim).collect();
    if lines.contains(&"::compact-empty") {
        Forced::Empty
    } else if lines.contains(&"::compact") {
        Forced::Compact
    } else {
        Forced::No
    }
}

/// The retained context and transcript length the daemon must have.
#[derive(Debug, Default)]
struct Model {
    ctx: Vec<Value>,
    rows: usize,
}

impl Model {
    /// The compaction before a turn (§9.5); the notice's figures, if any.
    fn compact(&mut self, forced: Forced) -> Option<(usize, usize, usize)> {
        let len = self.ctx.len();
        let due = len + 1 > MAX;
        match forced {
            Forced::Empty => {
                self.ctx.clear();
                Some((len, 0, self.rows))
            }
            Forced::No if !due => None,
            _ if len <= KEEP => Some((0, len, self.rows)),
            _ => {
                let n = len - KEEP;
                let summary = json!({"role": "user", "kind": "summary", "content": format!("[compacted {n} earlier messages]")});
                let mut c = vec![summary];
                c.extend_from_slice(&self.ctx[n..]);
                self.ctx = c;
                Some((n, KEEP + 1, self.rows))
            }
        }
    }

    /// A completed turn: its prompt and (non-empty) reply join context and transcript.
    fn turn_done(&mut self, prompt: &str, reply: &str) {
        self.ctx.push(ctx("user", prompt));
        self.rows += 1;
        if !reply.is_empty() {
            self.ctx.push(ctx("assistant", reply));
            self.rows += 1;
        }
    }
}

/// Runs one prompt and checks its notice (or its absence) against the model.
/// `snapshot_fails`: the snapshot write is failing, so nothing may change.
fn turn(rpc: &mut Rpc, m: &mut Model, sid: &str, prompt: &str, snapshot_fails: bool) -> Turn {
    let expected = if snapshot_fails {
        None
    } else {
        m.compact(forced_of(prompt))
    };
    let t = rpc.prompt_ok(sid, prompt);
    let notices = t.of_type("compaction_notice");
    match expected {
        None => assert!(notices.is_empty(), "unexpected notice {notices:?}"),
        Some((compacted, retained, boundary)) => {
            assert_eq!(notices.len(), 1, "{:?}", t.updates());
            assert_eq!(
                notices[0],
                json!({"sessionId": sid, "type": "compaction_notice", "compactedMessages": compacted, "retainedMessages": retained, "boundarySeq": boundary}),
                "notice of {prompt:?}"
            );
            // Sent before the turn begins: ahead of every event of the turn.
            assert_eq!(
                t.updates()[0]["type"],
                "compaction_notice",
                "{:?}",
                t.updates()
            );
        }
    }
    let reply = t.result()["content"].as_str().unwrap().to_owned();
    m.turn_done(prompt, &reply);
    t
}

/// `::context` through [`turn`]: the context must be the model's.
fn check_context(rpc: &mut Rpc, m: &mut Model, sid: &str) -> Vec<Value> {
    let want = {
        // The turn's compaction (if due) happens before the context is read.
        let mut probe = Model {
            ctx: m.ctx.clone(),
            rows: m.rows,
        };
        probe.compact(Forced::No);
        probe.ctx
    };
    let t = turn(rpc, m, sid, "::context", false);
    let doc: Value = serde_json::from_str(t.result()["content"].as_str().unwrap()).unwrap();
    let got = items(&doc["messages"]).clone();
    assert_eq!(got, want, "::context");
    got
}

/// The transcript grew by appending only: the old rows are unchanged,
/// through the daemon and byte for byte in the database.
struct Rows {
    api: Vec<Value>,
    db: Vec<String>,
}

fn snapshot_rows(env: &AcpEnv, rpc: &mut Rpc, sid: &str, m: &Model) -> Rows {
    let api = rpc.messages(sid);
    assert_contiguous(&api);
    assert_eq!(api.len(), m.rows, "{api:?}");
    let db = db_rows(
        &env.db(),
        &format!(
            "SELECT quote(t.id) || '|' || quote(t.seq) || '|' || quote(t.turn_id) || '|' || quote(t.role) || '|' || \
             quote(t.kind) || '|' || quote(t.content) || '|' || quote(t.created_at) FROM acp_transcript t \
             JOIN acp_sessions s ON s.id = t.session_row WHERE s.session_id = '{sid}' ORDER BY t.id"
        ),
    );
    assert_eq!(db.len(), api.len());
    Rows { api, db }
}

#[track_caller]
fn assert_appended(before: &Rows, after: &Rows) {
    assert!(after.api.len() >= before.api.len());
    assert_eq!(
        after.api[..before.api.len()],
        before.api[..],
        "rows changed"
    );
    assert_eq!(
        after.db[..before.db.len()],
        before.db[..],
        "stored rows changed"
    );
}

fn snapshots(env: &AcpEnv, sid: &str) -> Vec<String> {
    db_rows(
        &env.db(),
        &format!(
            "SELECT quote(c.boundary_seq) || '|' || c.messages_json FROM acp_context_snapshots c \
             JOIN acp_sessions s ON s.id = c.session_row WHERE s.session_id = '{sid}' ORDER BY c.id"
        ),
    )
}

#[test]
fn notices_are_exact_and_rows_are_never_renumbered() {
    let sid = "compact-1";
    let (mut env, mut rpc) = AcpEnv::with_session(&config(), sid, "acp");
    let mut m = Model::default();
    let mut before = snapshot_rows(&env, &mut rpc, sid, &m);
    for i in 1..=9 {
        turn(&mut rpc, &mut m, sid, &format!("prompt {i}"), false);
        let after = snapshot_rows(&env, &mut rpc, sid, &m);
        assert_appended(&before, &after);
        before = after;
        if i % 3 == 0 {
            check_context(&mut rpc, &mut m, sid);
            before = snapshot_rows(&env, &mut rpc, sid, &m);
        }
    }
    // One snapshot per notice (each checked against the model by `turn`);
    // the first: 6 messages, keep 2 → 4 compacted, boundary 6.
    let snaps = snapshots(&env, sid);
    assert!(snaps.len() >= 3, "{snaps:?}");
    assert!(
        snaps[0].starts_with("6|[{\"role\":\"user\",\"kind\":\"summary\",\"content\":\"[compacted 4 earlier messages]\"}"),
        "{snaps:?}"
    );

    // After a crash the latest snapshot is the authority: the context starts
    // with its summary, then the rows after its boundary.
    let mut rpc = env.restart();
    let got = check_context(&mut rpc, &mut m, sid);
    assert_eq!(got[0]["kind"], "summary", "{got:?}");
    let summary = got[0]["content"].as_str().unwrap();
    assert!(
        summary.starts_with("[compacted ") && summary.ends_with(" earlier messages]"),
        "{summary}"
    );
    let after = snapshot_rows(&env, &mut rpc, sid, &m);
    assert_appended(&before, &after);
    // Further turns keep compacting from the rebuilt context.
    for i in 10..=13 {
        turn(&mut rpc, &mut m, sid, &format!("prompt {i}"), false);
    }
    check_context(&mut rpc, &mut m, sid);
    let last = snapshot_rows(&env, &mut rpc, sid, &m);
    assert_appended(&after, &last);
}

#[test]
fn forced_compact_with_nothing_to_compact_still_writes_a_snapshot() {
    let sid = "compact-0";
    let (mut env, mut rpc) = AcpEnv::with_session(&config(), sid, "acp");
    let mut m = Model::default();
    // Empty context: a notice with 0 and 0, boundary 0.
    turn(&mut rpc, &mut m, sid, "::compact\nfirst", false);
    // Two messages, keep 2: nothing compacted, no summary.
    turn(&mut rpc, &mut m, sid, "::compact\nsecond", false);
    assert_eq!(
        snapshots(&env, sid),
        vec![
            "0|[]".to_owned(),
            "2|[{\"role\":\"user\",\"kind\":\"message\",\"content\":\"::compact\\nfirst\"},{\"role\":\"assistant\",\"kind\":\"message\",\"content\":\"first\"}]".to_owned()
        ]
    );
    let mut rpc = env.restart();
    let got = check_context(&mut rpc, &mut m, sid);
    assert!(got.iter().all(|c| c["kind"] != "summary"), "{got:?}");
}

#[test]
fn compact_empty_is_authoritative_after_restart() {
    let sid = "compact-empty";
    let (mut env, mut rpc) = AcpEnv::with_session(&config(), sid, "acp");
    let mut m = Model::default();
    for i in 1..=3 {
        turn(&mut rpc, &mut m, sid, &format!("p{i}"), false);
    }
    let t = turn(&mut rpc, &mut m, sid, "::compact-empty\nafter empty", false);
    assert_eq!(
        t.of_type("compaction_notice")[0],
        json!({"sessionId": sid, "type": "compaction_notice", "compactedMessages": 6, "retainedMessages": 0, "boundarySeq": 6})
    );
    assert_eq!(snapshots(&env, sid).last().unwrap(), "6|[]");
    let rows_before = rpc.messages(sid);
    assert_eq!(rows_before.len(), 8);

    // Restart: the empty snapshot wins over the eight rows of transcript.
    let mut rpc = env.restart();
    let got = check_context(&mut rpc, &mut m, sid);
    assert_eq!(
        got,
        vec![
            ctx("user", "::compact-empty\nafter empty"),
            ctx("assistant", "after empty")
        ]
    );
    let rows = rpc.messages(sid);
    assert_eq!(
        rows[..8],
        rows_before[..],
        "compaction touched the transcript"
    );

    // An empty snapshot with nothing after it: the context is empty.
    let t = turn(&mut rpc, &mut m, sid, "::compact-empty", false);
    assert_eq!(t.result()["content"], "");
    let mut rpc = env.restart();
    let got = check_context(&mut rpc, &mut m, sid);
    assert_eq!(got, vec![ctx("user", "::compact-empty")]);
}

#[test]
fn failed_snapshot_write_sends_no_notice_and_changes_nothing() {
    let sid = "compact-fault";
    let (mut env, mut rpc) = AcpEnv::with_session(&config(), sid, "acp");
    let mut m = Model::default();
    for i in 1..=3 {
        turn(&mut rpc, &mut m, sid, &format!("p{i}"), false);
    }
    rpc.faults(&["snapshot_write"]);
    // Due (6 + 1 > 6) and forced: both discarded, and the turns complete.
    for prompt in [
        "::context",
        "::compact\n::context",
        "::compact-empty\n::context",
    ] {
        let full = m.ctx.clone();
        let t = turn(&mut rpc, &mut m, sid, prompt, true);
        assert_eq!(t.turn_complete()["outcome"], "completed");
        let doc: Value = serde_json::from_str(t.result()["content"].as_str().unwrap()).unwrap();
        assert_eq!(
            doc["messages"],
            json!(full),
            "{prompt:?}: the context changed"
        );
    }
    assert!(snapshots(&env, sid).is_empty(), "a snapshot was written");
    let rows = rpc.messages(sid);
    assert_contiguous(&rows);
    assert_eq!(rows.len(), m.rows);

    // Cleared: the next turn compacts what has accumulated.
    rpc.faults(&[]);
    let t = turn(&mut rpc, &mut m, sid, "p4", false);
    assert_eq!(t.of_type("compaction_notice").len(), 1);
    assert_eq!(snapshots(&env, sid).len(), 1);
    let mut rpc = env.restart();
    check_context(&mut rpc, &mut m, sid);
}
