//! The client side of the CLI (§13): connect to the endpoint the
//! environment names, `initialize`, send one request and stream what the
//! daemon says until its answer arrives, answering the daemon's own
//! questions (`elicitation/create`) and, if asked to, approvals.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::codec::write_json_line;
use crate::endpoint::{self, split, LocalReadHalf, LocalWriteHalf};

/// Exit statuses of the client commands.
pub mod exit {
    /// The daemon answered a result.
    pub const OK: i32 = 0;
    /// The daemon answered an error, or `--timeout` expired.
    pub const RPC_ERROR: i32 = 1;
    /// Bad command line.
    pub const USAGE: i32 = 2;
    /// No daemon at the resolved endpoint.
    pub const NO_DAEMON: i32 = 3;
}

/// How the client answers what the daemon asks while a request runs.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// `--approve DECISION`: answer every `approval_request` with it.
    pub approve: Option<&'static str>,
    /// `--elicitation-reply JSON`: the result for every `elicitation/create`.
    pub elicitation_reply: Option<Value>,
}

/// A failure that ends the command, with its exit status.
#[derive(Debug)]
pub struct Failure {
    pub status: i32,
    pub message: String,
}

impl Failure {
    fn new(status: i32, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

/// A connected, initialized client.
#[derive(Debug)]
pub struct Client {
    lines: tokio::io::Lines<BufReader<LocalReadHalf>>,
    writer: LocalWriteHalf,
    next_id: u64,
}

/// What the daemon said to one request.
#[derive(Debug)]
pub enum Answer {
    Result(Value),
    Error(Value),
}

impl Client {
    /// Connects to the endpoint resolved from `config_dir` and the environment, and initializes.
    pub async fn connect(config_dir: Option<&std::ffi::OsStr>) -> Result<Self, Failure> {
        let dirs = endpoint::resolve_dirs_from_env(config_dir)
            .map_err(|e| Failure::new(exit::NO_DAEMON, e.to_string()))?;
        let name = endpoint::resolve_endpoint(&dirs.data_dir, |k| std::env::var_os(k));
        let stream = endpoint::connect(&name)
            .await
            .map_err(|e| Failure::new(exit::NO_DAEMON, format!("cannot connect to {name}: {e}")))?;
        let (r, w) = split(stream);
        let mut client = Self {
            lines: BufReader::new(r).lines(),
            writer: w,
            next_id: 0,
        };
        let params =
            json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
        match client
            .call("initialize", params, &Answers::default(), |_| {})
            .await?
        {
            Answer::Result(_) => Ok(client),
            Answer::Error(e) => Err(Failure::new(exit::RPC_ERROR, e.to_string())),
        }
    }

    async fn send(&mut self, msg: &Value) -> Result<(), Failure> {
        write_json_line(&mut self.writer, msg)
            .await
            .map_err(|e| Failure::new(exit::RPC_ERROR, format!("connection lost: {e}")))
    }

    /// Sends one request; every other message the daemon sends meanwhile is
    /// handed to `on_message` (as the raw line) and answered per `answers`.
    pub async fn call(
        &mut self,
        method: &str,
        params: Value,
        answers: &Answers,
        mut on_message: impl FnMut(&str),
    ) -> Result<Answer, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}))
            .await?;
        loop {
            let line = match self.lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return Err(Failure::new(
                        exit::RPC_ERROR,
                        "the daemon closed the connection",
                    ))
                }
                Err(e) => {
                    return Err(Failure::new(
                        exit::RPC_ERROR,
                        format!("connection lost: {e}"),
                    ))
                }
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                on_message(&line);
                continue;
            };
            if msg.get("method").is_none() {
                if msg.get("id") == Some(&json!(id)) {
                    return Ok(match msg.get("error") {
                        Some(e) => Answer::Error(e.clone()),
                        None => Answer::Result(msg.get("result").cloned().unwrap_or(Value::Null)),
                    });
                }
                continue; // an answer to one of our approvals
            }
            on_message(&line);
            self.answer(&msg, answers).await?;
        }
    }

    /// Answers a daemon request or reacts to a notification.
    async fn answer(&mut self, msg: &Value, answers: &Answers) -> Result<(), Failure> {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let (Some(id), "elicitation/create") = (msg.get("id"), method) {
            let result = answers
                .elicitation_reply
                .clone()
                .unwrap_or_else(|| json!({"action": "decline"}));
            return self
                .send(&json!({"jsonrpc": "2.0", "result": result, "id": id}))
                .await;
        }
        if let Some(id) = msg.get("id") {
            let error = json!({"code": -32601, "message": format!("Unknown method: {method}")});
            return self
                .send(&json!({"jsonrpc": "2.0", "error": error, "id": id}))
                .await;
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let field =
            |camel: &str, snake: &str| params.get(camel).or_else(|| params.get(snake)).cloned();
        if let (Some(decision), "session/update") = (&answers.approve, method) {
            if field("type", "type") == Some(json!("approval_request")) {
                self.next_id += 1;
                let approve = json!({
                    "jsonrpc": "2.0",
                    "method": "session/approve",
                    "params": {
                        "session_id": field("sessionId", "session_id"),
                        "request_id": field("requestId", "request_id"),
                        "decision": decision,
                    },
                    "id": format!("approve-{}", self.next_id),
                });
                self.send(&approve).await?;
            }
        }
        Ok(())
    }
}

