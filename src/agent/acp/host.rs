//! One ACP agent process and our connection to it: spawn, the reader,
//! writer and stderr tasks, requests with deadlines, and how its end is
//! described.
//!
//! Backpressure: the reader ([`super::reader`]) hands each message to a
//! channel of [`INBOUND_CAPACITY`] and awaits room, so when the turn (and
//! behind it the client) does not keep up, the reader stops reading and the
//! agent blocks on its stdout pipe. The writer's channel is bounded too: an agent that
//! stops reading its stdin makes our sends wait, never buffer without bound,
//! and every send has a deadline.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::incoming::{FromAgent, WireError};
use super::reader;
use super::wire::{self, ReadFault};
use crate::agent::child_env::EnvBase;
use crate::agent::process::{agent_command, spawn, GroupGuard, Tail};

/// Messages read ahead of the turn, at most.
pub const INBOUND_CAPACITY: usize = 64;
/// Lines queued for the agent's stdin, at most.
const OUTBOUND_CAPACITY: usize = 64;
/// The longest stderr line logged (the rest is cut).
const STDERR_LOG_LINE: usize = 2048;
/// Stderr bytes logged per process; past it one `acp_agent_stderr_capped` line.
const STDERR_LOG_BUDGET: usize = 1024 * 1024;
/// How long an agent whose stdout closed may take to exit before we stop it,
/// and how long, once it exited, what it wrote may take to arrive (the
/// rest of its process group is killed at its exit, so the pipes close at
/// once unless a descendant escaped the group; the reaper kills those).
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// What starts an agent process.
#[derive(Debug, Clone)]
pub struct Spawn<'a> {
    pub alias: &'a str,
    pub session_id: &'a str,
    pub argv: &'a [String],
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub cwd: &'a std::path::Path,
    /// `terminal/*` advertised at `initialize` (a change restarts the agent).
    pub terminal: bool,
}

impl Spawn<'_> {
    /// What tells two spawns apart.
    pub fn fingerprint(&self) -> String {
        let (argv, env, cwd) = (self.argv, self.env, self.cwd.display());
        let terminal = if self.terminal { "|terminal" } else { "" };
        format!("{argv:?}|{env:?}|{cwd}{terminal}")
    }
}

/// Why a call did not get its answer: the agent answered with a JSON-RPC
/// error (`Rpc`; the connection is fine), or the connection is unusable
/// (`Lost`: exit, garbage, a stalled pipe, timeout).
pub type CallError = crate::call_error::CallError<WireError>;

impl CallError {
    pub fn describe(&self, method: &str) -> String {
        match self {
            Self::Rpc(e) => format!(
                "the ACP agent answered {method} with error {}: {}",
                e.code, e.message
            ),
            Self::Lost(why) => why.clone(),
        }
    }
}

/// A running agent and our end of its pipes.
pub struct Host {
    child: Child,
    guard: GroupGuard,
    out: mpsc::Sender<String>,
    inbound: mpsc::Receiver<Result<FromAgent, ReadFault>>,
    /// A fault met by [`Host::ready`], for the next [`Host::recv`].
    fault: Option<ReadFault>,
    tasks: Vec<JoinHandle<()>>,
    /// The stderr reader, awaited (bounded) once the agent exits, so the
    /// exit message names its last line.
    stderr_task: Option<JoinHandle<()>>,
    stderr: Arc<Mutex<Tail>>,
    next_id: i64,
    /// Set once the connection is unusable.
    broken: Option<String>,
    /// When the process was seen to exit: what it wrote is read until
    /// then + [`EXIT_WAIT`], whoever holds its stdout.
    exited_at: Option<tokio::time::Instant>,
    /// The agent offers `session/load`.
    pub load_session: bool,
    /// The ACP session holding our session's context, once opened.
    pub agent_session: Option<String>,
    /// How long spawn + `initialize` took.
    pub start_time: Duration,
    /// The agent's process id (logs, tests).
    pub pid: Option<u32>,
    /// The argv, env and working directory it was started with: a turn
    /// whose config differs starts a new process.
    pub spawned_with: String,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("pid", &self.pid)
            .field("agent_session", &self.agent_session)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for t in self.tasks.iter().chain(&self.stderr_task) {
            t.abort();
        }
        // `guard` kills the process group; `kill_on_drop` the leader.
    }
}

