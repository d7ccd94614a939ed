//! The bridge's connection to the daemon: found where every client finds
//! it (`--config-dir`, the environment), the daemon started when none
//! answers (detached, so it outlives the editor; never `--ephemeral`), and
//! one line read at a time in the bridge's own loop (no reader task: while
//! the editor's queue is full the loop stops reading, and the daemon's
//! bounded outbound queue holds the turn back).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio_util::codec::FramedRead;

use crate::cli::conn::{self, ClientPeer};
use crate::codec::{Frame, FrameCodec};
use crate::endpoint::{self, split, LocalReadHalf, LocalWriteHalf};
use crate::limits::MAX_FRAME_BYTES;

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
    /// The frames written whose reading the daemon has not yet shown.
    unread: Unread,
}

/// Why the daemon could not be reached; the editor's request fails with it.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Why a frame was not passed to the daemon.
#[derive(Debug)]
pub enum SendError {
    /// The frame (this many bytes before its `\n`) is over the daemon's
    /// frame limit: it was not written, since the daemon could not read it
    /// and could not tell which request its refusal answers.
    TooLarge(usize),
    /// Writing failed: the connection is gone.
    Io(std::io::Error),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge(bytes) => write!(
                f,
                "{bytes} bytes, the daemon accepts frames up to {MAX_FRAME_BYTES} bytes"
            ),
            Self::Io(e) => e.fmt(f),
        }
    }
}

impl DaemonConn {
    /// Connects to the endpoint (starting the daemon if none answers) and
    /// initializes, advertising form elicitation: the bridge answers the
    /// daemon's questions (forwarded to the editor, or refused).
    pub async fn open(config_dir: Option<&OsStr>) -> Result<Self, Unreachable> {
        let name = conn::endpoint_name(config_dir).map_err(|e| Unreachable(e.message))?;
        let stream = match endpoint::connect(&name).await {
            Ok(s) => s,
            Err(_) => {
                let started = start_daemon(config_dir)?;
                connect_patiently(&name, started).await?
            }
        };
        let (r, writer) = split(stream);
        let mut c = DaemonConn::new(r, writer);
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

    fn new(reader: LocalReadHalf, writer: LocalWriteHalf) -> Self {
        DaemonConn {
            reader: FramedRead::new(reader, FrameCodec::default()),
            writer,
            next_id: 0,
            unread: Unread::default(),
        }
    }

    /// Sends a request; its id. A frame over the daemon's limit is not sent.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<u64, SendError> {
        let id = self.next_id + 1;
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        self.write(&msg, Some(id)).await?;
        self.next_id = id;
        Ok(id)
    }

    /// Answers a request of the daemon's. An answer over the daemon's frame
    /// limit (an editor's huge form answer) becomes an error answer, so the
    /// daemon's question still ends.
    pub async fn respond(
        &mut self,
        id: &Value,
        outcome: Result<Value, Value>,
    ) -> std::io::Result<()> {
        let msg = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
            Err(error) => json!({"jsonrpc": "2.0", "error": error, "id": id}),
        };
        match self.write(&msg, None).await {
            Ok(()) => Ok(()),
            Err(SendError::Io(e)) => Err(e),
            Err(too_large @ SendError::TooLarge(_)) => {
                let message = format!("the editor's answer is too large: {too_large}");
                let error = json!({"code": super::code::INTERNAL, "message": message});
                let msg = json!({"jsonrpc": "2.0", "error": error, "id": id});
                match self.write(&msg, None).await {
                    Ok(()) => Ok(()),
                    Err(SendError::Io(e)) => Err(e),
                    Err(e @ SendError::TooLarge(_)) => Err(std::io::Error::other(e.to_string())),
                }
            }
        }
    }

    /// Writes one frame, remembered as unread until the daemon shows it read it.
    async fn write(&mut self, msg: &Value, request: Option<u64>) -> Result<(), SendError> {
        let mut line = msg.to_string();
        // Measured as the daemon measures: every byte before the `\n`.
        if line.len() > MAX_FRAME_BYTES {
            return Err(SendError::TooLarge(line.len()));
        }
        let bytes = line.len();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .await
            .map_err(SendError::Io)?;
        self.unread.wrote(request, bytes);
        Ok(())
    }

    /// The next message. Cancel-safe (a half-read line stays buffered).
    pub async fn next(&mut self) -> FromDaemon {
        let msg = match self.reader.next().await {
            Some(Ok(Frame::Line(line))) => classify(line),
            Some(Ok(Frame::Rejected(_))) => Ok(FromDaemon::Other),
            Some(Err(e)) => return FromDaemon::Closed(e.to_string()),
            None => return FromDaemon::Closed("the daemon closed the connection".into()),
        };
        match msg {
            Ok(FromDaemon::Answer { id, outcome }) => {
                self.unread.answered(id);
                FromDaemon::Answer { id, outcome }
            }
            Ok(other) => other,
            Err(error) => {
                match self.unread.unreadable() {
                    Some(Some(id)) => FromDaemon::Answer {
                        id,
                        outcome: Err(error),
                    },
                    Some(None) => {
                        eprintln!("zeroclaw acp: the daemon could not read an answer the bridge sent it: {}", shown_error(&error));
                        FromDaemon::Other
                    }
                    None => {
                        eprintln!(
                            "zeroclaw acp: the daemon reported an error for no request: {}",
                            shown_error(&error)
                        );
                        FromDaemon::Other
                    }
                }
            }
        }
    }
}

