//! Resident memory per idle, initialized connection of the real `zeroclaw`
//! release binary.
//!
//! A daemon accepts at most 256 local connections (§4), so the
//! connections are spread over several daemons (default 40 × 250 = 10,000),
//! each with its own temporary config dir. For each daemon, `VmRSS` (from
//! `/proc/<pid>/status`) is read when it is ready, again after one warm-up
//! connection has come and gone (one-time lazy set-up), and again once all
//! its connections are open, initialized and idle. The report gives the
//! total ΔRSS divided by the number of connections, from both starting
//! points, and the per-daemon baseline RSS. Each daemon's `status` then
//! confirms it counts every connection.
//!
//! Environment: `ZC_IDLE_CONNS` (default 10000), `ZC_IDLE_PER_DAEMON`
//! (default 250, at most 255: one more connection asks for `status`).

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("idle_connections: Unix only (reads /proc)");
}

#[cfg(unix)]
mod imp {
    use std::time::Duration;

    use serde::Deserialize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    use super::common::{self, Server};

    /// Bytes per idle connection the daemon should stay within.
    const TARGET_BYTES: f64 = 8.0 * 1024.0;
    /// How long the daemons are left alone before RSS is read.
    const SETTLE: Duration = Duration::from_millis(500);

    fn env_usize(var: &str, default: usize) -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(default)
    }

    struct Measured {
        ready: u64,
        warm: u64,
        loaded: u64,
        conns: usize,
    }

    pub fn main() -> i32 {
        let total = env_usize("ZC_IDLE_CONNS", 10_000);
        let per = env_usize("ZC_IDLE_PER_DAEMON", 250).min(255);
        let n_daemons = total.div_ceil(per);
        println!("idle_connections: {}", common::machine());
        match common::raise_nofile_limit() {
            Ok(n) => println!("RLIMIT_NOFILE raised to {n}"),
            Err(e) => eprintln!("idle_connections: cannot raise RLIMIT_NOFILE: {e}"),
        }

        // Started from this thread: each daemon dies with it (PR_SET_PDEATHSIG).
        let mut daemons = Vec::with_capacity(n_daemons);
        for i in 0..n_daemons {
            match Server::daemon() {
                Ok(d) => daemons.push(d),
                Err(e) => {
                    eprintln!("idle_connections: daemon {i} did not start: {e}");
                    return 1;
                }
            }
        }
        let share = |i: usize| (total - i * per).min(per);

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let result: Result<Vec<Measured>, String> = rt.block_on(async {
            tokio::time::sleep(SETTLE).await;
            let ready: Vec<u64> = daemons.iter().map(rss).collect::<Result<_, _>>()?;

            // One connection comes and goes: what stays is one-time set-up.
            for d in &daemons {
                let s = common::connect_initialized(&d.endpoint)
                    .await
                    .map_err(|e| format!("warm-up on {}: {e}", d.endpoint.display()))?;
                drop(s);
            }
            tokio::time::sleep(SETTLE).await;
            let warm: Vec<u64> = daemons.iter().map(rss).collect::<Result<_, _>>()?;

            // Each daemon's connections are opened one after another (the
            // listen backlog stays short); the daemons are filled concurrently.
            let started = std::time::Instant::now();
            let fills: Vec<_> = daemons
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let endpoint = d.endpoint.clone();
                    let n = share(i);
                    tokio::spawn(async move {
                        let mut held = Vec::with_capacity(n);
                        for _ in 0..n {
                            held.push(common::connect_initialized(&endpoint).await?);
                        }
                        Ok::<_, std::io::Error>(held)
                    })
                })
                .collect();
            let mut held: Vec<Vec<UnixStream>> = Vec::with_capacity(fills.len());
            for (i, f) in fills.into_iter().enumerate() {
                match f.await {
                    Ok(Ok(conns)) => held.push(conns),
                    Ok(Err(e)) => return Err(format!("daemon {i}: connecting: {e}")),
                    Err(e) => return Err(format!("daemon {i}: {e}")),
                }
            }
            let opened: usize = held.iter().map(Vec::len).sum();
            println!(
                "{opened} connections opened and initialized in {:.2} s",
                started.elapsed().as_secs_f64()
            );
            tokio::time::sleep(SETTLE).await;
            let loaded: Vec<u64> = daemons.iter().map(rss).collect::<Result<_, _>>()?;

            // Every daemon counts its connections (and the one asking).
            for (i, d) in daemons.iter().enumerate() {
                let n = status_connections(d)
                    .await
                    .map_err(|e| format!("status: {e}"))?;
                if n != share(i) + 1 {
                    return Err(format!(
                        "daemon {i} counts {n} connections, expected {}",
                        share(i) + 1
                    ));
                }
            }
            // Every held connection is still open: nothing to read, no EOF.
            for conns in &mut held {
                for c in conns.iter_mut() {
                    let mut b = [0u8; 1];
                    match c.try_read(&mut b) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        other => return Err(format!("an idle connection changed: {other:?}")),
                    }
                }
            }
            drop(held);
            Ok((0..daemons.len())
                .map(|i| Measured {
                    ready: ready[i],
                    warm: warm[i],
                    loaded: loaded[i],
                    conns: share(i),
                })
                .collect())
        });
        drop(rt);
        let rows = match result {
            Ok(rows) => rows,
            Err(e) => {
                eprintln!("idle_connections: FAILED: {e}");
                return 1;
            }
        };
        for d in &mut daemons {
            if !d.is_running() {
                eprintln!("idle_connections: FAILED: a daemon exited during the bench");
                return 1;
            }
        }
        drop(daemons);
        report(&rows);
        0
    }

    fn rss(d: &Server) -> Result<u64, String> {
        d.rss_bytes()
            .map_err(|e| format!("VmRSS of {}: {e}", d.pid))
    }

    async fn status_connections(d: &Server) -> std::io::Result<usize> {
        #[derive(Deserialize)]
        struct Resp {
            result: Option<StatusResult>,
        }
        #[derive(Deserialize)]
        struct StatusResult {
            connections: usize,
        }
        let mut s = common::connect_initialized(&d.endpoint).await?;
        s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":1}\n")
            .await?;
        let mut line = Vec::new();
        while !line.ends_with(b"\n") {
            if s.read_buf(&mut line).await? == 0 {
                break;
            }
        }
        match serde_json::from_slice::<Resp>(&line) {
            Ok(Resp { result: Some(r) }) => Ok(r.connections),
            _ => Err(std::io::Error::other(format!(
                "bad status response: {}",
                String::from_utf8_lossy(&line)
            ))),
        }
    }

    fn report(rows: &[Measured]) {
        let kib = |b: f64| b / 1024.0;
        let conns: usize = rows.iter().map(|r| r.conns).sum();
        let sum = |f: &dyn Fn(&Measured) -> u64| rows.iter().map(f).sum::<u64>() as f64;
        let ready = sum(&|r| r.ready);
        let warm = sum(&|r| r.warm);
        let loaded = sum(&|r| r.loaded);
        let n = rows.len() as f64;
        let per_daemon: Vec<f64> = rows
            .iter()
            .map(|r| (r.loaded as f64 - r.warm as f64) / r.conns as f64)
            .collect();
        let min = per_daemon.iter().copied().fold(f64::INFINITY, f64::min);
        let max = per_daemon.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!();
        println!(
            "{} daemons, {conns} idle initialized connections ({} per daemon)",
            rows.len(),
            rows.first().map_or(0, |r| r.conns)
        );
        println!(
            "per-daemon RSS: ready {:.0} KiB, after one warm-up connection {:.0} KiB, with its connections {:.0} KiB (means)",
            kib(ready / n),
            kib(warm / n),
            kib(loaded / n)
        );
        let from_ready = (loaded - ready) / conns as f64;
        let from_warm = (loaded - warm) / conns as f64;
        println!(
            "ΔRSS per idle connection: {from_ready:.0} bytes ({:.2} KiB) counted from ready",
            kib(from_ready)
        );
        println!(
            "ΔRSS per idle connection: {from_warm:.0} bytes ({:.2} KiB) counted after the warm-up connection (per daemon: min {min:.0}, max {max:.0})",
            kib(from_warm)
        );
        println!(
            "target: <= 8 KiB per idle connection: {}",
            if from_ready <= TARGET_BYTES {
                "met"
            } else {
                "MISSED"
            }
        );
    }
}
