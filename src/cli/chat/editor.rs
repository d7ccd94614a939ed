//! Where typed lines come from: rustyline (history, editing) when stdin and
//! stdout are a terminal, else stdin line by line. Either runs on a thread
//! of its own and hands over one line per [`Input::read`], so the chat loop
//! stays async and a prompt is only read when the loop asks for one (an
//! approval's answer is the next line, in scripts too).

use std::io::BufRead;

use rustyline::history::DefaultHistory;
use tokio::sync::mpsc;

use super::countdown::{Clock, Countdown, Ticker};
use crate::shown::Shown;

/// The line editor, with the helper that redraws a countdown.
type Editor = rustyline::Editor<Clock, DefaultHistory>;

/// The longest typed line taken as a prompt; a longer paste is refused
/// (read to its end and dropped, so it never stalls the terminal).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line; `lossy` when it was not valid UTF-8 and bytes were replaced.
    Text { text: String, lossy: bool },
    /// A line over [`MAX_LINE_BYTES`] (its length), dropped.
    TooLong(usize),
    /// Bytes that are not UTF-8 on a terminal: the line being edited was
    /// dropped with the rest of its paste (the editor cannot repair it).
    NotUtf8,
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of stdin.
    Eof,
}

/// What a read is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The chat's prompt: recorded in the history; keys typed ahead of it
    /// (during the turn before) are its.
    Prompt,
    /// The first answer to a question of the daemon's: on a terminal, keys
    /// typed before the question showed are dropped (as sudo does before a
    /// password), since they were meant for the prompt and must never
    /// approve a tool.
    Question,
    /// A later answer to the same question (a form's next field, a retry).
    FollowUp,
}

struct Ask {
    prompt: String,
    purpose: Purpose,
    /// Seconds left shown in the prompt, redrawn each second (a terminal only).
    countdown: Option<Countdown>,
}

/// The input thread's handle.
pub struct Input {
    asks: std::sync::mpsc::Sender<Ask>,
    lines: mpsc::Receiver<Line>,
    /// A line was asked for and not yet taken: a read dropped by a `select!`
    /// (the chat watching its connection at the prompt) takes it later.
    asked: bool,
}

impl Input {
    /// Starts the input thread: rustyline if `tty`, else plain stdin.
    pub fn start(tty: bool) -> Input {
        let (asks, ask_rx) = std::sync::mpsc::channel::<Ask>();
        let (tx, lines) = mpsc::channel(1);
        std::thread::spawn(move || {
            let mut source = Source::new(tty);
            while let Ok(ask) = ask_rx.recv() {
                let line = source.read(&ask);
                let end = line == Line::Eof;
                if tx.blocking_send(line).is_err() || end {
                    return;
                }
            }
        });
        Input {
            asks,
            lines,
            asked: false,
        }
    }

    /// The next line, shown `prompt` (on a terminal), read for `purpose`.
    /// The prompt is [`Shown`]: a question quoting the daemon is sanitized
    /// before the editor draws it. Cancel-safe: dropped before its line
    /// came, the next call waits for that same line (its prompt is already
    /// showing).
    pub async fn read(&mut self, prompt: &Shown<'_>, purpose: Purpose) -> Line {
        self.read_with(prompt, purpose, None).await
    }

    /// [`Input::read`] of a prompt that shows the seconds left (at
    /// `countdown`), redrawn once a second on a terminal.
    pub async fn read_counting(
        &mut self,
        prompt: &Shown<'_>,
        purpose: Purpose,
        countdown: Countdown,
    ) -> Line {
        self.read_with(prompt, purpose, Some(countdown)).await
    }

    async fn read_with(
        &mut self,
        prompt: &Shown<'_>,
        purpose: Purpose,
        countdown: Option<Countdown>,
    ) -> Line {
        if !self.asked {
            let ask = Ask {
                prompt: prompt.as_str().to_owned(),
                purpose,
                countdown,
            };
            if self.asks.send(ask).is_err() {
                return Line::Eof;
            }
            self.asked = true;
        }
        let line = self.lines.recv().await.unwrap_or(Line::Eof);
        self.asked = false;
        line
    }

