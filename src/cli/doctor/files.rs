//! Checks on the files the daemon keeps: who owns its directories and with
//! which mode, the endpoint socket, and the free space where it writes.

use std::path::Path;

use super::Check;

#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A directory the daemon keeps private: ours, and closed to others (`0700`;
/// group search and read allowed with `security.socket_group`).
pub fn private_dir(name: &str, dir: &Path, group: bool) -> Check {
    owned_and_closed(name, dir, if group { 0o027 } else { 0o077 }, true)
}

/// A file only its owner may read.
pub fn private_file(name: &str, file: &Path) -> Check {
    owned_and_closed(name, file, 0o077, false)
}

/// The entry at `path` itself (a link is not followed), or the check to
/// report: `missing()` when there is none, `cannot inspect …` with `fix`
/// when it cannot be looked at.
#[cfg(unix)]
fn inspect(
    name: &str,
    path: &Path,
    fix: &str,
    missing: impl FnOnce() -> Check,
) -> Result<std::fs::Metadata, Check> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(missing()),
        Err(e) => Err(Check::fail(
            name,
            format!("cannot inspect {}: {e}", path.display()),
            fix,
        )),
    }
}

#[cfg(unix)]
fn owned_and_closed(name: &str, path: &Path, forbidden: u32, dir: bool) -> Check {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let missing = || {
        Check::pass(
            name,
            format!("{shown} does not exist yet (the daemon creates it)"),
        )
    };
    let fix = "make its parent searchable by this user";
    let meta = match inspect(name, path, fix, missing) {
        Ok(m) => m,
        Err(check) => return check,
    };
    let mode = meta.mode() & 0o7777;
    if meta.file_type().is_symlink() || meta.is_dir() != dir {
        let what = if dir { "a directory" } else { "a regular file" };
        return Check::fail(name, format!("{shown} is not {what}"), "move it aside");
    }
    if meta.uid() != euid() {
        return Check::fail(
            name,
            format!(
                "{shown} is owned by uid {}, not by this user (uid {})",
                meta.uid(),
                euid()
            ),
            "run as its owner, or chown it to this user",
        );
    }
    if mode & forbidden != 0 {
        let want = (mode & !forbidden) & 0o777;
        return Check::fail(
            name,
            format!("{shown} has mode {mode:o}, open to others"),
            format!("chmod {want:o} {shown}"),
        );
    }
    Check::pass(name, format!("{shown} mode {mode:o}, owned by this user"))
}

#[cfg(not(unix))]
fn owned_and_closed(name: &str, path: &Path, _forbidden: u32, _dir: bool) -> Check {
    Check::pass(
        name,
        format!(
            "{} (modes are not checked on this platform)",
            path.display()
        ),
    )
}

/// The endpoint: a socket of ours, `0600` (`0660` with a socket group).
#[cfg(unix)]
pub fn endpoint(socket: &Path, group: bool) -> Check {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    const NAME: &str = "endpoint";
    let shown = socket.display();
    let missing = || {
        let fix = "start the daemon (`zeroclaw daemon`)";
        Check::fail(NAME, format!("no socket at {shown}"), fix)
    };
    let meta = match inspect(NAME, socket, "check the data dir's mode", missing) {
        Ok(m) => m,
        Err(check) => return check,
    };
    if !meta.file_type().is_socket() {
        return Check::fail(
            NAME,
            format!("{shown} is not a socket"),
            "move it aside; the daemon never removes it",
        );
    }
    let mode = meta.mode() & 0o7777;
    let forbidden = if group { 0o117 } else { 0o177 };
    if mode & forbidden != 0 {
        return Check::fail(
            NAME,
            format!("{shown} has mode {mode:o}"),
            "restart the daemon (it binds 0600), or set SocketMode=0600",
        );
    }
    if meta.uid() != euid() {
        return Check::fail(
            NAME,
            format!("{shown} is owned by uid {}, not by this user", meta.uid()),
            "talk to the daemon as its owner, or set security.socket_group",
        );
    }
    Check::pass(
        NAME,
        format!("{shown} is a socket, mode {mode:o}, owned by this user"),
    )
}

/// The least free space the daemon should have where it writes.
#[cfg(unix)]
const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

/// Free space on the data dir's file system (or its nearest existing parent).
#[cfg(unix)]
pub fn disk_space(data_dir: &Path) -> Check {
    use std::os::unix::ffi::OsStrExt;
    const NAME: &str = "disk space";
    let dir = data_dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return Check::fail(
            NAME,
            format!("{} has a NUL byte", dir.display()),
            "use another data dir",
        );
    };
    // SAFETY: `st` is a writable statvfs and the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        let e = std::io::Error::last_os_error();
        return Check::fail(
            NAME,
            format!("statvfs {}: {e}", dir.display()),
            "check the file system",
        );
    }
    // The field types differ between platforms (u32 on some 32-bit ones).
    #[allow(clippy::unnecessary_cast)]
    let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
    let shown = format!(
        "{:.1} MiB free in {}",
        free as f64 / 1048576.0,
        dir.display()
    );
    if free < MIN_FREE_BYTES {
        return Check::fail(
            NAME,
            shown,
            "free space: the session store needs at least 64 MiB",
        );
    }
    Check::pass(NAME, shown)
}

#[cfg(not(unix))]
pub fn disk_space(data_dir: &Path) -> Check {
    Check::pass(
        "disk space",
        format!("{} (not checked on this platform)", data_dir.display()),
    )
}
