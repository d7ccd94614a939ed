//! Shared harness of the protocol tests: spawns the real `zeroclaw` binary
//! with a fresh config dir, collects its ready line and its JSON log, and
//! talks to it over the real endpoint (a Unix socket; a named pipe on
//! Windows, `endpoint.rs`) with a raw NDJSON client.
//!
//! On Windows the modules about Unix-only means (users, tmpfs, pseudo-
//! terminals, socket activation, raw stdio tricks) are compiled out.
//!
//! Every wait here is bounded: a helper either gets what it waits for before
//! its deadline or fails the test with what it saw. Nothing sleeps to assert.

#![allow(dead_code, unused_macros)]

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[cfg(unix)]
mod accounts;
pub mod acp;
pub mod acp_agent;
pub mod acp_sdk_agent;
#[cfg(unix)]
pub mod activation;
pub mod assert;
pub mod chat;
#[cfg(unix)]
pub mod chat_tty;
mod client;
mod daemon;
pub mod endpoint;
#[cfg(unix)]
pub mod env_ops;
pub mod errors;
pub mod files;
pub mod golden;
mod log;
pub mod openai;
pub mod openai_server;
pub mod pipeline;
mod procfs;
#[cfg(unix)]
pub mod py_editor;
pub mod rpc;
pub mod sessions;
pub mod start;
#[cfg(unix)]
pub mod stdio;
#[cfg(unix)]
pub mod tmpfs;
#[cfg(unix)]
pub mod tty;
pub mod updates;
pub mod users;
pub mod values;
pub mod wait;
pub mod zerocode;

// The harness API: not every suite uses every name.
#[allow(unused_imports)]
pub use client::{describe, sized_frame, Client, RecvError};
#[allow(unused_imports)]
pub use daemon::{
    hermetic_env, run_cli, run_cli_code, wait_timeout, Daemon, DaemonBuilder, StartFailure,
};
pub use log::Log;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_zeroclaw");
/// The package version the daemon reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// How long a daemon may take to print its ready line (debug build, busy machine).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a client waits for one frame.
pub const RECV_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a process may take to exit once it should.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The exact frame answering an oversized frame (§3.1).
pub const FRAME_TOO_LARGE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Frame exceeds 8388608 bytes","data":{"reason":"frame_too_large","max_frame_bytes":8388608}},"id":null}"#;
/// The maximum frame size (§3.1).
pub const MAX_FRAME: usize = 8 * 1024 * 1024;

/// Reports a skipped test where the test runner cannot swallow it (straight
/// to the process's stderr, not through the captured `eprintln!`).
pub fn skip(reason: &str) {
    let name = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned();
    let _ = writeln!(io::stderr(), "SKIPPED {name}: {reason}");
}

/// Skips the current test (returns from it) with a printed reason.
/// (Every test module has it: tests/it/main.rs declares `#[macro_use] mod common;` first.)
macro_rules! skip_test {
    ($($arg:tt)*) => {{
        $crate::common::skip(&format!($($arg)*));
        return;
    }};
}

/// A TOML basic string holding `s` (a JSON string is one): a Windows
/// path's backslashes escaped, so configs can name any path.
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string")
}

/// [`toml_str`] of a path.
pub fn toml_path(p: &Path) -> String {
    toml_str(&p.to_string_lossy())
}

/// Cases per property of the proptest suites: 256, or `PROPTEST_CASES`
/// for a longer hunt.
pub fn proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

/// Unwraps a fixture that may be impossible here (no root, no tmpfs),
/// or skips the current test with the reason printed.
/// (Every test module has it: tests/it/main.rs declares `#[macro_use] mod common;` first.)
macro_rules! ok_or_skip {
    ($fixture:expr) => {
        match $fixture {
            Ok(v) => v,
            Err(why) => skip_test!("{why}"),
        }
    };
}

/// The effective uid of this process.
#[cfg(unix)]
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The peer label the daemon must log for connections made by this process.
pub use endpoint::own_peer_label;

// ---------------------------------------------------------------------------
// Temporary directories

/// A fresh directory under the system temp dir, removed on drop. Paths stay
/// short so that `<dir>/cfg/data/daemon.sock` fits in `sun_path`.
#[derive(Debug)]
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    pub fn new() -> Self {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        // A long TMPDIR would push the socket path past sun_path (~107 bytes).
        #[cfg(unix)]
        let mut base = std::env::temp_dir();
        #[cfg(unix)]
        if base.as_os_str().len() > 40 {
            base = PathBuf::from("/tmp");
        }
        // A pipe name does not grow with the path.
        #[cfg(windows)]
        let base = std::env::temp_dir();
        loop {
            let n = SEQ.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("zct{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Self { path },
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("creating {}: {e}", path.display()),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<dir>/cfg`: a config dir the daemon creates itself.
    pub fn config_dir(&self) -> PathBuf {
        self.path.join("cfg")
    }
}

impl Default for TestDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A tiny deterministic PRNG (xorshift64*), for seeded random splits.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as usize
    }
}