    /// Whether the editor is reading a line (its prompt is on the screen).
    pub fn reading(&self) -> bool {
        self.asked
    }
}

/// Ctrl-C on a line with text clears the line; on an empty line it is the
/// editor's interrupt (which leaves the chat).
struct ClearOrInterrupt;

impl rustyline::ConditionalEventHandler for ClearOrInterrupt {
    fn handle(
        &self,
        _: &rustyline::Event,
        _: rustyline::RepeatCount,
        _: bool,
        ctx: &rustyline::EventContext,
    ) -> Option<rustyline::Cmd> {
        (!ctx.line().is_empty()).then_some(rustyline::Cmd::Kill(rustyline::Movement::WholeLine))
    }
}

enum Source {
    Editor(Box<Editor>),
    Stdin(std::io::BufReader<std::io::Stdin>),
}

impl Source {
    fn new(tty: bool) -> Source {
        if tty {
            if let Ok(mut ed) = Editor::new() {
                ed.set_helper(Some(Clock::default()));
                ed.bind_sequence(
                    rustyline::KeyEvent::ctrl('C'),
                    rustyline::EventHandler::Conditional(Box::new(ClearOrInterrupt)),
                );
                return Source::Editor(Box::new(ed));
            }
        }
        Source::Stdin(std::io::BufReader::new(std::io::stdin()))
    }

    fn read(&mut self, ask: &Ask) -> Line {
        if matches!(self, Source::Editor(_)) && ask.purpose == Purpose::Question {
            // Whole typed lines are counted; a half-typed one goes too.
            let typed = super::typeahead::input_waiting();
            self.drop_pending_input();
            if typed {
                super::render::notice(
                    "keys typed before this question were dropped: answer it afresh",
                );
            }
        }
        match self {
            Source::Editor(ed) => {
                let prompt = show_head(&ask.prompt);
                // The countdown's offset in the line the editor draws.
                let shift = ask.prompt.len() - prompt.len();
                let countdown = ask.countdown.and_then(|c| {
                    let at = c.at.checked_sub(shift)?;
                    Some(Countdown { at, ..c })
                });
                let ticker = countdown.and_then(|c| {
                    if let Some(h) = ed.helper_mut() {
                        h.tick = Some((prompt.to_owned(), c));
                    }
                    Some(Ticker::start(ed.create_external_printer().ok()?, c))
                });
                let line = read_line(ed, prompt, ask.purpose);
                drop(ticker);
                if let Some(h) = ed.helper_mut() {
                    h.tick = None;
                }
                if line == Line::NotUtf8 {
                    // The editor stopped in the middle of it; the rest must
                    // not become a prompt.
                    self.drop_pending_input();
                }
                line
            }
            Source::Stdin(r) => {
                // Plain mode shows questions (not the chat prompt) as lines.
                if !ask.prompt.is_empty() {
                    println!("{}", ask.prompt.trim_end());
                }
                read_bounded(r)
            }
        }
    }
}

/// One line from the editor, showing `prompt`.
fn read_line(ed: &mut Box<Editor>, prompt: &str, purpose: Purpose) -> Line {
    use rustyline::error::{ReadlineError, Signal};
    loop {
        match ed.readline(prompt) {
            Ok(text) if text.len() > MAX_LINE_BYTES => return Line::TooLong(text.len()),
            Ok(text) => {
                if purpose == Purpose::Prompt && !text.trim().is_empty() {
                    let _ = ed.add_history_entry(text.as_str());
                }
                return Line::Text { text, lossy: false };
            }
            Err(ReadlineError::Interrupted) => return Line::Interrupted,
            Err(ReadlineError::Eof) => return Line::Eof,
            // A resize mid-read: read on, the editor redraws.
            Err(ReadlineError::Signal(Signal::Resize)) => continue,
            // SIGINT from outside (`kill -INT`), as Ctrl-C.
            #[cfg(unix)]
            Err(ReadlineError::Signal(Signal::Interrupt)) => return Line::Interrupted,
            // Invalid UTF-8 typed or pasted (the caller drops the rest).
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Line::NotUtf8;
            }
            Err(_) => return Line::Eof,
        }
    }
}

