//! Durable session rows (§9.2 `acp_sessions`): create, read, touch, list, and
//! the two terminal operations, kill (tombstone) and delete (§9.9).

use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::faults::FaultPoint;

use super::fold;
use super::projection::{transcript_after, TranscriptRow};
use super::record::{SessionRecord, SessionTable};
use super::{touched, utc_now, Store, StoreError, RPC_SURFACE};

/// One persisted durable session: the record, and what only durable rows have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurableRow {
    /// `acp_sessions.id`: the key every other ACP call takes.
    pub row: i64,
    /// Id, agent, owner, workspace, times, transcript row count.
    pub record: SessionRecord,
    /// Which surface created the row (§9.7).
    pub interaction_surface: String,
    /// The tombstone: `Some` once killed.
    pub killed_at: Option<String>,
}

const SELECT_ROW: &str = "SELECT s.id, s.session_id, s.agent_alias, s.owner_principal_id, \
     s.workspace_dir, s.interaction_surface, s.created_at, s.last_activity, s.killed_at, \
     (SELECT COUNT(*) FROM acp_transcript t WHERE t.session_row = s.id) AS message_count \
     FROM acp_sessions s";

impl DurableRow {
    fn from_sql(r: &SqliteRow) -> Result<Self, StoreError> {
        Ok(DurableRow {
            row: r.try_get("id")?,
            record: SessionRecord::from_sql(r)?,
            interaction_surface: r.try_get("interaction_surface")?,
            killed_at: r.try_get("killed_at")?,
        })
    }

    /// Whether this daemon may recover, finalize or mark the row (§9.7).
    pub fn surface_supported(&self) -> bool {
        self.interaction_surface == RPC_SURFACE
    }
}

impl Store {
    /// The row for `session_id`, if any.
    pub async fn durable_get(&self, session_id: &str) -> Result<Option<DurableRow>, StoreError> {
        let r = sqlx::query(&format!("{SELECT_ROW} WHERE s.session_id = ?"))
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await?;
        r.as_ref().map(DurableRow::from_sql).transpose()
    }

    /// Creates a row with `interaction_surface = 'rpc'`; fails if the id
    /// already has a row.
    pub async fn durable_create(
        &self,
        session_id: &str,
        agent: &str,
        owner: &str,
        workspace_dir: &str,
    ) -> Result<DurableRow, StoreError> {
        let (row, record) = self
            .insert_record(
                SessionTable::Durable,
                session_id,
                agent,
                owner,
                workspace_dir,
                Some(RPC_SURFACE),
            )
            .await?;
        Ok(DurableRow {
            row,
            record,
            interaction_surface: RPC_SURFACE.to_owned(),
            killed_at: None,
        })
    }

    /// Replaces the stored working directory (a `cwd` given on resume).
    pub async fn durable_set_workspace(
        &self,
        row: i64,
        workspace_dir: &str,
    ) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE acp_sessions SET workspace_dir = ? WHERE id = ?")
            .bind(workspace_dir)
            .bind(row)
            .execute(&self.pool)
            .await?;
        touched(done.rows_affected(), NO_ROW)
    }

    /// `last_activity = now`.
    pub async fn durable_touch(&self, row: i64) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE acp_sessions SET last_activity = ? WHERE id = ?")
            .bind(utc_now())
            .bind(row)
            .execute(&self.pool)
            .await?;
        touched(done.rows_affected(), NO_ROW)
    }

    /// The number of transcript rows.
    pub async fn durable_message_count(&self, row: i64) -> Result<u64, StoreError> {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM acp_transcript WHERE session_row = ?")
                .bind(row)
                .fetch_one(&self.pool)
                .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The highest transcript `seq` (0 if none): a compaction's boundary.
    pub async fn durable_last_seq(&self, row: i64) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) FROM acp_transcript WHERE session_row = ?",
        )
        .bind(row)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Every transcript row, in order.
    pub async fn durable_transcript(&self, row: i64) -> Result<Vec<TranscriptRow>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        transcript_after(&mut conn, row, 0).await
    }

    /// Tombstones the row (fault point `tombstone`), keeping the first
    /// `killed_at` if it was already killed. When `fold_checkpoint` is set,
    /// the row's surface is supported (§9.7) and a checkpoint is left, the
    /// same transaction folds it and appends the marker `Turn killed`.
    pub async fn durable_kill(&self, row: i64, fold_checkpoint: bool) -> Result<(), StoreError> {
        self.check(FaultPoint::Tombstone)?;
        let mut tx = self.write_tx().await?;
        let surface: Option<String> =
            sqlx::query_scalar("SELECT interaction_surface FROM acp_sessions WHERE id = ?")
                .bind(row)
                .fetch_optional(&mut *tx)
                .await?;
        let surface = surface.ok_or(StoreError::NotFound("acp session row"))?;
        if fold_checkpoint && surface == RPC_SURFACE {
            fold::fold_checkpoint(&mut tx, row, Some("Turn killed"), fold::Touch::No).await?;
        }
        sqlx::query("UPDATE acp_sessions SET killed_at = COALESCE(killed_at, ?) WHERE id = ?")
            .bind(utc_now())
            .bind(row)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes the row with its transcript, snapshots and checkpoint (fault
    /// point `acp_delete`). `false` when there was no row. Chat storage is
    /// never touched.
    pub async fn durable_delete(&self, session_id: &str) -> Result<bool, StoreError> {
        self.delete_record(SessionTable::Durable, session_id, FaultPoint::AcpDelete)
            .await
    }

    /// Up to `limit` rows, most recent activity first, then most recently
    /// created (then newest row, so ties have one order). Killed rows only
    /// when asked.
    pub async fn durable_list(
        &self,
        include_killed: bool,
        limit: u32,
    ) -> Result<Vec<DurableRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "{SELECT_ROW} WHERE (? OR s.killed_at IS NULL) \
             ORDER BY s.last_activity DESC, s.created_at DESC, s.id DESC LIMIT ?"
        ))
        .bind(include_killed)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(DurableRow::from_sql).collect()
    }
}

/// What a write to a row that is not there is.
const NO_ROW: StoreError = StoreError::NotFound("acp session row");

#[cfg(test)]
#[path = "durable_tests.rs"]
mod tests;
