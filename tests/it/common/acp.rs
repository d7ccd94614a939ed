//! Helpers of the ACP durability tests (tests/it/acp_*.rs): a daemon on a
//! config dir the test keeps across kills and restarts, the ACP verbs of
//! the one client (faults, context, transcripts read through
//! `session/messages`), and read-only views
//! of the session database for byte-identity checks.
//!
//! Every wait is bounded (the client's waits by [`super::RECV_TIMEOUT`]).

use super::values::items;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

// Re-exported for the suites' glob imports.
#[allow(unused_imports)]
pub use super::rpc::Rpc;
#[allow(unused_imports)]
pub use super::sessions::Turn;
use super::{Client, Daemon, DaemonBuilder, TestDir};

/// The marker recovery appends (§9.6).
pub const INTERRUPTED: &str = "Turn interrupted";
/// The marker a kill appends when it folds a leftover checkpoint (§9.9).
pub const KILLED: &str = "Turn killed";

/// The config of an echo agent with the given extra lines.
pub fn echo_config(extra_agent_lines: &str) -> String {
    format!("schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n{extra_agent_lines}\n")
}

// ---------------------------------------------------------------------------
// A daemon that can be killed and restarted on the same config dir

/// A config dir owned by the test and the daemon running on it (started
/// with `--test-faults`), if any.
#[derive(Debug)]
pub struct AcpEnv {
    dir: TestDir,
    daemon: Option<Daemon>,
    /// Daemons started so far.
    pub starts: u32,
}

impl AcpEnv {
    /// Writes `config` as `<dir>/cfg/config.toml` (mode 0600) and starts a daemon.
    pub fn new(config: &str) -> Self {
        let mut env = Self::stopped(config);
        env.start();
        env
    }

    /// [`AcpEnv::new`] and a client of it with session `sid` open in `mode`.
    pub fn with_session(config: &str, sid: &str, mode: &str) -> (Self, Client) {
        let env = Self::new(config);
        let mut rpc = env.rpc();
        rpc.new_session(sid, mode);
        (env, rpc)
    }

    /// Like [`AcpEnv::new`], without starting the daemon.
    pub fn stopped(config: &str) -> Self {
        let dir = TestDir::new();
        let cfg = dir.config_dir();
        std::fs::create_dir_all(&cfg).unwrap();
        set_mode(&cfg, 0o700);
        let file = cfg.join("config.toml");
        std::fs::write(&file, config).unwrap();
        set_mode(&file, 0o600);
        Self {
            dir,
            daemon: None,
            starts: 0,
        }
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.config_dir()
    }

    /// `<data_dir>/sessions/sessions.db`.
    pub fn db(&self) -> PathBuf {
        self.config_dir()
            .join("data")
            .join("sessions")
            .join("sessions.db")
    }

    /// Starts a daemon on the config dir (none may be running).
    pub fn start(&mut self) {
        assert!(self.daemon.is_none(), "a daemon is already running");
        let d = DaemonBuilder::new()
            .config_dir(self.config_dir())
            .arg("--test-faults")
            .spawn();
        self.starts += 1;
        self.daemon = Some(d);
    }

    /// The running daemon.
    pub fn d(&self) -> &Daemon {
        self.daemon.as_ref().expect("no daemon is running")
    }

    pub fn d_mut(&mut self) -> &mut Daemon {
        self.daemon.as_mut().expect("no daemon is running")
    }

    /// SIGKILL the daemon and reap it.
    pub fn kill9(&mut self) {
        let mut d = self.daemon.take().expect("no daemon is running");
        d.kill9();
    }

    /// SIGTERM the daemon and wait for its graceful exit (status 0).
    #[cfg(unix)]
    pub fn stop(&mut self) {
        let mut d = self.daemon.take().expect("no daemon is running");
        d.wait_for_handler(libc::SIGTERM);
        d.signal(libc::SIGTERM);
        let st = d
            .wait_exit(Duration::from_secs(15))
            .expect("the daemon did not exit after SIGTERM");
        assert!(st.success(), "graceful shutdown exited with {st:?}");
    }

    /// kill -9, then a new daemon on the same config dir; a new client of it.
    pub fn restart(&mut self) -> Client {
        self.kill9();
        self.start();
        self.rpc()
    }

