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
//! | `turn.rs` | one turn: streamed, asked, cancelled; the Ctrl-C watcher |
//! | `typeahead.rs` | keys typed ahead: seen and dropped (tty or Windows console) |
//!
//! Without a terminal on stdin or stdout it reads prompts line by line and
//! prints plain text, so it works in scripts and pipes.

mod ask;
mod countdown;
mod editor;
mod render;
pub(crate) mod session;
mod slash;
mod turn;
mod typeahead;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use serde_json::{json, Value};

use super::conn::{self, CallError, Conn, Incoming};
use crate::client::exit;
use crate::shown::Shown;
use editor::{Input, Line, Purpose};
use render::{notice, Render};
use session::Current;
use slash::Slash;
use turn::Interrupts;

/// How long the chat waits for a restarted daemon.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(30);
/// How many messages a resumed session shows.
const RESUME_SHOWS: usize = 10;
const PROMPT: &str = "> ";

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
}

struct Chat {
    config_dir: Option<OsString>,
    conn: Conn,
    render: Render,
    input: Input,
    current: Current,
    interrupts: Interrupts,
    /// The connection is watched at the prompt (false once it is gone and
    /// could not be reopened: the next prompt tries again).
    watching: bool,
}

/// What ended a wait at the prompt.
enum AtPrompt {
    Line(Line),
    Daemon(Option<Incoming>),
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
    let mut conn = match Conn::open(config_dir.as_deref()).await {
        Ok(c) => c,
        Err(e) => {
            notice(&e.message);
            return e.status;
        }
    };
    let current = match choose(&mut conn, &opts).await {
        Ok(c) => c,
        Err(e) => {
            notice(&e);
            return exit::RPC_ERROR;
        }
    };
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

/// The session and agent the options name (`--session`, `--resume`,
/// `--new`, or the most recent).
async fn choose(conn: &mut Conn, opts: &Options) -> Result<Current, String> {
    let msg = |e: CallError| e.message();
    let named = match (&opts.session, &opts.resume, opts.new) {
        (Some(id), _, _) | (None, Some(id), _) => Some(id.clone()),
        (None, None, true) => None,
        (None, None, false) => match session::most_recent(conn).await.map_err(msg)? {
            Some(c) if opts.agent.as_ref().is_none_or(|a| *a == c.agent) => return Ok(c),
            _ => None,
        },
    };
    let stored = match &named {
        Some(id) => session::stored_agent(conn, id).await.map_err(msg)?,
        None => None,
    };
    if let (Some(id), None) = (&opts.resume, &stored) {
        return Err(session::no_session(id));
    }
    let agent = match (opts.agent.clone(), stored) {
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => session::default_agent(conn)
            .await
            .map_err(msg)?
            .ok_or("no agent is configured (add one under [agents] in config.toml)")?,
    };
    Ok(Current {
        id: named.unwrap_or_default(),
        agent,
    })
}

impl Chat {
    /// `session/new` for the current session (a new id when empty); shows
    /// its last messages when it resumed and `show`.
    async fn enter(&mut self, show: bool) -> Result<(), CallError> {
        let id = (!self.current.id.is_empty()).then_some(self.current.id.as_str());
        let opened = session::open(&mut self.conn, &self.current.agent, id).await?;
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
        if resumed {
            for l in session::history(&mut self.conn, &self.current.id, RESUME_SHOWS).await? {
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
                AtPrompt::Line(l) => l,
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
            Slash::History(n) => session::history(&mut self.conn, &self.current.id, n).await,
            Slash::Cancel => self
                .conn
                .call("session/cancel", json!({"session_id": self.current.id}))
                .await
                .map(|_| vec!["cancelled".to_owned()]),
            // Only a session that exists: a typo must not create one.
            Slash::Resume(id) => match session::stored_agent(&mut self.conn, &id).await {
                Ok(Some(agent)) => {
                    self.current = Current { id, agent };
                    self.enter(true).await.map(|()| Vec::new())
                }
                Ok(None) => Ok(vec![session::no_session(&id)]),
                Err(e) => return self.failed(e).await,
            },
            Slash::Upload(path) => {
                self.render.flush();
                let status = crate::client::upload(
                    self.config_dir.as_deref(),
                    &self.current.id,
                    &path,
                    None,
                )
                .await;
                Ok(if status == exit::OK {
                    vec![format!("uploaded {}", path.display())]
                } else {
                    Vec::new()
                })
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
    async fn at_prompt(&mut self, ev: Option<Incoming>) {
        match ev {
            Some(Incoming::Closed(_)) | None => {
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
            Some(Incoming::Request { id, method, .. }) => {
                let _ = self.conn.refuse(&id, &method).await;
            }
            Some(Incoming::Garbage(line)) => garbage(&line),
            // Late updates and answers of an ended turn.
            Some(_) => {}
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
