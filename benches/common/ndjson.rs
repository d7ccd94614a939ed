//! The blocking NDJSON client of the out-of-process benches that stream
//! (acp_stream, openai_stream): one Unix socket connection, read in large
//! blocks, lines handed out without a copy of the whole buffer.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

/// A bench's result: the error is printed as it is.
pub type Res<T> = Result<T, String>;

/// A blocking NDJSON client that reads in large blocks.
pub struct Conn {
    s: UnixStream,
    buf: Vec<u8>,
    start: usize,
    next_id: u64,
}

impl Conn {
    pub fn open(endpoint: &Path) -> Res<Self> {
        let s = UnixStream::connect(endpoint).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut c = Conn {
            s,
            buf: Vec::with_capacity(1 << 20),
            start: 0,
            next_id: 1,
        };
        c.s.write_all(super::INITIALIZE)
            .map_err(|e| e.to_string())?;
        let line = c.line()?;
        super::check_initialize_response(&line).map_err(|e| e.to_string())?;
        Ok(c)
    }

    pub fn send(&mut self, method: &str, params: Value) -> Res<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut f = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}),
        )
        .unwrap();
        f.push(b'\n');
        self.s.write_all(&f).map_err(|e| format!("write: {e}"))?;
        Ok(id)
    }

    /// Reads at most `max` more bytes into the buffer (0: end of stream).
    pub fn fill(&mut self, max: usize) -> Res<usize> {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > (1 << 20) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + max, 0);
        let n = self.s.read(&mut self.buf[len..]);
        let n = match n {
            Ok(n) => n,
            Err(e) => {
                self.buf.truncate(len);
                return Err(format!("read: {e}"));
            }
        };
        self.buf.truncate(len + n);
        Ok(n)
    }

    /// The next complete line, if one is buffered.
    pub fn buffered_line(&mut self) -> Option<Vec<u8>> {
        let rest = &self.buf[self.start..];
        let pos = rest.iter().position(|&b| b == b'\n')?;
        let line = rest[..pos].to_vec();
        self.start += pos + 1;
        Some(line)
    }

    pub fn line(&mut self) -> Res<Vec<u8>> {
        loop {
            if let Some(l) = self.buffered_line() {
                return Ok(l);
            }
            if self.fill(1 << 20)? == 0 {
                return Err("end of stream".into());
            }
        }
    }

    /// The answer to `id` (nothing else may come first).
    pub fn answer(&mut self, id: u64) -> Res<Value> {
        let line = self.line()?;
        let v: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
        if v["id"] != json!(id) || v.get("result").is_none() {
            return Err(format!("unexpected answer {v}"));
        }
        Ok(v["result"].clone())
    }

    pub fn call(&mut self, method: &str, params: Value) -> Res<Value> {
        let id = self.send(method, params)?;
        self.answer(id)
    }

    /// `session/new` of `agent` in `mode`; the session id.
    pub fn new_session(&mut self, agent: &str, mode: &str) -> Res<String> {
        let r = self.call(
            "session/new",
            json!({"agent_alias": agent, "chat_mode": mode}),
        )?;
        r["session_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("session/new: no session id in {r}"))
    }
}
