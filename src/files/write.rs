//! Writing uploaded bytes content-addressed into `<workspace>/uploads/`
//! (§8.17, §8.18.4 step 3) without ever following a link: the uploads
//! directory must be a real directory, an existing file is read only when it
//! is a regular file (opened with `O_NOFOLLOW`), and every write goes to a
//! fresh temporary file that is fsynced and renamed over the destination, so
//! a link planted there is replaced, never written through, and no partial
//! file is ever visible under the final name.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What the write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    /// The content was already indexed for this session.
    pub deduplicated: bool,
    /// The indexed file had been edited, deleted or replaced, and was rewritten.
    pub restored: bool,
}

/// Why the write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("the uploads directory {0} is a link or not a directory")]
    UnsafeDir(PathBuf),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Stores `bytes` as `<dir>/<sha>[.<ext>]`, or restores them at `indexed`.
pub fn store(
    dir: &Path,
    sha: &str,
    ext: Option<&str>,
    bytes: &[u8],
    indexed: Option<&Path>,
) -> Result<Written, WriteError> {
    ensure_dir(dir)?;
    remove_stale_temporaries(dir);
    if let Some(path) = indexed {
        if same_regular_file(path, bytes) {
            return Ok(Written {
                path: path.to_owned(),
                deduplicated: true,
                restored: false,
            });
        }
        replace(dir, path, bytes)?;
        return Ok(Written {
            path: path.to_owned(),
            deduplicated: true,
            restored: true,
        });
    }
    let name = match ext {
        Some(e) => format!("{sha}.{e}"),
        None => sha.to_owned(),
    };
    let path = dir.join(name);
    if !same_regular_file(&path, bytes) {
        replace(dir, &path, bytes)?;
    }
    Ok(Written {
        path,
        deduplicated: false,
        restored: false,
    })
}

/// The uploads directory exists and is a real directory (created `0700`).
fn ensure_dir(dir: &Path) -> Result<(), WriteError> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(_) => Err(WriteError::UnsafeDir(dir.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut b = fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(dir)?;
            match fs::symlink_metadata(dir) {
                Ok(m) if m.file_type().is_dir() => Ok(()),
                _ => Err(WriteError::UnsafeDir(dir.to_owned())),
            }
        }
        Err(e) => Err(e.into()),
    }
}

fn open_nofollow(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    o.open(path)
}

/// Whether `path` is a regular file (not a link) holding exactly `bytes`.
fn same_regular_file(path: &Path, bytes: &[u8]) -> bool {
    let Ok(mut f) = open_nofollow(path) else {
        return false;
    };
    match f.metadata() {
        Ok(m) if m.is_file() && m.len() == bytes.len() as u64 => {}
        _ => return false,
    }
    let mut content = Vec::with_capacity(bytes.len());
    f.read_to_end(&mut content).is_ok() && content == bytes
}

/// Removes the temporary files a crashed daemon left in `dir` (a kill between
/// creating a temporary and renaming it). A temporary is named after the
/// process writing it, `.upload-<pid>-<run>-<nonce>.tmp`, where `<run>` is
/// drawn once per process. One is removed when its writer is surely gone:
/// - its pid is not a live process (names from older builds,
///   `.upload-<pid>-<nonce>.tmp`, and malformed ones included);
/// - or its pid is ours but its run is not, and it was last written before
///   this process started: a predecessor that had our pid (pid 1 in a
///   container) and was killed. The age test keeps a temporary that another
///   daemon with the same pid in another pid namespace, sharing the
///   workspace, is writing now.
///
/// A dead writer whose pid now belongs to an unrelated live process keeps
/// its temporary until that process ends.
pub fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix(".upload-"))
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        let written = || entry.metadata().and_then(|m| m.modified()).ok();
        if !writer_may_be_running(rest, written) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether the writer of a temporary named `.upload-<rest>.tmp`, last
/// written at `written()`, may still be running.
fn writer_may_be_running(rest: &str, written: impl FnOnce() -> Option<SystemTime>) -> bool {
    let mut parts = rest.split('-');
    let Some(pid) = parts
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p != 0)
    else {
        return false;
    };
    let run = match (parts.next(), parts.next()) {
        (Some(run), Some(_nonce)) => u64::from_str_radix(run, 16).ok(),
        _ => None,
    };
    if pid != std::process::id() {
        return process_alive(pid);
    }
    if run == Some(run_token().0) {
        return true;
    }
    // Our pid, another run: a predecessor's if written before we started.
    written().is_none_or(|t| t >= run_token().1)
}