impl Host {
    /// Starts the agent (not yet initialized).
    pub fn spawn(spec: &Spawn<'_>) -> Result<Host, String> {
        let Some((program, args)) = spec.argv.split_first() else {
            return Err("agent command is empty".to_owned());
        };
        let vars = [
            ("ZEROCLAW_SESSION_ID", spec.session_id),
            ("ZEROCLAW_AGENT_ALIAS", spec.alias),
        ];
        let env = (EnvBase::Minimal, spec.env);
        let mut command = agent_command((program, args), spec.cwd, env, &vars);
        let mut child = spawn(&mut command)
            .map_err(|e| format!("failed to start ACP agent `{program}`: {e}"))?;
        let pid = child.id();
        let guard = GroupGuard::of(&child);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the ACP agent's pipes are missing".to_owned());
        };
        let (out, out_rx) = mpsc::channel(OUTBOUND_CAPACITY);
        let (in_tx, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let tail = Arc::new(Mutex::new(Tail::default()));
        let alias = spec.alias.to_owned();
        let tasks = vec![
            tokio::spawn(write_stdin(stdin, out_rx)),
            tokio::spawn(reader::read_stdout(stdout, in_tx, alias.clone())),
        ];
        let stderr_task = Some(tokio::spawn(read_stderr(stderr, tail.clone(), alias)));
        Ok(Host {
            child,
            guard,
            out,
            inbound,
            fault: None,
            tasks,
            stderr_task,
            stderr: tail,
            next_id: 0,
            broken: None,
            exited_at: None,
            load_session: false,
            agent_session: None,
            start_time: Duration::ZERO,
            pid,
            spawned_with: spec.fingerprint(),
        })
    }

    /// The process is running and the connection sound.
    pub fn is_usable(&mut self) -> bool {
        self.broken.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    /// Marks the connection unusable (the host is then dropped, which stops
    /// the process).
    pub fn mark_broken(&mut self, why: &str) {
        self.broken.get_or_insert_with(|| why.to_owned());
    }

    /// Queues `line` for the agent's stdin, waiting until `deadline` for room.
    pub async fn send(&mut self, line: String, deadline: Instant) -> Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let sent = tokio::time::timeout_at(deadline.into(), self.out.send(line)).await;
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.fail("the ACP agent's stdin is closed")),
            Err(_) => Err(self.fail("the ACP agent stopped reading its stdin")),
        }
    }

    /// Queues `line` only if there is room now (`session/cancel`: never
    /// waits on an agent that does not read).
    pub fn try_send(&mut self, line: String) -> bool {
        self.broken.is_none() && self.out.try_send(line).is_ok()
    }

    /// Sends a request; returns its id.
    pub async fn start_request(
        &mut self,
        method: &str,
        params: &Value,
        deadline: Instant,
    ) -> Result<i64, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(wire::request(id, method, params), deadline)
            .await?;
        Ok(id)
    }

    /// The next message, or why there is none (the connection is then broken).
    pub async fn recv(&mut self) -> Result<FromAgent, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        if let Some(fault) = self.fault.take() {
            return Err(self.end_of(fault).await);
        }
        let next = loop {
            // The agent's exit is noticed by waiting on it, not only by the
            // end of its stdout: a descendant may keep that open for ever.
            let drained = async {
                match self.exited_at {
                    Some(at) => tokio::time::sleep_until(at + EXIT_WAIT).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                m = self.inbound.recv() => break m,
                _ = self.child.wait(), if self.exited_at.is_none() => {
                    self.exited_at = Some(tokio::time::Instant::now());
                    // Nothing of its group has a use without it.
                    self.guard.kill_group();
                }
                () = drained => break None,
            }
        };
        match next {
            Some(Ok(m)) => Ok(m),
            Some(Err(fault)) => Err(self.end_of(fault).await),
            None => Err(self.end_of(ReadFault::Eof).await),
        }
    }

    /// The next message if the reader already has it, without waiting (a
    /// fault is kept for the next [`Host::recv`]).
    pub fn ready(&mut self) -> Option<FromAgent> {
        if self.broken.is_some() || self.fault.is_some() {
            return None;
        }
        match self.inbound.try_recv() {
            Ok(Ok(m)) => Some(m),
            Ok(Err(fault)) => {
                self.fault = Some(fault);
                None
            }
            Err(_) => None,
        }
    }

    /// A request answered before `deadline`. Meanwhile notifications are
    /// dropped (a `session/load` replay: already in our transcript) and the
    /// agent's requests are refused.
    pub async fn call(
        &mut self,
        method: &str,
        params: &Value,
        deadline: Instant,
    ) -> Result<Value, CallError> {
        let id = self
            .start_request(method, params, deadline)
            .await
            .map_err(CallError::Lost)?;
        loop {
            let next = tokio::time::timeout_at(deadline.into(), self.recv()).await;
            let message = match next {
                Err(_) => {
                    let why = format!("the ACP agent did not answer {method} in time");
                    return Err(CallError::Lost(self.fail(&why)));
                }
                Ok(Err(why)) => return Err(CallError::Lost(why)),
                Ok(Ok(m)) => m,
            };
            match message {
                FromAgent::Response { id: got, result } if got == id => {
                    return result.map_err(CallError::Rpc);
                }
                FromAgent::Response { .. }
                | FromAgent::Notification { .. }
                | FromAgent::Chunk(_) => {}
                FromAgent::Request { id, method, .. } => {
                    let text = format!("{method} is not served while the session is opening");
                    let line = wire::error_response(&id, -32601, &text);
                    self.send(line, deadline).await.map_err(CallError::Lost)?;
                }
            }
        }
    }

    /// Marks the connection broken with `why` and returns it.
    fn fail(&mut self, why: &str) -> String {
        self.mark_broken(why);
        why.to_owned()
    }

    /// Describes the end of the agent's stdout: for an exit, its status and
    /// the last line of its stderr.
    async fn end_of(&mut self, fault: ReadFault) -> String {
        let why = match fault {
            ReadFault::Eof => {
                let status = match tokio::time::timeout(EXIT_WAIT, self.child.wait()).await {
                    Ok(Ok(status)) => Some(status),
                    _ => None,
                };
                let mut why = match status {
                    Some(s) => exit_description(s),
                    None => ReadFault::Eof.describe(),
                };
                // Its last stderr lines may still be in the pipe: read to EOF
                // (bounded: a grandchild may hold the pipe open; no longer
                // than [`EXIT_WAIT`] after the exit, give or take 100 ms).
                let now = tokio::time::Instant::now();
                let until = self.exited_at.map_or(now + EXIT_WAIT, |at| {
                    (at + EXIT_WAIT).max(now + Duration::from_millis(100))
                });
                if let Some(mut task) = self.stderr_task.take() {
                    if tokio::time::timeout_at(until, &mut task).await.is_err() {
                        task.abort();
                    }
                }
                let last = self.stderr_last_line();
                if !last.is_empty() {
                    why.push_str(": ");
                    why.push_str(&last);
                }
                why
            }
            other => {
                let why = other.describe();
                tracing::warn!(event = "acp_agent_protocol_fault", pid = ?self.pid, reason = %why);
                why
            }
        };
        self.fail(&why)
    }

    /// The last non-blank line the agent wrote on stderr so far.
    pub(super) fn stderr_last_line(&self) -> String {
        self.stderr
            .lock()
            .map(|t| t.last_line())
            .unwrap_or_default()
    }

    /// Stops the process now (`SIGKILL` to its group) and reaps it.
    pub async fn kill(mut self) {
        self.guard.kill_now(&mut self.child).await;
    }
}

