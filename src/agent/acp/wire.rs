//! The ACP wire (JSON-RPC 2.0, one message per line over the agent's
//! stdin/stdout): bounded line reading, message classification, encoding.
//!
//! The reader never holds more than [`MAX_LINE_BYTES`] of one line: a longer
//! line is a fault of the agent, not a reason to grow without bound.

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest line accepted from an agent (a whole `fs/write_text_file`
/// with its content fits; SPEC's frame limit is 8 MiB).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How much of a bad line a log line quotes.
const QUOTED_BYTES: usize = 200;

/// One message from the agent.
#[derive(Debug)]
pub enum Incoming {
    /// The answer to one of our requests (`result` or `error`).
    Response {
        id: i64,
        result: Result<Value, WireError>,
    },
    /// A request of the agent; it must be answered.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification of the agent.
    Notification { method: String, params: Value },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct WireError {
    pub code: i64,
    pub message: String,
}

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

/// Reads newline-terminated lines, each at most [`MAX_LINE_BYTES`].
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            scanned: 0,
        }
    }

    /// The next line without its `\n` (blank lines skipped).
    pub async fn next_line(&mut self) -> Result<Vec<u8>, ReadFault> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                self.scanned = 0;
                if line.last() == Some(&b'\r') {
                    line.pop();
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
            let mut chunk = [0u8; 32 * 1024];
            match self.inner.read(&mut chunk).await {
                Ok(0) => return Err(ReadFault::Eof),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(ReadFault::Io(e.to_string())),
            }
        }
    }
}

/// Classifies one line.
pub fn parse(line: &[u8]) -> Result<Incoming, ReadFault> {
    let invalid = |what: &str| {
        let shown = String::from_utf8_lossy(&line[..line.len().min(QUOTED_BYTES)]).into_owned();
        ReadFault::Invalid(format!("{what}: {shown:?}"))
    };
    let mut v: Value = serde_json::from_slice(line).map_err(|_| invalid("not JSON"))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(invalid("not an object"));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("no \"jsonrpc\": \"2.0\""));
    }
    let id = obj.remove("id");
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(invalid("\"method\" is not a string")),
        None => {
            // Our ids are integers; an answer to anything else is not ours.
            let Some(id) = id.as_ref().and_then(Value::as_i64) else {
                return Err(invalid("a response without one of our ids"));
            };
            let result = match (obj.remove("result"), obj.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e)) => Err(WireError {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                }),
                _ => return Err(invalid("a response needs exactly one of result and error")),
            };
            Ok(Incoming::Response { id, result })
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
        assert_eq!(r.next_line().await.unwrap(), b"a");
        assert_eq!(r.next_line().await.unwrap(), b"b");
        assert_eq!(r.next_line().await, Err(ReadFault::Eof));
        let long = vec![b'x'; MAX_LINE_BYTES + 64 * 1024];
        let mut r = LineReader::new(&long[..]);
        assert_eq!(r.next_line().await, Err(ReadFault::TooLong));
    }

    #[test]
    fn messages_are_classified() {
        let m = parse(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#).unwrap();
        assert!(matches!(
            m,
            Incoming::Response {
                id: 3,
                result: Ok(_)
            }
        ));
        let m = parse(br#"{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file"}"#).unwrap();
        assert!(matches!(m, Incoming::Request { ref method, .. } if method == "fs/read_text_file"));
        let m = parse(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"no"}}"#);
        assert!(matches!(
            m,
            Ok(Incoming::Response {
                id: 4,
                result: Err(WireError { code: -32000, .. })
            })
        ));
        for bad in [
            &b"garbage"[..],
            b"[1]",
            br#"{"id":1,"result":1}"#,
            br#"{"jsonrpc":"2.0","id":"s","result":1}"#,
        ] {
            assert!(matches!(parse(bad), Err(ReadFault::Invalid(_))), "{bad:?}");
        }
    }
}
