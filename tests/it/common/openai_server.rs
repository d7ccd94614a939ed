//! A scripted OpenAI-compatible model server on loopback, for the tests of
//! `backend = "openai"` (tests/it/openai_*.rs).
//!
//! Real HTTP/1.1 over a real socket: each `POST /v1/chat/completions` is
//! recorded (method, path, headers, JSON body) and answered by the next
//! scripted [`Reply`]. Streams are sent the way OpenAI's API sends them
//! (`Transfer-Encoding: chunked`, `text/event-stream`, one `data: <json>\n\n`
//! event per chunk, `data: [DONE]\n\n` last); the [`sse`] helpers write the
//! chunk objects byte for byte as the API reference documents them, with the
//! reasoning deltas of vLLM/DeepSeek (`reasoning_content`) and Ollama
//! (`reasoning`). Every wait is bounded.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a held stream waits for the client to go away.
const HOLD_LIMIT: Duration = Duration::from_secs(20);

/// One step of a streamed answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// These bytes as one HTTP chunk (usually one SSE event).
    Bytes(String),
    /// These bytes, not necessarily UTF-8, as one HTTP chunk.
    Raw(Vec<u8>),
    /// Wait this long.
    Pause(Duration),
    /// Keep the connection open, sending nothing, until the client closes
    /// it (recorded as [`Recorded::client_closed`]) or [`HOLD_LIMIT`].
    HoldUntilClosed,
    /// Close the connection at once, mid-body (no terminating chunk).
    Cut,
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200`, `text/event-stream`, these steps, then the terminating chunk.
    Stream(Vec<Step>),
    /// This status and JSON body.
    Status(u16, String),
    /// This status, these extra headers (`name`, `value`) and JSON body.
    StatusWith(u16, Vec<(String, String)>, String),
    /// Read the request, then close without answering.
    Hangup,
    /// Read the request, then send nothing until the client goes away.
    Silent,
}

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The client closed the connection while the reply was held.
    pub client_closed: bool,
}

impl Recorded {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// When the first body byte of each stream was written.
    first_byte_at: Vec<Instant>,
}

/// The running server; stops when dropped.
pub struct OpenAiServer {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl OpenAiServer {
    /// Listens on `127.0.0.1:<any>`.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model server");
        let addr = listener.local_addr().expect("its address");
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let accept = std::thread::spawn({
            let (state, stop) = (state.clone(), stop.clone());
            move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let state = state.clone();
                    std::thread::spawn(move || serve(conn, &state));
                }
            }
        });
        OpenAiServer {
            addr,
            state,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:<port>/v1`: the agent's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues the answer to the next request.
    pub fn push(&self, reply: Reply) {
        self.state.0.lock().unwrap().script.push_back(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.0.lock().unwrap().requests.clone()
    }

    /// Waits until `n` requests were received; returns them.
    pub fn wait_requests(&self, n: usize) -> Vec<Recorded> {
        self.wait_for(&format!("{n} requests"), |s| s.requests.len() >= n)
            .requests
            .clone()
    }

    /// Waits until request `i`'s client closed its held connection.
    pub fn wait_client_closed(&self, i: usize) -> Recorded {
        let s = self.wait_for("the client to close the stream", |s| {
            s.requests.get(i).is_some_and(|r| r.client_closed)
        });
        s.requests[i].clone()
    }

    /// When each stream's first body byte was written.
    pub fn first_bytes(&self) -> Vec<Instant> {
        self.state.0.lock().unwrap().first_byte_at.clone()
    }

    fn wait_for(
        &self,
        what: &str,
        pred: impl Fn(&State) -> bool,
    ) -> std::sync::MutexGuard<'_, State> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        while !pred(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "model server: timed out waiting for {what}"
            );
            s = cv.wait_timeout(s, left).unwrap().0;
        }
        s
    }
}

