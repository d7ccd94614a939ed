//! The two advisory lock files of §2.3: the data-dir lock
//! (`<data_dir>/daemon.lock`, step 1a) and the lifecycle lock
//! (`<socket_path>.lock`, step 2).
//!
//! A lock file sits in a directory other users may be able to reach, so it is
//! opened as if an attacker had prepared the path: never through a symlink
//! (`O_NOFOLLOW`), never blocking on a FIFO (`O_NONBLOCK`), and only trusted
//! after checking its directory, its owner, its mode, its link count and, once
//! locked, that the path still names the locked inode. The lock is taken with
//! a non-blocking exclusive `flock` (`LockFileEx` on Windows, both through
//! `File::try_lock`) and released by the kernel when the process exits; the
//! file is never unlinked, since unlinking a lock file lets two processes
//! each lock a different inode under the same name.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use super::EndpointError;

/// Opens (creating if missing) and exclusively locks `path`.
///
/// `busy` builds the error for "another process holds the lock"; every other
/// failure names the path.
pub(crate) fn acquire(
    path: &Path,
    busy: impl FnOnce() -> EndpointError,
) -> Result<File, EndpointError> {
    #[cfg(unix)]
    check_lock_dir(path)?;
    let file = open(path)?;
    #[cfg(unix)]
    let opened = check_opened(path, &file)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(busy()),
        Err(TryLockError::Error(e)) => {
            return Err(EndpointError::io(
                format!("locking `{}`", path.display()),
                e,
            ));
        }
    }
    #[cfg(unix)]
    check_still_named(path, &opened)?;
    Ok(file)
}

#[cfg(unix)]
fn open(path: &Path) -> Result<File, EndpointError> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a symlink: ELOOP (EMLINK on FreeBSD and DragonFly).
            Some(libc::ELOOP) => EndpointError::unsafe_lock(path, "is a symbolic link"),
            #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
            Some(libc::EMLINK) => EndpointError::unsafe_lock(path, "is a symbolic link"),
            _ => EndpointError::io(format!("opening lock file `{}`", path.display()), e),
        })
}

#[cfg(not(unix))]
fn open(path: &Path) -> Result<File, EndpointError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| EndpointError::io(format!("opening lock file `{}`", path.display()), e))
}

/// The daemon's effective uid.
#[cfg(unix)]
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Before opening: the lock's directory is owned by us or root, and not
/// writable by group or others unless sticky (so nobody else can swap the
/// lock file under us).
#[cfg(unix)]
fn check_lock_dir(path: &Path) -> Result<(), EndpointError> {
    use std::os::unix::fs::MetadataExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir)
        .map_err(|e| EndpointError::io(format!("checking directory `{}`", dir.display()), e))?;
    if !meta.is_dir() {
        return Err(EndpointError::unsafe_lock(dir, "is not a directory"));
    }
    let me = euid();
    if meta.uid() != me && meta.uid() != 0 {
        let why = format!(
            "directory is owned by uid {}, not by uid {me} or root",
            meta.uid()
        );
        return Err(EndpointError::unsafe_lock(dir, why));
    }
    if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
        let why = format!(
            "directory mode {:o} is writable by group or others and not sticky",
            meta.mode() & 0o7777
        );
        return Err(EndpointError::unsafe_lock(dir, why));
    }
    Ok(())
}

/// Device and inode of an open or named file.
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