    /// A new initialized client of the running daemon.
    pub fn rpc(&self) -> Client {
        self.d().client()
    }
}

fn set_mode(p: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(windows)]
    let _ = (p, mode);
}

// ---------------------------------------------------------------------------
// The ACP verbs of the one client

/// The concatenated text of the `agent_message_chunk`s among `updates`.
pub fn chunk_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["type"] == "agent_message_chunk")
        .map(|u| u["text"].as_str().expect("chunk text"))
        .collect()
}

impl Client {
    /// `debug/set-faults`; checks the echo.
    pub fn faults(&mut self, points: &[&str]) {
        let r = self.ok("debug/set-faults", json!({ "faults": points }));
        let mut got: Vec<String> = items(&r["faults"])
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        got.sort();
        let mut want: Vec<String> = points.iter().map(|s| (*s).to_owned()).collect();
        want.sort();
        assert_eq!(got, want, "debug/set-faults echo");
    }

    /// The retained context the next turn starts with, through `::context`
    /// (one completed turn, which extends the context and the transcript).
    pub fn context(&mut self, sid: &str) -> Vec<Value> {
        let t = self.prompt_ok(sid, "::context");
        let doc: Value = serde_json::from_str(t.result()["content"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("::context reply is not JSON ({e}): {}", t.result()));
        items(&doc["messages"]).clone()
    }

    /// Every transcript row through `session/messages` (paging back to the start).
    pub fn messages(&mut self, sid: &str) -> Vec<Value> {
        self.messages_mode(sid, None)
            .unwrap_or_else(|e| panic!("session/messages {sid} failed: {e}"))
    }

    /// Every row of the store selected by `mode` (`None`: the default selection).
    pub fn messages_mode(&mut self, sid: &str, mode: Option<&str>) -> Result<Vec<Value>, Value> {
        let mut rows: Vec<Value> = Vec::new();
        let mut before: Option<u64> = None;
        loop {
            let mut p = json!({"session_id": sid, "limit": 1000});
            if let Some(m) = mode {
                p["chat_mode"] = json!(m);
            }
            if let Some(b) = before {
                p["before_index"] = json!(b);
            }
            let page = self.request("session/messages", p)?;
            let mut msgs = items(&page["messages"]).clone();
            let start = page["start"].as_u64().unwrap();
            msgs.append(&mut rows);
            rows = msgs;
            if start == 0 {
                assert_eq!(rows.len() as u64, page["total"].as_u64().unwrap());
                return Ok(rows);
            }
            before = Some(start);
        }
    }

    /// The session ids `status` reports live.
    pub fn live_ids(&mut self) -> Vec<String> {
        let s = self.ok("status", json!({}));
        items(&s["session_ids"])
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }
}

/// The tables whose rows belong to one `acp_sessions` row (`session_row`).
pub const SESSION_TABLES: [&str; 4] = [
    "acp_transcript",
    "acp_context_snapshots",
    "acp_turn_checkpoints",
    "acp_checkpoint_events",
];

/// Asserts that no table of [`SESSION_TABLES`] holds a row of session row `row_id`.
#[track_caller]
pub fn assert_no_rows_of(db: &Path, row_id: i64) {
    for t in SESSION_TABLES {
        let n = db_int(
            db,
            &format!("SELECT COUNT(*) FROM {t} WHERE session_row = {row_id}"),
        );
        assert_eq!(n, 0, "{t} still has rows of the deleted session {row_id}");
    }
}

/// The user and assistant rows of echo turns, in order (the echo agent
/// replies with the prompt).
pub fn echo_rows(prompts: &[&str]) -> Vec<(String, String, String)> {
    prompts
        .iter()
        .flat_map(|p| [row("user", "message", p), row("assistant", "message", p)])
        .collect()
}

/// The retained context of echo turns, in order.
pub fn echo_ctx(prompts: &[&str]) -> Vec<Value> {
    prompts
        .iter()
        .flat_map(|p| [ctx("user", p), ctx("assistant", p)])
        .collect()
}

/// Asserts that rows carry seq 1..=n in order.
#[track_caller]
pub fn assert_contiguous(rows: &[Value]) {
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["seq"], json!(i + 1), "row {i} of {rows:?}");
    }
}

