//! A soak of the real `zeroclaw` release binary: many short sessions, one
//! after another, through one daemon, to see whether anything a closed
//! session leaves behind accumulates.
//!
//! Several concurrent clients (each on its own connection and thread) loop
//! `session/new` (the echo agent, the clients alternating between the chat
//! modes listed in `ZC_SOAK_MODES`) → `session/prompt` (a short prompt, read
//! until its answer) → `session/close`, until `ZC_SOAK_SESSIONS` sessions
//! have been served in all. The daemon's resident memory (`VmRSS`), open
//! file descriptors (`/proc/<pid>/fd`) and threads (`Threads`) are read at
//! the start, after the warm-up (the first `ZC_SOAK_WARMUP` sessions: caches
//! and pools fill up once), at every further tenth of the run, and at the
//! end after the clients have gone, with the rate in sessions per second.
//!
//! The verdict line compares RSS after the warm-up with the end: a daemon
//! that forgets closed sessions stays flat within a few MB. The bench fails
//! only when a request fails or the daemon dies, never on timing or memory.
//!
//! Environment: `ZC_SOAK_SESSIONS` (default 100000), `ZC_SOAK_WARMUP`
//! (default 5000, at most a tenth of the sessions), `ZC_SOAK_CLIENTS`
//! (default 4), `ZC_SOAK_MODES` (default `chat,acp`), `ZC_SOAK_BIN` (another
//! daemon binary, e.g. a build of the commit before a change).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("soak: Unix only (reads /proc)");
}

#[cfg(unix)]
mod imp {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::common::ndjson::{Conn, Res};
    use super::common::{self, Server};

    /// How far RSS may move between the warm-up and the end and still be "flat".
    const FLAT_BYTES: u64 = 3 * 1024 * 1024;
    /// How long the daemon is left alone before the first and last reading.
    const SETTLE: Duration = Duration::from_millis(500);

