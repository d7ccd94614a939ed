//! What kind of environment fault a failed disk or SQLite operation was.
//!
//! This file is the one place where an OS error number or a SQLite result
//! code is classified. Every storage path (the session store, `config.toml`
//! commits, uploads, workspace creation) carries the [`StorageFault`] of its
//! failure up to `src/error/reason.rs`, which turns it into `data.reason`
//! (`storage_full`, `storage_read_only` or `storage`), so that a client can
//! tell "free some space" and "make the data dir writable" from a bug.

use std::io;

/// The class of a storage failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// No space left: `ENOSPC`, `EDQUOT`, `EFBIG`, `SQLITE_FULL`.
    Full,
    /// The file system or the file refuses writes: `EROFS`, `EACCES`,
    /// `EPERM`, `SQLITE_READONLY`.
    ReadOnly,
    /// The database file is damaged or not a database: `SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`.
    Corrupt,
    /// Anything else.
    Other,
}

/// SQLite's primary result codes (the low byte of an extended code).
const SQLITE_PERM: i32 = 3;
const SQLITE_READONLY: i32 = 8;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_FULL: i32 = 13;
const SQLITE_NOTADB: i32 = 26;

impl StorageFault {
    /// The class of an OS error.
    pub fn of_io(e: &io::Error) -> Self {
        match e.raw_os_error() {
            Some(n) => Self::of_errno(n),
            None => match e.kind() {
                io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Self::Full,
                io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied => {
                    Self::ReadOnly
                }
                _ => Self::Other,
            },
        }
    }

    #[cfg(unix)]
    fn of_errno(n: i32) -> Self {
        match n {
            libc::ENOSPC | libc::EDQUOT | libc::EFBIG => Self::Full,
            libc::EROFS | libc::EACCES | libc::EPERM => Self::ReadOnly,
            _ => Self::Other,
        }
    }

    #[cfg(not(unix))]
    fn of_errno(n: i32) -> Self {
        // ERROR_DISK_FULL, ERROR_HANDLE_DISK_FULL; ERROR_ACCESS_DENIED, ERROR_WRITE_PROTECT.
        match n {
            112 | 39 => Self::Full,
            5 | 19 => Self::ReadOnly,
            _ => Self::Other,
        }
    }

    /// The class of a SQLite (driver) error.
    pub fn of_sqlx(e: &sqlx::Error) -> Self {
        match e {
            sqlx::Error::Io(io) => Self::of_io(io),
            sqlx::Error::Database(db) => db
                .code()
                .and_then(|c| c.parse::<i32>().ok())
                .map_or(Self::Other, Self::of_sqlite_code),
            _ => Self::Other,
        }
    }

    /// `self`, or what the file system holding `path` shows when `self` is
    /// [`StorageFault::Other`]: no block left for unprivileged writers is
    /// [`StorageFault::Full`], a read-only mount [`StorageFault::ReadOnly`].
    /// SQLite's I/O errors (`SQLITE_IOERR_*`, e.g. a `-shm` that cannot grow)
    /// carry no errno through the driver; this names their likely cause.
    pub fn or_from_fs(self, path: &std::path::Path) -> Self {
        if self != Self::Other {
            return self;
        }
        match fs_state(path) {
            Some(FsState {
                read_only: true, ..
            }) => Self::ReadOnly,
            Some(FsState { free_blocks: 0, .. }) => Self::Full,
            _ => Self::Other,
        }
    }

    /// The class of a SQLite result code (primary or extended).
    pub fn of_sqlite_code(code: i32) -> Self {
        match code & 0xff {
            SQLITE_FULL => Self::Full,
            SQLITE_READONLY | SQLITE_PERM => Self::ReadOnly,
            SQLITE_CORRUPT | SQLITE_NOTADB => Self::Corrupt,
            _ => Self::Other,
        }
    }
}

struct FsState {
    read_only: bool,
    free_blocks: u64,
}

/// `statvfs` of the file system holding `path` (the nearest existing ancestor).
#[cfg(unix)]
fn fs_state(path: &std::path::Path) -> Option<FsState> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is NUL-terminated; statvfs only writes into `st`, which we own.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    Some(FsState {
        read_only: st.f_flag & libc::ST_RDONLY != 0,
        free_blocks: st.f_bavail as u64,
    })
}

#[cfg(not(unix))]
fn fs_state(_path: &std::path::Path) -> Option<FsState> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn os_errors_are_classified() {
        let of = |n| StorageFault::of_io(&io::Error::from_raw_os_error(n));
        assert_eq!(of(libc::ENOSPC), StorageFault::Full);
        assert_eq!(of(libc::EDQUOT), StorageFault::Full);
        assert_eq!(of(libc::EROFS), StorageFault::ReadOnly);
        assert_eq!(of(libc::EACCES), StorageFault::ReadOnly);
        assert_eq!(of(libc::EIO), StorageFault::Other);
        let custom = io::Error::new(io::ErrorKind::StorageFull, "full");
        assert_eq!(StorageFault::of_io(&custom), StorageFault::Full);
    }

    #[test]
    fn sqlite_codes_are_classified() {
        assert_eq!(StorageFault::of_sqlite_code(13), StorageFault::Full);
        // SQLITE_READONLY_DBMOVED (1032) is a read-only condition too.
        assert_eq!(StorageFault::of_sqlite_code(1032), StorageFault::ReadOnly);
        assert_eq!(StorageFault::of_sqlite_code(26), StorageFault::Corrupt);
        assert_eq!(StorageFault::of_sqlite_code(11), StorageFault::Corrupt);
        // SQLITE_IOERR_WRITE carries no errno through the driver.
        assert_eq!(StorageFault::of_sqlite_code(778), StorageFault::Other);
    }
}
