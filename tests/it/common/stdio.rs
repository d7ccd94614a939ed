//! A daemon whose stdout and stderr the test controls: a pipe it closes,
//! a pipe it never reads, or a descriptor closed before `exec` — the ways
//! launchers (zerocode's auto-start, supervisors, shells) leave them.

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{hermetic_env, wait_timeout, Client, TestDir, BIN, EXIT_TIMEOUT, STARTUP_TIMEOUT};

/// A daemon spawned with piped stdout and stderr, both handed to the test.
#[derive(Debug)]
pub struct RawDaemon {
    pub child: Child,
    pub socket: PathBuf,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    /// The read end of a one-page stderr pipe (`spawn_with(.., true)`), never read.
    pub small_read_end: Option<OwnedFd>,
    pub dir: TestDir,
}

impl RawDaemon {
    /// Spawns `zeroclaw daemon ARGS` with `ZEROCLAW_LOG=log` and, in the
    /// child before `exec`, the descriptors `close` closed.
    pub fn spawn(args: &[&str], log: &str, close: &'static [i32]) -> Self {
        Self::spawn_with(args, log, close, false)
    }

    /// As [`Self::spawn`], with a one-page stderr pipe (a few lines fill it) when `small_stderr`.
    pub fn spawn_with(args: &[&str], log: &str, close: &'static [i32], small_stderr: bool) -> Self {
        let dir = TestDir::new();
        let config_dir = dir.config_dir();
        let mut cmd = Command::new(BIN);
        cmd.arg("daemon").arg("--config-dir").arg(&config_dir);
        cmd.args(args);
        hermetic_env(&mut cmd, dir.path());
        cmd.env("ZEROCLAW_LOG", log);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut small_read_end = None;
        if small_stderr {
            let (read, write) = one_page_pipe();
            cmd.stderr(Stdio::from(write));
            small_read_end = Some(read);
        } else {
            cmd.stderr(Stdio::piped());
        }
        if !close.is_empty() {
            // SAFETY: only async-signal-safe close(2) runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    for &fd in close {
                        libc::close(fd);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().expect("spawning the zeroclaw binary");
        drop(cmd);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        Self {
            child,
            socket: config_dir.join("data").join("daemon.sock"),
            stdout,
            stderr,
            small_read_end,
            dir,
        }
    }

    /// Reads the ready line from stdout (which stays open), within [`STARTUP_TIMEOUT`].
    pub fn read_ready_line(&mut self) -> String {
        let stdout = self.stdout.take().expect("stdout already taken");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send((line, reader.into_inner()));
        });
        let (line, stdout) = rx
            .recv_timeout(STARTUP_TIMEOUT)
            .unwrap_or_else(|_| panic!("no ready line within {STARTUP_TIMEOUT:?}"));
        assert!(line.contains(r#""event":"ready""#), "ready line: {line:?}");
        self.stdout = Some(stdout);
        line
    }

    /// Waits until the socket answers `initialize` (for a daemon whose ready line is lost).
    pub fn wait_serving(&mut self) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(mut c) = Client::try_connect(&self.socket) {
                c.initialize();
                return;
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                panic!("the daemon exited before serving: {s:?}");
            }
            assert!(Instant::now() < deadline, "the daemon never served");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `n` fresh connections, each answered `initialize` and `status`.
    pub fn serve_round(&self, n: usize) {
        for i in 0..n {
            let mut c = Client::connect(&self.socket);
            c.initialize();
            let v = c.call("status", json!({}), json!(i));
            assert_eq!(v["id"], i, "status answer on connection {i}: {v}");
            assert_eq!(v["result"]["protocol_version"], 1, "{v}");
        }
    }

    /// SIGTERM; the exit status (bounded).
    pub fn terminate(&mut self) -> ExitStatus {
        // SAFETY: kill on our own unreaped child.
        let r = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(r, 0);
        self.wait_exit()
    }

    /// Waits (bounded) for the daemon to exit by itself.
    pub fn wait_exit(&mut self) -> ExitStatus {
        wait_timeout(&mut self.child, EXIT_TIMEOUT).unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!("the daemon did not exit within {EXIT_TIMEOUT:?}")
        })
    }
}

/// A pipe of one page (`F_SETPIPE_SZ` must run while it is empty).
fn one_page_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array; checked below.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned here only.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETPIPE_SZ on a pipe we own.
    let size = unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(
        size >= 4096,
        "F_SETPIPE_SZ: {}",
        std::io::Error::last_os_error()
    );
    (read, write)
}

impl Drop for RawDaemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
