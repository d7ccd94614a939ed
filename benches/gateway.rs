//! `status` over the WebSocket gateway vs the local Unix socket, in the
//! same run, against the same `zeroclaw` release binary (docs/gateway.md).
//!
//! Scenarios, each on one connection that has completed `initialize`:
//! - `1x1`: one request in flight (request/response latency);
//! - `1x64`: 64 requests kept outstanding (pipelined throughput).
//!
//! The WebSocket client is tokio-tungstenite over plain TCP on loopback,
//! one text message per request; the socket client writes NDJSON. Both
//! run on one current-thread runtime in this process. Every answer is
//! checked: a success, with the id of the oldest request outstanding
//! (`status` is answered in order); anything else fails the bench.
//!
//! Rounds alternate the transports (`ZC_BENCH_ROUNDS`, default 3) so a
//! change in the machine's load spreads over both. Environment:
//! `ZC_BENCH_SECS` (measured seconds per scenario and transport, all
//! rounds together, default 2), `ZC_BENCH_WARMUP_SECS` (per round, 0.2).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    imp::main();
    #[cfg(not(unix))]
    eprintln!("gateway: Unix only (the local side uses a Unix socket)");
}

#[cfg(unix)]
mod imp {
    use std::collections::VecDeque;
    use std::io::Write as _;
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use futures_util::{SinkExt, StreamExt};
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::Message;

    use super::common::{self, ScratchDir, Server};

    const TOKEN: &str = "zc_00000000000000000000000000000000000000000000000000000000000000be";
    const STATUS: &str = r#"{"jsonrpc":"2.0","method":"status","id":"#;

    pub fn main() {
        let rounds: u32 = std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(3);
        let secs = common::env_secs("ZC_BENCH_SECS", 2.0);
        let warmup = common::env_secs("ZC_BENCH_WARMUP_SECS", 0.2);
        let (server, port) = start_daemon().expect("starting the daemon");
        println!("gateway bench: {}", common::machine());
        println!(
            "{rounds} rounds, {:.2} s measured per scenario and transport, {:.2} s warm-up per round",
            secs.as_secs_f64(),
            warmup.as_secs_f64()
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        println!(
            "{:<6} {:<7} {:>10} {:>10} {:>10}",
            "load", "over", "req/s", "p50 us", "p99 us"
        );
        for depth in [1usize, 64] {
            let mut results = [Stats::default(), Stats::default()];
            for round in 0..rounds {
                for i in 0..2 {
                    let t = (i + round as usize) % 2;
                    let per_round = secs / rounds;
                    let s = rt.block_on(run(
                        t == 1,
                        &server.endpoint,
                        port,
                        depth,
                        warmup,
                        per_round,
                    ));
                    results[t].add(s);
                }
            }
            for (t, name) in ["socket", "wss"].iter().enumerate() {
                let r = &mut results[t];
                r.lat.sort_unstable();
                println!(
                    "1x{depth:<4} {name:<7} {:>10.0} {:>10.1} {:>10.1}",
                    r.count as f64 / r.time.as_secs_f64(),
                    percentile(&r.lat, 50.0),
                    percentile(&r.lat, 99.0)
                );
            }
            let rate = |r: &Stats| r.count as f64 / r.time.as_secs_f64();
            println!(
                "1x{depth:<4} wss/socket throughput {:.2}x",
                rate(&results[1]) / rate(&results[0])
            );
        }
        let _ = std::io::stdout().flush();
        drop(server);
    }

    /// The release daemon with the gateway on a free loopback port and a paired token.
    fn start_daemon() -> std::io::Result<(Server, u16)> {
        let dir = ScratchDir::new("gateway")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let config = format!(
            "schema_version = 1\n\n[gateway]\nenabled = true\nport = {port}\npaired_tokens = [\"{}\"]\n\n[agents.echo]\nbackend = \"echo\"\n",
            zeroclaw::config::token_digest(TOKEN)
        );
        write_private(&dir.path().join("config.toml"), &config)?;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
        cmd.arg("--config-dir")
            .arg(dir.path())
            .arg("daemon")
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env_remove("ZEROCLAW_DATA_DIR")
            .env_remove("ZEROCLAW_SOCKET")
            .env_remove("ZEROCLAW_LOG");
        Ok((Server::start("daemon", cmd, Some(dir))?, port))
    }

    fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        f.write_all(text.as_bytes())
    }

    #[derive(Default)]
    struct Stats {
        count: u64,
        time: Duration,
        /// Nanoseconds.
        lat: Vec<u64>,
    }

    impl Stats {
        fn add(&mut self, o: Stats) {
            self.count += o.count;
            self.time += o.time;
            self.lat.extend(o.lat);
        }
    }

    fn percentile(sorted: &[u64], p: f64) -> f64 {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
    }

