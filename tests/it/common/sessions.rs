//! Session helpers of the one client: a [`Turn`] (the frames of one prompt
//! up to its answer, in order), the session verbs on [`Client`], the
//! dialect clients, and the expected update params.
//!
//! Every wait is bounded: a helper gets what it waits for before its
//! deadline or fails the test with what it saw. Nothing sleeps to assert.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};

// Re-exported for the suites' glob imports.
#[allow(unused_imports)]
pub use super::rpc::{Frame, Rpc};
use super::{Client, Daemon};

/// The schema every `::ask` sends (§10.3).
pub const ASK_SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"string","title":"Answer"}},"required":["answer"]}"#;

// ---------------------------------------------------------------------------
// Turns

/// The frames of one prompt: everything that arrived before its answer, and the answer.
#[derive(Debug, Clone)]
pub struct Turn {
    pub frames: Vec<Frame>,
    pub response: Frame,
}

impl Turn {
    /// The params of every `session/update` frame, in order.
    pub fn updates(&self) -> Vec<Value> {
        update_params(&self.frames)
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

    /// `Ok(result)` or `Err(error)` of the answer.
    pub fn answer(&self) -> Result<Value, Value> {
        self.response.outcome()
    }

    /// The update params of type `kind`, in order.
    pub fn of_type(&self, kind: &str) -> Vec<Value> {
        self.frames
            .iter()
            .filter(|f| f.is_update() && f.kind() == kind)
            .map(|f| f.params().clone())
            .collect()
    }

    /// The concatenated text of the `agent_message_chunk`s.
    pub fn text(&self) -> String {
        self.chunks().concat()
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
            assert_eq!(f.session(), Some(&json!(session)), "{}", f.raw);
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
// Session verbs

impl Client {
    /// Reads frames (the stash first) up to the answer to `id`.
    #[track_caller]
    pub fn until_answer(&mut self, id: &Value) -> Turn {
        let (frames, response) = self.until(&format!("the answer to {id}"), |f| f.answers(id));
        Turn { frames, response }
    }

    /// Waits (within `timeout`) for the answer to prompt `id`; the turn's
    /// frames are the updates for `session` read meanwhile (other frames
    /// stay in the stash).
    #[track_caller]
    pub fn finish_turn(&mut self, session: &str, id: &Value, timeout: Duration) -> Turn {
        let response = self.answer_within(id, timeout);
        let sid = json!(session);
        let frames = self.take_stashed(|f| f.is_update() && f.session() == Some(&sid));
        Turn { frames, response }
    }

    /// `session/new` with the `echo` agent; the result.
    #[track_caller]
    pub fn new_session(&mut self, id: &str, mode: &str) -> Value {
        self.new_session_of("echo", id, mode)
    }

    /// `session/new` with `agent`; the result.
    #[track_caller]
    pub fn new_session_of(&mut self, agent: &str, id: &str, mode: &str) -> Value {
        self.ok(
            "session/new",
            json!({"agent_alias": agent, "session_id": id, "chat_mode": mode}),
        )
    }

    /// The error of `session/new` with the `echo` agent, which must fail.
    #[track_caller]
    pub fn new_session_fails(&mut self, id: &str, mode: &str) -> Value {
        self.new_session_of_fails("echo", id, mode)
    }

    /// The error of `session/new` with agent `agent`, which must fail.
    #[track_caller]
    pub fn new_session_of_fails(&mut self, agent: &str, id: &str, mode: &str) -> Value {
        self.fails(
            "session/new",
            json!({"agent_alias": agent, "session_id": id, "chat_mode": mode}),
        )
    }

    /// Sends `session/prompt` as a notification (no id, no answer, §3.5).
    pub fn notify_prompt(&mut self, session: &str, prompt: &str) {
        self.notify(
            "session/prompt",
            json!({"session_id": session, "prompt": prompt}),
        );
    }

    /// Sends `session/prompt`; returns its id.
    pub fn start_prompt(&mut self, session: &str, prompt: &str) -> Value {
        self.send(
            "session/prompt",
            json!({"session_id": session, "prompt": prompt}),
        )
    }

    /// A whole turn: sends the prompt and reads up to its answer.
    #[track_caller]
    pub fn prompt(&mut self, session: &str, prompt: &str) -> Turn {
        let id = self.start_prompt(session, prompt);
        self.until_answer(&id)
    }

    /// One prompt that must complete; its turn.
    #[track_caller]
    pub fn prompt_ok(&mut self, session: &str, prompt: &str) -> Turn {
        let t = self.prompt(session, prompt);
        t.result();
        assert_eq!(t.turn_complete()["outcome"], "completed", "{:?}", t.raw());
        t
    }

    /// Reads until the update satisfying `pred`; returns everything up to it, it included.
    #[track_caller]
    pub fn until_update(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Frame> {
        let (mut before, f) = self.until("an update", |f| f.is_update() && pred(f.params()));
        before.push(f);
        before
    }

    /// Reads until every request of `ids` is answered; returns every frame
    /// read, in order (answers included).
    #[track_caller]
    pub fn until_all(&mut self, ids: &[Value]) -> Vec<Frame> {
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

/// The params of every frame of `frames`, in order.
pub fn params_of(frames: &[Frame]) -> Vec<Value> {
    frames.iter().map(|f| f.params().clone()).collect()
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

#[cfg(unix)]
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

/// The params of the `session/update` frames among `frames`, in order.
pub fn update_params<'a>(frames: impl IntoIterator<Item = &'a Frame>) -> Vec<Value> {
    frames
        .into_iter()
        .filter(|f| f.is_update())
        .map(|f| f.params().clone())
        .collect()
}

impl Daemon {
    /// An initialized client that opened session `sid` of the `echo` agent in `mode`.
    #[track_caller]
    pub fn session_client(&self, sid: &str, mode: &str) -> Client {
        let mut c = self.client();
        c.new_session(sid, mode);
        c
    }
}
