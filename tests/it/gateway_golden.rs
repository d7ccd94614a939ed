//! The golden transcripts of `tests/golden/` (format: `tests/it/golden.rs`)
//! replayed over both transports against one daemon — the local socket,
//! then a WebSocket — and the answers compared, frame by frame.
//!
//! Documented differences (docs/gateway.md, "Golden transcripts"):
//!
//! - Framing: a WebSocket message is one frame, so `-->raw` bytes are cut
//!   at each `\n` (a trailing `\r` dropped, as the socket's codec does) and
//!   each complete line is sent as one text message; `-->sized` and `-->`
//!   frames are one message each. A line that is not UTF-8 cannot be a text
//!   message: it is not sent, and the answers the transcript expects for it
//!   are skipped on the WebSocket (counted, and only for that reason).
//! - A WebSocket has no half-close: `--> (eof)` sends any unterminated
//!   rest as a last message, and `<-- (eof)` then closes the session.
//! - Credentials: a WebSocket `initialize` needs a paired token, so one is
//!   added to each `initialize` whose params object carries none (replacing
//!   `"authToken":null`); log expectations of `auth_provider: "peercred"`
//!   read `"native"`, and `$peer` is the session's `wss:` label.
//! - On Windows the local side is a named pipe: its peer has no
//!   credentials (the `os` provider binds it, so `peercred` reads `"os"`),
//!   and a transcript that half-closes (`--> (eof)`) is skipped with the
//!   reason printed, as in tests/it/golden.rs.
//! - Answers: in an `initialize` result, `transport` and `capabilities`
//!   differ by design (§8.1); in a `status` result, `uptime_secs` may. All
//!   else must be identical, byte for byte where no member was normalized.

use crate::common;
use crate::gateway_support;

use std::time::Duration;

use common::golden::{self, unescape, Vars};
use common::{describe, sized_frame, Client, RecvError, RECV_TIMEOUT};
use gateway_support::{Gateway, Got, Ws};
use serde_json::Value;

/// What one receive directive observed.
#[derive(Debug, Clone, PartialEq)]
enum Obs {
    /// A frame, normalized (see [`key`]).
    Frame(String),
    /// Nothing was owed.
    Nothing,
    /// The daemon ended the connection.
    Eof,
    /// Not observed on this transport (the line that was to be sent is not UTF-8).
    Skipped,
}

/// A frame with its transport-specific members normalized; byte-exact when none was.
fn key(frame: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(frame) else {
        return frame.to_owned();
    };
    let Some(result) = v.get_mut("result").and_then(Value::as_object_mut) else {
        return frame.to_owned();
    };
    let mut changed = false;
    if result.contains_key("transport") {
        result.insert("transport".into(), "(per transport)".into());
        result.insert("capabilities".into(), "(per transport)".into());
        changed = true;
    }
    if result.contains_key("uptime_secs") {
        result.insert("uptime_secs".into(), 0.into());
        changed = true;
    }
    if changed {
        v.to_string()
    } else {
        frame.to_owned()
    }
}

