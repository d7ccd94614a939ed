//! Directories beneath the root: their entries (listed through the opened
//! descriptor, so the directory read is the one the kernel resolved), and a
//! child's working directory (`terminal/create`'s `cwd`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use super::{Entry, Error, Rel, Root};

/// A directory opened beneath the root, held open while in use.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// A path naming this very directory while it is held: the process's
    /// own descriptor (a child given it as its working directory changes to
    /// the directory opened, not to whatever the name means by then).
    pub fn path(&self) -> PathBuf {
        let fd = self.fd.as_raw_fd();
        if cfg!(any(target_os = "linux", target_os = "android")) {
            PathBuf::from(format!("/proc/self/fd/{fd}"))
        } else {
            PathBuf::from(format!("/dev/fd/{fd}"))
        }
    }
}

impl Root {
    /// The directory `rel` opened beneath the root (symlinks that stay
    /// inside followed).
    pub fn open_dir(&self, rel: &Rel) -> Result<Dir, Error> {
        Ok(Dir {
            fd: self.dir(rel, false)?,
        })
    }

    /// The entries of directory `rel` (unsorted); `follow_last` false
    /// refuses a symlink as its last name.
    pub fn list(&self, rel: &Rel, follow_last: bool) -> Result<Vec<Entry>, Error> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        let dir = Dir {
            fd: self.open_at(rel, flags, follow_last)?,
        };
        let entries = std::fs::read_dir(dir.path())?;
        Ok(entries
            .map(|e| e.map(Entry::of))
            .collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::Kind;
    use std::path::Path;

    #[test]
    fn lists_through_the_descriptor_and_a_child_runs_in_the_opened_dir() {
        let d = crate::confine::testing::scratch("dir", &[("ws/sub/", ""), ("ws/f", "")]);
        std::os::unix::fs::symlink("sub", d.join("ws/l")).unwrap();
        let root = Root::open(&d.join("ws")).unwrap();
        let top = Rel::relative_to(Path::new(""), "").unwrap();
        let mut names: Vec<_> = root
            .list(&top, true)
            .unwrap()
            .into_iter()
            .map(|e| (e.name.into_string().unwrap(), e.kind))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        let want = [("f", Kind::File), ("l", Kind::Other), ("sub", Kind::Dir)];
        let want: Vec<_> = want.iter().map(|(n, k)| (n.to_string(), *k)).collect();
        assert_eq!(names, want);
        let sub = root
            .open_dir(&Rel::relative_to(Path::new(""), "sub").unwrap())
            .unwrap();
        let out = std::process::Command::new("pwd")
            .current_dir(sub.path())
            .output()
            .unwrap();
        let real = d.join("ws/sub").canonicalize().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            real.to_str().unwrap()
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
