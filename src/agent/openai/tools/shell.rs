//! The `shell` tool: an argv, or a command line for `sh -c` (`cmd.exe /C`
//! on Windows), run in the
//! working directory with stdin closed, the minimal base environment plus
//! the agent's `env` (never the daemon's environment, so never its key), a timeout (default 60 s, at most
//! 600 s), stdout and stderr each read up to the tool-output bound (the rest
//! drained and dropped, so the child never blocks on a full pipe), and its
//! whole process group (Windows: its Job Object) killed when it ends, on
//! timeout and on cancellation.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::agent::process::{spawn, tool_command, GroupGuard};
use crate::limits::TOOL_OUTPUT_MAX;

/// The shell a command line runs in, before the line itself.
#[cfg(unix)]
const SHELL: [&str; 2] = ["sh", "-c"];
/// `cmd.exe`: `/D` skips the AutoRun commands of the registry, `/S` makes
/// it take the line between the first and the last quote literally.
#[cfg(windows)]
const SHELL: [&str; 4] = ["cmd.exe", "/D", "/S", "/C"];

/// Adds the command line as the shell's last argument.
#[cfg(unix)]
fn shell_line(command: &mut tokio::process::Command, line: &str) {
    command.arg(line);
}

/// Adds the command line for `cmd.exe /S /C`: quoted once, as is (cmd.exe
/// does not parse its command line the way `CommandLineToArgvW` does, so
/// the usual argument quoting would reach the command as backslashes).
#[cfg(windows)]
fn shell_line(command: &mut tokio::process::Command, line: &str) {
    command.raw_arg(format!("\"{line}\""));
}

const DEFAULT_TIMEOUT_SECS: u64 = 60;
const MAX_TIMEOUT_SECS: u64 = 600;

/// The output, an error, or `None` when the turn was cancelled.
pub async fn run(
    (cwd, env): (&Path, &BTreeMap<String, String>),
    args: &Value,
    cancel: &CancellationToken,
) -> Option<Result<String, String>> {
    let mut line_arg = None;
    let argv: Vec<String> = match args.get("command") {
        Some(Value::String(line)) if !line.trim().is_empty() => {
            line_arg = Some(line.as_str());
            SHELL.iter().map(|&a| a.to_owned()).collect()
        }
        Some(Value::Array(items)) if !items.is_empty() => {
            let strings: Option<Vec<String>> = items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
            match strings {
                Some(s) if !s[0].is_empty() => s,
                _ => return Some(Err("\"command\" must be an array of strings".into())),
            }
        }
        _ => {
            return Some(Err(
                "missing argument \"command\" (a string or an argv array)".into(),
            ))
        }
    };
    let timeout = match args.get("timeout_secs") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_TIMEOUT_SECS).contains(&n) => n,
            _ => {
                return Some(Err(format!(
                    "\"timeout_secs\" must be 1..={MAX_TIMEOUT_SECS}"
                )))
            }
        },
    };
    let mut command = tool_command(&argv[0], &argv[1..], cwd, env);
    if let Some(line) = line_arg {
        shell_line(&mut command, line);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match spawn(&mut command) {
        Ok(c) => c,
        Err(e) => return Some(Err(format!("cannot run {:?}: {e}", argv[0]))),
    };
    let mut guard = GroupGuard::of(&child);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        guard.kill_now(&mut child).await;
        return Some(Err("no pipes to the child".into()));
    };
    let finished = async {
        let (out, err) = tokio::join!(read_bounded(stdout), read_bounded(stderr));
        (child.wait().await, out, err)
    };
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        r = tokio::time::timeout(Duration::from_secs(timeout), finished) => Some(r),
    };
    let outcome = match result {
        None => None,
        Some(Err(_)) => Some(Err(format!("timed out after {timeout} s (killed)"))),
        Some(Ok((status, out, err))) => Some(Ok(render(status, &out, &err))),
    };
    // Whatever the command left running in its group goes with it.
    guard.kill_now(&mut child).await;
    outcome
}