/// `(role, kind, content)` of each row, for compact comparisons.
pub fn shape(rows: &[Value]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|r| {
            (
                r["role"].as_str().unwrap().to_owned(),
                r["kind"].as_str().unwrap().to_owned(),
                r["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A `(role, kind, content)` triple.
pub fn row(role: &str, kind: &str, content: &str) -> (String, String, String) {
    (role.to_owned(), kind.to_owned(), content.to_owned())
}

/// How many interruption markers with `content` there are.
pub fn markers(rows: &[Value], content: &str) -> usize {
    rows.iter()
        .filter(|r| r["kind"] == "interruption_marker" && r["content"] == content)
        .count()
}

/// A context message as `::context` writes it.
pub fn ctx(role: &str, content: &str) -> Value {
    json!({"role": role, "kind": "message", "content": content})
}

// ---------------------------------------------------------------------------
// The database, read (and, with the daemon stopped, written) directly

/// Runs `f` to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// The session tables (§9.2).
pub const TABLES: [&str; 7] = [
    "acp_sessions",
    "acp_transcript",
    "acp_context_snapshots",
    "acp_turn_checkpoints",
    "acp_checkpoint_events",
    "chat_sessions",
    "chat_messages",
];

async fn open(db: &Path, read_only: bool) -> sqlx::SqliteConnection {
    use sqlx::ConnectOptions;
    sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .read_only(read_only)
        .busy_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("opening {}: {e}", db.display()))
}

/// Runs `sql` read-only; each row's columns as SQL literals (`quote()`),
/// joined with `|`: two dumps are equal exactly when the rows are byte-identical.
pub fn db_rows(db: &Path, sql: &str) -> Vec<String> {
    block_on(async {
        use sqlx::{Column, Row};
        let mut conn = open(db, true).await;
        let rows = sqlx::query(sql)
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows.iter()
            .map(|r| {
                (0..r.columns().len())
                    .map(|i| {
                        let v: Option<String> = r.try_get(i).unwrap_or_else(|e| {
                            panic!("{sql}: column {}: {e}", r.columns()[i].name())
                        });
                        v.unwrap_or_else(|| "NULL".into())
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    })
}

/// Every row of `table`, every column as a SQL literal, in `rowid` order.
pub fn dump_table(db: &Path, table: &str) -> Vec<String> {
    let cols = db_rows(
        db,
        &format!("SELECT name FROM pragma_table_info('{table}')"),
    );
    assert!(!cols.is_empty(), "no table {table}");
    let quoted: Vec<String> = cols
        .iter()
        .map(|c| format!("quote({})", c.trim_matches('\'')))
        .collect();
    db_rows(
        db,
        &format!(
            "SELECT {} FROM {table} ORDER BY rowid",
            quoted.join(" || '|' || ")
        ),
    )
}

/// Every session table, dumped.
pub fn dump_all(db: &Path) -> BTreeMap<&'static str, Vec<String>> {
    TABLES.iter().map(|t| (*t, dump_table(db, t))).collect()
}

/// Folds the WAL into the database file and removes the `-wal` and `-shm`
/// files (the last connection to close does); only while no daemon runs on
/// it. Afterwards the file alone holds the data.
pub fn fold_wal(db: &Path) {
    block_on(async {
        use sqlx::Connection;
        let mut conn = open(db, false).await;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    });
    for suffix in ["-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        assert!(!p.exists(), "{} is left", p.display());
    }
}

/// One integer from `sql` (read-only).
pub fn db_int(db: &Path, sql: &str) -> i64 {
    block_on(async {
        let mut conn = open(db, true).await;
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    })
}

/// The `acp_sessions.id` of session `sid` (the key its other rows carry).
pub fn acp_row_id(db: &Path, sid: &str) -> i64 {
    db_int(
        db,
        &format!("SELECT id FROM acp_sessions WHERE session_id = '{sid}'"),
    )
}

/// Runs `statements` in one transaction on a read-write connection; only
/// while no daemon runs on the database.
pub fn db_exec(db: &Path, statements: &[&str]) {
    block_on(async {
        use sqlx::Connection;
        let mut conn = open(db, false).await;
        let mut tx = conn.begin().await.unwrap();
        for s in statements {
            sqlx::query(s)
                .execute(&mut *tx)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        tx.commit().await.unwrap();
        conn.close().await.unwrap();
    })
}