/// Adds the token to an `initialize` whose params object has none.
fn with_token(frame: &str, token: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(frame) else {
        return frame.to_owned();
    };
    let Some(params) = v.get("params").and_then(Value::as_object) else {
        return frame.to_owned();
    };
    if v["method"] != "initialize" {
        return frame.to_owned();
    }
    let present = |k: &str| params.get(k).is_some_and(|t| !t.is_null());
    if present("authToken") || present("auth_token") {
        return frame.to_owned();
    }
    if frame.contains(r#""authToken":null"#) {
        return frame.replacen(
            r#""authToken":null"#,
            &format!(r#""authToken":"{token}""#),
            1,
        );
    }
    let at = frame.find(r#""params":{"#).expect("compact params") + r#""params":{"#.len();
    let sep = if params.is_empty() { "" } else { "," };
    format!(
        r#"{}"authToken":"{token}"{sep}{}"#,
        &frame[..at],
        &frame[at..]
    )
}

/// One transport's connection.
enum Conn {
    Local(Client),
    Ws(Box<Ws>),
}

struct Run<'a> {
    gw: &'a Gateway,
    token: &'a str,
    conn: Conn,
    /// Bytes of a `-->raw` line whose `\n` has not come yet (WebSocket).
    pending: Vec<u8>,
    /// The WebSocket side skips receives until the next send.
    skipping: bool,
    /// `--> (eof)` was given (WebSocket: the close is deferred to `<-- (eof)`).
    eof: bool,
    probes: u32,
    log_cursor: usize,
    where_: String,
}

impl Run<'_> {
    fn is_ws(&self) -> bool {
        matches!(self.conn, Conn::Ws(_))
    }

    fn peer(&self) -> String {
        match &self.conn {
            Conn::Local(_) => common::own_peer_label(),
            Conn::Ws(ws) => ws.peer_label(),
        }
    }

    async fn connect(&mut self) {
        self.conn = match self.conn {
            Conn::Local(_) => Conn::Local(self.gw.daemon.connect()),
            Conn::Ws(_) => Conn::Ws(Box::new(self.gw.ws().await)),
        };
        self.eof = false;
    }

    /// Sends one frame (a WebSocket message, or a line on the socket).
    async fn send_frame(&mut self, frame: Vec<u8>) {
        self.skipping = false;
        let token = self.token.to_owned();
        match &mut self.conn {
            Conn::Local(c) => {
                let mut line = frame;
                line.push(b'\n');
                c.send_raw(&line);
            }
            Conn::Ws(ws) => match String::from_utf8(frame) {
                Ok(text) => ws.send_text(with_token(&text, &token)).await,
                Err(_) => self.skipping = true,
            },
        }
    }

    async fn send_raw(&mut self, bytes: Vec<u8>) {
        self.skipping = false;
        if let Conn::Local(c) = &mut self.conn {
            return c.send_raw(&bytes);
        }
        self.pending.extend_from_slice(&bytes);
        while let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=i).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.send_frame(line).await;
            if self.skipping {
                // One undeliverable line skips the answers of the whole directive.
                self.pending.clear();
                return;
            }
        }
    }

    async fn recv(&mut self) -> Obs {
        if self.skipping {
            return Obs::Skipped;
        }
        let where_ = self.where_.clone();
        match &mut self.conn {
            Conn::Local(c) => match c.try_recv_line(RECV_TIMEOUT) {
                Ok(l) => Obs::Frame(key(&l)),
                Err(e) => panic!("{where_}: local: expected a frame, got {}", describe(&e)),
            },
            Conn::Ws(ws) => match ws.next(RECV_TIMEOUT).await {
                Got::Text(t) => Obs::Frame(key(&t)),
                other => panic!("{where_}: wss: expected a frame, got {other:?}"),
            },
        }
    }

    async fn expect_nothing(&mut self) -> Obs {
        if self.skipping {
            return Obs::Skipped;
        }
        let where_ = self.where_.clone();
        if let Conn::Local(c) = &mut self.conn {
            if c.write_closed() {
                return match c.try_recv_line(Duration::from_millis(300)) {
                    Err(RecvError::Timeout(p) | RecvError::Eof(p)) if p.is_empty() => Obs::Nothing,
                    Ok(l) => Obs::Frame(key(&l)),
                    Err(e) => panic!("{where_}: local: {}", describe(&e)),
                };
            }
        }
        // A probe (an unknown method) must be answered next.
        self.probes += 1;
        let id = format!("gw-probe-{}", self.probes);
        let probe = format!(r#"{{"jsonrpc":"2.0","method":"zc-test/probe","id":"{id}"}}"#);
        self.send_frame(probe.into_bytes()).await;
        let got = self.recv().await;
        let answer = format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"Unknown method: zc-test/probe"}},"id":"{id}"}}"#
        );
        if got == Obs::Frame(answer) {
            Obs::Nothing
        } else {
            got
        }
    }

    async fn expect_eof(&mut self) -> Obs {
        let where_ = self.where_.clone();
        match &mut self.conn {
            Conn::Local(c) => match c.try_recv_line(RECV_TIMEOUT) {
                Err(RecvError::Eof(p)) if p.is_empty() => Obs::Eof,
                Ok(l) => Obs::Frame(key(&l)),
                Err(e) => panic!(
                    "{where_}: local: expected end of stream, got {}",
                    describe(&e)
                ),
            },
            Conn::Ws(ws) => {
                assert!(self.eof, "{where_}: `<-- (eof)` without `--> (eof)`");
                ws.inner.close(None).await.expect("closing");
                match ws.next(RECV_TIMEOUT).await {
                    Got::Close(_) | Got::Gone(_) => Obs::Eof,
                    Got::Text(t) => Obs::Frame(key(&t)),
                    Got::Timeout => panic!("{where_}: wss: the session did not close"),
                }
            }
        }
    }

    async fn eof(&mut self) {
        self.eof = true;
        if let Conn::Local(c) = &mut self.conn {
            return c.shutdown_write();
        }
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.send_frame(rest).await;
        }
    }

    fn log_expect(&mut self, expected: &str) {
        let mut expected: Value = serde_json::from_str(expected).unwrap();
        if self.is_ws() && expected["auth_provider"] == "peercred" {
            expected["auth_provider"] = "native".into();
        } else if cfg!(windows) && expected["auth_provider"] == "peercred" {
            // A pipe peer has no credentials: the `os` provider binds it.
            expected["auth_provider"] = "os".into();
        }
        let mut vars = Vars::of(&self.gw.daemon);
        vars.peer = self.peer();
        let log = &self.gw.daemon.log;
        match log.wait_for(self.log_cursor, RECV_TIMEOUT, |v| {
            vars.matches(&expected, v, true)
        }) {
            Some((i, _)) => self.log_cursor = i + 1,
            None => panic!(
                "{}: no log line matches {expected} (peer {})",
                self.where_, vars.peer
            ),
        }
    }
}

