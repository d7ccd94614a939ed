//! A path made canonical in the form a person reads and every tool takes:
//! on Windows `canonicalize` answers a verbatim path (`\\?\C:\…`, where `/`
//! is no separator, which some file systems and Wine take badly, and which
//! messages and the chat would show); a drive path that fits the usual
//! limits loses that prefix. Elsewhere it is `canonicalize` itself.

use std::path::{Path, PathBuf};

/// `path` made canonical, in its plain form on Windows.
pub fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    let c = path.canonicalize()?;
    #[cfg(windows)]
    if let Some(rest) = c.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        let drive = rest.as_bytes();
        if drive.len() >= 3
            && drive[0].is_ascii_alphabetic()
            && &drive[1..3] == b":\\"
            && rest.len() < 248
        {
            return Ok(PathBuf::from(rest));
        }
    }
    Ok(c)
}
