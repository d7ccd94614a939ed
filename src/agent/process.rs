//! Process plumbing for everything the daemon runs (agent programs, the
//! `shell` tool, ACP terminals): the one place children are made
//! ([`child_command`], [`spawn`]), stopping them (and their process group)
//! without leaving zombies or orphans, the bounded stderr tail, and the
//! UTF-8-safe cut used to bound stdout lines.
//!
//! Every child: its environment per [`super::child_env`]; it leads its own
//! process group, so `SIGTERM`/`SIGKILL` reach whatever it spawned too
//! (`sh -c` scripts fork); `SIGKILL`ed by the kernel when the daemon dies
//! (Linux `PR_SET_PDEATHSIG`); registered with [`super::reaper`], which
//! kills the descendants that escape the group. A [`GroupGuard`] kills the
//! group if the turn's future is dropped mid-way (the runtime aborts a
//! backend still running 5 s after cancellation); `kill_on_drop` covers the
//! leader. On Windows the group is a Job Object ([`super::job`]) that the
//! system kills when its handle closes, the daemon's exit included.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked exits: children
//! are spawned from async code only, on the runtime's worker threads (which
//! live as long as the daemon), never from `spawn_blocking` (whose threads
//! retire when idle).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use super::child_env::{self, EnvBase};
use super::reaper;

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

/// A child of the daemon: argv without a shell, in `cwd`, its environment
/// `base` then `env`, killed on drop, leading its own process group and
/// killed with the daemon (Unix). Start it with [`spawn`].
pub fn child_command(
    (program, args): (&str, &[String]),
    cwd: &Path,
    base: EnvBase<'_>,
    env: &BTreeMap<String, String>,
) -> Command {
    let mut command = Command::new(program);
    child_env::apply(&mut command, base);
    command
        .args(args)
        .current_dir(cwd)
        .envs(env)
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(target_os = "linux")]
    die_with_the_daemon(&mut command);
    command
}

/// The command of an agent program ([`child_command`]) with the `vars`
/// naming the turn added and all three pipes.
pub fn agent_command(
    argv: (&str, &[String]),
    cwd: &Path,
    (base, env): (EnvBase<'_>, &BTreeMap<String, String>),
    vars: &[(&str, &str)],
) -> Command {
    let mut command = child_command(argv, cwd, base, env);
    command
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The command of a tool an agent runs (the `shell` tool, ACP `terminal/*`):
/// [`child_command`] with the minimal base and the agent's `env`, stdin
/// closed. The caller sets stdout and stderr.
pub fn tool_command(
    program: &str,
    args: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Command {
    let mut command = child_command((program, args), cwd, EnvBase::Minimal, env);
    command.stdin(Stdio::null());
    command
}

/// Starts `command`, registered with the reaper (so it is never taken for
/// an escaped descendant).
pub fn spawn(command: &mut Command) -> std::io::Result<Child> {
    reaper::spawn_registered(|| command.spawn())
}

/// `PR_SET_PDEATHSIG(SIGKILL)` in the child: the kernel kills it when the
/// thread that forked it (a runtime worker: the daemon's lifetime) dies,
/// `kill -9` of the daemon included.
#[cfg(target_os = "linux")]
fn die_with_the_daemon(command: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let daemon = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls
    // only prctl(2) and getppid(2), both async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let signal = libc::SIGKILL as libc::c_ulong;
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The daemon died between fork and prctl: do not outlive it.
            if libc::getppid() != daemon {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Kills the child's process group (Unix) or Job Object (Windows, see
/// [`super::job`]) when dropped, unless disarmed.
pub struct GroupGuard {
    #[cfg(unix)]
    pgid: Option<i32>,
    #[cfg(windows)]
    job: Option<super::job::Job>,
}

impl GroupGuard {
    /// Guards the group (or job) of `child`, just spawned.
    pub fn of(child: &Child) -> Self {
        #[cfg(unix)]
        return Self::new(child.id());
        #[cfg(windows)]
        {
            // A child that is already gone has nothing left to guard; a job
            // that cannot be made leaves the plain kill of the child.
            let job = child
                .raw_handle()
                .and_then(|h| match super::job::Job::holding(h) {
                    Ok(job) => Some(job),
                    Err(e) => {
                        tracing::warn!(event = "job_object_failed", error = %e);
                        None
                    }
                });
            GroupGuard { job }
        }
    }

    /// Guards the group led by `pid` (the child's id at spawn).
    #[cfg(unix)]
    fn new(pid: Option<u32>) -> Self {
        // Never 0 or 1: kill(-0) would hit our own group, kill(-1) everyone.
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1);
        GroupGuard { pgid }
    }

    /// Leaves the group alone from now on. (On Windows the job's handle
    /// closes, which ends whatever the child left running in it.)
    pub fn disarm(&mut self) {
        #[cfg(unix)]
        {
            self.pgid = None;
        }
        #[cfg(windows)]
        {
            self.job = None;
        }
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
        // Windows has no polite stop for a process without a window or a
        // console of its own: both mean killing the job.
        #[cfg(windows)]
        if let (Some(job), Signal::Kill) = (&self.job, signal) {
            job.kill();
        }
    }

    fn armed(&self) -> bool {
        #[cfg(unix)]
        return self.pgid.is_some();
        #[cfg(windows)]
        return self.job.is_some();
    }

    /// Stops the child: `SIGTERM` to its group (a plain kill elsewhere), then
    /// after `grace` `SIGKILL`; always reaps the leader, then kills whatever
    /// is left of the group and disarms.
    pub async fn terminate(&mut self, child: &mut Child, grace: Duration) {
        if cfg!(unix) && self.armed() {
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

    /// The daemon makes children in one place: the environment and death
    /// rules above hold for every one (the CLI, a client, is not the daemon).
    #[test]
    fn children_are_made_here_only() {
        fn walk(dir: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                let name = path.to_string_lossy().into_owned();
                // Compared by components: Windows joins with `\`.
                if path.is_dir() {
                    if !path.ends_with("src/cli") {
                        walk(&path, found);
                    }
                } else if name.ends_with(".rs")
                    && !name.ends_with("_tests.rs")
                    && !path.ends_with("src/agent/process.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let code = text.split("#[cfg(test)]").next().unwrap_or("");
                    if code.contains("Command::new(") {
                        found.push(name);
                    }
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut found = Vec::new();
        for dir in ["src", "layers", "services"] {
            walk(&root.join(dir), &mut found);
        }
        assert!(
            found.is_empty(),
            "children made outside process.rs: {found:?}"
        );
    }

    #[cfg(unix)]
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
