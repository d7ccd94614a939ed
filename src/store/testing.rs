//! Test helpers: a store in a self-removing temporary directory.

use std::sync::Arc;

use crate::faults::Faults;

use super::{Store, StoreError};

/// The endpoint tests' self-removing temporary directory serves here too.
pub(crate) use crate::endpoint::test_support::TempDir;

/// A store in a fresh directory, with its fault switches.
pub(crate) async fn store(tag: &str) -> (TempDir, Store, Arc<Faults>) {
    let dir = TempDir::new(tag);
    let faults = Arc::new(Faults::default());
    let store = Store::open(dir.path(), faults.clone()).await.unwrap();
    (dir, store, faults)
}

/// Backdates a session row of `table` (`acp_sessions` or `chat_sessions`):
/// the list order tests set both times by hand.
pub(crate) async fn set_times(store: &Store, table: &str, id: &str, created: &str, activity: &str) {
    sqlx::query(&format!(
        "UPDATE {table} SET created_at = ?, last_activity = ? WHERE session_id = ?"
    ))
    .bind(created)
    .bind(activity)
    .bind(id)
    .execute(&store.pool)
    .await
    .unwrap();
}

/// Every row of every table, as text: to prove an operation changed nothing.
pub(crate) async fn dump(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for table in [
        "acp_sessions",
        "acp_transcript",
        "acp_context_snapshots",
        "acp_turn_checkpoints",
        "acp_checkpoint_events",
        "chat_sessions",
        "chat_messages",
    ] {
        let columns: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pragma_table_info(?) ORDER BY cid")
                .bind(table)
                .fetch_all(&store.pool)
                .await
                .unwrap();
        let rows: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT json_array({}) FROM {table} ORDER BY rowid",
            columns.join(", ")
        ))
        .fetch_all(&store.pool)
        .await
        .unwrap_or_else(|e| panic!("{table}: {e}"));
        out.extend(rows.into_iter().map(|r| format!("{table} {r}")));
    }
    out
}

/// The stored record of durable session `id`, which the test created.
pub(crate) async fn durable_record(store: &Store, id: &str) -> super::SessionRecord {
    match store.durable_get(id).await {
        Ok(Some(row)) => row.record,
        other => panic!("ACP session {id}: {other:?}"),
    }
}

/// A store in a fresh directory holding one durable session, `s` (agent `echo`,
/// owner `me`, workspace `/w`): the fixture most store tests start from.
pub(crate) async fn durable_session(tag: &str) -> (TempDir, Store, Arc<Faults>, super::DurableRow) {
    let (dir, store, faults) = store(tag).await;
    let s = store.durable_create("s", "echo", "me", "/w").await.unwrap();
    (dir, store, faults, s)
}

/// One whole durable turn on `row`: begin with `prompt`, append `events`, finalize.
pub(crate) async fn durable_turn(
    store: &Store,
    row: i64,
    turn_id: &str,
    prompt: &str,
    events: &[super::CheckpointEvent],
) {
    store.turn_begin(row, turn_id, prompt).await.unwrap();
    store.checkpoint_append(row, events).await.unwrap();
    store.turn_finalize(row, None).await.unwrap();
}

/// Asserts that `op` fails with `want` and leaves every row as it was
/// (`op` runs only when awaited here, after the first dump).
pub(crate) async fn refused_unchanged<T: std::fmt::Debug>(
    store: &Store,
    op: impl std::future::Future<Output = Result<T, StoreError>>,
    want: StoreError,
) {
    let before = dump(store).await;
    match op.await {
        Err(e) => assert_eq!(e, want),
        Ok(v) => panic!("expected {want:?}, got Ok({v:?})"),
    }
    assert_eq!(
        dump(store).await,
        before,
        "a refused call changed the store"
    );
}
