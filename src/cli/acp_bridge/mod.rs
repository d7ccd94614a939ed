//! `zeroclaw acp [--agent ALIAS]`: an ACP agent (protocol version 1) on
//! stdin/stdout that editors launch, bridging into the daemon's durable,
//! shared sessions (docs/clients.md).
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the loop: the editor's frames, the daemon's frames, one at a time |
//! | `editor.rs` | the editor's wire: stdin frames, the byte-bounded stdout queue |
//! | `daemon.rs` | the daemon's wire: connect or start the daemon, classify lines |
//! | `requests.rs` | each ACP method the editor calls, as daemon calls |
//! | `to_acp.rs` | daemon updates and transcript rows as ACP `session/update`s |
//! | `to_daemon.rs` | `initialize`, prompt content, permission answers in our terms |
//! | `history.rs` | `session/load`'s replay and `session/list`, read on a side connection |
//! | `fuzzing.rs` | the editor-line parsing for the fuzz target `bridge_input` only (not an API) |
//!
//! One task owns everything (no locks): it waits for the next frame of
//! either side, handles it to the end (queueing what the editor gets),
//! and waits again. Sessions are opened, attached and prompted on one
//! daemon connection, so their streams and approvals come back on it;
//! reads that are awaited in place (`session/messages`, `session/list`)
//! use a second one, so they never wait behind a turn's stream.
//! Stdout carries protocol only; every diagnostic goes to stderr.

mod chunk_splice;
mod daemon;
mod editor;
#[doc(hidden)]
pub mod fuzzing;
mod history;
mod requests;
mod to_acp;
mod to_daemon;

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use serde_json::{json, Value};

use crate::cli::conn::ClientPeer;
use crate::codec::Frame;
use crate::error::{ErrorData, Reason, RpcError};
use crate::limits::MAX_FRAME_BYTES;
use daemon::{DaemonConn, FromDaemon, SendError, Unreachable};
use editor::{Gone, Out};
use to_acp::Mapped;

pub use editor::OUT_BUDGET;

/// JSON-RPC codes the bridge answers with.
mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INTERNAL: i64 = -32603;
    /// ACP's "resource not found".
    pub const NOT_FOUND: i64 = -32002;
}

/// Why an editor's request was not passed on to the daemon: the one place
/// it becomes the editor's error.
#[derive(Debug)]
enum NotSent {
    /// No daemon connection (none could be started, or it was lost).
    Unreachable(Unreachable),
    /// The request's frame (`bytes`) is over the daemon's frame limit;
    /// `what` names it for the person ("prompt").
    TooLarge { what: String, bytes: usize },
}

impl From<Unreachable> for NotSent {
    fn from(u: Unreachable) -> Self {
        Self::Unreachable(u)
    }
}

impl NotSent {
    /// The JSON-RPC error object the editor's request fails with: a frame
    /// too large is the editor's invalid params (`-32602`, with the daemon's
    /// `frame_too_large` reason and limit), anything else internal.
    fn error(&self) -> Value {
        match self {
            Self::Unreachable(u) => json!({"code": code::INTERNAL, "message": u.0}),
            Self::TooLarge { what, bytes } => {
                let message = format!("{what} too large: {}", SendError::TooLarge(*bytes));
                let data = ErrorData::reason(Reason::FrameTooLarge)
                    .with("max_frame_bytes", MAX_FRAME_BYTES);
                let e = RpcError::invalid_params_reason(message, data);
                json!({"code": e.code(), "message": e.to_string(), "data": e.data()})
            }
        }
    }
}

/// What a request of ours to the daemon (main connection) is for.
#[derive(Debug)]
enum Pending {
    /// `session/new` for the editor's `session/new` (`params` kept to send
    /// again without `cwd` when the principal may not choose one).
    New { id: Value, params: Value },
    /// `session/attach` (then `session/new` to resume) for `session/load`
    /// (`replay`) or `session/resume`.
    Open {
        id: Value,
        sid: String,
        replay: bool,
        cwd: Option<String>,
        /// The attach failed and this is the `session/new` that resumes.
        resuming: bool,
    },
    /// `session/prompt`.
    Prompt { id: Value },
    /// `session/close`.
    Close { id: Value },
    /// An answer nobody waits for (`session/cancel`, `session/approve`).
    Ignore,
}

/// What a request of ours to the editor waits for.
#[derive(Debug)]
enum Asked {
    /// `session/request_permission` for this approval.
    Permission { sid: String, request_id: String },
    /// `elicitation/create` forwarded for the daemon's request `daemon_id`.
    Question { daemon_id: Value },
}

