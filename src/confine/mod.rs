//! The one confinement of paths an agent, a model or a repository controls
//! to a working directory (docs/agents.md "The confined file system"): ACP
//! `fs/*`, `terminal/create`'s `cwd`, the openai file tools, and the reads
//! of `session/git_branch`.
//!
//! The rule is the kernel's, not a check followed by a use: the working
//! directory is opened once ([`Root`]) and every path is resolved beneath
//! that descriptor at open time (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`: a relative symlink that stays inside resolves,
//! an absolute one or one that leaves is refused; without `openat2`, a walk
//! of `openat(O_NOFOLLOW)` that follows no symlink at all). Every open is
//! non-blocking, a read checks on the opened handle that it is a regular
//! file and reads through a hard bound, a write goes to a fresh
//! `O_CREAT|O_EXCL|O_NOFOLLOW` temporary of an unpredictable name renamed
//! inside the opened directory, and the blocking work runs under a bound of
//! its own ([`pool`]).
//!
//! - `path.rs`: the lexical rules (ACP's absolute paths, the tools' relative ones) → [`Rel`];
//! - `plain.rs`: [`canonical`], a canonical path without Windows' verbatim prefix;
//! - `resolve.rs`: [`Root`] and the open beneath it;
//! - `read.rs`, `write.rs`, `dir.rs`: bounded reads, atomic writes, directories;
//! - `sys.rs`: the system calls (the only `unsafe` outside tests);
//! - `pool.rs`: the bounded blocking pools, with deadlines;
//! - `testing.rs`: the unit tests' fixtures.

use std::io;

#[cfg(unix)]
mod dir;
mod path;
mod plain;
pub mod pool;
#[cfg(not(unix))]
mod portable;
#[cfg(unix)]
mod read;
#[cfg(unix)]
mod resolve;
#[cfg(unix)]
mod sys;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(unix)]
mod write;

#[cfg(unix)]
pub use dir::Dir;
pub use path::Rel;
pub use plain::canonical;
#[cfg(not(unix))]
pub use portable::{read_regular, Dir, Root};
#[cfg(unix)]
pub use read::read_regular;
#[cfg(unix)]
pub use resolve::Root;

/// What a directory entry is, as the directory says (a symlink is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Other,
}

/// One entry of a listed directory.
#[derive(Debug)]
pub struct Entry {
    pub name: std::ffi::OsString,
    pub kind: Kind,
}

impl Entry {
    fn of(entry: std::fs::DirEntry) -> Entry {
        let kind = match entry.file_type() {
            Ok(t) if t.is_dir() => Kind::Dir,
            Ok(t) if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        Entry {
            name: entry.file_name(),
            kind,
        }
    }
}

/// Admits the bytes a read is about to hold: the caller's memory budget
/// (`src/memory.rs`, which this base module does not name); `false`
/// refuses the read ([`Error::NoMemory`]).
pub type Admit<'a> = &'a mut dyn FnMut(usize) -> bool;

/// Bytes admitted at a time past what `fstat` said (a file that grows).
const READ_STEP: usize = 64 * 1024;

/// Checks on the opened handle that `file` is a regular file (a FIFO, a
/// device, a socket is refused whatever its size says), then reads at most
/// `n` bytes of it: first the size `fstat` gave (and one byte to see the
/// end), then [`READ_STEP`]s while it grows, each admitted before it is read.
fn read_bounded(file: std::fs::File, n: u64, admit: Admit<'_>) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::NotRegular);
    }
    let mut reader = file.take(n);
    let mut bytes = Vec::new();
    let mut step = usize::try_from(meta.len().min(n))
        .unwrap_or(READ_STEP)
        .saturating_add(1);
    loop {
        if !admit(step) {
            return Err(Error::NoMemory);
        }
        bytes.try_reserve_exact(step).map_err(|_| Error::NoMemory)?;
        let got = (&mut reader).take(step as u64).read_to_end(&mut bytes)?;
        if got < step {
            return Ok(bytes);
        }
        step = READ_STEP;
    }
}

/// The whole regular `file`, refused when over `max` bytes.
fn read_whole_of(file: std::fs::File, max: u64, admit: Admit<'_>) -> Result<Vec<u8>, Error> {
    let bytes = read_bounded(file, max.saturating_add(1), admit)?;
    if bytes.len() as u64 > max {
        return Err(Error::TooLarge { max });
    }
    Ok(bytes)
}

/// A temporary's name, `.zc-<16 random hex digits>.tmp`: nothing an agent
/// can plant ahead (the old names held the daemon's pid).
fn temp_name() -> Result<String, Error> {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).map_err(|e| Error::Io(io::Error::other(e.to_string())))?;
    Ok(format!(".zc-{:016x}.tmp", u64::from_ne_bytes(raw)))
}

/// Why a confined operation failed. Each caller maps it to its wire: ACP
/// codes (src/agent/acp/fs.rs), tool error strings (src/agent/openai/tools).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// ACP's paths must be absolute.
    #[error("the path must be absolute")]
    NotAbsolute,
    /// ACP's paths must not name `..` at all.
    #[error("the path must not contain `..`")]
    DotDot,
    /// A NUL byte in the path.
    #[error("the path contains NUL")]
    Nul,
    /// Outside the working directory, lexically.
    #[error("outside the working directory")]
    Outside,
    /// Outside through a symlink (or a symlink where none is followed):
    /// the kernel refused the resolution.
    #[error("a symlink leads outside the working directory")]
    Escapes,
    /// A FIFO, device, socket or directory where a regular file is read.
    #[error("not a regular file")]
    NotRegular,
    /// Something other than a directory where one is needed.
    #[error("not a directory")]
    NotDir,
    /// A file over the read bound.
    #[error("larger than {max} bytes")]
    TooLarge { max: u64 },
    /// The memory budget refused the bytes a read would hold.
    #[error("the daemon's memory budget is spent; try again")]
    NoMemory,
    /// No room in the bounded pool before its deadline.
    #[error("too much file work in progress; try again")]
    Busy,
    /// The work did not finish before its deadline (it goes on, holding its slot).
    #[error("the file operation did not finish within {secs} s")]
    TimedOut { secs: u64 },
    /// What the system said.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Error {
    /// Whether the path leaves the working directory (lexically or not).
    pub fn is_outside(&self) -> bool {
        matches!(self, Error::Outside | Error::Escapes)
    }

    /// Whether the file (or a directory on its way) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

#[cfg(unix)]
impl Error {
    /// An error of an open beneath the root: `EXDEV` (the kernel refused a
    /// resolution leaving it) and `ELOOP` (a symlink not followed) escape.
    fn of_open(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EXDEV) | Some(libc::ELOOP) => Error::Escapes,
            Some(libc::ENOTDIR) => Error::NotDir,
            _ => Error::Io(e),
        }
    }
}
