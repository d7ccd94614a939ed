//! One connection of a person-facing command to the daemon: connect to the
//! endpoint the environment names, `initialize`, then [`ClientPeer::next`] turns
//! the next line the daemon sent into a [`Received`], read in the caller's
//! own task (no reader task, no channel: a fast daemon waits on the socket
//! for a slow terminal, and a 100,000-chunk turn costs no thread hand-off
//! per line), and a writer for requests and answers.
//!
//! It is the CLI's one client-side peer: every command reads the daemon
//! through the daemon's own bounded framing, so a line over the frame
//! limit is skipped while it arrives, never buffered whole. The one-shot
//! commands (`zeroclaw rpc|status|pair|upload`) read raw lines with
//! [`ClientPeer::call_answering`], which prints what it meets and answers the
//! daemon's questions per [`Answers`].

use std::ffi::OsStr;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::codec::FramedRead;

use super::answers::Answers;
use super::exit::{self, CommandFailure};
use crate::codec::{write_json_line, Frame, FrameCodec, Rejection};
use crate::endpoint::{self, split, LocalWriteHalf};
use crate::limits::MAX_FRAME_BYTES;

/// What the daemon sent.
#[derive(Debug)]
pub enum Received {
    /// The answer to our request `id`: its result, or its error object.
    Answer {
        id: u64,
        outcome: Result<Value, Value>,
    },
    /// A notification (`method`, `params`).
    Notification { method: String, params: Value },
    /// A `session/update` notification of an `agent_message_chunk`
    /// (`thought: false`) or `agent_thought_chunk`: the stream's bulk, read
    /// without building a JSON tree.
    Chunk { thought: bool, text: String },
    /// A request of the daemon's (`elicitation/create`, …), with its whole
    /// line for what a JSON tree loses (the order of a form's fields).
    Request {
        id: Value,
        method: String,
        params: Value,
        line: String,
    },
    /// A line that is not a JSON-RPC message; shown as a warning, ignored.
    Garbage(String),
    /// The connection ended (the daemon stopped or restarted).
    Closed(String),
}

/// Why connecting failed.
#[derive(Debug)]
pub struct ConnectError {
    /// The exit status it maps to (3: no daemon).
    pub status: i32,
    pub message: String,
}

/// A connected, initialized connection.
#[derive(Debug)]
pub struct ClientPeer {
    writer: LocalWriteHalf,
    /// The daemon's own framing (bounded lines, split with memchr).
    reader: FramedRead<endpoint::LocalReadHalf, FrameCodec>,
    /// The connection ended and [`Received::Closed`] was handed out.
    ended: bool,
    next_id: u64,
    /// The endpoint, for messages.
    pub endpoint: String,
}

impl From<ConnectError> for CommandFailure {
    fn from(e: ConnectError) -> Self {
        Self::new(e.status, e.message)
    }
}

/// The endpoint `config_dir` and the environment name.
pub fn endpoint_name(config_dir: Option<&OsStr>) -> Result<endpoint::EndpointName, ConnectError> {
    let dirs = endpoint::resolve_dirs_from_env(config_dir).map_err(|e| ConnectError {
        status: exit::NO_DAEMON,
        message: e.to_string(),
    })?;
    Ok(endpoint::resolve_endpoint(&dirs.data_dir, |k| {
        std::env::var_os(k)
    }))
}

