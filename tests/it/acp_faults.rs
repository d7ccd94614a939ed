//! Storage faults of sessions (§8.20, §9.3, §9.6, §9.8, §9.9), injected
//! with `debug/set-faults` into the real daemon: each point's documented
//! answer (code, `data.reason`), `turn_complete` where the spec sends one,
//! nothing changed where it says so, and the session usable or recoverable
//! once the faults are cleared. Also the kill/delete ordering of §9.9.
//! (`snapshot_write` is in tests/it/acp_compaction.rs.)

use crate::common;

use common::values::items;
use std::time::Duration;

use common::acp::*;
use common::assert::assert_error;
use common::rpc::Frame;
use common::sessions::update_params;
use serde_json::{json, Value};

/// A long, slow reply: one character every 50 ms.
const SLOW: &str = "::delay 50\n::chunk 1\nabcdefghijklmnopqrstuvwxyz0123456789";

fn env() -> AcpEnv {
    AcpEnv::new(&echo_config(""))
}

/// [`env`] and a client of it with session `sid` open in `mode`.
fn with_session(sid: &str, mode: &str) -> (AcpEnv, Rpc) {
    AcpEnv::with_session(&echo_config(""), sid, mode)
}

/// Rows of `table` that belong to session `sid` (through `session_row`).
fn count(env: &AcpEnv, table: &str, sid: &str) -> i64 {
    db_int(
        &env.db(),
        &format!(
            "SELECT COUNT(*) FROM {table} x JOIN acp_sessions s ON s.id = x.session_row \
             WHERE s.session_id = '{sid}'"
        ),
    )
}

fn killed_at_is_null(env: &AcpEnv, sid: &str) -> bool {
    db_int(
        &env.db(),
        &format!("SELECT killed_at IS NULL FROM acp_sessions WHERE session_id = '{sid}'"),
    ) == 1
}

/// Reads frames into the stash until `n` chunks of `sid` have arrived.
fn read_chunks(rpc: &mut Rpc, sid: &str, n: usize) {
    let sid = json!(sid);
    let is_chunk =
        |f: &Frame| f.is_update() && f.session() == Some(&sid) && f.kind() == "agent_message_chunk";
    while rpc.stash.iter().filter(|f| is_chunk(f)).count() < n {
        let line = rpc
            .try_recv_line(common::RECV_TIMEOUT)
            .unwrap_or_else(|e| panic!("waiting for a chunk: {}", common::describe(&e)));
        rpc.stash.push_back(Frame::parse(line));
    }
}

/// The next `session/update` (from the stash first), bounded.
fn next_update(rpc: &mut Rpc) -> Value {
    let (seen, f) = rpc.until("an update", Frame::is_update);
    // Put back what came before it, ahead of what is still stashed.
    for g in seen.into_iter().rev() {
        rpc.stash.push_front(g);
    }
    f.params().clone()
}

/// A turn failed by storage (§9.3): `turn_complete` with outcome failed and
/// a reason and the text streamed so far as its last update, then `-32603`
/// `storage`.
#[track_caller]
fn assert_failed_turn(t: &Turn) {
    let e = t.error();
    assert_error(e, -32603, Some("storage"));
    let tc = t.turn_complete();
    assert_eq!(tc["outcome"], "failed", "{tc}");
    assert!(tc["reason"].as_str().is_some_and(|r| !r.is_empty()), "{tc}");
    assert_eq!(t.updates().last().unwrap()["type"], "turn_complete");
    // `turn_complete.content` is the text streamed so far (§8.5): the chunks sent.
    assert_eq!(
        tc["content"],
        json!(t.text()),
        "turn_complete.content is not the text streamed (chunks sent: {:?}): {tc}",
        t.text()
    );
}

// ---------------------------------------------------------------------------
// turn_begin

