//! Claiming the endpoint on Unix (§2.3), in the spec's order: parent
//! directory (1), data-dir lock (1a), lifecycle lock (2), stale-socket probe
//! (3), bind with the final mode (4); and giving it back at shutdown.
//!
//! The one rule everything here serves: never unlink a socket that a live
//! daemon is serving, and never remove anything that is not a dead socket we
//! have identified by device and inode. The locks make the probe and the
//! unlink race-free against other conforming daemons; the device/inode
//! checks make them safe against everything else. interprocess is told not to
//! reclaim or overwrite names on its own (`reclaim_name(false)`,
//! `try_overwrite(false)`): only this module decides what gets unlinked.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use interprocess::local_socket::tokio::{prelude::*, Listener};
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use interprocess::TryClone;

use super::dirs::{create_missing, normalize_lexically, set_own_dir_mode};
use super::lock::{self, FileId};
use super::name::check_socket_path;
use super::{ClaimOptions, EndpointError, EndpointName, Gid, LocalStream, PeerInfo, Served};

/// How long the stale-socket probe waits for `connect` before deciding that a
/// live but stalled daemon is there.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A claimed, listening endpoint. Dropping it (or [`Claimed::release`]) unlinks
/// the socket if the path is still ours and releases the lifecycle lock; the
/// data-dir lock stays held until the process exits.
#[derive(Debug)]
pub struct Claimed {
    // Field order is drop order: the listener closes, then the lifecycle lock
    // is released, after `Drop::drop` has unlinked the socket.
    listener: Listener,
    socket: PathBuf,
    id: FileId,
    _lifecycle_lock: File,
    /// `None` only after [`Claimed::release_all`] took it.
    data_lock: Option<File>,
    /// False for a socket passed by the service manager, which owns its file.
    unlink_on_release: bool,
}

impl Claimed {
    fn new(listener: Listener, socket: PathBuf, id: FileId, locks: Locks, unlink: bool) -> Self {
        Claimed {
            listener,
            socket,
            id,
            _lifecycle_lock: locks.lifecycle,
            data_lock: Some(locks.data),
            unlink_on_release: unlink,
        }
    }

    /// Accepts the next connection and reads its peer credentials (§2.5).
    pub async fn accept(&self) -> io::Result<(LocalStream, PeerInfo)> {
        let stream = self.listener.accept().await?;
        let peer = PeerInfo::of(&stream);
        Ok((stream, peer))
    }

    /// The socket path, for the ready line and logs.
    pub fn endpoint_display(&self) -> String {
        self.socket.display().to_string()
    }

    /// Stops listening and gives the endpoint back (§2.3 shutdown).
    pub fn release(self) {
        drop(self);
    }

    /// Like [`release`](Self::release), and then also drops the data-dir
    /// lock. For in-process restarts and tests only: the daemon itself keeps
    /// the data-dir lock until it exits (§2.3 step 1a).
    pub fn release_all(mut self) {
        let data_lock = self.data_lock.take();
        drop(self);
        drop(data_lock);
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // A replacement endpoint (another inode at our path) is never removed.
        // Nobody is left to report a failure to at this point.
        if self.unlink_on_release {
            let _ = unlink_if_ours(&self.socket, self.id);
        }
        // Held until exit: leaking the descriptor keeps the lock.
        if let Some(data_lock) = self.data_lock.take() {
            std::mem::forget(data_lock);
        }
    }
}

/// Performs steps 1, 1a, 2, 3 and 4 of §2.3 and returns the bound listener.
pub async fn claim(
    data_dir: &Path,
    endpoint: &EndpointName,
    opts: &ClaimOptions,
) -> Result<Claimed, EndpointError> {
    let (socket, group, locks) = lock_endpoint(data_dir, endpoint, opts)?;

    // Step 3: remove a dead socket, and nothing else.
    probe_stale(socket).await?;

    // Step 4: bind with the final mode.
    let (listener, id) = bind(socket, group)?;
    Ok(Claimed::new(listener, socket.clone(), id, locks, true))
}