/// This process's run token, drawn once, and when it was drawn (at the
/// latest when the daemon's startup sweep runs, before it serves anything).
fn run_token() -> (u64, SystemTime) {
    static TOKEN: std::sync::OnceLock<(u64, SystemTime)> = std::sync::OnceLock::new();
    *TOKEN.get_or_init(|| {
        let now = SystemTime::now();
        let mut b = [0u8; 8];
        if getrandom::fill(&mut b).is_err() {
            // No OS randomness: the start time still differs between runs.
            let t = now
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            b = t.to_le_bytes();
        }
        (u64::from_le_bytes(b), now)
    })
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe {
        libc::kill(pid, 0) == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    // No cheap liveness check: keep other processes' temporaries (the data
    // dir lock makes another writer in the same workspace unlikely).
    true
}

/// Writes a temporary file in `dir`, fsyncs it and renames it over `dest`.
fn replace(dir: &Path, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut nonce = [0u8; 8];
    let _ = getrandom::fill(&mut nonce);
    let tmp = dir.join(format!(
        ".upload-{}-{:016x}-{:016x}.tmp",
        std::process::id(),
        run_token().0,
        u64::from_le_bytes(nonce)
    ));
    let result = (|| {
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let mut f = o.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, dest)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes a rename in `dir` durable (Unix: fsync of the directory).
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

/// Windows cannot open a directory as a file (access denied); NTFS logs
/// the rename itself.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zc-write-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn stores_dedups_and_restores() {
        let w = tmpdir("basic");
        let up = w.join("uploads");
        let a = store(&up, "abc", Some("txt"), b"data", None).unwrap();
        assert_eq!(
            a,
            Written {
                path: up.join("abc.txt"),
                deduplicated: false,
                restored: false
            }
        );
        assert_eq!(fs::read(&a.path).unwrap(), b"data");
        let b = store(&up, "abc", Some("txt"), b"data", Some(&a.path)).unwrap();
        assert!(b.deduplicated && !b.restored);
        fs::write(&a.path, b"tampered").unwrap();
        let c = store(&up, "abc", Some("txt"), b"data", Some(&a.path)).unwrap();
        assert!(c.deduplicated && c.restored);
        assert_eq!(fs::read(&a.path).unwrap(), b"data");
        // Nothing but the file is left in uploads/.
        assert_eq!(fs::read_dir(&up).unwrap().count(), 1);
    }

    #[test]
    fn temporaries_of_dead_writers_and_earlier_runs_are_removed_and_live_ones_kept() {
        let up = tmpdir("stale");
        let me = std::process::id();
        // SAFETY: getppid has no preconditions: the parent runs while we do.
        let parent = unsafe { libc::getppid() };
        let (run, started) = run_token();
        let other_run = run.wrapping_add(1);
        let dead = up.join(".upload-4000000000-0000000000000007-00000000deadbeef.tmp");
        let dead_legacy = up.join(".upload-4000000000-00000000deadbeef.tmp");
        let unnamed = up.join(".upload-00000000deadbeef.tmp");
        let pid_zero = up.join(".upload-0-0000000000000007-00000000deadbeef.tmp");
        // Our pid under another run: a predecessor's when older than this process.
        let earlier_run = up.join(format!(
            ".upload-{me}-{other_run:016x}-0000000000000001.tmp"
        ));
        let earlier_legacy = up.join(format!(".upload-{me}-0000000000000001.tmp"));
        // ... and another namespace's live daemon with our pid when written since.
        let concurrent = up.join(format!(
            ".upload-{me}-{other_run:016x}-0000000000000002.tmp"
        ));
        let mine = up.join(format!(".upload-{me}-{run:016x}-0000000000000001.tmp"));
        let live_other = up.join(format!(
            ".upload-{parent}-{other_run:016x}-0000000000000001.tmp"
        ));
        let hour = std::time::Duration::from_secs(3600);
        for (p, written) in [
            (&dead, started - hour),
            (&dead_legacy, started - hour),
            (&unnamed, started - hour),
            (&pid_zero, started - hour),
            (&earlier_run, started - hour),
            (&earlier_legacy, started - hour),
            (&concurrent, started + hour),
            (&mine, started - hour),
            (&live_other, started - hour),
        ] {
            fs::write(p, b"partial").unwrap();
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(written)
                .unwrap();
        }
        fs::write(up.join("keep.txt"), b"x").unwrap();
        remove_stale_temporaries(&up);
        for gone in [
            &dead,
            &dead_legacy,
            &unnamed,
            &pid_zero,
            &earlier_run,
            &earlier_legacy,
        ] {
            assert!(!gone.exists(), "{} should be removed", gone.display());
        }
        for kept in [&mine, &concurrent, &live_other] {
            assert!(kept.exists(), "{} should be left alone", kept.display());
        }
        assert!(up.join("keep.txt").exists());
    }

    #[test]
    fn a_store_leaves_only_its_file() {
        let up = tmpdir("names");
        store(&up, "abc", None, b"x", None).unwrap();
        let names: Vec<String> = fs::read_dir(&up)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["abc"]);
    }

    #[test]
    fn never_writes_through_links() {
        let w = tmpdir("links");
        let victim = w.join("victim");
        fs::write(&victim, b"keep").unwrap();
        let up = w.join("uploads");
        fs::create_dir(&up).unwrap();
        std::os::unix::fs::symlink(&victim, up.join("abc")).unwrap();
        let r = store(&up, "abc", None, b"new", None).unwrap();
        assert_eq!(
            fs::read(&victim).unwrap(),
            b"keep",
            "the link target is untouched"
        );
        assert!(
            fs::symlink_metadata(&r.path).unwrap().is_file(),
            "the link was replaced by a file"
        );
        assert_eq!(fs::read(&r.path).unwrap(), b"new");

        let other = w.join("elsewhere");
        fs::create_dir(&other).unwrap();
        let linked = w.join("uploads2");
        std::os::unix::fs::symlink(&other, &linked).unwrap();
        assert!(matches!(
            store(&linked, "abc", None, b"x", None),
            Err(WriteError::UnsafeDir(_))
        ));
        assert_eq!(fs::read_dir(&other).unwrap().count(), 0);
    }
}