fn render(status: std::io::Result<std::process::ExitStatus>, out: &[u8], err: &[u8]) -> String {
    let status = match status {
        Ok(s) => match s.code() {
            Some(code) => format!("exit status {code}"),
            None => format!("terminated ({s})"),
        },
        Err(e) => format!("unknown exit status ({e})"),
    };
    let mut text = status;
    if !out.is_empty() {
        text.push_str("\n--- stdout\n");
        text.push_str(&String::from_utf8_lossy(out));
    }
    if !err.is_empty() {
        text.push_str("\n--- stderr\n");
        text.push_str(&String::from_utf8_lossy(err));
    }
    text
}

/// Up to one past the output bound of `pipe`; the rest is read and dropped.
async fn read_bounded(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = (TOOL_OUTPUT_MAX + 1).saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The same commands in the platform's shell: a line printing `hi` and
    /// `err` (stderr) exiting 3 and what it prints; an argv printing `a b`;
    /// a flood of `x` (Unix: exactly; Windows: lines of them); a line
    /// running 30 s.
    #[cfg(unix)]
    mod cmds {
        pub const HI_ERR_3: &str = "echo hi; echo err >&2; exit 3";
        pub const HI_ERR_3_OUT: &str = "exit status 3\n--- stdout\nhi\n\n--- stderr\nerr\n";
        pub const ARGV: [&str; 3] = ["printf", "%s", "a b"];
        pub const ARGV_OUT: &str = "exit status 0\n--- stdout\na b";
        pub const FLOOD: &str = "head -c 100000 /dev/zero | tr '\\0' x";
        pub const SLEEP_30: &str = "sleep 30";
    }
    #[cfg(windows)]
    mod cmds {
        pub const HI_ERR_3: &str = "echo hi&echo err>&2&exit 3";
        pub const HI_ERR_3_OUT: &str = "exit status 3\n--- stdout\nhi\r\n\n--- stderr\nerr\r\n";
        pub const ARGV: [&str; 4] = ["cmd.exe", "/D", "/C", "echo a b"];
        pub const ARGV_OUT: &str = "exit status 0\n--- stdout\na b\r\n";
        pub const FLOOD: &str =
            "for /L %i in (1,1,2000) do @echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        pub const SLEEP_30: &str = "ping -n 30 127.0.0.1";
    }
    use cmds::*;

    #[tokio::test]
    async fn runs_lines_and_argv_and_bounds_and_times_out() {
        let cwd = std::env::temp_dir();
        let cwd = (cwd.as_path(), &BTreeMap::new());
        let cancel = CancellationToken::new();
        let out = run(cwd, &json!({"command": HI_ERR_3}), &cancel)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out, HI_ERR_3_OUT);
        let out = run(cwd, &json!({"command": ARGV}), &cancel)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out, ARGV_OUT);
        let big = run(cwd, &json!({"command": FLOOD}), &cancel)
            .await
            .unwrap()
            .unwrap();
        // The pipe is read to one past the bound (so the cut can be told), the rest dropped;
        // what reaches the model is cut at the bound and marked.
        let head = "exit status 0\n--- stdout\n";
        assert_eq!(big.len(), head.len() + TOOL_OUTPUT_MAX + 1);
        assert!(big.starts_with(head), "{}", &big[..64]);
        #[cfg(unix)]
        assert_eq!(big, format!("{head}{}", "x".repeat(TOOL_OUTPUT_MAX + 1)));
        let sent = super::super::bounded(&big);
        let kept = &big[..TOOL_OUTPUT_MAX];
        assert_eq!(sent, format!("{kept}{}", crate::bounded::TRUNCATION_SUFFIX));
        let slow = run(
            cwd,
            &json!({"command": SLEEP_30, "timeout_secs": 1}),
            &cancel,
        )
        .await
        .unwrap();
        assert_eq!(slow.unwrap_err(), "timed out after 1 s (killed)");
        assert!(run(cwd, &json!({"command": []}), &cancel)
            .await
            .unwrap()
            .is_err());
    }

    #[tokio::test]
    async fn cancel_kills_at_once() {
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            c2.cancel();
        });
        let started = std::time::Instant::now();
        let r = run(
            (&std::env::temp_dir(), &BTreeMap::new()),
            &json!({"command": SLEEP_30}),
            &cancel,
        )
        .await;
        assert!(r.is_none());
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
