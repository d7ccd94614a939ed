//! The server-sent events of a streamed answer, split incrementally from
//! the body's bytes by the rules of the SSE format (WHATWG HTML §9.2) that a
//! chat completion stream uses: lines end at CR, LF or CRLF; the `data:`
//! lines of one event are joined with `\n`; a blank line ends the event;
//! comments and the other fields (`event`, `id`, `retry`) are skipped; a
//! leading BOM is dropped. An event's data must be UTF-8, and no event may
//! grow past [`MAX_EVENT_BYTES`].
//!
//! Why not `eventsource-stream`: it re-allocated its whole buffer for every
//! line it split (`String::split_off`) and three `String`s per event, which
//! made SSE splitting the largest cost per token of the daemon
//! (docs/performance.md). Here each body byte is copied once, into the
//! buffer; an event of one `data:` line (every OpenAI-compatible server's
//! kind) is handed out as a slice of it, and only a multi-line event is
//! joined into a second buffer.

use std::ops::Range;

use super::delta::MAX_ARGUMENTS_BYTES;

/// Bound on one event (its lines and data together): a tool call's whole
/// arguments in one event, JSON-escaped, fit with room to spare; a server
/// that never ends a line cannot grow the daemon past it.
pub const MAX_EVENT_BYTES: usize = 4 * MAX_ARGUMENTS_BYTES;

/// UTF-8's byte order mark, skipped at the start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why the stream is not a valid event stream.
#[derive(Debug, PartialEq, Eq)]
pub enum SseError {
    /// An event's data is not UTF-8 (the offset of the first bad byte in it).
    NotUtf8(usize),
    /// An event grew past [`MAX_EVENT_BYTES`].
    TooLarge,
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotUtf8(at) => write!(f, "event data is not UTF-8 (byte {at})"),
            Self::TooLarge => write!(f, "an event exceeds {MAX_EVENT_BYTES} bytes"),
        }
    }
}

/// A complete event, to be read with [`Splitter::data`] before the next
/// [`Splitter::push`] or [`Splitter::next_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef {
    /// Its data lies in the buffer at `start..end` (one `data:` line), or is
    /// the joined data (`start == end == usize::MAX`).
    start: usize,
    end: usize,
}

impl EventRef {
    const JOINED: EventRef = EventRef {
        start: usize::MAX,
        end: usize::MAX,
    };
}

/// The data of the event being read.
#[derive(Debug, Default)]
enum Data {
    /// No `data:` line yet.
    #[default]
    None,
    /// One `data:` line, at this range of the buffer.
    One(Range<usize>),
    /// Several, joined in `joined`.
    Joined,
}

/// The incremental splitter: body bytes in, events out.
#[derive(Debug, Default)]
pub struct Splitter {
    /// Body bytes; `buf[pos..]` is not split into lines yet.
    buf: Vec<u8>,
    pos: usize,
    /// `buf[pos..scanned]` holds no line end (a long line is scanned once).
    scanned: usize,
    data: Data,
    joined: Vec<u8>,
    /// The last line ended with CR: an LF first in the next bytes is its end too.
    after_cr: bool,
    /// The BOM check is done.
    started: bool,
}

impl Splitter {
    /// Appends body bytes. Lines already split are dropped from the buffer
    /// first (the data of a pending one-line event moves to `joined`).
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            if let Data::One(r) = &self.data {
                self.joined.clear();
                self.joined.extend_from_slice(&self.buf[r.clone()]);
                self.data = Data::Joined;
            }
            self.buf.drain(..self.pos);
            self.scanned = self.scanned.saturating_sub(self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, if the bytes pushed hold one.
    pub fn next_event(&mut self) -> Result<Option<EventRef>, SseError> {
        if !self.started {
            let head = &self.buf[self.pos..];
            if head.len() < BOM.len() && BOM.starts_with(head) {
                return Ok(None);
            }
            if head.starts_with(BOM) {
                self.pos += BOM.len();
            }
            self.started = true;
        }
        loop {
            let rest = &self.buf[self.pos..];
            if self.after_cr && !rest.is_empty() {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    self.pos += 1;
                    continue;
                }
            }
            let from = self.scanned.saturating_sub(self.pos);
            let Some(len) = memchr::memchr2(b'\n', b'\r', &rest[from..]).map(|i| from + i) else {
                if rest.len() + self.data_len() > MAX_EVENT_BYTES {
                    return Err(SseError::TooLarge);
                }
                self.scanned = self.buf.len();
                return Ok(None);
            };
            let line = self.pos..self.pos + len;
            self.after_cr = rest[len] == b'\r';
            self.pos += len + 1;
            if line.is_empty() {
                if let Some(event) = self.dispatch() {
                    return Ok(Some(event));
                }
                continue;
            }
            self.field(line)?;
        }
    }

    /// The data of `event`, as returned by the last [`Self::next_event`]
    /// (checked here, once: it must be UTF-8).
    pub fn data(&self, event: EventRef) -> Result<&str, SseError> {
        let bytes = if event == EventRef::JOINED {
            &self.joined[..]
        } else {
            &self.buf[event.start..event.end]
        };
        std::str::from_utf8(bytes).map_err(|e| SseError::NotUtf8(e.valid_up_to()))
    }

    fn data_len(&self) -> usize {
        match &self.data {
            Data::None => 0,
            Data::One(r) => r.len(),
            Data::Joined => self.joined.len(),
        }
    }

