//! Streaming cost of `backend = "openai"` (docs/performance.md):
//! a model server in this process streams 50,000 one-token content deltas
//! as fast as it can write them; the real `zeroclaw` release binary (agent
//! `m`, an ACP session: every chunk committed to SQLite before its
//! notification) relays them to a client on its Unix socket. In the same
//! run a minimal direct client reads the same stream over HTTP twice:
//! decoding every event whole, and decoding as the daemon does (an event of
//! the last content-only event's shape is not decoded again,
//! `src/agent/openai/shape.rs`): the reference doing the same work.
//!
//! Reported: tokens/s through the daemon and direct, their ratio (target
//! ≥ 0.7), the daemon's CPU per token, and the time from the server's first
//! body byte to the client's first `agent_message_chunk`, p50 over short
//! turns (target < 1 ms). Every chunk is checked (count, final content).
//! Environment: `ZC_BENCH_TOKENS` (default 50000), `ZC_BENCH_ROUNDS`
//! (default 3), `ZC_BENCH_LATENCY_TURNS` (default 50), `ZC_BENCH_BEFORE`
//! (another build of the daemon, measured in the same rounds).
//!
//! Fair to both sides: the stream's bytes are made once, before any round,
//! so neither side's time includes the server formatting it; the direct
//! client finds events with `memchr` and decodes every one into the fields
//! the daemon decodes, borrowed, as a careful client would.

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("openai_stream: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use std::borrow::Cow;

    use memchr::memmem::Finder;
    use serde::de::IgnoredAny;
    use serde_json::{json, Value};

    use super::common::ndjson::{Conn, Res};
    use super::common::{self, cpu_secs, median, verdict, ScratchDir, Server};

    const RATIO_TARGET: f64 = 0.7;
    const LATENCY_TARGET: Duration = Duration::from_millis(1);
    /// The token every delta carries.
    const TOKEN: &str = "tok ";

    /// The stream of `n` tokens as one `chat.completion.chunk` per token,
    /// in HTTP chunks of up to 64 events (a server flushing per token would
    /// be slower, not faster). The first event is its own HTTP chunk.
    fn body_parts(n: usize) -> (Vec<u8>, Vec<u8>) {
        let event = |delta: Value, finish: Value| {
            let v = json!({"id": "chatcmpl-b", "object": "chat.completion.chunk",
                "created": 1_700_000_000, "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {v}\n\n")
        };
        let http_chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
        let first = http_chunk(&event(
            json!({"role": "assistant", "content": TOKEN}),
            Value::Null,
        ));
        let mut rest = String::new();
        let mut batch = String::new();
        let token = event(json!({ "content": TOKEN }), Value::Null);
        for i in 1..n {
            batch.push_str(&token);
            if i % 64 == 0 {
                rest.push_str(&http_chunk(&batch));
                batch.clear();
            }
        }
        batch.push_str(&event(json!({}), json!("stop")));
        batch.push_str("data: [DONE]\n\n");
        rest.push_str(&http_chunk(&batch));
        rest.push_str("0\r\n\r\n");
        (first.into_bytes(), rest.into_bytes())
    }

    /// The first HTTP chunk and the rest of one stream.
    type Body = Arc<(Vec<u8>, Vec<u8>)>;

    /// The model server: every request gets the current stream (made once
    /// per token count); the instant each stream's first body byte was
    /// written is kept.
    struct ModelServer {
        port: u16,
        body: Arc<Mutex<Body>>,
        first_bytes: Arc<Mutex<Vec<Instant>>>,
    }

    impl ModelServer {
        fn start() -> Res<Self> {
            let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            let body = Arc::new(Mutex::new(Arc::new(body_parts(1))));
            let first_bytes = Arc::new(Mutex::new(Vec::new()));
            let (t, f) = (body.clone(), first_bytes.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming().flatten() {
                    let (t, f) = (t.clone(), f.clone());
                    std::thread::spawn(move || serve(conn, &t, &f));
                }
            });
            Ok(ModelServer {
                port,
                body,
                first_bytes,
            })
        }

        fn set_tokens(&self, n: usize) {
            *self.body.lock().unwrap() = Arc::new(body_parts(n));
        }
    }

    fn serve(conn: TcpStream, stream: &Mutex<Body>, first_bytes: &Mutex<Vec<Instant>>) {
        let _ = conn.set_nodelay(true);
        let Ok(read) = conn.try_clone() else { return };
        let mut r = BufReader::new(read);
        let mut w = &conn;
        loop {
            // The request head, then its body.
            let mut len = 0usize;
            let mut line = String::new();
            loop {
                line.clear();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let l = line.trim_end().to_ascii_lowercase();
                if l.is_empty() {
                    break;
                }
                if let Some(v) = l.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            let body = stream.lock().unwrap().clone();
            let (first, rest) = (&body.0, &body.1);
            let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            if w.write_all(head).is_err() {
                return;
            }
            first_bytes.lock().unwrap().push(Instant::now());
            if w.write_all(first).is_err() || w.write_all(rest).is_err() {
                return;
            }
        }
    }

    /// The minimal direct client: one request, the body read in 64 KiB
    /// blocks, each SSE event's JSON decoded; returns the tokens read. With
    /// `reuse_shape` it decodes as the daemon does (`src/agent/openai/shape.rs`):
    /// an event that is the last content-only event's bytes around another
    /// plain string is taken without decoding it again.
    fn direct(port: u16, reuse_shape: bool) -> Res<usize> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        let body =
            br#"{"model":"bench","messages":[{"role":"user","content":"go"}],"stream":true}"#;
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        s.write_all(body).map_err(|e| e.to_string())?;
        let (data_at, end_at) = (Finder::new(b"data: "), Finder::new(b"\n\n"));
        let mut raw = Vec::with_capacity(1 << 17);
        let mut buf = vec![0u8; 1 << 16];
        let mut tokens = 0usize;
        let mut shape: Option<Shape> = None;
        loop {
            let n = s.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("direct: the stream ended before [DONE]".into());
            }
            raw.extend_from_slice(&buf[..n]);
            // Events are found by their `data: ` lines; the HTTP chunk
            // framing between them is skipped as a real client would.
            let mut scan = 0;
            while let Some(pos) = data_at.find(&raw[scan..]) {
                let start = scan + pos + 6;
                let Some(end) = end_at.find(&raw[start..]).map(|e| start + e) else {
                    break;
                };
                let data = &raw[start..end];
                scan = end + 2;
                if data == b"[DONE]" {
                    return Ok(tokens);
                }
                if reuse_shape && shape.as_ref().is_some_and(|s| s.holds_text(data)) {
                    tokens += 1;
                    continue;
                }
                let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| e.to_string())?;
                if chunk
                    .choices
                    .first()
                    .is_some_and(|c| !c.delta.content.is_empty())
                {
                    tokens += 1;
                }
                if reuse_shape {
                    shape = Shape::of(data, &chunk);
                }
            }
            raw.drain(..scan);
        }
    }

    /// The bytes around the content string of a content-only event.
    struct Shape {
        before: Vec<u8>,
        after: Vec<u8>,
    }

    impl Shape {
        /// The shape of `data` if it decoded to borrowed content alone.
        fn of(data: &[u8], chunk: &Chunk<'_>) -> Option<Shape> {
            let c = chunk.choices.first()?;
            let d = &c.delta;
            let alone = c.finish_reason.is_none()
                && d.reasoning_content.is_empty()
                && d.reasoning.is_empty()
                && d.tool_calls.is_none();
            let Cow::Borrowed(text) = &d.content else {
                return None;
            };
            let start = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
            let end = start + text.len();
            let quoted =
                start > 0 && data.get(start - 1) == Some(&b'"') && data.get(end) == Some(&b'"');
            (alone && quoted && !text.is_empty()).then(|| Shape {
                before: data[..start].to_vec(),
                after: data[end..].to_vec(),
            })
        }

        /// Whether `data` is this shape around a plain string.
        fn holds_text(&self, data: &[u8]) -> bool {
            data.strip_prefix(self.before.as_slice())
                .and_then(|r| r.strip_suffix(self.after.as_slice()))
                .is_some_and(|t| {
                    !t.is_empty() && !t.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20)
                })
        }
    }

    /// What the direct client decodes of each chunk: the fields the daemon
    /// decodes, typed and borrowed (a `Cow<str>` outside an `Option`, the
    /// form serde borrows), so the comparison is with a fast reader.
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow)]
        choices: Vec<Choice<'a>>,
        #[serde(default)]
        #[allow(dead_code)]
        error: Option<IgnoredAny>,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Choice<'a> {
        #[serde(borrow)]
        delta: Delta<'a>,
        #[serde(default)]
        finish_reason: Option<IgnoredAny>,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Delta<'a> {
        #[serde(borrow, default)]
        content: Cow<'a, str>,
        #[serde(borrow, default)]
        reasoning_content: Cow<'a, str>,
        #[serde(borrow, default)]
        reasoning: Cow<'a, str>,
        #[serde(default)]
        tool_calls: Option<IgnoredAny>,
    }

    /// One turn through the daemon: tokens received (the daemon joins the
    /// deltas it has already received into one chunk), chunks, the instant
    /// of the first `agent_message_chunk`, and the turn's wall time.
    fn turn(c: &mut Conn, sid: &str, n: usize) -> Res<(usize, usize, Instant, Duration)> {
        let prefix = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","type":"agent_message_chunk","text":""#
        );
        let suffix = br#""}}"#;
        let started = Instant::now();
        let id = c.send("session/prompt", json!({"session_id": sid, "prompt": "go"}))?;
        let (mut tokens, mut chunks) = (0, 0);
        let mut first = None;
        loop {
            let line = c.line()?;
            if let Some(text) = line
                .strip_prefix(prefix.as_bytes())
                .and_then(|l| l.strip_suffix(suffix))
            {
                if text.len() % TOKEN.len() != 0 || !text.chunks(4).all(|t| t == TOKEN.as_bytes()) {
                    return Err(format!("bad chunk {}", String::from_utf8_lossy(&line)));
                }
                tokens += text.len() / TOKEN.len();
                chunks += 1;
                first.get_or_insert_with(Instant::now);
                continue;
            }
            let v: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
            if v["id"] == json!(id) {
                let content = v["result"]["content"].as_str().unwrap_or_default();
                if content.len() != n * TOKEN.len() || v["result"]["stop_reason"] != "end_turn" {
                    return Err(format!("bad answer of {} bytes", line.len()));
                }
                let first = first.ok_or("no chunk")?;
                return Ok((tokens, chunks, first, started.elapsed()));
            }
            if v["params"]["type"] != "turn_complete" && v["params"]["type"] != "compaction_notice"
            {
                return Err(format!("unexpected frame {v}"));
            }
        }
    }

    fn env_num(var: &str, default: usize) -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|v| *v > 0)
            .unwrap_or(default)
    }

    pub fn main() -> i32 {
        common::exit_code("openai_stream", run())
    }

    /// One daemon build relaying turns: its process, connection, session
    /// and figures.
    struct Relay {
        name: &'static str,
        server: Server,
        conn: Conn,
        sid: String,
        _dir: ScratchDir,
        rates: Vec<f64>,
        ratios: Vec<f64>,
        cpu_per_token: Vec<f64>,
    }

    impl Relay {
        fn start(name: &'static str, bin: &Path, port: u16) -> Res<Self> {
            let dir = ScratchDir::new(name).map_err(|e| e.to_string())?;
            // Large compaction bounds: every turn's context is sent, so keep it short.
            let config = format!(
                "schema_version = 1\n[agents.m]\nbackend = \"openai\"\nmodel = \"bench\"\n\
                 base_url = \"http://127.0.0.1:{port}/v1\"\ntools = []\n\
                 context_max_messages = 4\ncompact_keep_messages = 0\n"
            );
            std::fs::write(dir.path().join("config.toml"), config).map_err(|e| e.to_string())?;
            let cmd = common::daemon_command(bin, dir.path());
            let server = Server::start(name, cmd, None).map_err(|e| e.to_string())?;
            let mut conn = Conn::open(&server.endpoint)?;
            let sid = conn.new_session("m", "acp")?;
            Ok(Relay {
                name,
                server,
                conn,
                sid,
                _dir: dir,
                rates: Vec::new(),
                ratios: Vec::new(),
                cpu_per_token: Vec::new(),
            })
        }

        /// One measured turn of `n` tokens; `direct` is this round's direct rate.
        fn round(&mut self, n: usize, direct: f64) -> Res<()> {
            let cpu0 = cpu_secs(self.server.pid);
            let (tokens, chunks, _, wall) = turn(&mut self.conn, &self.sid, n)?;
            let cpu = cpu_secs(self.server.pid) - cpu0;
            if tokens != n {
                return Err(format!("{}: {tokens} chunks of {n}", self.name));
            }
            let rate = n as f64 / wall.as_secs_f64();
            let cpu = cpu * 1e6 / n as f64;
            println!(
                "    {:<7} {rate:>10.0} tokens/s   ratio {:.2}   CPU {cpu:.2} µs/token   {chunks} chunks",
                self.name,
                rate / direct
            );
            self.rates.push(rate);
            self.ratios.push(rate / direct);
            self.cpu_per_token.push(cpu);
            Ok(())
        }
    }

    fn run() -> Res<()> {
        let n = env_num("ZC_BENCH_TOKENS", 50_000);
        let rounds = env_num("ZC_BENCH_ROUNDS", 3);
        let latency_turns = env_num("ZC_BENCH_LATENCY_TURNS", 50);
        let model = ModelServer::start()?;
        let bin: &Path = env!("CARGO_BIN_EXE_zeroclaw").as_ref();
        let mut relays = vec![Relay::start("daemon", bin, model.port)?];
        if let Some(before) = std::env::var_os("ZC_BENCH_BEFORE") {
            relays.push(Relay::start("before", Path::new(&before), model.port)?);
        }

        println!(
            "openai_stream: {} ({n} tokens, {rounds} rounds)",
            common::machine()
        );
        model.set_tokens(n);
        let (mut straight, mut same_decode) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let mut rates = [0.0; 2];
            for (reuse, rate) in [false, true].into_iter().zip(&mut rates) {
                let t0 = Instant::now();
                let got = direct(model.port, reuse)?;
                *rate = n as f64 / t0.elapsed().as_secs_f64();
                if got != n {
                    return Err(format!("direct: {got} tokens of {n}"));
                }
            }
            let [direct_rate, shape_rate] = rates;
            println!(
                "  round {round}: direct {direct_rate:>10.0} tokens/s, direct decoding as the daemon {shape_rate:>10.0} tokens/s"
            );
            straight.push(direct_rate);
            same_decode.push(shape_rate);
            // The builds take turns going first.
            for i in 0..relays.len() {
                let at = (i + round) % relays.len();
                relays[at].round(n, direct_rate)?;
            }
        }
        let s = median(&mut straight);
        let same = median(&mut same_decode);
        for r in &mut relays {
            let d = median(&mut r.rates);
            let ratio = d / s;
            println!(
                "median {}: {d:.0} tokens/s, direct {s:.0} tokens/s, ratio {ratio:.2} (target ≥ {RATIO_TARGET}: {}; median of the per-round ratios {:.2}), CPU {:.2} µs/token",
                r.name,
                verdict(ratio >= RATIO_TARGET),
                median(&mut r.ratios),
                median(&mut r.cpu_per_token)
            );
            let same_ratio = d / same;
            println!(
                "median {}: against the direct client decoding as the daemon ({same:.0} tokens/s, the same decode work): ratio {same_ratio:.2} (target ≥ {RATIO_TARGET}: {})",
                r.name,
                verdict(same_ratio >= RATIO_TARGET),
            );
        }

        // First byte → first chunk: short turns, the server's instant of its
        // first body byte against the client's first chunk, same clock.
        model.set_tokens(1);
        for r in &mut relays {
            let mut lat = Vec::new();
            for _ in 0..latency_turns {
                let before = model.first_bytes.lock().unwrap().len();
                let (_, _, first_chunk, _) = turn(&mut r.conn, &r.sid, 1)?;
                let sent = *model
                    .first_bytes
                    .lock()
                    .unwrap()
                    .get(before)
                    .ok_or("no first byte")?;
                lat.push(first_chunk.saturating_duration_since(sent).as_secs_f64() * 1e6);
            }
            let p50 = median(&mut lat);
            let p90 = lat[lat.len() * 9 / 10];
            println!(
                "{}: first byte → first agent_message_chunk: p50 {p50:.0} µs, p90 {p90:.0} µs over {latency_turns} turns (target p50 < {} µs: {})",
                r.name,
                LATENCY_TARGET.as_micros(),
                verdict(p50 < LATENCY_TARGET.as_micros() as f64)
            );
        }
        Ok(())
    }
}
