//! Whether an ACP agent can open a session: started with its `env`, it must
//! answer `initialize` (protocol 1) and then `session/new` (authenticating
//! once with its first method when it answers `auth_required`), as the
//! daemon does before a turn. No prompt is sent, so the check costs no
//! model call. A refusal names the agent's own reason: its answer's message
//! and the last line it wrote on stderr (docs/operations.md, "doctor").

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::codec::FramedRead;

use super::Check;
use crate::codec::{Frame, FrameCodec};
use crate::config::AgentConfig;

/// How long the agent gets for each answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// How long its last stderr lines get to arrive once it answered an error or ended.
const STDERR_WAIT: Duration = Duration::from_millis(300);
/// The most of its stderr kept.
const STDERR_KEEP: usize = 16 * 1024;
/// ACP's `auth_required`.
const AUTH_REQUIRED: i64 = -32000;

/// The handshake's end.
enum Outcome {
    /// `session/new` answered with a session id; the protocol version.
    Opened(u64),
    /// What went wrong, in words.
    Failed(String),
    /// It speaks ACP but refused the session: what it said.
    Refused(String),
}

pub async fn session_opens(
    name: String,
    alias: &str,
    agent: &AgentConfig,
    program: (&str, &Path),
) -> Check {
    let args = agent
        .command
        .as_deref()
        .unwrap_or_default()
        .get(1..)
        .unwrap_or_default();
    let fix = format!(
        "run agents.{alias}.command by hand: it must speak ACP on stdin/stdout (its ACP mode flag?)"
    );
    let cwd = match private_temp_dir() {
        Ok(d) => d,
        Err(e) => {
            let detail = format!("cannot make a directory for it in the temporary directory: {e}");
            return Check::fail(name, detail, "check TMPDIR");
        }
    };
    let mut child = match tokio::process::Command::new(program.1)
        .args(args)
        .envs(&agent.env)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_dir(&cwd);
            let fix = format!("check that agents.{alias}.command runs by hand");
            return Check::fail(
                name,
                format!("ACP agent {} did not start: {e}", program.0),
                fix,
            );
        }
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let reader = child.stderr.take().map(|e| {
        let keep = stderr.clone();
        tokio::spawn(async move { keep_tail(e, &keep).await })
    });
    let outcome = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => {
            let mut io = Io {
                stdin,
                lines: FramedRead::new(stdout, FrameCodec::default()),
            };
            handshake(&mut io, &cwd).await
        }
        _ => Outcome::Failed("its pipes are missing".into()),
    };
    if !matches!(outcome, Outcome::Opened(_)) {
        // Its reason may still be on the way: stderr is read apart.
        if let Some(task) = reader {
            let _ = tokio::time::timeout(STDERR_WAIT, task).await;
        }
    }
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&cwd);
    match outcome {
        Outcome::Opened(version) => Check::pass(
            name,
            format!(
                "ACP agent {} answers initialize (protocol {version}) and opens a session",
                program.0
            ),
        ),
        Outcome::Failed(why) => Check::fail(
            name,
            format!("ACP agent {} {}", program.0, with_stderr(why, &stderr)),
            fix,
        ),
        Outcome::Refused(why) => Check::fail(
            name,
            format!("ACP agent {} {}", program.0, with_stderr(why, &stderr)),
            format!(
                "do what the agent says (run agents.{alias}.command by hand to see all it writes)"
            ),
        ),
    }
}

