use super::super::projection::tests::shape;
use super::super::testing::{dump, durable_record, set_times, store};
use super::*;

#[tokio::test]
async fn create_append_and_seed_history() {
    let (_dir, store, _) = store("chat").await;
    assert_eq!(store.chat_get("c").await.unwrap(), None);
    let created = store.chat_create("c", "echo", "alice", "/w").await.unwrap();
    assert_eq!(store.chat_get("c").await.unwrap().as_ref(), Some(&created));
    assert!(matches!(
        store.chat_create("c", "echo", "bob", "/w").await,
        Err(StoreError::Sqlite { .. })
    ));
    assert_eq!(store.chat_max_seq("c").await.unwrap(), 0);
    store.chat_set_workspace("c", "/elsewhere").await.unwrap();
    assert_eq!(
        store.chat_get("c").await.unwrap().unwrap().workspace_dir,
        "/elsewhere"
    );
    assert_eq!(
        store.chat_set_workspace("none", "/").await,
        Err(StoreError::NotFound("chat session"))
    );

    store
        .chat_append_turn("c", "hi", Some("hello"))
        .await
        .unwrap();
    store
        .chat_append_turn("c", "cancelled early", Some(""))
        .await
        .unwrap();
    store.chat_append_turn("c", "failed", None).await.unwrap();
    store
        .chat_append_turn("c", "again", Some("partial"))
        .await
        .unwrap();
    assert_eq!(store.chat_max_seq("c").await.unwrap(), 6);
    assert_eq!(store.chat_get("c").await.unwrap().unwrap().message_count, 6);
    let rows: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT seq, role, content FROM chat_messages ORDER BY seq")
            .fetch_all(&store.pool)
            .await
            .unwrap();
    let rows: Vec<String> = rows
        .into_iter()
        .map(|(seq, role, content)| format!("{seq} {role} {content}"))
        .collect();
    assert_eq!(
        rows,
        [
            "1 user hi",
            "2 assistant hello",
            "3 user cancelled early",
            "4 user failed",
            "5 user again",
            "6 assistant partial",
        ]
    );
    assert_eq!(
        shape(&store.chat_history("c").await.unwrap()),
        [
            "user/message:hi",
            "assistant/message:hello",
            "user/message:cancelled early",
            "user/message:failed",
            "user/message:again",
            "assistant/message:partial",
        ]
    );
    assert!(store.chat_history("none").await.unwrap().is_empty());
    assert_eq!(
        store.chat_append_turn("none", "x", None).await,
        Err(StoreError::NotFound("chat session"))
    );
}

#[tokio::test]
async fn append_moves_last_activity() {
    let (_dir, store, _) = store("chat-activity").await;
    store.chat_create("c", "echo", "me", "/w").await.unwrap();
    sqlx::query("UPDATE chat_sessions SET last_activity = '2000-01-01T00:00:00Z'")
        .execute(&store.pool)
        .await
        .unwrap();
    store.chat_append_turn("c", "hi", None).await.unwrap();
    let row = store.chat_get("c").await.unwrap().unwrap();
    assert!(row.last_activity.as_str() > "2000-01-01T00:00:00Z");
}

#[tokio::test]
async fn list_orders_by_activity_then_creation() {
    let (_dir, store, _) = store("chat-list").await;
    for (id, created, activity) in [
        ("a", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("b", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("c", "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z"),
    ] {
        store.chat_create(id, "echo", "me", "/w").await.unwrap();
        set_times(&store, "chat_sessions", id, created, activity).await;
    }
    let ids: Vec<String> = store
        .chat_list(100)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.session_id)
        .collect();
    assert_eq!(ids, ["c", "b", "a"]);
    assert_eq!(store.chat_list(1).await.unwrap().len(), 1);
}

#[tokio::test]
async fn delete_cascades_and_leaves_acp_alone() {
    let (_dir, store, _) = store("chat-delete").await;
    store.chat_create("s", "echo", "me", "/w").await.unwrap();
    store.chat_create("o", "echo", "me", "/w").await.unwrap();
    store.chat_append_turn("s", "p", Some("r")).await.unwrap();
    store.chat_append_turn("o", "p", Some("r")).await.unwrap();
    let acp = store.durable_create("s", "echo", "me", "/w").await.unwrap();
    store.turn_begin(acp.row, "t", "acp prompt").await.unwrap();
    store.turn_finalize(acp.row, None).await.unwrap();

    assert!(store.chat_delete("s").await.unwrap());
    assert_eq!(store.chat_get("s").await.unwrap(), None);
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chat_messages")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(left, 2);
    assert_eq!(durable_record(&store, "s").await.message_count, 1);
    assert!(!store.chat_delete("s").await.unwrap());
}

#[tokio::test]
async fn chat_fault_points_fail_and_change_nothing() {
    let (_dir, store, faults) = store("chat-faults").await;
    store.chat_create("c", "echo", "me", "/w").await.unwrap();
    faults.set(&[FaultPoint::ChatAppend, FaultPoint::ChatDelete]);
    let before = dump(&store).await;
    assert_eq!(
        store.chat_append_turn("c", "hi", Some("r")).await,
        Err(StoreError::Injected(FaultPoint::ChatAppend))
    );
    assert_eq!(
        store.chat_delete("c").await,
        Err(StoreError::Injected(FaultPoint::ChatDelete))
    );
    assert_eq!(dump(&store).await, before);
}
