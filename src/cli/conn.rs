//! One connection of a person-facing command to the daemon: connect to the
//! endpoint the environment names, `initialize`, then a reader task that
//! turns every line the daemon sends into an [`Incoming`] on a bounded
//! channel (so a fast daemon waits for a slow terminal instead of the client
//! buffering without bound), and a writer for requests and answers.

use std::ffi::OsStr;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use crate::client::exit;
use crate::codec::write_json_line;
use crate::endpoint::{self, split, LocalWriteHalf};
use crate::limits::MAX_FRAME_BYTES;

/// How many parsed messages may wait for the renderer.
const QUEUE: usize = 256;

/// What the daemon sent.
#[derive(Debug)]
pub enum Incoming {
    /// The answer to our request `id`: its result, or its error object.
    Answer {
        id: u64,
        outcome: Result<Value, Value>,
    },
    /// A notification (`method`, `params`).
    Notification { method: String, params: Value },
    /// A request of the daemon's (`elicitation/create`, …).
    Request {
        id: Value,
        method: String,
        params: Value,
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
pub struct Conn {
    writer: LocalWriteHalf,
    pub incoming: mpsc::Receiver<Incoming>,
    next_id: u64,
    /// The endpoint, for messages.
    pub endpoint: String,
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

impl Conn {
    /// Connects and initializes (advertising form elicitation).
    pub async fn open(config_dir: Option<&OsStr>) -> Result<Self, ConnectError> {
        let name = endpoint_name(config_dir)?;
        let stream = endpoint::connect(&name).await.map_err(|e| ConnectError {
            status: exit::NO_DAEMON,
            message: format!("no daemon answers at {name} ({e}); start one with `zeroclaw daemon`"),
        })?;
        let (r, writer) = split(stream);
        let (tx, incoming) = mpsc::channel(QUEUE);
        tokio::spawn(read_loop(
            FramedRead::new(
                r,
                AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), MAX_FRAME_BYTES),
            ),
            tx,
        ));
        let mut conn = Conn {
            writer,
            incoming,
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
            match self.incoming.recv().await {
                Some(Incoming::Answer { id: got, outcome }) if got == id => {
                    return outcome.map_err(CallError::Rpc)
                }
                Some(Incoming::Request { id, method, .. }) => self.refuse(&id, &method).await?,
                Some(Incoming::Closed(why)) => return Err(CallError::Lost(why)),
                None => return Err(CallError::Lost("connection closed".into())),
                Some(_) => {}
            }
        }
    }
}

/// A request that did not get a result.
#[derive(Debug)]
pub enum CallError {
    /// The daemon answered this error object.
    Rpc(Value),
    /// The connection is gone.
    Lost(String),
}

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

async fn read_loop(
    mut lines: FramedRead<endpoint::LocalReadHalf, AnyDelimiterCodec>,
    tx: mpsc::Sender<Incoming>,
) {
    let closed = loop {
        let line = match lines.next().await {
            None => break "the daemon closed the connection".to_owned(),
            Some(Ok(line)) => line,
            Some(Err(AnyDelimiterCodecError::MaxChunkLengthExceeded)) => {
                let _ = tx.send(Incoming::Garbage("a line over 8 MiB".into())).await;
                continue;
            }
            Some(Err(AnyDelimiterCodecError::Io(e))) => break e.to_string(),
        };
        // Bytes, not text: a line that is not UTF-8 is garbage, not the end.
        let line = String::from_utf8_lossy(&line);
        if tx.send(classify(&line)).await.is_err() {
            return;
        }
    };
    let _ = tx.send(Incoming::Closed(closed)).await;
}

/// Sorts one line into an [`Incoming`].
pub fn classify(line: &str) -> Incoming {
    let garbage = || Incoming::Garbage(line.chars().take(200).collect());
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else {
        return garbage();
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (msg.remove("method"), msg.remove("id")) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request { id, method, params },
        (Some(Value::String(method)), None) => Incoming::Notification { method, params },
        (None, Some(Value::Number(n))) => match n.as_u64() {
            Some(id) => Incoming::Answer {
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
pub async fn reopen(config_dir: Option<&OsStr>, patience: Duration) -> Result<Conn, ConnectError> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match Conn::open(config_dir).await {
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
            Incoming::Answer {
                id: 3,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","error":{"code":1},"id":4}"#),
            Incoming::Answer {
                id: 4,
                outcome: Err(_)
            }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Incoming::Notification { .. }
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"elicitation/create","id":"zc-out-0"}"#),
            Incoming::Request { .. }
        ));
        assert!(matches!(classify("not json"), Incoming::Garbage(_)));
        assert!(matches!(classify("[1,2]"), Incoming::Garbage(_)));
        assert!(matches!(classify(r#"{"id":"x"}"#), Incoming::Garbage(_)));
    }
}