#[test]
fn turn_begin_fault_starts_no_turn() {
    let sid = "tb";
    let (env, mut rpc) = with_session(sid, "acp");
    rpc.prompt_ok(sid, "one");
    let before = dump_all(&env.db());
    rpc.faults(&["turn_begin"]);
    let t = rpc.prompt(sid, "two");
    assert_error(t.error(), -32603, Some("storage"));
    assert!(
        t.updates().is_empty(),
        "a turn that did not begin sent {:?}",
        t.updates()
    );
    // A prompt sent as a notification still hears how it ended (§3.5).
    rpc.notify(
        "session/prompt",
        json!({"session_id": sid, "prompt": "three"}),
    );
    let tc = next_update(&mut rpc);
    rpc.ok("status", json!({}));
    assert!(rpc.take_updates().is_empty(), "more than one update");
    assert_eq!(tc["type"], "turn_complete");
    assert_eq!(tc["outcome"], "failed");
    assert_eq!(tc["content"], "");
    assert!(tc["reason"].is_string());
    assert_eq!(
        dump_all(&env.db()),
        before,
        "a failed begin wrote something"
    );
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 0);

    rpc.faults(&[]);
    rpc.prompt_ok(sid, "four");
    let rows = rpc.messages(sid);
    assert_eq!(shape(&rows), echo_rows(&["one", "four"]));
    assert_eq!(rpc.context(sid), echo_ctx(&["one", "four"]));
}

// ---------------------------------------------------------------------------
// checkpoint_append

#[test]
fn checkpoint_append_fault_fails_the_turn_and_leaves_the_checkpoint() {
    let sid = "ca";
    let (env, mut rpc) = with_session(sid, "acp");
    rpc.prompt_ok(sid, "one");
    rpc.faults(&["checkpoint_append"]);
    let t = rpc.prompt(sid, "two");
    assert_failed_turn(&t);
    assert!(
        t.of_type("agent_message_chunk").is_empty(),
        "an event whose append failed was sent: {:?}",
        t.updates()
    );
    // The begin committed; the checkpoint (the prompt alone) is left for recovery.
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 1);
    assert_eq!(count(&env, "acp_checkpoint_events", sid), 1);
    assert_eq!(rpc.messages(sid).len(), 2);

    rpc.faults(&[]);
    rpc.prompt_ok(sid, "three");
    let rows = rpc.messages(sid);
    assert_contiguous(&rows);
    let two = [
        row("user", "message", "two"),
        row("system", "interruption_marker", INTERRUPTED),
    ];
    let want = [echo_rows(&["one"]), two.to_vec(), echo_rows(&["three"])].concat();
    assert_eq!(shape(&rows), want);
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 0);
    assert_eq!(
        rpc.context(sid),
        vec![
            ctx("user", "one"),
            ctx("assistant", "one"),
            ctx("user", "two"),
            ctx("user", "three"),
            ctx("assistant", "three")
        ]
    );
    assert_eq!(markers(&rpc.messages(sid), INTERRUPTED), 1);
}

#[test]
fn checkpoint_append_fault_mid_turn_keeps_exactly_what_was_sent() {
    let sid = "ca-mid";
    let (mut env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    let id = rpc.start_prompt(sid, SLOW);
    read_chunks(&mut rpc, sid, 3);
    ctl.faults(&["checkpoint_append"]);
    let t = rpc.finish_turn(sid, &id, common::RECV_TIMEOUT);
    assert_failed_turn(&t);
    let sent = t.text();
    assert!(sent.len() >= 3, "{sent:?}");
    ctl.faults(&[]);
    // Recovered after a crash: the rows hold exactly the chunks that were sent.
    let mut rpc = env.restart();
    let rows = rpc.messages(sid);
    assert_eq!(
        shape(&rows),
        vec![
            row("user", "message", SLOW),
            row("assistant", "message", &sent),
            row("system", "interruption_marker", INTERRUPTED),
        ]
    );
    assert_eq!(
        rpc.context(sid),
        vec![ctx("user", SLOW), ctx("assistant", &sent)]
    );
}

// ---------------------------------------------------------------------------
// turn_finalize

#[test]
fn turn_finalize_fault_fails_the_turn_and_the_next_turn_recovers_it() {
    let sid = "tf";
    let (env, mut rpc) = with_session(sid, "acp");
    rpc.prompt_ok(sid, "one");
    rpc.faults(&["turn_finalize"]);
    let t = rpc.prompt(sid, "two\n::tool echo {\"k\":1}");
    assert_failed_turn(&t);
    assert_eq!(t.text(), "two");
    assert_eq!(t.of_type("tool_result").len(), 1);
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 1);
    // prompt, text, tool call, tool result
    assert_eq!(count(&env, "acp_checkpoint_events", sid), 4);
    assert_eq!(
        rpc.messages(sid).len(),
        2,
        "finalize failed but rows appeared"
    );

    rpc.faults(&[]);
    rpc.prompt_ok(sid, "three");
    let rows = rpc.messages(sid);
    assert_contiguous(&rows);
    let two = [
        row("user", "message", "two\n::tool echo {\"k\":1}"),
        row("assistant", "message", "two"),
        row("assistant", "tool_call", ""),
        row("tool", "tool_result", "{\"k\":1}"),
        row("system", "interruption_marker", INTERRUPTED),
    ];
    let want = [echo_rows(&["one"]), two.to_vec(), echo_rows(&["three"])].concat();
    assert_eq!(shape(&rows), want);
}

