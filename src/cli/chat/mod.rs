//! `zeroclaw chat [PROMPT] [--session ID | --resume ID | --new] [--agent
//! ALIAS]`: a person's terminal client (docs/operations.md).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the loop: prompt, turn, reconnect, slash commands |
//! | `session.rs` | which session and agent; transcript lines |
//! | `editor.rs` | typed lines (rustyline on a terminal, stdin otherwise) |
//! | `render.rs` | how a turn's updates are shown |
//! | `ask.rs` | approval and elicitation prompts |
//! | `countdown.rs` | the approval's seconds left, redrawn in the prompt |
//! | `slash.rs` | parsing `/commands` |
//! | `prompting.rs` | one turn: streamed, asked, cancelled; the Ctrl-C watcher |
//! | `typeahead.rs` | keys typed ahead: seen and dropped (tty or Windows console) |
//!
//! Without a terminal on stdin or stdout it reads prompts line by line and
//! prints plain text, so it works in scripts and pipes.

mod ask;
mod countdown;
mod editor;
mod prompting;
mod render;
pub(crate) mod session;
mod slash;
mod typeahead;
mod watch;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::conn::{self, CallError, ClientPeer, Received};
use crate::cli::exit;
use crate::shown::Shown;
use editor::{Input, Line, Purpose};
use prompting::Interrupts;
use render::{notice, Render};
use session::Current;
use slash::Slash;

/// How long the chat waits for a restarted daemon.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(30);
/// How many messages a resumed session shows.
const RESUME_SHOWS: usize = 10;
pub(crate) const PROMPT: &str = "> ";

/// `zeroclaw chat`'s arguments.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A first prompt, sent as if typed at the first prompt.
    pub prompt: Option<String>,
    /// Open this session (resumed, or created with this id).
    pub session: Option<String>,
    /// Resume this session; it must exist.
    pub resume: Option<String>,
    pub agent: Option<String>,
    pub new: bool,
    /// The agent's working directory (default: the current directory).
    pub cwd: Option<PathBuf>,
    /// Open chat-mode sessions instead of durable ones.
    pub chat_mode: bool,
}

struct Chat {
    config_dir: Option<OsString>,
    conn: ClientPeer,
    render: Render,
    input: Input,
    current: Current,
    /// The directory the next `session/new` names as `cwd` (taken by the
    /// first open: a new session works in the project directory).
    cwd: Option<PathBuf>,
    /// `--cwd` was given: a refusal of it is an error, not a notice.
    cwd_explicit: bool,
    /// Markers of files `/upload` sent since the last prompt: the next
    /// prompt carries them, so the agent learns each file's name and path.
    uploads: Vec<String>,
    /// Another client's turn is being shown at the prompt (watch.rs).
    watched_turn: bool,
    /// The approval another client's turn waits for (`/approve`).
    pending_approval: Option<Value>,
    /// Output of another client's turn was printed below the editor's
    /// prompt since it was drawn (the next output needs no new line).
    below_prompt: bool,
    interrupts: Interrupts,
    /// The connection is watched at the prompt (false once it is gone and
    /// could not be reopened: the next prompt tries again).
    watching: bool,
}

/// What ended a wait at the prompt.
enum AtPrompt {
    Line(Line),
    Daemon(Option<Received>),
}

/// Runs the chat; the exit status.
pub async fn run(config_dir: Option<OsString>, opts: Options) -> i32 {
    // On a worker, beside the I/O driver: left on the thread that blocks on
    // it, the chat was woken from another thread for every socket read.
    match tokio::spawn(chat(config_dir, opts)).await {
        Ok(status) => status,
        Err(e) => {
            notice(&format!("the chat stopped: {e}"));
            exit::RPC_ERROR
        }
    }
}

async fn chat(config_dir: Option<OsString>, opts: Options) -> i32 {
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let mut conn = match ClientPeer::open(config_dir.as_deref()).await {
        Ok(c) => c,
        Err(e) => {
            notice(&e.message);
            return e.status;
        }
    };
    let dir = match session::work_dir(opts.cwd.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            notice(&e);
            return exit::USAGE;
        }
    };
    let (current, stored) = match session::choose(&mut conn, &opts, &dir).await {
        Ok(c) => c,
        Err(e) => {
            notice(&e);
            return exit::RPC_ERROR;
        }
    };
    // A new session works in the directory; a stored one where it worked,
    // unless --cwd moves it.
    let cwd = (opts.cwd.is_some() || !stored).then_some(dir);
    let interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            notice(&format!("cannot catch Ctrl-C: {e}"));
            return exit::RPC_ERROR;
        }
    };
    let mut chat = Chat {
        config_dir,
        conn,
        render: Render::new(tty),
        input: Input::start(tty),
        current,
        cwd,
        cwd_explicit: opts.cwd.is_some(),
        uploads: Vec::new(),
        watched_turn: false,
        pending_approval: None,
        below_prompt: false,
        interrupts,
        watching: true,
    };
    if let Err(e) = chat.enter(true).await {
        notice(&e.message());
        return exit::RPC_ERROR;
    }
    if let Some(prompt) = opts.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        chat.render.typed(PROMPT, prompt);
        if let Some(status) = chat.dispatch(prompt).await {
            chat.render.flush();
            return status;
        }
    }
    chat.run_loop().await
}

