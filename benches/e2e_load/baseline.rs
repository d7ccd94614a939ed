//! The e2e_load baseline: a minimal raw NDJSON JSON-RPC server, this same
//! executable re-run as `e2e_load __baseline-server <dir> empty|status|frozen`.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::common::{ScratchDir, Server};
use crate::minimal_request::MinimalRequest;

/// The argument that runs this executable as the baseline server.
pub const BASELINE_ARG: &str = "__baseline-server";

/// What the baseline answers `status` with.
#[derive(Debug)]
enum Answer {
    /// `{}`: the minimal server.
    Empty,
    /// A result shaped and sized like the daemon's (§8.2), serialized per request.
    Status(StatusInfo),
    /// The same result, serialized once and copied per request.
    Frozen(Vec<u8>),
}

/// Which baseline to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Empty,
    Status,
    Frozen,
}

impl Mode {
    pub fn parse(arg: &str) -> Option<Self> {
        match arg {
            "empty" => Some(Self::Empty),
            "status" => Some(Self::Status),
            "frozen" => Some(Self::Frozen),
            _ => None,
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::Status => "status",
            Self::Frozen => "frozen",
        }
    }

    /// The server's name in the report.
    fn name(self) -> &'static str {
        match self {
            Self::Empty => "baseline",
            Self::Status => "baseline-status",
            Self::Frozen => "baseline-frozen",
        }
    }

    /// Its scratch dir's prefix: the same length as the daemon's, so paths weigh the same.
    fn dir_prefix(self) -> &'static str {
        match self {
            Self::Empty => "basemt",
            Self::Status => "basest",
            Self::Frozen => "basefz",
        }
    }
}

/// The fixed parts of the status-shaped result.
#[derive(Debug)]
struct StatusInfo {
    started: Instant,
    pid: u32,
    config_dir: String,
    config_file: String,
    data_dir: String,
    endpoint: String,
    connections: std::sync::atomic::AtomicUsize,
}

/// The members of the daemon's `status` result, in its order.
#[derive(serde::Serialize)]
struct StatusResult<'a> {
    server_version: &'static str,
    protocol_version: u32,
    server_pid: u32,
    uptime_secs: u64,
    principal_id: &'a str,
    active_sessions: usize,
    session_ids: &'a [String],
    connections: usize,
    ephemeral: bool,
    config_dir: &'a str,
    config_file: &'a str,
    data_dir: &'a str,
    local_ipc_endpoint: &'a str,
}