impl ClientPeer {
    /// Connects and initializes (advertising form elicitation).
    pub async fn open(config_dir: Option<&OsStr>) -> Result<Self, ConnectError> {
        let name = endpoint_name(config_dir)?;
        let stream = endpoint::connect(&name).await.map_err(|e| ConnectError {
            status: exit::NO_DAEMON,
            message: format!("no daemon answers at {name} ({e}); start one with `zeroclaw daemon`"),
        })?;
        let (r, writer) = split(stream);
        let reader = FramedRead::new(r, FrameCodec::default());
        let mut conn = ClientPeer {
            writer,
            reader,
            ended: false,
            next_id: 0,
            endpoint: name.to_string(),
        };
        let params =
            json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
        match conn.call("initialize", params).await {
            Ok(_) => Ok(conn),
            Err(e) => Err(ConnectError {
                status: exit::RPC_ERROR,
                message: format!("initialize failed: {}", e.message()),
            }),
        }
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<u64, CallError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}))
            .await?;
        Ok(id)
    }

    /// Answers a request of the daemon's.
    pub async fn respond(&mut self, id: &Value, result: Value) -> Result<(), CallError> {
        self.send(&json!({"jsonrpc": "2.0", "result": result, "id": id}))
            .await
    }

    /// Answers a request of the daemon's with "method not found".
    pub async fn refuse(&mut self, id: &Value, method: &str) -> Result<(), CallError> {
        let error = json!({"code": -32601, "message": format!("Unknown method: {method}")});
        self.send(&json!({"jsonrpc": "2.0", "error": error, "id": id}))
            .await
    }

    async fn send(&mut self, msg: &Value) -> Result<(), CallError> {
        write_json_line(&mut self.writer, msg)
            .await
            .map_err(|e| CallError::Lost(e.to_string()))
    }

    /// A request and its answer, when nothing else is expected meanwhile
    /// (notifications that arrive are dropped; daemon requests are refused).
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.request(method, params).await?;
        loop {
            match self.next().await {
                Some(Received::Answer { id: got, outcome }) if got == id => {
                    return outcome.map_err(CallError::Rpc)
                }
                Some(Received::Request { id, method, .. }) => self.refuse(&id, &method).await?,
                Some(Received::Closed(why)) => return Err(CallError::Lost(why)),
                None => return Err(CallError::Lost("connection closed".into())),
                Some(_) => {}
            }
        }
    }
}

impl ClientPeer {
    /// A request and its answer, every other line handed to `on_line` as
    /// the daemon sent it (a line that is not JSON too) and answered per
    /// `answers`; answers to our approvals are dropped. A line the codec
    /// rejects (over the frame limit, not UTF-8) ends the call: its
    /// answer may be the line that was not read.
    pub async fn call_answering(
        &mut self,
        method: &str,
        params: Value,
        answers: &Answers,
        mut on_line: impl FnMut(&str),
    ) -> Result<Value, CallError> {
        let id = json!(self.request(method, params).await?);
        loop {
            let line = self.next_line().await?;
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                on_line(&line);
                continue;
            };
            if msg.get("method").is_none() {
                if msg.get("id") == Some(&id) {
                    return match msg.get("error") {
                        Some(e) => Err(CallError::Rpc(e.clone())),
                        None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                    };
                }
                continue;
            }
            on_line(&line);
            let next_id = &mut self.next_id;
            let reply = answers.reply(&msg, || {
                *next_id += 1;
                *next_id
            });
            if let Some(reply) = reply {
                self.send(&reply).await?;
            }
        }
    }

    /// The next line as the daemon sent it. Cancel-safe, as [`ClientPeer::next`].
    async fn next_line(&mut self) -> Result<String, CallError> {
        if self.ended {
            return Err(CallError::Lost("connection closed".into()));
        }
        let why = match self.reader.next().await {
            Some(Ok(Frame::Line(line))) => return Ok(line),
            Some(Ok(Frame::Rejected(Rejection::TooLarge { .. }))) => {
                return Err(CallError::Lost(format!(
                    "the daemon sent a line over the {MAX_FRAME_BYTES}-byte frame limit"
                )))
            }
            Some(Ok(Frame::Rejected(Rejection::InvalidUtf8 { line_len }))) => {
                return Err(CallError::Lost(format!(
                    "the daemon sent a line of {line_len} bytes that is not UTF-8"
                )))
            }
            None => "the daemon closed the connection".to_owned(),
            Some(Err(e)) => e.to_string(),
        };
        self.ended = true;
        Err(CallError::Lost(why))
    }
}

/// A request that did not get a result: the daemon answered this error
/// object (`Rpc`), or the connection is gone (`Lost`).
pub type CallError = crate::call_error::CallError<Value>;

impl CallError {
    /// One line for the person: the error's message and `data.reason`.
    pub fn message(&self) -> String {
        match self {
            CallError::Lost(why) => format!("connection lost: {why}"),
            CallError::Rpc(e) => {
                let msg = e.get("message").and_then(Value::as_str).unwrap_or("error");
                match e.pointer("/data/reason").and_then(Value::as_str) {
                    Some(reason) => format!("{msg} ({reason})"),
                    None => msg.to_owned(),
                }
            }
        }
    }
}

