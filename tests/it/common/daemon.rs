//! The daemon process: how to start one ([`DaemonBuilder`]), the running
//! [`Daemon`] (killed and reaped on drop), and the one-shot CLI client.

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Client, Log, TestDir, BIN, EXIT_TIMEOUT, STARTUP_TIMEOUT};

/// `CREATE_NEW_PROCESS_GROUP`: the daemon leads a console process group.
#[cfg(windows)]
const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;

/// How to start a daemon.
#[derive(Debug, Default)]
pub struct DaemonBuilder {
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    config_dir: Option<PathBuf>,
    config_dir_by_env: bool,
    address_space: Option<u64>,
}

/// A daemon that exited (or never printed its ready line).
#[derive(Debug)]
pub struct StartFailure {
    pub status: ExitStatus,
    pub log: Log,
    pub stdout: String,
}

impl DaemonBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// An extra argument after `daemon`.
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    /// An extra environment variable.
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Use this config dir (owned by the test) instead of a fresh one.
    pub fn config_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config_dir = Some(dir.into());
        self
    }

    /// Runs the daemon under `RLIMIT_AS = bytes` (what `ulimit -v` sets), so
    /// that an allocation past it fails inside the daemon instead of the
    /// machine swapping.
    pub fn address_space_limit(mut self, bytes: u64) -> Self {
        self.address_space = Some(bytes);
        self
    }

    /// Pass the config dir through `ZEROCLAW_CONFIG_DIR` instead of `--config-dir`.
    pub fn config_dir_by_env(mut self) -> Self {
        self.config_dir_by_env = true;
        self
    }

    /// Starts the daemon and waits for its ready line; panics if it fails.
    pub fn spawn(self) -> Daemon {
        match self.try_spawn() {
            Ok(d) => d,
            Err(f) => panic!(
                "the daemon did not start: {:?}\nstdout: {}\nstderr:\n{}",
                f.status,
                f.stdout,
                f.log.text()
            ),
        }
    }

    /// Starts the daemon; `Err` if it exits before printing its ready line.
    pub fn try_spawn(self) -> Result<Daemon, StartFailure> {
        let owned_dir = if self.config_dir.is_none() {
            Some(TestDir::new())
        } else {
            None
        };
        let config_dir = self
            .config_dir
            .clone()
            .unwrap_or_else(|| owned_dir.as_ref().unwrap().config_dir());
        let home = owned_dir
            .as_ref()
            .map(|d| d.path().to_owned())
            .unwrap_or_else(|| config_dir.parent().unwrap_or(&config_dir).to_owned());
        let mut cmd = Command::new(BIN);
        cmd.arg("daemon");
        if !self.config_dir_by_env {
            cmd.arg("--config-dir").arg(&config_dir);
        }
        cmd.args(&self.args);
        hermetic_env(&mut cmd, &home);
        if self.config_dir_by_env {
            cmd.env("ZEROCLAW_CONFIG_DIR", &config_dir);
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(windows)]
        assert!(
            self.address_space.is_none(),
            "an address-space limit is set with setrlimit (Unix only)"
        );
        #[cfg(unix)]
        if let Some(bytes) = self.address_space {
            use std::os::unix::process::CommandExt;
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 {
                        Ok(())
                    } else {
                        Err(io::Error::last_os_error())
                    }
                });
            }
        }
        // A process group of its own: Ctrl-Break can then be sent to the
        // daemon alone ([`Daemon::stop`]).
        #[cfg(windows)]
        std::os::windows::process::CommandExt::creation_flags(&mut cmd, CREATE_NEW_PROCESS_GROUP);
        let mut child = cmd.spawn().expect("spawning the zeroclaw binary");
        let pid = child.id();

        let log = Log::default();
        let stderr = child.stderr.take().unwrap();
        let log2 = log.clone();
        let stderr_thread = std::thread::spawn(move || {
            for line in BufReader::new(stderr).split(b'\n') {
                match line {
                    Ok(l) => log2.push(String::from_utf8_lossy(&l).into_owned()),
                    Err(_) => break,
                }
            }
            log2.close();
        });

        let stdout = child.stdout.take().unwrap();
        let (ready_tx, ready_rx) = mpsc::channel::<String>();
        let stdout_rest = Arc::new(Mutex::new(Vec::<String>::new()));
        let rest = stdout_rest.clone();
        let stdout_thread = std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = ready_tx.send(first);
            }
            drop(ready_tx);
            for l in lines.map_while(Result::ok) {
                rest.lock().unwrap().push(l);
            }
        });

        match ready_rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(line) => {
                let ready: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the ready line is not JSON ({e}): {line}"));
                let socket = PathBuf::from(
                    ready["endpoint"]
                        .as_str()
                        .unwrap_or_else(|| panic!("ready line without endpoint: {line}")),
                );
                Ok(Daemon {
                    child: Some(child),
                    pid,
                    socket,
                    config_dir,
                    ready,
                    ready_line: line,
                    log,
                    stdout_rest,
                    threads: vec![stderr_thread, stdout_thread],
                    exit: None,
                    _dir: owned_dir,
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed without a ready line: the process is exiting.
                let status = wait_timeout(&mut child, EXIT_TIMEOUT).unwrap_or_else(|| {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the daemon closed stdout but did not exit")
                });
                let _ = stderr_thread.join();
                let _ = stdout_thread.join();
                let stdout = stdout_rest.lock().unwrap().join("\n");
                Err(StartFailure {
                    status,
                    log,
                    stdout,
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "no ready line within {STARTUP_TIMEOUT:?}; stderr:\n{}",
                    log.text()
                );
            }
        }
    }
}

