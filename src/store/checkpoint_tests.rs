//! Begin, append and finalize: folding, bounds, misuse and fault points.

use serde_json::value::RawValue;

use super::super::fold::READ_CHUNK;
use super::super::testing::{durable_record, durable_session, refused_unchanged};
use super::*;

pub(crate) fn text(s: &str) -> CheckpointEvent {
    CheckpointEvent::Text(s.into())
}

pub(crate) fn call(id: &str, input: &str) -> CheckpointEvent {
    CheckpointEvent::ToolCall {
        id: id.into(),
        name: "echo".into(),
        input: RawValue::from_string(input.into()).unwrap(),
    }
}

pub(crate) fn result(id: &str, output: &str) -> CheckpointEvent {
    CheckpointEvent::ToolResult {
        id: id.into(),
        name: "echo".into(),
        output: output.into(),
    }
}

/// `seq role/kind content [id name input]` per row.
pub(crate) fn lines(rows: &[TranscriptRow]) -> Vec<String> {
    rows.iter()
        .map(|TranscriptRow { seq, message: m }| {
            let (role, kind) = (m.role.as_str(), m.kind.as_str());
            let mut s = format!("{seq} {role}/{kind} {}", m.content);
            if let Some(id) = &m.tool_call_id {
                s.push_str(&format!(" [{id} {}", m.tool_name.as_deref().unwrap_or("-")));
                if let Some(input) = &m.tool_input {
                    s.push_str(&format!(" {}", input.get()));
                }
                s.push(']');
            }
            s
        })
        .collect()
}

async fn payloads(store: &Store, row: i64) -> Vec<String> {
    let mut conn = store.pool.acquire().await.unwrap();
    checkpoint_payloads(&mut conn, row).await.unwrap()
}

/// The refusal of a second `turn_begin` while a turn is open.
const ALREADY_OPEN: StoreError = StoreError::State("a turn checkpoint is already open");

#[tokio::test]
async fn begin_append_finalize_folds_in_order() {
    let (_dir, store, _, s) = durable_session("fold").await;
    assert!(!store.has_checkpoint(s.row).await.unwrap());

    store.turn_begin(s.row, "t1", "hi").await.unwrap();
    assert!(store.has_checkpoint(s.row).await.unwrap());
    store
        .checkpoint_append(s.row, &[text("Hel"), text("lo")])
        .await
        .unwrap();
    store.checkpoint_append(s.row, &[text("!")]).await.unwrap();
    store
        .checkpoint_append(
            s.row,
            &[call("c1", "{ \"text\" : \"x\" }"), call("c2", "{}")],
        )
        .await
        .unwrap();
    store
        .checkpoint_append(s.row, &[result("c1", "{\"text\":\"x\"}")])
        .await
        .unwrap();
    store
        .checkpoint_append(s.row, &[result("c2", "y"), text("done"), text("!")])
        .await
        .unwrap();
    // A batch's consecutive text events are stored as one; batches are not
    // merged with each other.
    assert_eq!(
        payloads(&store, s.row).await,
        [
            r#"{"kind":"user","text":"hi"}"#,
            r#"{"kind":"text","text":"Hello"}"#,
            r#"{"kind":"text","text":"!"}"#,
            r#"{"kind":"tool_call","id":"c1","name":"echo","input":{"text":"x"}}"#,
            r#"{"kind":"tool_call","id":"c2","name":"echo","input":{}}"#,
            r#"{"kind":"tool_result","id":"c1","name":"echo","output":"{\"text\":\"x\"}"}"#,
            r#"{"kind":"tool_result","id":"c2","name":"echo","output":"y"}"#,
            r#"{"kind":"text","text":"done!"}"#,
        ]
    );

    let appended = store.turn_finalize(s.row, None).await.unwrap();
    let want = [
        "1 user/message hi",
        "2 assistant/message Hello!",
        r#"3 assistant/tool_call  [c1 echo {"text":"x"}]"#,
        "4 assistant/tool_call  [c2 echo {}]",
        r#"5 tool/tool_result {"text":"x"} [c1 echo]"#,
        "6 tool/tool_result y [c2 echo]",
        "7 assistant/message done!",
    ];
    assert_eq!(lines(&appended), want);
    assert_eq!(lines(&store.durable_transcript(s.row).await.unwrap()), want);
    assert!(!store.has_checkpoint(s.row).await.unwrap());
    assert!(payloads(&store, s.row).await.is_empty());
    let turn_ids: Vec<String> = sqlx::query_scalar("SELECT turn_id FROM acp_transcript")
        .fetch_all(&store.pool)
        .await
        .unwrap();
    assert_eq!(turn_ids, ["t1"; 7]);

    // The next turn continues the seqs; a failure adds its marker last.
    store.turn_begin(s.row, "t2", "again").await.unwrap();
    store
        .checkpoint_append(s.row, &[text("part")])
        .await
        .unwrap();
    let appended = store.turn_finalize(s.row, Some("boom")).await.unwrap();
    assert_eq!(
        lines(&appended),
        [
            "8 user/message again",
            "9 assistant/message part",
            "10 system/interruption_marker Turn failed: boom",
        ]
    );
    assert_eq!(store.durable_message_count(s.row).await.unwrap(), 10);
    assert_eq!(store.durable_last_seq(s.row).await.unwrap(), 10);
}

