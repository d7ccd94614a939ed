use super::super::checkpoint::tests::{lines, text};
use super::super::testing::{
    dump, durable_record, durable_session, durable_turn, set_times, store,
};
use super::*;

async fn count(store: &Store, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&store.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn create_get_and_update_rows() {
    let (_dir, store, _) = store("acp-rows").await;
    assert_eq!(store.durable_get("s").await.unwrap(), None);
    let created = store
        .durable_create("s", "echo", "alice", "/w")
        .await
        .unwrap();
    assert_eq!(created.interaction_surface, "rpc");
    assert!(created.surface_supported());
    assert_eq!(created.record.created_at, created.record.last_activity);
    assert_eq!(
        store.durable_get("s").await.unwrap().as_ref(),
        Some(&created)
    );
    assert!(matches!(
        store.durable_create("s", "echo", "bob", "/x").await,
        Err(StoreError::Sqlite { .. })
    ));

    store
        .durable_set_workspace(created.row, "/elsewhere")
        .await
        .unwrap();
    sqlx::query("UPDATE acp_sessions SET last_activity = '2000-01-01T00:00:00Z'")
        .execute(&store.pool)
        .await
        .unwrap();
    store.durable_touch(created.row).await.unwrap();
    let got = store.durable_get("s").await.unwrap().unwrap();
    assert_eq!(got.record.workspace_dir, "/elsewhere");
    assert!(got.record.last_activity.as_str() > "2000-01-01T00:00:00Z");
    assert_eq!(
        store.durable_touch(999).await,
        Err(StoreError::NotFound("acp session row"))
    );
    assert_eq!(
        store.durable_set_workspace(999, "/").await,
        Err(StoreError::NotFound("acp session row"))
    );

    assert_eq!(store.durable_message_count(created.row).await.unwrap(), 0);
    assert_eq!(store.durable_last_seq(created.row).await.unwrap(), 0);
    durable_turn(&store, created.row, "t", "p", &[text("r")]).await;
    assert_eq!(store.durable_message_count(created.row).await.unwrap(), 2);
    assert_eq!(durable_record(&store, "s").await.message_count, 2);
}

#[tokio::test]
async fn list_orders_by_activity_then_creation_and_hides_killed() {
    let (_dir, store, _) = store("acp-list").await;
    for (id, created, activity) in [
        ("a", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("b", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("c", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"),
        ("d", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"),
    ] {
        store.durable_create(id, "echo", "me", "/w").await.unwrap();
        set_times(&store, "acp_sessions", id, created, activity).await;
    }
    let ids = |rows: Vec<DurableRow>| {
        rows.into_iter()
            .map(|r| r.record.session_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.durable_list(false, 100).await.unwrap()),
        ["c", "b", "a", "d"]
    );
    assert_eq!(ids(store.durable_list(false, 2).await.unwrap()), ["c", "b"]);
    let b = store.durable_get("b").await.unwrap().unwrap();
    store.durable_kill(b.row, true).await.unwrap();
    assert_eq!(
        ids(store.durable_list(false, 100).await.unwrap()),
        ["c", "a", "d"]
    );
    let all = store.durable_list(true, 100).await.unwrap();
    assert!(all[1].killed_at.is_some());
    assert_eq!(ids(all), ["c", "b", "a", "d"]);
}

#[tokio::test]
async fn kill_folds_a_leftover_checkpoint_only_when_asked() {
    let (_dir, store, _) = store("acp-kill").await;
    let folded = store.durable_create("f", "echo", "me", "/w").await.unwrap();
    let kept = store.durable_create("k", "echo", "me", "/w").await.unwrap();
    for row in [folded.row, kept.row] {
        store.turn_begin(row, "t", "hi").await.unwrap();
        store
            .checkpoint_append(row, &[text("par"), text("tial")])
            .await
            .unwrap();
    }

    store.durable_kill(folded.row, true).await.unwrap();
    assert_eq!(
        lines(&store.durable_transcript(folded.row).await.unwrap()),
        [
            "1 user/message hi",
            "2 assistant/message partial",
            "3 system/interruption_marker Turn killed",
        ]
    );
    assert!(!store.has_checkpoint(folded.row).await.unwrap());
    let first = store
        .durable_get("f")
        .await
        .unwrap()
        .unwrap()
        .killed_at
        .unwrap();
    sqlx::query("UPDATE acp_sessions SET killed_at = '2000-01-01T00:00:00Z' WHERE id = ?")
        .bind(folded.row)
        .execute(&store.pool)
        .await
        .unwrap();
    store.durable_kill(folded.row, true).await.unwrap();
    assert_eq!(first.len(), 20);
    assert_eq!(
        store
            .durable_get("f")
            .await
            .unwrap()
            .unwrap()
            .killed_at
            .as_deref(),
        Some("2000-01-01T00:00:00Z"),
        "a second kill keeps the first tombstone"
    );
    assert_eq!(store.durable_message_count(folded.row).await.unwrap(), 3);

    store.durable_kill(kept.row, false).await.unwrap();
    assert!(store
        .durable_get("k")
        .await
        .unwrap()
        .unwrap()
        .killed_at
        .is_some());
    assert!(store.durable_transcript(kept.row).await.unwrap().is_empty());
    assert!(store.has_checkpoint(kept.row).await.unwrap());
    assert_eq!(
        store.durable_kill(999, true).await,
        Err(StoreError::NotFound("acp session row"))
    );
}

#[tokio::test]
async fn kill_never_folds_a_foreign_surface() {
    let (_dir, store, _, s) = durable_session("acp-kill-foreign").await;
    store.turn_begin(s.row, "t", "hi").await.unwrap();
    sqlx::query("UPDATE acp_sessions SET interaction_surface = 'acp_stdio'")
        .execute(&store.pool)
        .await
        .unwrap();
    store.durable_kill(s.row, true).await.unwrap();
    assert!(store.has_checkpoint(s.row).await.unwrap());
    assert!(store.durable_transcript(s.row).await.unwrap().is_empty());
    let row = store.durable_get("s").await.unwrap().unwrap();
    assert!(row.killed_at.is_some() && !row.surface_supported());
}

#[tokio::test]
async fn kill_and_delete_faults_change_nothing() {
    let (_dir, store, faults, s) = durable_session("acp-faults").await;
    store.turn_begin(s.row, "t", "hi").await.unwrap();
    faults.set(&[FaultPoint::Tombstone, FaultPoint::AcpDelete]);
    let before = dump(&store).await;
    assert_eq!(
        store.durable_kill(s.row, true).await,
        Err(StoreError::Injected(FaultPoint::Tombstone))
    );
    assert_eq!(
        store.durable_delete("s").await,
        Err(StoreError::Injected(FaultPoint::AcpDelete))
    );
    assert_eq!(dump(&store).await, before);
}

#[tokio::test]
async fn delete_cascades_and_leaves_chat_alone() {
    let (_dir, store, _, s) = durable_session("acp-delete").await;
    let other = store.durable_create("o", "echo", "me", "/w").await.unwrap();
    store.chat_create("s", "echo", "me", "/w").await.unwrap();
    store
        .chat_append_turn("s", "chat hi", Some("chat reply"))
        .await
        .unwrap();
    for row in [s.row, other.row] {
        store.turn_begin(row, "t", "p").await.unwrap();
        store.turn_finalize(row, None).await.unwrap();
        store.write_snapshot(row, 1, &[]).await.unwrap();
        store.turn_begin(row, "t2", "q").await.unwrap();
        store.checkpoint_append(row, &[text("x")]).await.unwrap();
    }

    assert!(store.durable_delete("s").await.unwrap());
    assert_eq!(store.durable_get("s").await.unwrap(), None);
    for (table, left) in [
        ("acp_sessions", 1),
        ("acp_transcript", 1),
        ("acp_context_snapshots", 1),
        ("acp_turn_checkpoints", 1),
        ("acp_checkpoint_events", 2),
        ("chat_sessions", 1),
        ("chat_messages", 2),
    ] {
        assert_eq!(count(&store, table).await, left, "{table}");
    }
    assert!(store.has_checkpoint(other.row).await.unwrap());
    assert_eq!(store.chat_get("s").await.unwrap().unwrap().message_count, 2);
    assert!(!store.durable_delete("s").await.unwrap());
}
