//! Process plumbing for the agents that run a program (`command`, `acp`):
//! how the program is started, stopping it (and its process group) without
//! leaving zombies or orphans, the bounded stderr tail, and the UTF-8-safe
//! cut used to bound stdout lines.
//!
//! On Unix the child leads its own process group, so `SIGTERM`/`SIGKILL` reach
//! whatever it spawned too (`sh -c` scripts fork). A [`GroupGuard`] kills the
//! group if the turn's future is dropped mid-way (the runtime aborts a backend
//! still running 5 s after cancellation); `kill_on_drop` covers the leader.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// The most of stderr kept (the tail).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// The last [`STDERR_TAIL_BYTES`] bytes of a stream.
#[derive(Debug, Default)]
pub struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    /// Appends `data`, forgetting the oldest bytes beyond the bound.
    pub fn push(&mut self, data: &[u8]) {
        if data.len() >= STDERR_TAIL_BYTES {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&data[data.len() - STDERR_TAIL_BYTES..]);
            return;
        }
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > STDERR_TAIL_BYTES {
            let excess = self.bytes.len() - STDERR_TAIL_BYTES;
            self.bytes.drain(..excess);
        }
    }

    /// The tail as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The last non-blank line, trimmed at its end.
    pub fn last_line(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        text.trim_end()
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .trim_end()
            .to_owned()
    }
}

/// The length of the longest prefix of `bytes` of at most `max` bytes that
/// does not end inside a UTF-8 sequence. Never 0 for non-empty input, so a
/// caller always makes progress (even on invalid bytes).
pub fn utf8_cut(bytes: &[u8], max: usize) -> usize {
    let end = max.min(bytes.len());
    for i in (end.saturating_sub(4)..end).rev() {
        let b = bytes[i];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte
        }
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if i + width > end && i > 0 { i } else { end };
    }
    end
}

/// The command of an agent program: argv without a shell, in `cwd`, with
/// `env` and the `vars` naming the turn added to the inherited environment,
/// all three pipes, killed on drop, leading its own process group (Unix).
pub fn agent_command(
    (program, args): (&str, &[String]),
    cwd: &Path,
    env: &BTreeMap<String, String>,
    vars: &[(&str, &str)],
) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .envs(env)
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command
}

/// The command of a tool the agent runs (the `shell` tool, ACP `terminal/*`):
/// argv without a shell, in `cwd`, stdin closed, killed on drop, leading its
/// own process group (Unix) so [`GroupGuard`] reaches whatever it spawns.
/// The caller sets stdout and stderr.
pub fn tool_command(program: &str, args: &[String], cwd: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command
}

/// Kills the child's process group when dropped, unless disarmed.
pub struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    /// Guards the group led by `pid` (the child's id at spawn).
    pub fn new(pid: Option<u32>) -> Self {
        // Never 0 or 1: kill(-0) would hit our own group, kill(-1) everyone.
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1);
        GroupGuard { pgid }
    }

    /// Leaves the group alone from now on.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }

    fn signal(&self, signal: Signal) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            let sig = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            // SAFETY: kill(2) has no memory-safety preconditions; a negative
            // pid addresses the process group `pgid` (> 1, checked above).
            unsafe {
                libc::kill(-pgid, sig);
            }
        }
        #[cfg(not(unix))]
        let _ = signal;
    }

    /// Stops the child: `SIGTERM` to its group (a plain kill elsewhere), then
    /// after `grace` `SIGKILL`; always reaps the leader, then kills whatever
    /// is left of the group and disarms.
    pub async fn terminate(&mut self, child: &mut Child, grace: Duration) {
        if cfg!(unix) && self.pgid.is_some() {
            self.signal(Signal::Term);
        } else {
            let _ = child.start_kill();
        }
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            self.kill_now(child).await;
        }
        self.signal(Signal::Kill);
        self.disarm();
    }

    /// `SIGKILL` to the group (nothing once disarmed); the leader is the
    /// caller's to reap.
    pub fn kill_group(&self) {
        self.signal(Signal::Kill);
    }

    /// `SIGKILL` to the group and the leader, then reaps the leader.
    pub async fn kill_now(&mut self, child: &mut Child) {
        self.signal(Signal::Kill);
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::Kill);
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut tail = Tail::default();
        tail.push(b"first\n");
        tail.push(&vec![b'a'; STDERR_TAIL_BYTES]);
        tail.push(b"\nlast line\r\n\n");
        let text = tail.text();
        assert_eq!(text.len(), STDERR_TAIL_BYTES);
        assert!(text.ends_with("a\nlast line\r\n\n"));
        assert_eq!(tail.last_line(), "last line");
        tail.push(&vec![b'b'; 3 * STDERR_TAIL_BYTES]);
        assert_eq!(tail.text(), "b".repeat(STDERR_TAIL_BYTES));
        assert_eq!(Tail::default().last_line(), "");
    }

    #[test]
    fn utf8_cut_never_splits_a_sequence() {
        let s = "aé€😀".as_bytes(); // 1 + 2 + 3 + 4 bytes
        let cuts: Vec<usize> = (1..=10).map(|max| utf8_cut(s, max)).collect();
        assert_eq!(cuts, [1, 1, 3, 3, 3, 6, 6, 6, 6, 10]);
        assert_eq!(utf8_cut(b"abc", 10), 3);
        assert_eq!(utf8_cut(&[0xF0, 0x9F], 2), 2); // progress on a lone prefix
        assert_eq!(utf8_cut(&[b'a', 0xFF, 0xFE], 3), 3); // invalid bytes: no back-off
    }

    #[test]
    fn guard_refuses_dangerous_pids() {
        assert!(GroupGuard::new(Some(0)).pgid.is_none());
        assert!(GroupGuard::new(Some(1)).pgid.is_none());
        assert!(GroupGuard::new(Some(u32::MAX)).pgid.is_none());
        let mut g = GroupGuard::new(Some(4242));
        assert_eq!(g.pgid, Some(4242));
        g.disarm(); // dropping must not signal anything
    }
}
