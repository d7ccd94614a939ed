//! Making a directory the daemon owns private (§2.1, §2.3 step 1) without
//! ever touching a directory that is not its own.
//!
//! A pre-existing directory is narrowed only when it is the daemon's own:
//! reached without a symbolic link as its last component, owned by the
//! daemon's effective uid, and writable by nobody else. Anything else is
//! refused with a message naming the directory and why (a
//! data dir at `/tmp`, or a `data` link to it, must never make `/tmp`
//! `0700`). The checks and the `chmod` go through one descriptor opened with
//! `O_NOFOLLOW | O_DIRECTORY`, so a link swapped in after the check is
//! refused by the kernel rather than followed.

use std::path::{Path, PathBuf};

/// Why a directory was not made private.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// The directory is not the daemon's to change.
    #[error("refusing to use directory `{}`: {why}", path.display())]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// Which rule it breaks, and what to do.
        why: String,
    },
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl From<PrivateDirError> for std::io::Error {
    fn from(e: PrivateDirError) -> Self {
        let kind = match &e {
            PrivateDirError::Unsafe { .. } => std::io::ErrorKind::PermissionDenied,
            PrivateDirError::Io { source, .. } => source.kind(),
        };
        std::io::Error::new(kind, e.to_string())
    }
}

/// Sets the directory at `path` to `mode`, handing it to `group` first when
/// given (narrowed to `0700`, then chgrp, then `mode`, so no group ever has
/// more than the final state gives it). Refuses a symlink, a directory owned
/// by another uid, and a group- or world-writable one.
#[cfg(unix)]
pub fn make_private(path: &Path, mode: u32, group: Option<u32>) -> Result<(), PrivateDirError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let refuse = |why: String| PrivateDirError::Unsafe {
        path: path.to_owned(),
        why,
    };
    let io = |what: &str, source: std::io::Error| PrivateDirError::Io {
        context: format!("{what} `{}`", path.display()),
        source,
    };
    let dir = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(dir) => dir,
        // Linux says ENOTDIR for a link under O_DIRECTORY, others ELOOP.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(refuse(if link {
                "it is a symbolic link, and the daemon never changes the mode of what a link \
                 points to; name the real directory instead"
                    .to_owned()
            } else {
                "it is not a directory".to_owned()
            }));
        }
        Err(e) => return Err(io("opening directory", e)),
    };
    let meta = dir.metadata().map_err(|e| io("inspecting directory", e))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        return Err(refuse(format!(
            "it is owned by uid {}, not by the daemon's uid {euid}; give the daemon a directory \
             of its own",
            meta.uid()
        )));
    }
    let current = meta.mode() & 0o7777;
    if current & 0o022 != 0 {
        return Err(refuse(format!(
            "it is group- or world-writable (mode {current:o}), so it is shared and the daemon \
             will not make it private; give the daemon a directory of its own"
        )));
    }
    let chmod = |mode: u32| {
        dir.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io(&format!("setting mode {mode:o} on"), e))
    };
    chmod(0o700)?;
    if let Some(gid) = group {
        std::os::unix::fs::fchown(&dir, None, Some(gid))
            .map_err(|e| io(&format!("giving to group {gid}"), e))?;
        chmod(mode)?;
    } else if mode != 0o700 {
        chmod(mode)?;
    }
    Ok(())
}

/// Directories keep the ACL of the user profile on Windows.
#[cfg(not(unix))]
pub fn make_private(_path: &Path, _mode: u32, _group: Option<u32>) -> Result<(), PrivateDirError> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn own_directories_are_narrowed_shared_ones_and_links_refused() {
        let base = std::env::temp_dir().join(format!("zc-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        let own = base.join("own");
        std::fs::create_dir(&own).unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
        make_private(&own, 0o700, None).unwrap();
        assert_eq!(mode(&own), 0o700);

        let shared = base.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = make_private(&shared, 0o700, None).unwrap_err().to_string();
        assert!(e.contains("mode 1777") && e.contains("shared"), "{e}");
        assert_eq!(mode(&shared), 0o1777);

        let link = base.join("link");
        std::os::unix::fs::symlink(&own, &link).unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o750)).unwrap();
        let e = make_private(&link, 0o700, None).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(mode(&own), 0o750);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
