//! The daemon's local endpoint: where its files live (§2.1), which socket or
//! pipe it serves (§2.2), how it claims that endpoint without ever taking it
//! from a live daemon (§2.3, §2.4), and who connected (§2.5).
//!
//! Startup goes `resolve_dirs` → `ensure_dirs` → `resolve_endpoint` →
//! [`claim`]; the daemon then loops on [`Claimed::accept`] (retrying the
//! errors [`is_transient_accept_error`] names, §2.6) and calls
//! [`Claimed::release`] at shutdown. Clients use the same resolution and
//! [`connect`]. Every startup failure is an [`EndpointError`] whose
//! [`exit_code`](EndpointError::exit_code) is the process's exit status.
//!
//! | file | owns |
//! |---|---|
//! | `dirs.rs` | directory resolution and creation |
//! | `name.rs` | endpoint resolution, pipe hash, `sun_path` limit |
//! | `lock.rs` | the hardened lock files |
//! | `unix.rs` / `windows.rs` | claiming, accepting, releasing |
//! | `activated.rs` | the checks on a socket passed by systemd |
//! | `stream.rs` | streams, their halves, peer labels |
//! | `error.rs` | the error type and exit codes |

#[cfg(unix)]
mod activated;
mod dirs;
mod error;
mod lock;
mod name;
mod stream;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(all(test, unix))]
mod unix_tests;
#[cfg(all(test, windows))]
mod windows_tests;

use std::io;

#[cfg(unix)]
pub use activated::PassedSocketFault;
#[cfg(unix)]
pub use dirs::let_group_traverse;
pub use dirs::{ensure_dirs, normalize_lexically, resolve_dirs, resolve_dirs_from_env, Dirs};
pub use error::{EndpointError, Served};
#[cfg(unix)]
pub use name::{check_socket_path, SUN_PATH_MAX};
pub use name::{default_pipe_name, pipe_hash, resolve_endpoint, EndpointName};
#[cfg(unix)]
pub use stream::into_unix;
pub use stream::{connect, split, LocalReadHalf, LocalStream, LocalWriteHalf, PeerInfo};
#[cfg(unix)]
pub use unix::{claim, claim_passed, lookup_group, Claimed};
#[cfg(windows)]
pub use windows::{claim, Claimed};

/// A numeric group id (`security.socket_group` after lookup).
pub type Gid = u32;

/// Options for [`claim`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimOptions {
    /// `security.socket_group`: serve this group's members too (Unix only).
    /// The group must exist, else [`EndpointError::UnknownGroup`].
    pub socket_group: Option<String>,
}

/// Whether an `accept` error is transient (§2.6): log, wait 50 ms, go on.
/// Any other accept error is fatal.
pub fn is_transient_accept_error(e: &io::Error) -> bool {
    #[cfg(unix)]
    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
        return true;
    }
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_accept_errors() {
        #[cfg(unix)]
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::ECONNABORTED,
            libc::EINTR,
            libc::EAGAIN,
        ] {
            let e = io::Error::from_raw_os_error(errno);
            assert!(is_transient_accept_error(&e), "{e}");
        }
        for kind in [
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::Interrupted,
            io::ErrorKind::WouldBlock,
        ] {
            assert!(is_transient_accept_error(&io::Error::from(kind)));
        }
        #[cfg(unix)]
        for errno in [libc::EBADF, libc::EINVAL, libc::ENOTSOCK] {
            assert!(!is_transient_accept_error(&io::Error::from_raw_os_error(
                errno
            )));
        }
        assert!(!is_transient_accept_error(&io::Error::other("boom")));
    }
}