impl Drop for OpenAiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(conn: TcpStream, state: &Arc<(Mutex<State>, Condvar)>) {
    let _ = conn.set_nodelay(true);
    let Ok(read_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    // Keep-alive: one request after another on the same connection.
    while let Some(mut recorded) = read_request(&mut reader) {
        let reply = {
            let (lock, cv) = &**state;
            let mut s = lock.lock().unwrap();
            s.requests.push(recorded.clone());
            cv.notify_all();
            s.script.pop_front()
        };
        let index = state.0.lock().unwrap().requests.len() - 1;
        let reply = reply.unwrap_or_else(|| {
            Reply::Status(500, r#"{"error":{"message":"no scripted reply"}}"#.into())
        });
        let mut w = &conn;
        let keep = match reply {
            Reply::Status(status, body) => write_status(w, status, &[], &body),
            Reply::StatusWith(status, headers, body) => write_status(w, status, &headers, &body),
            Reply::Hangup => false,
            Reply::Silent => {
                recorded.client_closed = hold(&mut reader);
                false
            }
            Reply::Stream(steps) => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let mut first = true;
                let mut ok = true;
                for step in steps {
                    let bytes = match step {
                        Step::Bytes(b) => b.into_bytes(),
                        Step::Raw(b) => b,
                        Step::Pause(d) => {
                            std::thread::sleep(d);
                            continue;
                        }
                        Step::HoldUntilClosed => {
                            recorded.client_closed = hold(&mut reader);
                            ok = false;
                            break;
                        }
                        Step::Cut => {
                            ok = false;
                            break;
                        }
                    };
                    let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                    chunk.extend_from_slice(&bytes);
                    chunk.extend_from_slice(b"\r\n");
                    if first {
                        first = false;
                        state.0.lock().unwrap().first_byte_at.push(Instant::now());
                    }
                    if w.write_all(&chunk).is_err() {
                        ok = false;
                        break;
                    }
                }
                ok && w.write_all(b"0\r\n\r\n").is_ok()
            }
        };
        if recorded.client_closed {
            let (lock, cv) = &**state;
            lock.lock().unwrap().requests[index].client_closed = true;
            cv.notify_all();
        }
        if !keep {
            let _ = conn.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Writes a complete non-streamed answer; whether it was written.
fn write_status(mut w: &TcpStream, status: u16, headers: &[(String, String)], body: &str) -> bool {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    ));
    w.write_all(head.as_bytes()).is_ok() && w.write_all(body.as_bytes()).is_ok()
}

/// Waits for the client to close (EOF or reset); whether it did in time.
fn hold(reader: &mut BufReader<TcpStream>) -> bool {
    let _ = reader.get_ref().set_read_timeout(Some(HOLD_LIMIT));
    let mut buf = [0u8; 256];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        client_closed: false,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// The SSE events of a chat completion stream, as OpenAI's API reference
/// writes them (`chat.completion.chunk` objects, compact JSON).
pub mod sse {
    use serde_json::{json, Value};

    use super::Step;

    fn chunk(choices: Value) -> Step {
        let v = json!({
            "id": "chatcmpl-zc1", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": "test-model", "system_fingerprint": "fp_zc", "choices": choices,
        });
        Step::Bytes(format!("data: {v}\n\n"))
    }

    fn delta(delta: Value) -> Step {
        chunk(json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]))
    }

    /// The first chunk: the role, empty content.
    pub fn role() -> Step {
        delta(json!({"role": "assistant", "content": "", "refusal": null}))
    }

    /// A content delta.
    pub fn content(text: &str) -> Step {
        delta(json!({ "content": text }))
    }

    /// A reasoning delta as vLLM and DeepSeek send it.
    pub fn reasoning_content(text: &str) -> Step {
        delta(json!({ "reasoning_content": text }))
    }

    /// A reasoning delta as Ollama sends it.
    pub fn reasoning(text: &str) -> Step {
        delta(json!({"role": "assistant", "content": "", "reasoning": text}))
    }

    /// The first delta of tool call `index`: id, name, empty arguments.
    pub fn tool_start(index: u32, id: &str, name: &str) -> Step {
        delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        )
    }

    /// A piece of tool call `index`'s arguments.
    pub fn tool_args(index: u32, piece: &str) -> Step {
        delta(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    }

    /// The last choice chunk: empty delta and `finish_reason`.
    pub fn finish(reason: &str) -> Step {
        chunk(json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": reason}]))
    }

    /// The usage chunk (`stream_options.include_usage`): no choices.
    pub fn usage(prompt: u64, completion: u64) -> Step {
        let v = json!({
            "id": "chatcmpl-zc1", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": "test-model", "system_fingerprint": "fp_zc", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        });
        Step::Bytes(format!("data: {v}\n\n"))
    }

    /// The stream's terminator.
    pub fn done() -> Step {
        Step::Bytes("data: [DONE]\n\n".into())
    }

    /// A whole plain answer: role, one content delta per piece, stop, usage, done.
    pub fn answer(pieces: &[&str]) -> Vec<Step> {
        let mut steps = vec![role()];
        steps.extend(pieces.iter().map(|p| content(p)));
        steps.extend([finish("stop"), usage(10, pieces.len() as u64), done()]);
        steps
    }
}
