//! End-to-end load over a real Unix socket: the real `zeroclaw` release
//! binary against a minimal raw NDJSON JSON-RPC server, both out of process,
//! driven by the same load generator in the same run.
//!
//! Scenarios (each `status`, for a fixed time after a short warm-up):
//! - `1x1`: one connection, one request in flight (request/response latency);
//! - `1x64`: one connection, 64 requests kept outstanding (pipelined throughput);
//! - `16x16`: 16 connections, 16 requests in flight on each.
//!
//! Every response id is checked against the requests sent: an unknown or
//! repeated id, an error response, or a request still unanswered when the
//! drain ends is an error, and the bench exits non-zero.
//!
//! The baseline is this same executable re-run as `e2e_load __baseline-server
//! <dir> empty|status|frozen`: a tokio multi-thread runtime (like the daemon's), a
//! bounded `LinesCodec` per connection, each line parsed with serde_json
//! into a struct borrowing its `id` as a `&RawValue`, the answer appended to
//! one buffer for every frame already readable, then one write (batched
//! writes). Two of them run:
//! - `baseline` answers `{"jsonrpc":"2.0","result":{},"id":<id>}`: the
//!   reference for the targets;
//! - `baseline-status` answers with a result of the same members and about
//!   the same size as the daemon's `status` (§8.2), serialized with
//!   serde per request: what is left between it and the daemon is the
//!   daemon's machinery, not the size of its answer;
//! - `baseline-frozen` answers with that same result rendered once at
//!   startup and copied per request: the least any server can do to answer
//!   §8.2's `status` (its members change while a daemon runs, so a real one
//!   cannot do less than copy most of them).
//!
//! Besides throughput and latency, each row gives the server's CPU time per
//! response (from `/proc/<pid>/stat`, 10 ms ticks), the server's and the
//! load generator's CPU use in cores, and the mean response size.
//!
//! Each scenario runs in `ZC_BENCH_ROUNDS` rounds (default 3), the servers
//! taking turns in a rotating order, so that a change in the machine's load
//! spreads over all of them; throughput is pooled over the rounds (the
//! slowest and fastest round are shown), percentiles over all samples.
//!
//! Environment: `ZC_BENCH_SECS` (measured seconds per scenario and server,
//! all rounds together, default 3), `ZC_BENCH_WARMUP_SECS` (per round,
//! default 0.25), `ZC_BENCH_ROUNDS`; for profiling one
//! server under one load, `ZC_BENCH_SCENARIOS` (e.g. `1x64,16x16`) and
//! `ZC_BENCH_BEFORE_BIN` (another daemon binary, measured as
//! `daemon-before` in the same run), `ZC_BENCH_SERVERS` (`daemon`, `baseline`, `baseline-status`,
//! `baseline-frozen`) select a
//! subset (the pids are printed first, for `perf record -p`).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    imp::main();
    #[cfg(not(unix))]
    eprintln!("e2e_load: Unix only (the baseline server uses a Unix socket)");
}

#[cfg(unix)]
mod imp {
    use std::borrow::Cow;
    use std::collections::HashMap;
    use std::io::Write as _;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use futures_util::{FutureExt, StreamExt};
    use serde::de::IgnoredAny;
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{UnixListener, UnixStream};
    use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

    use super::common::{self, ScratchDir, Server};

