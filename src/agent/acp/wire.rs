//! The ACP wire (JSON-RPC 2.0, one message per line over the agent's
//! stdin/stdout): bounded line reading and encoding (what a line says is
//! [`super::incoming`]'s).
//!
//! The reader never holds more than [`MAX_LINE_BYTES`] of one line: a longer
//! line is a fault of the agent, not a reason to grow without bound.

use bytes::BytesMut;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest line accepted from an agent (a whole `fs/write_text_file`
/// with its content fits; SPEC's frame limit is 8 MiB).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How much of a bad line a log line quotes.
pub const QUOTED_BYTES: usize = 200;

/// Why the agent's stdout can no longer be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFault {
    /// End of file: the agent closed stdout (usually: it exited).
    Eof,
    /// A line longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// A line that is not a JSON-RPC 2.0 message; the text says what and
    /// quotes its start.
    Invalid(String),
    /// The pipe failed.
    Io(String),
}

impl ReadFault {
    /// A sentence for the turn's failure and the log.
    pub fn describe(&self) -> String {
        match self {
            Self::Eof => "the ACP agent closed its stdout".to_owned(),
            Self::TooLong => format!("the ACP agent sent a line over {MAX_LINE_BYTES} bytes"),
            Self::Invalid(what) => format!("the ACP agent sent invalid JSON-RPC: {what}"),
            Self::Io(e) => format!("cannot read the ACP agent's stdout: {e}"),
        }
    }
}

/// How much one read asks of the pipe.
const READ_CHUNK: usize = 64 * 1024;

/// Reads newline-terminated lines, each at most [`MAX_LINE_BYTES`].
///
/// A line is split off the front of the buffer without moving the rest (a
/// fast agent's 64 KiB read holds hundreds of lines), and the next read
/// reuses the buffer once the line is dropped.
pub struct LineReader<R> {
    inner: R,
    buf: BytesMut,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scanned: 0,
        }
    }

    /// The next line without its `\n` (blank lines skipped).
    pub async fn next_line(&mut self) -> Result<BytesMut, ReadFault> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let mut line = self.buf.split_to(self.scanned + pos + 1);
                self.scanned = 0;
                line.truncate(line.len() - 1);
                if line.last() == Some(&b'\r') {
                    line.truncate(line.len() - 1);
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(line);
            }
            self.scanned = self.buf.len();
            if self.buf.len() > MAX_LINE_BYTES {
                return Err(ReadFault::TooLong);
            }
            self.buf.reserve(READ_CHUNK);
            match self.inner.read_buf(&mut self.buf).await {
                Ok(0) => return Err(ReadFault::Eof),
                Ok(_) => {}
                Err(e) => return Err(ReadFault::Io(e.to_string())),
            }
        }
    }
}

/// A request line (with its `\n`).
pub fn request(id: i64, method: &str, params: &Value) -> String {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification line.
pub fn notification(method: &str, params: &Value) -> String {
    line(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// A success answer to the agent's request `id`.
pub fn response(id: &Value, result: &Value) -> String {
    line(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// An error answer to the agent's request `id`.
pub fn error_response(id: &Value, code: i64, message: &str) -> String {
    line(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

fn line(v: &Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_blank_lines_skipped_and_long_lines_refused() {
        let data = b"a\r\n\n  \nb\nc".to_vec();
        let mut r = LineReader::new(&data[..]);
        assert_eq!(r.next_line().await.unwrap(), &b"a"[..]);
        assert_eq!(r.next_line().await.unwrap(), &b"b"[..]);
        assert_eq!(r.next_line().await, Err(ReadFault::Eof));
        let long = vec![b'x'; MAX_LINE_BYTES + 64 * 1024];
        let mut r = LineReader::new(&long[..]);
        assert_eq!(r.next_line().await, Err(ReadFault::TooLong));
    }
}