/// A new, empty directory of ours in the temporary directory: an
/// unpredictable name, created (never reused) with mode `0700`, so nothing
/// another user placed in `/tmp` becomes the agent's working directory.
fn private_temp_dir() -> std::io::Result<std::path::PathBuf> {
    #[cfg(unix)]
    let builder = {
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b
    };
    // On Windows a new directory in the user's temp dir inherits its
    // owner-only ACL.
    #[cfg(not(unix))]
    let builder = std::fs::DirBuilder::new();
    let mut last = None;
    for _ in 0..8 {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let dir =
            std::env::temp_dir().join(format!("zeroclaw-doctor-{}", crate::hex::lower(&bytes)));
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

struct Io {
    stdin: ChildStdin,
    /// Bounded lines (8 MiB): an agent writing without end costs no more.
    lines: FramedRead<ChildStdout, FrameCodec>,
}

impl Io {
    /// Sends request `id` and waits (bounded) for its answer, skipping
    /// notifications and the agent's own requests.
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Result<Value, String> {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = async {
            let line = format!("{frame}\n");
            if self.stdin.write_all(line.as_bytes()).await.is_err() {
                return Err(format!("closed its stdin before {method}"));
            }
            loop {
                match self.lines.next().await {
                    Some(Ok(Frame::Line(line))) => {
                        let Ok(v) = serde_json::from_str::<Value>(&line) else {
                            continue;
                        };
                        if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                            return Ok(v);
                        }
                    }
                    Some(Ok(Frame::Rejected(_))) => {}
                    None | Some(Err(_)) => {
                        return Err(format!("ended its output without answering {method}"))
                    }
                }
            }
        };
        match tokio::time::timeout(ANSWER_WAIT, answer).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "did not answer {method} within {} s",
                ANSWER_WAIT.as_secs()
            )),
        }
    }
}

async fn handshake(io: &mut Io, cwd: &Path) -> Outcome {
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});
    let answer = match io.call(1, "initialize", init).await {
        Ok(v) => v,
        Err(why) => return Outcome::Failed(why),
    };
    if let Some(why) = refused(&answer, "initialize") {
        return Outcome::Failed(why);
    }
    let Some(version) = answer["result"]["protocolVersion"].as_u64() else {
        return Outcome::Failed("answered initialize without a protocol version".into());
    };
    if version != 1 {
        return Outcome::Failed(format!(
            "speaks protocol version {version} (the daemon speaks 1)"
        ));
    }
    let first_auth = answer["result"]["authMethods"][0]["id"]
        .as_str()
        .map(str::to_owned);
    let params = json!({"cwd": cwd.to_string_lossy(), "mcpServers": []});
    let mut answer = match io.call(2, "session/new", params.clone()).await {
        Ok(v) => v,
        Err(why) => return Outcome::Failed(why),
    };
    if answer["error"]["code"].as_i64() == Some(AUTH_REQUIRED) {
        if let Some(method) = first_auth {
            let auth = io
                .call(3, "authenticate", json!({"methodId": method}))
                .await;
            match auth {
                Ok(a) => {
                    if let Some(why) = refused(&a, "authenticate") {
                        return Outcome::Refused(why);
                    }
                }
                Err(why) => return Outcome::Failed(why),
            }
            answer = match io.call(4, "session/new", params).await {
                Ok(v) => v,
                Err(why) => return Outcome::Failed(why),
            };
        }
    }
    if let Some(why) = refused(&answer, "session/new") {
        return Outcome::Refused(why);
    }
    if answer["result"]["sessionId"].as_str().is_none() {
        return Outcome::Failed("answered session/new without a session id".into());
    }
    Outcome::Opened(version)
}

/// `answered METHOD with error CODE: MESSAGE` for an error answer.
fn refused(answer: &Value, method: &str) -> Option<String> {
    let e = answer.get("error")?;
    let code = e.get("code").and_then(Value::as_i64).unwrap_or_default();
    let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
    Some(format!("answered {method} with error {code}: {message}"))
}

/// Appends the last non-blank line of the agent's stderr, when it wrote one.
fn with_stderr(why: String, stderr: &Mutex<Vec<u8>>) -> String {
    let text = stderr
        .lock()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    match text.trim_end().rsplit('\n').next().map(str::trim) {
        Some(last) if !last.is_empty() => format!("{why}; its stderr: {last}"),
        _ => why,
    }
}

/// Reads stderr to its end, keeping the last [`STDERR_KEEP`] bytes.
async fn keep_tail(mut from: tokio::process::ChildStderr, keep: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            return;
        }
        let Ok(mut kept) = keep.lock() else { return };
        kept.extend_from_slice(&buf[..n]);
        let excess = kept.len().saturating_sub(STDERR_KEEP);
        kept.drain(..excess);
    }
}
