//! The lexical half of the confinement: a path as a caller's protocol
//! names it, turned into [`Rel`], a path of plain names under the working
//! directory. Where it really leads is decided at open time, beneath the
//! opened directory (resolve.rs), never here.

use std::path::{Component, Path, PathBuf};

use super::Error;

/// A path of plain names (no root, `.` or `..`) under the working
/// directory; empty is the directory itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rel(PathBuf);

impl Rel {
    /// ACP's rule: `path` is absolute, contains no `..`, and lies under
    /// `cwd` as given.
    pub fn absolute_under(cwd: &Path, path: &Path) -> Result<Rel, Error> {
        if !path.is_absolute() {
            return Err(Error::NotAbsolute);
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(Error::DotDot);
        }
        let rest = path.strip_prefix(cwd).map_err(|_| Error::Outside)?;
        Self::plain(rest)
    }

    /// The tools' rule: `given` is relative to `cwd` (or absolute under it,
    /// as given or resolved); a `..` is applied lexically and may not leave it.
    pub fn relative_to(cwd: &Path, given: &str) -> Result<Rel, Error> {
        if given.contains('\0') {
            return Err(Error::Nul);
        }
        let given = Path::new(given);
        let given = if given.is_absolute() {
            let canonical = std::fs::canonicalize(cwd).ok();
            given
                .strip_prefix(cwd)
                .ok()
                .or_else(|| {
                    canonical
                        .as_deref()
                        .and_then(|c| given.strip_prefix(c).ok())
                })
                .ok_or(Error::Outside)?
        } else {
            given
        };
        let mut out = PathBuf::new();
        for part in given.components() {
            match part {
                Component::CurDir => {}
                Component::Normal(name) => out.push(name),
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(Error::Outside);
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(Error::Outside),
            }
        }
        Ok(Rel(out))
    }

    /// `rest` if it has only plain names (`.` is dropped).
    fn plain(rest: &Path) -> Result<Rel, Error> {
        let mut out = PathBuf::new();
        for part in rest.components() {
            match part {
                Component::Normal(name) => out.push(name),
                Component::CurDir => {}
                Component::ParentDir => return Err(Error::DotDot),
                Component::RootDir | Component::Prefix(_) => return Err(Error::Outside),
            }
        }
        if out.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::Nul);
        }
        Ok(Rel(out))
    }

    /// The path relative to the working directory (empty: the directory).
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// This path and one more name.
    pub fn join(&self, name: &std::ffi::OsStr) -> Rel {
        Rel(self.0.join(name))
    }

    /// The directory it is in and its last name; `None` for the directory itself.
    pub fn split(&self) -> Option<(Rel, &std::ffi::OsStr)> {
        let name = self.0.file_name()?;
        let parent = self.0.parent().unwrap_or(Path::new(""));
        Some((Rel(parent.to_owned()), name))
    }

    /// The symlink text `target` found at this path, as a path of the same
    /// kind: relative to this path's directory, `..` applied lexically.
    /// An absolute target, or one that climbs out, is outside (the rule
    /// `RESOLVE_BENEATH` applies to the reads).
    pub fn through_link(&self, target: &Path) -> Result<Rel, Error> {
        if target.is_absolute() {
            return Err(Error::Escapes);
        }
        let base = self.0.parent().unwrap_or(Path::new(""));
        let joined = base.join(target);
        let text = joined.to_str().ok_or(Error::Escapes)?;
        Rel::relative_to(Path::new(""), text).map_err(|_| Error::Escapes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An absolute path written Unix-style, in this platform's form
    /// (`C:\w\s` for `/w/s` on Windows).
    fn abs(p: &str) -> String {
        if cfg!(windows) {
            format!("C:{}", p.replace('/', "\\"))
        } else {
            p.to_owned()
        }
    }

    #[test]
    fn acp_paths_must_be_absolute_plain_and_under_the_directory() {
        let cwd = abs("/w/s");
        let cwd = Path::new(&cwd);
        let rel = |p: &str| Rel::absolute_under(cwd, Path::new(&abs(p)));
        assert_eq!(rel("/w/s/a/b").unwrap().as_path(), Path::new("a/b"));
        assert_eq!(rel("/w/s").unwrap().as_path(), Path::new(""));
        assert!(matches!(
            Rel::absolute_under(cwd, Path::new("a/b")),
            Err(Error::NotAbsolute)
        ));
        assert!(matches!(rel("/w/s/a/../b"), Err(Error::DotDot)));
        assert!(matches!(rel("/w/other"), Err(Error::Outside)));
        assert!(matches!(rel("/w/s2/x"), Err(Error::Outside)));
    }

    #[test]
    fn tool_paths_are_relative_and_dot_dot_may_not_leave() {
        let cwd = abs("/nonexistent-zc/w");
        let cwd = Path::new(&cwd);
        let rel = |p: &str| Rel::relative_to(cwd, p);
        assert_eq!(rel("sub/../a.txt").unwrap().as_path(), Path::new("a.txt"));
        assert_eq!(rel(".").unwrap().as_path(), Path::new(""));
        assert_eq!(
            rel(&abs("/nonexistent-zc/w/x")).unwrap().as_path(),
            Path::new("x")
        );
        for bad in ["..", "../x", "sub/../../x", &abs("/etc/passwd")] {
            assert!(matches!(rel(bad), Err(Error::Outside)), "{bad}");
        }
        assert!(matches!(rel("a\0b"), Err(Error::Nul)));
    }

    #[test]
    fn a_link_target_is_relative_to_the_link_and_stays_inside() {
        let at = Rel::relative_to(Path::new(""), "d/link").unwrap();
        assert_eq!(
            at.through_link(Path::new("../e/f")).unwrap().as_path(),
            Path::new("e/f")
        );
        assert!(matches!(
            at.through_link(Path::new("../../x")),
            Err(Error::Escapes)
        ));
        assert!(matches!(
            at.through_link(Path::new("/etc/passwd")),
            Err(Error::Escapes)
        ));
    }
}