/// `zeroclaw rpc METHOD [PARAMS]`: result on stdout, everything else on stderr.
pub async fn rpc(
    config_dir: Option<&std::ffi::OsStr>,
    method: &str,
    params: Value,
    answers: Answers,
    timeout: Option<Duration>,
) -> i32 {
    let work = async {
        let mut client = Client::connect(config_dir).await?;
        client
            .call(method, params, &answers, |line| {
                eprintln!("{}", crate::shown::json(line));
            })
            .await
    };
    let outcome = match timeout {
        Some(t) => match tokio::time::timeout(t, work).await {
            Ok(r) => r,
            Err(_) => Err(Failure::new(
                exit::RPC_ERROR,
                format!("timed out after {} s", t.as_secs_f64()),
            )),
        },
        None => work.await,
    };
    report(outcome)
}

/// Prints an outcome the way every client command does (§13): the
/// result on stdout, an error object or a failure on stderr; the exit status.
/// JSON goes out through [`crate::shown::json`] (the same value, no byte a
/// terminal would act on).
fn report(outcome: Result<Answer, Failure>) -> i32 {
    use crate::shown::{json, Shown};
    match outcome {
        Ok(Answer::Result(v)) => {
            println!("{}", json(&v.to_string()));
            exit::OK
        }
        Ok(Answer::Error(e)) => {
            eprintln!("{}", json(&e.to_string()));
            exit::RPC_ERROR
        }
        Err(f) => {
            eprintln!("zeroclaw: {}", Shown::line(&f.message));
            f.status
        }
    }
}

/// Connects and calls `method` without params (no daemon requests expected).
async fn call_once(config_dir: Option<&std::ffi::OsStr>, method: &str) -> Result<Answer, Failure> {
    let mut client = Client::connect(config_dir).await?;
    client
        .call(method, json!({}), &Answers::default(), |_| {})
        .await
}

/// `zeroclaw status [--json]`.
pub async fn status(config_dir: Option<&std::ffi::OsStr>, raw: bool) -> i32 {
    match call_once(config_dir, "status").await {
        Ok(Answer::Result(v)) if !raw => {
            print!("{}", crate::shown::Shown::text(&render_status(&v)));
            exit::OK
        }
        other => report(other),
    }
}

/// `zeroclaw pair`: `pairing/code`, printed with how to use it.
pub async fn pair(config_dir: Option<&std::ffi::OsStr>) -> i32 {
    match call_once(config_dir, "pairing/code").await {
        Ok(Answer::Result(v)) => {
            println!("{}", field_text(&v, "code"));
            if v["redeemable"] != Value::Bool(true) {
                eprintln!("zeroclaw: note: the code is not redeemable now: the gateway is disabled or gateway.require_pairing is false");
            } else {
                eprintln!("Enter it in the dashboard, or: curl -X POST -H 'X-Pairing-Code: <code>' http://<gateway>/pair (single use)");
            }
            exit::OK
        }
        other => report(other),
    }
}

/// Member `k` of `v` as display text: a string as it is, any other value
/// as compact JSON, a missing one as "".
pub fn field_text(v: &Value, k: &str) -> String {
    v.get(k)
        .map(|x| {
            x.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| x.to_string())
        })
        .unwrap_or_default()
}

