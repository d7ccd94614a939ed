//! ACP `terminal/*` (protocol v1), served when `[agents.<a>] terminal =
//! true` (docs/agents.md): the terminals one turn holds, their commands and
//! their captured output.
//!
//! - `terminal/create` runs `command` with `args` (an argv: no shell unless
//!   the agent names one) in its own process group, stdin closed, stdout and
//!   stderr into one pipe, in `cwd` (default: the session's working
//!   directory; else an absolute directory under it, opened beneath it by
//!   the kernel with [`super::fs::confined_dir`], the child changing into
//!   that opened directory), its environment the
//!   minimal base, the agent's configured `env`, then the request's `env`
//!   ([`crate::agent::process::tool_command`]: never the daemon's);
//! - the output is kept up to `outputByteLimit` bytes (default and cap
//!   [`MAX_OUTPUT_BYTES`]), dropped from its beginning at a UTF-8 character
//!   boundary, as the protocol says;
//! - `terminal/output`, `terminal/wait_for_exit` (our cancel kills the
//!   command and answers; the turn's deadline ends the wait), `terminal/kill`
//!   (the group; the output stays), `terminal/release` (kills, forgets);
//! - at most [`MAX_TERMINALS`] held at once; every terminal still held when
//!   the turn ends is killed and released ([`Terminals::close_all`]), and a
//!   dropped turn kills them too (each [`GroupGuard`]).
//!
//! On Windows the "process group" is the command's Job Object (killed whole;
//! there are no signals, so a killed command reports exit code 1 and a null
//! `signal`), and no shell is implied there either (`cmd.exe /C` when the
//! agent names it).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the requests, the terminals a turn holds |
//! | `output.rs` | the bounded output buffer and the reader filling it |
//! | `exit.rs` | `TerminalExitStatus` per platform |
//! | `tests.rs` | the terminals run for real (sh on Unix, cmd.exe on Windows) |

use std::collections::HashMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::process::Child;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::fs::{self, FsError};
use crate::agent::process::{spawn, tool_command, GroupGuard};
use crate::config::{is_env_name, is_env_value};
use exit::exit_status;
use output::{capture, Output};

mod exit;
mod output;

/// The most output kept per terminal, and the default (1 MiB).
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// The most terminals a turn holds at once.
pub const MAX_TERMINALS: usize = 16;
/// How long, after the command exited, the rest of its output may take to
/// arrive (a background child holding the pipe open is not waited for).
const DRAIN_WAIT: Duration = Duration::from_secs(1);

const INVALID_PARAMS: i64 = -32602;
const INTERNAL: i64 = -32603;

/// One terminal: its command and output.
struct Terminal {
    child: Child,
    guard: GroupGuard,
    status: Option<ExitStatus>,
    output: Arc<Mutex<Output>>,
    reader: JoinHandle<()>,
    drained: bool,
}

impl Terminal {
    /// Notes the exit if it happened, then lets the reader catch up.
    async fn settle(&mut self) {
        if self.status.is_none() {
            if let Ok(Some(st)) = self.child.try_wait() {
                self.status = Some(st);
            }
        }
        if self.status.is_some() && !self.drained {
            let _ = tokio::time::timeout(DRAIN_WAIT, &mut self.reader).await;
            self.drained = true;
        }
    }

    /// `SIGKILL` to the group, the leader reaped.
    async fn kill(&mut self) {
        self.guard.kill_group();
        if self.status.is_none() {
            let _ = self.child.start_kill();
            if let Ok(st) = self.child.wait().await {
                self.status = Some(st);
            }
        }
        self.settle().await;
    }

