//! The e2e_load load generator: connections that keep a number of `status`
//! requests in flight, check every response id, and pool rounds into one outcome.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{self, Server};

/// How long the end of a scenario waits for outstanding responses.
const DRAIN: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub conns: usize,
    pub depth: usize,
}

pub const SCENARIOS: [Scenario; 3] = [
    Scenario {
        name: "status 1x1",
        conns: 1,
        depth: 1,
    },
    Scenario {
        name: "status 1x64",
        conns: 1,
        depth: 64,
    },
    Scenario {
        name: "status 16x16",
        conns: 16,
        depth: 16,
    },
];

/// What one connection saw.
#[derive(Debug, Default)]
struct ConnResult {
    /// Latencies (ns) of requests sent inside the measured window.
    latencies: Vec<u64>,
    /// Responses received inside the measured window.
    responses: u64,
    /// Bytes and responses received in all (warm-up and drain included).
    bytes_total: u64,
    responses_total: u64,
    errors: u64,
    first_error: Option<String>,
}

impl ConnResult {
    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what);
        }
    }
}

#[derive(Deserialize)]
struct Response<'a> {
    id: Option<u64>,
    result: Option<IgnoredAny>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The id of a success response written the way both servers write one,
/// `{"jsonrpc":"2.0","result":…,"id":<digits>}`, found without parsing
/// the result, so the generator's cost does not grow with the result's
/// size. Anything else takes the full parse.
fn fast_success_id(line: &[u8]) -> Option<u64> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"result\":";
    const ID: &[u8] = b",\"id\":";
    let body = line.strip_prefix(HEAD)?.strip_suffix(b"}")?;
    let at = body.windows(ID.len()).rposition(|w| w == ID)?;
    let digits = &body[at + ID.len()..];
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Drives one connection: keeps `depth` requests outstanding until
/// `end`, then drains. Latencies count for requests sent at or after `start`.
async fn drive(endpoint: PathBuf, depth: usize, start: Instant, end: Instant) -> ConnResult {
    let mut res = ConnResult::default();
    let stream = match common::connect_initialized(&endpoint).await {
        Ok(s) => s,
        Err(e) => {
            res.error(format!("connect: {e}"));
            return res;
        }
    };
    let (mut rd, mut wr) = stream.into_split();
    let mut pending: HashMap<u64, Instant> = HashMap::with_capacity(depth * 2);
    let mut next_id: u64 = 1;
    let mut wbuf: Vec<u8> = Vec::with_capacity(depth * 64);
    let mut rbuf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        if Instant::now() < end {
            while pending.len() < depth {
                wbuf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":");
                let _ = write!(wbuf, "{next_id}");
                wbuf.extend_from_slice(b"}\n");
                pending.insert(next_id, Instant::now());
                next_id += 1;
            }
        }
        if !wbuf.is_empty() {
            if let Err(e) = wr.write_all(&wbuf).await {
                res.error(format!("write: {e}"));
                return res;
            }
            wbuf.clear();
        }
        if pending.is_empty() {
            return res;
        }
        let read = tokio::time::timeout_at((end + DRAIN).into(), rd.read_buf(&mut rbuf)).await;
        match read {
            Ok(Ok(0)) => {
                res.error(format!("server closed with {} pending", pending.len()));
                return res;
            }
            Ok(Ok(n)) => res.bytes_total += n as u64,
            Ok(Err(e)) => {
                res.error(format!("read: {e}"));
                return res;
            }
            Err(_) => {
                let lost = pending.len();
                res.error(format!("{lost} requests unanswered after the drain"));
                res.errors += lost as u64 - 1;
                return res;
            }
        }
        let now = Instant::now();
        let mut consumed = 0;
        while let Some(nl) = rbuf[consumed..].iter().position(|&b| b == b'\n') {
            let line = &rbuf[consumed..consumed + nl];
            consumed += nl + 1;
            let id = match fast_success_id(line) {
                Some(id) => Ok(id),
                None => match serde_json::from_slice::<Response<'_>>(line) {
                    Ok(Response {
                        id: Some(id),
                        result: Some(_),
                        error: None,
                    }) => Ok(id),
                    Ok(Response { id, error, .. }) => {
                        if let Some(id) = id {
                            pending.remove(&id);
                        }
                        Err(format!(
                            "not a success (id {id:?}, error {}): {}",
                            error.map(RawValue::get).unwrap_or("-"),
                            String::from_utf8_lossy(line)
                        ))
                    }
                    Err(e) => Err(format!(
                        "unparsable response ({e}): {}",
                        String::from_utf8_lossy(line)
                    )),
                },
            };
            let id = match id {
                Ok(id) => id,
                Err(e) => {
                    res.error(e);
                    continue;
                }
            };
            res.responses_total += 1;
            match pending.remove(&id) {
                Some(sent) => {
                    if sent >= start && sent < end {
                        res.latencies.push((now - sent).as_nanos() as u64);
                    }
                    if now >= start && now <= end {
                        res.responses += 1;
                    }
                }
                None => res.error(format!("unknown or duplicate id {id}")),
            }
        }
        rbuf.drain(..consumed);
    }
}

