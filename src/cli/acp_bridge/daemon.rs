//! The bridge's connection to the daemon: found where every client finds
//! it (`--config-dir`, the environment), the daemon started when none
//! answers (detached, so it outlives the editor; never `--ephemeral`), and
//! one line read at a time in the bridge's own loop (no reader task: while
//! the editor's queue is full the loop stops reading, and the daemon's
//! bounded outbound queue holds the turn back).

use std::ffi::OsStr;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio_util::codec::FramedRead;

use crate::cli::conn::{self, ClientPeer};
use crate::codec::{Frame, FrameCodec};
use crate::endpoint::{self, split, LocalReadHalf, LocalWriteHalf};

/// How long the bridge waits for a daemon it started to answer.
const START_PATIENCE: Duration = Duration::from_secs(15);

/// What the daemon sent on the main connection.
#[derive(Debug)]
pub enum FromDaemon {
    /// The answer to our request `id`.
    Answer {
        id: u64,
        outcome: Result<Value, Value>,
    },
    /// A `session/update` (its whole line, decoded by the mapping).
    Update(String),
    /// A request of the daemon's (`elicitation/create`).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// Anything else (another notification, a line that is not JSON-RPC).
    Other,
    /// The connection ended.
    Closed(String),
}

/// The main connection: sessions are opened, attached and prompted on it,
/// so their streams and approvals arrive here.
#[derive(Debug)]
pub struct DaemonConn {
    reader: FramedRead<LocalReadHalf, FrameCodec>,
    writer: LocalWriteHalf,
    next_id: u64,
}

/// Why the daemon could not be reached; the editor's request fails with it.
#[derive(Debug)]
pub struct Unreachable(pub String);

impl DaemonConn {
    /// Connects to the endpoint (starting the daemon if none answers) and
    /// initializes, advertising form elicitation: the bridge answers the
    /// daemon's questions (forwarded to the editor, or refused).
    pub async fn open(config_dir: Option<&OsStr>) -> Result<Self, Unreachable> {
        let name = conn::endpoint_name(config_dir).map_err(|e| Unreachable(e.message))?;
        let stream = match endpoint::connect(&name).await {
            Ok(s) => s,
            Err(_) => {
                start_daemon(config_dir)?;
                connect_patiently(&name).await?
            }
        };
        let (r, writer) = split(stream);
        let mut c = DaemonConn {
            reader: FramedRead::new(r, FrameCodec::default()),
            writer,
            next_id: 0,
        };
        let params =
            json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
        let id = c
            .request("initialize", params)
            .await
            .map_err(|e| Unreachable(format!("initialize: {e}")))?;
        loop {
            match c.next().await {
                FromDaemon::Answer { id: got, outcome } if got == id => {
                    return match outcome {
                        Ok(_) => Ok(c),
                        Err(e) => Err(Unreachable(format!("initialize failed: {e}"))),
                    }
                }
                FromDaemon::Closed(why) => return Err(Unreachable(why)),
                _ => {}
            }
        }
    }

    /// Sends a request; its id.
    pub async fn request(&mut self, method: &str, params: Value) -> std::io::Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}))
            .await?;
        Ok(id)
    }

    /// Answers a request of the daemon's.
    pub async fn respond(
        &mut self,
        id: &Value,
        outcome: Result<Value, Value>,
    ) -> std::io::Result<()> {
        let msg = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
            Err(error) => json!({"jsonrpc": "2.0", "error": error, "id": id}),
        };
        self.write(&msg).await
    }

    async fn write(&mut self, msg: &Value) -> std::io::Result<()> {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await
    }

    /// The next message. Cancel-safe (a half-read line stays buffered).
    pub async fn next(&mut self) -> FromDaemon {
        match self.reader.next().await {
            Some(Ok(Frame::Line(line))) => classify(line),
            Some(Ok(Frame::Rejected(_))) => FromDaemon::Other,
            Some(Err(e)) => FromDaemon::Closed(e.to_string()),
            None => FromDaemon::Closed("the daemon closed the connection".into()),
        }
    }
}