/// Removes the caller's zeroclaw environment so that only what a test sets applies.
pub fn hermetic_env(cmd: &mut Command, home: &Path) {
    for k in [
        "ZEROCLAW_CONFIG_DIR",
        "ZEROCLAW_DATA_DIR",
        "ZEROCLAW_SOCKET",
        "ZEROCLAW_LOG",
        "ZEROCLAW_CONFIG_POLL_MS",
        "RUST_LOG",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("ZEROCLAW_LOG", "info").env("HOME", home);
}

/// Polls `child` until it exits or `timeout` passes.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running daemon; killed and reaped on drop.
#[derive(Debug)]
pub struct Daemon {
    child: Option<Child>,
    pub pid: u32,
    pub socket: PathBuf,
    pub config_dir: PathBuf,
    /// The ready line, parsed.
    pub ready: Value,
    pub ready_line: String,
    /// stderr, as JSON log lines.
    pub log: Log,
    stdout_rest: Arc<Mutex<Vec<String>>>,
    threads: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
    _dir: Option<TestDir>,
}

impl Daemon {
    /// A daemon with a fresh config dir and no extra options.
    pub fn start() -> Self {
        DaemonBuilder::new().spawn()
    }

    /// A daemon with no config file (the built-in defaults) and an
    /// initialized client of it.
    pub fn with_client() -> (Self, Client) {
        let d = Self::start();
        let c = d.client();
        (d, c)
    }

    pub fn builder() -> DaemonBuilder {
        DaemonBuilder::new()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.config_dir.join("data")
    }

    /// A raw client connected to this daemon's socket.
    pub fn connect(&self) -> Client {
        Client::connect(&self.socket)
    }

    /// A connected client that has completed `initialize`.
    pub fn client(&self) -> Client {
        let mut c = self.connect();
        c.initialize();
        c
    }

    /// Whether the process is still running (reaps it if it exited).
    pub fn is_running(&mut self) -> bool {
        if self.exit.is_some() {
            return false;
        }
        match self.child.as_mut().unwrap().try_wait().expect("try_wait") {
            Some(s) => {
                self.exit = Some(s);
                false
            }
            None => true,
        }
    }

    /// Waits for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if let Some(s) = self.exit {
            return Some(s);
        }
        let s = wait_timeout(self.child.as_mut().unwrap(), timeout)?;
        self.exit = Some(s);
        // The pipes close with the process: let the readers finish.
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        Some(s)
    }

    /// Sends `signal` to the daemon.
    #[cfg(unix)]
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's,
        // which is not reaped while `self.child` holds it.
        let r = unsafe { libc::kill(self.pid as libc::pid_t, signal) };
        assert_eq!(r, 0, "kill({}, {signal})", self.pid);
    }

    /// Whether the daemon has installed a handler for `signal` (bit
    /// `signal - 1` of `SigCgt` in `/proc/<pid>/status`); `None` if unknown.
    pub fn catches(&self, signal: i32) -> Option<bool> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let hex = s.lines().find_map(|l| l.strip_prefix("SigCgt:"))?.trim();
        let mask = u64::from_str_radix(hex, 16).ok()?;
        Some(mask & (1u64 << (signal - 1)) != 0)
    }

    /// Waits (bounded) until the daemon catches `signal`, so that a test of
    /// graceful shutdown does not race the handler's installation (which
    /// happens after the ready line: see `sigterm_right_after_the_ready_line_exits_0` in
    /// tests/it/endpoint.rs). Returns at once where `/proc` cannot tell.
    pub fn wait_for_handler(&self, signal: i32) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while self.catches(signal) == Some(false) {
            assert!(
                Instant::now() < deadline,
                "the daemon never installed a handler for signal {signal}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Asks the daemon to shut down gracefully (SIGTERM; Ctrl-Break on
    /// Windows), without waiting; `Err` says why it cannot be asked here.
    #[cfg(unix)]
    pub fn stop(&self) -> Result<(), String> {
        self.wait_for_handler(libc::SIGTERM);
        self.signal(libc::SIGTERM);
        Ok(())
    }

    /// Asks the daemon to shut down gracefully (Ctrl-Break to its process
    /// group), without waiting; `Err` says why it cannot be asked here.
    #[cfg(windows)]
    pub fn stop(&self) -> Result<(), String> {
        extern "system" {
            fn GenerateConsoleCtrlEvent(event: u32, group: u32) -> i32;
        }
        const CTRL_BREAK_EVENT: u32 = 1;
        // SAFETY: plain values; the group is our child's (its pid).
        if unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.pid) } == 0 {
            let e = io::Error::last_os_error();
            // Wine 8 fails every GenerateConsoleCtrlEvent of a program not
            // started from its own console (tried: a fresh AllocConsole,
            // group 0); the graceful stop is shown on real Windows.
            return Err(if super::endpoint::under_wine() {
                format!("Wine cannot deliver Ctrl-Break to the daemon (GenerateConsoleCtrlEvent: {e}); real Windows can")
            } else {
                format!("Ctrl-Break cannot be sent to the daemon here: {e}")
            });
        }
        Ok(())
    }

    /// SIGKILL (on Windows `TerminateProcess`: no cleanup runs either), and reap.
    pub fn kill9(&mut self) -> ExitStatus {
        #[cfg(unix)]
        self.signal(libc::SIGKILL);
        #[cfg(windows)]
        if let Some(child) = self.child.as_mut() {
            child.kill().expect("TerminateProcess of the daemon");
        }
        self.wait_exit(EXIT_TIMEOUT)
            .expect("the daemon survived SIGKILL")
    }

    /// Lines the daemon printed on stdout after its ready line.
    pub fn stdout_rest(&self) -> Vec<String> {
        self.stdout_rest.lock().unwrap().clone()
    }

    /// A `zeroclaw` client command for this daemon (its config dir, hermetic env).
    pub fn cli(&self) -> Command {
        let mut cmd = Command::new(BIN);
        hermetic_env(
            &mut cmd,
            self.config_dir.parent().unwrap_or(&self.config_dir),
        );
        cmd.arg("--config-dir").arg(&self.config_dir);
        cmd
    }
}

impl Daemon {
    /// `zeroclaw --config-dir <cfg> rpc ARGS…` for this daemon, not started.
    pub fn rpc_command(&self, args: &[&str]) -> Command {
        let mut cmd = self.cli();
        cmd.arg("rpc").args(args);
        cmd
    }

    /// Runs `zeroclaw rpc ARGS…` to completion: (exit code, stdout, stderr).
    pub fn rpc_cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        run_cli_code(self.rpc_command(args))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.exit.is_none() && matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// [`run_cli`] with the exit code in place of the status.
pub fn run_cli_code(cmd: Command) -> (Option<i32>, String, String) {
    let (status, out, err) = run_cli(cmd);
    (status.code(), out, err)
}

/// Runs a client command to completion (bounded), returning (status, stdout, stderr).
pub fn run_cli(mut cmd: Command) -> (ExitStatus, String, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawning zeroclaw");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = match wait_timeout(&mut child, Duration::from_secs(30)) {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the client command did not finish within 30 s: {cmd:?}");
        }
    };
    let out = String::from_utf8(t_out.join().unwrap()).expect("stdout is UTF-8");
    let err = String::from_utf8(t_err.join().unwrap()).expect("stderr is UTF-8");
    (status, out, err)
}