    fn output(&self) -> Value {
        let out = self.output.lock().map_or_else(
            |_| json!({"output": "", "truncated": false}),
            |o| json!({"output": String::from_utf8_lossy(o.kept()), "truncated": o.truncated}),
        );
        match self.status {
            Some(st) => {
                let mut out = out;
                out["exitStatus"] = exit_status(st);
                out
            }
            None => out,
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The terminals of one turn.
#[derive(Default)]
pub struct Terminals {
    held: HashMap<String, Terminal>,
    created: u64,
}

/// What a `terminal/*` request of the agent may wait on.
pub struct Turn<'a> {
    /// The session's working directory.
    pub cwd: &'a Path,
    /// The agent's configured `env` (its terminals get it too).
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub cancel: &'a CancellationToken,
    pub deadline: Instant,
}

impl Terminals {
    /// Serves one `terminal/*` request; `Ok` is the result object.
    pub async fn serve(
        &mut self,
        method: &str,
        params: &Value,
        turn: Turn<'_>,
    ) -> Result<Value, FsError> {
        if method == "terminal/create" {
            return self.create(params, &turn);
        }
        let id = params
            .get("terminalId")
            .and_then(Value::as_str)
            .ok_or((INVALID_PARAMS, "missing \"terminalId\"".to_owned()))?;
        let Some(term) = self.held.get_mut(id) else {
            return Err((INVALID_PARAMS, format!("unknown terminal {id:?}")));
        };
        match method {
            "terminal/output" => {
                term.settle().await;
                Ok(term.output())
            }
            "terminal/wait_for_exit" => wait(term, turn).await,
            "terminal/kill" => {
                term.kill().await;
                Ok(json!({}))
            }
            "terminal/release" => {
                if let Some(mut term) = self.held.remove(id) {
                    term.kill().await;
                    term.guard.disarm();
                }
                Ok(json!({}))
            }
            other => Err((-32601, format!("{other} is not served by this client"))),
        }
    }

    /// Kills and forgets every terminal still held (the turn's end).
    pub async fn close_all(&mut self) {
        for (_, mut term) in self.held.drain() {
            term.kill().await;
            term.guard.disarm();
        }
    }

    fn create(&mut self, params: &Value, turn: &Turn<'_>) -> Result<Value, FsError> {
        let cwd = turn.cwd;
        if self.held.len() >= MAX_TERMINALS {
            let why = format!(
                "at most {MAX_TERMINALS} terminals are held at once in a turn; release one first"
            );
            return Err((INVALID_PARAMS, why));
        }
        let bad = |why: &str| Err((INVALID_PARAMS, why.to_owned()));
        let Some(program) = params.get("command").and_then(Value::as_str) else {
            return bad("missing \"command\"");
        };
        if program.is_empty() {
            return bad("\"command\" is empty");
        }
        let args: Vec<String> = match params.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => match items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect()
            {
                Some(args) => args,
                None => return bad("\"args\" must be an array of strings"),
            },
            Some(_) => return bad("\"args\" must be an array of strings"),
        };
        let env = env_of(params)?;
        // Held open until the spawn: the child changes into the directory
        // the kernel resolved beneath the working directory.
        let opened = match params.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => Some(fs::confined_dir(cwd, Path::new(d))?),
            Some(_) => return bad("\"cwd\" must be a string"),
        };
        let dir = opened.as_ref().map_or_else(|| cwd.to_owned(), |d| d.path());
        let limit = match params.get("outputByteLimit") {
            None | Some(Value::Null) => MAX_OUTPUT_BYTES,
            Some(v) => match v.as_u64() {
                Some(n) => usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(MAX_OUTPUT_BYTES),
                None => return bad("\"outputByteLimit\" must be a non-negative integer"),
            },
        };
        let internal = |e: std::io::Error| (INTERNAL, format!("cannot run {program:?}: {e}"));
        let (pipe, child) = {
            let (reader, writer) = std::io::pipe().map_err(internal)?;
            let mut command = tool_command(program, &args, &dir, turn.env);
            command
                .envs(env)
                .stdout(Stdio::from(writer.try_clone().map_err(internal)?))
                .stderr(Stdio::from(writer));
            // The command (and with it our copies of the write end) is
            // dropped here, so the reader sees EOF once the group is done.
            (reader, spawn(&mut command).map_err(internal)?)
        };
        let guard = GroupGuard::of(&child);
        let output = Arc::new(Mutex::new(Output::keeping(limit)));
        let reader = tokio::spawn(capture(pipe, Arc::clone(&output)));
        self.created += 1;
        let id = format!("term-{}", self.created);
        let term = Terminal {
            child,
            guard,
            status: None,
            output,
            reader,
            drained: false,
        };
        self.held.insert(id.clone(), term);
        Ok(json!({"terminalId": id}))
    }
}

/// `terminal/wait_for_exit`: the exit, unless our cancel comes first (the
/// command is then killed and its status answered) or the deadline passes.
async fn wait(term: &mut Terminal, turn: Turn<'_>) -> Result<Value, FsError> {
    if term.status.is_none() {
        let exited = tokio::select! {
            biased;
            () = turn.cancel.cancelled() => None,
            () = tokio::time::sleep_until(turn.deadline.into()) => {
                return Err((INTERNAL, "the turn's deadline passed while waiting".to_owned()));
            }
            st = term.child.wait() => Some(st),
        };
        match exited {
            Some(Ok(st)) => term.status = Some(st),
            Some(Err(_)) => {}
            None => term.kill().await,
        }
    }
    term.settle().await;
    match term.status {
        Some(st) => Ok(exit_status(st)),
        None => Err((INTERNAL, "the command's exit status is unknown".to_owned())),
    }
}

/// The request's `env` (`[{name, value}]`).
fn env_of(params: &Value) -> Result<Vec<(String, String)>, FsError> {
    let bad = || {
        (
            INVALID_PARAMS,
            "\"env\" must be an array of {name, value} strings".to_owned(),
        )
    };
    match params.get("env") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                let name = v.get("name").and_then(Value::as_str).ok_or_else(bad)?;
                let value = v.get("value").and_then(Value::as_str).ok_or_else(bad)?;
                if !is_env_name(name) || !is_env_value(value) {
                    return Err((
                        INVALID_PARAMS,
                        format!("invalid environment variable {name:?}"),
                    ));
                }
                Ok((name.to_owned(), value.to_owned()))
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests;
