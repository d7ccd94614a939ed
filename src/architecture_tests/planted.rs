//! A throwaway tree of planted files, to show a rule catches what it
//! claims to (a test that only ever sees a clean tree proves nothing).

use std::path::PathBuf;

/// A throwaway tree with these files (relative path, text), removed on drop.
pub(super) struct Planted(pub(super) PathBuf);

impl Planted {
    pub(super) fn new(files: &[(&str, &str)]) -> Self {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("zc-arch-{}-{n}", std::process::id()));
        for (rel, text) in files {
            let path = root.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("creating the planted tree");
            }
            std::fs::write(&path, text).expect("writing a planted file");
        }
        Self(root)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
