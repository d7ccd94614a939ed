//! The `command` agent (§10.4): runs the configured program once per
//! turn, directly (no shell), and streams its stdout as message chunks.
//!
//! One task drives everything in a single `select!` loop: writing stdin
//! (concurrently with reading, so a program that writes before it reads
//! cannot deadlock us), reading stdout line by line, keeping the stderr tail,
//! reaping the exit status, the wall-clock deadline and cancellation. Every
//! way out reaps the child; cancellation and timeouts stop its whole process
//! group (`SIGTERM`, then `SIGKILL` after 5 s).

use std::borrow::Cow;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::child_env::EnvBase;
use super::process::{agent_command, spawn, utf8_cut, GroupGuard, Tail};
use super::sink::{EventSink, SinkClosed};
use super::{context_json_input, InputMode, TurnInput, TurnOutcome, SINK_CLOSED_MESSAGE};

/// Bytes of one stdout line beyond which it is emitted in pieces (§3.1).
pub const MAX_LINE_CHUNK: usize = 64 * 1024;
/// Time between `SIGTERM` and `SIGKILL` on cancellation or timeout.
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// What a command turn produced besides its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// How the turn ended.
    pub outcome: TurnOutcome,
    /// The last 64 KiB of the program's stderr, for the runtime's log.
    pub stderr_tail: String,
}

/// Runs one command turn.
pub async fn run_command<S: EventSink>(
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
) -> CommandRun {
    run_with_grace(input, sink, cancel, KILL_GRACE).await
}

enum ChildEnd {
    Exited(std::io::Result<ExitStatus>),
    Cancelled,
    TimedOut,
    SinkClosed,
}

fn failed(message: String) -> CommandRun {
    CommandRun {
        outcome: TurnOutcome::Failed(message),
        stderr_tail: String::new(),
    }
}

async fn run_with_grace<S: EventSink>(
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
    grace: Duration,
) -> CommandRun {
    let settings = input.settings;
    let Some((program, args)) = settings.command.split_first() else {
        return failed("agent command is empty".to_owned());
    };
    let stdin_data: Cow<'_, [u8]> = match settings.input {
        InputMode::Prompt => Cow::Borrowed(input.prompt.as_bytes()),
        InputMode::ContextJson => {
            match context_json_input(input.system_prompt, input.context, input.prompt) {
                Ok(bytes) => Cow::Owned(bytes),
                Err(e) => return failed(format!("cannot write the agent command's input: {e}")),
            }
        }
    };

    let vars = [
        ("ZEROCLAW_SESSION_ID", input.session_id),
        ("ZEROCLAW_TURN_ID", input.turn_id),
        ("ZEROCLAW_AGENT_ALIAS", input.agent_alias),
    ];
    // §10.4: the daemon's environment (without any credential) plus `env`.
    let base = EnvBase::DaemonWithout(&settings.withheld);
    let mut command = agent_command((program, args), input.cwd, (base, &settings.env), &vars);
    let mut child = match spawn(&mut command) {
        Ok(child) => child,
        Err(e) => return failed(format!("failed to start agent command `{program}`: {e}")),
    };
    let mut guard = GroupGuard::of(&child);

    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let write_stdin = async move {
        if let Some(mut stdin) = stdin {
            // A program may exit without reading its input (EPIPE): not an error.
            let _ = stdin.write_all(&stdin_data).await;
            let _ = stdin.shutdown().await;
        } // dropped here: the pipe is closed
    };
    tokio::pin!(write_stdin);
    let deadline = tokio::time::sleep_until(input.deadline.into());
    tokio::pin!(deadline);

    let mut stdin_done = false;
    let mut pending = Vec::new();
    let mut tail = Tail::default();
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 8 * 1024];
    let mut status = None;

    let end = loop {
        if stdout.is_none() && stderr.is_none() {
            if let Some(status) = status.take() {
                break ChildEnd::Exited(status);
            }
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => break ChildEnd::Cancelled,
            () = &mut deadline => break ChildEnd::TimedOut,
            () = &mut write_stdin, if !stdin_done => stdin_done = true,
            read = read_some(&mut stdout, &mut out_buf) => {
                let at_end = !matches!(read, Ok(n) if n > 0);
                if let Ok(n) = read {
                    pending.extend_from_slice(&out_buf[..n]);
                }
                if at_end {
                    stdout = None;
                }
                if emit_lines(&mut pending, sink, at_end).await.is_err() {
                    break ChildEnd::SinkClosed;
                }
            }
            read = read_some(&mut stderr, &mut err_buf) => match read {
                Ok(n) if n > 0 => tail.push(&err_buf[..n]),
                _ => stderr = None,
            },
            exit = child.wait(), if status.is_none() => status = Some(exit),
        }
    };

    let outcome = match end {
        ChildEnd::Exited(Ok(status)) => {
            guard.disarm();
            exit_outcome(status, &tail)
        }
        ChildEnd::Exited(Err(e)) => {
            guard.kill_now(&mut child).await;
            TurnOutcome::Failed(format!("cannot wait for agent command `{program}`: {e}"))
        }
        ChildEnd::Cancelled => {
            // The output received so far, an unterminated line included.
            let _ = emit_lines(&mut pending, sink, true).await;
            guard.terminate(&mut child, grace).await;
            TurnOutcome::Cancelled
        }
        ChildEnd::TimedOut => {
            let _ = emit_lines(&mut pending, sink, true).await;
            guard.terminate(&mut child, grace).await;
            TurnOutcome::Failed(format!(
                "agent command timed out after {} s",
                settings.timeout_secs
            ))
        }
        ChildEnd::SinkClosed => {
            guard.kill_now(&mut child).await;
            TurnOutcome::Failed(SINK_CLOSED_MESSAGE.to_owned())
        }
    };
    CommandRun {
        outcome,
        stderr_tail: tail.text(),
    }
}