    fn env_usize(var: &str, default: usize) -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(default)
    }

    /// One reading of the daemon's process.
    struct Sample {
        label: String,
        sessions: usize,
        at: Duration,
        rss: u64,
        /// The anonymous part of `rss` (heap), the rest being files and shared memory.
        anon: u64,
        fds: usize,
        threads: usize,
    }

    fn sample(pid: u32, label: String, sessions: usize, at: Duration) -> Res<Sample> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        };
        let rss = field("VmRSS:").ok_or("no VmRSS line")? * 1024;
        let anon = field("RssAnon:").unwrap_or(0) * 1024;
        let threads = field("Threads:").ok_or("no Threads line")? as usize;
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map_err(|e| format!("/proc/{pid}/fd: {e}"))?
            .count();
        Ok(Sample {
            label,
            sessions,
            at,
            rss,
            anon,
            fds,
            threads,
        })
    }

    fn mib(b: u64) -> f64 {
        b as f64 / 1048576.0
    }

    pub fn main() -> i32 {
        common::exit_code("soak", run())
    }

    fn run() -> Result<(), String> {
        let total = env_usize("ZC_SOAK_SESSIONS", 100_000);
        let warmup = env_usize("ZC_SOAK_WARMUP", 5_000).min(total / 10).max(1);
        let clients = env_usize("ZC_SOAK_CLIENTS", 4);
        let modes: Vec<String> = std::env::var("ZC_SOAK_MODES")
            .unwrap_or_else(|_| "chat,acp".into())
            .split(',')
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .collect();
        if modes.is_empty() {
            return Err("ZC_SOAK_MODES names no chat mode".into());
        }
        let server = match std::env::var_os("ZC_SOAK_BIN") {
            Some(bin) => Server::daemon_from("soak", &PathBuf::from(bin)),
            None => Server::daemon(),
        }
        .map_err(|e| format!("daemon: {e}"))?;
        println!("soak: {}", common::machine());
        println!(
            "soak: {total} sessions, {clients} clients, modes {}, warm-up {warmup}, daemon pid {}",
            modes.join(","),
            server.pid
        );

        std::thread::sleep(SETTLE);
        let started = Instant::now();
        let mut samples = vec![sample(server.pid, "start".into(), 0, Duration::ZERO)?];
        print_sample(samples.last().unwrap(), None);

        let next = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..clients)
            .map(|i| {
                let endpoint = server.endpoint.clone();
                let mode = modes[i % modes.len()].clone();
                let (next, done, failed) = (next.clone(), done.clone(), failed.clone());
                std::thread::spawn(move || -> Res<usize> {
                    let mut conn = Conn::open(&endpoint)?;
                    let mut mine = 0;
                    while !failed.load(Ordering::Relaxed)
                        && next.fetch_add(1, Ordering::Relaxed) < total
                    {
                        if let Err(e) = one_session(&mut conn, &mode) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(format!("client {i} ({mode}): {e}"));
                        }
                        mine += 1;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(mine)
                })
            })
            .collect();

        // Readings at the warm-up and then at every tenth of the rest.
        let mut marks: Vec<usize> = vec![warmup];
        marks.extend((1..=10).map(|k| warmup + (total - warmup) * k / 10));
        marks.dedup();
        let mut last = (Duration::ZERO, 0usize);
        for (k, &mark) in marks.iter().enumerate() {
            loop {
                let n = done.load(Ordering::Relaxed);
                if n >= mark
                    || failed.load(Ordering::Relaxed)
                    || workers.iter().all(|w| w.is_finished())
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if failed.load(Ordering::Relaxed) {
                break;
            }
            let (at, n) = (started.elapsed(), done.load(Ordering::Relaxed));
            let label = if k == 0 {
                "warm-up".to_owned()
            } else {
                format!("{}%", k * 10)
            };
            let s = sample(server.pid, label, n, at)?;
            let rate = (n - last.1) as f64 / (at - last.0).as_secs_f64().max(1e-9);
            print_sample(&s, Some(rate));
            samples.push(s);
            last = (at, n);
        }
        let mut served = 0;
        for w in workers {
            served += w.join().map_err(|_| "a client panicked".to_owned())??;
        }
        let elapsed = started.elapsed();
        std::thread::sleep(SETTLE);
        let end = sample(server.pid, "end (idle)".into(), served, started.elapsed())?;
        print_sample(&end, None);

        let warm = samples
            .iter()
            .find(|s| s.label == "warm-up")
            .ok_or("no warm-up reading")?;
        let first = &samples[0];
        let grew = end.rss as i64 - warm.rss as i64;
        let per = grew as f64 / (served - warm.sessions).max(1) as f64;
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "soak: {served} sessions in {:.1} s ({:.0} sessions/s), load average {}",
            elapsed.as_secs_f64(),
            served as f64 / elapsed.as_secs_f64(),
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!(
            "soak: verdict: RSS {:.1} MiB at start, {:.1} MiB after warm-up, {:.1} MiB at the end: \
             {:+.2} MiB over {} sessions ({:+.1} bytes each); fds {} -> {}, threads {} -> {}: {}",
            mib(first.rss),
            mib(warm.rss),
            mib(end.rss),
            grew as f64 / 1048576.0,
            served - warm.sessions,
            per,
            first.fds,
            end.fds,
            first.threads,
            end.threads,
            if grew.unsigned_abs() <= FLAT_BYTES {
                "flat (within 3 MiB)"
            } else {
                "GROWING"
            }
        );
        let mut server = server;
        if !server.is_running() {
            return Err("the daemon exited during the soak".into());
        }
        Ok(())
    }

    fn print_sample(s: &Sample, rate: Option<f64>) {
        println!(
            "{:>11} {:>7} sessions {:>7.1} s  RSS {:>6.1} MiB (anon {:>6.1})  fds {:>4}  threads {:>3}{}",
            s.label,
            s.sessions,
            s.at.as_secs_f64(),
            mib(s.rss),
            mib(s.anon),
            s.fds,
            s.threads,
            rate.map(|r| format!("  {r:.0} sessions/s")).unwrap_or_default()
        );
    }

    /// `session/new` → `session/prompt` (read to its answer) → `session/close`.
    fn one_session(conn: &mut Conn, mode: &str) -> Res<()> {
        let created = call(
            conn,
            "session/new",
            json!({"agent_alias": "echo", "chat_mode": mode}),
        )?;
        let session = created["session_id"]
            .as_str()
            .ok_or_else(|| format!("session/new: no session id in {created}"))?
            .to_owned();
        call(
            conn,
            "session/prompt",
            json!({"session_id": session, "prompt": "hello soak"}),
        )?;
        let r = call(conn, "session/close", json!({"session_id": session}))?;
        if r["closed"] != json!(true) {
            return Err(format!("session/close: {r}"));
        }
        Ok(())
    }

    /// The result of one request; notifications before its answer (a turn's
    /// `session/update`s) are read and dropped.
    fn call(conn: &mut Conn, method: &str, params: Value) -> Res<Value> {
        let id = conn.send(method, params)?;
        loop {
            let line = conn.line()?;
            let mut v: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
            if v.get("id") == Some(&json!(id)) {
                return match v.get_mut("result") {
                    Some(r) => Ok(r.take()),
                    None => Err(format!("{method}: {v}")),
                };
            }
        }
    }
}