/// Runs the minimal server on `<dir>/data/daemon.sock` until killed.
pub fn baseline_server(dir: &Path, mode: Mode) {
    let data = dir.join("data");
    let sock = data.join("daemon.sock");
    let info = StatusInfo {
        started: Instant::now(),
        pid: std::process::id(),
        config_dir: dir.to_string_lossy().into_owned(),
        config_file: dir.join("config.toml").to_string_lossy().into_owned(),
        data_dir: data.to_string_lossy().into_owned(),
        endpoint: sock.to_string_lossy().into_owned(),
        connections: Default::default(),
    };
    let answer = match mode {
        Mode::Empty => Answer::Empty,
        Mode::Status => Answer::Status(info),
        Mode::Frozen => {
            info.connections
                .store(1, std::sync::atomic::Ordering::Relaxed);
            let mut rendered = Vec::new();
            write_status(&info, &mut rendered);
            Answer::Frozen(rendered)
        }
    };
    let answer: &'static Answer = Box::leak(Box::new(answer));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        std::fs::create_dir_all(&data).expect("data dir");
        let _ = std::fs::remove_file(&sock);
        let listener = UnixListener::bind(&sock).expect("bind the baseline socket");
        let endpoint = serde_json::to_string(&sock.to_string_lossy()).expect("json");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{{\"event\":\"ready\",\"endpoint\":{endpoint}}}").expect("stdout");
        out.flush().expect("stdout");
        drop(out);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(serve_baseline(stream, answer));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
}

const BASELINE_MAX_FRAME: usize = 8 * 1024 * 1024;
const PARSE_ERROR: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error\"},\"id\":null}\n";
const TOO_LARGE: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Frame too large\"},\"id\":null}\n";

async fn serve_baseline(stream: UnixStream, answer: &'static Answer) {
    use std::sync::atomic::Ordering::Relaxed;
    if let Answer::Status(info) = answer {
        info.connections.fetch_add(1, Relaxed);
    }
    serve_frames(stream, answer).await;
    if let Answer::Status(info) = answer {
        info.connections.fetch_sub(1, Relaxed);
    }
}

async fn serve_frames(stream: UnixStream, answer: &'static Answer) {
    let (rd, mut wr) = stream.into_split();
    let mut frames = FramedRead::new(rd, LinesCodec::new_with_max_length(BASELINE_MAX_FRAME));
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    let mut after_error = false;
    loop {
        let first = match frames.next().await {
            Some(item) => item,
            // After a decode error FramedRead yields one `None` before reading on.
            None if after_error => {
                after_error = false;
                continue;
            }
            None => break,
        };
        let mut open = answer_frame(answer, first, &mut out, &mut after_error);
        // Answer every frame that is already readable, then write once.
        while open {
            match frames.next().now_or_never() {
                Some(Some(item)) => open = answer_frame(answer, item, &mut out, &mut after_error),
                Some(None) if after_error => after_error = false,
                Some(None) => open = false,
                None => break,
            }
        }
        if !out.is_empty() && wr.write_all(&out).await.is_err() {
            break;
        }
        out.clear();
        if out.capacity() > 1 << 20 {
            out = Vec::with_capacity(4096);
        }
        if !open {
            break;
        }
    }
}

/// Appends the answer to one frame; `false` when the connection failed.
fn answer_frame(
    answer: &Answer,
    item: Result<String, LinesCodecError>,
    out: &mut Vec<u8>,
    after_error: &mut bool,
) -> bool {
    let line = match item {
        Ok(line) => line,
        Err(LinesCodecError::MaxLineLengthExceeded) => {
            *after_error = true;
            out.extend_from_slice(TOO_LARGE);
            return true;
        }
        Err(LinesCodecError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
            *after_error = true;
            out.extend_from_slice(PARSE_ERROR);
            return true;
        }
        Err(LinesCodecError::Io(_)) => return false,
    };
    *after_error = false;
    if line.trim().is_empty() {
        return true;
    }
    match serde_json::from_str::<MinimalRequest<'_>>(&line) {
        Ok(req) => {
            let Some(id) = req.id else { return true }; // a notification
            let valid = req.jsonrpc.is_some_and(|v| v.get() == "\"2.0\"");
            match req.method.as_deref() {
                Some("status") if valid => {
                    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":");
                    match answer {
                        Answer::Empty => out.extend_from_slice(b"{}"),
                        Answer::Status(info) => write_status(info, out),
                        Answer::Frozen(rendered) => out.extend_from_slice(rendered),
                    }
                    out.extend_from_slice(b",\"id\":");
                }
                Some("initialize") if valid => {
                    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":");
                }
                Some(_) if valid => out.extend_from_slice(
                    b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"},\"id\":",
                ),
                _ => out.extend_from_slice(
                    b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"},\"id\":",
                ),
            }
            out.extend_from_slice(id.get().as_bytes());
            out.extend_from_slice(b"}\n");
        }
        Err(_) => out.extend_from_slice(PARSE_ERROR),
    }
    true
}

fn write_status(info: &StatusInfo, out: &mut Vec<u8>) {
    let result = StatusResult {
        server_version: "0.1.0",
        protocol_version: 1,
        server_pid: info.pid,
        uptime_secs: info.started.elapsed().as_secs(),
        principal_id: "shared-operator",
        active_sessions: 0,
        session_ids: &[],
        connections: info.connections.load(std::sync::atomic::Ordering::Relaxed),
        ephemeral: false,
        config_dir: &info.config_dir,
        config_file: &info.config_file,
        data_dir: &info.data_dir,
        local_ipc_endpoint: &info.endpoint,
    };
    // Serializing strings and numbers into a Vec cannot fail.
    let _ = serde_json::to_writer(out, &result);
}

/// The baseline, out of process: this executable in its server mode.
pub fn start_baseline(mode: Mode) -> std::io::Result<Server> {
    let dir = ScratchDir::new(mode.dir_prefix())?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg(BASELINE_ARG).arg(dir.path()).arg(mode.arg());
    Server::start(mode.name(), cmd, Some(dir))
}
