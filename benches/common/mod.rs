//! What the out-of-process benches share: a scratch directory, a server
//! process started and waited for until its ready line, and killed (and
//! reaped) however the bench ends, and the client side of the handshake.

#![allow(dead_code)] // each bench uses part of this module

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

pub mod ndjson;

/// The `initialize` request every client sends first (id 0).
pub const INITIALIZE: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1},\"id\":0}\n";

/// A directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A fresh, empty directory (short path: it holds a Unix socket).
    pub fn new(tag: &str) -> std::io::Result<Self> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zcb-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process; terminated (SIGTERM, then SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct Server {
    /// What to call it in reports.
    pub name: &'static str,
    child: Child,
    /// Its socket path, from its ready line.
    pub endpoint: PathBuf,
    /// Its pid.
    pub pid: u32,
    _dir: Option<ScratchDir>,
}

#[derive(Deserialize)]
struct Ready {
    event: String,
    endpoint: PathBuf,
}

impl Server {
    /// The real `zeroclaw` release binary, with its own fresh config dir.
    pub fn daemon() -> std::io::Result<Self> {
        Self::daemon_from("daemon", env!("CARGO_BIN_EXE_zeroclaw").as_ref())
    }

    /// Another build of the daemon (e.g. the commit before a change, so that
    /// before and after are measured in the same run).
    pub fn daemon_from(name: &'static str, bin: &std::path::Path) -> std::io::Result<Self> {
        Self::daemon_in(name, bin, ScratchDir::new(name)?)
    }

    /// The release daemon on a fresh config dir holding `config` as its
    /// `config.toml` (mode 0600).
    pub fn daemon_with_config(name: &'static str, config: &str) -> std::io::Result<Self> {
        Self::daemon_with_config_from(name, env!("CARGO_BIN_EXE_zeroclaw").as_ref(), config)
    }

    /// The daemon `bin` (another build: before and after a change in one
    /// run) on a fresh config dir holding `config`.
    pub fn daemon_with_config_from(
        name: &'static str,
        bin: &std::path::Path,
        config: &str,
    ) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = ScratchDir::new(name)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.path().join("config.toml"))?;
        std::io::Write::write_all(&mut f, config.as_bytes())?;
        Self::daemon_in(name, bin, dir)
    }

    fn daemon_in(
        name: &'static str,
        bin: &std::path::Path,
        dir: ScratchDir,
    ) -> std::io::Result<Self> {
        let cmd = daemon_command(bin, dir.path());
        Self::start(name, cmd, Some(dir))
    }

    /// Starts `cmd` (stdout piped for the ready line) and waits for its ready line.
    pub fn start(
        name: &'static str,
        mut cmd: Command,
        dir: Option<ScratchDir>,
    ) -> std::io::Result<Self> {
        // Logs go nowhere: at the default level the daemon logs per connection, not per request.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs between fork and exec and only calls
            // prctl, which is async-signal-safe. The server then dies with
            // the thread that started it, so none outlives the bench.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped stdout");
        // Read the ready line on a thread, so a server that never prints one times out.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            let res = r.read_line(&mut line).map(|_| line);
            let _ = tx.send(res);
            // Drain anything else it prints, so it never blocks on a full pipe.
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink);
        });
        let mut server = Server {
            name,
            child,
            endpoint: PathBuf::new(),
            pid,
            _dir: dir,
        };
        let line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(std::io::Error::other(format!("{name}: no ready line"))),
        };
        let ready: Ready = serde_json::from_str(line.trim())
            .map_err(|e| std::io::Error::other(format!("{name}: bad ready line {line:?}: {e}")))?;
        if ready.event != "ready" {
            return Err(std::io::Error::other(format!(
                "{name}: unexpected first line {line:?}"
            )));
        }
        server.endpoint = ready.endpoint;
        Ok(server)
    }

    /// The server's resident set size now, from `/proc/<pid>/status`, in bytes.
    pub fn rss_bytes(&self) -> std::io::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .ok_or_else(|| std::io::Error::other("no VmRSS line"))
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Connects and completes `initialize`; returns the stream with nothing left unread.
pub async fn connect_initialized(endpoint: &Path) -> std::io::Result<UnixStream> {
    let mut stream = UnixStream::connect(endpoint).await?;
    stream.write_all(INITIALIZE).await?;
    // Nothing but the one response is owed, so whatever arrives belongs to it.
    let mut line = Vec::with_capacity(1024);
    while !line.ends_with(b"\n") {
        if stream.read_buf(&mut line).await? == 0 {
            break;
        }
    }
    check_initialize_response(&line)?;
    Ok(stream)
}

/// Errors unless `line` is a successful response with id 0.
pub fn check_initialize_response(line: &[u8]) -> std::io::Result<()> {
    #[derive(Deserialize)]
    struct Resp<'a> {
        id: Option<u64>,
        #[serde(borrow)]
        result: Option<&'a serde_json::value::RawValue>,
    }
    match serde_json::from_slice::<Resp<'_>>(line) {
        Ok(Resp {
            id: Some(0),
            result: Some(_),
        }) => Ok(()),
        _ => Err(std::io::Error::other(format!(
            "initialize failed: {}",
            String::from_utf8_lossy(line).trim_end()
        ))),
    }
}

/// Raises this process's `RLIMIT_NOFILE` soft limit to its hard limit; returns the new soft limit.
pub fn raise_nofile_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim.rlim_cur = lim.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every Unix
    Ok(lim.rlim_cur as u64)
}

/// Reads a positive number of seconds from the environment variable `var`.
pub fn env_secs(var: &str, default: f64) -> Duration {
    let secs = std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(secs)
}

/// `nproc` and the CPU model, for the report header.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cpus} CPUs, {model}")
}

/// A process's CPU time (user + system) so far, in seconds, from
/// `/proc/<pid>/stat` (0 when unreadable).
pub fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    // utime and stime are fields 14 and 15 of proc_pid_stat(5); `rest` starts at field 3.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / hz as f64
}

/// The median of `v` (sorted in place; `v` must not be empty).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// How a report line says whether a target was reached.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// A bench's exit code: 0, or 1 after printing `<name>: error: <e>`.
pub fn exit_code(name: &str, result: Result<(), String>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{name}: error: {e}");
            1
        }
    }
}

/// `<bin> --config-dir <dir> daemon`, with the environment kept from
/// choosing another config dir, data dir or log level.
pub fn daemon_command(bin: &Path, config_dir: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--config-dir")
        .arg(config_dir)
        .arg("daemon")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env_remove("ZEROCLAW_LOG");
    cmd
}
