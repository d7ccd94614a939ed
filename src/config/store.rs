//! Persistence of `config.toml` (§11.1, §8.16 step 8).
//!
//! A commit edits the user's document in place (`edit.rs`): comments, order and formatting of
//! what it does not change stay.
//!
//! The store remembers the exact bytes it last read or wrote. A commit takes an exclusive lock
//! on `config.toml.lock`, refuses to write when the file no longer holds those bytes (someone
//! edited it), and replaces the file atomically: write `config.toml.tmp` (0600), fsync, rename,
//! fsync the directory. A symlinked `config.toml` is written through to its target. A failed commit leaves the old file in place and no temporary file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::edit::edit_text;
use super::error::ConfigError;
use super::schema::Config;
use crate::bounded_file::{self, ReadError};
use crate::limits::MAX_CONFIG_FILE_BYTES;
use crate::storage_fault::StorageFault;

const FILE: &str = "config.toml";
const TMP: &str = "config.toml.tmp";
const LOCK: &str = "config.toml.lock";

/// The on-disk configuration of one daemon.
#[derive(Debug)]
pub struct ConfigStore {
    dir: PathBuf,
    last_bytes: Vec<u8>,
    /// Test hook for the `config_commit` fault point (§8.20): commits fail with
    /// [`ConfigError::Storage`] before writing anything.
    pub fail_commit: bool,
}

impl ConfigStore {
    /// Opens `<config_dir>/config.toml`, creating it (0600) with
    /// [`Config::default_file_text`] if missing, and returns the valid config it holds. Any
    /// failure names the file: [`ConfigError::StartupIo`] when it cannot be created or read,
    /// [`ConfigError::Startup`] for invalid content (with the path of the offending key).
    pub fn open(config_dir: &Path) -> Result<(ConfigStore, Config), ConfigError> {
        let path = config_dir.join(FILE);
        let startup = |what: &str, e: &dyn std::fmt::Display| {
            ConfigError::Startup(format!("{}: {what}{e}", path.display()))
        };
        let startup_io = |what: &str, e: &io::Error| ConfigError::StartupIo {
            fault: StorageFault::of_io(e),
            message: format!("{}: {what}{e}", path.display()),
        };
        if !path.exists() {
            // Written whole to a temporary file first and linked into place, so
            // that a crash never leaves an empty or partial config.toml; the
            // link fails if another process created the file meanwhile.
            let tmp = config_dir.join(".config.toml.new");
            let created = write_tmp(&tmp, Config::default_file_text().as_bytes())
                .and_then(|()| match fs::hard_link(&tmp, &path) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
                    _ => Ok(()),
                })
                .and_then(|()| sync_dir(config_dir));
            let _ = fs::remove_file(&tmp);
            created.map_err(|e| startup_io("cannot create: ", &e))?;
        }
        let bytes = read_config(&path).map_err(|e| ConfigError::StartupIo {
            fault: fault_of(&e),
            message: format!("{}: cannot read: {e}", path.display()),
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| startup("not UTF-8: ", &e))?;
        // The daemon never writes an empty file (it writes whole files and
        // renames them into place): an empty one was truncated by something
        // else, and reading it as "no agents" would hide that.
        if text.trim().is_empty() {
            return Err(startup("is empty (truncated?)", &""));
        }
        let config = Config::from_toml_str(text).map_err(|e| startup("", &e))?;
        let store = ConfigStore {
            dir: config_dir.to_owned(),
            last_bytes: bytes,
            fail_commit: false,
        };
        Ok((store, config))
    }

    /// The path of `config.toml`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The bytes this store last read or wrote.
    pub fn last_bytes(&self) -> &[u8] {
        &self.last_bytes
    }

    /// Persists `candidate` (§8.16 step 8) by editing the file in place ([`edit_text`]): only
    /// what changed and the props in `touched` are written. [`ConfigError::ConfigChanged`] when
    /// the file changed on disk, [`ConfigError::Storage`] for any other failure; in both cases
    /// `config.toml` is unchanged and no temporary file remains.
    pub fn commit(&mut self, candidate: &Config, touched: &[String]) -> Result<(), ConfigError> {
        self.write_checked(|last| {
            let text = std::str::from_utf8(last)
                .map_err(|_| ConfigError::save_failed("config.toml is not UTF-8"))?;
            let current = Config::from_toml_str(text)
                .map_err(|e| ConfigError::save_failed(format!("config.toml: {e}")))?;
            edit_text(text, &current, candidate, touched)
        })
    }

    /// Replaces the whole file with `text`, which the caller validated (`config/replace`,
    /// `zeroclaw config edit`), under the same lock and "someone edited it" check as
    /// [`ConfigStore::commit`].
    pub fn commit_text(&mut self, text: String) -> Result<(), ConfigError> {
        self.write_checked(|_| Ok(text))
    }

    /// The file's bytes when they differ from the ones this store last read or wrote (a hand
    /// edit to reload), read under `config.toml.lock`; `None` when they do not. The read cannot
    /// block (see [`read_config`]), so holding the locks across it stalls nobody.
    pub fn read_if_changed(&self) -> Result<Option<Vec<u8>>, ReadError> {
        let _lock = self.lock_file()?;
        let bytes = read_config(&self.path())?;
        Ok((bytes != self.last_bytes).then_some(bytes))
    }