    /// Checks one answer: a success whose id is the oldest outstanding request.
    fn check(frame: &[u8], outstanding: &mut VecDeque<(u64, Instant)>) -> Instant {
        #[derive(Deserialize)]
        struct Resp<'a> {
            id: u64,
            #[serde(borrow)]
            result: Option<&'a RawValue>,
        }
        let r: Resp<'_> = serde_json::from_slice(frame)
            .unwrap_or_else(|e| panic!("bad answer ({e}): {}", String::from_utf8_lossy(frame)));
        let (id, sent) = outstanding.pop_front().expect("an answer nobody asked for");
        assert!(
            r.id == id && r.result.is_some(),
            "expected a result for {id}: {}",
            String::from_utf8_lossy(frame)
        );
        sent
    }

    /// A connection of either kind.
    enum Conn {
        Local(tokio::net::UnixStream, Vec<u8>),
        Ws(Box<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>>),
    }

    impl Conn {
        async fn open(ws: bool, endpoint: &Path, port: u16) -> Conn {
            if !ws {
                let s = common::connect_initialized(endpoint).await.expect("socket");
                return Conn::Local(s, Vec::with_capacity(64 * 1024));
            }
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            tcp.set_nodelay(true).unwrap();
            let (mut w, _) = tokio_tungstenite::client_async("ws://localhost/ws", tcp)
                .await
                .expect("WebSocket handshake");
            let init = format!(
                r#"{{"jsonrpc":"2.0","method":"initialize","params":{{"protocolVersion":1,"authToken":"{TOKEN}"}},"id":0}}"#
            );
            w.send(Message::Text(init.into())).await.unwrap();
            let Some(Ok(Message::Text(t))) = w.next().await else {
                panic!("no initialize answer")
            };
            common::check_initialize_response(t.as_bytes()).unwrap();
            Conn::Ws(Box::new(w))
        }

        async fn send(&mut self, ids: std::ops::Range<u64>) {
            match self {
                Conn::Local(s, _) => {
                    let mut buf = Vec::new();
                    for id in ids {
                        buf.extend_from_slice(format!("{STATUS}{id}}}\n").as_bytes());
                    }
                    s.write_all(&buf).await.unwrap();
                }
                Conn::Ws(w) => {
                    for id in ids {
                        w.feed(Message::Text(format!("{STATUS}{id}}}").into()))
                            .await
                            .unwrap();
                    }
                    w.flush().await.unwrap();
                }
            }
        }

        /// Reads what has arrived (at least one answer) and checks every answer.
        async fn recv(
            &mut self,
            outstanding: &mut VecDeque<(u64, Instant)>,
            lat: &mut Vec<u64>,
        ) -> u64 {
            let mut n = 0;
            match self {
                Conn::Local(s, buf) => loop {
                    if s.read_buf(buf).await.unwrap() == 0 {
                        panic!("the daemon closed the socket");
                    }
                    let mut start = 0;
                    while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
                        let sent = check(&buf[start..start + i], outstanding);
                        lat.push(sent.elapsed().as_nanos() as u64);
                        n += 1;
                        start += i + 1;
                    }
                    buf.drain(..start);
                    if n > 0 {
                        return n;
                    }
                },
                Conn::Ws(w) => {
                    let Some(Ok(Message::Text(t))) = w.next().await else {
                        panic!("the gateway closed the session")
                    };
                    let sent = check(t.as_bytes(), outstanding);
                    lat.push(sent.elapsed().as_nanos() as u64);
                    1
                }
            }
        }
    }

    /// One round of one scenario on one transport.
    async fn run(
        ws: bool,
        endpoint: &Path,
        port: u16,
        depth: usize,
        warmup: Duration,
        measure: Duration,
    ) -> Stats {
        let mut conn = Conn::open(ws, endpoint, port).await;
        let mut outstanding = VecDeque::with_capacity(depth);
        let mut next_id = 1u64;
        let mut lat = Vec::new();
        let begin = Instant::now();
        let mut measuring: Option<(Instant, u64)> = None;
        let mut done = 0u64;
        loop {
            let now = Instant::now();
            if measuring.is_none() && now >= begin + warmup {
                measuring = Some((now, done));
                lat.clear();
            }
            if let Some((t0, _)) = measuring {
                if now >= t0 + measure {
                    break;
                }
            }
            let want = depth - outstanding.len();
            if want > 0 {
                let ids = next_id..next_id + want as u64;
                let sent_at = Instant::now();
                outstanding.extend(ids.clone().map(|id| (id, sent_at)));
                conn.send(ids).await;
                next_id += want as u64;
            }
            done += conn.recv(&mut outstanding, &mut lat).await;
        }
        let (t0, done0) = measuring.expect("measured");
        let stats = Stats {
            count: done - done0,
            time: t0.elapsed(),
            lat,
        };
        // Drain what is still owed, so the next round starts clean.
        while !outstanding.is_empty() {
            conn.recv(&mut outstanding, &mut Vec::new()).await;
        }
        stats
    }
}
