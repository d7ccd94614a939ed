//! The daemon's side of systemd, without systemd: socket activation
//! (`LISTEN_FDS`/`LISTEN_PID`, the one listening socket at fd 3) and
//! readiness notification (`NOTIFY_SOCKET`: `READY=1`, `STATUS=…`,
//! `STOPPING=1`), both as sd_listen_fds(3) and sd_notify(3) describe them.
//!
//! [`take_from_env`] must run while the process is still single-threaded (it
//! removes the variables, so that agent processes never inherit them). What
//! the daemon checks on a passed socket before serving it lives in
//! `endpoint/activated.rs`.

use std::ffi::OsString;
use std::sync::OnceLock;

/// The first passed descriptor (`SD_LISTEN_FDS_START`).
pub const LISTEN_FDS_START: i32 = 3;

/// What the service manager handed this process.
#[derive(Debug, Default)]
pub struct Activation {
    /// The passed listening socket's descriptor (always [`LISTEN_FDS_START`]).
    pub listen_fd: Option<i32>,
}

/// Socket activation that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActivationError {
    /// `LISTEN_FDS` is not a number.
    #[error("LISTEN_FDS={0:?} is not a number of descriptors")]
    BadCount(String),
    /// More than one socket was passed; the daemon serves exactly one endpoint.
    #[error(
        "LISTEN_FDS={0}: the daemon takes exactly one listening socket (one ListenStream= in zeroclaw.socket)"
    )]
    TooMany(u32),
    /// `LISTEN_FDS` says a descriptor was passed but fd 3 is not open.
    #[error("LISTEN_FDS=1 but descriptor 3 is not open")]
    NotOpen,
}

static NOTIFY_SOCKET: OnceLock<Option<OsString>> = OnceLock::new();

/// Reads and removes `LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES` and
/// `NOTIFY_SOCKET`. Descriptors meant for another process (`LISTEN_PID` not
/// ours) are ignored, as sd_listen_fds does.
pub fn take_from_env() -> Result<Activation, ActivationError> {
    let pid = std::env::var_os("LISTEN_PID");
    let fds = std::env::var_os("LISTEN_FDS");
    let notify = std::env::var_os("NOTIFY_SOCKET").filter(|v| !v.is_empty());
    for name in [
        "LISTEN_PID",
        "LISTEN_FDS",
        "LISTEN_FDNAMES",
        "NOTIFY_SOCKET",
    ] {
        // Single-threaded here (see the module doc), so nobody reads the environment meanwhile.
        std::env::remove_var(name);
    }
    let _ = NOTIFY_SOCKET.set(notify);
    let listen_fd = passed_fd(pid.as_deref(), fds.as_deref(), std::process::id())?;
    if let Some(fd) = listen_fd {
        // Checked before anything else can open fd 3: adopting a descriptor
        // of the runtime's would close it under the runtime later.
        if !set_cloexec(fd) {
            return Err(ActivationError::NotOpen);
        }
    }
    Ok(Activation { listen_fd })
}

/// The descriptor `LISTEN_PID`/`LISTEN_FDS` give process `me`, if any.
fn passed_fd(
    pid: Option<&std::ffi::OsStr>,
    fds: Option<&std::ffi::OsStr>,
    me: u32,
) -> Result<Option<i32>, ActivationError> {
    let ours = pid.and_then(|p| p.to_str()?.parse::<u32>().ok()) == Some(me);
    let (Some(fds), true) = (fds, ours) else {
        return Ok(None);
    };
    let text = fds.to_string_lossy().into_owned();
    match text.parse::<u32>() {
        Ok(0) => Ok(None),
        Ok(1) => Ok(Some(LISTEN_FDS_START)),
        Ok(n) => Err(ActivationError::TooMany(n)),
        Err(_) => Err(ActivationError::BadCount(text)),
    }
}

/// Agents are child processes: the listening socket must not leak into them.
/// False if `fd` is not open.
#[cfg(unix)]
fn set_cloexec(fd: i32) -> bool {
    // SAFETY: fcntl on a descriptor number touches no memory; a bad fd only
    // yields EBADF.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) == 0
    }
}

#[cfg(not(unix))]
fn set_cloexec(_fd: i32) -> bool {
    false
}

/// The states the daemon reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State<'a> {
    /// Serving `endpoint`: `READY=1` and a `STATUS=` line.
    Ready { endpoint: &'a str },
    /// Shutting down: `STOPPING=1` and a `STATUS=` line.
    Stopping,
}

impl State<'_> {
    /// The datagram's text (newline-separated assignments).
    pub fn datagram(&self) -> String {
        match self {
            State::Ready { endpoint } => format!("READY=1\nSTATUS=serving on {endpoint}\n"),
            State::Stopping => "STOPPING=1\nSTATUS=shutting down\n".to_owned(),
        }
    }
}

/// Sends `state` to `NOTIFY_SOCKET` if one was given, without ever waiting:
/// a receiver whose queue is full (a stuck or hostile supervisor) costs the
/// notification, never the start-up or the shutdown. A lost notification is
/// logged, never fatal: the service manager's timeout is the remedy.
pub fn notify(state: State<'_>) {
    let Some(Some(path)) = NOTIFY_SOCKET.get() else {
        return;
    };
    if let Err(e) = send(path, state.datagram().as_bytes()) {
        tracing::warn!(event = "sd_notify_failed", socket = ?path, error = %e);
    }
}

#[cfg(unix)]
fn send(path: &OsString, msg: &[u8]) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::UnixDatagram;
    let sock = UnixDatagram::unbound()?;
    // A full queue answers EAGAIN instead of parking this thread (and with
    // it the start-up path and the signal handling) until the peer reads.
    sock.set_nonblocking(true)?;
    let bytes = path.as_bytes();
    match bytes.split_first() {
        // `@name`: a Linux abstract socket.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        Some((b'@', name)) => {
            #[cfg(target_os = "android")]
            use std::os::android::net::SocketAddrExt;
            #[cfg(target_os = "linux")]
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(msg, &addr)?;
        }
        Some((b'/', _)) => {
            sock.send_to(msg, std::path::Path::new(path))?;
        }
        _ => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "NOTIFY_SOCKET is neither an absolute path nor @abstract",
            ))
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn send(_path: &OsString, _msg: &[u8]) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_fd_follows_sd_listen_fds() {
        let os = |s: &'static str| Some(std::ffi::OsStr::new(s));
        assert_eq!(passed_fd(os("42"), os("1"), 42), Ok(Some(3)));
        // For another process (a parent that did not clear them): ignored.
        assert_eq!(passed_fd(os("41"), os("1"), 42), Ok(None));
        assert_eq!(passed_fd(None, os("1"), 42), Ok(None));
        assert_eq!(passed_fd(os("42"), os("0"), 42), Ok(None));
        assert_eq!(passed_fd(os("42"), None, 42), Ok(None));
        assert_eq!(
            passed_fd(os("42"), os("2"), 42),
            Err(ActivationError::TooMany(2))
        );
        assert_eq!(
            passed_fd(os("42"), os("x"), 42),
            Err(ActivationError::BadCount("x".into()))
        );
    }

    #[test]
    fn datagrams() {
        assert_eq!(
            State::Ready { endpoint: "/s" }.datagram(),
            "READY=1\nSTATUS=serving on /s\n"
        );
        assert_eq!(
            State::Stopping.datagram(),
            "STOPPING=1\nSTATUS=shutting down\n"
        );
    }
}
