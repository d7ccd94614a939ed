//! How a turn looks: answer text streamed as it arrives, thoughts dimmed on
//! a terminal (hidden in plain mode unless `/thoughts` turns them on), tool
//! calls and results as one compact line each, and the turn's outcome.
//! Output is buffered and flushed when the daemon has nothing more queued,
//! so a 100,000-chunk turn costs a write per burst, not per chunk.

use std::io::Write;

use serde_json::Value;

const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";
/// How much of a tool's input or output its line shows.
const TOOL_PREVIEW: usize = 120;

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
        }
    }

    /// One `session/update`; returns the outcome for `turn_complete`.
    pub fn update(&mut self, p: &Value) -> Option<Outcome> {
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
        match s("type") {
            "agent_message_chunk" => {
                self.end_thought();
                self.text(s("text"));
            }
            "agent_thought_chunk" if self.thoughts => {
                if !self.in_thought {
                    self.in_thought = true;
                    if self.tty {
                        self.put(DIM);
                    } else {
                        self.put("(thinking) ");
                    }
                }
                self.text(s("text"));
            }
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
        let clean: String = t
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        self.put(&clean);
        self.mid_line = !clean.ends_with('\n');
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
