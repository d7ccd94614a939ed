//! Streaming cost of `backend = "openai"` (issue 17, docs/performance.md):
//! a model server in this process streams 50,000 one-token content deltas
//! as fast as it can write them; the real `zeroclaw` release binary (agent
//! `m`, an ACP session: every chunk committed to SQLite before its
//! notification) relays them to a client on its Unix socket. In the same
//! run a minimal direct client reads the same stream over HTTP.
//!
//! Reported: tokens/s through the daemon and direct, their ratio (target
//! ≥ 0.7), the daemon's CPU per token, and the time from the server's first
//! body byte to the client's first `agent_message_chunk`, p50 over short
//! turns (target < 1 ms). Every chunk is checked (count, final content).
//! Environment: `ZC_BENCH_TOKENS` (default 50000), `ZC_BENCH_ROUNDS`
//! (default 3), `ZC_BENCH_LATENCY_TURNS` (default 50).

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
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

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

    /// The model server: every request gets the stream of `tokens()`
    /// tokens; the instant each stream's first body byte was written is kept.
    struct ModelServer {
        port: u16,
        tokens: Arc<Mutex<usize>>,
        first_bytes: Arc<Mutex<Vec<Instant>>>,
    }

    impl ModelServer {
        fn start() -> Res<Self> {
            let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            let tokens = Arc::new(Mutex::new(1usize));
            let first_bytes = Arc::new(Mutex::new(Vec::new()));
            let (t, f) = (tokens.clone(), first_bytes.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming().flatten() {
                    let (t, f) = (t.clone(), f.clone());
                    std::thread::spawn(move || serve(conn, &t, &f));
                }
            });
            Ok(ModelServer {
                port,
                tokens,
                first_bytes,
            })
        }

        fn set_tokens(&self, n: usize) {
            *self.tokens.lock().unwrap() = n;
        }
    }

    fn serve(conn: TcpStream, tokens: &Mutex<usize>, first_bytes: &Mutex<Vec<Instant>>) {
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
            let (first, rest) = body_parts(*tokens.lock().unwrap());
            let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            if w.write_all(head).is_err() {
                return;
            }
            first_bytes.lock().unwrap().push(Instant::now());
            if w.write_all(&first).is_err() || w.write_all(&rest).is_err() {
                return;
            }
        }
    }

    /// The minimal direct client: one request, the body read in 64 KiB
    /// blocks, each SSE event's JSON decoded; returns the tokens read.
    fn direct(port: u16) -> Res<usize> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        let body =
            br#"{"model":"bench","messages":[{"role":"user","content":"go"}],"stream":true}"#;
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        s.write_all(body).map_err(|e| e.to_string())?;
        let mut raw = Vec::with_capacity(1 << 20);
        let mut buf = vec![0u8; 1 << 16];
        let mut tokens = 0usize;
        let mut scan = 0usize;
        loop {
            let n = s.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("direct: the stream ended before [DONE]".into());
            }
            raw.extend_from_slice(&buf[..n]);
            // Events are found by their `data: ` lines; the HTTP chunk
            // framing between them is skipped as a real client would.
            while let Some(pos) = find(&raw[scan..], b"data: ") {
                let start = scan + pos + 6;
                let Some(end) = find(&raw[start..], b"\n\n").map(|e| start + e) else {
                    break;
                };
                let data = &raw[start..end];
                scan = end + 2;
                if data == b"[DONE]" {
                    return Ok(tokens);
                }
                let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| e.to_string())?;
                if chunk
                    .choices
                    .first()
                    .is_some_and(|c| c.delta.content.is_some())
                {
                    tokens += 1;
                }
            }
        }
    }

    /// What the direct client decodes of each chunk (typed and borrowed,
    /// as a careful client would, so the comparison is with a fast reader).
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow)]
        choices: Vec<Choice<'a>>,
    }

    #[derive(serde::Deserialize)]
    struct Choice<'a> {
        #[serde(borrow)]
        delta: Delta<'a>,
    }

    #[derive(serde::Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, default)]
        content: Option<std::borrow::Cow<'a, str>>,
    }

    fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
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

    fn run() -> Res<()> {
        let n = env_num("ZC_BENCH_TOKENS", 50_000);
        let rounds = env_num("ZC_BENCH_ROUNDS", 3);
        let latency_turns = env_num("ZC_BENCH_LATENCY_TURNS", 50);
        let model = ModelServer::start()?;
        let dir = ScratchDir::new("oai").map_err(|e| e.to_string())?;
        // Large compaction bounds: every turn's context is sent, so keep it short.
        let config = format!(
            "schema_version = 1\n[agents.m]\nbackend = \"openai\"\nmodel = \"bench\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\ntools = []\n\
             context_max_messages = 4\ncompact_keep_messages = 0\n",
            model.port
        );
        std::fs::write(dir.path().join("config.toml"), config).map_err(|e| e.to_string())?;
        let cmd = common::daemon_command(env!("CARGO_BIN_EXE_zeroclaw").as_ref(), dir.path());
        let server = Server::start("daemon", cmd, None).map_err(|e| e.to_string())?;
        let mut c = Conn::open(&server.endpoint)?;
        let sid = c.new_session("m", "acp")?;

        println!(
            "openai_stream: {} ({n} tokens, {rounds} rounds)",
            common::machine()
        );
        let (mut via, mut straight, mut cpu_per_token) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            model.set_tokens(n);
            let t0 = Instant::now();
            let got = direct(model.port)?;
            let direct_secs = t0.elapsed().as_secs_f64();
            if got != n {
                return Err(format!("direct: {got} tokens of {n}"));
            }
            let cpu0 = cpu_secs(server.pid);
            let (tokens, chunks, _, wall) = turn(&mut c, &sid, n)?;
            let cpu = cpu_secs(server.pid) - cpu0;
            if tokens != n {
                return Err(format!("daemon: {tokens} chunks of {n}"));
            }
            let (d, s) = (n as f64 / wall.as_secs_f64(), n as f64 / direct_secs);
            println!(
                "  round {round}: daemon {d:>10.0} tokens/s   direct {s:>10.0} tokens/s   ratio {:.2}   daemon CPU {:.2} µs/token   {chunks} chunks",
                d / s,
                cpu * 1e6 / n as f64
            );
            via.push(d);
            straight.push(s);
            cpu_per_token.push(cpu * 1e6 / n as f64);
        }
        let (d, s) = (median(&mut via), median(&mut straight));
        let ratio = d / s;
        println!(
            "median: daemon {d:.0} tokens/s, direct {s:.0} tokens/s, ratio {ratio:.2} (target ≥ {RATIO_TARGET}: {}), daemon CPU {:.2} µs/token",
            verdict(ratio >= RATIO_TARGET),
            median(&mut cpu_per_token)
        );

        // First byte → first chunk: short turns, the server's instant of its
        // first body byte against the client's first chunk, same clock.
        model.set_tokens(1);
        let mut lat = Vec::new();
        for _ in 0..latency_turns {
            let before = model.first_bytes.lock().unwrap().len();
            let (_, _, first_chunk, _) = turn(&mut c, &sid, 1)?;
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
            "first byte → first agent_message_chunk: p50 {p50:.0} µs, p90 {p90:.0} µs over {latency_turns} turns (target p50 < {} µs: {})",
            LATENCY_TARGET.as_micros(),
            verdict(p50 < LATENCY_TARGET.as_micros() as f64)
        );
        drop(server);
        Ok(())
    }
}