// ---------------------------------------------------------------------------
// recovery

/// A session `sid` with a leftover checkpoint and no live owner: a
/// finalization failed, then the session was closed.
fn leftover_checkpoint(env: &AcpEnv, rpc: &mut Rpc, sid: &str) {
    rpc.new_session(sid, "acp");
    rpc.prompt_ok(sid, "one");
    rpc.faults(&["turn_finalize"]);
    assert_failed_turn(&rpc.prompt(sid, "two"));
    rpc.faults(&[]);
    rpc.ok("session/close", json!({"session_id": sid}));
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    assert_eq!(count(env, "acp_turn_checkpoints", sid), 1);
}

#[test]
fn recovery_fault_changes_nothing_and_creates_no_live_session() {
    let env = env();
    let mut rpc = env.rpc();
    let sid = "rf";
    leftover_checkpoint(&env, &mut rpc, sid);
    let before = dump_all(&env.db());
    rpc.faults(&["recovery"]);
    let e = rpc.messages_mode(sid, None).unwrap_err();
    assert_error(&e, -32603, Some("storage"));
    let t = rpc.prompt(sid, "three");
    assert_error(t.error(), -32603, Some("storage"));
    assert!(t.updates().is_empty(), "{:?}", t.updates());
    let e = rpc.new_session_fails(sid, "acp");
    assert_error(&e, -32603, Some("storage"));
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    assert_eq!(
        dump_all(&env.db()),
        before,
        "a failed recovery changed the store"
    );

    rpc.faults(&[]);
    let rows = rpc.messages(sid);
    let marker = row("system", "interruption_marker", INTERRUPTED);
    assert_eq!(
        shape(&rows),
        [echo_rows(&["one", "two"]), vec![marker]].concat()
    );
    rpc.prompt_ok(sid, "three");
    assert_eq!(markers(&rpc.messages(sid), INTERRUPTED), 1);
}

// ---------------------------------------------------------------------------
// tombstone (session/kill)

#[test]
fn tombstone_fault_on_an_idle_session_keeps_it_usable() {
    let env = env();
    let mut rpc = env.rpc();
    let sid = "tomb-idle";
    refused_while_idle(&env, &mut rpc, sid, "acp", "tombstone", "session/kill");
    assert!(killed_at_is_null(&env, sid));
    rpc.prompt_ok(sid, "two");

    rpc.faults(&[]);
    let r = rpc.ok("session/kill", json!({"session_id": sid}));
    assert_eq!(r, json!({"session_id": sid, "killed": true}));
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    assert!(!killed_at_is_null(&env, sid));
    check_killed(&env, &mut rpc, sid, 4);
}

/// Session `sid` (`mode`) with one turn, whose `method` then fails `-32603`
/// `storage` under fault `point`, changing nothing in the store and leaving
/// the session live. The fault stays set.
fn refused_while_idle(
    env: &AcpEnv,
    rpc: &mut Rpc,
    sid: &str,
    mode: &str,
    point: &str,
    method: &str,
) {
    rpc.new_session(sid, mode);
    rpc.prompt_ok(sid, "one");
    let before = dump_all(&env.db());
    rpc.faults(&[point]);
    let e = rpc.fails(method, json!({"session_id": sid}));
    assert_error(&e, -32603, Some("storage"));
    assert_eq!(
        dump_all(&env.db()),
        before,
        "a failed {method} changed the store"
    );
    assert!(rpc.live_ids().contains(&sid.to_owned()));
}

