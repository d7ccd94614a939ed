//! Confinement of a tool's path to the session's working directory.
//!
//! A path is taken relative to the working directory, normalized lexically
//! (a `..` that would leave it is refused), then the deepest part of it that
//! exists is resolved through symlinks and must still lie inside the
//! (resolved) working directory: a symlink pointing out is refused as well.
//! A race with a concurrent rename is outside this bound (docs/agents.md).

use std::path::{Component, Path, PathBuf};

/// The error every refused path gets.
pub const OUTSIDE: &str = "path is outside the working directory";

/// `rel` inside `cwd`, or why not. The result need not exist.
pub fn resolve(cwd: &Path, rel: &str) -> Result<PathBuf, String> {
    if rel.contains('\0') {
        return Err("path contains NUL".into());
    }
    let root = std::fs::canonicalize(cwd)
        .map_err(|e| format!("working directory {}: {e}", cwd.display()))?;
    let mut joined = root.clone();
    let given = Path::new(rel);
    let given = given.strip_prefix(&root).unwrap_or(given);
    for part in given.components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => joined.push(name),
            Component::ParentDir => {
                if joined == root {
                    return Err(OUTSIDE.into());
                }
                joined.pop();
            }
            // An absolute path not under the working directory.
            Component::RootDir | Component::Prefix(_) => return Err(OUTSIDE.into()),
        }
    }
    // The deepest existing ancestor (or the path itself), resolved.
    let mut existing = joined.as_path();
    let resolved = loop {
        match std::fs::canonicalize(existing) {
            Ok(r) => break r,
            Err(_) => match existing.parent() {
                Some(parent) => existing = parent,
                None => return Err(OUTSIDE.into()),
            },
        }
    };
    if !resolved.starts_with(&root) {
        return Err(OUTSIDE.into());
    }
    Ok(joined)
}

/// `path` relative to `cwd` for display (as the model named it).
pub fn shown(cwd: &Path, path: &Path) -> String {
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    match path.strip_prefix(&root) {
        Ok(p) if p.as_os_str().is_empty() => ".".into(),
        Ok(p) => p.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("zc-confine-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        d
    }

    #[test]
    fn inside_paths_resolve_and_escapes_are_refused() {
        let d = dir();
        let root = std::fs::canonicalize(&d).unwrap();
        assert_eq!(resolve(&d, "sub/../a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(resolve(&d, ".").unwrap(), root);
        assert_eq!(resolve(&d, "new/deep/x").unwrap(), root.join("new/deep/x"));
        assert_eq!(
            resolve(&d, root.join("sub").to_str().unwrap()).unwrap(),
            root.join("sub")
        );
        for bad in ["..", "../x", "sub/../../x", "/etc/passwd"] {
            assert_eq!(resolve(&d, bad).unwrap_err(), OUTSIDE, "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", d.join("out")).unwrap();
            assert_eq!(resolve(&d, "out/passwd").unwrap_err(), OUTSIDE);
            assert_eq!(resolve(&d, "out/none/x").unwrap_err(), OUTSIDE);
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
