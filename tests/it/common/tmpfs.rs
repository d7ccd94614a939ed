//! Environment faults for the tests of tests/it/env_*.rs: a config dir on a
//! small tmpfs of its own (so the data dir, `config.toml` and the agent
//! workspaces share one file system the test can fill), a filler file that
//! takes its free space, and a read-only bind mount over it.
//!
//! Mounting needs root (CI runs as root). Where it cannot be done the
//! constructors return the reason, and the test skips with it printed.
//! Every mount is undone by a drop guard, innermost first: the daemon is
//! killed before its file system goes away.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Client;
use super::{euid, Daemon, DaemonBuilder, TestDir};

/// Runs `mount`/`umount` with `args`; the reason on failure.
fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// A tmpfs of `size` bytes mounted at a directory; unmounted on drop.
#[derive(Debug)]
pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` bytes at `path` (created if missing).
    pub fn mount(path: &Path, size: u64) -> Result<Self, String> {
        if euid() != 0 {
            return Err("mounting a tmpfs needs root".into());
        }
        fs::create_dir_all(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        let opts = format!("size={size},mode=0700");
        run(
            "mount",
            &["-t", "tmpfs", "-o", &opts, "tmpfs", path_str(path)],
        )?;
        Ok(Self {
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes still free for files (`statvfs` `f_bavail`).
    pub fn free_bytes(&self) -> u64 {
        free_bytes(&self.path)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if run("umount", &[path_str(&self.path)]).is_err() {
            // Something still holds it (a process of a failed test): detach it.
            let _ = run("umount", &["-l", path_str(&self.path)]);
        }
    }
}

/// Bytes free for unprivileged files on the file system of `path`.
pub fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in test paths");
    // SAFETY: statvfs writes into the zeroed struct we own; `c` is NUL-terminated.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut st), 0, "statvfs");
        st.f_bavail as u64 * st.f_frsize as u64
    }
}

/// A file that takes the free space of its file system; removed on drop.
#[derive(Debug)]
pub struct Filler {
    path: PathBuf,
}

impl Filler {
    /// Writes `<dir>/filler` until the file system is full (`ENOSPC`).
    pub fn fill(dir: &Path) -> Self {
        let path = dir.join("filler");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("creating the filler");
        let block = vec![0xa5u8; 4096];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        drop(f);
        assert_eq!(free_bytes(dir), 0, "the filler left space free");
        Self { path }
    }

    /// Gives `bytes` back to the file system (whole 4 KiB pages).
    pub fn leave_free(&self, bytes: u64) {
        let f = File::options().write(true).open(&self.path).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(bytes)).unwrap();
    }

    /// Frees everything.
    pub fn remove(self) {}
}

impl Drop for Filler {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// `path` made read-only by a read-only bind mount over it; writable again
/// on drop. Root ignores permission bits, and a tmpfs with files open for
/// writing (the daemon's database) cannot be remounted read-only, so this is
/// what an operator or a container runtime does. New opens, creations,
/// renames and removals under `path` fail with `EROFS`; descriptors opened
/// before (SQLite's) keep working, as they do after a `chmod`.
#[derive(Debug)]
pub struct ReadOnly {
    path: PathBuf,
}

impl ReadOnly {
    pub fn bind(path: &Path) -> Result<Self, String> {
        let p = path_str(path);
        run("mount", &["--bind", p, p])?;
        let guard = Self {
            path: path.to_owned(),
        };
        run("mount", &["-o", "remount,bind,ro", p])?;
        match fs::write(path.join(".probe"), b"x") {
            Err(e) if e.raw_os_error() == Some(libc::EROFS) => Ok(guard),
            other => Err(format!("the read-only bind did not take: {other:?}")),
        }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if run("umount", &[path_str(&self.path)]).is_err() {
            let _ = run("umount", &["-l", path_str(&self.path)]);
        }
    }
}

/// A daemon whose config dir (hence data dir and agent workspaces) is a
/// tmpfs of its own. Fields drop in order: daemon, read-only bind, mount, dir.
#[derive(Debug)]
pub struct TmpfsEnv {
    daemon: Option<Daemon>,
    pub read_only: Option<ReadOnly>,
    pub fs: Tmpfs,
    _dir: TestDir,
}

impl TmpfsEnv {
    /// Mounts a tmpfs of `size` bytes as the config dir, writes `config`
    /// as its `config.toml` (0600) and starts a daemon on it.
    pub fn start(config: &str, size: u64) -> Result<Self, String> {
        let dir = TestDir::new();
        let fs = Tmpfs::mount(&dir.config_dir(), size)?;
        let file = fs.path().join("config.toml");
        fs::write(&file, config).map_err(|e| e.to_string())?;
        set_mode(&file, 0o600).map_err(|e| e.to_string())?;
        let daemon = DaemonBuilder::new().config_dir(fs.path()).spawn();
        Ok(Self {
            daemon: Some(daemon),
            read_only: None,
            fs,
            _dir: dir,
        })
    }

    pub fn d(&self) -> &Daemon {
        self.daemon.as_ref().expect("no daemon is running")
    }

    pub fn d_mut(&mut self) -> &mut Daemon {
        self.daemon.as_mut().expect("no daemon is running")
    }

    pub fn config_dir(&self) -> &Path {
        self.fs.path()
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir().join("config.toml")
    }

    /// `<data_dir>/sessions/sessions.db`.
    pub fn db(&self) -> PathBuf {
        self.config_dir().join("data/sessions/sessions.db")
    }

    /// A new initialized client.
    pub fn rpc(&self) -> Client {
        self.d().client()
    }
}

fn set_mode(p: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
}
