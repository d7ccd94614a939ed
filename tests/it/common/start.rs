//! Daemons started from a `config.toml` written beforehand: the one way the
//! suites get a daemon with a config of their own, the [`Env`] that keeps its
//! directory alive, and the config-file and directory helpers it stands on.

use std::io::Write;
use std::ops::Deref;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::{Client, Daemon, DaemonBuilder, TestDir};

/// The smallest config: the `echo` agent only (the daemon's default file).
pub const ECHO_ONLY: &str = "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n";

/// A daemon and the directory that holds its config dir (the daemon is
/// dropped first, then the directory).
#[derive(Debug)]
pub struct Env {
    pub daemon: Daemon,
    pub dir: TestDir,
}

impl Deref for Env {
    type Target = Daemon;
    fn deref(&self) -> &Daemon {
        &self.daemon
    }
}

/// `ECHO_ONLY` followed by `extra` (more tables).
pub fn config_with(extra: &str) -> String {
    format!("{ECHO_ONLY}\n{extra}")
}

/// A daemon started with exactly this `config.toml`.
pub fn start(config: &str) -> Env {
    start_in(TestDir::new(), config)
}

/// A daemon with the default config (the `echo` agent only).
pub fn start_echo() -> Env {
    start(ECHO_ONLY)
}

/// A daemon with the default config and an initialized client of it.
pub fn echo_client() -> (Env, Client) {
    let env = start_echo();
    let c = env.client();
    (env, c)
}

/// A daemon with the default config and a client of it that opened
/// session `sid` in `mode` (`chat` or `acp`) with the `echo` agent.
#[track_caller]
pub fn echo_session(sid: &str, mode: &str) -> (Env, Client) {
    let (env, mut c) = echo_client();
    c.new_session(sid, mode);
    (env, c)
}

/// A daemon started with this `config.toml` in a config dir under `dir`.
pub fn start_in(dir: TestDir, config: &str) -> Env {
    start_in_with(dir, config, &[])
}

/// A daemon started with this `config.toml` and extra `daemon` arguments.
pub fn start_args(config: &str, args: &[&str]) -> Env {
    start_in_with(TestDir::new(), config, args)
}

/// The one spawn behind the `start*` helpers: `<dir>/cfg/config.toml`, then
/// `zeroclaw daemon --config-dir <dir>/cfg <args>`.
fn start_in_with(dir: TestDir, config: &str, args: &[&str]) -> Env {
    let cfg = dir.config_dir();
    write_config(&cfg, config);
    let daemon = args
        .iter()
        .fold(DaemonBuilder::new().config_dir(&cfg), |b, a| b.arg(a))
        .spawn();
    Env { daemon, dir }
}

/// Writes `<config_dir>/config.toml` (`0600`) before the daemon starts,
/// creating the config dir (`0700`) if needed (modes on Unix only).
pub fn write_config(config_dir: &Path, text: &str) {
    if !config_dir.exists() {
        let mut dirs = std::fs::DirBuilder::new();
        #[cfg(unix)]
        dirs.mode(0o700);
        dirs.recursive(true)
            .create(config_dir)
            .expect("creating the config dir");
    }
    let mut file = std::fs::OpenOptions::new();
    #[cfg(unix)]
    file.mode(0o600);
    let mut f = file
        .write(true)
        .create(true)
        .truncate(true)
        .open(config_dir.join("config.toml"))
        .expect("creating config.toml");
    f.write_all(text.as_bytes()).expect("writing config.toml");
}

/// A test dir every user can traverse (`0755`), as the socket group needs
/// (docs/decisions.md, "Config dir mode").
#[cfg(unix)]
pub fn traversable_dir() -> TestDir {
    let d = TestDir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod 0755 the test dir");
    d
}