#[tokio::test]
async fn empty_text_runs_write_no_row() {
    let (_dir, store, _, s) = durable_session("fold-empty").await;
    store.turn_begin(s.row, "t1", "").await.unwrap();
    store
        .checkpoint_append(s.row, &[text(""), call("a", "{}"), text("")])
        .await
        .unwrap();
    store.checkpoint_append(s.row, &[]).await.unwrap();
    let rows = store.turn_finalize(s.row, Some("x")).await.unwrap();
    assert_eq!(
        lines(&rows),
        [
            "1 user/message ",
            "2 assistant/tool_call  [a echo {}]",
            "3 system/interruption_marker Turn failed: x",
        ]
    );
}

#[tokio::test]
async fn a_large_batch_keeps_order_and_bytes() {
    let (_dir, store, _, s) = durable_session("batch").await;
    store.turn_begin(s.row, "t1", "go").await.unwrap();
    let parts: Vec<String> = (0..300).map(|n| format!("<{n}\n\"é\\\u{7}>")).collect();
    let batch: Vec<_> = parts.iter().map(|p| text(p)).collect();
    store.checkpoint_append(s.row, &batch).await.unwrap();
    store
        .checkpoint_append(s.row, &[result("r", "\u{0}")])
        .await
        .unwrap();
    // The prompt, the run of 300 texts as one event, the result.
    assert_eq!(payloads(&store, s.row).await.len(), 3);
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].message.content, parts.concat());
    assert_eq!(rows[2].message.content, "\u{0}");
}

