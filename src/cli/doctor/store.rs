//! The session database's integrity: `PRAGMA quick_check` on a read-only
//! connection, so a running daemon is not disturbed and nothing is created.

use std::path::Path;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::Check;

const NAME: &str = "session database";

pub async fn quick_check(db: &Path) -> Check {
    let shown = db.display();
    if !db.exists() {
        return Check::pass(
            NAME,
            format!("{shown} does not exist yet (the daemon creates it)"),
        );
    }
    let opts = SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .create_if_missing(false);
    let damaged = |why: String| {
        Check::fail(
            NAME,
            format!("{shown} is damaged or not a SQLite database ({why})"),
            "stop the daemon, restore it from a backup or move it aside with its -wal and -shm files",
        )
    };
    let mut conn = match opts.connect().await {
        Ok(c) => c,
        Err(e) => return damaged(e.to_string()),
    };
    let rows: Result<Vec<String>, _> = sqlx::query_scalar("PRAGMA quick_check")
        .fetch_all(&mut conn)
        .await;
    let _ = conn.close().await;
    match rows {
        Ok(r) if r == ["ok"] => Check::pass(NAME, format!("{shown} passes quick_check")),
        Ok(r) => damaged(r.join("; ")),
        Err(e) => damaged(e.to_string()),
    }
}
