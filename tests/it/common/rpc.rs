//! The one JSON-RPC client of the suites: [`Client`] with fresh ids, the
//! frames it meets while it waits for an answer set aside (in order) in its
//! stash, and `call`/`ok`/`fails` on top. The free functions of the same
//! names are the same calls, for code that holds a `&mut Client`.
//!
//! Every wait is bounded (by [`RECV_TIMEOUT`] unless a bound is given).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{describe, Client, RecvError, RECV_TIMEOUT};

static IDS: AtomicU64 = AtomicU64::new(1);

/// The old name of the one client (the ACP suites' stateful client).
pub type Rpc = Client;

/// A fresh request id (a string, unique in this process).
pub fn next_id() -> Value {
    json!(format!("r{}", IDS.fetch_add(1, Ordering::Relaxed)))
}

/// One frame from the daemon: its exact text and its value.
#[derive(Debug, Clone)]
pub struct Frame {
    pub raw: String,
    pub v: Value,
}

impl Frame {
    pub fn parse(raw: String) -> Self {
        let v = serde_json::from_str(&raw).unwrap_or_else(|e| panic!("not JSON ({e}): {raw}"));
        Self { raw, v }
    }

    pub fn method(&self) -> Option<&str> {
        self.v.get("method").and_then(Value::as_str)
    }

    /// A `session/update` notification.
    pub fn is_update(&self) -> bool {
        self.method() == Some("session/update") && self.v.get("id").is_none()
    }

    /// The update's `type` (the same member name in both dialects).
    pub fn kind(&self) -> &str {
        self.v["params"]["type"].as_str().unwrap_or("")
    }

    pub fn params(&self) -> &Value {
        &self.v["params"]
    }

    /// The update's session id (either dialect's spelling).
    pub fn session(&self) -> Option<&Value> {
        let p = self.params();
        p.get("sessionId").or_else(|| p.get("session_id"))
    }

    /// A response (no `method`) to the request with this id.
    pub fn answers(&self, id: &Value) -> bool {
        self.method().is_none() && self.v.get("id") == Some(id)
    }

    /// `Ok(result)` or `Err(error)` of a response.
    pub fn outcome(&self) -> Result<Value, Value> {
        match self.v.get("error") {
            Some(e) => Err(e.clone()),
            None => Ok(self.result().clone()),
        }
    }

    pub fn result(&self) -> &Value {
        self.v
            .get("result")
            .unwrap_or_else(|| panic!("expected a result, got {}", self.raw))
    }

    pub fn error(&self) -> &Value {
        self.v
            .get("error")
            .unwrap_or_else(|| panic!("expected an error, got {}", self.raw))
    }
}

