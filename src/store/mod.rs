//! The SQLite store (§9): one database, `<data_dir>/sessions/sessions.db`.
//!
//! This file owns the [`Store`] handle, opening (directory and file modes,
//! pragmas, migrations), the one error type and the small shared helpers
//! (timestamps, "bounded at N"). Each job lives in its own file:
//!
//! - [`migrations`](self::migrations): the numbered schema migrations;
//! - `open`: opening the file, refusing a damaged one untouched, and the
//!   pool's rules for connections;
//! - `seal`: the clean-close seal that spares a start the integrity check;
//! - `durable`: durable session rows (wire kind `"acp"`), kill, delete, list;
//! - `checkpoint`: turn checkpoints and their folding into the transcript;
//! - `recovery`: checkpoint recovery and context rebuild;
//! - `snapshots`: retained-context snapshots;
//! - `projection`: transcript rows and the provider-safe projection;
//! - `chat`: the Chat history store;
//! - `paging`: `session/messages` pages.
//!
//! Every change that spans rows is one transaction, and every writing
//! transaction is `BEGIN IMMEDIATE`: it takes the write lock up front, so two
//! writers queue on `busy_timeout` instead of failing on a lock upgrade. (A
//! write that is a single statement, the checkpoint append, runs without an
//! explicit transaction: SQLite makes the statement atomic and takes the
//! write lock when it starts, as `BEGIN IMMEDIATE` would.)
//! Every operation that has a fault point (§8.20) checks it first and then
//! fails with [`StoreError::Injected`] before touching the database.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::sqlite::SqlitePool;
use sqlx::{Sqlite, Transaction};

use crate::faults::{FaultPoint, Faults};
use crate::storage_fault::StorageFault;

mod agent_links;
mod chat;
mod checkpoint;
mod durable;
mod fold;
pub mod migrations;
mod opening;
mod paging;
mod projection;
mod record;
mod recovery;
mod seal;
mod snapshots;

#[cfg(test)]
mod durability_tests;
#[cfg(test)]
mod testing;

pub use agent_links::AgentLink;
pub use chat::ChatRow;
pub use checkpoint::CheckpointEvent;
pub use durable::DurableRow;
pub use paging::{MessageEntry, MessagesPage, PAGE_CONTENT_MAX, PAGE_JSON_MAX};
pub use projection::{provider_safe, TranscriptRow};
pub use record::SessionRecord;

/// The one `interaction_surface` this daemon writes and recovers (§9.7).
pub const RPC_SURFACE: &str = "rpc";

pub use crate::bounded::{bound_text, TRUNCATION_SUFFIX};

