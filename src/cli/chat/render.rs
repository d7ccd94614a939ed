//! How a turn looks: answer text streamed as it arrives, thoughts on lines
//! of their own, prefixed (`│ `, dimmed, on a terminal; `(thinking) ` in
//! plain mode, where they are hidden unless `/thoughts` turns them on), tool
//! calls and results as one compact line each, and the turn's outcome.
//! Output is buffered: written at once when the turn ends or a question is
//! asked, else at most once per [`FRAME`] while the answer streams, so a
//! 100,000-chunk turn costs a few dozen writes, not one per chunk.
//!
//! Every byte the renderer writes is either a [`Shown`] (the daemon's text,
//! sanitized: see `crate::shown`) or one of its own [`Style`] codes: `put`
//! and `style` are the only ways into its buffer.

use std::io::Write;
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use crate::shown::Shown;

/// The renderer's own terminal codes: the only escape sequences it writes.
#[derive(Clone, Copy)]
enum Style {
    Dim,
    Bold,
    Reset,
}
/// What starts each line of a thought on a terminal (dimmed), and in plain mode.
const THOUGHT_TTY: &str = "│ ";
const THOUGHT_PLAIN: &str = "(thinking) ";
/// How much of a tool's input or output its line shows.
pub const TOOL_PREVIEW: usize = 120;
/// How often streamed output reaches the screen: a frame at 60 Hz, below
/// what a reader notices, far above what a terminal needs.
pub const FRAME: Duration = Duration::from_millis(16);

/// The renderer of one chat.
pub struct Render {
    out: std::io::BufWriter<std::io::Stdout>,
    /// ANSI styling (stdout is a terminal).
    pub tty: bool,
    /// Show thoughts.
    pub thoughts: bool,
    /// Emit styles: a terminal without `NO_COLOR` ([`crate::cli::colour`]).
    colour: bool,
    /// The cursor is not at the start of a line.
    mid_line: bool,
    in_thought: bool,
    last_flush: Instant,
}

/// How a turn ended, from `turn_complete`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Cancelled,
    Failed(String),
}

impl Render {
    pub fn new(tty: bool) -> Render {
        Render {
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            tty,
            thoughts: tty,
            colour: crate::cli::colour::on(tty),
            mid_line: false,
            in_thought: false,
            last_flush: Instant::now(),
        }
    }

    /// One `session/update`; returns the outcome for `turn_complete`.
    pub fn update(&mut self, p: &Value) -> Option<Outcome> {
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
        match s("type") {
            "agent_message_chunk" => self.chunk(false, s("text")),
            "agent_thought_chunk" => self.chunk(true, s("text")),
            "tool_call" => {
                let input = p.get("rawInput").map(Value::to_string).unwrap_or_default();
                self.line(&format!(
                    "[tool {} {}]",
                    Shown::line(s("name")),
                    Shown::preview(&input, TOOL_PREVIEW)
                ));
            }
            "tool_result" => {
                self.line(&format!(
                    "[result {}: {}]",
                    Shown::line(s("name")),
                    Shown::preview(s("rawOutput"), TOOL_PREVIEW)
                ));
            }
            "compaction_notice" => {
                let n = p.get("compactedMessages").cloned().unwrap_or_default();
                self.line(&format!(
                    "[context compacted: {n} older messages summarized]"
                ));
            }
            "turn_complete" => {
                self.end_thought();
                let outcome = match s("outcome") {
                    "cancelled" => Outcome::Cancelled,
                    "failed" => Outcome::Failed(s("reason").to_owned()),
                    _ => Outcome::Completed,
                };
                match &outcome {
                    Outcome::Completed => self.finish_line(),
                    Outcome::Cancelled => self.line("[cancelled]"),
                    Outcome::Failed(why) => {
                        self.line(&format!("[failed: {}]", Shown::line(why)));
                    }
                }
                self.flush();
                return Some(outcome);
            }
            // approval_request is asked by the chat loop; unknown types are ignored (§8.5).
            _ => {}
        }
        None
    }

