//! What the gateway tests share: a daemon started with the gateway enabled
//! on a free loopback port, a WebSocket client (tokio-tungstenite, plain or
//! over TLS), a raw HTTP/1.1 client for `/pair`, and tokens.
//!
//! A test module reaches it as `crate::gateway_support` (tests/it/main.rs).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::common::{Daemon, StartFailure, TestDir, RECV_TIMEOUT};

/// A daemon with the gateway enabled, and its config dir.
#[derive(Debug)]
pub struct Gateway {
    pub daemon: Daemon,
    pub port: u16,
    pub dir: TestDir,
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding port 0");
    l.local_addr().unwrap().port()
}

/// Writes `<dir>/cfg/config.toml` (0600, dir 0700): the gateway on `port`
/// with `gateway_extra` lines in `[gateway]`, and the echo agent.
pub fn write_gateway_config(dir: &TestDir, port: u16, gateway_extra: &str) {
    let text = format!(
        "schema_version = 1\n\n[gateway]\nenabled = true\nhost = \"127.0.0.1\"\nport = {port}\n{gateway_extra}\n\n[agents.echo]\nbackend = \"echo\"\n"
    );
    crate::common::start::write_config(&dir.config_dir(), &text);
}

/// Starts a daemon with the gateway on a free port (retrying if another
/// test took the port first).
pub fn start(gateway_extra: &str, args: &[&str]) -> Gateway {
    for _ in 0..5 {
        match try_start(gateway_extra, args) {
            Ok(g) => return g,
            Err(f) if f.log.text().contains("cannot listen") => continue,
            Err(f) => panic!("the daemon did not start: {:?}\n{}", f.status, f.log.text()),
        }
    }
    panic!("no free port after 5 tries");
}

/// One attempt of [`start`].
pub fn try_start(gateway_extra: &str, args: &[&str]) -> Result<Gateway, StartFailure> {
    let dir = TestDir::new();
    let port = free_port();
    write_gateway_config(&dir, port, gateway_extra);
    let mut b = Daemon::builder().config_dir(dir.config_dir());
    for a in args {
        b = b.arg(a);
    }
    let daemon = b.try_spawn()?;
    Ok(Gateway { daemon, port, dir })
}

impl Gateway {
    /// A gateway with default settings.
    pub fn start() -> Self {
        start("", &[])
    }

    /// The pairing code the daemon logged at startup (it comes before the
    /// `gateway_listening` event, which stderr may deliver after the ready line).
    pub fn pairing_code(&self) -> Option<String> {
        self.daemon
            .log
            .wait_event(0, "gateway_listening", RECV_TIMEOUT)
            .expect("no gateway_listening event");
        self.daemon
            .log
            .events_named("pairing_code")
            .first()
            .map(|e| e["code"].as_str().expect("code is a string").to_owned())
    }

    /// A token from `pairing/create` over the local socket.
    pub fn create_token(&self) -> String {
        let mut c = self.daemon.client();
        let v = c.call("pairing/create", json!({}), json!("pair"));
        v["result"]["token"]
            .as_str()
            .unwrap_or_else(|| panic!("pairing/create: {v}"))
            .to_owned()
    }

    /// `POST /pair` with the given code header (none if `None`).
    pub fn pair(&self, code: Option<&str>) -> HttpAnswer {
        post_pair(self.port, code)
    }

    /// A plain WebSocket client on `/ws`.
    pub async fn ws(&self) -> Ws {
        Ws::connect(self.port).await
    }

    /// A WebSocket client that has initialized with a fresh token.
    pub async fn ws_initialized(&self) -> Ws {
        let token = self.create_token();
        let mut ws = self.ws().await;
        let v = ws.initialize(Some(&token)).await;
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        ws
    }

    /// The events named `name` whose peer is `peer`.
    pub fn events_of(&self, name: &str, peer: &str) -> Vec<Value> {
        self.daemon
            .log
            .events_named(name)
            .into_iter()
            .filter(|e| e["peer"] == peer)
            .collect()
    }

    /// Waits for an event named `name` with peer `peer`.
    pub fn wait_event_of(&self, name: &str, peer: &str) -> Value {
        self.daemon
            .log
            .wait_for(0, RECV_TIMEOUT, |v| v["event"] == name && v["peer"] == peer)
            .unwrap_or_else(|| panic!("no {name} event for {peer}:\n{}", self.daemon.log.text()))
            .1
    }
}

/// An HTTP answer: status, headers (lowercased names), body.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpAnswer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `POST /pair` over plain HTTP/1.1 (the connection closed after the answer).
pub fn post_pair(port: u16, code: Option<&str>) -> HttpAnswer {
    let header = code
        .map(|c| format!("X-Pairing-Code: {c}\r\n"))
        .unwrap_or_default();
    http(
        port,
        &format!("POST /pair HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}Content-Length: 0\r\nConnection: close\r\n\r\n"),
    )
}

