//! The one way the daemon reads a file it reads on its own (`config.toml`, the API key file an
//! agent names, the store's seal): nobody vouches for what sits at the path, so the open never
//! blocks (a FIFO with no writer, a device), the opened handle must be a regular file (checked
//! with `fstat` on the handle, not with a `stat` of the path that a rename could race), and the
//! read stops one byte past a bound so that `/dev/zero` or a file growing while read cannot take
//! the daemon's memory. A symbolic link is followed: what it finally names must be a regular file.
//!
//! Also the open of a lock file beside such a file ([`open_lock_file`]), with the same flags and
//! the same regular-file rule.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Flags of every open here: never block (a FIFO without a writer answers at once, a device
/// whose open waits does not), never become the daemon's controlling terminal, never leak into
/// an agent the daemon starts.
#[cfg(unix)]
const OPEN_FLAGS: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names a FIFO, a device, a socket or a directory.
    #[error("is not a regular file")]
    NotRegular,
    /// The file holds more than `max` bytes.
    #[error("is larger than {max} bytes")]
    TooLarge { max: u64 },
    /// The open or the read failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl ReadError {
    /// The OS error behind it, if one caused it.
    pub fn io(&self) -> Option<&io::Error> {
        match self {
            ReadError::Io(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the path names nothing.
    pub fn is_not_found(&self) -> bool {
        self.io()
            .is_some_and(|e| e.kind() == io::ErrorKind::NotFound)
    }
}

/// The whole regular file at `path`, refused when it holds more than `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let (file, meta) = open(path)?;
    read_opened(file, &meta, max)
}

/// Opens the regular file at `path` for reading without blocking; with its metadata (from the
/// handle), for a caller that checks more (an API key file's mode) before [`read_opened`].
pub fn open(path: &Path) -> Result<(File, Metadata), ReadError> {
    let file = options().read(true).open(path)?;
    let meta = check_regular(&file)?;
    Ok((file, meta))
}

/// The whole of `file` (opened by [`open`], which gave `meta`), refused when it holds more than
/// `max` bytes.
pub fn read_opened(file: File, meta: &Metadata, max: u64) -> Result<Vec<u8>, ReadError> {
    // What fstat said, plus one byte to see the end; a file that grows past the bound is
    // stopped by `take` whatever the size said.
    let hint = usize::try_from(meta.len().min(max))
        .unwrap_or(0)
        .saturating_add(1);
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(hint).map_err(io::Error::other)?;
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge { max });
    }
    Ok(bytes)
}

/// Opens (creating, mode 0600 on Unix) the lock file at `path` for writing, without blocking and
/// only if it is a regular file. The file's content is never read.
pub fn open_lock_file(path: &Path) -> Result<File, ReadError> {
    let mut options = options();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    check_regular(&file)?;
    Ok(file)
}

fn options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, OPEN_FLAGS);
    options
}

/// The check on the opened handle: a FIFO, a device or a directory is refused whatever its
/// size says.
fn check_regular(file: &File) -> Result<Metadata, ReadError> {
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(ReadError::NotRegular)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "zc-bounded-file-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = scratch("fifo");
        let p = d.join("config.toml");
        mkfifo(&p);
        let start = Instant::now();
        assert!(matches!(read(&p, 10), Err(ReadError::NotRegular)));
        assert!(matches!(
            open_lock_file(&p),
            Err(ReadError::NotRegular) | Err(ReadError::Io(_))
        ));
        assert!(start.elapsed() < Duration::from_secs(2));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_device_is_refused_even_through_a_symlink() {
        let d = scratch("dev");
        let p = d.join("config.toml");
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        assert!(matches!(read(&p, 4096), Err(ReadError::NotRegular)));
        assert!(matches!(
            read(Path::new("/dev/zero"), 4096),
            Err(ReadError::NotRegular)
        ));
        assert!(matches!(read(&d, 4096), Err(ReadError::NotRegular)));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_over_the_bound_is_refused_and_one_at_it_is_read() {
        let d = scratch("size");
        let p = d.join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read(&p, 10).unwrap(), b"0123456789");
        assert_eq!(read(&p, 11).unwrap(), b"0123456789");
        let e = read(&p, 9).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { max: 9 }), "{e:?}");
        assert_eq!(e.to_string(), "is larger than 9 bytes");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(read(&p, 9).unwrap(), b"");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_symlink_to_a_regular_file_is_read() {
        let d = scratch("link");
        let target = d.join("target.toml");
        std::fs::write(&target, b"schema_version = 1\n").unwrap();
        let link = d.join("config.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read(&link, 100).unwrap(), b"schema_version = 1\n");
        assert!(read(&d.join("missing"), 100).unwrap_err().is_not_found());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_lock_file_is_created_private_and_reopened() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("lock");
        let p = d.join("config.toml.lock");
        drop(open_lock_file(&p).unwrap());
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(open_lock_file(&p).unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