/// The readable form of a `status` result.
pub fn render_status(v: &Value) -> String {
    let s = |k: &str| field_text(v, k);
    let ids: Vec<String> = v
        .get("session_ids")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let sessions = if ids.is_empty() {
        s("active_sessions")
    } else {
        format!("{} ({})", s("active_sessions"), ids.join(", "))
    };
    format!(
        "zeroclaw daemon {} (protocol {}), pid {}, up {} s\n\
         principal:    {}\n\
         endpoint:     {}\n\
         config file:  {}\n\
         data dir:     {}\n\
         connections:  {}\n\
         live sessions: {}\n\
         ephemeral:    {}\n",
        s("server_version"),
        s("protocol_version"),
        s("server_pid"),
        s("uptime_secs"),
        s("principal_id"),
        s("local_ipc_endpoint"),
        s("config_file"),
        s("data_dir"),
        s("connections"),
        sessions,
        if v.get("ephemeral") == Some(&Value::Bool(true)) {
            "yes"
        } else {
            "no"
        },
    )
}

/// How long `zeroclaw upload` waits for a chunk's answer before sending it again.
const CHUNK_ANSWER_WAIT: Duration = Duration::from_secs(30);
/// Attempts per chunk.
const CHUNK_ATTEMPTS: usize = 3;

/// `zeroclaw upload SESSION FILE [--filename NAME]`: begin, 1 MiB chunks,
/// commit with the declared SHA-256; a chunk whose answer is lost is sent
/// again (the daemon acknowledges an identical re-sent chunk as a duplicate).
pub async fn upload(
    config_dir: Option<&std::ffi::OsStr>,
    session: &str,
    file: &std::path::Path,
    filename: Option<String>,
) -> i32 {
    report(upload_file(config_dir, session, file, filename).await)
}

/// Uploads `file` (as `zeroclaw upload` does, progress on a terminal); the
/// commit's answer: the file entry (`marker`, `workspace_path`, …) or the
/// daemon's error.
pub async fn upload_file(
    config_dir: Option<&std::ffi::OsStr>,
    session: &str,
    file: &std::path::Path,
    filename: Option<String>,
) -> Result<Answer, Failure> {
    use base64::Engine;
    use std::io::IsTerminal;
    let bytes = std::fs::read(file)
        .map_err(|e| Failure::new(exit::USAGE, format!("cannot read {}: {e}", file.display())))?;
    let name = filename.unwrap_or_else(|| {
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "upload".into())
    });
    let sha = crate::hex::sha256(&bytes);
    let progress = std::io::stderr().is_terminal();
    let work = async {
        let mut client = Client::connect(config_dir).await?;
        let none = Answers::default();
        let begin = json!({"session_id": session, "size_bytes": bytes.len(), "filename": name, "sha256": sha});
        let upload_id = match client
            .call("file/upload/begin", begin, &none, |_| {})
            .await?
        {
            Answer::Result(r) => r
                .get("upload_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            e @ Answer::Error(_) => return Ok(e),
        };
        let chunk = crate::limits::UPLOAD_CHUNK_BYTES;
        for (i, piece) in bytes.chunks(chunk).enumerate() {
            let params = json!({
                "upload_id": upload_id,
                "offset": i * chunk,
                "data_b64": base64::engine::general_purpose::STANDARD.encode(piece),
            });
            let mut answered = None;
            for _ in 0..CHUNK_ATTEMPTS {
                if let Ok(r) = tokio::time::timeout(
                    CHUNK_ANSWER_WAIT,
                    client.call("file/upload/chunk", params.clone(), &none, |_| {}),
                )
                .await
                {
                    answered = Some(r?);
                    break;
                }
            }
            match answered {
                Some(Answer::Result(_)) => {}
                Some(e @ Answer::Error(_)) => return Ok(e),
                None => {
                    return Err(Failure::new(
                        exit::RPC_ERROR,
                        "no answer to a chunk after 3 attempts",
                    ))
                }
            }
            if progress {
                let done = (i * chunk + piece.len()) as f64;
                eprint!(
                    "\r{:5.1}% {} / {} bytes",
                    100.0 * done / bytes.len().max(1) as f64,
                    done as u64,
                    bytes.len()
                );
            }
        }
        if progress {
            eprintln!();
        }
        client
            .call(
                "file/upload/commit",
                json!({ "upload_id": upload_id }),
                &none,
                |_| {},
            )
            .await
    };
    work.await
}
