//! A daemon started the way systemd starts one: a listening socket bound
//! beforehand and passed as fd 3 with `LISTEN_FDS`/`LISTEN_PID`, and a
//! `NOTIFY_SOCKET` datagram socket owned by the test that collects what the
//! daemon reports. No systemd involved.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::{hermetic_env, wait_timeout, Log, EXIT_TIMEOUT, STARTUP_TIMEOUT};

/// The notification socket of a test (`NOTIFY_SOCKET`).
pub struct Notify {
    pub sock: UnixDatagram,
    /// What `NOTIFY_SOCKET` is set to (a path, or `@name`).
    pub address: String,
}

impl Notify {
    /// A datagram socket bound at `path`.
    pub fn at(path: &Path) -> Self {
        let sock = UnixDatagram::bind(path).expect("binding the notify socket");
        Notify {
            sock,
            address: path.display().to_string(),
        }
    }

    /// A Linux abstract datagram socket (`@name`).
    #[cfg(target_os = "linux")]
    pub fn abstract_named(name: &str) -> Self {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .expect("abstract address");
        let sock = UnixDatagram::bind_addr(&addr).expect("binding the abstract notify socket");
        Notify {
            sock,
            address: format!("@{name}"),
        }
    }

    /// The next datagram, as text, within `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<String> {
        self.sock.set_read_timeout(Some(timeout)).ok()?;
        let mut buf = [0u8; 4096];
        let n = self.sock.recv(&mut buf).ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// A datagram already queued, without waiting.
    pub fn try_recv(&self) -> Option<String> {
        self.sock.set_nonblocking(true).ok()?;
        let mut buf = [0u8; 4096];
        let got = self.sock.recv(&mut buf).ok();
        let _ = self.sock.set_nonblocking(false);
        got.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    }
}

/// A listening socket at `path` with `mode`, as `ListenStream=`/`SocketMode=` make it.
pub fn listen_at(path: &Path, mode: u32) -> UnixListener {
    let l = UnixListener::bind(path).expect("binding the activation socket");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod socket");
    l
}

/// A daemon started with `listener` as fd 3 (and `notify`, if any).
pub struct Activated {
    pub child: Child,
    /// The daemon's stdout lines (the ready line first).
    pub stdout: mpsc::Receiver<String>,
    pub log: Log,
}

/// Starts `zeroclaw daemon --config-dir <config_dir>` with `listener` passed
/// as systemd passes it: `sh` sets `LISTEN_PID=$$` and `exec`s, so the pid is
/// the daemon's.
pub fn spawn(
    config_dir: &Path,
    listener: &UnixListener,
    notify: Option<&Notify>,
    envs: &[(&str, &str)],
) -> Activated {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@""#)
        .arg(super::BIN)
        .arg("daemon")
        .arg("--config-dir")
        .arg(config_dir);
    hermetic_env(&mut cmd, config_dir.parent().unwrap_or(config_dir));
    cmd.env_remove("NOTIFY_SOCKET");
    if let Some(n) = notify {
        cmd.env("NOTIFY_SOCKET", &n.address);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fd = listener.as_raw_fd();
    // SAFETY: dup2 and fcntl are async-signal-safe; they only duplicate a
    // descriptor this process owns onto fd 3 and clear its close-on-exec
    // (dup2 onto itself, when it already is fd 3, would leave the flag set).
    unsafe {
        cmd.pre_exec(move || {
            if fd != 3 && libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawning sh + zeroclaw");
    let log = Log::default();
    let stderr = child.stderr.take().expect("stderr piped");
    let log2 = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).split(b'\n').map_while(Result::ok) {
            log2.push(String::from_utf8_lossy(&line).into_owned());
        }
        log2.close();
    });
    let out = child.stdout.take().expect("stdout piped");
    let (tx, stdout) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    Activated { child, stdout, log }
}

impl Activated {
    /// The ready line; panics with the log if none comes.
    pub fn ready_line(&self) -> String {
        self.stdout
            .recv_timeout(STARTUP_TIMEOUT)
            .unwrap_or_else(|_| panic!("no ready line; stderr:\n{}", self.log.text()))
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory effects; the pid is our live child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// The exit status, within the usual bound.
    pub fn wait_exit(&mut self) -> ExitStatus {
        wait_timeout(&mut self.child, EXIT_TIMEOUT)
            .unwrap_or_else(|| panic!("the daemon did not exit; stderr:\n{}", self.log.text()))
    }
}

impl Drop for Activated {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `<config_dir>/data/daemon.sock`, with the data dir created `0700`.
pub fn default_socket(config_dir: &Path) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let data = config_dir.join("data");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&data)
        .expect("creating the data dir");
    data.join("daemon.sock")
}
