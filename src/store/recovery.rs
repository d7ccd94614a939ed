//! Checkpoint recovery and context rebuild (§9.6).
//!
//! Recovery folds a leftover checkpoint into the transcript with a
//! `Turn interrupted` marker and deletes it, all in one `BEGIN IMMEDIATE`
//! transaction, so its progress lands exactly once however often recovery
//! runs. Rebuild reads the latest snapshot and the rows after its boundary
//! (or, with no snapshot, every row) in one read transaction.

use crate::agent::ContextMessage;
use crate::faults::FaultPoint;

use super::fold::{fold_checkpoint, Touch};
use super::projection::{provider_safe, transcript_after};
use super::snapshots::latest_snapshot;
use super::{Store, StoreError, RPC_SURFACE};

/// The marker recovery appends after the folded progress.
pub const INTERRUPTED_MARKER: &str = "Turn interrupted";

impl Store {
    /// Recovers a leftover checkpoint (fault point `recovery`). `true` when
    /// one was folded. A tombstoned row or a row of another surface (§9.7)
    /// is never modified: `false`.
    pub async fn recover(&self, row: i64) -> Result<bool, StoreError> {
        self.check(FaultPoint::Recovery)?;
        let mut tx = self.write_tx().await?;
        let state: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT interaction_surface, killed_at FROM acp_sessions WHERE id = ?")
                .bind(row)
                .fetch_optional(&mut *tx)
                .await?;
        match state {
            None => return Err(StoreError::NotFound("acp session row")),
            Some((surface, killed)) if surface != RPC_SURFACE || killed.is_some() => {
                return Ok(false)
            }
            Some(_) => {}
        }
        let folded = fold_checkpoint(&mut tx, row, Some(INTERRUPTED_MARKER), Touch::No).await?;
        if folded.is_none() {
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Rebuilds the retained context from storage: the latest snapshot's
    /// messages (`[]` included: never a fallback to full replay) followed by
    /// the provider-safe projection of the rows after its boundary; with no
    /// snapshot, the projection of every row.
    pub async fn rebuild_context(&self, row: i64) -> Result<Vec<ContextMessage>, StoreError> {
        let mut tx = self.read_tx().await?;
        let snapshot = latest_snapshot(&mut tx, row).await?;
        let (mut context, after) = match snapshot {
            Some(s) => (s.messages, s.boundary_seq),
            None => (Vec::new(), 0),
        };
        let rows = transcript_after(&mut tx, row, after).await?;
        tx.commit().await?;
        context.extend(provider_safe(rows));
        Ok(context)
    }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
