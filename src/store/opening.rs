//! Opening the session database (§9.1), and the pool's rules for its
//! connections.
//!
//! A damaged file is refused, and left exactly as it was found: its header
//! is read before SQLite touches it, `PRAGMA quick_check` runs before any
//! migration could write (unless the file is sealed as this daemon closed
//! it: `seal.rs`), and the `-wal`/`-shm` files a refused open
//! created are removed again. Every connection is opened at startup and
//! kept; a connection that could never write again (left in a transaction
//! SQLite already rolled back, or opened read-only) is closed, never reused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::{migrations, seal, Store, StoreError};
use crate::faults::Faults;

/// Connections in the pool: one writer at a time (SQLite), a few readers.
const MAX_CONNECTIONS: u32 = 4;

/// The first 16 bytes of every SQLite database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

impl Store {
    /// Opens (creating if needed) `<data_dir>/sessions/sessions.db` and
    /// applies pending migrations.
    ///
    /// The directory is made `0700` and the file `0600` before SQLite ever
    /// opens it (SQLite gives its `-wal` and `-shm` files the database
    /// file's mode), then the pool runs with WAL, `synchronous=NORMAL`,
    /// `foreign_keys=ON` and `busy_timeout=5000` on every connection.
    pub async fn open(data_dir: &Path, faults: Arc<Faults>) -> Result<Store, StoreError> {
        // Read before anything touches the file (even its mode, below).
        let intact = seal::intact(&Store::path_in(data_dir));
        let path = prepare_files(data_dir)?;
        check_header(&path)?;
        let sidecars = Sidecars::before_open(&path);
        match open_pool(&path, !intact).await {
            Ok(pool) => {
                // This run may write the file from now on.
                seal::break_seal(&path);
                Ok(Store {
                    pool,
                    faults,
                    path: path.into(),
                })
            }
            Err(e) => {
                sidecars.remove_created();
                Err(e)
            }
        }
    }
}

/// The pool on `path`, migrated; `check`: run the integrity check first.
async fn open_pool(path: &Path, check: bool) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_millis(5000));
    let pool = SqlitePoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        // Connections are kept for the daemon's life (all opened by
        // `open_all` below): one opened later, while the data dir is
        // read-only, could only be a read-only one (see `refuse_read_only`).
        .idle_timeout(None)
        .max_lifetime(None)
        // The default pings every connection it hands out: a round trip
        // to SQLite's worker thread per operation (~0.1 ms, as much as a
        // whole checkpoint append), and a local file does not go stale.
        .test_before_acquire(false)
        .after_connect(|conn, _| Box::pin(refuse_read_only(conn)))
        .after_release(|conn, _| Box::pin(async move { Ok(reusable(conn)) }))
        .connect_with(options)
        .await?;
    let prepared = async {
        if check {
            check_integrity(&pool).await?;
        }
        migrations::apply(&pool).await?;
        open_all(&pool).await
    };
    match prepared.await {
        Ok(()) => Ok(pool),
        Err(e) => {
            // Closed before returning: the process may exit next, and SQLite
            // checkpoints and removes its `-wal` only when the last
            // connection closes.
            pool.close().await;
            Err(e)
        }
    }
}

/// A non-empty file that does not start like a SQLite database (garbage, or
/// cut inside its 100-byte header) is refused before SQLite opens it, and so
/// is anything but a regular file (a FIFO would block the start). An empty
/// file is a new database: `prepare_files` creates it so.
fn check_header(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(100);
    let (file, _) = crate::bounded_file::open(path).map_err(|e| match e {
        crate::bounded_file::ReadError::Io(e) => StoreError::from(e),
        other => StoreError::Corrupt(format!("sessions.db {other}")),
    })?;
    file.take(100).read_to_end(&mut head)?;
    match head.len() {
        0 => Ok(()),
        n if n < 100 => Err(StoreError::Corrupt(format!(
            "the file is {n} bytes, shorter than a SQLite header"
        ))),
        _ if head.starts_with(MAGIC) => Ok(()),
        _ => Err(StoreError::Corrupt("not a SQLite database".into())),
    }
}