impl Chat {
    /// `session/new` for the current session (a new id when empty); shows
    /// its last messages when it resumed and `show`.
    async fn enter(&mut self, show: bool) -> Result<(), CallError> {
        let cwd = self.cwd.take();
        let opened = match session::open(&mut self.conn, &self.current, cwd.as_deref()).await {
            Err(e) if cwd.is_some() && !self.cwd_explicit && session::cwd_refused(&e) => {
                notice("only an admin may choose a session's directory: this one works in the agent's workspace");
                session::open(&mut self.conn, &self.current, None).await?
            }
            r => r?,
        };
        if let Some(id) = opened.get("session_id").and_then(Value::as_str) {
            self.current.id = id.to_owned();
        }
        let resumed = opened.get("resumed") == Some(&Value::Bool(true));
        let count = opened
            .get("message_count")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if !show {
            return Ok(());
        }
        let dir = opened
            .get("workspace_dir")
            .and_then(Value::as_str)
            .unwrap_or_default();
        notice(&format!(
            "session {} with agent {} ({}); /help for commands",
            self.current.id,
            self.current.agent,
            if resumed {
                format!("resumed, {count} messages")
            } else {
                "new".to_owned()
            }
        ));
        notice(&format!("working in {dir}"));
        if resumed {
            for l in session::history(
                &mut self.conn,
                &self.current.id,
                self.current.mode,
                RESUME_SHOWS,
            )
            .await?
            {
                self.render.line(&l);
            }
            self.render.flush();
        }
        Ok(())
    }

    async fn run_loop(&mut self) -> i32 {
        // Lines ending in `\` continue the prompt on the next line.
        let mut pending = String::new();
        loop {
            self.render.flush();
            // The connection is watched meanwhile, so a daemon that stops is
            // noticed (and reconnected to) while the person is still typing.
            let prompt = Shown::line(if self.render.tty { PROMPT } else { "" });
            let waited = tokio::select! {
                l = self.input.read(&prompt, Purpose::Prompt) => AtPrompt::Line(l),
                _ = self.interrupts.next() => AtPrompt::Line(Line::Interrupted),
                ev = self.conn.next(), if self.watching => AtPrompt::Daemon(ev),
            };
            let line = match waited {
                AtPrompt::Line(l) => {
                    // The editor draws a fresh prompt for the next line.
                    self.below_prompt = false;
                    l
                }
                AtPrompt::Daemon(ev) => {
                    self.at_prompt(ev).await;
                    continue;
                }
            };
            let text = match line {
                Line::Eof | Line::Interrupted if !pending.is_empty() => {
                    pending.clear();
                    continue;
                }
                Line::Eof | Line::Interrupted => return exit::OK,
                Line::TooLong(n) => {
                    notice(&format!(
                        "a line of {n} bytes was refused: a typed prompt is at most {} bytes; send a file with /upload FILE",
                        editor::MAX_LINE_BYTES
                    ));
                    continue;
                }
                Line::NotUtf8 => {
                    notice("the typed line was not valid UTF-8 (is the terminal's encoding UTF-8?); it was dropped, with the rest of its paste");
                    continue;
                }
                Line::Text { text, lossy } => {
                    if lossy {
                        notice(
                            "the input was not valid UTF-8; invalid bytes were replaced by U+FFFD",
                        );
                    }
                    text
                }
            };
            if let Some(head) = text.strip_suffix('\\') {
                pending.push_str(head);
                pending.push('\n');
                continue;
            }
            let text = std::mem::take(&mut pending) + &text;
            if text.trim().is_empty() {
                continue;
            }
            if let Some(status) = self.dispatch(&text).await {
                self.render.flush();
                return status;
            }
        }
    }

    /// A line as typed: a slash command or a prompt; `Some(status)` ends the chat.
    async fn dispatch(&mut self, text: &str) -> Option<i32> {
        match slash::parse(text) {
            Some(cmd) => self.command(cmd).await,
            None => self.turn(text).await,
        }
    }

