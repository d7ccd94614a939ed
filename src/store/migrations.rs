//! Numbered schema migrations, applied at open (§9.1).
//!
//! `schema_migrations` records each applied version with its time. Every
//! pending migration runs in its own `BEGIN IMMEDIATE` transaction together
//! with its bookkeeping row, and the pending set is re-read inside that
//! transaction, so a crash mid-migration or two processes opening the same
//! file at once can never apply a version twice or half of one. Migrations
//! are append-only: never edit a shipped one, add the next number.

use sqlx::SqlitePool;

use super::{utc_now, StoreError};

/// `(version, SQL)`, in increasing version order.
pub const MIGRATIONS: &[(i64, &str)] = &[(1, V1_SCHEMA), (2, V2_AGENT_LINKS)];

/// Version 2 (additive): which ACP session of a hosted agent
/// (`backend = "acp"`) holds each of our sessions' agent-side context, and
/// how often that context was lost (a new agent session had to be started
/// for a session that had one). Keyed by our session id whatever the
/// session's mode; rows of deleted sessions are removed with them.
const V2_AGENT_LINKS: &str = r#"
CREATE TABLE agent_session_links (
  session_id        TEXT PRIMARY KEY,
  agent_alias       TEXT NOT NULL,
  agent_session_id  TEXT NOT NULL,
  context_losses    INTEGER NOT NULL DEFAULT 0,
  updated_at        TEXT NOT NULL
);
"#;

/// The §9.2 schema, verbatim, plus the expected indexes.
const V1_SCHEMA: &str = r#"
CREATE TABLE acp_sessions (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id          TEXT NOT NULL UNIQUE,
  agent_alias         TEXT NOT NULL,
  owner_principal_id  TEXT NOT NULL,
  workspace_dir       TEXT NOT NULL,
  interaction_surface TEXT NOT NULL DEFAULT 'rpc',
  created_at          TEXT NOT NULL,
  last_activity       TEXT NOT NULL,
  killed_at           TEXT
);

