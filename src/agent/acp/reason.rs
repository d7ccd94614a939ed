//! The agent's own reason for a refusal. An agent that will not work
//! (Claude Code run as root) may answer a bare `Internal error` and say why
//! only on stderr: the failure the client sees quotes that line. The text
//! reaches clients through the frame writer, which masks secrets
//! (`src/logging/secrets.rs`).

use std::time::Duration;

use super::host::{CallError, Host};

/// How long a line the agent wrote on stderr just before an error answer
/// gets to reach the stderr reader (which runs apart from stdout's).
const STDERR_SETTLE: Duration = Duration::from_millis(100);
/// The most of that line an error message quotes.
const STDERR_QUOTED: usize = 512;

/// [`CallError::describe`], and for an error answer the agent's last stderr line.
pub async fn explain(host: &Host, e: &CallError, method: &str) -> String {
    let why = e.describe(method);
    if !matches!(e, CallError::Rpc(_)) {
        // A broken connection's description already names the exit and that line.
        return why;
    }
    with_stderr(host, why).await
}

/// `why; the agent's stderr: LAST LINE` when it wrote one.
pub async fn with_stderr(host: &Host, mut why: String) -> String {
    tokio::time::sleep(STDERR_SETTLE).await;
    let last = host.stderr_last_line();
    if !last.is_empty() {
        let cut = crate::agent::process::utf8_cut(last.as_bytes(), STDERR_QUOTED);
        why.push_str("; the agent's stderr: ");
        why.push_str(&last[..cut]);
    }
    why
}
