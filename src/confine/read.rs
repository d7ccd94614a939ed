//! Bounded reads of regular files: opened without blocking (a FIFO with no
//! writer answers at once), checked on the opened handle (`fstat`: a FIFO,
//! a device or a socket is refused whatever its size says), and read
//! through a hard bound (a file that grows while read stops there).

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::sys::OPEN_FLAGS;
use super::{read_bounded, read_whole_of, Admit, Error, Rel, Root};

impl Root {
    /// The whole regular file `rel`, refused when over `max` bytes;
    /// `follow_last` false refuses a symlink as its last name.
    pub fn read_whole(
        &self,
        rel: &Rel,
        max: u64,
        follow_last: bool,
        admit: Admit<'_>,
    ) -> Result<Vec<u8>, Error> {
        let file = File::from(self.open_at(rel, libc::O_RDONLY, follow_last)?);
        read_whole_of(file, max, admit)
    }

    /// At most the first `n` bytes of the regular file `rel`.
    pub fn read_prefix(&self, rel: &Rel, n: u64, admit: Admit<'_>) -> Result<Vec<u8>, Error> {
        read_bounded(
            File::from(self.open_at(rel, libc::O_RDONLY, true)?),
            n,
            admit,
        )
    }
}

/// At most the first `n` bytes of the regular file at `path` (any path:
/// `session/git_branch` reads `.git` files above the working directory),
/// opened without blocking. Not charged: its callers read little (1 MiB
/// at most, in a pool of 4).
pub fn read_regular(path: &Path, n: u64) -> Result<Vec<u8>, Error> {
    let file = File::options()
        .read(true)
        .custom_flags(OPEN_FLAGS)
        .open(path)?;
    read_bounded(file, n, &mut |_| true)
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
        let any = &mut |_| true;
        let start = Instant::now();
        assert!(matches!(
            root.read_whole(&rel("p"), 10, true, any),
            Err(Error::NotRegular)
        ));
        assert!(matches!(
            read_regular(&d.join("p"), 10),
            Err(Error::NotRegular)
        ));
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(
            root.read_whole(&rel("f"), 10, true, any).unwrap(),
            b"0123456789"
        );
        assert!(matches!(
            root.read_whole(&rel("f"), 9, true, any),
            Err(Error::TooLarge { max: 9 })
        ));
        assert_eq!(root.read_prefix(&rel("f"), 4, any).unwrap(), b"0123");
        assert!(matches!(
            root.read_whole(&rel(""), 10, true, any),
            Err(Error::NotRegular)
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn what_a_read_holds_is_admitted_first() {
        let d = testing::scratch("read-admit", &[("f", "0123456789")]);
        let root = Root::open(&d).unwrap();
        let rel = Rel::relative_to(Path::new(""), "f").unwrap();
        let mut asked = Vec::new();
        let bytes = root.read_whole(&rel, 100, true, &mut |n| {
            asked.push(n);
            true
        });
        assert_eq!(bytes.unwrap(), b"0123456789");
        assert_eq!(asked, [11], "the size fstat says, and one byte more");
        let refused = root.read_whole(&rel, 100, true, &mut |_| false);
        assert!(matches!(refused, Err(Error::NoMemory)));
        let _ = std::fs::remove_dir_all(&d);
    }
}
