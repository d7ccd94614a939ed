//! The system calls of the confinement, and the only `unsafe` of it: each
//! wrapper takes borrowed descriptors and C strings, checks the result and
//! hands back an owned descriptor or an `io::Error`.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// Flags every open of a path the agent controls carries: never block (a
/// FIFO without a writer), never become our controlling terminal, never
/// leak into a child.
pub const OPEN_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// `name` as a C string; a NUL inside is `InvalidInput`.
pub fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn fd_or_error(r: libc::c_long) -> io::Result<OwnedFd> {
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(r).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unit_or_error(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `openat2(dir, path, flags, resolve)` (Linux >= 5.6); `ENOSYS` elsewhere.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn openat2(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: libc::c_int,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // SAFETY: open_how is plain integers; all-zero is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = resolve;
    // SAFETY: `path` is NUL-terminated and `how` outlives the call, whose
    // size argument is exactly `how`'s; the kernel only reads them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    fd_or_error(r)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn openat2(_: BorrowedFd<'_>, _: &CStr, _: libc::c_int, _: u64) -> io::Result<OwnedFd> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// `openat(dir, name, flags, mode)`.
pub fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated; `dir` is a live descriptor.
    let r = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) };
    fd_or_error(libc::c_long::from(r))
}

/// `mkdirat(dir, name, 0o777)` (less the umask).
pub fn mkdirat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: as for `openat`.
    unit_or_error(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) })
}

/// `renameat(dir, from, dir, to)`: both names inside one directory.
pub fn renameat(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> io::Result<()> {
    let d = dir.as_raw_fd();
    // SAFETY: as for `openat`.
    unit_or_error(unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) })
}

/// `unlinkat(dir, name, 0)`.
pub fn unlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: as for `openat`.
    unit_or_error(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
}

/// The type bits (`S_IFMT`) of `name` in `dir`, the name itself (a symlink
/// is reported as one).
pub fn lstat_type(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::mode_t> {
    // SAFETY: `stat` is plain integers; zero is a valid value of it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated and `st` is ours to write.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    unit_or_error(r).map(|()| st.st_mode & libc::S_IFMT)
}

/// The text of the symlink `name` in `dir`.
pub fn readlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is ours and its length is passed; `name` is NUL-terminated.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    buf.truncate(n);
    Ok(buf)
}