    /// Acts on one non-empty line at `line` of the buffer.
    fn field(&mut self, line: Range<usize>) -> Result<(), SseError> {
        let bytes = &self.buf[line.clone()];
        let (name, value) = match memchr::memchr(b':', bytes) {
            // A comment.
            Some(0) => return Ok(()),
            Some(colon) => {
                let skip = usize::from(bytes.get(colon + 1) == Some(&b' '));
                (&bytes[..colon], line.start + colon + 1 + skip..line.end)
            }
            None => (bytes, line.end..line.end),
        };
        if name != b"data" {
            return Ok(());
        }
        match std::mem::take(&mut self.data) {
            Data::None => self.data = Data::One(value),
            Data::One(first) => {
                self.joined.clear();
                self.joined.extend_from_slice(&self.buf[first]);
                self.append(value);
            }
            Data::Joined => self.append(value),
        }
        if self.data_len() > MAX_EVENT_BYTES {
            return Err(SseError::TooLarge);
        }
        Ok(())
    }

    fn append(&mut self, value: Range<usize>) {
        self.joined.push(b'\n');
        self.joined.extend_from_slice(&self.buf[value]);
        self.data = Data::Joined;
    }

    /// Ends the event at a blank line: its data, or `None` if it had none.
    fn dispatch(&mut self) -> Option<EventRef> {
        match std::mem::take(&mut self.data) {
            Data::None => None,
            Data::One(r) => Some(EventRef {
                start: r.start,
                end: r.end,
            }),
            Data::Joined => Some(EventRef::JOINED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's data, the bytes pushed in pieces of `step` bytes.
    fn split(body: &[u8], step: usize) -> Result<Vec<String>, SseError> {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for piece in body.chunks(step.max(1)) {
            s.push(piece);
            while let Some(e) = s.next_event()? {
                out.push(s.data(e)?.to_owned());
            }
        }
        Ok(out)
    }

    /// [`split`] with every piece size from 1 to the whole body: the
    /// events must not depend on where the body was cut.
    fn events(body: &[u8]) -> Vec<String> {
        let whole = split(body, body.len()).unwrap();
        for step in 1..body.len() {
            assert_eq!(split(body, step).unwrap(), whole, "pieces of {step}");
        }
        whole
    }

    #[test]
    fn lf_cr_and_crlf_all_end_lines() {
        let want = ["a", "b", "c", "d"];
        assert_eq!(events(b"data: a\n\ndata: b\n\n"), want[..2]);
        assert_eq!(events(b"data: a\r\rdata: b\r\r"), want[..2]);
        assert_eq!(events(b"data: a\r\n\r\ndata: b\r\n\r\n"), want[..2]);
        assert_eq!(
            events(b"data: a\n\rdata: b\r\n\ndata: c\r\r\ndata: d\n\r\n"),
            want
        );
    }

    #[test]
    fn data_lines_are_joined_with_lf_and_one_space_is_stripped() {
        assert_eq!(
            events(b"data: one\ndata:two\ndata:  three\n\n"),
            ["one\ntwo\n three"]
        );
        assert_eq!(events(b"data\ndata\n\n"), ["\n"]);
        assert_eq!(events(b"data:\n\n"), [""]);
        // A one-line event cut across pushes, then a multi-line one.
        assert_eq!(
            events(b"data: {\"a\":1}\n\ndata: x\ndata: y\n\n"),
            ["{\"a\":1}", "x\ny"]
        );
    }

    #[test]
    fn comments_other_fields_and_empty_events_are_skipped() {
        let body = b": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n\n\nfoo\n\n";
        assert_eq!(events(body), ["x"]);
    }

    #[test]
    fn done_and_a_bom_and_an_unfinished_event() {
        assert_eq!(
            events(b"\xEF\xBB\xBFdata: a\n\ndata: [DONE]\n\n"),
            ["a", "[DONE]"]
        );
        // Only the first BOM is dropped; the last event has no blank line yet.
        assert_eq!(
            events(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"),
            Vec::<String>::new()
        );
        assert_eq!(events(b"data: a\n\ndata: b\n"), ["a"]);
    }

    #[test]
    fn data_that_is_not_utf8_is_an_error_in_any_piece() {
        let body = b"data: ok\n\ndata: caf\xC3\n\n";
        for step in 1..body.len() {
            assert_eq!(
                split(body, step),
                Err(SseError::NotUtf8(3)),
                "pieces of {step}"
            );
        }
        // A character split across pushes is fine.
        assert_eq!(events("data: café\n\n".as_bytes()), ["café"]);
        // Bytes outside data lines are never decoded.
        assert_eq!(events(b": \xFF\n\ndata: a\n\n"), ["a"]);
    }

    /// Pushes `head`, then `piece` until the splitter fails: how many
    /// pieces it took, and the error.
    fn pushes_until_error(head: &[u8], piece: &[u8]) -> (usize, Option<SseError>) {
        let mut s = Splitter::default();
        s.push(head);
        for n in 1..=(MAX_EVENT_BYTES / piece.len() + 1) {
            s.push(piece);
            if let Err(e) = s.next_event() {
                return (n, Some(e));
            }
        }
        (0, None)
    }

    #[test]
    fn an_endless_line_or_event_is_bounded() {
        let mib = vec![b'x'; 1 << 20];
        let pieces = MAX_EVENT_BYTES >> 20;
        // One line that never ends, then an event of lines that never ends:
        // both fail at the piece that takes them past the bound.
        assert_eq!(
            pushes_until_error(b"data: ", &mib),
            (pieces, Some(SseError::TooLarge))
        );
        let line = [b"data: ".as_slice(), &mib, b"\n"].concat();
        assert_eq!(
            pushes_until_error(b"", &line),
            (pieces, Some(SseError::TooLarge))
        );
    }
}
