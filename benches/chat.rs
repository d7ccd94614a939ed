//! `zeroclaw chat` against the real release daemon (docs/performance.md):
//!
//! - `start_to_prompt`: from spawning `zeroclaw chat --new` (plain mode) to
//!   its session notice, printed just before it reads the first prompt:
//!   connect, `initialize`, `session/list`, `config/get`, `session/new`
//!   (target ≤ 50 ms).
//! - `stream_100k`: an echo turn of 100,000 one-byte chunks (`::chunk 1`,
//!   `::repeat 100000 x`), rendered to a pipe, timed from the prompt (sent
//!   once the chat's session notice shows, so start-up is not counted) to the
//!   last byte; beside it the same turn read by a raw socket client that
//!   only scans for the answer (the daemon's own rate). The ratio says
//!   whether the client keeps up; the chat's peak RSS says whether it
//!   buffers (it must not: its queue is bounded).
//!
//! Environment: `ZC_BENCH_ROUNDS` (default 20 for start-up, 3 for streams).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("chat: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::common::{self, Server};

    const CHUNKS: usize = 100_000;
    const PROMPT: &str = "::chunk 1\\\n::repeat 100000 x\n";

    pub fn main() -> i32 {
        match run() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("chat bench: {e}");
                1
            }
        }
    }

    fn rounds(default: usize) -> usize {
        std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn chat_cmd(server: &Server, home: &std::path::Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
        cmd.arg("chat")
            .arg("--new")
            .env("HOME", home)
            .env("ZEROCLAW_SOCKET", &server.endpoint)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env_remove("ZEROCLAW_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn run() -> Result<(), String> {
        let e = |e: std::io::Error| e.to_string();
        let server = Server::daemon().map_err(e)?;
        let home = common::ScratchDir::new("chat-home").map_err(e)?;
        println!("machine: {}", common::machine());

        let mut times = Vec::new();
        for _ in 0..rounds(20) {
            let start = Instant::now();
            let mut child = chat_cmd(&server, home.path()).spawn().map_err(e)?;
            let _err = at_prompt(&mut child)?;
            times.push(start.elapsed());
            drop(child.stdin.take());
            child.wait().map_err(e)?;
        }
        times.sort();
        println!(
            "start_to_prompt: median {:.1} ms, p95 {:.1} ms, best {:.1} ms ({} runs; target <= 50 ms)",
            ms(times[times.len() / 2]),
            ms(times[(times.len() * 95 / 100).min(times.len() - 1)]),
            ms(times[0]),
            times.len()
        );

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(e)?;
        for round in 0..rounds(3) {
            let raw = rt.block_on(raw_turn(&server)).map_err(e)?;
            let (chat, hwm) = chat_turn(&server, home.path())?;
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            println!(
                "stream_100k round {round}: daemon (raw reader) {:.0} ms, chat {:.0} ms, ratio {:.2}, chat peak RSS {:.1} MiB, load {}",
                ms(raw),
                ms(chat),
                chat.as_secs_f64() / raw.as_secs_f64(),
                hwm as f64 / 1048576.0,
                load.split_whitespace().next().unwrap_or("?")
            );
        }
        Ok(())
    }

    /// Reads the chat's stderr up to its session notice (it reads its
    /// first prompt next); the stderr, kept open.
    fn at_prompt(child: &mut std::process::Child) -> Result<std::process::ChildStderr, String> {
        let mut err = child.stderr.take().ok_or("stderr")?;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("/help for commands") {
            let n = err.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!("chat exited: {}", String::from_utf8_lossy(&seen)));
            }
            seen.extend_from_slice(&buf[..n]);
        }
        Ok(err)
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    /// The turn through a client that only looks for the answer line.
    async fn raw_turn(server: &Server) -> std::io::Result<Duration> {
        let stream = common::connect_initialized(&server.endpoint).await?;
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/new\",\"params\":{\"agent_alias\":\"echo\",\"chat_mode\":\"chat\"},\"id\":1}\n").await?;
        let created = lines.next_line().await?.unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&created).map_err(std::io::Error::other)?;
        let id = v["result"]["session_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let prompt = serde_json::json!({"jsonrpc":"2.0","method":"session/prompt","params":{"session_id": id, "prompt": "::chunk 1\n::repeat 100000 x"},"id":2});
        let start = Instant::now();
        w.write_all(format!("{prompt}\n").as_bytes()).await?;
        while let Some(l) = lines.next_line().await? {
            if l.ends_with("\"id\":2}") || l.contains("\"id\":2,") {
                break;
            }
        }
        Ok(start.elapsed())
    }

    /// The turn through `zeroclaw chat`; its time and peak RSS.
    fn chat_turn(server: &Server, home: &std::path::Path) -> Result<(Duration, u64), String> {
        let e = |e: std::io::Error| e.to_string();
        let mut child = chat_cmd(server, home).spawn().map_err(e)?;
        let _err = at_prompt(&mut child)?;
        let mut out = child.stdout.take().ok_or("stdout")?;
        let mut stdin = child.stdin.take().ok_or("stdin")?;
        let start = Instant::now();
        stdin.write_all(PROMPT.as_bytes()).map_err(e)?;
        let mut got = 0usize;
        let mut buf = vec![0u8; 65536];
        while got < CHUNKS {
            let n = out.read(&mut buf).map_err(e)?;
            if n == 0 {
                return Err(format!("chat ended after {got} bytes"));
            }
            got += buf[..n].iter().filter(|&&b| b == b'x').count();
        }
        let took = start.elapsed();
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let hwm = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024;
        drop(stdin);
        let _ = child.wait();
        Ok((took, hwm))
    }
}
