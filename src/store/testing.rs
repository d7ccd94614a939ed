//! Test helpers: a store in a self-removing temporary directory.

use std::sync::Arc;

use crate::faults::Faults;

use super::Store;

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
