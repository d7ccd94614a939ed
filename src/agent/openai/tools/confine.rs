//! The tools' side of the confinement ([`crate::confine`], the same rule as
//! ACP's `fs/*`): a path relative to the session's working directory (or
//! absolute under it), `..` applied lexically and never leaving it, then
//! opened beneath the opened directory by the kernel. The tools' wording of
//! a refusal lives here.

use std::path::Path;

use crate::confine::{Error, Rel, Root};

/// The error every refused path gets.
pub const OUTSIDE: &str = "path is outside the working directory";

/// The opened working directory and `given` under it, or why not.
pub fn open(cwd: &Path, given: &str) -> Result<(Root, Rel), String> {
    let rel = Rel::relative_to(cwd, given).map_err(|e| refused(&Rel::default(), e))?;
    let root = Root::open(cwd).map_err(|e| format!("working directory {}: {e}", cwd.display()))?;
    Ok((root, rel))
}

/// The tool error for `e` on `rel`.
pub fn refused(rel: &Rel, e: Error) -> String {
    match e {
        e if e.is_outside() => OUTSIDE.to_owned(),
        Error::Nul => "path contains NUL".to_owned(),
        e => format!("{}: {e}", shown(rel)),
    }
}

/// `rel` for display, as the model named it (`.` for the directory), its
/// parts joined with `/` on every platform (never `sub\a.txt`): the model
/// sees one spelling, the one it may send back.
pub fn shown(rel: &Rel) -> String {
    let parts: Vec<_> = rel
        .as_path()
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}
