//! Helpers of the session tests (tests/sessions_*.rs): the frames of one
//! turn collected up to its answer (notifications kept, in order), the
//! dialect clients, and the expected update params.
//!
//! Every wait is bounded: a helper gets what it waits for before its
//! deadline or fails the test with what it saw. Nothing sleeps to assert.

#![allow(dead_code)]

use std::time::Instant;

use serde_json::{json, Value};

use super::rpc::{self, next_id};
use super::{describe, Client, Daemon, RECV_TIMEOUT};

/// The schema every `::ask` sends (SPEC §10.3).
pub const ASK_SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"string","title":"Answer"}},"required":["answer"]}"#;

// ---------------------------------------------------------------------------
// Frames

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

    /// A response (no `method`) to the request with this id.
    pub fn answers(&self, id: &Value) -> bool {
        self.method().is_none() && self.v.get("id") == Some(id)
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

/// The frames of one prompt: everything that arrived before its answer, and the answer.
#[derive(Debug, Clone)]
pub struct Turn {
    pub frames: Vec<Frame>,
    pub response: Frame,
}

impl Turn {
    /// The params of every `session/update` frame, in order.
    pub fn updates(&self) -> Vec<Value> {
        self.frames
            .iter()
            .filter(|f| f.is_update())
            .map(|f| f.params().clone())
            .collect()
    }

    /// The same turn with `earlier` frames (read before) in front.
    pub fn after(mut self, earlier: Vec<Frame>) -> Self {
        let mut frames = earlier;
        frames.append(&mut self.frames);
        self.frames = frames;
        self
    }

    /// The raw text of every frame before the answer.
    pub fn raw(&self) -> Vec<&str> {
        self.frames.iter().map(|f| f.raw.as_str()).collect()
    }

    pub fn result(&self) -> &Value {
        self.response.result()
    }

    pub fn error(&self) -> &Value {
        self.response.error()
    }

    /// The texts of the `agent_message_chunk` updates.
    pub fn chunks(&self) -> Vec<String> {
        self.texts("agent_message_chunk")
    }

    /// The texts of the updates of type `kind`.
    pub fn texts(&self, kind: &str) -> Vec<String> {
        self.frames
            .iter()
            .filter(|f| f.is_update() && f.kind() == kind)
            .map(|f| f.params()["text"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The last update: `turn_complete`, which every turn ends with (§8.5)
    /// and which is the only one. Panics otherwise.
    pub fn turn_complete(&self) -> &Value {
        let last = self
            .frames
            .last()
            .unwrap_or_else(|| panic!("no update before the answer {}", self.response.raw));
        assert!(
            last.is_update() && last.kind() == "turn_complete",
            "the last frame before the answer is not turn_complete: {:#?}",
            self.raw()
        );
        let n = self
            .frames
            .iter()
            .filter(|f| f.is_update() && f.kind() == "turn_complete")
            .count();
        assert_eq!(n, 1, "one turn_complete per turn: {:#?}", self.raw());
        last.params()
    }

    /// Asserts the shape every turn has: only `session/update`s for
    /// `session`, `turn_complete` last, and (for a completed or cancelled
    /// turn) a result whose `content` is both the concatenation of the
    /// message chunks and the `turn_complete` content.
    pub fn check(&self, session: &str) {
        for f in &self.frames {
            assert!(f.is_update(), "unexpected frame during the turn: {}", f.raw);
            let sid = f
                .params()
                .get("sessionId")
                .or_else(|| f.params().get("session_id"));
            assert_eq!(sid, Some(&json!(session)), "{}", f.raw);
        }
        let tc = self.turn_complete().clone();
        let streamed = self.chunks().concat();
        assert_eq!(tc["content"], streamed, "turn_complete.content");
        if let Some(r) = self.response.v.get("result") {
            assert_eq!(r["content"], streamed, "result.content");
            assert_eq!(r["session_id"], session);
        }
    }
}

// ---------------------------------------------------------------------------
// Requests

/// The session helpers of a raw client.
pub trait Rpc {
    fn frame(&mut self) -> Frame;
    /// Sends a request; returns its id.
    fn send_request(&mut self, method: &str, params: Value) -> Value;
    /// Sends a notification (no id).
    fn send_notification(&mut self, method: &str, params: Value);
    /// Reads frames up to the answer to `id`.
    fn until_answer(&mut self, id: &Value) -> Turn;
    /// Sends a request and returns its answer, which must be the very next frame.
    fn call_alone(&mut self, method: &str, params: Value) -> Frame;
    /// The `result` of a request answered at once.
    fn ok(&mut self, method: &str, params: Value) -> Value;
    /// The `error` of a request answered at once.
    fn err(&mut self, method: &str, params: Value) -> Value;
    /// Reads frames until one satisfies `pred`; returns the frames before it and it.
    fn until(&mut self, what: &str, pred: impl Fn(&Frame) -> bool) -> (Vec<Frame>, Frame);
    /// `session/new` with the `echo` agent; the result.
    fn new_session(&mut self, id: &str, mode: &str) -> Value;
    /// `session/new` with `agent`; the result.
    fn new_session_of(&mut self, agent: &str, id: &str, mode: &str) -> Value;
    /// Sends `session/prompt` as a notification (no id, no answer, §3.5).
    fn notify_prompt(&mut self, session: &str, prompt: &str);
    /// Sends `session/prompt`; returns its id.
    fn start_prompt(&mut self, session: &str, prompt: &str) -> Value;
    /// A whole turn: sends the prompt and reads up to its answer.
    fn prompt(&mut self, session: &str, prompt: &str) -> Turn;
    /// Reads until the update satisfying `pred`; returns everything up to it, it included.
    fn until_update(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Frame>;
    /// Reads until every request of `ids` is answered; returns every frame
    /// read, in order (answers included).
    fn until_all(&mut self, ids: &[Value]) -> Vec<Frame>;
}

impl Rpc for Client {
    fn frame(&mut self) -> Frame {
        Frame::parse(self.recv_line())
    }

    fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = next_id();
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}));
        id
    }

    fn send_notification(&mut self, method: &str, params: Value) {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn until_answer(&mut self, id: &Value) -> Turn {
        let (frames, response) = self.until(&format!("the answer to {id}"), |f| f.answers(id));
        Turn { frames, response }
    }

    fn call_alone(&mut self, method: &str, params: Value) -> Frame {
        let id = self.send_request(method, params.clone());
        let f = self.frame();
        assert!(
            f.answers(&id),
            "{method} {params}: expected its answer first, got {}",
            f.raw
        );
        f
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        rpc::ok(self, method, params)
    }

    fn err(&mut self, method: &str, params: Value) -> Value {
        rpc::fails(self, method, params)
    }

    fn until(&mut self, what: &str, pred: impl Fn(&Frame) -> bool) -> (Vec<Frame>, Frame) {
        let deadline = Instant::now() + RECV_TIMEOUT;
        let mut seen = Vec::new();
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

    fn new_session(&mut self, id: &str, mode: &str) -> Value {
        self.new_session_of("echo", id, mode)
    }

    fn new_session_of(&mut self, agent: &str, id: &str, mode: &str) -> Value {
        self.ok(
            "session/new",
            json!({"agent_alias": agent, "session_id": id, "chat_mode": mode}),
        )
    }

    fn notify_prompt(&mut self, session: &str, prompt: &str) {
        self.send_notification(
            "session/prompt",
            json!({"session_id": session, "prompt": prompt}),
        );
    }

    fn start_prompt(&mut self, session: &str, prompt: &str) -> Value {
        self.send_request(
            "session/prompt",
            json!({"session_id": session, "prompt": prompt}),
        )
    }

    fn prompt(&mut self, session: &str, prompt: &str) -> Turn {
        let id = self.start_prompt(session, prompt);
        self.until_answer(&id)
    }

    fn until_update(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Frame> {
        let (mut before, f) = self.until("an update", |f| f.is_update() && pred(f.params()));
        before.push(f);
        before
    }

    fn until_all(&mut self, ids: &[Value]) -> Vec<Frame> {
        let mut all = Vec::new();
        let mut left: Vec<Value> = ids.to_vec();
        while !left.is_empty() {
            let (seen, f) = self.until("the answers", |f| left.iter().any(|id| f.answers(id)));
            all.extend(seen);
            left.retain(|id| !f.answers(id));
            all.push(f);
        }
        all
    }
}

/// The update params of `frames` grouped into turns, each ending with its
/// `turn_complete` (panics on updates after the last one).
pub fn turns_of(frames: &[Frame]) -> Vec<Vec<Value>> {
    let mut turns = vec![Vec::new()];
    for f in frames.iter().filter(|f| f.is_update()) {
        turns.last_mut().unwrap().push(f.params().clone());
        if f.kind() == "turn_complete" {
            turns.push(Vec::new());
        }
    }
    let rest = turns.pop().unwrap();
    assert!(
        rest.is_empty(),
        "updates after the last turn_complete: {rest:?}"
    );
    turns
}

/// The position of the answer to `id` in `frames`.
pub fn answer_index(frames: &[Frame], id: &Value) -> usize {
    frames
        .iter()
        .position(|f| f.answers(id))
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// A client that completed `initialize` with `params`.
pub fn client_with(d: &Daemon, params: Value) -> Client {
    let mut c = d.connect();
    let f = c.call_alone("initialize", params.clone());
    assert!(
        f.v.get("result").is_some(),
        "initialize {params}: {}",
        f.raw
    );
    c
}

/// A camelCase client that advertises form elicitation.
pub fn client_caps(d: &Daemon) -> Client {
    client_with(
        d,
        json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}}),
    )
}

/// A snake_case client (§3.8), with form elicitation.
pub fn client_snake(d: &Daemon) -> Client {
    client_with(
        d,
        json!({"protocol_version": 1, "clientCapabilities": {"elicitation": {"form": {}}}}),
    )
}

/// The update params of a `session/update` of the camel dialect.
pub fn upd(session: &str, kind: &str, rest: Value) -> Value {
    let mut v = json!({"sessionId": session, "type": kind});
    for (k, x) in rest.as_object().expect("an object").iter() {
        v[k] = x.clone();
    }
    v
}

/// `agent_message_chunk` params.
pub fn msg(session: &str, text: &str) -> Value {
    upd(session, "agent_message_chunk", json!({ "text": text }))
}

/// `agent_thought_chunk` params.
pub fn thought(session: &str, text: &str) -> Value {
    upd(session, "agent_thought_chunk", json!({ "text": text }))
}

/// `turn_complete` params.
pub fn complete(session: &str, outcome: &str, content: &str, reason: Option<&str>) -> Value {
    let mut v = upd(
        session,
        "turn_complete",
        json!({"outcome": outcome, "content": content}),
    );
    if let Some(r) = reason {
        v["reason"] = json!(r);
    }
    v
}

/// Whether process `pid` is gone (or a zombie, which no longer runs).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}