/// "the ACP agent exited with status 3" / "… was killed by signal 9".
pub fn exit_description(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("the ACP agent was killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("the ACP agent exited with status {code}"),
        None => format!("the ACP agent ended abnormally ({status})"),
    }
}

async fn write_stdin(mut stdin: tokio::process::ChildStdin, mut rx: mpsc::Receiver<String>) {
    while let Some(line) = rx.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return; // the agent closed its stdin; sends now fail
        }
    }
}

async fn read_stderr(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Tail>>, alias: String) {
    let mut lines = BufReader::new(stderr);
    let mut logged = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A bounded read per line: `read_until` into a buffer we cap.
        match read_line_capped(&mut lines, &mut buf, STDERR_LOG_LINE).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Ok(mut t) = tail.lock() {
            t.push(&buf);
        }
        if logged < STDERR_LOG_BUDGET {
            logged += buf.len();
            let text = String::from_utf8_lossy(&buf);
            tracing::info!(event = "acp_agent_stderr", agent = %alias, line = %text.trim_end());
            if logged >= STDERR_LOG_BUDGET {
                tracing::warn!(event = "acp_agent_stderr_capped", agent = %alias, bytes = logged);
            }
        }
    }
}

/// Reads one line into `buf`, keeping at most `cap` bytes of it (the rest
/// of a longer line is read and dropped). Returns the bytes consumed.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(pos) => (pos + 1, true),
            None => (available.len(), false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&available[..take.min(room)]);
        r.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// Our `initialize` params (protocol version 1).
pub fn initialize_params(fs: bool, terminal: bool) -> Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": fs, "writeTextFile": fs},
            "terminal": terminal
        },
        "clientInfo": {"name": "zeroclaw", "version": env!("CARGO_PKG_VERSION")}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_params_are_the_protocols_v1_shape() {
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            initialize_params(true, false).to_string(),
            format!(
                r#"{{"clientCapabilities":{{"fs":{{"readTextFile":true,"writeTextFile":true}},"terminal":false}},"clientInfo":{{"name":"zeroclaw","version":"{version}"}},"protocolVersion":1}}"#
            )
        );
        assert_eq!(
            initialize_params(false, false)["clientCapabilities"]["fs"]["readTextFile"],
            false
        );
        assert_eq!(
            initialize_params(true, true)["clientCapabilities"]["terminal"],
            true
        );
    }

    #[tokio::test]
    async fn stderr_lines_are_capped() {
        let data = format!("{}\nshort\n", "x".repeat(5000));
        let mut r = BufReader::new(data.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 100).await.unwrap(), 5001);
        assert_eq!(buf.len(), 100);
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 100).await.unwrap(), 6);
        assert_eq!(buf, b"short\n");
    }
}