CREATE TABLE acp_transcript (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  session_row   INTEGER NOT NULL REFERENCES acp_sessions(id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  turn_id       TEXT,
  role          TEXT NOT NULL CHECK (role IN ('user','assistant','tool','system')),
  kind          TEXT NOT NULL CHECK (kind IN ('message','tool_call','tool_result','interruption_marker')),
  content       TEXT NOT NULL,
  tool_call_id  TEXT,
  tool_name     TEXT,
  tool_input    TEXT,
  created_at    TEXT NOT NULL,
  UNIQUE (session_row, seq)
);

CREATE TABLE acp_context_snapshots (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  session_row   INTEGER NOT NULL REFERENCES acp_sessions(id) ON DELETE CASCADE,
  boundary_seq  INTEGER NOT NULL,
  messages_json TEXT NOT NULL,
  created_at    TEXT NOT NULL
);

CREATE TABLE acp_turn_checkpoints (
  session_row   INTEGER PRIMARY KEY REFERENCES acp_sessions(id) ON DELETE CASCADE,
  turn_id       TEXT NOT NULL,
  started_at    TEXT NOT NULL
);

CREATE TABLE acp_checkpoint_events (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  session_row   INTEGER NOT NULL REFERENCES acp_turn_checkpoints(session_row) ON DELETE CASCADE,
  payload       TEXT NOT NULL
);

CREATE TABLE chat_sessions (
  session_id          TEXT PRIMARY KEY,
  agent_alias         TEXT NOT NULL,
  owner_principal_id  TEXT NOT NULL,
  workspace_dir       TEXT NOT NULL,
  created_at          TEXT NOT NULL,
  last_activity       TEXT NOT NULL
);

CREATE TABLE chat_messages (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id  TEXT NOT NULL REFERENCES chat_sessions(session_id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('user','assistant')),
  content     TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (session_id, seq)
);

-- (session_row, seq) of acp_transcript and (session_id, seq) of
-- chat_messages are covered by their UNIQUE constraints' indexes.
CREATE INDEX idx_acp_checkpoint_events_session ON acp_checkpoint_events (session_row, id);
CREATE INDEX idx_acp_context_snapshots_session ON acp_context_snapshots (session_row, id);
CREATE INDEX idx_acp_sessions_agent ON acp_sessions (agent_alias);
CREATE INDEX idx_acp_sessions_activity ON acp_sessions (last_activity DESC, created_at DESC);
CREATE INDEX idx_chat_sessions_activity ON chat_sessions (last_activity DESC, created_at DESC);
"#;

/// The highest version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}

/// The highest applied version (0 for a new file).
pub async fn current_version(pool: &SqlitePool) -> Result<i64, StoreError> {
    let v: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        .fetch_one(pool)
        .await?;
    Ok(v)
}

/// Applies every pending migration, each in one transaction.
pub(super) async fn apply(pool: &SqlitePool) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
           version    INTEGER PRIMARY KEY,
           applied_at TEXT NOT NULL
         )",
    )
    .execute(pool)
    .await?;
    let known = latest_version();
    let found = current_version(pool).await?;
    if found > known {
        return Err(StoreError::SchemaTooNew { found, known });
    }
    for &(version, sql) in MIGRATIONS {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = ?")
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        if applied.is_some() {
            continue;
        }
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)")
            .bind(version)
            .bind(utc_now())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(version, "applied session store migration");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::testing::TempDir;
    use super::super::Store;
    use super::*;

    async fn names(store: &Store, kind: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%' \
             ORDER BY name",
        )
        .bind(kind)
        .fetch_all(&store.pool)
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn migrations_apply_once_and_reopen_is_idempotent() {
        let dir = TempDir::new("migrations");
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        let tables = names(&store, "table").await;
        assert_eq!(
            tables,
            [
                "acp_checkpoint_events",
                "acp_context_snapshots",
                "acp_sessions",
                "acp_transcript",
                "acp_turn_checkpoints",
                "agent_session_links",
                "chat_messages",
                "chat_sessions",
                "schema_migrations",
            ]
        );
        let indexes = names(&store, "index").await;
        assert_eq!(indexes.len(), 5, "{indexes:?}");
        let row = store.durable_create("s", "echo", "me", "/w").await.unwrap();
        store.close().await;

        for _ in 0..2 {
            let store = Store::open(dir.path(), Arc::default()).await.unwrap();
            let versions: Vec<i64> =
                sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
                    .fetch_all(&store.pool)
                    .await
                    .unwrap();
            assert_eq!(versions, [1, 2]);
            assert_eq!(store.durable_get("s").await.unwrap().unwrap().row, row.row);
            assert_eq!(names(&store, "index").await, indexes);
            store.close().await;
        }
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        let dir = TempDir::new("migrations-newer");
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        sqlx::query("INSERT INTO schema_migrations VALUES (99, 'x')")
            .execute(&store.pool)
            .await
            .unwrap();
        store.close().await;
        let err = Store::open(dir.path(), Arc::default()).await.unwrap_err();
        assert_eq!(
            err,
            StoreError::SchemaTooNew {
                found: 99,
                known: 2
            }
        );
    }

    #[tokio::test]
    async fn schema_enforces_checks_and_cascades() {
        let dir = TempDir::new("migrations-checks");
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        let row = store.durable_create("s", "echo", "me", "/w").await.unwrap();
        let bad_role = sqlx::query(
            "INSERT INTO acp_transcript (session_row, seq, role, kind, content, created_at) \
             VALUES (?, 1, 'robot', 'message', '', '')",
        )
        .bind(row.row)
        .execute(&store.pool)
        .await;
        assert!(bad_role.is_err());
        let orphan = sqlx::query(
            "INSERT INTO acp_checkpoint_events (session_row, payload) VALUES (?, '{}')",
        )
        .bind(row.row)
        .execute(&store.pool)
        .await;
        assert!(
            orphan.is_err(),
            "events need a checkpoint (foreign_keys=ON)"
        );
        store.close().await;
    }
}
