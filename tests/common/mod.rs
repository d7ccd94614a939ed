//! Shared harness of the protocol tests: spawns the real `zeroclaw` binary
//! with a fresh config dir, collects its ready line and its JSON log, and
//! talks to it over the real Unix socket with a raw NDJSON client.
//!
//! Every wait here is bounded: a helper either gets what it waits for before
//! its deadline or fails the test with what it saw. Nothing sleeps to assert.

#![allow(dead_code, unused_macros)]

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod acp;
pub mod env_ops;
pub mod files;
pub mod pipeline;
pub mod stdio;
pub mod tmpfs;
pub mod users;
pub mod zerocode;

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
/// The exact frame answering an oversized frame (SPEC §3.1).
pub const FRAME_TOO_LARGE: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Frame exceeds 8388608 bytes","data":{"reason":"frame_too_large","max_frame_bytes":8388608}},"id":null}"#;
/// The maximum frame size (SPEC §3.1).
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
/// (Declare the module with `#[macro_use] mod common;`.)
macro_rules! skip_test {
    ($($arg:tt)*) => {{
        $crate::common::skip(&format!($($arg)*));
        return;
    }};
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The peer label the daemon must log for connections made by this process.
pub fn own_peer_label() -> String {
    format!("unix:pid={},uid={}", std::process::id(), euid())
}

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
        let mut base = std::env::temp_dir();
        if base.as_os_str().len() > 40 {
            base = PathBuf::from("/tmp");
        }
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

// ---------------------------------------------------------------------------
// The daemon's log

#[derive(Debug, Default)]
struct LogState {
    lines: Vec<String>,
    closed: bool,
}

/// The daemon's stderr, line by line, as it arrives.
#[derive(Debug, Clone, Default)]
pub struct Log {
    inner: Arc<(Mutex<LogState>, Condvar)>,
}

impl Log {
    fn push(&self, line: String) {
        let (m, cv) = &*self.inner;
        m.lock().unwrap().lines.push(line);
        cv.notify_all();
    }

    fn close(&self) {
        let (m, cv) = &*self.inner;
        m.lock().unwrap().closed = true;
        cv.notify_all();
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.inner.0.lock().unwrap().lines.clone()
    }

    /// Every line so far, joined.
    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// How many lines have arrived.
    pub fn len(&self) -> usize {
        self.inner.0.lock().unwrap().lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lines that are JSON objects, parsed.
    pub fn events(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(Value::is_object)
            .collect()
    }

    /// The events whose `event` member is `name`.
    pub fn events_named(&self, name: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == name)
            .collect()
    }

    /// Waits for a JSON line at index `from` or later that satisfies `pred`;
    /// returns its index and value, or `None` after `timeout` (or once the
    /// log is closed without a match).
    pub fn wait_for(
        &self,
        from: usize,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<(usize, Value)> {
        let deadline = Instant::now() + timeout;
        let (m, cv) = &*self.inner;
        let mut st = m.lock().unwrap();
        let mut next = from;
        loop {
            while next < st.lines.len() {
                if let Ok(v) = serde_json::from_str::<Value>(&st.lines[next]) {
                    if pred(&v) {
                        return Some((next, v));
                    }
                }
                next += 1;
            }
            let now = Instant::now();
            if st.closed || now >= deadline {
                return None;
            }
            st = cv.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Waits for an event named `name`, from line `from` on.
    pub fn wait_event(&self, from: usize, name: &str, timeout: Duration) -> Option<(usize, Value)> {
        self.wait_for(from, timeout, |v| v["event"] == name)
    }
}

// ---------------------------------------------------------------------------
// The daemon process

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
    /// tests/endpoint.rs). Returns at once where `/proc` cannot tell.
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

    /// SIGKILL, and reap.
    pub fn kill9(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        self.wait_exit(EXIT_TIMEOUT)
            .expect("the daemon survived SIGKILL")
    }

    /// Lines the daemon printed on stdout after its ready line.
    pub fn stdout_rest(&self) -> Vec<String> {
        self.stdout_rest.lock().unwrap().clone()
    }

    /// The daemon's resident set size in KiB (`/proc/<pid>/status` VmRSS).
    pub fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    /// The daemon's peak resident set size in KiB (`/proc/<pid>/status` VmHWM).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.status_kib("VmHWM:")
    }

    /// A `<field> <n> kB` line of `/proc/<pid>/status`.
    fn status_kib(&self, field: &str) -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        s.lines()
            .find(|l| l.starts_with(field))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// CPU time (user + system) the daemon has used, from `/proc/<pid>/stat`.
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if ticks <= 0 {
            return None;
        }
        Some(Duration::from_secs_f64(
            (utime + stime) as f64 / ticks as f64,
        ))
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

// ---------------------------------------------------------------------------
// The raw client

/// Why no line arrived.
#[derive(Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Nothing complete before the deadline (the bytes of a partial line, if any).
    Timeout(Vec<u8>),
    /// The daemon closed the connection (with the bytes of an unterminated line, if any).
    Eof(Vec<u8>),
    /// The read failed.
    Io(io::ErrorKind),
}

/// An NDJSON client over a real Unix socket.
#[derive(Debug)]
pub struct Client {
    pub stream: UnixStream,
    buf: Vec<u8>,
    probes: u64,
    write_closed: bool,
}

impl Client {
    /// Connects; panics on failure.
    pub fn connect(path: &Path) -> Self {
        Self::try_connect(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()))
    }

    pub fn try_connect(path: &Path) -> io::Result<Self> {
        let stream = UnixStream::connect(path)?;
        Ok(Self {
            stream,
            buf: Vec::new(),
            probes: 0,
            write_closed: false,
        })
    }

    /// Sends bytes exactly as given.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("writing to the daemon");
    }

    /// Sends `line` followed by `\n`.
    pub fn send_line(&mut self, line: &str) {
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        self.send_raw(&b);
    }

    /// Sends a JSON value as one frame.
    pub fn send_json(&mut self, v: &Value) {
        self.send_line(&v.to_string());
    }

    /// Sends a request and returns the next frame (callers use this only
    /// where no other frame can come first).
    pub fn call(&mut self, method: &str, params: Value, id: Value) -> Value {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}));
        self.recv_json()
    }

    /// Half-closes the write side (the daemon sees end of stream).
    pub fn shutdown_write(&mut self) {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown(Write)");
        self.write_closed = true;
    }

    /// The next line (without its `\n`), or why none came within `timeout`.
    pub fn try_recv_line(&mut self, timeout: Duration) -> Result<String, RecvError> {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
                line.pop();
                return Ok(String::from_utf8(line).expect("the daemon wrote invalid UTF-8"));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RecvError::Timeout(self.buf.clone()));
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            self.stream.set_read_timeout(Some(wait)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(RecvError::Eof(std::mem::take(&mut self.buf))),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(RecvError::Eof(std::mem::take(&mut self.buf)))
                }
                Err(e) => return Err(RecvError::Io(e.kind())),
            }
        }
    }

    /// The next line; panics if none arrives within [`RECV_TIMEOUT`].
    pub fn recv_line(&mut self) -> String {
        match self.try_recv_line(RECV_TIMEOUT) {
            Ok(l) => l,
            Err(e) => panic!("expected a frame from the daemon, got {}", describe(&e)),
        }
    }

    /// The next line as JSON.
    pub fn recv_json(&mut self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("frame is not JSON ({e}): {line}"))
    }

    /// Asserts that no byte arrives within `window` (the connection may stay open).
    pub fn expect_silence(&mut self, window: Duration) {
        match self.try_recv_line(window) {
            Err(RecvError::Timeout(partial)) if partial.is_empty() => {}
            Ok(l) => panic!("expected silence, got a frame: {l}"),
            Err(e) => panic!("expected silence, got {}", describe(&e)),
        }
    }

    /// Asserts that nothing was answered to what was sent so far: sends a
    /// probe request (an unknown method, answered `-32601` in every state)
    /// and requires its answer to be the very next frame. Frames are read
    /// and dispatched in order, so any answer owed to an earlier frame of a
    /// synchronously answered method would come first.
    pub fn expect_nothing_before_probe(&mut self) {
        self.probes += 1;
        let id = format!("zc-test-probe-{}", self.probes);
        self.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"zc-test/probe","id":"{id}"}}"#
        ));
        let line = self.recv_line();
        let expected = format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"Unknown method: zc-test/probe"}},"id":"{id}"}}"#
        );
        assert_eq!(
            line, expected,
            "expected no answer before the probe's, got another frame"
        );
    }

    /// Asserts that the daemon closes the connection within `timeout`
    /// without sending anything more.
    pub fn expect_eof(&mut self, timeout: Duration) {
        match self.try_recv_line(timeout) {
            Err(RecvError::Eof(rest)) if rest.is_empty() => {}
            Ok(l) => panic!("expected end of stream, got a frame: {l}"),
            Err(e) => panic!("expected end of stream, got {}", describe(&e)),
        }
    }

    /// `initialize` with protocol version 1; returns the result.
    pub fn initialize(&mut self) -> Value {
        let v = self.call("initialize", json!({"protocolVersion": 1}), json!("init"));
        assert_eq!(v["id"], "init", "initialize answer: {v}");
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        v["result"].clone()
    }

    /// `status`; returns the result.
    pub fn status(&mut self) -> Value {
        let v = self.call("status", json!({}), json!("status"));
        assert_eq!(v["id"], "status", "status answer: {v}");
        assert!(v.get("result").is_some(), "status failed: {v}");
        v["result"].clone()
    }

    /// Whether the write side was half-closed.
    pub fn write_closed(&self) -> bool {
        self.write_closed
    }
}