#[tokio::test]
async fn tool_outputs_are_bounded_at_16_kib_when_stored() {
    let (_dir, store, _, s) = durable_session("bound").await;
    store.turn_begin(s.row, "t1", "go").await.unwrap();
    // 16,383 ASCII bytes then a 3-byte char straddling the limit.
    let long = format!("{}€tail", "a".repeat(TOOL_OUTPUT_MAX - 1));
    let exact = "b".repeat(TOOL_OUTPUT_MAX);
    store
        .checkpoint_append(s.row, &[result("a", &long), result("b", &exact)])
        .await
        .unwrap();
    let stored = payloads(&store, s.row).await;
    assert!(
        stored[1].ends_with(r#"a…[truncated]"}"#),
        "{}",
        &stored[1][stored[1].len() - 40..]
    );
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(
        rows[1].message.content,
        format!("{}…[truncated]", "a".repeat(TOOL_OUTPUT_MAX - 1))
    );
    assert_eq!(rows[2].message.content, exact, "exactly 16 KiB is not cut");
}

#[tokio::test]
async fn misuse_is_refused_without_writing() {
    let (_dir, store, _, s) = durable_session("misuse").await;
    assert_eq!(
        store.checkpoint_append(s.row, &[text("x")]).await,
        Err(StoreError::State("no open turn checkpoint"))
    );
    assert_eq!(
        store.turn_finalize(s.row, None).await.unwrap_err(),
        StoreError::State("no open turn checkpoint")
    );
    assert_eq!(
        store.turn_begin(999, "t", "p").await,
        Err(StoreError::NotFound("acp session row"))
    );
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    refused_unchanged(&store, store.turn_begin(s.row, "t2", "p"), ALREADY_OPEN).await;
    store.turn_finalize(s.row, None).await.unwrap();
    store.durable_kill(s.row, true).await.unwrap();
    assert_eq!(
        store.turn_begin(s.row, "t3", "p").await,
        Err(StoreError::State("session is killed"))
    );
}

#[tokio::test]
async fn turn_begin_and_finalize_move_last_activity() {
    let (_dir, store, _, s) = durable_session("activity").await;
    let old = "2000-01-01T00:00:00Z";
    let set_old = || {
        sqlx::query("UPDATE acp_sessions SET last_activity = ?")
            .bind(old)
            .execute(&store.pool)
    };
    let activity = || async { durable_record(&store, "s").await.last_activity };
    set_old().await.unwrap();
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    assert!(activity().await.as_str() > old);
    set_old().await.unwrap();
    store.checkpoint_append(s.row, &[text("x")]).await.unwrap();
    assert_eq!(
        activity().await,
        old,
        "appends do not write the session row"
    );
    store.turn_finalize(s.row, None).await.unwrap();
    assert!(activity().await.as_str() > old);
}

#[tokio::test]
async fn checkpoint_fault_points_fail_and_change_nothing() {
    let (_dir, store, faults, s) = durable_session("faults").await;

    faults.set(&[FaultPoint::TurnBegin]);
    refused_unchanged(
        &store,
        store.turn_begin(s.row, "t1", "p"),
        StoreError::Injected(FaultPoint::TurnBegin),
    )
    .await;

    faults.set(&[]);
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    store.checkpoint_append(s.row, &[text("a")]).await.unwrap();

    faults.set(&[FaultPoint::CheckpointAppend]);
    refused_unchanged(
        &store,
        store.checkpoint_append(s.row, &[text("b"), text("c")]),
        StoreError::Injected(FaultPoint::CheckpointAppend),
    )
    .await;

    faults.set(&[FaultPoint::TurnFinalize]);
    refused_unchanged(
        &store,
        store.turn_finalize(s.row, None),
        StoreError::Injected(FaultPoint::TurnFinalize),
    )
    .await;
    assert!(store.has_checkpoint(s.row).await.unwrap());

    faults.set(&[]);
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(lines(&rows), ["1 user/message p", "2 assistant/message a"]);
}

/// Stores raw payloads behind the open checkpoint, as another writer (or a
/// damaged file) might have left them.
async fn insert_raw(store: &Store, row: i64, payloads: &[&[u8]]) {
    for p in payloads {
        let q = match std::str::from_utf8(p) {
            Ok(t) => sqlx::query(
                "INSERT INTO acp_checkpoint_events (session_row, payload) VALUES (?, ?)",
            )
            .bind(row)
            .bind(t.to_owned()),
            Err(_) => sqlx::query(
                "INSERT INTO acp_checkpoint_events (session_row, payload) VALUES (?, ?)",
            )
            .bind(row)
            .bind(p.to_vec()),
        };
        q.execute(&store.pool).await.unwrap();
    }
}

#[tokio::test]
async fn the_fold_skips_unreadable_payloads_and_keeps_text_runs() {
    let (_dir, store, _, s) = durable_session("fold-raw").await;
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    insert_raw(
        &store,
        s.row,
        &[
            br#"{"kind":"text","text":"a"}"#,
            // Unreadable: skipped, and the run of text goes on.
            b"not json",
            br#"{"kind":"text","text":7}"#,
            b"\xff\xfe",
            br#"{"kind":"text","text":"b:12:"}"#,
            // Escaped, extra fields, other key order: the parser's reading.
            br#"{"text":"c\"\\\u00e9\n","kind":"text","x":1}"#,
            br#"{"kind":"text"}"#,
            br#"{"kind":"text","text":"d"} "#,
            // An unknown kind ends the run but writes nothing.
            br#"{"kind":"later","text":"z"}"#,
            br#"{"kind":"text","text":"e"}"#,
            br#"{"kind":"tool_result","id":"r","name":"n"}"#,
            br#"{"kind":"text","text":""}"#,
        ],
    )
    .await;
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(
        lines(&rows),
        [
            "1 user/message p",
            "2 assistant/message ab:12:c\"\\é\nd",
            "3 assistant/message e",
            "4 tool/tool_result  [r n]",
        ]
    );
}

#[tokio::test]
async fn the_fold_reads_long_checkpoints_in_order() {
    let (_dir, store, _, s) = durable_session("fold-long").await;
    let other = store.durable_create("o", "echo", "me", "/w").await.unwrap();
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    store.turn_begin(other.row, "t1", "q").await.unwrap();
    // Texts and tool calls alternate, so no two events merge (texts merge
    // only when consecutive in a batch): 9,000 stored events, more than two
    // read-back pages (READ_CHUNK), interleaved with another session's.
    let mut want = Vec::new();
    for b in 0..9 {
        let mut batch = Vec::new();
        for n in 0..500 {
            let t = format!("{b}:{n};");
            let id = format!("c{b}_{n}");
            batch.push(text(&t));
            batch.push(call(&id, "{}"));
            want.push((t, id));
        }
        store.checkpoint_append(s.row, &batch).await.unwrap();
        store
            .checkpoint_append(other.row, &[text("o")])
            .await
            .unwrap();
    }
    assert!(want.len() * 2 > 2 * READ_CHUNK as usize);
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(rows.len(), 1 + 2 * want.len());
    for (k, (text, id)) in want.iter().enumerate() {
        assert_eq!(&rows[1 + 2 * k].message.content, text, "row {}", 1 + 2 * k);
        assert_eq!(
            rows[2 + 2 * k].message.tool_call_id.as_deref(),
            Some(id.as_str())
        );
    }
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=rows.len() as i64).collect::<Vec<_>>());
    let other_rows = store.turn_finalize(other.row, None).await.unwrap();
    assert_eq!(
        lines(&other_rows),
        ["1 user/message q", "2 assistant/message ooooooooo"]
    );
}

#[tokio::test]
async fn a_refused_begin_writes_nothing_even_with_the_open_turn_id() {
    let (_dir, store, _, s) = durable_session("begin-same-id").await;
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    refused_unchanged(&store, store.turn_begin(s.row, "t1", "again"), ALREADY_OPEN).await;
    store.durable_kill(s.row, false).await.unwrap();
    refused_unchanged(
        &store,
        store.turn_begin(s.row, "t2", "p"),
        StoreError::State("session is killed"),
    )
    .await;
}
