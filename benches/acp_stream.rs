//! Streaming cost of durable (ACP) turns against plain (Chat) turns, with
//! the real `zeroclaw` release binary and a reading client over the real
//! Unix socket (docs/reliability.md).
//!
//! - `acp` / `chat`: one turn of 10,000 one-character chunks
//!   (`::chunk 1` + `::repeat 10000 x`) on an ACP session (every chunk
//!   committed to SQLite before its notification, §9.3) and on a Chat
//!   session; chunks/s as received by the client, and the ACP/Chat ratio
//!   (target ≥ 0.5).
//! - `chat-1m`: one turn of 1,000,000 one-character chunks on a Chat
//!   session; notifications/s as received (target ≥ 200,000/s).
//! - `slow-reader`: the same 1,000,000-chunk turn read at a trickle; the
//!   daemon's VmRSS is sampled meanwhile and must stay bounded (target:
//!   growth under 64 MiB, while the turn's notifications total ~90 MB).
//!
//! Every chunk is checked (exact frame, count, final content); a protocol
//! error exits non-zero. Environment: `ZC_BENCH_ROUNDS` (rounds of the
//! 10,000-chunk pair, default 5), `ZC_BENCH_SLOW_SECS` (how long the slow
//! reader trickles, default 4).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("acp_stream: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::common::ndjson::{Conn, Res};
    use super::common::{self, cpu_secs, median, verdict, Server};

    /// The ACP/Chat throughput ratio to reach.
    const RATIO_TARGET: f64 = 0.5;
    /// Notifications per second to reach on the 1,000,000-chunk Chat turn.
    const CHAT_1M_TARGET: f64 = 200_000.0;
    /// The slow reader's bound on the daemon's RSS growth.
    const RSS_GROWTH_BOUND: u64 = 64 * 1024 * 1024;

    /// What one streamed turn looked like from the client.
    struct Streamed {
        chunks: u64,
        first_chunk: Duration,
        last_chunk: Duration,
        answered: Duration,
        stop_reason: String,
    }

    impl Streamed {
        /// Chunks per second, from the prompt to the answer.
        fn rate(&self) -> f64 {
            self.chunks as f64 / self.answered.as_secs_f64()
        }
    }

    /// A slow reader: bytes per read, the pause between reads, and a callback
    /// run between reads (returns `false` once the reader may go full speed).
    type Pace<'a> = (usize, Duration, &'a mut dyn FnMut(&Instant) -> bool);

    /// Sends `::chunk 1` + `::repeat n x` on `sid` and reads the turn to its
    /// answer, checking every frame; read slowly while `pace` says so.
    fn stream_turn(c: &mut Conn, sid: &str, n: u64, mut pace: Option<Pace<'_>>) -> Res<Streamed> {
        let chunk_line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","type":"agent_message_chunk","text":"x"}}}}"#
        );
        let chunk_line = chunk_line.as_bytes();
        let started = Instant::now();
        let id = c.send(
            "session/prompt",
            json!({"session_id": sid, "prompt": format!("::chunk 1\n::repeat {n} x")}),
        )?;
        let mut chunks = 0u64;
        let mut first = None;
        let mut last = Duration::ZERO;
        let mut completed = None;
        loop {
            while let Some(line) = c.buffered_line() {
                if line == chunk_line {
                    chunks += 1;
                    last = started.elapsed();
                    first.get_or_insert(last);
                    continue;
                }
                let v: Value = serde_json::from_slice(&line)
                    .map_err(|e| format!("bad frame ({e}): {}", String::from_utf8_lossy(&line)))?;
                if v["method"] == "session/update" {
                    match v["params"]["type"].as_str() {
                        Some("turn_complete") => completed = Some(v["params"].clone()),
                        Some("compaction_notice") => {}
                        _ => return Err(format!("unexpected update {v}")),
                    }
                    continue;
                }
                if v["id"] != json!(id) {
                    return Err(format!("unexpected frame {v}"));
                }
                let answered = started.elapsed();
                let r = v
                    .get("result")
                    .ok_or_else(|| format!("the prompt failed: {v}"))?;
                let tc = completed.ok_or("no turn_complete before the answer")?;
                let content = r["content"].as_str().unwrap_or_default();
                if tc["content"].as_str() != Some(content)
                    || content.len() as u64 != chunks
                    || content.bytes().any(|b| b != b'x')
                {
                    return Err(format!(
                        "{chunks} chunks received, but the turn reports {} bytes",
                        content.len()
                    ));
                }
                return Ok(Streamed {
                    chunks,
                    first_chunk: first.unwrap_or_default(),
                    last_chunk: last,
                    answered,
                    stop_reason: r["stop_reason"].as_str().unwrap_or_default().to_owned(),
                });
            }
            let slow = match &mut pace {
                Some((bytes, pause, tick)) => {
                    if tick(&started) {
                        std::thread::sleep(*pause);
                        Some(*bytes)
                    } else {
                        pace = None;
                        None
                    }
                }
                None => None,
            };
            if c.fill(slow.unwrap_or(1 << 20))? == 0 {
                return Err("end of stream during the turn".into());
            }
        }
    }

    fn env_num(var: &str, default: f64) -> f64 {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .unwrap_or(default)
    }

    pub fn main() -> i32 {
        common::exit_code("acp_stream", run())
    }

    fn run() -> Res<()> {
        let rounds = env_num("ZC_BENCH_ROUNDS", 5.0) as usize;
        let slow_secs = env_num("ZC_BENCH_SLOW_SECS", 4.0);
        println!("acp_stream: {} ({} rounds)", common::machine(), rounds);
        let server = Server::daemon().map_err(|e| format!("starting the daemon: {e}"))?;
        println!("daemon pid {}", server.pid);
        let mut c = Conn::open(&server.endpoint)?;

        // 10,000 chunks, ACP then Chat, alternating, a fresh session each time.
        let n = 10_000;
        let warm = c.new_session("echo", "acp")?;
        stream_turn(&mut c, &warm, 1000, None)?;
        let (mut acp, mut chat) = (Vec::new(), Vec::new());
        let mut cpu = [0.0f64; 2];
        for _ in 0..rounds {
            for (i, (mode, out)) in [("acp", &mut acp), ("chat", &mut chat)]
                .into_iter()
                .enumerate()
            {
                let sid = c.new_session("echo", mode)?;
                let cpu0 = cpu_secs(server.pid);
                let s = stream_turn(&mut c, &sid, n, None)?;
                cpu[i] += cpu_secs(server.pid) - cpu0;
                if s.chunks != n || s.stop_reason != "end_turn" {
                    return Err(format!("{mode}: {} chunks, {}", s.chunks, s.stop_reason));
                }
                out.push((s.rate(), s.first_chunk, s.last_chunk));
            }
        }
        println!("\n10,000 one-char chunks per turn, prompt sent -> answer read:");
        for (i, (mode, rows)) in [("acp", &acp), ("chat", &chat)].into_iter().enumerate() {
            let mut rates: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let first: f64 =
                rows.iter().map(|r| r.1.as_secs_f64()).sum::<f64>() / rows.len() as f64;
            let span: f64 =
                rows.iter().map(|r| (r.2 - r.1).as_secs_f64()).sum::<f64>() / rows.len() as f64;
            let min = rates.iter().cloned().fold(f64::MAX, f64::min);
            let max = rates.iter().cloned().fold(0.0, f64::max);
            println!(
                "  {mode:<5} median {:>9.0} chunks/s  (min {min:.0}, max {max:.0}; first chunk after {:.2} ms, first->last {:.1} ms; daemon CPU {:.1} ms per turn)",
                median(&mut rates),
                first * 1e3,
                span * 1e3,
                cpu[i] * 1e3 / rows.len() as f64
            );
        }
        let span_ratio = {
            let span = |rows: &[(f64, Duration, Duration)]| -> f64 {
                rows.iter().map(|r| (r.2 - r.1).as_secs_f64()).sum::<f64>()
            };
            span(&chat) / span(&acp)
        };
        let ratio = median(&mut acp.iter().map(|r| r.0).collect::<Vec<_>>())
            / median(&mut chat.iter().map(|r| r.0).collect::<Vec<_>>());
        println!(
            "  ACP/Chat ratio {ratio:.2} (target >= {RATIO_TARGET}): {}",
            verdict(ratio >= RATIO_TARGET)
        );
        println!(
            "  (first->last chunk only: {span_ratio:.2}; by daemon CPU time: {:.2})",
            cpu[1] / cpu[0].max(1e-9)
        );

        // 1,000,000 chunks on a Chat session, read as fast as possible.
        let sid = c.new_session("echo", "chat")?;
        let rss0 = server.rss_bytes().unwrap_or(0);
        let s = stream_turn(&mut c, &sid, 1_000_000, None)?;
        if s.chunks != 1_000_000 {
            return Err(format!("chat-1m: {} chunks", s.chunks));
        }
        println!(
            "\n1,000,000 one-char chunks (Chat): {:.0} notifications/s, {:.2} s (target >= {CHAT_1M_TARGET:.0}/s): {}",
            s.rate(),
            s.answered.as_secs_f64(),
            verdict(s.rate() >= CHAT_1M_TARGET)
        );
        println!(
            "  daemon VmRSS {:.1} MiB before, {:.1} MiB after",
            rss0 as f64 / 1048576.0,
            server.rss_bytes().unwrap_or(0) as f64 / 1048576.0
        );

        // The same turn, read at a trickle: the daemon's memory must not
        // absorb what the client has not read yet.
        let sid = c.new_session("echo", "chat")?;
        let base = server.rss_bytes().unwrap_or(0);
        let mut peak = base;
        let mut samples = 0u32;
        let mut last_sample = Instant::now();
        let slow_for = Duration::from_secs_f64(slow_secs);
        let mut read_bytes_slow = 0usize;
        let per_read = 16 * 1024;
        // The peak of each second, to tell a plateau from steady growth.
        let mut per_second: Vec<u64> = Vec::new();
        let mut tick = |started: &Instant| -> bool {
            if last_sample.elapsed() >= Duration::from_millis(50) {
                if let Ok(r) = server.rss_bytes() {
                    peak = peak.max(r);
                    samples += 1;
                    let sec = started.elapsed().as_secs() as usize;
                    if per_second.len() <= sec {
                        per_second.resize(sec + 1, 0);
                    }
                    per_second[sec] = per_second[sec].max(r);
                }
                last_sample = Instant::now();
            }
            read_bytes_slow += per_read;
            started.elapsed() < slow_for
        };
        let s = stream_turn(
            &mut c,
            &sid,
            1_000_000,
            Some((per_read, Duration::from_millis(5), &mut tick)),
        )?;
        if s.chunks != 1_000_000 {
            return Err(format!("slow reader: {} chunks", s.chunks));
        }
        let growth = peak.saturating_sub(base);
        println!(
            "\nslow reader (16 KiB every 5 ms for {slow_secs} s, ~{:.1} MB read slowly, then full speed):",
            read_bytes_slow as f64 / 1e6
        );
        println!(
            "  daemon VmRSS {:.1} MiB at the prompt, peak {:.1} MiB over {samples} samples: growth {:.1} MiB (bound {} MiB): {}",
            base as f64 / 1048576.0,
            peak as f64 / 1048576.0,
            growth as f64 / 1048576.0,
            RSS_GROWTH_BOUND / 1048576,
            verdict(growth < RSS_GROWTH_BOUND)
        );
        let timeline: Vec<String> = per_second
            .iter()
            .map(|b| format!("{:.1}", *b as f64 / 1048576.0))
            .collect();
        println!("  peak VmRSS of each second (MiB): {}", timeline.join(" "));
        println!("  the turn took {:.2} s", s.answered.as_secs_f64());
        Ok(())
    }
}