impl Client {
    /// Sends a request; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> Value {
        let id = next_id();
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}));
        id
    }

    /// Sends a notification (no id).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next frame from the socket (not the stash) within `timeout`.
    pub fn read_frame(&mut self, timeout: Duration) -> Result<Value, RecvError> {
        let line = self.try_recv_line(timeout)?;
        Ok(serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("frame is not JSON ({e}): {line}")))
    }

    /// The next frame: the oldest stashed one, else the next from the socket.
    pub fn frame(&mut self) -> Frame {
        match self.stash.pop_front() {
            Some(f) => f,
            None => Frame::parse(self.recv_line()),
        }
    }

    /// Reads frames (the stash first) until one satisfies `pred`; returns
    /// the frames before it, in order, and it.
    #[track_caller]
    pub fn until(&mut self, what: &str, pred: impl Fn(&Frame) -> bool) -> (Vec<Frame>, Frame) {
        self.until_within(what, RECV_TIMEOUT, pred)
    }

    /// [`Client::until`] with its own bound.
    #[track_caller]
    pub fn until_within(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Frame) -> bool,
    ) -> (Vec<Frame>, Frame) {
        let mut seen = Vec::new();
        while let Some(f) = self.stash.pop_front() {
            if pred(&f) {
                return (seen, f);
            }
            seen.push(f);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.try_recv_line(left) {
                Ok(line) => {
                    let f = Frame::parse(line);
                    if pred(&f) {
                        return (seen, f);
                    }
                    seen.push(f);
                }
                Err(e) => panic!(
                    "waiting for {what}: got {} after {:#?}",
                    describe(&e),
                    seen.iter().map(|f| &f.raw).collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Waits for the answer frame to `id`; every other frame read on the
    /// way is stashed, in order (answers may come in any order, §3.7).
    #[track_caller]
    pub fn answer_within(&mut self, id: &Value, timeout: Duration) -> Frame {
        if let Some(i) = self.stash.iter().position(|f| f.answers(id)) {
            return self.stash.remove(i).expect("a stashed frame at its index");
        }
        let (seen, f) =
            self.until_within(&format!("the answer to {id}"), timeout, |f| f.answers(id));
        self.stash.extend(seen);
        f
    }

    /// The result (`Ok`) or error (`Err`) answering `id`.
    #[track_caller]
    pub fn wait(&mut self, id: &Value) -> Result<Value, Value> {
        self.wait_within(id, RECV_TIMEOUT)
    }

    /// [`Client::wait`] with its own bound.
    #[track_caller]
    pub fn wait_within(&mut self, id: &Value, timeout: Duration) -> Result<Value, Value> {
        self.answer_within(id, timeout).outcome()
    }

    /// Sends `method` and returns its whole answer frame.
    #[track_caller]
    pub fn call_frame(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.answer_within(&id, RECV_TIMEOUT).v
    }

    /// A request and its result (`Ok`) or error (`Err`).
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send(method, params);
        self.wait(&id)
    }

    /// The `result` of `method`; panics with the error otherwise.
    #[track_caller]
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let p = params.to_string();
        self.request(method, params)
            .unwrap_or_else(|e| panic!("{method} {p} failed: {e}"))
    }

    /// The `error` object of `method`; panics with the result otherwise.
    #[track_caller]
    pub fn fails(&mut self, method: &str, params: Value) -> Value {
        let p = params.to_string();
        match self.request(method, params) {
            Err(e) => e,
            Ok(r) => panic!("{method} {p} should fail: {r}"),
        }
    }

    /// Sends a request and returns its answer, which must be the very next
    /// frame (an ordering assertion: nothing may come before it).
    #[track_caller]
    pub fn call_alone(&mut self, method: &str, params: Value) -> Frame {
        let id = self.send(method, params.clone());
        let f = self.frame();
        assert!(
            f.answers(&id),
            "{method} {params}: expected its answer first, got {}",
            f.raw
        );
        f
    }

    /// Takes the stashed `session/update` params (other stashed frames stay).
    pub fn take_updates(&mut self) -> Vec<Value> {
        self.take_stashed(|f| f.is_update())
            .into_iter()
            .map(|f| f.params().clone())
            .collect()
    }

    /// Takes the stashed frames that satisfy `pred`, in order.
    pub fn take_stashed(&mut self, pred: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let (taken, kept): (Vec<Frame>, Vec<Frame>) = std::mem::take(&mut self.stash)
            .into_iter()
            .partition(|f| pred(f));
        self.stash = kept.into();
        taken
    }
}

/// The whole answer to `method` (see [`Client::call_frame`]).
#[track_caller]
pub fn call(c: &mut Client, method: &str, params: Value) -> Value {
    c.call_frame(method, params)
}

/// The `result` of `method` (see [`Client::ok`]).
#[track_caller]
pub fn ok(c: &mut Client, method: &str, params: Value) -> Value {
    c.ok(method, params)
}

/// The `error` of `method` (see [`Client::fails`]).
#[track_caller]
pub fn fails(c: &mut Client, method: &str, params: Value) -> Value {
    c.fails(method, params)
}
