//! Test helpers: a self-removing temporary directory and a store in it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::faults::Faults;

use super::Store;

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let path = std::env::temp_dir().join(format!(
            "zeroclaw-store-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A store in a fresh directory, with its fault switches.
pub(crate) async fn store(tag: &str) -> (TempDir, Store, Arc<Faults>) {
    let dir = TempDir::new(tag);
    let faults = Arc::new(Faults::default());
    let store = Store::open(dir.path(), faults.clone()).await.unwrap();
    (dir, store, faults)
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
