//! A hosted ACP agent (`backend = "acp"`) through the daemon,
//! against the same agent driven directly, in the same run
//! (docs/performance.md).
//!
//! - `direct`: the test agent (examples/acp_test_agent.rs) over its stdio
//!   with a minimal client: `initialize`, `session/new`, one prompt
//!   `flood N`; updates/s until its answer.
//! - `daemon`: the same prompt on an ACP-mode session (every chunk committed
//!   to SQLite before its notification) of the real daemon, read by a
//!   socket client; updates/s, the daemon's CPU per update, and the ratio to
//!   `direct` (target ≥ 0.7).
//! - `daemon-chat`: the same on a Chat session (no per-chunk commit): the
//!   host's own cost, for comparison.
//! - `slow-reader`: the same turn read at a trickle for a while; the
//!   daemon's VmRSS growth must stay under 64 MiB.
//!
//! Every chunk is counted and the answer checked; a mismatch exits non-zero.
//! `ZC_BENCH_CHUNKS` (default 100000), `ZC_BENCH_SLOW_SECS` (default 3),
//! `ZC_BENCH_BEFORE_BIN` (another build of the daemon: its `daemon` line as
//! `daemon-before`, same agent, same run, turns alternated).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("acp_agent: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::{json, Value};

    use super::common::{self, cpu_secs, ScratchDir, Server};

    const RATIO_TARGET: f64 = 0.7;
    const RSS_GROWTH_BOUND: u64 = 64 * 1024 * 1024;

    type Res<T> = Result<T, String>;

    /// `<target>/<profile>/examples/acp_test_agent`, built if missing or
    /// older than its source.
    fn agent_bin() -> Res<PathBuf> {
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_zeroclaw"));
        let dir = bin.parent().ok_or("no target dir")?;
        let path = dir.join("examples").join("acp_test_agent");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/acp_test_agent.rs");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if modified(&path) < modified(&source) {
            let release = dir.ends_with("release");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--example", "acp_test_agent"]);
            if release {
                cmd.arg("--release");
            }
            let st = cmd
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .map_err(|e| e.to_string())?;
            if !st.success() {
                return Err("building the test agent failed".into());
            }
        }
        Ok(path)
    }

    /// Where a client finds a chunk's text: both sides decode every chunk
    /// line (borrowed, typed) and keep its text, the least a real client does.
    #[derive(Clone, Copy)]
    enum Chunks {
        /// Not a turn (`initialize`, `session/new`, a warm-up).
        Ignored,
        /// ACP `session/update` params: `update.content.text`.
        Acp,
        /// Our `session/update` params: `text`.
        Daemon,
    }

    #[derive(Deserialize)]
    struct Line<P> {
        params: P,
    }
    #[derive(Deserialize)]
    struct AcpParams<'a> {
        #[serde(borrow)]
        update: AcpUpdate<'a>,
    }
    #[derive(Deserialize)]
    struct AcpUpdate<'a> {
        #[serde(borrow)]
        content: Text<'a>,
    }
    #[derive(Deserialize)]
    struct Text<'a> {
        #[serde(borrow)]
        text: Cow<'a, str>,
    }

    /// Reads lines from `r` until the one that answers `id`; returns the
    /// chunk lines, their text joined, and the answer.
    fn read_turn(r: &mut impl BufRead, id: u64, chunks: Chunks) -> Res<(u64, String, Value)> {
        let (mut count, mut text) = (0, String::new());
        let mut line = Vec::new();
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line).map_err(|e| e.to_string())? == 0 {
                return Err("end of stream during the turn".into());
            }
            if !matches!(chunks, Chunks::Ignored) && memfind(&line, b"\"agent_message_chunk\"") {
                let piece = match chunks {
                    Chunks::Acp => serde_json::from_slice::<Line<AcpParams>>(&line)
                        .map(|l| l.params.update.content.text),
                    _ => serde_json::from_slice::<Line<Text>>(&line).map(|l| l.params.text),
                };
                text.push_str(&piece.map_err(|e| e.to_string())?);
                count += 1;
                continue;
            }
            let v: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
            if v.get("method").is_none() && v["id"] == json!(id) {
                return Ok((count, text, v));
            }
        }
    }

    /// The text of `flood n`: n dots.
    fn is_flood(text: &str, n: u64) -> bool {
        text.len() as u64 == n && text.bytes().all(|b| b == b'.')
    }

    fn memfind(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    fn direct(agent: &Path, n: u64) -> Res<(f64, f64)> {
        let dir = ScratchDir::new("acpdirect").map_err(|e| e.to_string())?;
        let mut child = Command::new(agent)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut stdin = child.stdin.take().ok_or("stdin")?;
        let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().ok_or("stdout")?);
        let mut send = |id: u64, method: &str, params: Value| {
            let mut f =
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
            f.push('\n');
            stdin.write_all(f.as_bytes()).map_err(|e| e.to_string())
        };
        send(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )?;
        read_turn(&mut out, 1, Chunks::Ignored)?;
        let cwd = dir.path().to_string_lossy().into_owned();
        send(2, "session/new", json!({"cwd": cwd, "mcpServers": []}))?;
        let (_, _, r) = read_turn(&mut out, 2, Chunks::Ignored)?;
        let sid = r["result"]["sessionId"]
            .as_str()
            .ok_or("no session id")?
            .to_owned();
        let started = Instant::now();
        let cpu0 = cpu_secs(child.id());
        let prompt = json!([{"type": "text", "text": format!("flood {n}")}]);
        send(
            3,
            "session/prompt",
            json!({"sessionId": sid, "prompt": prompt}),
        )?;
        let (chunks, text, answer) = read_turn(&mut out, 3, Chunks::Acp)?;
        let secs = started.elapsed().as_secs_f64();
        let agent_cpu = cpu_secs(child.id()) - cpu0;
        let _ = child.kill();
        let _ = child.wait();
        if chunks != n || !is_flood(&text, n) || answer["result"]["stopReason"] != "end_turn" {
            return Err(format!("direct: {chunks} chunks, {answer}"));
        }
        Ok((n as f64 / secs, agent_cpu))
    }

    /// The daemon `bin` (this build's by default) hosting `agent` as `acp`,
    /// with a credential in its `env` as a real agent has: every frame the
    /// daemon writes is then scanned for it (docs/agents.md).
    fn daemon(name: &'static str, bin: Option<&Path>, agent: &Path) -> Res<Server> {
        let agent = serde_json::to_string(&agent.to_string_lossy()).map_err(|e| e.to_string())?;
        let config = format!(
            "schema_version = 1\n\n[agents.acp]\nbackend = \"acp\"\ncommand = [{agent}]\n\
             env = {{ BENCH_API_KEY = \"sk-bench-0123456789abcdef\" }}\n"
        );
        match bin {
            Some(bin) => Server::daemon_with_config_from(name, bin, &config),
            None => Server::daemon_with_config(name, &config),
        }
        .map_err(|e| e.to_string())
    }

    struct Client {
        w: UnixStream,
        r: BufReader<UnixStream>,
        next_id: u64,
    }

    impl Client {
        fn open(server: &Server) -> Res<Self> {
            let mut w = UnixStream::connect(&server.endpoint).map_err(|e| e.to_string())?;
            w.set_read_timeout(Some(Duration::from_secs(120)))
                .map_err(|e| e.to_string())?;
            let r = BufReader::with_capacity(1 << 20, w.try_clone().map_err(|e| e.to_string())?);
            w.write_all(common::INITIALIZE).map_err(|e| e.to_string())?;
            let mut c = Client { w, r, next_id: 1 };
            let mut line = Vec::new();
            c.r.read_until(b'\n', &mut line)
                .map_err(|e| e.to_string())?;
            common::check_initialize_response(&line).map_err(|e| e.to_string())?;
            Ok(c)
        }

        fn send(&mut self, method: &str, params: Value) -> Res<u64> {
            let id = self.next_id;
            self.next_id += 1;
            let mut f =
                json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).to_string();
            f.push('\n');
            self.w.write_all(f.as_bytes()).map_err(|e| e.to_string())?;
            Ok(id)
        }

        fn session(&mut self, mode: &str) -> Res<String> {
            let id = self.send(
                "session/new",
                json!({"agent_alias": "acp", "chat_mode": mode}),
            )?;
            let (_, _, v) = read_turn(&mut self.r, id, Chunks::Ignored)?;
            Ok(v["result"]["session_id"]
                .as_str()
                .ok_or("no session id")?
                .to_owned())
        }
    }

    fn through_daemon(server: &Server, n: u64, mode: &str) -> Res<(f64, f64)> {
        let mut c = Client::open(server)?;
        let sid = c.session(mode)?;
        // Warm up: the agent process starts on the first prompt.
        let id = c.send(
            "session/prompt",
            json!({"session_id": sid, "prompt": "say warm"}),
        )?;
        read_turn(&mut c.r, id, Chunks::Ignored)?;
        let cpu0 = cpu_secs(server.pid);
        let started = Instant::now();
        let id = c.send(
            "session/prompt",
            json!({"session_id": sid, "prompt": format!("flood {n}")}),
        )?;
        let (chunks, text, answer) = read_turn(&mut c.r, id, Chunks::Daemon)?;
        let secs = started.elapsed().as_secs_f64();
        let cpu = cpu_secs(server.pid) - cpu0;
        // The daemon sends chunks it has already read as one (docs/agents.md):
        // the text is checked whole, the frames only bounded.
        let text_ok = is_flood(&text, n) && answer["result"]["content"].as_str() == Some(&text);
        if chunks == 0 || chunks > n || !text_ok || answer["result"]["stop_reason"] != "end_turn" {
            return Err(format!("daemon: {chunks} chunks, {answer}"));
        }
        Ok((n as f64 / secs, cpu))
    }

    fn slow_reader(server: &Server, n: u64, slow: Duration) -> Res<(u64, u64)> {
        let mut c = Client::open(server)?;
        let sid = c.session("acp")?;
        let base = server.rss_bytes().map_err(|e| e.to_string())?;
        let id = c.send(
            "session/prompt",
            json!({"session_id": sid, "prompt": format!("flood {n}")}),
        )?;
        let started = Instant::now();
        let mut peak = base;
        let mut line = Vec::new();
        let mut answer = None;
        // One line every 2 ms (the reader's buffer holds up to 1 MiB of
        // them); the turn may end in that time (its chunks are joined into
        // few notifications), so the answer is looked for here too.
        while started.elapsed() < slow && answer.is_none() {
            line.clear();
            if c.r
                .read_until(b'\n', &mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err("end of stream".into());
            }
            if !memfind(&line, b"\"agent_message_chunk\"") {
                let v: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
                if v.get("method").is_none() && v["id"] == json!(id) {
                    answer = Some(v);
                }
            }
            peak = peak.max(server.rss_bytes().map_err(|e| e.to_string())?);
            std::thread::sleep(Duration::from_millis(2));
        }
        let answer = match answer {
            Some(answer) => answer,
            None => read_turn(&mut c.r, id, Chunks::Daemon)?.2,
        };
        if answer["result"]["stop_reason"] != "end_turn" {
            return Err(format!("slow reader: {answer}"));
        }
        Ok((base, peak))
    }

    pub fn main() -> i32 {
        match run() {
            Ok(ok) => i32::from(!ok),
            Err(e) => {
                eprintln!("acp_agent: {e}");
                2
            }
        }
    }

    fn run() -> Res<bool> {
        let n = std::env::var("ZC_BENCH_CHUNKS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000u64);
        let slow = common::env_secs("ZC_BENCH_SLOW_SECS", 3.0);
        let agent = agent_bin()?;
        println!("acp_agent: {} ({n} chunks per turn)", common::machine());
        let (direct_rate, agent_cpu) = direct(&agent, n)?;
        println!(
            "direct       {direct_rate:>10.0} updates/s  (agent CPU {:.2} µs/update)",
            agent_cpu * 1e6 / n as f64
        );
        let server = daemon("daemon", None, &agent)?;
        let before_bin = std::env::var_os("ZC_BENCH_BEFORE_BIN").map(PathBuf::from);
        let before = match &before_bin {
            Some(bin) => Some(daemon("daemon-before", Some(bin), &agent)?),
            None => None,
        };
        // Before and after alternate, turn by turn, so drift in the machine's
        // load spreads over both; the better of three each.
        let mut best = (0.0f64, 0.0f64);
        let mut best_before = (0.0f64, 0.0f64);
        for _ in 0..if before.is_some() { 3 } else { 1 } {
            let now = through_daemon(&server, n, "acp")?;
            if now.0 > best.0 {
                best = now;
            }
            if let Some(b) = &before {
                let then = through_daemon(b, n, "acp")?;
                if then.0 > best_before.0 {
                    best_before = then;
                }
            }
        }
        let (daemon_rate, cpu) = best;
        let ratio = daemon_rate / direct_rate;
        if before.is_some() {
            let (rate, cpu) = best_before;
            println!(
                "daemon-before {rate:>9.0} updates/s  (daemon CPU {:.2} µs/update), ratio {:.2}; after/before {:.2}",
                cpu * 1e6 / n as f64,
                rate / direct_rate,
                daemon_rate / rate
            );
        }
        println!(
            "daemon       {daemon_rate:>10.0} updates/s  (daemon CPU {:.2} µs/update), ratio {ratio:.2} (target ≥ {RATIO_TARGET})",
            cpu * 1e6 / n as f64
        );
        // The same without durable persistence: what the host itself costs.
        let (chat_rate, chat_cpu) = through_daemon(&server, n, "chat")?;
        println!(
            "daemon-chat  {chat_rate:>10.0} updates/s  (daemon CPU {:.2} µs/update), ratio {:.2} (no persistence; not the target)",
            chat_cpu * 1e6 / n as f64,
            chat_rate / direct_rate
        );
        let (base, peak) = slow_reader(&server, n, slow)?;
        let growth = peak.saturating_sub(base);
        println!(
            "slow-reader  RSS {} → peak {} KiB, growth {} KiB (bound {} KiB)",
            base / 1024,
            peak / 1024,
            growth / 1024,
            RSS_GROWTH_BOUND / 1024
        );
        Ok(ratio >= RATIO_TARGET && growth < RSS_GROWTH_BOUND)
    }
}
