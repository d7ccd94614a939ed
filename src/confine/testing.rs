//! Test fixtures of the confinement's unit tests (and of its callers'):
//! a fresh scratch tree, a FIFO.

use std::path::PathBuf;

/// A fresh `<tmp>/zc-<name>-<pid>` holding `entries`: `(path, text)` makes
/// a file (parents made), a path ending in `/` a directory. The caller
/// removes it.
pub(crate) fn scratch(name: &str, entries: &[(&str, &str)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for (path, text) in entries {
        let at = d.join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&at).unwrap();
        } else {
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(&at, text).unwrap();
        }
    }
    d
}

/// Makes a FIFO at `path`.
#[cfg(unix)]
pub(crate) fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}
