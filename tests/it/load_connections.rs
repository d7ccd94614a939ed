//! Load and slow-consumer tests against the real binary (§3.7, §4).
//!
//! `pipelined_connections_lose_nothing`: 256 connections (the connection
//! limit) each keep a window of requests in flight for a fixed time —
//! `status`, `session/prompt` on the echo agent, `config/get` — and check
//! every frame they get: every request answered exactly once, with the
//! right result; every `session/update` for the connection's own session
//! and turn, in order, `turn_complete` before the prompt's answer. Lost,
//! duplicated and mismatched responses must all be 0. Throughput and
//! latency percentiles are printed (not asserted).
//!
//! The daemon allows 64 live sessions (§4), so the 256 connections share 64
//! Chat sessions, four each: prompts also queue behind other connections'
//! turns, and each connection must still receive exactly its own turns'
//! updates (the prompting connection is the turn's channel, §8.4).
//!
//! `a_slow_consumer_costs_bounded_memory`: one client streams a huge turn
//! (`::chunk 1` + `::repeat 2000000 x`, two million notifications) and reads
//! nothing for a while. The daemon's VmRSS must stay within
//! [`RSS_BOUND_KIB`] of its level before the turn, another client's
//! `status` round trips must keep succeeding, and the stalled client must
//! then get an intact, ordered stream up to its answer. Unloaded and loaded
//! p99 round trips are printed, with whether the loaded one stays within 2×
//! (informative only: a timing assertion would flake on a shared machine).
//!
//! Durations: `ZC_LOAD_SECS` (default 3) for the load phase,
//! `ZC_STALL_SECS` (default 5, at most 25: the daemon closes a connection
//! whose output makes no progress for 30 s) for the stall. Figures are for
//! the build under test; `cargo test --release --test it --
//! load_connections:: --nocapture` measures the optimized daemon.

// Unix only: raw UnixStream connections and the daemon's memory from /proc.

use crate::common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{json, Value};

/// Connections of the load test: the daemon's limit.
const CONNECTIONS: usize = 256;
/// Live sessions the daemon allows; the connections share them.
const SESSIONS: usize = 64;
/// Requests each connection keeps in flight.
const WINDOW: usize = 6;
/// How long a connection waits for the rest of its answers after the load phase.
const DRAIN: Duration = Duration::from_secs(30);
/// How much the daemon's RSS may grow while a client stalls.
const RSS_BOUND_KIB: u64 = 100 * 1024;
/// Notifications of the slow consumer's turn.
const HUGE: usize = 2_000_000;

/// The two tests load the machine: they run one at a time, so that each
/// one's figures are its own.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serialized() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn secs_from_env(name: &str, default: u64, max: u64) -> Duration {
    let s = std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Duration::from_secs(s.clamp(1, max))
}

/// Prints past the test harness's capture, so figures show in every run.
fn report(text: &str) {
    let _ = writeln!(io::stderr(), "{text}");
}

/// A blocking NDJSON connection with a buffered reader.
struct Conn {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    line: Vec<u8>,
}