/// CPU seconds (user + system) a process has used, from `/proc/<pid>/stat`.
fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the `(comm)`, which may itself hold spaces.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of proc_pid_stat(5); `rest` starts at field 3.
    let ticks: u64 = f
        .get(11..13)
        .map(|v| v.iter().filter_map(|x| x.parse::<u64>().ok()).sum())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks as f64 / hz
}

/// What one round of one scenario against one server measured.
#[derive(Debug, Default)]
pub struct Round {
    latencies: Vec<u64>,
    responses: u64,
    secs: f64,
    server_cpu: f64,
    client_cpu: f64,
    bytes_total: u64,
    responses_total: u64,
    errors: u64,
}

/// One scenario's outcome against one server, over all rounds.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub rps: f64,
    /// The slowest and fastest round.
    pub rps_min: f64,
    pub rps_max: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Server CPU per response, in µs (user + system, all its threads).
    pub server_cpu_us: f64,
    /// The server's CPU use, in cores.
    pub server_cores: f64,
    /// This process's (the load generator's) CPU use, in cores.
    pub client_cores: f64,
    /// Mean response frame size, `\n` included.
    pub bytes_per_response: f64,
    pub samples: usize,
    pub errors: u64,
}

/// Nearest-rank percentile of sorted nanoseconds, in µs.
fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

pub fn run_round(
    rt: &tokio::runtime::Runtime,
    server: &Server,
    sc: Scenario,
    warmup: Duration,
    measure: Duration,
) -> Round {
    let t0 = Instant::now();
    let start = t0 + warmup;
    let end = start + measure;
    let me = std::process::id();
    let (results, server_cpu, client_cpu) = rt.block_on(async {
        let tasks: Vec<_> = (0..sc.conns)
            .map(|_| tokio::spawn(drive(server.endpoint.clone(), sc.depth, start, end)))
            .collect();
        tokio::time::sleep_until(start.into()).await;
        let (s0, c0) = (cpu_secs(server.pid), cpu_secs(me));
        tokio::time::sleep_until(end.into()).await;
        let (s1, c1) = (cpu_secs(server.pid), cpu_secs(me));
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| {
                let mut r = ConnResult::default();
                r.error(format!("task failed: {e}"));
                r
            }));
        }
        (out, s1 - s0, c1 - c0)
    });
    let mut round = Round {
        secs: measure.as_secs_f64(),
        server_cpu,
        client_cpu,
        ..Round::default()
    };
    for r in results {
        round.latencies.extend_from_slice(&r.latencies);
        round.responses += r.responses;
        round.errors += r.errors;
        round.bytes_total += r.bytes_total;
        round.responses_total += r.responses_total;
        if let Some(e) = &r.first_error {
            eprintln!("  {} {}: error: {e}", server.name, sc.name);
        }
    }
    round
}

/// Pools the rounds: throughput over the total time, percentiles over all samples.
pub fn summarize(rounds: Vec<Round>) -> Outcome {
    let secs: f64 = rounds.iter().map(|r| r.secs).sum();
    let responses: u64 = rounds.iter().map(|r| r.responses).sum();
    let server_cpu: f64 = rounds.iter().map(|r| r.server_cpu).sum();
    let client_cpu: f64 = rounds.iter().map(|r| r.client_cpu).sum();
    let bytes: u64 = rounds.iter().map(|r| r.bytes_total).sum();
    let all: u64 = rounds.iter().map(|r| r.responses_total).sum();
    let errors: u64 = rounds.iter().map(|r| r.errors).sum();
    let per_round = rounds.iter().map(|r| r.responses as f64 / r.secs);
    let rps_min = per_round.clone().fold(f64::INFINITY, f64::min);
    let rps_max = per_round.fold(0.0, f64::max);
    let mut lat: Vec<u64> = rounds.into_iter().flat_map(|r| r.latencies).collect();
    lat.sort_unstable();
    Outcome {
        rps: responses as f64 / secs,
        rps_min,
        rps_max,
        p50_us: percentile(&lat, 50.0),
        p99_us: percentile(&lat, 99.0),
        server_cpu_us: server_cpu * 1e6 / responses.max(1) as f64,
        server_cores: server_cpu / secs,
        client_cores: client_cpu / secs,
        bytes_per_response: bytes as f64 / all.max(1) as f64,
        samples: lat.len(),
        errors,
    }
}
