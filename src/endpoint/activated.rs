//! The checks on a listening socket passed by socket activation, before the
//! daemon serves it (docs/operations.md). The locks of §2.3 are taken as for
//! a socket of our own (`unix.rs`); what differs is that systemd bound the
//! socket, so instead of binding we verify that what we were given is what a
//! bind of ours would have produced:
//!
//! - descriptor 3 is a listening `AF_UNIX` stream socket;
//! - it is bound to the endpoint the daemon resolves (the path clients use);
//! - the file at that path is a socket owned by us that no one else can
//!   connect to: connecting to a Unix socket needs write permission on it, so
//!   no write bit for others, and none for the group unless the group is
//!   `security.socket_group` (`0600`, `0644` as `systemd-socket-activate`
//!   binds it, or `0660` with `SocketGroup=`).
//!
//! A failing check is a startup error (exit 1) naming the unit setting to fix;
//! the daemon never chmods or unlinks the service manager's socket.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use interprocess::local_socket::tokio::Listener;
use interprocess::os::unix::uds_local_socket::tokio::Listener as UdsListener;

use super::dirs::normalize_lexically;
use super::lock::{euid, FileId};
use super::{EndpointError, Gid};

/// Why a passed socket is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassedSocketFault {
    #[error("descriptor 3 is not a socket")]
    NotASocket,
    #[error("descriptor 3 is not a Unix stream socket (use ListenStream= with a path)")]
    NotUnixStream,
    #[error("descriptor 3 is not listening")]
    NotListening,
    #[error("descriptor 3 is bound to {bound:?}, not to the endpoint `{}` clients resolve (make ListenStream= and ZEROCLAW_SOCKET agree)", expected.display())]
    WrongPath { bound: String, expected: PathBuf },
    #[error("`{}` is not a socket file", .0.display())]
    FileNotSocket(PathBuf),
    #[error("`{}` is owned by uid {owner}, not by the daemon's uid {ours}", path.display())]
    NotOurs {
        path: PathBuf,
        owner: u32,
        ours: u32,
    },
    #[error("`{}` has mode {mode:o}; set SocketMode=0600 (or 0660 with SocketGroup= = security.socket_group)", path.display())]
    TooOpen { path: PathBuf, mode: u32 },
}

/// Checks `fd` against `socket` (and `group`) and makes it the listener.
pub(super) fn adopt(
    fd: OwnedFd,
    socket: &Path,
    group: Option<Gid>,
) -> Result<(Listener, FileId), EndpointError> {
    let refuse = |f: PassedSocketFault| EndpointError::PassedSocket(f);
    let raw = fd.as_raw_fd();
    // SAFETY: `st` is a writable stat buffer; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Err(EndpointError::io(
            "inspecting descriptor 3",
            io::Error::last_os_error(),
        ));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(refuse(PassedSocketFault::NotASocket));
    }
    if sockopt(raw, libc::SO_TYPE) != Some(libc::SOCK_STREAM) {
        return Err(refuse(PassedSocketFault::NotUnixStream));
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if sockopt(raw, libc::SO_ACCEPTCONN) != Some(1) {
        return Err(refuse(PassedSocketFault::NotListening));
    }
    let bound = bound_path(raw).ok_or_else(|| refuse(PassedSocketFault::NotUnixStream))?;
    if absolute(&bound) != absolute(socket) {
        return Err(refuse(PassedSocketFault::WrongPath {
            bound: bound.display().to_string(),
            expected: socket.to_path_buf(),
        }));
    }
    let meta = std::fs::symlink_metadata(socket)
        .map_err(|e| EndpointError::io(format!("inspecting `{}`", socket.display()), e))?;
    if !meta.file_type().is_socket() {
        return Err(refuse(PassedSocketFault::FileNotSocket(socket.into())));
    }
    if meta.uid() != euid() {
        return Err(refuse(PassedSocketFault::NotOurs {
            path: socket.into(),
            owner: meta.uid(),
            ours: euid(),
        }));
    }
    let mode = meta.mode() & 0o7777;
    let group_may_connect = matches!(group, Some(gid) if meta.gid() == gid);
    let others_can_connect = mode & 0o002 != 0 || (mode & 0o020 != 0 && !group_may_connect);
    if others_can_connect {
        return Err(refuse(PassedSocketFault::TooOpen {
            path: socket.into(),
            mode,
        }));
    }
    let listener =
        UdsListener::try_from(fd).map_err(|e| EndpointError::io("serving descriptor 3", e))?;
    Ok((Listener::from(listener), FileId::of(&meta)))
}

fn sockopt(fd: i32, opt: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes and `len` is value's size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(value)
}

/// The path a Unix socket is bound to; `None` for another family, an
/// unnamed or an abstract socket.
fn bound_path(fd: i32) -> Option<PathBuf> {
    // SAFETY: `addr` is a writable sockaddr_un and `len` its true size.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    let rc =
        unsafe { libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_un).cast(), &mut len) };
    if rc != 0 || libc::c_int::from(addr.sun_family) != libc::AF_UNIX {
        return None;
    }
    let path: Vec<u8> = addr
        .sun_path
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    // An empty name is unnamed, or abstract (a leading NUL).
    (!path.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(&path)))
}

fn absolute(p: &Path) -> PathBuf {
    let joined = match std::env::current_dir() {
        Ok(cwd) if p.is_relative() => cwd.join(p),
        _ => p.to_path_buf(),
    };
    normalize_lexically(&joined)
}