    /// Records `bytes` as what the file holds (a reload installed them).
    pub fn accept(&mut self, bytes: Vec<u8>) {
        self.last_bytes = bytes;
    }

    fn lock_file(&self) -> Result<File, ReadError> {
        let lock = bounded_file::open_lock_file(&self.dir.join(LOCK))?;
        lock.lock()?;
        Ok(lock)
    }

    /// The one write: lock, the "someone edited it" check, `make` the new text from the bytes
    /// the file holds, then tmp + fsync + rename + directory fsync.
    fn write_checked(
        &mut self,
        make: impl FnOnce(&[u8]) -> Result<String, ConfigError>,
    ) -> Result<(), ConfigError> {
        let lock = self
            .lock_file()
            .map_err(|e| read_failed("cannot lock config.toml.lock", &e))?;
        match read_config(&self.path()) {
            Ok(bytes) if bytes == self.last_bytes => {}
            Ok(_) => return Err(ConfigError::ConfigChanged),
            Err(e) if e.is_not_found() => return Err(ConfigError::ConfigChanged),
            Err(e) => return Err(read_failed("cannot read config.toml", &e)),
        }
        let text = make(&self.last_bytes)?;
        if self.fail_commit {
            return Err(ConfigError::save_failed("injected fault: config_commit"));
        }
        let (target, tmp) = self
            .write_target()
            .map_err(|e| storage("cannot resolve the config.toml link", &e))?;
        if let Err(e) = write_tmp(&tmp, text.as_bytes()).and_then(|()| replace(&tmp, &target)) {
            let _ = fs::remove_file(&tmp);
            return Err(storage("cannot write config.toml", &e));
        }
        // The rename is visible now: record what the file holds before reporting anything else.
        self.last_bytes = text.into_bytes();
        let dir = target.parent().unwrap_or(&self.dir);
        sync_dir(dir).map_err(|e| storage("cannot sync the config directory", &e))?;
        drop(lock);
        Ok(())
    }
}

impl ConfigStore {
    /// The file a commit replaces and the temporary file beside it. A
    /// `config.toml` that is a symbolic link (a dotfiles checkout) is written
    /// through: its final target is replaced in its own directory and the
    /// link stays (docs/decisions.md, "A symlinked config.toml").
    fn write_target(&self) -> io::Result<(PathBuf, PathBuf)> {
        let path = self.path();
        if !fs::symlink_metadata(&path)?.file_type().is_symlink() {
            return Ok((path, self.dir.join(TMP)));
        }
        let target = fs::canonicalize(&path)?;
        let mut tmp = target.clone().into_os_string();
        tmp.push(".zeroclaw-tmp");
        Ok((target, PathBuf::from(tmp)))
    }
}

/// The bytes of `config.toml` at `path`: a file nobody vouches for (a hand edit, a link to
/// anything), so read without blocking, only when it is a regular file (a link is followed to
/// one), and at most [`MAX_CONFIG_FILE_BYTES`]. A FIFO or a device is refused at once, which is
/// why a reload and a commit may read it while holding the config locks.
pub fn read_config(path: &Path) -> Result<Vec<u8>, ReadError> {
    bounded_file::read(path, MAX_CONFIG_FILE_BYTES)
}

fn fault_of(e: &ReadError) -> StorageFault {
    e.io().map_or(StorageFault::Other, StorageFault::of_io)
}

fn read_failed(what: &str, e: &ReadError) -> ConfigError {
    ConfigError::Storage {
        fault: fault_of(e),
        message: format!("{what}: {e}"),
    }
}

fn storage(what: &str, e: &io::Error) -> ConfigError {
    ConfigError::Storage {
        fault: StorageFault::of_io(e),
        message: format!("{what}: {e}"),
    }
}

/// Writes a fresh temporary file (a stale one from a crash is replaced, mode included).
fn write_tmp(tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::remove_file(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = create_file(tmp)?;
    file.write_all(bytes)?;
    file.flush()?;
    file.sync_all()
}

fn create_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode_0600()
        .open(path)
}

/// Renames `tmp` over `target`.
#[cfg(unix)]
fn replace(tmp: &Path, target: &Path) -> io::Result<()> {
    fs::rename(tmp, target)
}

/// Renames `tmp` over `target`, retrying for up to a second while the
/// target is held: Windows refuses to replace a file another process has
/// open (a reader of config.toml, an editor, a virus scanner) with
/// "access denied" where the system lacks POSIX rename semantics (Wine;
/// file systems other than NTFS). Such holds are brief.
#[cfg(windows)]
fn replace(tmp: &Path, target: &Path) -> io::Result<()> {
    const TRIES: u32 = 40;
    let mut tries = 0;
    loop {
        match fs::rename(tmp, target) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && tries < TRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    // Directories cannot be opened for syncing on Windows; the rename is already durable enough.
    Ok(())
}

/// `mode(0o600)` on Unix, a no-op elsewhere.
trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for OpenOptions {
    #[cfg(unix)]
    fn mode_0600(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }

    #[cfg(not(unix))]
    fn mode_0600(&mut self) -> &mut Self {
        self
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
