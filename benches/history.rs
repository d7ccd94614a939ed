//! Cost against history (docs/performance.md "History"): the real
//! release daemon on a data dir holding N persisted sessions of each kind
//! (durable "acp" and chat, four messages each), for N = 3,000 and 30,000.
//!
//! For each N it reports:
//! - the time from spawning the daemon to its first answer to `status`
//!   (ready line, connect, `initialize`, `status`), on the first start after
//!   the data was written (the daemon never closed this file) and the median
//!   of `ZC_BENCH_ROUNDS` (default 3) restarts after a graceful stop;
//! - `session/list` latency (default limit), median of 20;
//! - `session/messages` latency for the oldest durable and the oldest chat
//!   session, median of 20 each (the first durable read recovers, §9.6);
//! - the daemon's RSS (`VmRSS`) after those calls.
//!
//! Environment: `ZC_BENCH_HISTORY` (comma-separated N, default `3000,30000`),
//! `ZC_BENCH_ROUNDS`, `ZC_BENCH_BEFORE_BIN` (another daemon binary, measured
//! as `before` on data of its own in the same run).

#[cfg(unix)]
mod common;

#[cfg(unix)]
#[path = "history/seed.rs"]
mod seed;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("history: Unix only");
}

#[cfg(unix)]
mod imp {
    use std::os::unix::fs::DirBuilderExt;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::UnixStream;

    use super::common::{self, ScratchDir, Server};
    use super::seed;

    const CONFIG: &str = "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n";
    /// Calls per latency figure.
    const CALLS: usize = 20;

    /// What one N measured on one daemon.
    struct Row {
        daemon: &'static str,
        n: u32,
        seed_secs: f64,
        db_mib: f64,
        first_ready_ms: f64,
        ready_ms: f64,
        list_ms: f64,
        list_kib: f64,
        durable_ms: f64,
        chat_ms: f64,
        rss_mib: f64,
    }

    pub fn main() -> i32 {
        let sizes: Vec<u32> = std::env::var("ZC_BENCH_HISTORY")
            .unwrap_or_else(|_| "3000,30000".into())
            .split(',')
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        let restarts = std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(3);
        println!("history: {}", common::machine());
        let this: &Path = env!("CARGO_BIN_EXE_zeroclaw").as_ref();
        let before = std::env::var_os("ZC_BENCH_BEFORE_BIN").map(std::path::PathBuf::from);
        let mut daemons = vec![("daemon", this)];
        if let Some(bin) = &before {
            daemons.push(("before", bin));
        }
        let mut rows = Vec::new();
        for n in sizes {
            for &(name, bin) in &daemons {
                match measure(name, bin, n, restarts) {
                    Ok(row) => rows.push(row),
                    Err(e) => {
                        return common::exit_code("history", Err(format!("{name}, N = {n}: {e}")))
                    }
                }
            }
        }
        println!(
            "{:<7} {:>7} {:>7} {:>7} {:>10} {:>10} {:>9} {:>8} {:>10} {:>9} {:>8}",
            "daemon",
            "N",
            "seed s",
            "db MiB",
            "1st ready",
            "ready ms",
            "list ms",
            "list KiB",
            "msgs acp",
            "msgs chat",
            "RSS MiB"
        );
        for r in &rows {
            println!(
                "{:<7} {:>7} {:>7.1} {:>7.1} {:>10.1} {:>10.1} {:>9.2} {:>8.1} {:>10.2} {:>9.2} {:>8.1}",
                r.daemon,
                r.n,
                r.seed_secs,
                r.db_mib,
                r.first_ready_ms,
                r.ready_ms,
                r.list_ms,
                r.list_kib,
                r.durable_ms,
                r.chat_ms,
                r.rss_mib
            );
        }
        0
    }

    fn measure(daemon: &'static str, bin: &Path, n: u32, restarts: usize) -> Result<Row, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let dir = ScratchDir::new("hist").map_err(|e| e.to_string())?;
        write_private(&dir.path().join("config.toml"), CONFIG)?;
        let data = dir.path().join("data");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&data)
            .map_err(|e| e.to_string())?;
        let t = Instant::now();
        rt.block_on(seed::seed(&data, n))?;
        let seed_secs = t.elapsed().as_secs_f64();
        let db = zeroclaw::store::Store::path_in(&data);
        let db_mib = std::fs::metadata(&db).map_err(|e| e.to_string())?.len() as f64 / 1048576.0;