/// Socket activation: steps 1, 1a and 2 of §2.3 as for [`claim`], then the
/// passed socket `fd` is checked (`activated.rs`) instead of probing and
/// binding. The socket file belongs to the service manager: it is never
/// unlinked at shutdown.
pub fn claim_passed(
    data_dir: &Path,
    endpoint: &EndpointName,
    opts: &ClaimOptions,
    fd: std::os::fd::OwnedFd,
) -> Result<Claimed, EndpointError> {
    let (socket, group, locks) = lock_endpoint(data_dir, endpoint, opts)?;
    let (listener, id) = super::activated::adopt(fd, socket, group)?;
    Ok(Claimed::new(listener, socket.clone(), id, locks, false))
}

/// The data-dir lock and the lifecycle lock, in that order.
struct Locks {
    data: File,
    lifecycle: File,
}

/// Steps 1, 1a and 2 of §2.3.
fn lock_endpoint<'a>(
    data_dir: &Path,
    endpoint: &'a EndpointName,
    opts: &ClaimOptions,
) -> Result<(&'a PathBuf, Option<Gid>, Locks), EndpointError> {
    let EndpointName::Path(socket) = endpoint;
    check_socket_path(socket)?;
    let group = opts.socket_group.as_deref().map(lookup_group).transpose()?;

    // Step 1: the socket's directory. The data dir is ours: its mode is set
    // whether or not it existed. Any other directory gets a mode only if we
    // create it; whether a pre-existing one is safe is step 2's question.
    let socket_dir = match socket.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let in_data_dir = normalize_lexically(socket_dir) == normalize_lexically(data_dir);
    let data_group = if in_data_dir { group } else { None };
    create_missing(data_dir, data_group)?;
    set_own_dir_mode(data_dir, data_group)?;
    if !in_data_dir {
        create_missing(socket_dir, group)?;
    }

    // Step 1a: one daemon per data dir.
    let data = lock::acquire(&data_dir.join("daemon.lock"), || {
        EndpointError::AlreadyServed(Served::DataDir(data_dir.to_path_buf()))
    })?;

    // Step 2: one daemon per endpoint.
    let lock_path = {
        let mut name = socket.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    };
    let lifecycle = lock::acquire(&lock_path, || {
        EndpointError::AlreadyServed(Served::LockHeld(lock_path.clone()))
    })?;
    Ok((socket, group, Locks { data, lifecycle }))
}

/// Step 3: `lstat` the path (never following a link) and decide.
async fn probe_stale(socket: &Path) -> Result<(), EndpointError> {
    let seen = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(EndpointError::io(
                format!("inspecting `{}`", socket.display()),
                e,
            ));
        }
    };
    if !seen.file_type().is_socket() {
        return Err(EndpointError::NotASocket(socket.to_path_buf()));
    }
    let seen = FileId::of(&seen);
    let serving = || EndpointError::AlreadyServed(Served::Serving(socket.display().to_string()));

    let attempt = tokio::time::timeout(PROBE_TIMEOUT, tokio::net::UnixStream::connect(socket));
    match attempt.await {
        Ok(Ok(_connected)) => Err(serving()),
        // Timed out, or the backlog is full (EAGAIN): alive, just busy.
        Err(_elapsed) => Err(serving()),
        Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => Err(serving()),
        Ok(Err(e)) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
            match std::fs::symlink_metadata(socket) {
                Ok(meta) if meta.file_type().is_socket() && FileId::of(&meta) == seen => {
                    std::fs::remove_file(socket).map_err(|e| match e.kind() {
                        io::ErrorKind::NotFound => EndpointError::Changed(socket.to_path_buf()),
                        _ => EndpointError::io(
                            format!("removing stale socket `{}`", socket.display()),
                            e,
                        ),
                    })
                }
                _ => Err(EndpointError::Changed(socket.to_path_buf())),
            }
        }
        Ok(Err(e)) => Err(EndpointError::io(
            format!("probing endpoint `{}`", socket.display()),
            e,
        )),
    }
}

