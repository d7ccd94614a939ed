//! Which endpoint a data dir has (§2.2): `<data_dir>/daemon.sock` on Unix,
//! `\\.\pipe\zeroclaw-<hash>` on Windows, or `ZEROCLAW_SOCKET` verbatim.
//!
//! The daemon and every client resolve the endpoint through this one function,
//! so that the same environment and `--config-dir` always reach the same
//! daemon. The pipe hash is computed on every platform so that it is tested
//! everywhere, not only where Windows runs.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;

use sha2::{Digest, Sha256};

#[cfg(unix)]
use super::EndpointError;

/// A resolved local endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointName {
    /// A Unix domain socket path.
    #[cfg(unix)]
    Path(PathBuf),
    /// A Windows named pipe name such as `\\.\pipe\zeroclaw-0123456789abcdef`.
    #[cfg(windows)]
    Pipe(String),
}

impl fmt::Display for EndpointName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(unix)]
            EndpointName::Path(path) => write!(f, "{}", path.display()),
            #[cfg(windows)]
            EndpointName::Pipe(name) => f.write_str(name),
        }
    }
}

/// Resolves the endpoint of `data_dir` (as resolved by
/// [`resolve_dirs`](super::resolve_dirs)). `ZEROCLAW_SOCKET`, when set and
/// non-empty, is used verbatim: not expanded, not made absolute.
pub fn resolve_endpoint(data_dir: &Path, env: impl Fn(&str) -> Option<OsString>) -> EndpointName {
    let overridden = env("ZEROCLAW_SOCKET").filter(|v| !v.is_empty());
    #[cfg(unix)]
    {
        EndpointName::Path(match overridden {
            Some(path) => PathBuf::from(path),
            None => data_dir.join("daemon.sock"),
        })
    }
    #[cfg(windows)]
    {
        EndpointName::Pipe(match overridden {
            Some(name) => name.to_string_lossy().into_owned(),
            None => default_pipe_name(data_dir),
        })
    }
}

/// The first 16 lowercase hex digits of SHA-256 over the UTF-8 bytes of the
/// data dir path. The path must already be absolute and lexically normalized
/// (as [`resolve_dirs`](super::resolve_dirs) returns it); it is hashed as is.
/// A path that is not valid Unicode is hashed in its lossy UTF-8 form.
pub fn pipe_hash(data_dir: &Path) -> String {
    let digest = Sha256::digest(data_dir.to_string_lossy().as_bytes());
    crate::hex::lower(&digest[..8])
}

/// `\\.\pipe\zeroclaw-<pipe_hash(data_dir)>`, the default Windows endpoint.
pub fn default_pipe_name(data_dir: &Path) -> String {
    format!(r"\\.\pipe\zeroclaw-{}", pipe_hash(data_dir))
}

/// The longest socket path, in bytes, that fits in `sockaddr_un.sun_path`
/// with its terminating NUL (107 on Linux, 103 on macOS and the BSDs).
#[cfg(unix)]
pub const SUN_PATH_MAX: usize = std::mem::size_of::<libc::sockaddr_un>()
    - std::mem::offset_of!(libc::sockaddr_un, sun_path)
    - 1;

/// Fails with [`EndpointError::PathTooLong`] when `path` does not fit in
/// `sun_path` (§2.2). Clients call it too, for the same clear error.
#[cfg(unix)]
pub fn check_socket_path(path: &Path) -> Result<(), EndpointError> {
    if path.as_os_str().len() > SUN_PATH_MAX {
        return Err(EndpointError::PathTooLong {
            path: path.to_path_buf(),
            limit: SUN_PATH_MAX,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_hash_is_the_sha256_prefix_of_the_path() {
        // printf '%s' /home/me/.zeroclaw/data | sha256sum
        assert_eq!(
            pipe_hash(Path::new("/home/me/.zeroclaw/data")),
            "ab5d226171c109d3"
        );
        // printf '%s' 'C:\Users\me\.zeroclaw\data' | sha256sum
        assert_eq!(
            pipe_hash(Path::new(r"C:\Users\me\.zeroclaw\data")),
            "5da466d30600f398"
        );
        assert_eq!(
            default_pipe_name(Path::new("/home/me/.zeroclaw/data")),
            r"\\.\pipe\zeroclaw-ab5d226171c109d3"
        );
    }

    #[cfg(unix)]
    #[test]
    fn unix_endpoint_default_and_override() {
        let data = Path::new("/home/me/.zeroclaw/data");
        let none = |_: &str| None;
        assert_eq!(
            resolve_endpoint(data, none),
            EndpointName::Path(PathBuf::from("/home/me/.zeroclaw/data/daemon.sock"))
        );
        let empty = |_: &str| Some(OsString::new());
        assert_eq!(
            resolve_endpoint(data, empty),
            EndpointName::Path(data.join("daemon.sock"))
        );
        let verbatim = |k: &str| (k == "ZEROCLAW_SOCKET").then(|| OsString::from("./x/../y.sock"));
        let name = resolve_endpoint(data, verbatim);
        assert_eq!(name, EndpointName::Path(PathBuf::from("./x/../y.sock")));
        assert_eq!(name.to_string(), "./x/../y.sock");
    }

    #[cfg(windows)]
    #[test]
    fn windows_endpoint_default_and_override() {
        let data = Path::new(r"C:\Users\me\.zeroclaw\data");
        let none = |_: &str| None;
        assert_eq!(
            resolve_endpoint(data, none),
            EndpointName::Pipe(r"\\.\pipe\zeroclaw-5da466d30600f398".to_owned())
        );
        let verbatim = |k: &str| (k == "ZEROCLAW_SOCKET").then(|| OsString::from(r"\\.\pipe\mine"));
        assert_eq!(
            resolve_endpoint(data, verbatim),
            EndpointName::Pipe(r"\\.\pipe\mine".to_owned())
        );
    }

    #[cfg(unix)]
    #[test]
    fn sun_path_limit() {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(SUN_PATH_MAX, 107);
        let fits = format!("/{}", "a".repeat(SUN_PATH_MAX - 1));
        assert!(check_socket_path(Path::new(&fits)).is_ok());
        let long = format!("/{}", "a".repeat(SUN_PATH_MAX));
        match check_socket_path(Path::new(&long)) {
            Err(EndpointError::PathTooLong { path, limit }) => {
                assert_eq!(path, PathBuf::from(&long));
                assert_eq!(limit, SUN_PATH_MAX);
            }
            other => panic!("expected PathTooLong, got {other:?}"),
        }
    }
}