/// Sends `request` (whole, with `Connection: close`) and reads the answer:
/// its head and its `Content-Length` body, or to the end without one (a
/// request the gateway answers without closing, such as a refused upgrade
/// on a kept-alive connection, is read as soon as it is whole).
pub fn http(port: u16, request: &str) -> HttpAnswer {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connecting to the gateway");
    s.set_read_timeout(Some(RECV_TIMEOUT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    while !whole(&raw) {
        match s.read(&mut chunk).expect("reading the answer") {
            0 => break,
            n => raw.extend_from_slice(&chunk[..n]),
        }
    }
    parse_http(&String::from_utf8_lossy(&raw))
}

/// Whether `raw` holds a head with a `Content-Length` and that much body.
fn whole(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    head.split("\r\n")
        .filter_map(|l| l.strip_prefix("content-length:"))
        .find_map(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|len| raw.len() >= end + 4 + len)
}

/// Sends `request` and reads only the answer's head (for an upgrade that stays open).
pub fn http_head(port: u16, request: &str) -> HttpAnswer {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connecting to the gateway");
    s.set_read_timeout(Some(RECV_TIMEOUT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => raw.push(byte[0]),
            _ => break,
        }
    }
    parse_http(&String::from_utf8_lossy(&raw))
}

/// Parses a whole HTTP/1.1 answer with a Content-Length body.
pub fn parse_http(raw: &str) -> HttpAnswer {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {raw:?}"));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {raw:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    HttpAnswer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Any byte stream a WebSocket can run over.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// What a client got when it expected a text message.
#[derive(Debug)]
pub enum Got {
    Text(String),
    Close(Option<CloseFrame>),
    /// The connection ended without a Close frame, or failed.
    Gone(String),
    Timeout,
}

/// A WebSocket client (tokio-tungstenite). Pings are answered when it reads.
pub struct Ws {
    pub inner: WebSocketStream<Box<dyn Io>>,
    /// The client's address: the daemon labels it `wss:<this>`.
    pub local_addr: SocketAddr,
    pub pings: usize,
}

impl std::fmt::Debug for Ws {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ws({})", self.local_addr)
    }
}

impl Ws {
    /// Connects to `ws://127.0.0.1:<port>/ws`.
    pub async fn connect(port: u16) -> Self {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connecting to the gateway");
        let local_addr = tcp.local_addr().unwrap();
        Self::handshake(Box::new(tcp), local_addr, "ws").await
    }

    /// The WebSocket handshake over an established stream.
    pub async fn handshake(io: Box<dyn Io>, local_addr: SocketAddr, scheme: &str) -> Self {
        let url = format!("{scheme}://localhost/ws");
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(64 << 20))
            .max_frame_size(Some(64 << 20));
        let (inner, resp) = tokio::time::timeout(
            RECV_TIMEOUT,
            tokio_tungstenite::client_async_with_config(url, io, Some(config)),
        )
        .await
        .expect("WebSocket handshake timed out")
        .expect("WebSocket handshake failed");
        assert_eq!(resp.status(), 101);
        Self {
            inner,
            local_addr,
            pings: 0,
        }
    }

    /// The daemon's peer label for this client.
    pub fn peer_label(&self) -> String {
        format!("wss:{}", self.local_addr)
    }

    pub async fn send_text(&mut self, text: impl Into<String>) {
        self.inner
            .send(Message::Text(text.into().into()))
            .await
            .expect("sending a text message");
    }

    pub async fn send_json(&mut self, v: &Value) {
        self.send_text(v.to_string()).await;
    }

    /// The next text message, close, or end, within `timeout` (Pings are counted and skipped).
    pub async fn next(&mut self, timeout: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let m = match tokio::time::timeout_at(deadline, self.inner.next()).await {
                Err(_) => return Got::Timeout,
                Ok(None) => return Got::Gone("end of stream".into()),
                Ok(Some(Err(e))) => return Got::Gone(e.to_string()),
                Ok(Some(Ok(m))) => m,
            };
            match m {
                Message::Text(t) => return Got::Text(t.as_str().to_owned()),
                Message::Close(f) => return Got::Close(f),
                Message::Ping(_) => self.pings += 1,
                _ => {}
            }
        }
    }

    /// The next text message; panics on anything else.
    pub async fn recv_text(&mut self) -> String {
        match self.next(RECV_TIMEOUT).await {
            Got::Text(t) => t,
            other => panic!("expected a text message, got {other:?}"),
        }
    }

    pub async fn recv_json(&mut self) -> Value {
        let t = self.recv_text().await;
        serde_json::from_str(&t).unwrap_or_else(|e| panic!("message is not JSON ({e}): {t}"))
    }

    /// Sends a request and returns the next message.
    pub async fn call(&mut self, method: &str, params: Value, id: Value) -> Value {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}))
            .await;
        self.recv_json().await
    }

    /// `initialize` (with `authToken` when given); returns the whole answer.
    pub async fn initialize(&mut self, token: Option<&str>) -> Value {
        let mut params = json!({"protocolVersion": 1});
        if let Some(t) = token {
            params["authToken"] = json!(t);
        }
        self.call("initialize", params, json!("init")).await
    }

    /// Expects the daemon to close: returns the Close frame.
    pub async fn expect_close(&mut self, timeout: Duration) -> Option<CloseFrame> {
        match self.next(timeout).await {
            Got::Close(f) => f,
            other => panic!("expected a Close frame, got {other:?}"),
        }
    }
}

/// The `error` member of an answer, or a panic naming the answer.
pub fn error_of(v: &Value) -> &Value {
    v.get("error")
        .unwrap_or_else(|| panic!("expected an error answer, got {v}"))
}

/// Whether `token` looks like a pairing token (`zc_` + 64 lowercase hex).
pub fn is_token(token: &str) -> bool {
    token.strip_prefix("zc_").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// SHA-256 of `token`, as `gateway.paired_tokens` stores it.
pub fn digest(token: &str) -> String {
    zeroclaw::config::token_digest(token)
}

/// The paired digests in `<config_dir>/config.toml`.
pub fn paired_in_file(config_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(config_dir.join("config.toml")).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    v.get("gateway")
        .and_then(|g| g.get("paired_tokens"))
        .and_then(|t| t.as_array())
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}