    /// A piece of the answer, or of a thought (`thought`). Thoughts stand
    /// apart: they start on a line of their own, every line of theirs is
    /// prefixed (and dimmed on a terminal), and the answer after them starts
    /// on a new line.
    pub fn chunk(&mut self, thought: bool, text: &str) {
        if !thought {
            self.end_thought();
            self.text(text);
            return;
        }
        if !self.thoughts {
            return;
        }
        if !self.in_thought {
            self.finish_line();
            self.in_thought = true;
            if self.tty {
                self.style(Style::Dim);
            }
        }
        let prefix = if self.tty { THOUGHT_TTY } else { THOUGHT_PLAIN };
        for piece in text.split_inclusive('\n') {
            if !self.mid_line {
                self.put(Shown::line(prefix));
            }
            self.text(piece);
        }
    }

    fn end_thought(&mut self) {
        if self.in_thought {
            self.in_thought = false;
            if self.tty {
                self.style(Style::Reset);
            }
            self.finish_line();
        }
    }

    fn text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        // Control characters from an agent must not drive the terminal.
        self.put(Shown::text(t));
        self.mid_line = !t.ends_with('\n');
    }

    /// The one way text reaches the buffer: already sanitized.
    fn put(&mut self, s: Shown<'_>) {
        let _ = self.out.write_all(s.as_str().as_bytes());
    }

    fn style(&mut self, s: Style) {
        if !self.colour {
            return;
        }
        let code = match s {
            Style::Dim => "\x1b[2m",
            Style::Bold => "\x1b[1m",
            Style::Reset => "\x1b[0m",
        };
        let _ = self.out.write_all(code.as_bytes());
    }

    fn newline(&mut self) {
        self.put(Shown::text("\n"));
    }

    /// A line of its own, after any text in progress (the daemon's text:
    /// sanitized here; it may span lines).
    pub fn line(&mut self, l: &str) {
        self.end_thought_quiet();
        self.finish_line();
        if self.tty {
            self.style(Style::Bold);
        }
        self.put(Shown::text(l));
        if self.tty {
            self.style(Style::Reset);
        }
        self.newline();
    }

    /// A line the person gave on the command line, shown as if typed at
    /// `prompt` (on a terminal; plain mode echoes no typed line).
    pub fn typed(&mut self, prompt: &str, text: &str) {
        if self.tty {
            self.finish_line();
            self.put(Shown::line(prompt));
            self.put(Shown::text(text));
            self.newline();
        }
    }

    /// `error: MESSAGE` on a line of its own (a failed call's message, one line).
    pub fn error(&mut self, msg: &str) {
        self.line(&format!("error: {}", Shown::line(msg)));
    }

    fn end_thought_quiet(&mut self) {
        if self.in_thought && self.tty {
            self.style(Style::Reset);
        }
        self.in_thought = false;
    }

    /// Ends a line in progress.
    pub fn finish_line(&mut self) {
        if self.mid_line {
            self.newline();
            self.mid_line = false;
        }
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
        self.last_flush = Instant::now();
    }

    /// Flushes if a frame has passed since the last flush; else, when output
    /// waits, the instant it is due.
    pub fn flush_soon(&mut self) -> Option<Instant> {
        if self.out.buffer().is_empty() {
            return None;
        }
        let due = self.last_flush + FRAME;
        if Instant::now() >= due {
            self.flush();
            return None;
        }
        Some(due)
    }
}

/// A notice about the client itself (reconnects, refused input), on
/// stderr; one line, sanitized (it may quote the daemon), in one write:
/// stderr is unbuffered, and a reader (a log, a test) sees the whole line
/// or none of it.
pub fn notice(msg: &str) {
    let line = format!("zeroclaw chat: {}\n", Shown::line(msg));
    let _ = std::io::stderr().write_all(line.as_bytes());
}