struct Bridge {
    config_dir: Option<OsString>,
    /// `--agent`, else `default_agent`, else the first configured agent, once connected.
    agent: Option<String>,
    out: Out,
    daemon: Option<DaemonConn>,
    side: Option<ClientPeer>,
    pending: HashMap<u64, Pending>,
    asked: HashMap<String, Asked>,
    next_ask: u64,
    /// The editor answers `elicitation/create` (form).
    elicitation: bool,
    /// The last tool call of each session, named by a permission request.
    last_tool: HashMap<String, String>,
    /// The directory the editor started us in (`session/list`'s `cwd`).
    cwd: String,
}

/// Runs the bridge until the editor closes stdin; the exit status.
pub async fn run(config_dir: Option<OsString>, agent: Option<String>) -> i32 {
    let (out, writer) = Out::new(editor::stdout());
    let mut b = Bridge {
        config_dir,
        agent,
        out,
        daemon: None,
        side: None,
        pending: HashMap::new(),
        asked: HashMap::new(),
        next_ask: 0,
        elicitation: false,
        last_tool: HashMap::new(),
        cwd: std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let mut input = editor::input();
    let status = loop {
        // What the last step gathered reaches the writer before the loop waits.
        if b.out.flush().await.is_err() {
            eprintln!("zeroclaw acp: the editor closed stdout");
            break 1;
        }
        let step = tokio::select! {
            frame = input.next() => match frame {
                Some(Ok(Frame::Line(line))) => b.on_editor(&line).await,
                Some(Ok(Frame::Rejected(r))) => {
                    let msg = format!("frame rejected: {}", r.reason());
                    b.out.send(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": code::PARSE, "message": msg}})).await
                }
                // The editor closed stdin (it quit): running turns go on in the daemon.
                None => break 0,
                Some(Err(e)) => {
                    eprintln!("zeroclaw acp: reading stdin: {e}");
                    break 1;
                }
            },
            msg = next_from(&mut b.daemon) => match b.on_daemon(msg).await {
                Ok(()) => b.on_ready_daemon_frames().await,
                gone => gone,
            },
        };
        if step.is_err() {
            eprintln!("zeroclaw acp: the editor closed stdout");
            break 1;
        }
    };
    // What is gathered and queued still reaches the editor, if it reads.
    let _ = b.out.flush().await;
    drop(b);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    status
}

/// The daemon's next message, or never while there is no connection.
async fn next_from(d: &mut Option<DaemonConn>) -> FromDaemon {
    match d {
        Some(d) => d.next().await,
        None => std::future::pending().await,
    }
}

impl Bridge {
    /// The main connection, opened (and the daemon started) if needed.
    async fn daemon(&mut self) -> Result<&mut DaemonConn, Unreachable> {
        if self.daemon.is_none() {
            self.daemon = Some(DaemonConn::open(self.config_dir.as_deref()).await?);
        }
        self.daemon
            .as_mut()
            .ok_or_else(|| Unreachable("no daemon connection".into()))
    }

    /// The side connection, opened if needed.
    async fn side(&mut self) -> Result<&mut ClientPeer, Unreachable> {
        if self.side.is_none() {
            self.daemon().await?;
            self.side = Some(daemon::side(self.config_dir.as_deref()).await?);
        }
        self.side
            .as_mut()
            .ok_or_else(|| Unreachable("no daemon connection".into()))
    }

    /// The agent sessions are opened with.
    async fn agent(&mut self) -> Result<String, Unreachable> {
        if let Some(a) = &self.agent {
            return Ok(a.clone());
        }
        let side = self.side().await?;
        let found = crate::cli::chat::session::default_agent(side)
            .await
            .map_err(|e| Unreachable(e.message()))?;
        let a = found.ok_or_else(|| Unreachable("no agent is configured".into()))?;
        self.agent = Some(a.clone());
        Ok(a)
    }

    /// Sends a request on the main connection and remembers what it is
    /// for. A request whose frame the daemon could not read (over its frame
    /// limit) is not sent: the daemon could only refuse it with `id: null`.
    async fn call(&mut self, method: &str, params: Value, then: Pending) -> Result<(), NotSent> {
        let d = self.daemon().await?;
        match d.request(method, params).await {
            Ok(id) => {
                self.pending.insert(id, then);
                Ok(())
            }
            Err(SendError::TooLarge(bytes)) => {
                let what = match method {
                    "session/prompt" => "prompt".to_owned(),
                    other => other.to_owned(),
                };
                Err(NotSent::TooLarge { what, bytes })
            }
            Err(SendError::Io(e)) => {
                self.lost(&e.to_string()).await.ok();
                Err(NotSent::Unreachable(Unreachable(format!(
                    "the daemon connection was lost: {e}"
                ))))
            }
        }
    }

    /// One message of the daemon's.
    async fn on_daemon(&mut self, msg: FromDaemon) -> Result<(), Gone> {
        match msg {
            FromDaemon::Update(line) => {
                let spliced = self
                    .out
                    .send_with(|batch| chunk_splice::splice_into(line.as_bytes(), batch))
                    .await?;
                if spliced {
                    return Ok(());
                }
                self.on_update(&line).await
            }
            FromDaemon::Answer { id, outcome } => match self.pending.remove(&id) {
                Some(p) => self.answered(p, outcome).await,
                None => Ok(()),
            },
            FromDaemon::Request { id, method, params } => {
                if method == "elicitation/create" && self.elicitation {
                    return self
                        .ask(
                            "elicitation/create",
                            params,
                            Asked::Question { daemon_id: id },
                        )
                        .await;
                }
                // A refusal makes the question "unavailable" at once (or
                // leaves it to another attached client): no turn hangs.
                let refusal = json!({"code": code::METHOD_NOT_FOUND, "message": format!("the editor does not answer {method}")});
                if let Some(d) = self.daemon.as_mut() {
                    if let Err(e) = d.respond(&id, Err(refusal)).await {
                        return self.lost(&e.to_string()).await;
                    }
                }
                Ok(())
            }
            FromDaemon::Other => Ok(()),
            FromDaemon::Closed(why) => self.lost(&why).await,
        }
    }

    /// An update that is not a plain text chunk (or not in the daemon's
    /// usual form): mapped by decoding.
    async fn on_update(&mut self, line: &str) -> Result<(), Gone> {
        match to_acp::map_update(line) {
            Mapped::Frame(f) => self.out.send_line(f).await,
            Mapped::ToolCall {
                frame,
                session_id,
                tool_call_id,
            } => {
                self.last_tool.insert(session_id, tool_call_id);
                self.out.send_line(frame).await
            }
            Mapped::Approval(a) => {
                let tool = self.last_tool.get(&a.session_id).cloned();
                let params =
                    to_daemon::permission_params(&a, tool.as_deref().unwrap_or(&a.request_id));
                let asked = Asked::Permission {
                    sid: a.session_id,
                    request_id: a.request_id,
                };
                self.ask("session/request_permission", params, asked).await
            }
            Mapped::Nothing => Ok(()),
        }
    }

    /// The daemon's messages that are already here (a turn's stream comes
    /// in bursts), handled without waiting, up to one batch for the editor:
    /// the batch is queued in one piece, and the editor's own frames wait
    /// no longer than one batch takes.
    async fn on_ready_daemon_frames(&mut self) -> Result<(), Gone> {
        while self.out.batched() < editor::BATCH_BYTES {
            let Some(d) = self.daemon.as_mut() else {
                return Ok(());
            };
            // Cancel-safe: a half-read line stays in the reader's buffer.
            match d.next().now_or_never() {
                Some(msg) => self.on_daemon(msg).await?,
                None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Sends a request to the editor.
    async fn ask(&mut self, method: &str, params: Value, asked: Asked) -> Result<(), Gone> {
        self.next_ask += 1;
        let id = format!("zc-{}", self.next_ask);
        self.asked.insert(id.clone(), asked);
        self.out
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
    }

    /// The daemon connection ended: every request waiting on it fails with
    /// a clear message; the next request of the editor's connects again
    /// (starting the daemon if none runs).
    async fn lost(&mut self, why: &str) -> Result<(), Gone> {
        eprintln!("zeroclaw acp: lost the daemon connection: {why}");
        self.daemon = None;
        self.side = None;
        self.asked
            .retain(|_, a| !matches!(a, Asked::Question { .. }));
        let pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            let (id, msg) = match p {
                Pending::Prompt { id } => (
                    id,
                    format!("the daemon stopped during the turn ({why}); what was saved shows on session/load"),
                ),
                Pending::New { id, .. } | Pending::Open { id, .. } | Pending::Close { id } => {
                    (id, format!("the daemon connection was lost: {why}"))
                }
                Pending::Ignore => continue,
            };
            self.out.fail(&id, code::INTERNAL, &msg).await?;
        }
        Ok(())
    }
}