/// A killed session: readable, never rehydrated, listed as killed only on request.
fn check_killed(env: &AcpEnv, rpc: &mut Rpc, sid: &str, rows: usize) {
    let before = rpc.messages(sid);
    assert_eq!(before.len(), rows, "{before:?}");
    let t = rpc.prompt(sid, "again");
    assert_error(t.error(), -32000, Some("killed"));
    let e = rpc.new_session_fails(sid, "acp");
    assert_error(&e, -32000, Some("killed"));
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    let listed = rpc.ok("session/list-acp", json!({}));
    assert!(
        !items(&listed["sessions"])
            .iter()
            .any(|s| s["session_id"] == sid),
        "{listed}"
    );
    let all = rpc.ok("session/list", json!({"include_killed": true}));
    let entry = items(&all["sessions"])
        .iter()
        .find(|s| s["session_id"] == sid && s["chat_mode"] == "acp")
        .unwrap_or_else(|| panic!("{all}"))
        .clone();
    assert_eq!(entry["state"], "killed");
    // Nothing to kill any more.
    let e = rpc.fails("session/kill", json!({"session_id": sid}));
    assert_error(&e, -32000, None);
    assert_eq!(
        rpc.messages(sid),
        before,
        "reading a killed session changed it"
    );
    let _ = env;
}

#[test]
fn tombstone_fault_on_a_running_turn_then_kill_retried() {
    let sid = "tomb-run";
    let (env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    let id = rpc.start_prompt(sid, SLOW);
    let queued = rpc.start_prompt(sid, "queued");
    read_chunks(&mut rpc, sid, 2);
    ctl.faults(&["tombstone"]);
    let e = ctl.fails("session/kill", json!({"session_id": sid}));
    assert_error(&e, -32603, Some("storage"));
    // The hard cancel came first: the running prompt is answered killed,
    // without turn_complete, and so is the queued one.
    let t = rpc.finish_turn(sid, &id, common::RECV_TIMEOUT);
    assert_error(t.error(), -32000, Some("killed"));
    assert_error(&rpc.wait(&queued).unwrap_err(), -32000, Some("killed"));
    assert!(t.of_type("turn_complete").is_empty(), "{:?}", t.updates());
    let sent = t.text();
    assert!(!ctl.live_ids().contains(&sid.to_owned()));
    // The row and its checkpoint remain.
    assert!(killed_at_is_null(&env, sid));
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 1);

    ctl.faults(&[]);
    ctl.ok("session/kill", json!({"session_id": sid}));
    let rows = ctl.messages(sid);
    let s = shape(&rows);
    assert_eq!(s.len(), 3, "{rows:?}");
    assert_eq!(s[0], row("user", "message", SLOW));
    assert!(
        s[1].2.starts_with(&sent),
        "sent {sent:?}, kept {:?}",
        s[1].2
    );
    assert_eq!(s[2], row("system", "interruption_marker", KILLED));
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 0);
    check_killed(&env, &mut ctl, sid, 3);
}

