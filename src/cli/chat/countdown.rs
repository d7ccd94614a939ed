//! The approval prompt's countdown, redrawn in place while the person
//! types: the line editor's helper draws the prompt with the seconds left
//! at each redraw ([`Clock`]), and a ticker thread asks for a redraw once a
//! second through rustyline's external printer ([`Ticker`]).
//!
//! The external printer writes a message above the prompt and redraws it;
//! the message here is "one row up, then a line end", which lands where it
//! started, so nothing is printed and only the prompt is redrawn. The
//! number keeps its width (padded), so the prompt's width, which rustyline
//! measured on the prompt as given, stays true.

use std::borrow::Cow;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustyline::ExternalPrinter;

/// Where in a prompt the seconds left are, and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Countdown {
    pub deadline: Instant,
    /// Byte offset of the number in the prompt.
    pub at: usize,
    /// Its width in bytes (ASCII digits, right-aligned).
    pub width: usize,
}

impl Countdown {
    /// The seconds left, rounded up (120 for the first second).
    pub fn left(&self) -> u64 {
        let d = self.deadline.saturating_duration_since(Instant::now());
        d.as_secs() + u64::from(d.subsec_nanos() > 0)
    }

    /// `prompt` with the number replaced by the seconds left now.
    fn draw(&self, prompt: &str) -> Option<String> {
        let end = self.at.checked_add(self.width)?;
        let (head, tail) = (prompt.get(..self.at)?, prompt.get(end..)?);
        Some(format!("{head}{:>w$}{tail}", self.left(), w = self.width))
    }
}

/// The line editor's helper: it only redraws a counting prompt.
#[derive(Default)]
pub struct Clock {
    /// The prompt being read and its countdown, while one is read.
    pub tick: Option<(String, Countdown)>,
}

impl rustyline::highlight::Highlighter for Clock {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _: bool) -> Cow<'b, str> {
        match &self.tick {
            Some((p, c)) if p == prompt => c.draw(prompt).map_or(Cow::Borrowed(prompt), Cow::Owned),
            _ => Cow::Borrowed(prompt),
        }
    }
}

impl rustyline::completion::Completer for Clock {
    type Candidate = String;
}

impl rustyline::hint::Hinter for Clock {
    type Hint = String;
}

impl rustyline::validate::Validator for Clock {}

impl rustyline::Helper for Clock {}

/// Asks for a redraw each second until dropped or the countdown ends.
pub struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// In place: up one row, then a line end (CR LF) back to where it was.
const REDRAW: &str = "\x1b[A\n";

impl Ticker {
    pub fn start(mut printer: impl ExternalPrinter + Send + 'static, c: Countdown) -> Ticker {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut shown = c.left();
            while shown > 0 {
                // Wake when the rounded-up number changes.
                let to_next = c
                    .deadline
                    .saturating_duration_since(Instant::now())
                    .checked_sub(Duration::from_secs(shown - 1))
                    .unwrap_or_default();
                match stopped.recv_timeout(to_next + Duration::from_millis(5)) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                shown = c.left();
                if printer.print(REDRAW.to_owned()).is_err() {
                    return;
                }
            }
        });
        Ticker {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_number_keeps_its_width() {
        let c = Countdown {
            deadline: Instant::now() + Duration::from_millis(99_500),
            at: 1,
            width: 3,
        };
        assert_eq!(c.left(), 100);
        assert_eq!(c.draw("(120 s left)").as_deref(), Some("(100 s left)"));
        let c = Countdown {
            deadline: Instant::now() + Duration::from_millis(9_500),
            ..c
        };
        assert_eq!(c.draw("(120 s left)").as_deref(), Some("( 10 s left)"));
        let gone = Countdown {
            deadline: Instant::now(),
            ..c
        };
        assert_eq!(gone.draw("(120 s left)").as_deref(), Some("(  0 s left)"));
        // Out of range: nothing drawn (the prompt stays as given).
        assert_eq!(Countdown { at: 11, ..c }.draw("(120 s left)"), None);
    }
}
