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

#[cfg(unix)]
#[path = "e2e_load/baseline.rs"]
mod baseline;
#[cfg(unix)]
#[path = "e2e_load/load.rs"]
mod load;
#[cfg(unix)]
#[path = "e2e_load/minimal_request.rs"]
mod minimal_request;

fn main() {
    #[cfg(unix)]
    imp::main();
    #[cfg(not(unix))]
    eprintln!("e2e_load: Unix only (the baseline server uses a Unix socket)");
}

/// The run: start the servers, drive every scenario, print the table.
#[cfg(unix)]
mod imp {
    use std::path::Path;

    use super::baseline::{self, start_baseline, Mode, BASELINE_ARG};
    use super::common::{self, Server};
    use super::load::{run_round, summarize, Outcome, Round, Scenario, SCENARIOS};

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        if args.get(1).map(String::as_str) == Some(BASELINE_ARG) {
            let (Some(dir), Some(mode)) = (args.get(2), args.get(3).and_then(|m| Mode::parse(m)))
            else {
                eprintln!("usage: e2e_load {BASELINE_ARG} <dir> empty|status|frozen");
                std::process::exit(2);
            };
            baseline::baseline_server(Path::new(dir), mode);
            return;
        }
        std::process::exit(run_bench());
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
