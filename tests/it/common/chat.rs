//! A `zeroclaw chat` process driven through pipes (its plain mode): lines
//! in on stdin, what it printed collected from stdout and stderr, every wait
//! bounded; and the prompts the daemon recorded of a chat.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{wait_timeout, Daemon, EXIT_TIMEOUT, RECV_TIMEOUT};

/// A running chat; killed on drop.
pub struct Chat {
    child: Child,
    stdin: Option<ChildStdin>,
    pub stdout: Arc<Mutex<Vec<u8>>>,
    pub stderr: Arc<Mutex<Vec<u8>>>,
    /// The threads collecting stdout and stderr: each ends at its pipe's end.
    readers: [JoinHandle<()>; 2],
}

fn collect(mut r: impl Read + Send + 'static) -> (Arc<Mutex<Vec<u8>>>, JoinHandle<()>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b2 = buf.clone();
    let reader = std::thread::spawn(move || {
        let mut chunk = [0u8; 65536];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            b2.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    (buf, reader)
}

/// `zeroclaw chat ARGS…` for daemon `d`, through pipes.
pub fn plain_chat(d: &Daemon, args: &[&str]) -> Chat {
    let mut cmd = d.cli();
    // Run from the daemon's config dir, not the repository: the chat's
    // sessions work in its current directory.
    cmd.current_dir(&d.config_dir).arg("chat").args(args);
    Chat::spawn(cmd)
}

impl Chat {
    /// Starts `cmd` (a `zeroclaw … chat …` command) with piped stdio.
    pub fn spawn(mut cmd: Command) -> Chat {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning zeroclaw chat");
        let stdin = child.stdin.take();
        let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
        let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
        Chat {
            child,
            stdin,
            stdout,
            stderr,
            readers: [out_reader, err_reader],
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes bytes to its stdin.
    pub fn send_bytes(&mut self, b: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(b).expect("writing to chat");
        stdin.flush().expect("flushing chat stdin");
    }

    /// Writes one line to its stdin.
    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// Closes its stdin (Ctrl-D).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    fn wait_in(&self, which: &Arc<Mutex<Vec<u8>>>, what: &str, after: usize) -> usize {
        let deadline = Instant::now() + RECV_TIMEOUT;
        loop {
            let text = String::from_utf8_lossy(&which.lock().unwrap()).into_owned();
            if let Some(i) = text.get(after..).and_then(|t| t.find(what)) {
                return after + i + what.len();
            }
            assert!(
                Instant::now() < deadline,
                "chat never printed {what:?}\nstdout:\n{}\nstderr:\n{}",
                self.out(),
                self.err()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until stdout holds `what` after byte `after`; returns the end of the match.
    pub fn wait_out(&self, what: &str, after: usize) -> usize {
        self.wait_in(&self.stdout, what, after)
    }

    /// Waits until stderr holds `what`.
    pub fn wait_err(&self, what: &str) -> usize {
        self.wait_in(&self.stderr, what, 0)
    }

    #[cfg(unix)]
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory effects; the pid is our live child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Closes stdin and waits for the exit, then for the readers to reach
    /// the end of both pipes: what it printed last is then all collected
    /// (under Wine a usage error's last words came after the exit was seen).
    /// Bounded: a process it started may hold the pipes open.
    pub fn finish(&mut self) -> ExitStatus {
        self.close_stdin();
        let status = wait_timeout(&mut self.child, EXIT_TIMEOUT).unwrap_or_else(|| {
            panic!(
                "chat did not exit\nstdout:\n{}\nstderr:\n{}",
                self.out(),
                self.err()
            )
        });
        let deadline = Instant::now() + RECV_TIMEOUT;
        while !self.readers.iter().all(JoinHandle::is_finished) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        status
    }

    /// The session id its start notice names.
    pub fn session_id(&self) -> String {
        self.wait_err(" with agent ");
        let err = self.err();
        let after = err.split("session ").nth(1).expect("a session notice");
        after
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

impl Drop for Chat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The user prompts the daemon recorded for session `sid`, oldest first
/// (for plain-mode chats too).
pub fn prompts_received(d: &Daemon, sid: &str) -> Vec<String> {
    let mut c = d.client();
    // The chat's sessions are durable unless it ran with --chat-mode.
    let list = c.ok("session/list", json!({"limit": 1000}));
    let mode = list["sessions"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["session_id"] == sid))
        .map_or(json!("acp"), |s| s["chat_mode"].clone());
    let page = c.ok(
        "session/messages",
        json!({"session_id": sid, "chat_mode": mode, "limit": 1000}),
    );
    page["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
}