/// Human-readable form of a receive failure.
pub fn describe(e: &RecvError) -> String {
    match e {
        RecvError::Timeout(p) if p.is_empty() => "nothing (timed out)".into(),
        RecvError::Timeout(p) => format!(
            "a partial frame and then nothing: {:?}",
            String::from_utf8_lossy(p)
        ),
        RecvError::Eof(p) if p.is_empty() => "end of stream".into(),
        RecvError::Eof(p) => format!(
            "an unterminated frame and end of stream: {:?}",
            String::from_utf8_lossy(p)
        ),
        RecvError::Io(k) => format!("a read error: {k:?}"),
    }
}

/// A frame of exactly `len` bytes (before `\n`): `template` with its first
/// `@PAD@` replaced by as many `x` as make the result `len` bytes long.
/// Panics if `template` without `@PAD@` is already longer.
pub fn sized_frame(template: &str, len: usize) -> Vec<u8> {
    let (head, tail) = template
        .split_once("@PAD@")
        .unwrap_or_else(|| panic!("template without @PAD@: {template}"));
    let fixed = head.len() + tail.len();
    assert!(
        fixed <= len,
        "template is {fixed} bytes, longer than the requested {len}"
    );
    let mut out = Vec::with_capacity(len + 2);
    out.extend_from_slice(head.as_bytes());
    out.resize(head.len() + (len - fixed), b'x');
    out.extend_from_slice(tail.as_bytes());
    debug_assert_eq!(out.len(), len);
    out
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
