//! The one error type of directory resolution and endpoint claiming, and its
//! mapping to the daemon's exit status (§2.3: 3 when the data dir or the
//! endpoint is already owned or serving, 1 otherwise).
//!
//! The messages are the operator's only clue at startup, so each names the
//! path involved and uses the spec's wording verbatim where the spec gives one.

use std::io;
use std::path::PathBuf;

/// Startup cannot continue.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// Another process owns or serves this data dir or endpoint (exit 3).
    #[error("{0}")]
    AlreadyServed(Served),
    /// Something other than a socket sits at the socket path; it is never removed.
    #[error("`{}` exists and is not a socket", .0.display())]
    NotASocket(PathBuf),
    /// A lock file or its directory failed the safety checks of §2.3 step 2.
    #[error("unsafe lock path `{}`: {why}", path.display())]
    UnsafeLock {
        /// The lock file or the directory holding it.
        path: PathBuf,
        /// Which check failed.
        why: String,
    },
    /// The stale socket was replaced or removed between the probe and the unlink.
    #[error("endpoint changed while being probed: `{}`", .0.display())]
    Changed(PathBuf),
    /// The socket path does not fit in `sockaddr_un.sun_path`.
    #[error(
        "socket path `{}` is {} bytes long, over the platform's sun_path limit of {limit} bytes",
        path.display(),
        path.as_os_str().len()
    )]
    PathTooLong {
        /// The offending path.
        path: PathBuf,
        /// The longest path the platform accepts, in bytes (without the NUL).
        limit: usize,
    },
    /// `security.socket_group` names a group that does not exist.
    #[error("socket group `{0}` does not exist")]
    UnknownGroup(String),
    /// A path starts with `~` (or the default `~/.zeroclaw` applies) and no home
    /// directory is known.
    #[error("cannot expand `~`: the home directory is unknown")]
    NoHome,
    /// A directory the daemon would make private is not its own (§2.3 step 1).
    #[error(transparent)]
    PrivateDir(#[from] crate::private_dir::PrivateDirError),
    /// A socket passed by socket activation failed a check (`activated.rs`).
    #[cfg(unix)]
    #[error("passed socket refused: {0}")]
    PassedSocket(super::PassedSocketFault),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// Who already holds what, for [`EndpointError::AlreadyServed`].
#[derive(Debug, thiserror::Error)]
pub enum Served {
    /// The data-dir lock (`<data_dir>/daemon.lock`) is held (§2.3 step 1a).
    #[error("data dir `{}` is already served by another daemon", .0.display())]
    DataDir(PathBuf),
    /// The lifecycle lock (`<socket>.lock`) is held (§2.3 step 2).
    #[error("endpoint already owned (lock file `{}` is held by another process)", .0.display())]
    LockHeld(PathBuf),
    /// Something answers at the endpoint (§2.3 step 3, §2.4).
    #[error("endpoint is already serving at `{0}`")]
    Serving(String),
}

impl EndpointError {
    /// The process exit status for this startup failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            EndpointError::AlreadyServed(_) => 3,
            _ => 1,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        EndpointError::Io {
            context: context.into(),
            source,
        }
    }

    #[cfg(unix)]
    pub(crate) fn unsafe_lock(path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        EndpointError::UnsafeLock {
            path: path.into(),
            why: why.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let served = EndpointError::AlreadyServed(Served::DataDir("/d".into()));
        assert_eq!(served.exit_code(), 3);
        let held = EndpointError::AlreadyServed(Served::LockHeld("/d/s.lock".into()));
        assert_eq!(held.exit_code(), 3);
        let serving = EndpointError::AlreadyServed(Served::Serving("/d/s".into()));
        assert_eq!(serving.exit_code(), 3);
        assert_eq!(EndpointError::NotASocket("/x".into()).exit_code(), 1);
        assert_eq!(EndpointError::UnknownGroup("g".into()).exit_code(), 1);
        assert_eq!(EndpointError::io("x", io::Error::other("y")).exit_code(), 1);
    }

    #[test]
    fn messages_use_the_spec_wording() {
        let e = EndpointError::AlreadyServed(Served::DataDir("/d".into()));
        assert_eq!(
            e.to_string(),
            "data dir `/d` is already served by another daemon"
        );
        let e = EndpointError::AlreadyServed(Served::Serving("/d/daemon.sock".into()));
        assert_eq!(
            e.to_string(),
            "endpoint is already serving at `/d/daemon.sock`"
        );
        let e = EndpointError::AlreadyServed(Served::LockHeld("/d/daemon.sock.lock".into()));
        assert!(e.to_string().starts_with("endpoint already owned"));
        let e = EndpointError::NotASocket("/d/daemon.sock".into());
        assert_eq!(e.to_string(), "`/d/daemon.sock` exists and is not a socket");
        let e = EndpointError::Changed("/d/daemon.sock".into());
        assert!(e
            .to_string()
            .starts_with("endpoint changed while being probed"));
        let e = EndpointError::PathTooLong {
            path: "/abc".into(),
            limit: 107,
        };
        assert_eq!(
            e.to_string(),
            "socket path `/abc` is 4 bytes long, over the platform's sun_path limit of 107 bytes"
        );
    }
}