#[test]
fn tombstone_fault_on_a_running_turn_then_recovered() {
    let sid = "tomb-rec";
    let (env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    let id = rpc.start_prompt(sid, SLOW);
    read_chunks(&mut rpc, sid, 2);
    ctl.faults(&["tombstone"]);
    assert_error(
        &ctl.fails("session/kill", json!({"session_id": sid})),
        -32603,
        Some("storage"),
    );
    let t = rpc.finish_turn(sid, &id, common::RECV_TIMEOUT);
    assert_error(t.error(), -32000, Some("killed"));
    ctl.faults(&[]);
    // Not killed after all: the next prompt rehydrates and recovers it.
    let t2 = ctl.prompt_ok(sid, "after");
    assert_eq!(t2.result()["content"], "after");
    let rows = ctl.messages(sid);
    let s = shape(&rows);
    assert_eq!(s.len(), 5, "{rows:?}");
    assert!(s[1].2.starts_with(&t.text()));
    assert_eq!(s[2], row("system", "interruption_marker", INTERRUPTED));
    assert_eq!(s[3], row("user", "message", "after"));
}

// ---------------------------------------------------------------------------
// acp_delete

#[test]
fn acp_delete_fault_on_an_idle_session_keeps_it_usable() {
    let env = env();
    let mut rpc = env.rpc();
    let sid = "del-idle";
    refused_while_idle(&env, &mut rpc, sid, "acp", "acp_delete", "session/delete");
    rpc.prompt_ok(sid, "two");
    assert_eq!(rpc.messages(sid).len(), 4);

    rpc.faults(&[]);
    let row_id = acp_row_id(&env.db(), sid);
    let r = rpc.ok("session/delete", json!({"session_id": sid}));
    assert_eq!(r, json!({"session_id": sid, "deleted": true}));
    check_deleted(&env, &mut rpc, sid, row_id);
}

/// A deleted session: gone from memory and from every table.
fn check_deleted(env: &AcpEnv, rpc: &mut Rpc, sid: &str, row_id: i64) {
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    let e = rpc.messages_mode(sid, None).unwrap_err();
    assert_error(&e, -32000, None);
    let e = rpc.prompt(sid, "again");
    assert_eq!(e.error()["code"], -32000);
    assert_no_rows_of(&env.db(), row_id);
    assert_eq!(
        db_int(
            &env.db(),
            &format!("SELECT COUNT(*) FROM acp_sessions WHERE session_id = '{sid}'")
        ),
        0
    );
    let r = rpc.ok("session/delete", json!({"session_id": sid}));
    assert_eq!(r["deleted"], false, "{r}");
}

#[test]
fn acp_delete_fault_on_a_running_turn_keeps_the_row_recoverable() {
    let sid = "del-run";
    let (env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    let id = rpc.start_prompt(sid, SLOW);
    read_chunks(&mut rpc, sid, 2);
    ctl.faults(&["acp_delete"]);
    let e = ctl.fails("session/delete", json!({"session_id": sid}));
    assert_error(&e, -32603, Some("storage"));
    let t = rpc.finish_turn(sid, &id, common::RECV_TIMEOUT);
    assert_error(t.error(), -32000, Some("deleted"));
    assert!(t.of_type("turn_complete").is_empty(), "{:?}", t.updates());
    assert!(!ctl.live_ids().contains(&sid.to_owned()));
    assert_eq!(count(&env, "acp_turn_checkpoints", sid), 1);

    ctl.faults(&[]);
    // Recoverable: reading it folds the checkpoint.
    let rows = ctl.messages(sid);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[1]["content"].as_str().unwrap().starts_with(&t.text()));
    assert_eq!(markers(&rows, INTERRUPTED), 1);
    // Or the delete retried.
    let row_id = acp_row_id(&env.db(), sid);
    ctl.ok("session/delete", json!({"session_id": sid}));
    check_deleted(&env, &mut ctl, sid, row_id);
}

// ---------------------------------------------------------------------------
// Chat: chat_append, chat_delete

#[test]
fn chat_append_fault_fails_the_turn_and_keeps_history_and_context() {
    let sid = "chat-a";
    let (_env, mut rpc) = with_session(sid, "chat");
    rpc.prompt_ok(sid, "one");
    rpc.faults(&["chat_append"]);
    let t = rpc.prompt(sid, "two");
    assert_failed_turn(&t);
    assert_eq!(t.text(), "two");
    let hist = rpc.messages(sid);
    assert_eq!(shape(&hist), echo_rows(&["one"]));
    rpc.faults(&[]);
    // The in-memory context was not extended by the failed turn.
    assert_eq!(
        rpc.context(sid),
        vec![ctx("user", "one"), ctx("assistant", "one")]
    );
    assert_eq!(rpc.messages(sid).len(), 4);
}

#[test]
fn chat_delete_fault_keeps_the_session_usable() {
    let env = env();
    let mut rpc = env.rpc();
    let sid = "chat-d";
    refused_while_idle(&env, &mut rpc, sid, "chat", "chat_delete", "session/delete");
    rpc.prompt_ok(sid, "two");
    rpc.faults(&[]);
    let r = rpc.ok("session/delete", json!({"session_id": sid}));
    assert_eq!(r, json!({"session_id": sid, "deleted": true}));
    assert!(!rpc.live_ids().contains(&sid.to_owned()));
    assert_error(&rpc.messages_mode(sid, None).unwrap_err(), -32000, None);
    assert_eq!(dump_table(&env.db(), "chat_messages").len(), 0);
    assert_eq!(dump_table(&env.db(), "chat_sessions").len(), 0);
}

// ---------------------------------------------------------------------------
// Kill and delete without faults (§9.9)

#[test]
fn kill_of_a_running_turn_answers_killed_and_keeps_history_readable() {
    let sid = "kill-run";
    let (mut env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    rpc.prompt_ok(sid, "one");
    let id = rpc.start_prompt(sid, SLOW);
    let queued: Vec<Value> = (0..2)
        .map(|i| rpc.start_prompt(sid, &format!("q{i}")))
        .collect();
    read_chunks(&mut rpc, sid, 2);
    let r = ctl.ok("session/kill", json!({"session_id": sid}));
    assert_eq!(r, json!({"session_id": sid, "killed": true}));
    let t = rpc.finish_turn(sid, &id, common::RECV_TIMEOUT);
    assert_error(t.error(), -32000, Some("killed"));
    for q in queued {
        let a = rpc.wait(&q);
        assert_error(&a.unwrap_err(), -32000, Some("killed"));
    }
    // No turn_complete for the killed prompt, nor for the queued ones.
    rpc.ok("status", json!({}));
    let late = rpc.take_updates();
    assert!(
        t.of_type("turn_complete").is_empty() && late.iter().all(|u| u["type"] != "turn_complete"),
        "{:?} {late:?}",
        t.updates()
    );
    let rows = ctl.messages(sid);
    let s = shape(&rows);
    assert_eq!(s.len(), 5, "{rows:?}");
    assert_eq!(s[2], row("user", "message", SLOW));
    assert!(s[3].2.starts_with(&t.text()), "{s:?}");
    assert_eq!(s[4], row("system", "interruption_marker", KILLED));
    check_killed(&env, &mut ctl, sid, 5);
    // A restart changes nothing: a killed row is never recovered or rehydrated.
    drop((rpc, ctl));
    let mut rpc = env.restart();
    assert_eq!(shape(&rpc.messages(sid)), s);
    check_killed(&env, &mut rpc, sid, 5);
}

#[test]
fn kill_of_a_persisted_row_folds_its_leftover_checkpoint() {
    let sid = "kill-persisted";
    let (mut env, mut rpc) = with_session(sid, "acp");
    let id = rpc.start_prompt(sid, SLOW);
    read_chunks(&mut rpc, sid, 3);
    let sent = chunk_text(&update_params(&rpc.stash));
    let _ = id;
    let mut rpc = env.restart();
    // Killed without being touched first: the kill folds the checkpoint itself.
    rpc.ok("session/kill", json!({"session_id": sid}));
    let rows = rpc.messages(sid);
    let s = shape(&rows);
    assert_eq!(s.len(), 3, "{rows:?}");
    assert!(s[1].2.starts_with(&sent));
    assert_eq!(s[2], row("system", "interruption_marker", KILLED));
    assert_eq!(markers(&rows, INTERRUPTED), 0);
    check_killed(&env, &mut rpc, sid, 3);
}

#[test]
fn delete_of_a_running_turn_answers_deleted_and_removes_the_rows() {
    let sid = "del-live";
    let (env, mut rpc) = with_session(sid, "acp");
    let mut ctl = env.rpc();
    rpc.prompt_ok(sid, "one");
    let row_id = acp_row_id(&env.db(), sid);
    // Sent as a notification: its end is a failed turn_complete (§3.5, §9.9).
    rpc.notify("session/prompt", json!({"session_id": sid, "prompt": SLOW}));
    read_chunks(&mut rpc, sid, 2);
    let r = ctl.ok("session/delete", json!({"session_id": sid}));
    assert_eq!(r, json!({"session_id": sid, "deleted": true}));
    let mut updates = Vec::new();
    let tc = loop {
        let u = next_update(&mut rpc);
        if u["type"] == "turn_complete" {
            break u;
        }
        updates.push(u);
    };
    assert_eq!(tc["outcome"], "failed", "{tc}");
    assert!(tc["reason"].is_string(), "{tc}");
    assert_eq!(tc["content"], json!(chunk_text(&updates)), "{tc}");
    check_deleted(&env, &mut ctl, sid, row_id);
    rpc.expect_silence(Duration::from_millis(200));
}

#[test]
fn killed_or_deleted_notified_prompt_reports_the_streamed_text() {
    let env = env();
    for (i, method) in ["session/kill", "session/delete"].into_iter().enumerate() {
        let mut rpc = env.rpc();
        let mut ctl = env.rpc();
        let sid = format!("notified-{i}");
        rpc.new_session(&sid, "acp");
        rpc.notify("session/prompt", json!({"session_id": sid, "prompt": SLOW}));
        read_chunks(&mut rpc, &sid, 2);
        ctl.ok(method, json!({"session_id": sid}));
        let mut updates = Vec::new();
        let tc = loop {
            let u = next_update(&mut rpc);
            if u["type"] == "turn_complete" {
                break u;
            }
            updates.push(u);
        };
        assert_eq!(tc["outcome"], "failed", "{method}: {tc}");
        assert_eq!(
            tc["content"],
            json!(chunk_text(&updates)),
            "{method}: content is not the text streamed: {tc}"
        );
    }
}