impl ClientPeer {
    /// The next message; [`Received::Closed`] once when the connection
    /// ends, `None` after that. Cancel-safe: a line half read stays buffered.
    pub async fn next(&mut self) -> Option<Received> {
        if self.ended {
            return None;
        }
        let why = match self.reader.next().await {
            Some(Ok(Frame::Line(line))) => return Some(classify(&line)),
            // Not the end: the line is skipped, the next one read.
            Some(Ok(Frame::Rejected(Rejection::TooLarge { .. }))) => {
                return Some(Received::Garbage("a line over 8 MiB".into()))
            }
            Some(Ok(Frame::Rejected(Rejection::InvalidUtf8 { line_len }))) => {
                return Some(Received::Garbage(format!(
                    "a line of {line_len} bytes that is not UTF-8"
                )))
            }
            None => "the daemon closed the connection".to_owned(),
            Some(Err(e)) => e.to_string(),
        };
        self.ended = true;
        Some(Received::Closed(why))
    }

    /// A message that is there without waiting (read already, or readable).
    pub fn try_next(&mut self) -> Option<Received> {
        self.next().now_or_never().flatten()
    }

    /// Whether a whole line is already read and waiting: more is coming
    /// at once, so output can wait for it.
    pub fn has_buffered(&self) -> bool {
        self.reader.read_buffer().contains(&b'\n')
    }
}

/// The shape of a streamed chunk, borrowed from its line.
#[derive(Deserialize)]
struct ChunkLine<'a> {
    #[serde(borrow)]
    method: &'a str,
    #[serde(default, borrow)]
    id: Option<&'a serde_json::value::RawValue>,
    params: ChunkParams<'a>,
}

#[derive(Deserialize)]
struct ChunkParams<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

/// A chunk notification, if `line` is one.
fn chunk(line: &str) -> Option<Received> {
    let c: ChunkLine = serde_json::from_str(line).ok()?;
    let thought = match (c.method, c.id, c.params.kind) {
        ("session/update", None, "agent_message_chunk") => false,
        ("session/update", None, "agent_thought_chunk") => true,
        _ => return None,
    };
    Some(Received::Chunk {
        thought,
        text: c.params.text.into_owned(),
    })
}

/// Sorts one line into a [`Received`].
pub fn classify(line: &str) -> Received {
    chunk(line).unwrap_or_else(|| message(line))
}

/// Sorts a line that is not a chunk.
fn message(line: &str) -> Received {
    let garbage = || Received::Garbage(line.chars().take(200).collect());
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else {
        return garbage();
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (msg.remove("method"), msg.remove("id")) {
        (Some(Value::String(method)), Some(id)) => Received::Request {
            id,
            method,
            params,
            line: line.to_owned(),
        },
        (Some(Value::String(method)), None) => Received::Notification { method, params },
        (None, Some(Value::Number(n))) => match n.as_u64() {
            Some(id) => Received::Answer {
                id,
                outcome: match msg.remove("error") {
                    Some(e) => Err(e),
                    None => Ok(msg.remove("result").unwrap_or(Value::Null)),
                },
            },
            None => garbage(),
        },
        _ => garbage(),
    }
}

/// Connects, retrying for `patience` (a daemon restarting).
pub async fn reopen(
    config_dir: Option<&OsStr>,
    patience: Duration,
) -> Result<ClientPeer, ConnectError> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match ClientPeer::open(config_dir).await {
            Ok(c) => return Ok(c),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_lines() {
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","result":{"a":1},"id":3}"#),
            Received::Answer {
                id: 3,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","error":{"code":1},"id":4}"#),
            Received::Answer {
                id: 4,
                outcome: Err(_)
            }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Received::Notification { .. }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"elicitation/create","id":"zc-out-0"}"#),
            Received::Request { .. }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a\nb\u00e9"}}"#),
            Received::Chunk { thought: false, text } if text == "a\nb\u{e9}"
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"session/update","params":{"type":"agent_thought_chunk","text":"hm"}}"#),
            Received::Chunk { thought: true, text } if text == "hm"
        ));
        // Not a chunk: another type, a request, another method.
        assert!(matches!(
            classify(
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"type":"tool_call","text":"x"}}"#
            ),
            Received::Notification { .. }
        ));
        assert!(matches!(
            classify(
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"type":"agent_message_chunk","text":"x"},"id":7}"#
            ),
            Received::Request { .. }
        ));
        assert!(matches!(
            classify(
                r#"{"jsonrpc":"2.0","method":"logs/event","params":{"type":"agent_message_chunk","text":"x"}}"#
            ),
            Received::Notification { .. }
        ));
        assert!(matches!(classify("not json"), Received::Garbage(_)));
        assert!(matches!(classify("[1,2]"), Received::Garbage(_)));
        assert!(matches!(classify(r#"{"id":"x"}"#), Received::Garbage(_)));
    }
}