/// Which of the database's `-wal` and `-shm` files existed before an open,
/// so that a refused open can remove those it created (they hold nothing
/// of the refused file: nothing was written).
#[derive(Debug)]
struct Sidecars {
    created: Vec<PathBuf>,
}

impl Sidecars {
    fn before_open(db: &Path) -> Self {
        let created = ["-wal", "-shm"]
            .iter()
            .map(|suffix| {
                let mut p = db.as_os_str().to_owned();
                p.push(suffix);
                PathBuf::from(p)
            })
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        Self { created }
    }

    /// Removes the files created since, unless a `-wal` holds frames.
    fn remove_created(&self) {
        let wal_has_frames = self.created.iter().any(|p| {
            p.to_string_lossy().ends_with("-wal") && std::fs::metadata(p).is_ok_and(|m| m.len() > 0)
        });
        if wal_has_frames {
            return;
        }
        for p in &self.created {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `PRAGMA quick_check` before anything is written: a damaged database (a
/// truncated file, a scribbled page) is refused at startup, untouched,
/// rather than failing requests at random later or being written over.
/// It reads every page once (see docs/reliability.md for its cost).
async fn check_integrity(pool: &SqlitePool) -> Result<(), StoreError> {
    let verdict: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(3)")
        .fetch_all(pool)
        .await?;
    if verdict.len() == 1 && verdict[0] == "ok" {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "integrity check failed: {}",
            verdict.join("; ")
        )))
    }
}

/// Fails a new connection that SQLite opened read-only. SQLite silently
/// falls back to a read-only handle when it cannot open the file for
/// writing (a read-only mount or a `chmod` while the daemon runs); such a
/// handle would answer `SQLITE_READONLY` forever, long after the directory
/// is writable again. Refused here, the pool retries (with backoff, within
/// its 30 s acquire timeout). All connections are opened at startup, so
/// this matters only for one reopened after `reusable` closed it. The
/// probe is a write that is rolled back, so nothing reaches the file
/// (`BEGIN IMMEDIATE` alone succeeds on a read-only handle).
async fn refuse_read_only(conn: &mut sqlx::SqliteConnection) -> Result<(), sqlx::Error> {
    use sqlx::Executor;
    conn.execute("BEGIN IMMEDIATE; CREATE TABLE zeroclaw_write_probe (x); ROLLBACK")
        .await?;
    Ok(())
}

/// Opens every connection of the pool now, one after the other (opening
/// them at once on a new database races for the switch to WAL), while the
/// data dir is known to be writable.
async fn open_all(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut held = Vec::with_capacity(MAX_CONNECTIONS as usize);
    for _ in 0..MAX_CONNECTIONS {
        held.push(pool.acquire().await?);
    }
    Ok(())
}

/// Whether a connection returned to the pool may serve again. A transaction
/// dropped on an error path is rolled back by the driver; but when SQLite
/// has already rolled it back itself (as it may on `SQLITE_FULL` or an I/O
/// error), the driver's `ROLLBACK` fails and its transaction depth stays at
/// 1, so every later `BEGIN` on that connection would fail ("non-zero
/// transaction depth") long after the disk has room again. Such a
/// connection (and any other still in a transaction) is closed instead; the
/// pool opens a fresh one when needed. Successful paths always commit, so
/// this costs nothing on them.
fn reusable(conn: &sqlx::SqliteConnection) -> bool {
    use sqlx::Connection;
    !conn.is_in_transaction()
}

/// Creates `<data_dir>/sessions/` (`0700`) and `sessions.db` (`0600`) and
/// returns the database path.
fn prepare_files(data_dir: &Path) -> Result<PathBuf, StoreError> {
    let path = Store::path_in(data_dir);
    let dir = path.parent().unwrap_or(data_dir);
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
        builder.create(dir)?;
        // An existing directory keeps its old mode through `create`; it is
        // narrowed only if it is ours and no link.
        crate::private_dir::make_private(dir, 0o700, None).map_err(std::io::Error::from)?;
    }
    #[cfg(not(unix))]
    builder.create(dir)?;

    let mut file = std::fs::OpenOptions::new();
    file.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        // Never blocks on a FIFO or a device put there; `check_header` refuses them.
        file.mode(0o600)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC);
        file.open(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    file.open(&path)?;
    Ok(path)
}