/// Waits until every connection the daemon accepted has closed.
fn quiesce(gw: &Gateway) {
    let deadline = std::time::Instant::now() + RECV_TIMEOUT;
    loop {
        let log = &gw.daemon.log;
        let open = log.events_named("connection_accepted").len()
            - log.events_named("connection_closed").len();
        if open == 0 {
            // `connection_closed` is logged just before the connection is counted out.
            std::thread::sleep(Duration::from_millis(20));
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{open} connections stay open"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Replays `name` over one transport; returns what each receive directive saw.
async fn replay(gw: &Gateway, token: &str, name: &str, ws: bool) -> Vec<(usize, Obs)> {
    quiesce(gw);
    let text = golden::read(name);
    // Before connecting: the connection's own audit events come after this.
    let log_cursor = gw.daemon.log.len();
    let conn = if ws {
        Conn::Ws(Box::new(gw.ws().await))
    } else {
        Conn::Local(gw.daemon.connect())
    };
    let mut run = Run {
        gw,
        token,
        conn,
        pending: Vec::new(),
        skipping: false,
        eof: false,
        probes: 0,
        log_cursor,
        where_: String::new(),
    };
    let mut seen = Vec::new();
    for (line_no, _, op, arg) in golden::directives(&text) {
        run.where_ = format!("{name}:{line_no} ({})", if ws { "wss" } else { "local" });
        let obs = match op {
            "-->" if arg == "(eof)" => {
                run.eof().await;
                None
            }
            "-->" => {
                run.send_frame(arg.as_bytes().to_vec()).await;
                None
            }
            "-->raw" => {
                let bytes = unescape(arg).unwrap_or_else(|e| panic!("{}: {e}", run.where_));
                run.send_raw(bytes).await;
                None
            }
            "-->sized" => {
                let (n, template) = arg.split_once(' ').unwrap();
                run.send_frame(sized_frame(template, n.parse().unwrap()))
                    .await;
                None
            }
            "<--" if arg == "(nothing)" => Some(run.expect_nothing().await),
            "<--" if arg == "(eof)" => Some(run.expect_eof().await),
            "<--" | "<--=" | "<--id" => Some(run.recv().await),
            "<~~" => {
                run.log_expect(arg);
                None
            }
            "!~~" => {
                assert!(
                    !gw.daemon.log.text().contains(arg),
                    "{}: the log contains {arg}",
                    run.where_
                );
                None
            }
            "@@" if arg == "reconnect" => {
                run.connect().await;
                None
            }
            _ => panic!("{}: unknown directive", run.where_),
        };
        if let Some(o) = obs {
            seen.push((line_no, o));
        }
    }
    if let Conn::Ws(ws) = &mut run.conn {
        let _ = ws.inner.close(None).await;
    }
    seen
}

/// Replays `name` over both transports and compares.
async fn compare(name: &str) {
    if cfg!(windows) && golden::read(name).lines().any(|l| l.trim() == "--> (eof)") {
        common::skip(&format!(
            "tests/golden/{name} half-closes its local connection; a named pipe cannot"
        ));
        return;
    }
    let gw = Gateway::start();
    let token = gw.create_token();
    let local = replay(&gw, &token, name, false).await;
    let wss = replay(&gw, &token, name, true).await;
    assert_eq!(local.len(), wss.len(), "{name}: different directive counts");
    let mut skipped = 0;
    for ((line, l), (_, w)) in local.iter().zip(&wss) {
        if *w == Obs::Skipped {
            skipped += 1;
            continue;
        }
        assert_eq!(l, w, "{name}:{line}: the transports answer differently");
    }
    let text = golden::read(name);
    let invalid_utf8 = golden::directives(&text)
        .filter(|(_, _, op, arg)| {
            *op == "-->raw" && unescape(arg).is_ok_and(|b| std::str::from_utf8(&b).is_err())
        })
        .count();
    assert!(
        skipped <= invalid_utf8 * 2,
        "{name}: {skipped} answers skipped"
    );
    assert!(
        !gw.daemon.log.text().contains(&token),
        "{name}: the token is logged"
    );
}

macro_rules! both_transports {
    ($($name:ident => $file:literal;)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                compare($file).await;
            }
        )*
        const LISTED: &[&str] = &[$($file),*];
    };
}

golden::transcripts!(both_transports);

#[test]
fn every_transcript_is_replayed_over_both_transports() {
    golden::assert_every_transcript_listed(LISTED);
}

#[test]
fn tokens_are_added_only_where_none_is_given() {
    let t = "zc_t";
    assert_eq!(
        with_token(
            r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}"#,
            t
        ),
        r#"{"jsonrpc":"2.0","method":"initialize","params":{"authToken":"zc_t","protocolVersion":1},"id":1}"#
    );
    assert_eq!(
        with_token(r#"{"method":"initialize","params":{},"id":1}"#, t),
        r#"{"method":"initialize","params":{"authToken":"zc_t"},"id":1}"#
    );
    assert_eq!(
        with_token(r#"{"method":"initialize","params":{"authToken":null}}"#, t),
        r#"{"method":"initialize","params":{"authToken":"zc_t"}}"#
    );
    for unchanged in [
        r#"{"method":"initialize","params":{"authToken":"zc_x"}}"#,
        r#"{"method":"initialize","params":{"auth_token":5}}"#,
        r#"{"method":"initialize","params":[1]}"#,
        r#"{"method":"status","params":{}}"#,
        r#"[{"method":"initialize","params":{}}]"#,
        r#"{"method":"initialize","params":{"#,
    ] {
        assert_eq!(with_token(unchanged, t), unchanged);
    }
}
