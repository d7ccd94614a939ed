//! What every persisted session has, ACP or Chat (§9.2, §9.8): its id,
//! agent, owner, working directory, times and row count. Both session
//! queries select these columns under the same names, so one reader serves
//! both; a durable row adds its key, surface and tombstone around it.

use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use super::StoreError;

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