    /// A slash command; `Some(status)` ends the chat.
    async fn command(&mut self, cmd: Slash) -> Option<i32> {
        let result: Result<Vec<String>, CallError> = match cmd {
            Slash::Quit => return Some(exit::OK),
            Slash::Help => Ok(slash::HELP.lines().map(str::to_owned).collect()),
            Slash::Bad(why) => Ok(vec![why]),
            Slash::Thoughts => {
                self.render.thoughts = !self.render.thoughts;
                let state = if self.render.thoughts {
                    "shown"
                } else {
                    "hidden"
                };
                Ok(vec![format!("thoughts {state}")])
            }
            Slash::Sessions => self
                .conn
                .call("session/list", json!({"limit": 20}))
                .await
                .map(|l| session::session_lines(&l)),
            Slash::History(n) => {
                session::history(&mut self.conn, &self.current.id, self.current.mode, n).await
            }
            Slash::Approve(decision) => self.approve_watched(decision).await,
            Slash::Cancel => self
                .conn
                .call("session/cancel", json!({"session_id": self.current.id}))
                .await
                .map(|_| vec!["cancelled".to_owned()]),
            // Only a session that exists: a typo must not create one.
            Slash::Resume(id) => match session::stored(&mut self.conn, &id).await {
                Ok(Some(stored)) => {
                    self.current = stored;
                    self.enter(true).await.map(|()| Vec::new())
                }
                Ok(None) => Ok(vec![session::no_session(&id)]),
                Err(e) => return self.failed(e).await,
            },
            Slash::Upload(path) => {
                self.render.flush();
                let sent = crate::cli::file_upload::upload_file(
                    self.config_dir.as_deref(),
                    &self.current.id,
                    &path,
                    None,
                )
                .await;
                match sent {
                    Ok(Ok(entry)) => Ok(self.uploaded(&path, &entry)),
                    Ok(Err(e)) => Err(CallError::Rpc(e)),
                    Err(f) => Ok(vec![f.message]),
                }
            }
        };
        match result {
            Ok(lines) => {
                for l in lines {
                    self.render.line(&l);
                }
                None
            }
            Err(e) => self.failed(e).await,
        }
    }

    /// Remembers an uploaded file's marker for the next prompt (the
    /// file is stored under its hash, so the agent is told its name,
    /// where it is, and where it came from); the lines shown.
    fn uploaded(&mut self, path: &Path, entry: &Value) -> Vec<String> {
        let s = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
        let from = crate::confine::canonical(path).unwrap_or_else(|_| path.to_path_buf());
        self.uploads.push(format!(
            "{} (uploaded from {})",
            s("marker"),
            from.display()
        ));
        vec![format!(
            "uploaded {}: stored at {}; your next prompt tells the agent",
            path.display(),
            s("workspace_path")
        )]
    }

    /// Reports a failed call; reconnects when the connection is gone.
    async fn failed(&mut self, e: CallError) -> Option<i32> {
        match e {
            CallError::Lost(_) => self.reconnect().await.err(),
            CallError::Rpc(_) => {
                self.render.error(&e.message());
                None
            }
        }
    }

    /// Something the daemon sent while the person is at the prompt: a lost
    /// connection is reopened there and then (the prompt stays; a failure
    /// leaves the retry to the next prompt).
    async fn at_prompt(&mut self, ev: Option<Received>) {
        match ev {
            Some(Received::Closed(_)) | None => {
                // Below the prompt line the editor is drawing.
                if self.render.tty && self.input.reading() {
                    eprintln!();
                }
                if self.reconnect().await == Err(exit::NO_DAEMON) {
                    self.watching = false;
                    notice("the next prompt tries again (Ctrl-D leaves)");
                }
                if self.render.tty && self.input.reading() {
                    eprint!("{PROMPT}");
                }
            }
            Some(Received::Request { id, method, .. }) => {
                let _ = self.conn.refuse(&id, &method).await;
            }
            Some(Received::Garbage(line)) => garbage(&line),
            // Another attached client's turn (or late updates of ours).
            Some(ev @ (Received::Chunk { .. } | Received::Notification { .. })) => {
                self.watch_at_prompt(ev)
            }
            // Late answers of an ended turn.
            Some(Received::Answer { .. }) => {}
        }
    }

    /// Waits for the daemon to come back and resumes the session.
    async fn reconnect(&mut self) -> Result<(), i32> {
        self.render.flush();
        notice("the connection to the daemon was lost; reconnecting…");
        match conn::reopen(self.config_dir.as_deref(), RECONNECT_PATIENCE).await {
            Ok(c) => {
                self.conn = c;
                self.watching = true;
            }
            Err(e) => {
                notice(&e.message);
                return Err(exit::NO_DAEMON);
            }
        }
        match self.enter(false).await {
            Ok(()) => {
                notice(&format!("reconnected; session {} resumed", self.current.id));
                Ok(())
            }
            Err(e) => {
                notice(&format!(
                    "reconnected, but resuming failed: {}",
                    e.message()
                ));
                Err(exit::RPC_ERROR)
            }
        }
    }
}

/// A line from the daemon that is not JSON-RPC: said, then ignored.
fn garbage(line: &str) {
    notice(&format!(
        "the daemon sent a line that is not JSON-RPC (ignored): {line}"
    ));
}
