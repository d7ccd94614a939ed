//! How a turn looks: answer text streamed as it arrives, thoughts dimmed on
//! a terminal (hidden in plain mode unless `/thoughts` turns them on), tool
//! calls and results as one compact line each, and the turn's outcome.
//! Output is buffered: written at once when the turn ends or a question is
//! asked, else at most once per [`FRAME`] while the answer streams, so a
//! 100,000-chunk turn costs a few dozen writes, not one per chunk.

use std::io::Write;
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";
/// How much of a tool's input or output its line shows.
const TOOL_PREVIEW: usize = 120;
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
                self.line(&format!("[tool {} {}]", s("name"), preview(&input)));
            }
            "tool_result" => {
                self.line(&format!(
                    "[result {}: {}]",
                    s("name"),
                    preview(s("rawOutput"))
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
                    Outcome::Failed(why) => self.line(&format!("[failed: {why}]")),
                }
                self.flush();
                return Some(outcome);
            }
            // approval_request is asked by the chat loop; unknown types are ignored (§8.5).
            _ => {}
        }
        None
    }

    /// A piece of the answer, or of a thought (`thought`).
    pub fn chunk(&mut self, thought: bool, text: &str) {
        if !thought {
            self.end_thought();
        } else if !self.thoughts {
            return;
        } else if !self.in_thought {
            self.in_thought = true;
            if self.tty {
                self.put(DIM);
            } else {
                self.put("(thinking) ");
            }
        }
        self.text(text);
    }

    fn end_thought(&mut self) {
        if self.in_thought {
            self.in_thought = false;
            if self.tty {
                self.put(RESET);
            }
            self.finish_line();
        }
    }

    fn text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        // Control characters from an agent must not drive the terminal.
        let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
        if t.contains(unsafe_char) {
            let clean: String = t
                .chars()
                .map(|c| if unsafe_char(c) { '\u{fffd}' } else { c })
                .collect();
            self.put(&clean);
        } else {
            self.put(t);
        }
        self.mid_line = !t.ends_with('\n');
    }

    fn put(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
    }

    /// A line of its own, after any text in progress.
    pub fn line(&mut self, l: &str) {
        self.end_thought_quiet();
        self.finish_line();
        if self.tty {
            self.put(&format!("{BOLD}{l}{RESET}\n"));
        } else {
            self.put(l);
            self.put("\n");
        }
    }

    fn end_thought_quiet(&mut self) {
        if self.in_thought && self.tty {
            self.put(RESET);
        }
        self.in_thought = false;
    }

    /// Ends a line in progress.
    pub fn finish_line(&mut self) {
        if self.mid_line {
            self.put("\n");
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

/// A notice about the client itself (reconnects, refused input), on stderr.
pub fn notice(msg: &str) {
    let _ = writeln!(std::io::stderr(), "zeroclaw chat: {msg}");
}

fn preview(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= TOOL_PREVIEW {
        return one_line;
    }
    let cut: String = one_line.chars().take(TOOL_PREVIEW).collect();
    format!("{cut}…")
}
