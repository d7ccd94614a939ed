//! The Chat history store (§9.8): `chat_sessions` and `chat_messages`.
//!
//! Chat sessions have no checkpoints and no snapshots: a finished turn
//! appends its prompt and (non-empty) reply in one transaction. Nothing here
//! reads or writes a durable table, and the durable side never touches these.

use crate::agent::ContextMessage;
use crate::faults::FaultPoint;

use super::projection::{provider_safe, TranscriptRow};
use super::record::{SessionRecord, SessionTable};
use super::{touched, utc_now, Store, StoreError};

/// What a write to a Chat record that is not there is.
const NO_SESSION: StoreError = StoreError::NotFound("chat session");

/// One persisted Chat session: the record alone (Chat rows have no key of
/// their own, no surface and no tombstone).
pub type ChatRow = SessionRecord;

const SELECT_ROW: &str = "SELECT c.session_id, c.agent_alias, c.owner_principal_id, \
     c.workspace_dir, c.created_at, c.last_activity, \
     (SELECT COUNT(*) FROM chat_messages m WHERE m.session_id = c.session_id) AS message_count \
     FROM chat_sessions c";

impl Store {
    /// The Chat record for `session_id`, if any.
    pub async fn chat_get(&self, session_id: &str) -> Result<Option<ChatRow>, StoreError> {
        let r = sqlx::query(&format!("{SELECT_ROW} WHERE c.session_id = ?"))
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await?;
        r.as_ref().map(SessionRecord::from_sql).transpose()
    }

    /// Creates the Chat record (at `session/new`, before any turn); fails if
    /// the id already has one.
    pub async fn chat_create(
        &self,
        session_id: &str,
        agent: &str,
        owner: &str,
        workspace_dir: &str,
    ) -> Result<ChatRow, StoreError> {
        let (_, record) = self
            .insert_record(
                SessionTable::Chat,
                session_id,
                agent,
                owner,
                workspace_dir,
                None,
            )
            .await?;
        Ok(record)
    }

    /// Replaces the stored working directory (a `cwd` given on resume).
    pub async fn chat_set_workspace(
        &self,
        session_id: &str,
        workspace_dir: &str,
    ) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE chat_sessions SET workspace_dir = ? WHERE session_id = ?")
            .bind(workspace_dir)
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        touched(done.rows_affected(), NO_SESSION)
    }

    /// Appends a finished turn (fault point `chat_append`) in one
    /// transaction: the prompt, then the reply when it is non-empty; moves
    /// `last_activity` to now.
    pub async fn chat_append_turn(
        &self,
        session_id: &str,
        prompt: &str,
        reply: Option<&str>,
    ) -> Result<(), StoreError> {
        self.check(FaultPoint::ChatAppend)?;
        let now = utc_now();
        let mut tx = self.write_tx().await?;
        let done = sqlx::query("UPDATE chat_sessions SET last_activity = ? WHERE session_id = ?")
            .bind(&now)
            .bind(session_id)
            .execute(&mut *tx)
            .await?;
        touched(done.rows_affected(), NO_SESSION)?;
        let last: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) FROM chat_messages WHERE session_id = ?",
        )
        .bind(session_id)
        .fetch_one(&mut *tx)
        .await?;
        let reply = reply.filter(|r| !r.is_empty());
        let turn = std::iter::once(("user", prompt)).chain(reply.map(|r| ("assistant", r)));
        for (seq, (role, content)) in (last + 1..).zip(turn) {
            sqlx::query(
                "INSERT INTO chat_messages (session_id, seq, role, content, created_at) \
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind(session_id)
            .bind(seq)
            .bind(role)
            .bind(content)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The provider-safe projection of the history: what seeds a resumed
    /// Chat session's context.
    pub async fn chat_history(&self, session_id: &str) -> Result<Vec<ContextMessage>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, role, 'message' AS kind, content, NULL AS tool_call_id, \
             NULL AS tool_name, NULL AS tool_input \
             FROM chat_messages WHERE session_id = ? ORDER BY seq",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        let rows = rows
            .iter()
            .map(TranscriptRow::from_sql)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(provider_safe(rows))
    }

    /// The highest history `seq` (0 if none): a Chat compaction's boundary.
    pub async fn chat_max_seq(&self, session_id: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) FROM chat_messages WHERE session_id = ?",
        )
        .bind(session_id)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Deletes the Chat record and its history (fault point `chat_delete`).
    /// `false` when there was none. ACP storage is never touched.
    pub async fn chat_delete(&self, session_id: &str) -> Result<bool, StoreError> {
        self.delete_record(SessionTable::Chat, session_id, FaultPoint::ChatDelete)
            .await
    }

    /// Up to `limit` Chat records, most recent activity first, then most
    /// recently created.
    pub async fn chat_list(&self, limit: u32) -> Result<Vec<ChatRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "{SELECT_ROW} ORDER BY c.last_activity DESC, c.created_at DESC, c.rowid DESC LIMIT ?"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(SessionRecord::from_sql).collect()
    }
}

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;
