//! A real third-party ACP client for tests/it/acp_bridge.rs: the official
//! Python SDK (`agent-client-protocol` on PyPI, pinned) installed once per
//! test run into a venv at `target/acp-py`, under a `flock` so concurrent
//! test processes do not race; and a runner of tests/acp_bridge/editor.py's
//! scenarios. Without python3, venv or the package index, the tests print
//! "SKIPPED: reason" (`.ci/run` installs the venv, so CI never skips).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::{hermetic_env, BIN};

/// The SDK version the tests were written against.
pub const SDK: &str = "agent-client-protocol==0.12.1";

/// How long one scenario may take at most.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(150);

/// The venv's python with the SDK importable, or why there is none.
pub fn python() -> Result<PathBuf, String> {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    READY.get_or_init(install).clone()
}

fn install() -> Result<PathBuf, String> {
    let target = Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .ok_or("no target dir")?
        .to_path_buf();
    let venv = target.join("acp-py");
    let py = venv.join("bin").join("python");
    std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
    let lock = File::create(target.join("acp-py.lock")).map_err(|e| e.to_string())?;
    // SAFETY: flock on a file descriptor we own; released when `lock` drops.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    if rc != 0 {
        return Err(format!("flock: {}", std::io::Error::last_os_error()));
    }
    let imports = |py: &Path| {
        Command::new(py)
            .args([
                "-c",
                "import acp, sys; sys.exit(0 if acp.PROTOCOL_VERSION == 1 else 1)",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if imports(&py) {
        return Ok(py);
    }
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        match cmd.output() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => Err(format!("{what}: {e}")),
        }
    };
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    )?;
    run(
        Command::new(&py).args(["-m", "pip", "install", "-q", SDK]),
        "pip install agent-client-protocol",
    )?;
    if imports(&py) {
        Ok(py)
    } else {
        Err("the ACP SDK does not import after pip install".into())
    }
}

/// One run of a scenario: its observation lines, and the stderr of the
/// script and the bridges (shown when an assertion fails).
#[derive(Debug)]
pub struct Played {
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl Played {
    /// The observation of kind `k` (the first one).
    #[track_caller]
    pub fn get(&self, k: &str) -> &Value {
        self.lines.iter().find(|l| l["k"] == k).unwrap_or_else(|| {
            panic!(
                "no {k:?} line in {:#?}\nstderr:\n{}",
                self.lines, self.stderr
            )
        })
    }

    /// Every observation of kind `k`.
    pub fn all(&self, k: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["k"] == k).collect()
    }

    /// Asserts every bridge wrote nothing but JSON-RPC frames to stdout and
    /// exited 0 when the editor closed stdin.
    #[track_caller]
    pub fn assert_stdout_clean(&self, bridges: usize) {
        let outs = self.all("stdout");
        assert_eq!(
            outs.len(),
            bridges,
            "{:#?}\nstderr:\n{}",
            self.lines,
            self.stderr
        );
        for o in outs {
            assert_eq!(o["only_frames"], true, "stray bytes on stdout: {o}");
            assert_eq!(o["frames"], true, "{o}");
            assert_eq!(o["exit"], 0, "{o}\nstderr:\n{}", self.stderr);
        }
    }
}

/// Plays `scenario` with `args` against the daemon of `config_dir`, the
/// bridge opening sessions with `agent`. `on_wait` is called for each
/// `WAIT <tag>` line, and the script goes on once it returns.
pub fn play(
    py: &Path,
    config_dir: &Path,
    agent: &str,
    scenario: &str,
    args: &[&str],
    mut on_wait: impl FnMut(&str),
) -> Played {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_bridge/editor.py");
    let mut cmd = Command::new(py);
    hermetic_env(&mut cmd, config_dir.parent().unwrap_or(config_dir));
    cmd.arg(&script)
        .arg(scenario)
        .args(args)
        .env("ZC_BIN", BIN)
        .env("ZC_CONFIG_DIR", config_dir)
        .env("ZC_AGENT", agent)
        .env("PYTHONWARNINGS", "ignore")
        .current_dir(config_dir.parent().unwrap_or(config_dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawning the Python editor");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + SCENARIO_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => match line.strip_prefix("WAIT ") {
                Some(tag) => {
                    on_wait(tag);
                    let _ = stdin.write_all(b"go\n");
                    let _ = stdin.flush();
                }
                None => lines.push(
                    serde_json::from_str(&line).unwrap_or_else(|_| Value::String(line.clone())),
                ),
            },
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                break;
            }
        }
    }
    let status = super::wait_timeout(&mut child, Duration::from_secs(20));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stderr = err_thread.join().unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the editor script failed ({status:?}); lines: {lines:#?}\nstderr:\n{stderr}"
    );
    Played { lines, stderr }
}