/// A storage failure. The RPC layer maps every variant to `-32603` with
/// `data.reason = "storage"`, or the reason of its [`StorageFault`] class
/// (`storage_full`, `storage_read_only`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A fault point was active (§8.20); nothing was written.
    #[error("injected storage fault: {}", .0.as_str())]
    Injected(FaultPoint),
    /// SQLite (or the driver) failed.
    #[error("sqlite: {message}")]
    Sqlite {
        fault: StorageFault,
        message: String,
    },
    /// Creating the directory or the database file failed.
    #[error("io: {message}")]
    Io {
        fault: StorageFault,
        message: String,
    },
    /// Stored data could not be read back (bad JSON, unknown values).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// The session row (or Chat record) does not exist.
    #[error("not found: {0}")]
    NotFound(&'static str),
    /// The operation does not fit the stored state (no checkpoint to
    /// append to, a checkpoint already open, a killed row).
    #[error("invalid state: {0}")]
    State(&'static str),
    /// The database was written by a newer daemon.
    #[error("database schema version {found} is newer than this daemon's {known}")]
    SchemaTooNew {
        /// The highest version recorded in the file.
        found: i64,
        /// The highest version this build knows.
        known: i64,
    },
}

impl StoreError {
    /// A driver failure that is no environment fault (an internal bug).
    pub fn sqlite(message: impl Into<String>) -> Self {
        StoreError::Sqlite {
            fault: StorageFault::Other,
            message: message.into(),
        }
    }

    /// The environment-fault class of this failure.
    pub fn fault(&self) -> StorageFault {
        match self {
            StoreError::Sqlite { fault, .. } | StoreError::Io { fault, .. } => *fault,
            StoreError::Corrupt(_) => StorageFault::Corrupt,
            _ => StorageFault::Other,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Sqlite {
            fault: StorageFault::of_sqlx(&e),
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Io {
            fault: StorageFault::of_io(&e),
            message: e.to_string(),
        }
    }
}

/// The session store: a small SQLite pool plus the fault switches.
/// Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    faults: Arc<Faults>,
    /// The database file, sealed at a clean close.
    path: Arc<Path>,
}

impl Store {
    /// `<data_dir>/sessions/sessions.db`.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("sessions").join("sessions.db")
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The last step of a graceful shutdown: folds the WAL into the
    /// database and truncates it, so `sessions.db` alone is whole (a copy
    /// of it without `-wal` loses nothing), closes the
    /// pool, and seals the file (`seal.rs`: the next start may skip the
    /// integrity check). Bounded by `wait`: a connection a still-aborting
    /// task holds must not keep the process from exiting (the WAL is then
    /// replayed at the next open, as after a crash, and checked).
    pub async fn checkpoint_and_close(&self, wait: Duration) -> Result<(), StoreError> {
        let work = async {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&self.pool)
                .await?;
            self.pool.close().await;
            seal::seal(&self.path).await;
            Ok::<(), StoreError>(())
        };
        tokio::time::timeout(wait, work)
            .await
            .map_err(|_| StoreError::Io {
                fault: StorageFault::Other,
                message: "the WAL checkpoint at shutdown timed out".into(),
            })?
    }

    /// Fails with [`StoreError::Injected`] when `point` is active.
    fn check(&self, point: FaultPoint) -> Result<(), StoreError> {
        if self.faults.is_active(point) {
            Err(StoreError::Injected(point))
        } else {
            Ok(())
        }
    }

    /// A writing transaction (`BEGIN IMMEDIATE`).
    async fn write_tx(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// A reading transaction: one consistent view of several queries.
    async fn read_tx(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin().await?)
    }
}

/// `Ok` when a write touched a row, else `missing`: an `UPDATE` of a row
/// that is not there changes nothing and is no SQLite error.
fn touched(rows_affected: u64, missing: StoreError) -> Result<(), StoreError> {
    match rows_affected {
        0 => Err(missing),
        _ => Ok(()),
    }
}

/// Now, as RFC 3339 UTC with whole seconds and a `Z`.
pub(crate) fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch (civil-from-days, proleptic
/// Gregorian calendar).
fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Shift the epoch to 0000-03-01 so leap days end each 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_323_045), "2026-01-02T03:04:05Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
        let now = utc_now();
        assert_eq!(now.len(), 20);
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T');
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn open_sets_modes_and_pragmas() {
        use super::testing::TempDir;
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("open-modes");
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("sessions")), 0o700);
        assert_eq!(mode(&dir.path().join("sessions/sessions.db")), 0o600);

        let mut conn = store.pool.acquire().await.unwrap();
        let pragma = |name: &'static str| format!("PRAGMA {name}");
        let journal: String = sqlx::query_scalar(&pragma("journal_mode"))
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        for (name, want) in [
            ("synchronous", 1),
            ("foreign_keys", 1),
            ("busy_timeout", 5000),
        ] {
            let got: i64 = sqlx::query_scalar(&pragma(name))
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(got, want, "{name}");
        }
        drop(conn);
        store.close().await;

        // An existing, too-open directory and file are tightened on reopen.
        std::fs::set_permissions(
            dir.path().join("sessions"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::set_permissions(
            dir.path().join("sessions/sessions.db"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        assert_eq!(mode(&dir.path().join("sessions")), 0o700);
        assert_eq!(mode(&dir.path().join("sessions/sessions.db")), 0o600);
        assert_eq!(
            mode(&dir.path().join("sessions/sessions.db-wal")),
            0o600,
            "the WAL file inherits the database file's mode"
        );
        store.close().await;
    }
}
