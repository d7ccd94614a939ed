//! `zeroclaw acp` against the real release daemon
//! (docs/performance.md): one echo turn of 100,000 one-byte chunks
//! (`::chunk 1`, `::repeat 100000 x`) in a durable session,
//!
//! - through the bridge: an editor (this bench) writes ACP on the bridge's
//!   stdin and reads its stdout to the prompt's answer;
//! - read directly from the daemon's socket by a raw client that only
//!   scans for the answer (the daemon's own rate), same run, alternating.
//!
//! Target: bridge throughput ≥ 0.8× direct. Then a slow editor: the same
//! turn with nothing read from the bridge's stdout for 3 s, then all of it;
//! the bridge's peak RSS shows its memory stays bounded (its queue to the
//! editor holds at most `OUT_BUDGET`, 4 MiB).
//!
//! Environment: `ZC_BENCH_ROUNDS` (default 3).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("acp_bridge: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    use super::common::{self, Server};

    const PROMPT: &str = "::chunk 1\n::repeat 100000 x";

    pub fn main() -> i32 {
        common::exit_code("acp_bridge", run())
    }

    fn rounds() -> usize {
        std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3)
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    fn run() -> Result<(), String> {
        let e = |e: std::io::Error| e.to_string();
        let server = Server::daemon().map_err(e)?;
        let home = common::ScratchDir::new("acp-bridge-home").map_err(e)?;
        println!("machine: {}", common::machine());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(e)?;
        let mut ratios = Vec::new();
        for round in 0..rounds() {
            let direct = rt.block_on(direct_turn(&server)).map_err(e)?;
            let (bridge, hwm) = bridge_turn(&server, home.path(), Duration::ZERO)?;
            let ratio = direct.as_secs_f64() / bridge.as_secs_f64();
            ratios.push(ratio);
            println!(
                "turn_100k round {round}: direct {:.0} ms, through the bridge {:.0} ms, throughput {:.2}x direct, bridge peak RSS {:.1} MiB",
                ms(direct),
                ms(bridge),
                ratio,
                hwm as f64 / 1048576.0
            );
        }
        let median = common::median(&mut ratios);
        println!(
            "turn_100k: median {median:.2}x direct (target >= 0.8x: {})",
            common::verdict(median >= 0.8)
        );
        let (slow, hwm) = bridge_turn(&server, home.path(), Duration::from_secs(3))?;
        println!(
            "slow editor (stdout unread for 3 s): {:.0} ms, bridge peak RSS {:.1} MiB (queue bound 4 MiB)",
            ms(slow),
            hwm as f64 / 1048576.0
        );
        Ok(())
    }

    /// The turn on a raw socket client: new durable session, prompt, scan to the answer.
    async fn direct_turn(server: &Server) -> std::io::Result<Duration> {
        let stream = common::connect_initialized(&server.endpoint).await?;
        let (r, mut w) = stream.into_split();
        let mut lines = tokio::io::BufReader::with_capacity(256 * 1024, r).lines();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/new\",\"params\":{\"agent_alias\":\"echo\",\"chat_mode\":\"acp\"},\"id\":1}\n").await?;
        let created = lines.next_line().await?.unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&created).map_err(std::io::Error::other)?;
        let id = v["result"]["session_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let prompt = serde_json::json!({"jsonrpc":"2.0","method":"session/prompt","params":{"session_id": id, "prompt": PROMPT},"id":2});
        let start = Instant::now();
        w.write_all(format!("{prompt}\n").as_bytes()).await?;
        while let Some(l) = lines.next_line().await? {
            if l.ends_with("\"id\":2}") {
                break;
            }
        }
        Ok(start.elapsed())
    }

    fn peak_rss(child: &Child) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    }

    /// The turn through `zeroclaw acp`; its time (prompt sent to answer
    /// read) and the bridge's peak RSS. `stall`: how long the editor
    /// leaves stdout unread after prompting.
    fn bridge_turn(
        server: &Server,
        home: &std::path::Path,
        stall: Duration,
    ) -> Result<(Duration, u64), String> {
        let e = |e: std::io::Error| e.to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .args(["acp", "--agent", "echo"])
            .env("HOME", home)
            .env("ZEROCLAW_SOCKET", &server.endpoint)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env_remove("ZEROCLAW_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(e)?;
        let mut stdin = child.stdin.take().ok_or("stdin")?;
        let out = child.stdout.take().ok_or("stdout")?;
        let mut out = BufReader::with_capacity(256 * 1024, out);
        let mut line = String::new();
        let mut read_answer = |out: &mut BufReader<_>, id: &str| -> Result<String, String> {
            loop {
                line.clear();
                if out.read_line(&mut line).map_err(e)? == 0 {
                    return Err("the bridge closed stdout".into());
                }
                if line.starts_with(&format!("{{\"id\":{id},")) {
                    return Ok(line.clone());
                }
            }
        };
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}\n")
            .map_err(e)?;
        read_answer(&mut out, "1")?;
        let created = read_answer(&mut out, "2")?;
        let v: serde_json::Value = serde_json::from_str(&created).map_err(|x| x.to_string())?;
        let sid = v["result"]["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_owned();
        let prompt = serde_json::json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": sid, "prompt":[{"type":"text","text": PROMPT}]}});
        let start = Instant::now();
        stdin
            .write_all(format!("{prompt}\n").as_bytes())
            .map_err(e)?;
        if !stall.is_zero() {
            std::thread::sleep(stall);
        }
        let answer = read_answer(&mut out, "3")?;
        let took = start.elapsed();
        if !answer.contains("end_turn") {
            return Err(format!("the turn did not end: {answer}"));
        }
        let hwm = peak_rss(&child);
        drop(stdin);
        let mut rest = Vec::new();
        let _ = out.read_to_end(&mut rest);
        let _ = child.wait();
        Ok((took, hwm))
    }
}