/// An error object of the daemon's, on one line for the bridge's stderr.
fn shown_error(error: &Value) -> String {
    crate::shown::Shown::preview(&error.to_string(), 500).to_string()
}

/// Most frames kept unread: answers to the daemon's requests only leave
/// when a later request is answered, and a turn of many approvals asks
/// many; older ones are forgotten first.
const MAX_UNREAD: usize = 1024;

/// One frame written to the daemon.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Written {
    /// The request's id, `None` for an answer to a request of the daemon's.
    request: Option<u64>,
    /// Its bytes before the `\n`.
    bytes: usize,
}

/// The frames written to the daemon, in order, that may still be the one
/// an error with `id: null` answers.
///
/// The daemon answers a frame it cannot read (over its frame limit, not
/// JSON) with an error whose `id` is `null`, since it never learnt the id.
/// It reads one connection's frames in order and writes that error before
/// it reads the next frame, and before any answer to a later frame (which
/// can only be made once that frame is read). So:
///
/// - when the answer to request N arrives, every frame written up to N was
///   read, and an `id: null` error for any of them arrived before it: they
///   leave the list;
/// - an `id: null` error answers one of the frames still in the list. The
///   bridge writes well-formed JSON with numeric ids, so the daemon can only
///   fail to read one of its frames by its size (a daemon whose limit is
///   lower than ours): the error is the largest frame's, the earliest of
///   equals (the daemon reads in order). That frame and the frames before it
///   leave the list (had one of those been unreadable, its error would have
///   come first).
///
/// Its request then fails with the daemon's error, so an editor's request
/// is never left without an answer.
#[derive(Debug, Default)]
struct Unread {
    frames: VecDeque<Written>,
}

impl Unread {
    fn wrote(&mut self, request: Option<u64>, bytes: usize) {
        if self.frames.len() == MAX_UNREAD {
            self.frames.pop_front();
        }
        self.frames.push_back(Written { request, bytes });
    }

    /// Request `id` was answered: it and every frame before it were read.
    fn answered(&mut self, id: u64) {
        if let Some(i) = self.frames.iter().position(|w| w.request == Some(id)) {
            self.frames.drain(..=i);
        }
    }

    /// An `id: null` error arrived: the frame it answers (`Some(None)` for
    /// an answer of ours), or `None` when no frame is unread.
    fn unreadable(&mut self) -> Option<Option<u64>> {
        let mut pick: Option<(usize, usize)> = None;
        for (i, w) in self.frames.iter().enumerate() {
            if pick.is_none_or(|(_, bytes)| w.bytes > bytes) {
                pick = Some((i, w.bytes));
            }
        }
        let (i, _) = pick?;
        let w = self.frames.drain(..=i).next_back()?;
        Some(w.request)
    }
}

/// The opening of every `session/update` the daemon writes (its frames
/// are written by one serializer, members in this order).
const UPDATE_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"#;