impl Source {
    /// Drops what is typed but not yet read: the kernel's queue and the
    /// bytes the editor read ahead (a new editor, with the history copied
    /// over). The old editor is dropped before the new one is made: one
    /// owner of the terminal at a time.
    fn drop_pending_input(&mut self) {
        super::typeahead::drop_queued();
        let Source::Editor(old) = self else {
            return;
        };
        let history: Vec<String> = old.history().into_iter().map(|e| e.to_owned()).collect();
        *self = Source::Stdin(std::io::BufReader::new(std::io::stdin()));
        *self = Source::new(true);
        if let Source::Editor(fresh) = self {
            for entry in &history {
                let _ = fresh.add_history_entry(entry.as_str());
            }
        }
    }
}

/// Prints all but the last line of a prompt; returns the last (rustyline
/// redraws only one line).
fn show_head(prompt: &str) -> &str {
    match prompt.rsplit_once('\n') {
        Some((head, tail)) => {
            println!("{head}");
            tail
        }
        None => prompt,
    }
}

/// One line of at most [`MAX_LINE_BYTES`], the rest of a longer one
/// consumed and dropped.
pub fn read_bounded(r: &mut impl BufRead) -> Line {
    let mut buf = Vec::new();
    let mut total = 0usize;
    loop {
        let (done, used) = match r.fill_buf() {
            Ok([]) if total == 0 => return Line::Eof,
            Ok([]) => (true, 0),
            Ok(avail) => {
                let (piece, done) = match memchr_nl(avail) {
                    Some(i) => (&avail[..i], true),
                    None => (avail, false),
                };
                total += piece.len();
                if buf.len() + piece.len() <= MAX_LINE_BYTES {
                    buf.extend_from_slice(piece);
                }
                (
                    done,
                    piece.len() + usize::from(done && piece.len() < avail.len()),
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Line::Eof,
        };
        r.consume(used);
        if done {
            break;
        }
    }
    if total > MAX_LINE_BYTES {
        return Line::TooLong(total);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    match String::from_utf8(buf) {
        Ok(text) => Line::Text { text, lossy: false },
        Err(e) => Line::Text {
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            lossy: true,
        },
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Line {
        Line::Text {
            text: s.into(),
            lossy: false,
        }
    }

    #[test]
    fn bounded_lines() {
        let mut r = std::io::Cursor::new(b"one\r\ntwo\nlast".to_vec());
        assert_eq!(read_bounded(&mut r), text("one"));
        assert_eq!(read_bounded(&mut r), text("two"));
        assert_eq!(read_bounded(&mut r), text("last"));
        assert_eq!(read_bounded(&mut r), Line::Eof);
    }

    #[test]
    fn long_and_invalid_lines() {
        let mut data = vec![b'x'; MAX_LINE_BYTES + 10];
        data.extend_from_slice(b"\n\xff\xfeok\nafter\n");
        let mut r = std::io::BufReader::with_capacity(4096, std::io::Cursor::new(data));
        assert_eq!(read_bounded(&mut r), Line::TooLong(MAX_LINE_BYTES + 10));
        assert_eq!(
            read_bounded(&mut r),
            Line::Text {
                text: "\u{fffd}\u{fffd}ok".into(),
                lossy: true
            }
        );
        assert_eq!(read_bounded(&mut r), text("after"));
    }
}