    const BASELINE_ARG: &str = "__baseline-server";
    /// How long the end of a scenario waits for outstanding responses.
    const DRAIN: Duration = Duration::from_secs(5);

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        if args.get(1).map(String::as_str) == Some(BASELINE_ARG) {
            let (Some(dir), Some(mode)) = (args.get(2), args.get(3).and_then(|m| Mode::parse(m)))
            else {
                eprintln!("usage: e2e_load {BASELINE_ARG} <dir> empty|status|frozen");
                std::process::exit(2);
            };
            baseline_server(Path::new(dir), mode);
            return;
        }
        std::process::exit(run_bench());
    }

    // -----------------------------------------------------------------
    // The baseline server.

    /// What the baseline answers `status` with.
    #[derive(Debug)]
    enum Answer {
        /// `{}`: the minimal server.
        Empty,
        /// A result shaped and sized like the daemon's (§8.2), serialized per request.
        Status(StatusInfo),
        /// The same result, serialized once and copied per request.
        Frozen(Vec<u8>),
    }

    /// Which baseline to run.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Empty,
        Status,
        Frozen,
    }

    impl Mode {
        fn parse(arg: &str) -> Option<Self> {
            match arg {
                "empty" => Some(Self::Empty),
                "status" => Some(Self::Status),
                "frozen" => Some(Self::Frozen),
                _ => None,
            }
        }

        fn arg(self) -> &'static str {
            match self {
                Self::Empty => "empty",
                Self::Status => "status",
                Self::Frozen => "frozen",
            }
        }

        /// The server's name in the report.
        fn name(self) -> &'static str {
            match self {
                Self::Empty => "baseline",
                Self::Status => "baseline-status",
                Self::Frozen => "baseline-frozen",
            }
        }

        /// Its scratch dir's prefix: the same length as the daemon's, so paths weigh the same.
        fn dir_prefix(self) -> &'static str {
            match self {
                Self::Empty => "basemt",
                Self::Status => "basest",
                Self::Frozen => "basefz",
            }
        }
    }

    /// The fixed parts of the status-shaped result.
    #[derive(Debug)]
    struct StatusInfo {
        started: Instant,
        pid: u32,
        config_dir: String,
        config_file: String,
        data_dir: String,
        endpoint: String,
        connections: std::sync::atomic::AtomicUsize,
    }

    /// The members of the daemon's `status` result, in its order.
    #[derive(serde::Serialize)]
    struct StatusResult<'a> {
        server_version: &'static str,
        protocol_version: u32,
        server_pid: u32,
        uptime_secs: u64,
        principal_id: &'a str,
        active_sessions: usize,
        session_ids: &'a [String],
        connections: usize,
        ephemeral: bool,
        config_dir: &'a str,
        config_file: &'a str,
        data_dir: &'a str,
        local_ipc_endpoint: &'a str,
    }

    /// Runs the minimal server on `<dir>/data/daemon.sock` until killed.
    fn baseline_server(dir: &Path, mode: Mode) {
        let data = dir.join("data");
        let sock = data.join("daemon.sock");
        let info = StatusInfo {
            started: Instant::now(),
            pid: std::process::id(),
            config_dir: dir.to_string_lossy().into_owned(),
            config_file: dir.join("config.toml").to_string_lossy().into_owned(),
            data_dir: data.to_string_lossy().into_owned(),
            endpoint: sock.to_string_lossy().into_owned(),
            connections: Default::default(),
        };
        let answer = match mode {
            Mode::Empty => Answer::Empty,
            Mode::Status => Answer::Status(info),
            Mode::Frozen => {
                info.connections
                    .store(1, std::sync::atomic::Ordering::Relaxed);
                let mut rendered = Vec::new();
                write_status(&info, &mut rendered);
                Answer::Frozen(rendered)
            }
        };
        let answer: &'static Answer = Box::leak(Box::new(answer));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            std::fs::create_dir_all(&data).expect("data dir");
            let _ = std::fs::remove_file(&sock);
            let listener = UnixListener::bind(&sock).expect("bind the baseline socket");
            let endpoint = serde_json::to_string(&sock.to_string_lossy()).expect("json");
            let mut out = std::io::stdout().lock();
            writeln!(out, "{{\"event\":\"ready\",\"endpoint\":{endpoint}}}").expect("stdout");
            out.flush().expect("stdout");
            drop(out);
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(serve_baseline(stream, answer));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
    }

    /// The envelope members a minimal server looks at; `id` is echoed verbatim.
    #[derive(Deserialize)]
    struct BaselineRequest<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a RawValue>,
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(borrow)]
        #[allow(dead_code)]
        params: Option<&'a RawValue>,
    }

    const BASELINE_MAX_FRAME: usize = 8 * 1024 * 1024;
    const PARSE_ERROR: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error\"},\"id\":null}\n";
    const TOO_LARGE: &[u8] =
        b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Frame too large\"},\"id\":null}\n";

    async fn serve_baseline(stream: UnixStream, answer: &'static Answer) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Answer::Status(info) = answer {
            info.connections.fetch_add(1, Relaxed);
        }
        serve_frames(stream, answer).await;
        if let Answer::Status(info) = answer {
            info.connections.fetch_sub(1, Relaxed);
        }
    }

    async fn serve_frames(stream: UnixStream, answer: &'static Answer) {
        let (rd, mut wr) = stream.into_split();
        let mut frames = FramedRead::new(rd, LinesCodec::new_with_max_length(BASELINE_MAX_FRAME));
        let mut out: Vec<u8> = Vec::with_capacity(4096);
        let mut after_error = false;
        loop {
            let first = match frames.next().await {
                Some(item) => item,
                // After a decode error FramedRead yields one `None` before reading on.
                None if after_error => {
                    after_error = false;
                    continue;
                }
                None => break,
            };
            let mut open = answer_frame(answer, first, &mut out, &mut after_error);
            // Answer every frame that is already readable, then write once.
            while open {
                match frames.next().now_or_never() {
                    Some(Some(item)) => {
                        open = answer_frame(answer, item, &mut out, &mut after_error)
                    }
                    Some(None) if after_error => after_error = false,
                    Some(None) => open = false,
                    None => break,
                }
            }
            if !out.is_empty() && wr.write_all(&out).await.is_err() {
                break;
            }
            out.clear();
            if out.capacity() > 1 << 20 {
                out = Vec::with_capacity(4096);
            }
            if !open {
                break;
            }
        }
    }

    /// Appends the answer to one frame; `false` when the connection failed.
    fn answer_frame(
        answer: &Answer,
        item: Result<String, LinesCodecError>,
        out: &mut Vec<u8>,
        after_error: &mut bool,
    ) -> bool {
        let line = match item {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                *after_error = true;
                out.extend_from_slice(TOO_LARGE);
                return true;
            }
            Err(LinesCodecError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                *after_error = true;
                out.extend_from_slice(PARSE_ERROR);
                return true;
            }
            Err(LinesCodecError::Io(_)) => return false,
        };
        *after_error = false;
        if line.trim().is_empty() {
            return true;
        }
        match serde_json::from_str::<BaselineRequest<'_>>(&line) {
            Ok(req) => {
                let Some(id) = req.id else { return true }; // a notification
                let valid = req.jsonrpc.is_some_and(|v| v.get() == "\"2.0\"");
                match req.method.as_deref() {
                    Some("status") if valid => {
                        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":");
                        match answer {
                            Answer::Empty => out.extend_from_slice(b"{}"),
                            Answer::Status(info) => write_status(info, out),
                            Answer::Frozen(rendered) => out.extend_from_slice(rendered),
                        }
                        out.extend_from_slice(b",\"id\":");
                    }
                    Some("initialize") if valid => {
                        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":");
                    }
                    Some(_) if valid => out.extend_from_slice(
                        b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":\"Method not found\"},\"id\":",
                    ),
                    _ => out.extend_from_slice(
                        b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"},\"id\":",
                    ),
                }
                out.extend_from_slice(id.get().as_bytes());
                out.extend_from_slice(b"}\n");
            }
            Err(_) => out.extend_from_slice(PARSE_ERROR),
        }
        true
    }

    fn write_status(info: &StatusInfo, out: &mut Vec<u8>) {
        let result = StatusResult {
            server_version: "0.1.0",
            protocol_version: 1,
            server_pid: info.pid,
            uptime_secs: info.started.elapsed().as_secs(),
            principal_id: "shared-operator",
            active_sessions: 0,
            session_ids: &[],
            connections: info.connections.load(std::sync::atomic::Ordering::Relaxed),
            ephemeral: false,
            config_dir: &info.config_dir,
            config_file: &info.config_file,
            data_dir: &info.data_dir,
            local_ipc_endpoint: &info.endpoint,
        };
        // Serializing strings and numbers into a Vec cannot fail.
        let _ = serde_json::to_writer(out, &result);
    }

    /// The baseline, out of process: this executable in its server mode.
    fn start_baseline(mode: Mode) -> std::io::Result<Server> {
        let dir = ScratchDir::new(mode.dir_prefix())?;
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg(BASELINE_ARG).arg(dir.path()).arg(mode.arg());
        Server::start(mode.name(), cmd, Some(dir))
    }

    // -----------------------------------------------------------------
    // The load generator.

    #[derive(Debug, Clone, Copy)]
    struct Scenario {
        name: &'static str,
        conns: usize,
        depth: usize,
    }

    const SCENARIOS: [Scenario; 3] = [
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
    struct Round {
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
    struct Outcome {
        rps: f64,
        /// The slowest and fastest round.
        rps_min: f64,
        rps_max: f64,
        p50_us: f64,
        p99_us: f64,
        /// Server CPU per response, in µs (user + system, all its threads).
        server_cpu_us: f64,
        /// The server's CPU use, in cores.
        server_cores: f64,
        /// This process's (the load generator's) CPU use, in cores.
        client_cores: f64,
        /// Mean response frame size, `\n` included.
        bytes_per_response: f64,
        samples: usize,
        errors: u64,
    }

    /// Nearest-rank percentile of sorted nanoseconds, in µs.
    fn percentile(sorted: &[u64], p: f64) -> f64 {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
    }

    fn run_round(
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
    fn summarize(rounds: Vec<Round>) -> Outcome {
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

    fn loadavg() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "?".into())
    }

    fn print_row(scenario: &str, server: &str, o: &Outcome) {
        println!(
            "{:<13} {:<16} {:>10.0} {:>17} {:>8.1} {:>8.1} {:>9.2} {:>6.2} {:>6.2} {:>6.0} {:>8} {:>6}",
            scenario,
            server,
            o.rps,
            format!("{:.0}-{:.0}", o.rps_min, o.rps_max),
            o.p50_us,
            o.p99_us,
            o.server_cpu_us,
            o.server_cores,
            o.client_cores,
            o.bytes_per_response,
            o.samples,
            o.errors
        );
    }

    fn print_ratio(scenario: &str, label: &str, a: &Outcome, b: &Outcome) {
        println!(
            "{:<13} {:<16} {:>9.2}x {:>17} {:>7.2}x {:>7.2}x {:>8.2}x",
            scenario,
            label,
            a.rps / b.rps,
            "",
            a.p50_us / b.p50_us,
            a.p99_us / b.p99_us,
            a.server_cpu_us / b.server_cpu_us
        );
    }

    fn run_bench() -> i32 {
        let total = common::env_secs("ZC_BENCH_SECS", 3.0);
        let warmup = common::env_secs("ZC_BENCH_WARMUP_SECS", 0.25);
        let rounds = std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(3);
        let measure = total / rounds;
        println!(
            "e2e_load: {}; load average {}",
            common::machine(),
            loadavg()
        );
        println!(
            "each scenario and server: {rounds} rounds of {:.2} s warm-up + {:.2} s measured, servers interleaved; load generator: one tokio current-thread runtime",
            warmup.as_secs_f64(),
            measure.as_secs_f64()
        );
        let mut started = vec![
            Server::daemon(),
            start_baseline(Mode::Empty),
            start_baseline(Mode::Status),
            start_baseline(Mode::Frozen),
        ];
        // Before and after a change in one run: another build of the daemon.
        if let Some(bin) = std::env::var_os("ZC_BENCH_BEFORE_BIN") {
            started.push(Server::daemon_from("daemon-before", bin.as_ref()));
        }
        let mut servers = Vec::new();
        for s in started {
            match s {
                Ok(s) => servers.push(s),
                Err(e) => {
                    eprintln!("e2e_load: a server did not start: {e}");
                    return 1;
                }
            }
        }
        for s in &servers {
            println!("{} pid {}", s.name, s.pid);
        }
        let wanted = |var: &str, name: &str| {
            std::env::var(var)
                .map(|v| v.split(',').any(|w| name.ends_with(w.trim())))
                .unwrap_or(true)
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");

        // rows[scenario][server]: None when the server was left out.
        let mut rows: Vec<(Scenario, Vec<Option<Outcome>>)> = Vec::new();
        for sc in SCENARIOS {
            if !wanted("ZC_BENCH_SCENARIOS", sc.name) {
                continue;
            }
            let mut per_server: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
            for r in 0..rounds as usize {
                // Rotate the order each round, so drift in the machine's load spreads evenly.
                for k in 0..servers.len() {
                    let i = (k + r) % servers.len();
                    if wanted("ZC_BENCH_SERVERS", servers[i].name) {
                        let round = run_round(&rt, &servers[i], sc, warmup, measure);
                        per_server[i].push(round);
                    }
                }
            }
            let outcomes = per_server
                .into_iter()
                .map(|rs| (!rs.is_empty()).then(|| summarize(rs)))
                .collect();
            rows.push((sc, outcomes));
        }
        drop(rt);
        let mut failed = false;
        for (name, alive) in servers.iter_mut().map(|s| (s.name, s.is_running())) {
            if !alive {
                eprintln!("e2e_load: {name} exited during the bench");
                failed = true;
            }
        }
        drop(servers);

        println!();
        println!("load average after the run: {}", loadavg());
        println!(
            "{:<13} {:<16} {:>10} {:>17} {:>8} {:>8} {:>9} {:>6} {:>6} {:>6} {:>8} {:>6}",
            "scenario",
            "server",
            "req/s",
            "rounds' req/s",
            "p50 µs",
            "p99 µs",
            "CPU µs/r",
            "srv c",
            "gen c",
            "B/resp",
            "samples",
            "errors"
        );
        let names = [
            "daemon",
            "baseline",
            "baseline-status",
            "baseline-frozen",
            "daemon-before",
        ];
        let labels = [
            "",
            "daemon/baseline",
            "daemon/b-status",
            "daemon/b-frozen",
            "daemon/before",
        ];
        for (sc, outs) in &rows {
            for (name, o) in names.iter().zip(outs) {
                if let Some(o) = o {
                    print_row(sc.name, name, o);
                    failed |= o.errors > 0 || o.samples == 0;
                }
            }
            if let Some(d) = &outs[0] {
                for (label, b) in labels.iter().zip(outs).skip(1) {
                    if let Some(b) = b {
                        print_ratio(sc.name, label, d, b);
                    }
                }
            }
        }
        println!();
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        let pair = |depth: usize, against: usize| {
            rows.iter()
                .find(|(sc, _)| sc.conns == 1 && sc.depth == depth)
                .and_then(|(_, o)| Some((o[0].as_ref()?, o[against].as_ref()?)))
        };
        if let Some((d, b)) = pair(64, 1) {
            let r = d.rps / b.rps;
            println!(
                "target: pipelined (1x64) throughput >= 0.8x baseline: {r:.2}x, {}",
                verdict(r >= 0.8)
            );
        }
        if let Some((d, b)) = pair(64, 2) {
            let r = d.rps / b.rps;
            println!(
                "target as re-decided (docs/decisions.md): pipelined (1x64) throughput >= 0.8x baseline-status (the same answer): {r:.2}x, {}",
                verdict(r >= 0.8)
            );
        }
        if let Some((d, b)) = pair(1, 1) {
            let r = d.p50_us / b.p50_us;
            println!(
                "target: 1x1 p50 latency <= 1.3x baseline: {r:.2}x, {}",
                verdict(r <= 1.3)
            );
        }
        if failed {
            eprintln!("e2e_load: FAILED: lost, duplicated or failed responses, or a server died (see above)");
            1
        } else {
            0
        }
    }
}
