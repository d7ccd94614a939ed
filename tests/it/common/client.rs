//! The raw client: NDJSON over the real endpoint (a Unix socket, or a named
//! pipe on Windows: [`super::endpoint`]), bytes exactly as given and lines
//! exactly as received, every read bounded.

use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::endpoint::{self, Stream};
use super::rpc::Frame;
use super::RECV_TIMEOUT;

/// Why no line arrived.
#[derive(Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Nothing complete before the deadline (the bytes of a partial line, if any).
    Timeout(Vec<u8>),
    /// The daemon closed the connection (with the bytes of an unterminated line, if any).
    Eof(Vec<u8>),
    /// The read failed.
    Io(io::ErrorKind),
}

/// An NDJSON client over the real endpoint: the raw bytes here, the
/// JSON-RPC calls in `rpc.rs`, the session helpers in `sessions.rs`.
#[derive(Debug)]
pub struct Client {
    pub stream: Stream,
    /// Frames read while waiting for something else, oldest first: the
    /// JSON-RPC reads (`rpc.rs`) take from here before the socket; the raw
    /// reads here do not.
    pub stash: VecDeque<Frame>,
    buf: Vec<u8>,
    probes: u64,
    write_closed: bool,
}

impl Client {
    /// Connects; panics on failure.
    pub fn connect(path: &Path) -> Self {
        Self::try_connect(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()))
    }

    pub fn try_connect(path: &Path) -> io::Result<Self> {
        Ok(Self::over(endpoint::connect(path)?))
    }

    /// A client over an already connected stream.
    pub fn over(stream: Stream) -> Self {
        Self {
            stream,
            stash: VecDeque::new(),
            buf: Vec::new(),
            probes: 0,
            write_closed: false,
        }
    }

    /// Sends bytes exactly as given.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("writing to the daemon");
    }

    /// Sends `line` followed by `\n`.
    pub fn send_line(&mut self, line: &str) {
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        self.send_raw(&b);
    }

    /// Sends a JSON value as one frame.
    pub fn send_json(&mut self, v: &Value) {
        self.send_line(&v.to_string());
    }

    /// Sends a request and returns the next frame (callers use this only
    /// where no other frame can come first).
    pub fn call(&mut self, method: &str, params: Value, id: Value) -> Value {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}));
        self.recv_json()
    }

    /// Half-closes the write side (the daemon sees end of stream). Unix
    /// only: a named pipe has no half-close.
    pub fn shutdown_write(&mut self) {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown(Write)");
        self.write_closed = true;
    }

    /// The next line (without its `\n`), or why none came within `timeout`.
    pub fn try_recv_line(&mut self, timeout: Duration) -> Result<String, RecvError> {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
                line.pop();
                return Ok(String::from_utf8(line).expect("the daemon wrote invalid UTF-8"));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RecvError::Timeout(self.buf.clone()));
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            self.stream.set_read_timeout(Some(wait)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(RecvError::Eof(std::mem::take(&mut self.buf))),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(RecvError::Eof(std::mem::take(&mut self.buf)))
                }
                Err(e) => return Err(RecvError::Io(e.kind())),
            }
        }
    }

    /// The next line; panics if none arrives within [`RECV_TIMEOUT`].
    pub fn recv_line(&mut self) -> String {
        match self.try_recv_line(RECV_TIMEOUT) {
            Ok(l) => l,
            Err(e) => panic!("expected a frame from the daemon, got {}", describe(&e)),
        }
    }

    /// The next line as JSON.
    pub fn recv_json(&mut self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("frame is not JSON ({e}): {line}"))
    }

    /// Asserts that no byte arrives within `window` (the connection may stay open).
    pub fn expect_silence(&mut self, window: Duration) {
        match self.try_recv_line(window) {
            Err(RecvError::Timeout(partial)) if partial.is_empty() => {}
            Ok(l) => panic!("expected silence, got a frame: {l}"),
            Err(e) => panic!("expected silence, got {}", describe(&e)),
        }
    }

    /// Asserts that nothing was answered to what was sent so far: sends a
    /// probe request (an unknown method, answered `-32601` in every state)
    /// and requires its answer to be the very next frame. Frames are read
    /// and dispatched in order, so any answer owed to an earlier frame of a
    /// synchronously answered method would come first.
    pub fn expect_nothing_before_probe(&mut self) {
        self.probes += 1;
        let id = format!("zc-test-probe-{}", self.probes);
        self.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"zc-test/probe","id":"{id}"}}"#
        ));
        let line = self.recv_line();
        let expected = format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"Unknown method: zc-test/probe"}},"id":"{id}"}}"#
        );
        assert_eq!(
            line, expected,
            "expected no answer before the probe's, got another frame"
        );
    }

    /// Asserts that the daemon closes the connection within `timeout`
    /// without sending anything more.
    pub fn expect_eof(&mut self, timeout: Duration) {
        match self.try_recv_line(timeout) {
            Err(RecvError::Eof(rest)) if rest.is_empty() => {}
            Ok(l) => panic!("expected end of stream, got a frame: {l}"),
            Err(e) => panic!("expected end of stream, got {}", describe(&e)),
        }
    }

    /// `initialize` with protocol version 1; returns the result.
    pub fn initialize(&mut self) -> Value {
        let v = self.call("initialize", json!({"protocolVersion": 1}), json!("init"));
        assert_eq!(v["id"], "init", "initialize answer: {v}");
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        v["result"].clone()
    }

    /// `status`; returns the result.
    pub fn status(&mut self) -> Value {
        let v = self.call("status", json!({}), json!("status"));
        assert_eq!(v["id"], "status", "status answer: {v}");
        assert!(v.get("result").is_some(), "status failed: {v}");
        v["result"].clone()
    }

    /// Whether the write side was half-closed.
    pub fn write_closed(&self) -> bool {
        self.write_closed
    }
}

/// Human-readable form of a receive failure.
pub fn describe(e: &RecvError) -> String {
    match e {
        RecvError::Timeout(p) if p.is_empty() => "nothing (timed out)".into(),
        RecvError::Timeout(p) => format!(
            "a partial frame and then nothing: {:?}",
            String::from_utf8_lossy(p)
        ),
        RecvError::Eof(p) if p.is_empty() => "end of stream".into(),
        RecvError::Eof(p) => format!(
            "an unterminated frame and end of stream: {:?}",
            String::from_utf8_lossy(p)
        ),
        RecvError::Io(k) => format!("a read error: {k:?}"),
    }
}

/// A frame of exactly `len` bytes (before `\n`): `template` with its first
/// `@PAD@` replaced by as many `x` as make the result `len` bytes long.
/// Panics if `template` without `@PAD@` is already longer.
pub fn sized_frame(template: &str, len: usize) -> Vec<u8> {
    let (head, tail) = template
        .split_once("@PAD@")
        .unwrap_or_else(|| panic!("template without @PAD@: {template}"));
    let fixed = head.len() + tail.len();
    assert!(
        fixed <= len,
        "template is {fixed} bytes, longer than the requested {len}"
    );
    let mut out = Vec::with_capacity(len + 2);
    out.extend_from_slice(head.as_bytes());
    out.resize(head.len() + (len - fixed), b'x');
    out.extend_from_slice(tail.as_bytes());
    debug_assert_eq!(out.len(), len);
    out
}