/// The opening of every `session/update` the daemon writes (its frames
/// are written by one serializer, members in this order).
const UPDATE_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"#;

/// Sorts a line. An update is told by its opening and its end (`}}`: the
/// params object closes the frame; a request ends with its id) without
/// parsing, so the stream's bulk is decoded once, by the mapping.
fn classify(line: String) -> FromDaemon {
    if line.starts_with(UPDATE_PREFIX) && line.ends_with("}}") {
        return FromDaemon::Update(line);
    }
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(&line) else {
        return FromDaemon::Other;
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (msg.remove("method"), msg.remove("id")) {
        (Some(Value::String(method)), Some(id)) => FromDaemon::Request { id, method, params },
        (Some(Value::String(m)), None) if m == "session/update" => FromDaemon::Update(line),
        (None, Some(Value::Number(n))) => match n.as_u64() {
            Some(id) => FromDaemon::Answer {
                id,
                outcome: match msg.remove("error") {
                    Some(e) => Err(e),
                    None => Ok(msg.remove("result").unwrap_or(Value::Null)),
                },
            },
            None => FromDaemon::Other,
        },
        _ => FromDaemon::Other,
    }
}

/// Starts `zeroclaw daemon` (this executable) detached: its own process
/// group, so the editor's Ctrl-C or group kill does not reach it; no
/// stdin/stdout, and its stderr discarded (its records stay readable with
/// `zeroclaw logs`). Never `--ephemeral`: the daemon outlives the editor.
fn start_daemon(config_dir: Option<&OsStr>) -> Result<(), Unreachable> {
    let exe = std::env::current_exe()
        .map_err(|e| Unreachable(format!("cannot find the zeroclaw executable: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    if let Some(dir) = config_dir {
        cmd.arg("--config-dir").arg(dir);
    }
    cmd.arg("daemon")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let child = cmd
        .spawn()
        .map_err(|e| Unreachable(format!("cannot start the daemon: {e}")))?;
    eprintln!(
        "zeroclaw acp: no daemon answered; started one (pid {})",
        child.id()
    );
    // Not waited for: it runs on after the bridge; a daemon that lost the
    // race for the endpoint exits at once and is reaped by init.
    drop(child);
    Ok(())
}

async fn connect_patiently(
    name: &endpoint::EndpointName,
) -> Result<endpoint::LocalStream, Unreachable> {
    let deadline = tokio::time::Instant::now() + START_PATIENCE;
    loop {
        match endpoint::connect(name).await {
            Ok(s) => return Ok(s),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(Unreachable(format!(
                    "no daemon answers at {name} ({e}), even after starting one"
                )))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The side connection: reads (`session/list`, `session/messages`,
/// `config/get`) awaited in place, never a session's channel.
pub async fn side(config_dir: Option<&OsStr>) -> Result<ClientPeer, Unreachable> {
    ClientPeer::open(config_dir)
        .await
        .map_err(|e| Unreachable(e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_lines() {
        let upd = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"{\"id\":1}"}}"#;
        assert!(matches!(classify(upd.into()), FromDaemon::Update(_)));
        let req = r#"{"jsonrpc":"2.0","method":"elicitation/create","params":{"sessionId":"s"},"id":"zc-out-0"}"#;
        assert!(matches!(classify(req.into()), FromDaemon::Request { .. }));
        let ans = r#"{"jsonrpc":"2.0","result":{"a":1},"id":3}"#;
        assert!(matches!(
            classify(ans.into()),
            FromDaemon::Answer {
                id: 3,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(classify("nope".into()), FromDaemon::Other));
        // A tool input with an `id` member is still an update.
        let tool = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"tool_call","rawInput":{"id":5}}}"#;
        assert!(matches!(classify(tool.into()), FromDaemon::Update(_)));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"logs/event","params":{}}"#.into()),
            FromDaemon::Other
        ));
    }
}
