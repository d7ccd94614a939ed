//! [`Root`]: the working directory, opened once, and every open beneath it.
//!
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` where the kernel has
//! it (Linux >= 5.6): `..` or a symlink leaving the directory, an absolute
//! symlink and a `/proc` magic link are refused by the kernel (`EXDEV`,
//! `ELOOP`) at the moment of the open, so a swap between a check and a use
//! has nothing to race. Without it (`ENOSYS`: an older kernel, a sandbox
//! that filters it, another Unix) each name is opened with `openat` and
//! `O_NOFOLLOW` from the previous directory: no symlink is followed at all.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

use super::sys::{self, OPEN_FLAGS};
use super::{Error, Rel};

/// Set once `openat2` answered `ENOSYS`: the walk is used from then on.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The working directory, opened.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens `dir` (the session's working directory: the operator's path,
    /// resolved as given).
    pub fn open(dir: &Path) -> Result<Root, Error> {
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | OPEN_FLAGS)
            .open(dir)?;
        Ok(Root { fd: file.into() })
    }

    /// Opens `rel` beneath the directory with `flags` (plus the non-blocking
    /// set); `follow_last` false refuses a symlink as the last name.
    pub(super) fn open_at(
        &self,
        rel: &Rel,
        flags: libc::c_int,
        follow_last: bool,
    ) -> Result<OwnedFd, Error> {
        let flags = flags | OPEN_FLAGS | if follow_last { 0 } else { libc::O_NOFOLLOW };
        let path = rel.as_path();
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let text = if path.as_os_str().is_empty() {
                CString::from(c".")
            } else {
                sys::c_name(path.as_os_str())?
            };
            let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
            match sys::openat2(self.fd.as_fd(), &text, flags, resolve) {
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    // A rename raced the resolution; once more, then the walk.
                    if let Ok(fd) = sys::openat2(self.fd.as_fd(), &text, flags, resolve) {
                        return Ok(fd);
                    }
                }
                other => return other.map_err(Error::of_open),
            }
        }
        self.walk(path, flags)
    }

    /// The walk without `openat2`: one name at a time, no symlink followed.
    fn walk(&self, path: &Path, flags: libc::c_int) -> Result<OwnedFd, Error> {
        let names: Vec<_> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let Some((last, dirs)) = names.split_last() else {
            return sys::openat(self.fd.as_fd(), c".", flags, 0).map_err(Error::of_open);
        };
        let mut here: Option<OwnedFd> = None;
        let dir_flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | OPEN_FLAGS;
        for name in dirs {
            let at = here.as_ref().map_or(self.fd.as_fd(), |f| f.as_fd());
            here = Some(open_name(at, name, dir_flags)?);
        }
        let at = here.as_ref().map_or(self.fd.as_fd(), |f| f.as_fd());
        open_name(at, last, flags | libc::O_NOFOLLOW)
    }

    /// The directory `rel` (opened for reading), created with its missing
    /// parents (`mkdirat` beneath the root, one name at a time) when `create`.
    pub(super) fn dir(&self, rel: &Rel, create: bool) -> Result<OwnedFd, Error> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        match self.open_at(rel, flags, true) {
            Err(e) if create && e.is_not_found() => {}
            other => return other,
        }
        let mut sofar = Rel::relative_to(Path::new(""), "")?;
        let mut here = self.open_at(&sofar, flags, true)?;
        for part in rel.as_path().components() {
            let Component::Normal(name) = part else {
                continue;
            };
            sofar = sofar.join(name);
            here = match self.open_at(&sofar, flags, true) {
                Err(e) if e.is_not_found() => {
                    match sys::mkdirat(here.as_fd(), &sys::c_name(name)?) {
                        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e.into()),
                        _ => {}
                    }
                    self.open_at(&sofar, flags, true)?
                }
                other => other?,
            };
        }
        Ok(here)
    }

    /// The opened directory itself.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One name opened in `at` with `O_NOFOLLOW` among `flags`. A symlink is
/// refused as an escape (with `O_DIRECTORY` the kernel says `ENOTDIR`).
fn open_name(
    at: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    flags: libc::c_int,
) -> Result<OwnedFd, Error> {
    let c_name = sys::c_name(name)?;
    sys::openat(at, &c_name, flags, 0).map_err(|e| {
        if sys::lstat_type(at, &c_name).ok() == Some(libc::S_IFLNK) {
            Error::Escapes
        } else {
            Error::of_open(e)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(name: &str) -> std::path::PathBuf {
        crate::confine::testing::scratch(
            &format!("resolve-{name}"),
            &[("secret", "s"), ("ws/sub/f", "f")],
        )
    }

    fn rel(s: &str) -> Rel {
        Rel::relative_to(Path::new(""), s).unwrap()
    }

    #[test]
    fn symlinks_inside_resolve_and_escapes_are_refused_at_open() {
        let d = tmp("beneath");
        let ws = d.join("ws");
        symlink("sub/f", ws.join("in")).unwrap();
        symlink("../secret", ws.join("up")).unwrap();
        symlink(d.join("secret"), ws.join("abs")).unwrap();
        symlink("../..", ws.join("sub/parent")).unwrap();
        let root = Root::open(&ws).unwrap();
        assert!(root.open_at(&rel("sub/f"), libc::O_RDONLY, false).is_ok());
        for bad in ["up", "abs", "sub/parent/secret"] {
            let e = root.open_at(&rel(bad), libc::O_RDONLY, true).unwrap_err();
            assert!(matches!(e, Error::Escapes), "{bad}: {e:?}");
        }
        let e = root.open_at(&rel("in"), libc::O_RDONLY, false).unwrap_err();
        assert!(matches!(e, Error::Escapes), "O_NOFOLLOW: {e:?}");
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            // A relative symlink that stays inside is followed (openat2 only).
            assert!(root.open_at(&rel("in"), libc::O_RDONLY, true).is_ok());
        }
        assert!(root
            .open_at(&rel("none"), libc::O_RDONLY, true)
            .unwrap_err()
            .is_not_found());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_walk_follows_no_symlink() {
        let d = tmp("walk");
        let ws = d.join("ws");
        symlink("sub", ws.join("in")).unwrap();
        let root = Root::open(&ws).unwrap();
        let flags = libc::O_RDONLY | OPEN_FLAGS;
        assert!(root.walk(Path::new("sub/f"), flags).is_ok());
        assert!(matches!(
            root.walk(Path::new("in/f"), flags),
            Err(Error::Escapes)
        ));
        assert!(matches!(
            root.walk(Path::new("in"), flags),
            Err(Error::Escapes)
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_parents_are_created_beneath_and_a_linked_one_is_refused() {
        let d = tmp("mkdir");
        let ws = d.join("ws");
        std::fs::create_dir_all(d.join("out")).unwrap();
        symlink(d.join("out"), ws.join("link")).unwrap();
        let root = Root::open(&ws).unwrap();
        root.dir(&rel("a/b/c"), true).unwrap();
        assert!(ws.join("a/b/c").is_dir());
        assert!(matches!(
            root.dir(&rel("link/new"), true),
            Err(Error::Escapes)
        ));
        assert!(!d.join("out/new").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