/// Step 4. The socket is created `0600` (the mode is set on the socket before
/// `bind`, or the umask is `0177` during `bind` where the platform ignores
/// that); with a socket group it is then handed to the group and only after
/// that opened to `0660`, so it never admits anyone the final mode doesn't.
fn bind(socket: &Path, group: Option<Gid>) -> Result<(Listener, FileId), EndpointError> {
    let context = || format!("binding `{}`", socket.display());
    let name = socket
        .to_fs_name::<GenericFilePath>()
        .map_err(|e| EndpointError::io(context(), e))?;
    let options = ListenerOptions::new()
        .name(name)
        .reclaim_name(false)
        .try_overwrite(false);
    let fallback = options
        .try_clone()
        .map_err(|e| EndpointError::io(context(), e))?;
    let listener = match options.mode(0o600).create_tokio() {
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            let _umask = UmaskGuard::set(0o177);
            fallback.create_tokio()
        }
        other => other,
    }
    .map_err(|e| EndpointError::io(context(), e))?;

    let meta = std::fs::symlink_metadata(socket).map_err(|e| {
        EndpointError::io(format!("inspecting bound socket `{}`", socket.display()), e)
    })?;
    if !meta.file_type().is_socket() {
        return Err(EndpointError::Changed(socket.to_path_buf()));
    }
    let id = FileId::of(&meta);
    if let Err(e) = finish_mode(socket, id, meta.mode() & 0o7777, group) {
        let _ = unlink_if_ours(socket, id);
        return Err(e);
    }
    Ok((listener, id))
}

/// Brings the bound socket to exactly `0600`, or `0660` owned by `group`.
fn finish_mode(
    socket: &Path,
    id: FileId,
    mode: u32,
    group: Option<Gid>,
) -> Result<(), EndpointError> {
    let chmod = |mode: u32| {
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(mode)).map_err(|e| {
            EndpointError::io(
                format!("setting mode {mode:o} on `{}`", socket.display()),
                e,
            )
        })
    };
    // Only ever narrower than 0600 here (a umask that strips owner bits).
    if mode != 0o600 {
        chmod(0o600)?;
    }
    let Some(gid) = group else { return Ok(()) };
    std::os::unix::fs::lchown(socket, None, Some(gid)).map_err(|e| {
        EndpointError::io(format!("giving `{}` to group {gid}", socket.display()), e)
    })?;
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() && FileId::of(&meta) == id => chmod(0o660),
        _ => Err(EndpointError::Changed(socket.to_path_buf())),
    }
}

/// Unlinks `socket` only if it is still the socket with `id`.
fn unlink_if_ours(socket: &Path, id: FileId) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(socket)?;
    if meta.file_type().is_socket() && FileId::of(&meta) == id {
        std::fs::remove_file(socket)?;
    }
    Ok(())
}

/// Restores the previous umask when dropped. The umask is process-wide, so
/// this is used only on platforms where `fchmod` before `bind` is unsupported.
struct UmaskGuard(libc::mode_t);

impl UmaskGuard {
    fn set(mask: libc::mode_t) -> Self {
        // SAFETY: umask has no preconditions and cannot fail.
        UmaskGuard(unsafe { libc::umask(mask) })
    }
}

impl Drop for UmaskGuard {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::umask(self.0) };
    }
}

/// Looks up `security.socket_group` by name; the group must exist (§2.3).
pub fn lookup_group(name: &str) -> Result<Gid, EndpointError> {
    let unknown = || EndpointError::UnknownGroup(name.to_owned());
    let c_name = CString::new(name).map_err(|_| unknown())?;
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        let mut group = std::mem::MaybeUninit::<libc::group>::uninit();
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: the name is a
        // NUL-terminated string, `group` and `buf` are writable and `buf.len()`
        // is its true length; getgrnam_r writes only inside them.
        let rc = unsafe {
            libc::getgrnam_r(
                c_name.as_ptr(),
                group.as_mut_ptr(),
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        match rc {
            libc::ERANGE if buf.len() < (1 << 20) => buf.resize(buf.len() * 2, 0),
            0 if found.is_null() => return Err(unknown()),
            // SAFETY: on success `found` points to `group`, filled in by the call.
            0 => return Ok(unsafe { (*found).gr_gid }),
            // "Not found" as some C libraries spell it.
            libc::ENOENT | libc::ESRCH | libc::EBADF | libc::EPERM => return Err(unknown()),
            errno => {
                return Err(EndpointError::io(
                    format!("looking up socket group `{name}`"),
                    io::Error::from_raw_os_error(errno),
                ));
            }
        }
    }
}