/// Reads from a pipe that may already be closed (then never resolves).
async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Emits every complete line of `pending` (with its `\n`), cutting lines
/// longer than [`MAX_LINE_CHUNK`] on UTF-8 boundaries; with `at_end`, the
/// unterminated rest too. Emitted bytes are removed from `pending`.
async fn emit_lines<S: EventSink>(
    pending: &mut Vec<u8>,
    sink: &mut S,
    at_end: bool,
) -> Result<(), SinkClosed> {
    let mut start = 0;
    let result = loop {
        let rest = &pending[start..];
        let newline = rest.iter().position(|&b| b == b'\n');
        let piece = match newline {
            Some(pos) if pos < MAX_LINE_CHUNK => pos + 1,
            _ if rest.len() >= MAX_LINE_CHUNK => utf8_cut(rest, MAX_LINE_CHUNK),
            _ if at_end && !rest.is_empty() => rest.len(),
            _ => break Ok(()),
        };
        if let Err(closed) = sink
            .message_chunk(&String::from_utf8_lossy(&rest[..piece]))
            .await
        {
            break Err(closed);
        }
        start += piece;
    };
    pending.drain(..start);
    result
}

fn exit_outcome(status: ExitStatus, stderr: &Tail) -> TurnOutcome {
    if status.success() {
        return TurnOutcome::Completed;
    }
    let mut message = match status.code() {
        Some(code) => format!("agent command exited with status {code}"),
        None => signal_description(status),
    };
    let line = stderr.last_line();
    if !line.is_empty() {
        message.push_str(": ");
        message.push_str(&line);
    }
    TurnOutcome::Failed(message)
}

#[cfg(unix)]
fn signal_description(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("agent command was killed by signal {signal}"),
        None => format!("agent command ended abnormally ({status})"),
    }
}

#[cfg(not(unix))]
fn signal_description(status: ExitStatus) -> String {
    format!("agent command ended abnormally ({status})")
}

#[cfg(all(test, unix))]
#[path = "command_tests.rs"]
mod tests;