/// Sorts a line; `Err` is an error whose `id` is `null`, the daemon's
/// answer to a frame it could not read (see [`Unread`]). An update is told
/// by its opening and its end (`}}`: the params object closes the frame; a
/// request ends with its id) without parsing, so the stream's bulk is
/// decoded once, by the mapping.
fn classify(line: String) -> Result<FromDaemon, Value> {
    if line.starts_with(UPDATE_PREFIX) && line.ends_with("}}") {
        return Ok(FromDaemon::Update(line));
    }
    let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(&line) else {
        return Ok(FromDaemon::Other);
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    let sorted = match (msg.remove("method"), msg.remove("id")) {
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
        (None, Some(Value::Null)) => match msg.remove("error") {
            Some(e) => return Err(e),
            None => FromDaemon::Other,
        },
        _ => FromDaemon::Other,
    };
    Ok(sorted)
}

/// Starts `zeroclaw daemon` (this executable) detached: its own process
/// group, so the editor's Ctrl-C or group kill does not reach it; no
/// stdin or stdout. Its stderr is a pipe the bridge reads until the daemon
/// answers, so that a daemon that cannot start (an invalid config.toml)
/// tells the editor why; then the pipe is closed, and the daemon's log
/// writer drops its later lines (its records stay readable with
/// `zeroclaw logs`). Never `--ephemeral`: the daemon outlives the editor.
fn start_daemon(config_dir: Option<&OsStr>) -> Result<Started, Unreachable> {
    let exe = std::env::current_exe()
        .map_err(|e| Unreachable(format!("cannot find the zeroclaw executable: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    if let Some(dir) = config_dir {
        cmd.arg("--config-dir").arg(dir);
    }
    cmd.arg("daemon")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = tokio::process::Command::from(cmd)
        .spawn()
        .map_err(|e| Unreachable(format!("cannot start the daemon: {e}")))?;
    eprintln!(
        "zeroclaw acp: no daemon answered; started one (pid {})",
        child.id().unwrap_or_default()
    );
    let stderr = child.stderr.take();
    Ok(Started {
        child,
        stderr,
        said: Vec::new(),
    })
}

/// A daemon the bridge started, until it answers. Dropping it leaves the
/// process running (tokio reaps it once it exits).
struct Started {
    child: tokio::process::Child,
    stderr: Option<tokio::process::ChildStderr>,
    /// The end of what it wrote on stderr (at most [`STDERR_KEPT`] bytes).
    said: Vec<u8>,
}

/// Bytes of the starting daemon's stderr kept: its startup error is the
/// last thing it writes.
const STDERR_KEPT: usize = 64 * 1024;

/// Longest startup error passed to the editor.
const REASON_MAX: usize = 2048;

/// The exit status of a daemon that found the endpoint taken: another
/// daemon (started by another editor at the same moment) won the race.
const ENDPOINT_TAKEN: i32 = 3;

impl Started {
    /// Reads what is on stderr for at most `wait`; whether it ended.
    async fn read_stderr(&mut self, wait: Duration) -> bool {
        use tokio::io::AsyncReadExt;
        let Some(stderr) = self.stderr.as_mut() else {
            tokio::time::sleep(wait).await;
            return true;
        };
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(wait, stderr.read(&mut buf)).await {
            Err(_) => false,
            Ok(Ok(0) | Err(_)) => {
                self.stderr = None;
                true
            }
            Ok(Ok(n)) => {
                self.said.extend_from_slice(&buf[..n]);
                if self.said.len() > STDERR_KEPT {
                    let cut = self.said.len() - STDERR_KEPT;
                    self.said.drain(..cut);
                }
                false
            }
        }
    }

    /// Why it exited: its own startup error, else its exit status.
    async fn reason(&mut self, status: std::process::ExitStatus) -> String {
        // What it wrote before exiting is in the pipe (a child of its own
        // could hold the pipe open: bounded).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while self.stderr.is_some() && tokio::time::Instant::now() < deadline {
            self.read_stderr(Duration::from_millis(200)).await;
        }
        match startup_error(&String::from_utf8_lossy(&self.said)) {
            Some(why) => format!("the daemon could not start: {why}"),
            None => format!("the daemon could not start ({status}) and said nothing on stderr"),
        }
    }
}

/// The daemon's startup error in what it wrote on stderr, on one line,
/// its control characters made visible, bounded at [`REASON_MAX`] bytes.
///
/// The daemon writes it as `zeroclaw daemon: <error>` (lines that follow
/// are its advice); its log lines (JSON on a pipe) come in between, from
/// another thread, and are left out. Failing that, the last line that is
/// not a log line.
fn startup_error(stderr: &str) -> Option<String> {
    const PREFIX: &str = "zeroclaw daemon: ";
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('{'))
        .collect();
    let text = match lines.iter().rposition(|l| l.starts_with(PREFIX)) {
        Some(i) => {
            let mut t = lines[i][PREFIX.len()..].to_owned();
            for l in &lines[i + 1..] {
                t.push('\n');
                t.push_str(l);
            }
            t
        }
        None => (*lines.last()?).to_owned(),
    };
    let shown = crate::shown::Shown::line(&text);
    Some(crate::bounded::bound_text(shown.as_str(), REASON_MAX).into_owned())
}

/// Connects to the daemon just started, reading its stderr meanwhile;
/// fails with the daemon's own reason when it exits instead.
async fn connect_patiently(
    name: &endpoint::EndpointName,
    mut started: Started,
) -> Result<endpoint::LocalStream, Unreachable> {
    let deadline = tokio::time::Instant::now() + START_PATIENCE;
    loop {
        let e = match endpoint::connect(name).await {
            Ok(s) => return Ok(s),
            Err(e) => e,
        };
        match started.child.try_wait() {
            // Lost the race for the endpoint: the winner answers soon.
            Ok(Some(status)) if status.code() == Some(ENDPOINT_TAKEN) => {}
            Ok(Some(status)) => return Err(Unreachable(started.reason(status).await)),
            Ok(None) | Err(_) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Unreachable(format!(
                "no daemon answers at {name} ({e}), even after starting one"
            )));
        }
        started.read_stderr(Duration::from_millis(50)).await;
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
        assert!(matches!(
            classify(upd.into()).unwrap(),
            FromDaemon::Update(_)
        ));
        let req = r#"{"jsonrpc":"2.0","method":"elicitation/create","params":{"sessionId":"s"},"id":"zc-out-0"}"#;
        assert!(matches!(
            classify(req.into()).unwrap(),
            FromDaemon::Request { .. }
        ));
        let ans = r#"{"jsonrpc":"2.0","result":{"a":1},"id":3}"#;
        assert!(matches!(
            classify(ans.into()).unwrap(),
            FromDaemon::Answer {
                id: 3,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            classify("nope".into()).unwrap(),
            FromDaemon::Other
        ));
        // A tool input with an `id` member is still an update.
        let tool = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"tool_call","rawInput":{"id":5}}}"#;
        assert!(matches!(
            classify(tool.into()).unwrap(),
            FromDaemon::Update(_)
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"logs/event","params":{}}"#.into()).unwrap(),
            FromDaemon::Other
        ));
    }

    #[test]
    fn an_error_without_id_is_the_largest_unread_frame() {
        let err =
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Frame exceeds"},"id":null}"#;
        assert_eq!(
            classify(err.into()).err().map(|e| e["code"].clone()),
            Some(json!(-32600))
        );

        let mut u = Unread::default();
        assert_eq!(u.unreadable(), None, "nothing written: nobody's error");
        // A turn (1) still running, a large prompt (2), a cancel (3): the
        // large one is the frame the daemon could not read.
        u.wrote(Some(1), 100);
        u.wrote(Some(2), 9_000);
        u.wrote(Some(3), 80);
        assert_eq!(u.unreadable(), Some(Some(2)));
        // 1 and 2 are settled (1 was read before 2); 3 is left.
        assert_eq!(u.frames.len(), 1);
        assert_eq!(u.unreadable(), Some(Some(3)));
        assert_eq!(u.unreadable(), None);

        // An answer settles its frame and every frame before it, so a
        // later error is not blamed on them.
        u.wrote(Some(4), 5_000);
        u.wrote(None, 6_000);
        u.wrote(Some(6), 50);
        u.wrote(Some(7), 70);
        u.answered(6);
        assert_eq!(u.unreadable(), Some(Some(7)));
        // Of equal frames, the earliest (the daemon reads in order); an
        // answer of ours has no request to fail.
        u.wrote(None, 10);
        u.wrote(Some(9), 10);
        assert_eq!(u.unreadable(), Some(None));
        assert_eq!(u.unreadable(), Some(Some(9)));
    }

    #[test]
    fn unread_frames_are_bounded() {
        let mut u = Unread::default();
        for id in 0..(MAX_UNREAD as u64 + 10) {
            u.wrote(Some(id), 1);
        }
        assert_eq!(u.frames.len(), MAX_UNREAD);
        assert_eq!(u.unreadable(), Some(Some(10)));
    }

    #[test]
    fn the_startup_error_is_the_daemons_own_line() {
        let stderr = concat!(
            "{\"level\":\"INFO\",\"fields\":{\"event\":\"starting\"}}\n",
            "zeroclaw daemon: config.toml: invalid at line 3, column 7\n",
            "{\"level\":\"ERROR\",\"fields\":{\"event\":\"startup_failed\"}}\n",
            "config.toml was left unchanged: correct it\n",
        );
        assert_eq!(
            startup_error(stderr).as_deref(),
            Some("config.toml: invalid at line 3, column 7\u{23ce}config.toml was left unchanged: correct it")
        );
        // Control characters are made visible, the length bounded.
        let hostile = format!("zeroclaw daemon: \x1b[31mred\x07 {}\n", "x".repeat(10_000));
        let why = startup_error(&hostile).unwrap_or_default();
        assert!(!why.chars().any(|c| c.is_control()), "{why:?}");
        assert!(why.len() <= REASON_MAX + crate::bounded::TRUNCATION_SUFFIX.len());
        assert!(why.starts_with("\u{241b}[31mred\u{2407} x"), "{why:?}");
        // Without the daemon's prefix: the last line that is not a log line.
        assert_eq!(
            startup_error("zeroclaw: cannot start the async runtime: no\n").as_deref(),
            Some("zeroclaw: cannot start the async runtime: no")
        );
        assert_eq!(startup_error("{\"level\":\"INFO\"}\n\n"), None);
    }

    /// A connection whose other end is a stand-in daemon with the daemon's
    /// own framing and frame refusal, at a lower limit than the bridge's:
    /// the bridge's own check cannot see that a frame is too large for it.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_frame_the_daemon_cannot_read_fails_its_own_request() {
        use crate::jsonrpc::error_frame;
        use std::os::fd::OwnedFd;

        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        theirs.set_nonblocking(true).unwrap();
        let ours =
            interprocess::os::unix::uds_local_socket::tokio::Stream::try_from(OwnedFd::from(ours))
                .unwrap();
        let (r, w) = split(endpoint::LocalStream::UdSocket(ours));
        let mut conn = DaemonConn::new(r, w);

        let theirs = tokio::net::UnixStream::from_std(theirs).unwrap();
        let daemon = tokio::spawn(async move {
            let (r, mut w) = theirs.into_split();
            let mut frames = FramedRead::new(r, FrameCodec::with_max(1024));
            // "slow" requests (a turn) are answered after "last".
            let mut held = Vec::new();
            while let Some(Ok(frame)) = frames.next().await {
                let mut out = Vec::new();
                match frame {
                    Frame::Rejected(r) => out.push(error_frame(&r.reply(), None)),
                    Frame::Line(l) => {
                        let m: Value = serde_json::from_str(&l).unwrap();
                        let answer = |id: &Value| {
                            let mut a =
                                json!({"jsonrpc": "2.0", "result": {}, "id": id}).to_string();
                            a.push('\n');
                            a.into_bytes()
                        };
                        match m["method"].as_str() {
                            Some("slow") => held.push(m["id"].clone()),
                            Some("last") => {
                                out.push(answer(&m["id"]));
                                out.extend(held.drain(..).map(|id| answer(&id)));
                            }
                            _ => out.push(answer(&m["id"])),
                        }
                    }
                }
                for f in out {
                    w.write_all(&f).await.unwrap();
                }
            }
        });

        let turn = conn.request("slow", json!({})).await.unwrap();
        let big = conn
            .request("big", json!({"text": "x".repeat(2000)}))
            .await
            .unwrap();
        let next = conn.request("next", json!({})).await.unwrap();
        // Over the bridge's own limit: never written.
        let huge = json!({"text": "x".repeat(MAX_FRAME_BYTES)});
        assert!(matches!(
            conn.request("huge", huge).await,
            Err(SendError::TooLarge(n)) if n > MAX_FRAME_BYTES
        ));
        let last = conn.request("last", json!({})).await.unwrap();

        let mut got = Vec::new();
        while got.len() < 4 {
            let msg = tokio::time::timeout(Duration::from_secs(5), conn.next())
                .await
                .expect("every request is answered");
            match msg {
                FromDaemon::Answer { id, outcome } => got.push((id, outcome)),
                other => panic!("{other:?}"),
            }
        }
        let ids: Vec<u64> = got.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![big, next, last, turn]);
        let refusal = got[0].1.as_ref().unwrap_err();
        assert_eq!(refusal["code"], -32600);
        assert_eq!(refusal["data"]["reason"], "frame_too_large");
        assert!(got[1..].iter().all(|(_, o)| o.is_ok()));
        drop(conn);
        daemon.await.unwrap();
    }
}