        let (first, server) = start(&rt, bin, dir.path())?;
        drop(server);
        let mut ready = Vec::new();
        let mut last = None;
        for _ in 0..restarts {
            drop(last.take());
            let (ms, server) = start(&rt, bin, dir.path())?;
            ready.push(ms);
            last = Some(server);
        }
        let server = last.ok_or("no restart")?;
        let (list, list_bytes, durable, chat) = rt.block_on(reads(&server, n))?;
        let rss = server.rss_bytes().map_err(|e| e.to_string())?;
        Ok(Row {
            daemon,
            n,
            seed_secs,
            db_mib,
            first_ready_ms: first,
            ready_ms: common::median(&mut ready),
            list_ms: list,
            list_kib: list_bytes as f64 / 1024.0,
            durable_ms: durable,
            chat_ms: chat,
            rss_mib: rss as f64 / 1048576.0,
        })
    }

    fn write_private(path: &Path, text: &str) -> Result<(), String> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| e.to_string())?;
        std::io::Write::write_all(&mut f, text.as_bytes()).map_err(|e| e.to_string())
    }

    /// Spawns the daemon `bin` on `config_dir`; milliseconds until `status` answered.
    fn start(
        rt: &tokio::runtime::Runtime,
        bin: &Path,
        config_dir: &Path,
    ) -> Result<(f64, Server), String> {
        let t = Instant::now();
        let server = Server::start("daemon", common::daemon_command(bin, config_dir), None)
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let mut c = Client::connect(&server.endpoint).await?;
            c.call("status", "{}").await
        })?;
        Ok((t.elapsed().as_secs_f64() * 1e3, server))
    }

    /// Median ms of `session/list`, its answer's size, and median ms of
    /// `session/messages` on the oldest durable and chat session.
    async fn reads(server: &Server, n: u32) -> Result<(f64, usize, f64, f64), String> {
        let mut c = Client::connect(&server.endpoint).await?;
        let (mut list, mut bytes) = (Vec::new(), 0);
        for _ in 0..CALLS {
            let t = Instant::now();
            bytes = c.call("session/list", "{}").await?;
            list.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let mut kinds = Vec::new();
        for id in [seed::durable_id(1), seed::chat_id(1)] {
            let params = format!("{{\"session_id\":\"{id}\"}}");
            let mut v = Vec::new();
            for _ in 0..CALLS {
                let t = Instant::now();
                let len = c.call("session/messages", &params).await?;
                v.push(t.elapsed().as_secs_f64() * 1e3);
                if len < 100 * seed::MESSAGES as usize {
                    return Err(format!("{id}: a short history ({len} bytes of {n})"));
                }
            }
            kinds.push(common::median(&mut v));
        }
        Ok((common::median(&mut list), bytes, kinds[0], kinds[1]))
    }

    /// One initialized connection that makes one call at a time.
    struct Client {
        io: BufReader<UnixStream>,
        next: u64,
        line: Vec<u8>,
    }

    impl Client {
        async fn connect(endpoint: &Path) -> Result<Self, String> {
            let deadline = Instant::now() + Duration::from_secs(10);
            let stream = loop {
                match common::connect_initialized(endpoint).await {
                    Ok(s) => break s,
                    Err(e) if Instant::now() > deadline => return Err(format!("connect: {e}")),
                    Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            };
            Ok(Self {
                io: BufReader::new(stream),
                next: 1,
                line: Vec::with_capacity(1 << 16),
            })
        }

        /// Sends one request; the answer's length, or its error.
        async fn call(&mut self, method: &str, params: &str) -> Result<usize, String> {
            let id = self.next;
            self.next += 1;
            let req = format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{params},\"id\":{id}}}\n"
            );
            let io = self.io.get_mut();
            io.write_all(req.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            self.line.clear();
            let got = self.io.read_until(b'\n', &mut self.line).await;
            match got {
                Ok(0) => Err(format!("{method}: the daemon closed the connection")),
                Ok(len) if self.line.starts_with(b"{\"jsonrpc\":\"2.0\",\"result\"") => Ok(len),
                Ok(_) => Err(format!(
                    "{method}: {}",
                    String::from_utf8_lossy(&self.line).trim_end()
                )),
                Err(e) => Err(format!("{method}: {e}")),
            }
        }
    }
}
