//! Atomic writes beneath the root: the file's directory is opened (missing
//! parents made with `mkdirat`, one name at a time, each beneath the root),
//! the bytes go to a fresh temporary of an unpredictable name created with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` in that very directory, fsynced, renamed
//! over the name with `renameat` inside the same descriptor, and the
//! directory fsynced. Nothing planted at any name is ever written through.
//!
//! A symlink at the file's own name is written through (as editors do) only
//! when its text is relative and stays inside; the target is then opened
//! beneath the root like any other path. Anything else at the name (a FIFO,
//! a file) is replaced, never opened.

use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::sys;
use super::{Error, Rel, Root};

/// Most symlinks followed at a written name (the kernel's own limit).
const MAX_LINKS: usize = 40;

impl Root {
    /// Creates or replaces the file `rel` with `bytes`, atomically.
    pub fn write(&self, rel: &Rel, bytes: &[u8]) -> Result<(), Error> {
        let mut rel = rel.clone();
        for _ in 0..MAX_LINKS {
            let Some((parent, name)) = rel.split() else {
                return Err(Error::NotRegular);
            };
            let dir = self.dir(&parent, true)?;
            let c_name = sys::c_name(name)?;
            match sys::lstat_type(dir.as_fd(), &c_name) {
                Ok(libc::S_IFLNK) => {
                    let text = sys::readlinkat(dir.as_fd(), &c_name)?;
                    rel = rel.through_link(Path::new(OsStr::from_bytes(&text)))?;
                }
                _ => {
                    replace(dir.as_fd(), &c_name, bytes)?;
                    return File::from(dir).sync_all().map_err(Error::from);
                }
            }
        }
        Err(Error::Escapes)
    }
}

/// `bytes` into a fresh temporary in `dir`, renamed over `name`.
fn replace(dir: BorrowedFd<'_>, name: &CStr, bytes: &[u8]) -> Result<(), Error> {
    let tmp = sys::c_name(OsStr::new(&super::temp_name()?))?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut file = File::from(sys::openat(dir, &tmp, flags, 0o666)?);
    let written = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        sys::renameat(dir, &tmp, name)
    })();
    if let Err(e) = written {
        let _ = sys::unlinkat(dir, &tmp);
        return Err(e.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::testing;
    use std::os::unix::fs::symlink;

    #[test]
    fn writes_replace_atomically_follow_inside_links_and_refuse_escapes() {
        let d = testing::scratch("write", &[("ws/", ""), ("out/secret", "s")]);
        let ws = d.join("ws");
        let root = Root::open(&ws).unwrap();
        let rel = |s: &str| Rel::relative_to(Path::new(""), s).unwrap();
        root.write(&rel("a/b/c.txt"), b"one").unwrap();
        root.write(&rel("a/b/c.txt"), b"two").unwrap();
        assert_eq!(std::fs::read(ws.join("a/b/c.txt")).unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(ws.join("a/b")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary is left");
        // Written through a relative link that stays inside.
        symlink("a/b/c.txt", ws.join("in")).unwrap();
        root.write(&rel("in"), b"three").unwrap();
        assert_eq!(std::fs::read(ws.join("a/b/c.txt")).unwrap(), b"three");
        assert!(ws.join("in").is_symlink());
        // Links leaving, as the name or as a directory on the way, are refused.
        symlink(d.join("out/secret"), ws.join("abs")).unwrap();
        symlink("../out/secret", ws.join("up")).unwrap();
        symlink(d.join("out"), ws.join("dir")).unwrap();
        for bad in ["abs", "up", "dir/secret", "dir/new"] {
            let e = root.write(&rel(bad), b"x").unwrap_err();
            assert!(e.is_outside(), "{bad}: {e:?}");
        }
        assert_eq!(std::fs::read(d.join("out/secret")).unwrap(), b"s");
        assert!(!d.join("out/new").exists());
        // A FIFO at the name is replaced, never opened.
        testing::mkfifo(&ws.join("p"));
        root.write(&rel("p"), b"file").unwrap();
        assert_eq!(std::fs::read(ws.join("p")).unwrap(), b"file");
        let _ = std::fs::remove_dir_all(&d);
    }
}
