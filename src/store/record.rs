//! What every persisted session has, ACP or Chat (§9.2, §9.8): its id,
//! agent, owner, working directory, times and row count. Both session
//! queries select these columns under the same names, so one reader serves
//! both; a durable row adds its key, surface and tombstone around it.

use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::faults::FaultPoint;

use super::{utc_now, Store, StoreError};

/// The table of one session kind's records.
#[derive(Debug, Clone, Copy)]
pub(super) enum SessionTable {
    Chat,
    Durable,
}

impl SessionTable {
    fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat_sessions",
            Self::Durable => "acp_sessions",
        }
    }
}

/// One persisted session, with its transcript (ACP) or history (Chat) row count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The client-visible session id.
    pub session_id: String,
    /// The agent.
    pub agent_alias: String,
    /// The owner.
    pub owner_principal_id: String,
    /// The session's working directory.
    pub workspace_dir: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub last_activity: String,
    /// Transcript or history rows.
    pub message_count: u64,
}

impl SessionRecord {
    /// A session just created at `now`: no rows yet.
    pub(super) fn created(
        session_id: &str,
        agent: &str,
        owner: &str,
        workspace_dir: &str,
        now: String,
    ) -> Self {
        SessionRecord {
            session_id: session_id.to_owned(),
            agent_alias: agent.to_owned(),
            owner_principal_id: owner.to_owned(),
            workspace_dir: workspace_dir.to_owned(),
            created_at: now.clone(),
            last_activity: now,
            message_count: 0,
        }
    }

    /// Reads the record's columns of a session query.
    pub(super) fn from_sql(r: &SqliteRow) -> Result<Self, StoreError> {
        let count: i64 = r.try_get("message_count")?;
        Ok(SessionRecord {
            session_id: r.try_get("session_id")?,
            agent_alias: r.try_get("agent_alias")?,
            owner_principal_id: r.try_get("owner_principal_id")?,
            workspace_dir: r.try_get("workspace_dir")?,
            created_at: r.try_get("created_at")?,
            last_activity: r.try_get("last_activity")?,
            message_count: u64::try_from(count).unwrap_or(0),
        })
    }
}

impl Store {
    /// Inserts a record created now (`surface`: a durable row's
    /// `interaction_surface`); fails if the id already has one. The new
    /// rowid and the record.
    pub(super) async fn insert_record(
        &self,
        table: SessionTable,
        session_id: &str,
        agent: &str,
        owner: &str,
        workspace_dir: &str,
        surface: Option<&str>,
    ) -> Result<(i64, SessionRecord), StoreError> {
        let now = utc_now();
        let (column, slot) = match surface {
            Some(_) => (", interaction_surface", ", ?"),
            None => ("", ""),
        };
        let sql = format!(
            "INSERT INTO {} (session_id, agent_alias, owner_principal_id, workspace_dir, \
             created_at, last_activity{column}) VALUES (?, ?, ?, ?, ?, ?{slot})",
            table.name()
        );
        let mut insert = sqlx::query(&sql)
            .bind(session_id)
            .bind(agent)
            .bind(owner)
            .bind(workspace_dir)
            .bind(&now)
            .bind(&now);
        if let Some(surface) = surface {
            insert = insert.bind(surface);
        }
        let done = insert.execute(&self.pool).await?;
        let record = SessionRecord::created(session_id, agent, owner, workspace_dir, now);
        Ok((done.last_insert_rowid(), record))
    }

    /// Deletes a record (after the fault point `fault`) and its agent
    /// links in one transaction; `false` when there was none. The rows
    /// that hang off the record (history; transcript, snapshots,
    /// checkpoint) go with it (`ON DELETE CASCADE`); the other kind's
    /// storage is never touched.
    pub(super) async fn delete_record(
        &self,
        table: SessionTable,
        session_id: &str,
        fault: FaultPoint,
    ) -> Result<bool, StoreError> {
        self.check(fault)?;
        let mut tx = self.write_tx().await?;
        let sql = format!("DELETE FROM {} WHERE session_id = ?", table.name());
        let done = sqlx::query(&sql).bind(session_id).execute(&mut *tx).await?;
        super::agent_links::delete_in(&mut tx, session_id).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }
}