#[cfg(unix)]
impl FileId {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// After opening: a regular file of ours, owner-only, still linked.
#[cfg(unix)]
fn check_opened(path: &Path, file: &File) -> Result<FileId, EndpointError> {
    use std::os::unix::fs::MetadataExt;
    let meta = file
        .metadata()
        .map_err(|e| EndpointError::io(format!("inspecting lock file `{}`", path.display()), e))?;
    if !meta.file_type().is_file() {
        return Err(EndpointError::unsafe_lock(path, "is not a regular file"));
    }
    let me = euid();
    if meta.uid() != me {
        let why = format!(
            "is owned by uid {}, not by the daemon's uid {me}",
            meta.uid()
        );
        return Err(EndpointError::unsafe_lock(path, why));
    }
    if meta.mode() & 0o077 != 0 {
        let why = format!(
            "mode {:o} grants group or other permissions (expected 600)",
            meta.mode() & 0o7777
        );
        return Err(EndpointError::unsafe_lock(path, why));
    }
    if meta.nlink() == 0 {
        return Err(EndpointError::unsafe_lock(
            path,
            "was unlinked while being opened",
        ));
    }
    // A umask that strips owner bits (0277) creates it 0400: restore exactly
    // 0600 so the next start can open it read-write. Never wider than 0600.
    if meta.mode() & 0o777 != 0o600 {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| {
                EndpointError::io(format!("setting mode 600 on `{}`", path.display()), e)
            })?;
    }
    Ok(FileId::of(&meta))
}

/// After locking: the path still names the inode we locked; otherwise the
/// lock protects nothing.
#[cfg(unix)]
fn check_still_named(path: &Path, locked: &FileId) -> Result<(), EndpointError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if FileId::of(&meta) == *locked => Ok(()),
        Ok(_) => Err(EndpointError::unsafe_lock(
            path,
            "was replaced while being locked",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EndpointError::unsafe_lock(
            path,
            "was removed while being locked",
        )),
        Err(e) => Err(EndpointError::io(
            format!("re-checking lock file `{}`", path.display()),
            e,
        )),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::endpoint::test_support::TempDir;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn busy() -> EndpointError {
        EndpointError::AlreadyServed(crate::endpoint::Served::LockHeld("busy".into()))
    }

    #[test]
    fn lock_is_exclusive_and_creates_an_owner_only_file() {
        let dir = TempDir::new("lock-excl");
        let path = dir.path().join("x.lock");
        let held = acquire(&path, busy).expect("first lock");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = acquire(&path, busy).expect_err("second lock");
        assert_eq!(err.exit_code(), 3);
        drop(held);
        acquire(&path, busy).expect("lock after release");
    }

    #[test]
    fn symlinked_lock_is_refused_and_left_alone() {
        let dir = TempDir::new("lock-link");
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").expect("write");
        let before = std::fs::metadata(&target)
            .expect("stat")
            .permissions()
            .mode();
        let path = dir.path().join("x.lock");
        symlink(&target, &path).expect("symlink");
        let err = acquire(&path, busy).expect_err("symlink");
        assert!(matches!(err, EndpointError::UnsafeLock { .. }), "{err}");
        assert!(err.to_string().contains("x.lock"), "{err}");
        assert_eq!(std::fs::read(&target).expect("read"), b"keep");
        let after = std::fs::metadata(&target)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(before, after);
    }

    #[test]
    fn wide_mode_and_non_regular_files_are_refused() {
        let dir = TempDir::new("lock-mode");
        let path = dir.path().join("x.lock");
        std::fs::write(&path, b"").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let err = acquire(&path, busy).expect_err("mode 640");
        assert!(err.to_string().contains("640"), "{err}");

        let sub = dir.path().join("d.lock");
        std::fs::create_dir(&sub).expect("mkdir");
        let err = acquire(&sub, busy).expect_err("directory");
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn group_writable_directory_without_sticky_bit_is_refused() {
        let dir = TempDir::new("lock-dir");
        let open = dir.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = acquire(&open.join("x.lock"), busy).expect_err("0777 dir");
        match &err {
            EndpointError::UnsafeLock { path, .. } => assert_eq!(path, &open),
            other => panic!("expected UnsafeLock, got {other}"),
        }
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        acquire(&open.join("x.lock"), busy).expect("sticky dir is fine");
    }

    #[test]
    fn lock_owned_by_someone_else_is_refused() {
        if euid() != 0 {
            return; // only root can give a file away
        }
        let dir = TempDir::new("lock-owner");
        let path = dir.path().join("x.lock");
        std::fs::write(&path, b"").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::os::unix::fs::chown(&path, Some(65534), None).expect("chown");
        let err = acquire(&path, busy).expect_err("foreign owner");
        assert!(err.to_string().contains("uid 65534"), "{err}");
    }
}