impl Conn {
    fn open(socket: &Path) -> Self {
        let s = UnixStream::connect(socket).expect("connect");
        let writer = s.try_clone().expect("clone");
        let mut c = Self {
            reader: BufReader::with_capacity(64 * 1024, s),
            writer,
            line: Vec::new(),
        };
        let r = c.call(
            json!({"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}),
        );
        assert!(r.get("result").is_some(), "initialize: {r}");
        c
    }

    fn send(&mut self, v: &Value) {
        let mut b = serde_json::to_vec(v).unwrap();
        b.push(b'\n');
        self.writer.write_all(&b).expect("write");
    }

    /// The next frame, or `None` after `timeout` or at end of stream. A
    /// partial line is kept for the next call.
    fn recv(&mut self, timeout: Duration) -> Option<Value> {
        self.reader
            .get_ref()
            .set_read_timeout(Some(timeout))
            .unwrap();
        match self.reader.read_until(b'\n', &mut self.line) {
            Ok(_) if self.line.ends_with(b"\n") => {
                let v = serde_json::from_slice(&self.line).unwrap_or_else(|e| {
                    panic!(
                        "frame is not JSON ({e}): {}",
                        String::from_utf8_lossy(&self.line)
                    )
                });
                self.line.clear();
                Some(v)
            }
            // End of stream (with or without a partial line).
            Ok(_) => None,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(e) => panic!("read: {e}"),
        }
    }

    /// Sends `req` and returns the next frame, which must come within 10 s.
    fn call(&mut self, req: Value) -> Value {
        self.send(&req);
        self.recv(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no answer to {req}"))
    }
}

/// Percentile `p` (0..=100) of sorted `v`.
fn pct(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i.min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

// ---------------------------------------------------------------------------
// 256 pipelining connections

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Status,
    Prompt,
    ConfigGet,
}

const KINDS: [Kind; 3] = [Kind::Status, Kind::Prompt, Kind::ConfigGet];

#[derive(Default)]
struct Tally {
    sent: u64,
    answered: u64,
    lost: u64,
    duplicated: u64,
    mismatched: u64,
    updates: u64,
    latencies: HashMap<&'static str, Vec<Duration>>,
    issues: Vec<String>,
}

impl Tally {
    fn mismatch(&mut self, what: String) {
        self.mismatched += 1;
        if self.issues.len() < 5 {
            self.issues.push(what);
        }
    }

    fn merge(&mut self, o: Tally) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.mismatched += o.mismatched;
        self.updates += o.updates;
        for (k, v) in o.latencies {
            self.latencies.entry(k).or_default().extend(v);
        }
        for i in o.issues {
            if self.issues.len() < 20 {
                self.issues.push(i);
            }
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Status => "status",
        Kind::Prompt => "session/prompt",
        Kind::ConfigGet => "config/get",
    }
}

/// One connection's load: pipelined requests until `until`, then a drain.
fn load_one(
    mut c: Conn,
    index: usize,
    session: String,
    daemon_pid: u64,
    start: Arc<Barrier>,
    until: Duration,
) -> Tally {
    let mut t = Tally::default();
    let mut pending: HashMap<u64, (Kind, Instant, Option<String>)> = HashMap::new();
    let mut answered: HashSet<u64> = HashSet::new();
    // My prompts whose turn_complete has not arrived, in send order.
    let mut turns: VecDeque<(u64, String)> = VecDeque::new();
    let mut completed: HashSet<u64> = HashSet::new();
    let mut streamed = String::new();
    let mut next_id: u64 = 1;
    start.wait();
    let began = Instant::now();
    let mut drain_deadline = None;
    loop {
        let loading = began.elapsed() < until;
        while loading && pending.len() < WINDOW {
            let id = next_id;
            next_id += 1;
            let kind = KINDS[(id as usize + index) % KINDS.len()];
            let (method, params, text) = match kind {
                Kind::Status => ("status", json!({}), None),
                Kind::ConfigGet => (
                    "config/get",
                    json!({"prop": "agents.echo.chunk_chars"}),
                    None,
                ),
                Kind::Prompt => {
                    // Longer than one 16-character chunk: ordering shows.
                    let text = format!("conn {index} request {id} says hello");
                    turns.push_back((id, text.clone()));
                    (
                        "session/prompt",
                        json!({"session_id": session, "prompt": text}),
                        Some(text),
                    )
                }
            };
            c.send(&json!({"jsonrpc":"2.0","method":method,"params":params,"id":id}));
            pending.insert(id, (kind, Instant::now(), text));
            t.sent += 1;
        }
        if !loading {
            if pending.is_empty() {
                break;
            }
            let d = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN);
            if Instant::now() >= d {
                break;
            }
        }
        let Some(v) = c.recv(Duration::from_secs(10)) else {
            if loading {
                t.mismatch(format!("conn {index}: nothing for 10 s during the load"));
            }
            if !loading || pending.is_empty() {
                break;
            }
            continue;
        };
        if let Some(method) = v.get("method") {
            t.updates += 1;
            let p = &v["params"];
            if method != "session/update" || p["sessionId"] != session.as_str() {
                t.mismatch(format!("conn {index}: foreign frame {v}"));
                continue;
            }
            match p["type"].as_str() {
                Some("agent_message_chunk") => streamed.push_str(p["text"].as_str().unwrap_or("")),
                Some("turn_complete") => match turns.pop_front() {
                    Some((id, text)) => {
                        if p["content"] != text.as_str() || streamed != text {
                            t.mismatch(format!(
                                "conn {index}: turn of {id} streamed {streamed:?}, completed {}",
                                p["content"]
                            ));
                        }
                        completed.insert(id);
                        streamed.clear();
                    }
                    None => t.mismatch(format!("conn {index}: turn_complete of no turn: {v}")),
                },
                // Auto-compaction (context_max_messages = 50) before one of my turns.
                Some("compaction_notice") => {}
                _ => t.mismatch(format!("conn {index}: unexpected update {v}")),
            }
            continue;
        }
        let Some(id) = v["id"].as_u64() else {
            t.mismatch(format!("conn {index}: response with a foreign id: {v}"));
            continue;
        };
        let Some((kind, sent, text)) = pending.remove(&id) else {
            if answered.contains(&id) {
                t.duplicated += 1;
            } else {
                t.mismatch(format!("conn {index}: answer to nothing sent: {v}"));
            }
            continue;
        };
        answered.insert(id);
        t.answered += 1;
        t.latencies
            .entry(kind_name(kind))
            .or_default()
            .push(sent.elapsed());
        let r = &v["result"];
        let ok = match kind {
            Kind::Status => {
                r["server_pid"] == daemon_pid
                    && r["connections"]
                        .as_u64()
                        .is_some_and(|n| (1..=CONNECTIONS as u64).contains(&n))
            }
            Kind::ConfigGet => *r == json!({"prop": "agents.echo.chunk_chars", "value": 16}),
            Kind::Prompt => {
                let text = text.unwrap_or_default();
                completed.remove(&id)
                    && r["session_id"] == session.as_str()
                    && r["stop_reason"] == "end_turn"
                    && r["content"] == text.as_str()
            }
        };
        if !ok {
            t.mismatch(format!("conn {index}: bad answer to {kind:?} {id}: {v}"));
        }
    }
    t.lost = pending.len() as u64;
    if !pending.is_empty() {
        t.issues.push(format!(
            "conn {index}: {} requests never answered",
            pending.len()
        ));
    }
    t
}

#[test]
fn pipelined_connections_lose_nothing() {
    let _one = serialized();
    let until = secs_from_env("ZC_LOAD_SECS", 3, 600);
    let d = Daemon::start();
    let socket = d.socket.clone();
    // Connection 0 creates the shared sessions, then joins the load.
    let mut first = Conn::open(&socket);
    for s in 0..SESSIONS {
        let r = first.call(json!({"jsonrpc":"2.0","method":"session/new",
            "params":{"agent_alias":"echo","session_id":format!("load-{s}"),"chat_mode":"chat"},"id":1}));
        assert!(r.get("result").is_some(), "session/new: {r}");
    }
    let start = Arc::new(Barrier::new(CONNECTIONS + 1));
    let mut threads = Vec::with_capacity(CONNECTIONS);
    let mut first = Some(first);
    for i in 0..CONNECTIONS {
        let c = first.take().unwrap_or_else(|| Conn::open(&socket));
        let start = start.clone();
        let pid = u64::from(d.pid);
        let session = format!("load-{}", i % SESSIONS);
        threads.push(
            std::thread::Builder::new()
                .name(format!("load-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || load_one(c, i, session, pid, start, until))
                .expect("spawning a load thread"),
        );
    }
    let cpu_before = d.cpu_time();
    start.wait();
    let began = Instant::now();
    let mut total = Tally::default();
    for t in threads {
        total.merge(t.join().expect("a load thread panicked"));
    }
    let elapsed = began.elapsed();
    let cpu = d.cpu_time().zip(cpu_before).map(|(a, b)| a - b);

    let mut all: Vec<Duration> = Vec::new();
    let mut lines = vec![format!(
        "load: {CONNECTIONS} connections x window {WINDOW} for {until:?} ({SESSIONS} shared Chat sessions): \
         sent {}, answered {}, lost {}, duplicated {}, mismatched {}, updates {}; \
         {:.0} answers/s over {:.2} s; daemon CPU {}",
        total.sent,
        total.answered,
        total.lost,
        total.duplicated,
        total.mismatched,
        total.updates,
        total.answered as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        cpu.map(|c| format!("{:.2} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into()),
    )];
    let mut kinds: Vec<_> = total.latencies.iter_mut().collect();
    kinds.sort_by_key(|(k, _)| **k);
    for (k, v) in kinds {
        v.sort_unstable();
        all.extend_from_slice(v);
        lines.push(format!(
            "  {k:<15} n={:<7} p50 {}  p99 {}  max {}",
            v.len(),
            ms(pct(v, 50.0)),
            ms(pct(v, 99.0)),
            ms(*v.last().unwrap_or(&Duration::ZERO))
        ));
    }
    all.sort_unstable();
    lines.push(format!(
        "  {:<15} n={:<7} p50 {}  p99 {}",
        "all",
        all.len(),
        ms(pct(&all, 50.0)),
        ms(pct(&all, 99.0))
    ));
    report(&lines.join("\n"));
    assert!(
        total.lost == 0 && total.duplicated == 0 && total.mismatched == 0,
        "lost {}, duplicated {}, mismatched {}: {:#?}",
        total.lost,
        total.duplicated,
        total.mismatched,
        total.issues
    );
    assert!(total.answered > 0);

    // The daemon is still whole: a new connection is served once the others are gone.
    let mut after = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while after.is_none() && Instant::now() < deadline {
        let mut c = Conn::open(&socket);
        let r = c.call(json!({"jsonrpc":"2.0","method":"status","id":"after"}));
        if r["result"]["connections"] == 1 {
            after = Some(r);
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert!(
        after.is_some(),
        "the daemon never got back to one connection"
    );
}

// ---------------------------------------------------------------------------
// A slow consumer

/// `n` sequential `status` round trips; every one must succeed.
fn round_trips(c: &mut Conn, n: usize, mut between: impl FnMut()) -> Vec<Duration> {
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let r = c.call(json!({"jsonrpc":"2.0","method":"status","id":format!("rt-{i}")}));
        v.push(t.elapsed());
        assert!(
            r["id"] == format!("rt-{i}") && r.get("result").is_some(),
            "status round trip {i} failed: {r}"
        );
        between();
    }
    v.sort_unstable();
    v
}

#[test]
fn a_slow_consumer_costs_bounded_memory() {
    let _one = serialized();
    let stall = secs_from_env("ZC_STALL_SECS", 5, 25);
    let d = Daemon::start();
    let mut other = Conn::open(&d.socket);
    // Warm up, then the unloaded figure and the memory baseline.
    round_trips(&mut other, 50, || {});
    let unloaded = round_trips(&mut other, 200, || {});
    let base = d.rss_kib().expect("VmRSS");

    let mut slow = Conn::open(&d.socket);
    let r = slow.call(json!({"jsonrpc":"2.0","method":"session/new",
        "params":{"agent_alias":"echo","session_id":"slow","chat_mode":"chat"},"id":"new"}));
    assert!(r.get("result").is_some(), "session/new: {r}");
    slow.send(&json!({"jsonrpc":"2.0","method":"session/prompt",
        "params":{"session_id":"slow","prompt":format!("::chunk 1\n::repeat {HUGE} x")},"id":"big"}));

    // The slow client reads nothing; the other keeps asking; RSS is sampled.
    let mut peak = base;
    let cpu_before = d.cpu_time();
    let stalled = Instant::now();
    let mut loaded = Vec::new();
    while stalled.elapsed() < stall {
        loaded.extend(round_trips(&mut other, 10, || {
            peak = peak.max(d.rss_kib().unwrap_or(0));
        }));
    }
    loaded.sort_unstable();
    let rss_stalled = d.rss_kib().unwrap_or(0);
    let stall_cpu = d.cpu_time().zip(cpu_before).map(|(a, b)| a - b);
    // One more second of stall with no other traffic: a producer blocked on
    // the full queue must not spin.
    let quiet_before = d.cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let quiet_cpu = d.cpu_time().zip(quiet_before).map(|(a, b)| a - b);

    // The slow client's stream is intact so far; then the turn is cancelled
    // from the other connection, and the slow client drains up to its answer.
    let mut chunks: usize = 0;
    let mut cancelled = false;
    let mut outcome = None;
    let drained = Instant::now();
    while outcome.is_none() {
        let v = slow
            .recv(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("the slow client's stream ended after {chunks} chunks"));
        if v.get("method").is_some() {
            let p = &v["params"];
            assert_eq!(p["sessionId"], "slow", "{v}");
            match p["type"].as_str() {
                Some("agent_message_chunk") => {
                    assert_eq!(p["text"], "x", "chunk {chunks}: {v}");
                    chunks += 1;
                }
                Some("turn_complete") => {
                    let content = p["content"].as_str().unwrap();
                    let xs = content.trim_end_matches("…[truncated]");
                    assert!(xs.bytes().all(|b| b == b'x'), "turn_complete content");
                    assert_eq!(
                        xs.len(),
                        chunks.min(1 << 20),
                        "turn_complete content vs {chunks} chunks"
                    );
                }
                other => panic!("unexpected update {other:?}: {v}"),
            }
        } else {
            assert_eq!(v["id"], "big", "{v}");
            outcome = Some(v);
        }
        if chunks.is_multiple_of(4096) {
            peak = peak.max(d.rss_kib().unwrap_or(0));
        }
        if !cancelled && chunks >= 1000 {
            cancelled = true;
            let r = other.call(json!({"jsonrpc":"2.0","method":"session/cancel",
                "params":{"session_id":"slow"},"id":"cancel"}));
            // The turn may already have ended on its own.
            assert!(
                r["result"]["cancelled"] == true
                    || r["error"]["data"]["reason"] == "no_active_turn",
                "session/cancel: {r}"
            );
        }
    }
    let outcome = outcome.unwrap();
    let result = &outcome["result"];
    assert!(
        result["stop_reason"] == "cancelled" || result["stop_reason"] == "end_turn",
        "{outcome}"
    );
    if result["stop_reason"] == "end_turn" {
        assert_eq!(chunks, HUGE);
    }
    // The other client is still served, and the daemon gives memory back.
    round_trips(&mut other, 20, || {});
    let rss_after = d.rss_kib().unwrap_or(0);

    let (u99, l99) = (pct(&unloaded, 99.0), pct(&loaded, 99.0));
    report(&format!(
        "slow consumer: stalled {stall:?} (daemon CPU meanwhile {}, \
         then {} in 1 s without other traffic)\n  \
         VmRSS base {} MiB, stalled {} MiB, peak {} MiB (+{} MiB, bound +{} MiB), after {} MiB; \
         {chunks} chunks drained in {:.2} s, stop_reason {}\n  \
         status round trips: unloaded n={} p50 {} p99 {}; loaded n={} p50 {} p99 {} ({} 2x unloaded)",
        stall_cpu
            .map(|c| format!("{:.2} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into()),
        quiet_cpu
            .map(|c| format!("{:.2} s", c.as_secs_f64()))
            .unwrap_or_else(|| "n/a".into()),
        base / 1024,
        rss_stalled / 1024,
        peak / 1024,
        peak.saturating_sub(base) / 1024,
        RSS_BOUND_KIB / 1024,
        rss_after / 1024,
        drained.elapsed().as_secs_f64(),
        result["stop_reason"],
        unloaded.len(),
        ms(pct(&unloaded, 50.0)),
        ms(u99),
        loaded.len(),
        ms(pct(&loaded, 50.0)),
        ms(l99),
        if l99 <= u99 * 2 { "within" } else { "NOT within" },
    ));
    assert!(
        peak.saturating_sub(base) <= RSS_BOUND_KIB,
        "VmRSS grew by {} KiB (bound {RSS_BOUND_KIB} KiB)",
        peak - base
    );
}
