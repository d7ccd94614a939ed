//! Retained-context snapshots (§9.4, §9.5): the only persisted form of the
//! model context. Rows are append-only; the one with the highest `id` is the
//! authoritative one, and `'[]'` is an explicit empty context.

use sqlx::SqliteConnection;

use crate::agent::ContextMessage;
use crate::faults::FaultPoint;

use super::{utc_now, Store, StoreError};

/// The latest snapshot of a session.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ContextSnapshot {
    /// The last transcript seq it covers.
    pub(super) boundary_seq: i64,
    /// Its messages.
    pub(super) messages: Vec<ContextMessage>,
}

impl Store {
    /// Writes a snapshot of the retained context covering the transcript up
    /// to `boundary_seq` (fault point `snapshot_write`), in one transaction.
    /// The caller must not pass the system prompt, injected memory or
    /// thoughts (§9.4): only the context messages themselves are stored.
    pub async fn write_snapshot(
        &self,
        row: i64,
        boundary_seq: i64,
        messages: &[ContextMessage],
    ) -> Result<(), StoreError> {
        self.check(FaultPoint::SnapshotWrite)?;
        let json = serde_json::to_string(messages)
            .map_err(|e| StoreError::Corrupt(format!("snapshot messages: {e}")))?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO acp_context_snapshots (session_row, boundary_seq, messages_json, created_at) \
             VALUES (?, ?, ?, ?)",
        )
        .bind(row)
        .bind(boundary_seq)
        .bind(json)
        .bind(utc_now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// The session's latest snapshot, if it has any.
pub(super) async fn latest_snapshot(
    conn: &mut SqliteConnection,
    row: i64,
) -> Result<Option<ContextSnapshot>, StoreError> {
    let found: Option<(i64, String)> = sqlx::query_as(
        "SELECT boundary_seq, messages_json FROM acp_context_snapshots \
         WHERE session_row = ? ORDER BY id DESC LIMIT 1",
    )
    .bind(row)
    .fetch_optional(conn)
    .await?;
    let Some((boundary_seq, json)) = found else {
        return Ok(None);
    };
    let messages = serde_json::from_str(&json)
        .map_err(|e| StoreError::Corrupt(format!("snapshot {row}/{boundary_seq}: {e}")))?;
    Ok(Some(ContextSnapshot {
        boundary_seq,
        messages,
    }))
}
