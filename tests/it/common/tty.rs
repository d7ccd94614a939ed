//! A command in a real pseudo-terminal: a private tmux server (its own
//! socket, no config file) running one pane of a fixed size. Keys go in with
//! `send-keys`, the screen comes out with `capture-pane`; every wait is
//! bounded. Tests skip (with `SKIPPED`) where tmux is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::RECV_TIMEOUT;

/// One tmux server with one pane; killed on drop.
pub struct Tty {
    socket: String,
    /// Where the pane's shell writes the program's exit status (tmux's own
    /// `pane_dead_status` was seen empty under load).
    status_file: std::path::PathBuf,
}

/// Whether tmux can run here.
pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Quotes `s` for `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Tty {
    /// Runs `argv` (with exactly `env`, nothing inherited) in a 100x30 pane.
    pub fn spawn(argv: &[&str], env: &[(&str, &str)], cwd: &Path) -> Tty {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let socket = format!(
            "zc{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut line = String::from("env -i TERM=xterm-256color");
        for (k, v) in env {
            line.push_str(&format!(" {k}={}", sh_quote(v)));
        }
        for a in argv {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        let status_file = cwd.join(format!("{socket}.status"));
        line.push_str(&format!(
            "; echo $? > {}",
            sh_quote(&status_file.display().to_string())
        ));
        let tty = Tty {
            socket,
            status_file,
        };
        tty.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
        ])
        .arg("-c")
        .arg(cwd)
        .arg(&line)
        .status()
        .expect("tmux new-session");
        tty.run(&["set-option", "-g", "remain-on-exit", "on"]);
        tty
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).args(args);
        c.stdin(Stdio::null()).stderr(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.tmux(args).output().expect("running tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-l", text]);
    }

    /// Presses keys by tmux name (`Enter`, `C-c`, `C-d`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Pastes the file's bytes as a terminal paste does (bracketed when the
    /// program asked for it).
    pub fn paste_file(&self, file: &Path) {
        let f = file.display().to_string();
        self.run(&["load-buffer", "-b", "paste", &f]);
        self.run(&["paste-buffer", "-p", "-d", "-b", "paste"]);
    }

    /// Types a line and presses Enter.
    pub fn line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// The visible screen and scrollback, lines joined.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-200"])
    }

    /// Waits until the screen holds `what`.
    pub fn wait_for(&self, what: &str) {
        self.wait_for_within(what, RECV_TIMEOUT);
    }

    /// Waits up to `limit` until the screen holds `what`.
    pub fn wait_for_within(&self, what: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if self.screen().contains(what) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pane's title (what an OSC 0 or 2 sequence sets).
    pub fn title(&self) -> String {
        self.run(&["display-message", "-p", "#{pane_title}"])
            .trim_end()
            .to_owned()
    }

    /// Lets the program write tmux's clipboard (OSC 52), so a test sees
    /// whether it tried: the clipboard is tmux's paste buffers.
    pub fn allow_clipboard_writes(&self) {
        self.run(&["set-option", "-g", "set-clipboard", "on"]);
    }

    /// tmux's paste buffers, one line each (empty: nothing was copied).
    pub fn buffers(&self) -> String {
        self.run(&["list-buffers"])
    }

    /// Resizes the pane's window.
    pub fn resize(&self, cols: u32, rows: u32) {
        self.run(&[
            "resize-window",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }

    /// Presses `keys` and waits for the exit status; the keys are pressed
    /// again each second in case the first press came before the editor
    /// had the terminal.
    pub fn exit_by(&self, keys: &[&str]) -> i32 {
        let deadline = Instant::now() + RECV_TIMEOUT;
        loop {
            self.keys(keys);
            let pressed = Instant::now();
            while pressed.elapsed() < Duration::from_secs(1) {
                if let Some(code) = self.exit_status() {
                    return code;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(
                Instant::now() < deadline,
                "the program did not exit:\n{}",
                self.screen()
            );
        }
    }

    fn exit_status(&self) -> Option<i32> {
        let text = std::fs::read_to_string(&self.status_file).ok()?;
        let text = text.strip_suffix('\n')?;
        Some(text.parse().unwrap_or(-1))
    }

    /// The exit status once the program has exited.
    pub fn wait_exit(&self) -> i32 {
        let deadline = Instant::now() + RECV_TIMEOUT;
        loop {
            if let Some(code) = self.exit_status() {
                return code;
            }
            assert!(
                Instant::now() < deadline,
                "the program did not exit:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).status();
    }
}
