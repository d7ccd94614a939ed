//! Test helpers: unique temporary directories under `std::env::temp_dir()`,
//! removed when dropped. Names stay short so socket paths fit in `sun_path`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory, removed (with its contents) on drop.
#[derive(Debug)]
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("zc-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        // Owner-only whatever the umask, like a real data dir's parent.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                .expect("chmod temp dir");
        }
        TempDir(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether this Windows program runs under Wine, which cannot show some
/// things real Windows does (pipe ACLs, `FILE_FLAG_FIRST_PIPE_INSTANCE`):
/// Wine's ntdll exports `wine_get_version`, Windows' does not.
#[cfg(windows)]
pub(crate) fn under_wine() -> bool {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> *mut std::ffi::c_void;
        fn GetProcAddress(module: *mut std::ffi::c_void, name: *const u8) -> *mut std::ffi::c_void;
    }
    let name: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
    // SAFETY: both names are NUL-terminated and outlive the calls; ntdll is
    // loaded in every process.
    unsafe {
        let ntdll = GetModuleHandleW(name.as_ptr());
        !ntdll.is_null() && !GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_null()
    }
}
