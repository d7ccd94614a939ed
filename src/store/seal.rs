//! The clean-close seal: what lets a start skip `PRAGMA quick_check`, whose
//! cost grows with the file (startup independent of history).
//!
//! A graceful shutdown, once the WAL is folded in and the pool closed,
//! writes `sessions/sessions.seal`: the database file's device, inode, size,
//! modification and status-change times. The next start reads it before
//! anything touches the file; when every field still matches and no WAL is
//! left, the file is exactly as this daemon closed it, and the integrity
//! check is skipped. Any write since (a crash left a WAL, a restored backup,
//! a scribbled page) changes the status-change time, which no user can set
//! back, so the check runs. The seal is removed once a start has opened the
//! store (a crash of that run leaves none); a refused start leaves it, as it
//! leaves every file.
//!
//! File times come from a coarse clock (a tick of a few ms): a write in the
//! same tick as the daemon's last one would keep the status-change time. So
//! the seal is kept only when its own time is past the database's: every
//! later write then lands in a later tick. Without Unix metadata there is no
//! seal, and every start checks.

use std::path::{Path, PathBuf};

/// The seal beside `db`.
fn seal_path(db: &Path) -> PathBuf {
    db.with_file_name("sessions.seal")
}

/// Whether `db` is exactly as a graceful shutdown of this daemon left it.
pub(super) fn intact(db: &Path) -> bool {
    // A few dozen bytes; anything that is not a small regular file is no seal.
    let Ok(bytes) = crate::bounded_file::read(&seal_path(db), 4096) else {
        return false;
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return false;
    };
    let wal_empty = std::fs::metadata(wal_path(db)).map_or(true, |m| m.len() == 0);
    wal_empty && fingerprint(db).is_some_and(|f| f == text.trim_end())
}

/// Forgets the seal: from now on this run may write the file.
pub(super) fn break_seal(db: &Path) {
    let _ = std::fs::remove_file(seal_path(db));
}

/// Seals `db` after a clean close. Best effort: without a seal the next
/// start only runs the check.
pub(super) async fn seal(db: &Path) {
    let path = seal_path(db);
    if !write_seal(db, &path).await {
        let _ = std::fs::remove_file(&path);
    }
}

async fn write_seal(db: &Path, path: &Path) -> bool {
    if std::fs::metadata(wal_path(db)).is_ok_and(|m| m.len() > 0) {
        return false;
    }
    let Some(print) = fingerprint(db) else {
        return false;
    };
    // A few ms at most: until the file clock has ticked past the database's
    // last change (see the module comment).
    for _ in 0..50 {
        if write_private(path, &print).is_err() {
            return false;
        }
        if later(path, db) == Some(true) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    false
}

fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    std::io::Write::write_all(&mut opts.open(path)?, text.as_bytes())
}

/// The fields of `db`'s metadata the seal records, as one line.
#[cfg(unix)]
fn fingerprint(db: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(db).ok()?;
    Some(format!(
        "1 {} {} {} {}.{:09} {}.{:09}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

#[cfg(not(unix))]
fn fingerprint(_db: &Path) -> Option<String> {
    None
}

/// Whether `a` changed in a later file-clock tick than `b` did.
#[cfg(unix)]
fn later(a: &Path, b: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (std::fs::metadata(a).ok()?, std::fs::metadata(b).ok()?);
    Some((a.ctime(), a.ctime_nsec()) > (b.ctime(), b.ctime_nsec()))
}

#[cfg(not(unix))]
fn later(_a: &Path, _b: &Path) -> Option<bool> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::endpoint::test_support::TempDir;

    fn db_in(dir: &TempDir) -> PathBuf {
        let db = dir.path().join("sessions.db");
        std::fs::write(&db, b"SQLite format 3\0 and pages").unwrap();
        db
    }

    #[tokio::test]
    async fn a_sealed_file_is_intact_until_written() {
        let dir = TempDir::new("seal");
        let db = db_in(&dir);
        assert!(!intact(&db), "no seal yet");
        seal(&db).await;
        assert!(intact(&db));
        std::fs::write(&db, b"SQLite format 3\0 and pagez").unwrap();
        assert!(!intact(&db), "same size, new bytes");
    }

    #[tokio::test]
    async fn a_left_wal_or_a_broken_seal_means_a_check() {
        let dir = TempDir::new("seal");
        let db = db_in(&dir);
        seal(&db).await;
        std::fs::write(wal_path(&db), b"frames").unwrap();
        assert!(!intact(&db));
        std::fs::write(wal_path(&db), b"").unwrap();
        assert!(intact(&db), "an empty WAL holds nothing");
        break_seal(&db);
        assert!(!intact(&db));
    }

    #[tokio::test]
    async fn a_chmod_counts_as_a_change() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("seal");
        let db = db_in(&dir);
        seal(&db).await;
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!intact(&db));
    }
}
