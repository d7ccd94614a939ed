//! Bounded reads of regular files: opened without blocking (a FIFO with no
//! writer answers at once), checked on the opened handle (`fstat`: a FIFO,
//! a device or a socket is refused whatever its size says), and read
//! through a hard bound (a file that grows while read stops there).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::sys::OPEN_FLAGS;
use super::{Error, Rel, Root};

impl Root {
    /// The whole regular file `rel`, refused when over `max` bytes;
    /// `follow_last` false refuses a symlink as its last name.
    pub fn read_whole(&self, rel: &Rel, max: u64, follow_last: bool) -> Result<Vec<u8>, Error> {
        let file = File::from(self.open_at(rel, libc::O_RDONLY, follow_last)?);
        let bytes = read_bounded(file, max.saturating_add(1))?;
        if bytes.len() as u64 > max {
            return Err(Error::TooLarge { max });
        }
        Ok(bytes)
    }

    /// At most the first `n` bytes of the regular file `rel`.
    pub fn read_prefix(&self, rel: &Rel, n: u64) -> Result<Vec<u8>, Error> {
        read_bounded(File::from(self.open_at(rel, libc::O_RDONLY, true)?), n)
    }
}

/// At most the first `n` bytes of the regular file at `path` (any path:
/// `session/git_branch` reads `.git` files above the working directory),
/// opened without blocking.
pub fn read_regular(path: &Path, n: u64) -> Result<Vec<u8>, Error> {
    let file = File::options()
        .read(true)
        .custom_flags(OPEN_FLAGS)
        .open(path)?;
    read_bounded(file, n)
}

/// Checks that `file` is a regular file, then reads at most `n` bytes of it
/// (into a buffer sized by what `fstat` says, never past `n`).
fn read_bounded(file: File, n: u64) -> Result<Vec<u8>, Error> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::NotRegular);
    }
    let expected = meta.len().min(n);
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    file.take(n).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::testing;
    use std::time::{Duration, Instant};

    #[test]
    fn a_fifo_is_refused_at_once_and_files_are_bounded() {
        let d = testing::scratch("read", &[("f", "0123456789")]);
        testing::mkfifo(&d.join("p"));
        let root = Root::open(&d).unwrap();
        let rel = |s: &str| Rel::relative_to(Path::new(""), s).unwrap();
        let start = Instant::now();
        assert!(matches!(
            root.read_whole(&rel("p"), 10, true),
            Err(Error::NotRegular)
        ));
        assert!(matches!(
            read_regular(&d.join("p"), 10),
            Err(Error::NotRegular)
        ));
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(root.read_whole(&rel("f"), 10, true).unwrap(), b"0123456789");
        assert!(matches!(
            root.read_whole(&rel("f"), 9, true),
            Err(Error::TooLarge { max: 9 })
        ));
        assert_eq!(root.read_prefix(&rel("f"), 4).unwrap(), b"0123");
        assert!(matches!(
            root.read_whole(&rel(""), 10, true),
            Err(Error::NotRegular)
        ));
        let _ = std::fs::remove_dir_all(&d);
    }
}
