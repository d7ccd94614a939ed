//! The confinement where `openat2`/`openat` are not available (non-Unix):
//! paths resolved through `canonicalize` and checked to stay under the
//! working directory before use. A race with a concurrent rename is not
//! defended against here.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{canonical, read_bounded, read_whole_of, Admit, Entry, Error, Rel};

/// The working directory.
#[derive(Debug)]
pub struct Root {
    dir: PathBuf,
}

/// A directory beneath the root.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
}

impl Dir {
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }
}

impl Root {
    pub fn open(dir: &Path) -> Result<Root, Error> {
        Ok(Root {
            dir: canonical(dir)?,
        })
    }

    /// `rel` resolved; its deepest existing part must stay inside.
    fn real(&self, rel: &Rel) -> Result<PathBuf, Error> {
        let joined = self.dir.join(rel.as_path());
        let mut existing = joined.as_path();
        loop {
            if let Ok(r) = canonical(existing) {
                // Joined only when something is left: `join("")` adds a
                // trailing separator, which Windows refuses in a file's
                // name (ERROR_INVALID_NAME).
                let rest = joined.strip_prefix(existing).unwrap_or(Path::new(""));
                return if !r.starts_with(&self.dir) {
                    Err(Error::Escapes)
                } else if rest.as_os_str().is_empty() {
                    Ok(r)
                } else {
                    Ok(r.join(rest))
                };
            }
            existing = existing.parent().ok_or(Error::Escapes)?;
        }
    }

    pub fn read_whole(
        &self,
        rel: &Rel,
        max: u64,
        _follow_last: bool,
        admit: Admit<'_>,
    ) -> Result<Vec<u8>, Error> {
        read_whole_of(File::open(self.real(rel)?)?, max, admit)
    }

    pub fn read_prefix(&self, rel: &Rel, n: u64, admit: Admit<'_>) -> Result<Vec<u8>, Error> {
        read_bounded(File::open(self.real(rel)?)?, n, admit)
    }

    pub fn write(&self, rel: &Rel, bytes: &[u8]) -> Result<(), Error> {
        let path = self.real(rel)?;
        let dir = path.parent().ok_or(Error::NotRegular)?;
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(super::temp_name()?);
        let mut f = File::options().write(true).create_new(true).open(&tmp)?;
        // Closed before the rename: Windows cannot rename a file that is
        // open without FILE_SHARE_DELETE (std's fallback for that case
        // fails outright under Wine).
        let written = f
            .write_all(bytes)
            .and_then(|()| f.sync_all())
            .and_then(|()| {
                drop(f);
                std::fs::rename(&tmp, &path)
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
        Ok(())
    }

    pub fn open_dir(&self, rel: &Rel) -> Result<Dir, Error> {
        let path = self.real(rel)?;
        if !path.is_dir() {
            return Err(Error::NotDir);
        }
        Ok(Dir { path })
    }

    pub fn list(&self, rel: &Rel, _follow_last: bool) -> Result<Vec<Entry>, Error> {
        let entries = std::fs::read_dir(self.real(rel)?)?;
        Ok(entries
            .map(|e| e.map(Entry::of))
            .collect::<Result<_, _>>()?)
    }
}

/// At most the first `n` bytes of the regular file at `path`.
pub fn read_regular(path: &Path, n: u64) -> Result<Vec<u8>, Error> {
    read_bounded(File::open(path)?, n, &mut |_| true)
}
