//! The history bench's data: a session database holding `n` durable ("acp")
//! and `n` chat sessions with a few messages each, written in one
//! transaction of set-based SQL (seconds for 30,000 of each), after the
//! daemon's own `Store::open` created the schema.

use std::path::Path;
use std::sync::Arc;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, Executor};

/// Messages per session: two turns of a user line and an answer.
pub const MESSAGES: u32 = 4;

/// The durable session id of number `i` (1 is the oldest).
pub fn durable_id(i: u32) -> String {
    format!("d{i:06}")
}

/// The chat session id of number `i` (1 is the oldest).
pub fn chat_id(i: u32) -> String {
    format!("c{i:06}")
}

/// Fills `<data_dir>/sessions/sessions.db` with `n` sessions of each kind,
/// owned by the shared operator, session `i` last active `i` seconds after a
/// fixed instant (so the order is known and every id is distinct).
pub async fn seed(data_dir: &Path, n: u32) -> Result<(), String> {
    let faults = Arc::new(zeroclaw::faults::Faults::default());
    let store = zeroclaw::store::Store::open(data_dir, faults)
        .await
        .map_err(|e| format!("creating the store: {e}"))?;
    store.close().await;
    let path = zeroclaw::store::Store::path_in(data_dir);
    let opts = SqliteConnectOptions::new().filename(&path);
    let mut conn = sqlx::SqliteConnection::connect_with(&opts)
        .await
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut tx = conn.begin().await.map_err(|e| e.to_string())?;
    for sql in statements() {
        let q = sqlx::query(&sql).bind(i64::from(n));
        tx.execute(q).await.map_err(|e| format!("{e}: {sql}"))?;
    }
    tx.commit().await.map_err(|e| e.to_string())?;
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .await
        .map_err(|e| e.to_string())?;
    conn.close().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// The seeding SQL; `?1` is the number of sessions of each kind.
fn statements() -> [String; 4] {
    // One CTE of 1..=n, timestamps in the daemon's RFC 3339 form.
    const N: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)";
    const TS: &str = "strftime('%Y-%m-%dT%H:%M:%SZ', 1700000000 + i, 'unixepoch')";
    // The four messages of every session: (seq, role, content).
    const MSGS: &str = "(SELECT 1 AS seq, 'user' AS role, \
         'a question about the history bench, long enough to be a real line of text' AS content \
         UNION ALL SELECT 2, 'assistant', \
         'an answer of a few sentences, as an echo agent would give back to its user, \
          about two hundred bytes long so that the file grows as a real store does \
          with every session it keeps for later reading.' \
         UNION ALL SELECT 3, 'user', 'a follow-up question' \
         UNION ALL SELECT 4, 'assistant', 'a shorter answer to the follow-up')";
    let durable = format!(
        "{N} INSERT INTO acp_sessions (session_id, agent_alias, owner_principal_id, \
         workspace_dir, interaction_surface, created_at, last_activity) \
         SELECT printf('d%06d', i), 'echo', 'shared-operator', '/tmp', 'rpc', {TS}, {TS} FROM n"
    );
    let transcript = format!(
        "INSERT INTO acp_transcript (session_row, seq, turn_id, role, kind, content, created_at) \
         SELECT s.id, m.seq, 't' || ((m.seq + 1) / 2), m.role, 'message', m.content, s.created_at \
         FROM acp_sessions s CROSS JOIN {MSGS} m WHERE ?1 > 0 ORDER BY s.id, m.seq"
    );
    let chat = format!(
        "{N} INSERT INTO chat_sessions (session_id, agent_alias, owner_principal_id, \
         workspace_dir, created_at, last_activity) \
         SELECT printf('c%06d', i), 'echo', 'shared-operator', '/tmp', {TS}, {TS} FROM n"
    );
    let messages = format!(
        "INSERT INTO chat_messages (session_id, seq, role, content, created_at) \
         SELECT c.session_id, m.seq, m.role, m.content, c.created_at \
         FROM chat_sessions c CROSS JOIN {MSGS} m WHERE ?1 > 0 ORDER BY c.session_id, m.seq"
    );
    [durable, transcript, chat, messages]
}
