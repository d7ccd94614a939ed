use super::super::checkpoint::tests::{call, lines, result, text};
use super::super::projection::tests::shape;
use super::super::testing::{dump, durable_session, refused_unchanged, store};
use super::*;
use crate::agent::{Kind, Role};

#[tokio::test]
async fn recovery_folds_once_with_one_marker() {
    let (_dir, store, _, s) = durable_session("recover").await;
    assert!(!store.recover(s.row).await.unwrap(), "nothing to recover");
    assert!(store.durable_transcript(s.row).await.unwrap().is_empty());

    store.turn_begin(s.row, "t1", "hi").await.unwrap();
    store
        .checkpoint_append(s.row, &[text("a"), text("b"), call("c", "{}")])
        .await
        .unwrap();
    assert!(store.recover(s.row).await.unwrap());
    for _ in 0..3 {
        assert!(!store.recover(s.row).await.unwrap());
    }
    let want = [
        "1 user/message hi",
        "2 assistant/message ab",
        "3 assistant/tool_call  [c echo {}]",
        "4 system/interruption_marker Turn interrupted",
    ];
    assert_eq!(lines(&store.durable_transcript(s.row).await.unwrap()), want);
    assert!(!store.has_checkpoint(s.row).await.unwrap());

    // The unpaired call and the marker never reach the context.
    assert_eq!(
        shape(&store.rebuild_context(s.row).await.unwrap()),
        ["user/message:hi", "assistant/message:ab"]
    );
    // A new turn after recovery continues the seqs.
    store.turn_begin(s.row, "t2", "next").await.unwrap();
    let rows = store.turn_finalize(s.row, None).await.unwrap();
    assert_eq!(lines(&rows), ["5 user/message next"]);
}

#[tokio::test]
async fn recovery_leaves_killed_and_foreign_rows_alone() {
    let (_dir, store, _) = store("recover-skip").await;
    let foreign = store.durable_create("f", "echo", "me", "/w").await.unwrap();
    store.turn_begin(foreign.row, "t1", "hi").await.unwrap();
    sqlx::query("UPDATE acp_sessions SET interaction_surface = 'acp_stdio' WHERE id = ?")
        .bind(foreign.row)
        .execute(&store.pool)
        .await
        .unwrap();
    let killed = store.durable_create("k", "echo", "me", "/w").await.unwrap();
    store.turn_begin(killed.row, "t1", "hi").await.unwrap();
    store.durable_kill(killed.row, false).await.unwrap();

    let before = dump(&store).await;
    assert!(!store.recover(foreign.row).await.unwrap());
    assert!(!store.recover(killed.row).await.unwrap());
    assert_eq!(dump(&store).await, before);
    assert!(store.has_checkpoint(foreign.row).await.unwrap());
    assert_eq!(
        store.recover(12345).await,
        Err(StoreError::NotFound("acp session row"))
    );
}

#[tokio::test]
async fn recovery_fault_changes_nothing() {
    let (_dir, store, faults, s) = durable_session("recover-fault").await;
    store.turn_begin(s.row, "t1", "hi").await.unwrap();
    faults.set(&[FaultPoint::Recovery]);
    refused_unchanged(
        &store,
        store.recover(s.row),
        StoreError::Injected(FaultPoint::Recovery),
    )
    .await;
    faults.set(&[]);
    assert!(store.recover(s.row).await.unwrap());
}

fn summary(n: usize) -> ContextMessage {
    ContextMessage {
        kind: Kind::Summary,
        ..ContextMessage::text(Role::User, format!("[compacted {n} earlier messages]"))
    }
}

async fn turn(store: &Store, row: i64, prompt: &str, reply: &str) {
    store.turn_begin(row, "t", prompt).await.unwrap();
    store.checkpoint_append(row, &[text(reply)]).await.unwrap();
    store.turn_finalize(row, None).await.unwrap();
}

#[tokio::test]
async fn rebuild_uses_the_latest_snapshot_then_later_rows() {
    let (_dir, store, faults, s) = durable_session("rebuild").await;
    turn(&store, s.row, "p1", "r1").await;
    turn(&store, s.row, "p2", "r2").await;
    // Legacy replay: no snapshot yet.
    assert_eq!(
        shape(&store.rebuild_context(s.row).await.unwrap()),
        [
            "user/message:p1",
            "assistant/message:r1",
            "user/message:p2",
            "assistant/message:r2"
        ]
    );

    let boundary = store.durable_last_seq(s.row).await.unwrap();
    assert_eq!(boundary, 4);
    let kept = vec![summary(3), ContextMessage::text(Role::Assistant, "r2")];
    store.write_snapshot(s.row, boundary, &kept).await.unwrap();
    turn(&store, s.row, "p3", "r3").await;
    store.turn_begin(s.row, "t", "p4").await.unwrap();
    store
        .checkpoint_append(s.row, &[call("x", "{\"a\": 1}"), result("x", "out")])
        .await
        .unwrap();
    store.recover(s.row).await.unwrap();
    let ctx = store.rebuild_context(s.row).await.unwrap();
    assert_eq!(
        shape(&ctx),
        [
            "user/summary:[compacted 3 earlier messages]",
            "assistant/message:r2",
            "user/message:p3",
            "assistant/message:r3",
            "user/message:p4",
            "assistant/tool_call:#x",
            "tool/tool_result:out#x",
        ]
    );
    assert_eq!(ctx[5].tool_input.as_ref().unwrap().get(), r#"{"a":1}"#);

    // A snapshot write fault writes nothing; the old snapshot still rules.
    faults.set(&[FaultPoint::SnapshotWrite]);
    refused_unchanged(
        &store,
        store.write_snapshot(s.row, 10, &[]),
        StoreError::Injected(FaultPoint::SnapshotWrite),
    )
    .await;
    assert_eq!(store.rebuild_context(s.row).await.unwrap(), ctx);
    faults.set(&[]);

    // The highest id wins, even with a lower boundary.
    store.write_snapshot(s.row, 2, &[summary(2)]).await.unwrap();
    assert_eq!(
        shape(&store.rebuild_context(s.row).await.unwrap())[..3],
        [
            "user/summary:[compacted 2 earlier messages]",
            "user/message:p2",
            "assistant/message:r2",
        ]
    );
}

#[tokio::test]
async fn an_empty_snapshot_is_authoritative() {
    let (_dir, store, _, s) = durable_session("rebuild-empty").await;
    turn(&store, s.row, "p1", "r1").await;
    store.write_snapshot(s.row, 2, &[]).await.unwrap();
    let json: String = sqlx::query_scalar("SELECT messages_json FROM acp_context_snapshots")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(json, "[]");
    assert!(store.rebuild_context(s.row).await.unwrap().is_empty());
    turn(&store, s.row, "p2", "r2").await;
    assert_eq!(
        shape(&store.rebuild_context(s.row).await.unwrap()),
        ["user/message:p2", "assistant/message:r2"]
    );
}

#[tokio::test]
async fn a_corrupt_snapshot_is_an_error_not_a_fallback() {
    let (_dir, store, _, s) = durable_session("rebuild-corrupt").await;
    sqlx::query(
        "INSERT INTO acp_context_snapshots (session_row, boundary_seq, messages_json, created_at) \
         VALUES (?, 0, 'not json', '')",
    )
    .bind(s.row)
    .execute(&store.pool)
    .await
    .unwrap();
    assert!(matches!(
        store.rebuild_context(s.row).await,
        Err(StoreError::Corrupt(_))
    ));
}
