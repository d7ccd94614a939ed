//! Chunked upload throughput over the real socket (§8.18): the real
//! `zeroclaw` release binary receives a 10 MiB file as `file/upload/begin`,
//! ten 1 MiB `file/upload/chunk` frames and `file/upload/commit`, and the
//! bench reports MB/s of file bytes, begin to commit answer.
//!
//! In the same run, the reference: the very same chunk lines (same bytes,
//! same base64) written through a Unix socket to a reader that discards
//! them, timed until the reader has received the last byte. The ratio
//! `upload / raw` is the figure of merit (target ≥ 0.5): how much of what
//! the socket could carry the daemon turns into stored files.
//!
//! Two client behaviours are measured:
//! - `sequential`: each chunk waits for its answer, as `zeroclaw upload` does;
//! - `pipelined`: every chunk and the commit are written back to back, then
//!   the answers are read (the daemon serializes them per upload, §3.7).
//!
//! For context, `floor` is what the daemon must do at the least, measured in
//! this process on the same data: decode the base64, SHA-256 the file, and
//! write, fsync and rename it in the same file system as the daemon's
//! workspace.
//!
//! Every round stores new content (the first bytes carry the round number),
//! so no commit is a deduplicated one. Environment: `ZC_BENCH_ROUNDS`
//! (default 5). Each row gives the median and the best round.

#[cfg(unix)]
mod common;

fn main() {
    #[cfg(unix)]
    std::process::exit(imp::main());
    #[cfg(not(unix))]
    eprintln!("upload: Unix only (the reference reader uses a Unix socket)");
}

#[cfg(unix)]
mod imp {
    use std::io::Write as _;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use base64::Engine;
    use serde_json::{json, Value};
    use sha2::{Digest, Sha256};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
    use tokio::net::{UnixListener, UnixStream};

    use super::common::{self, ScratchDir, Server};

    /// The file: the largest one allowed (10 MiB).
    const FILE_BYTES: usize = 10 * 1024 * 1024;
    /// Chunk size (the daemon's `chunk_bytes`).
    const CHUNK: usize = 1024 * 1024;
    const SESSION: &str = "bench-upload";

    type Result<T> = std::result::Result<T, String>;

    pub fn main() -> i32 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        match rt.block_on(run()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("upload bench failed: {e}");
                1
            }
        }
    }

    fn rounds() -> usize {
        std::env::var("ZC_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(5)
    }

    /// The content of round `r`: deterministic bytes, the first 8 being `r`.
    fn content(r: usize) -> Vec<u8> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut out = Vec::with_capacity(FILE_BYTES + 8);
        while out.len() < FILE_BYTES {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.truncate(FILE_BYTES);
        out[..8].copy_from_slice(&(r as u64).to_le_bytes());
        out
    }

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The chunk frames of one upload (each ends with `\n`), for `upload_id`.
    fn chunk_lines(upload_id: &str, file: &[u8], first_id: u64) -> Vec<Vec<u8>> {
        file.chunks(CHUNK)
            .enumerate()
            .map(|(i, piece)| {
                let mut line = format!(
                    r#"{{"jsonrpc":"2.0","method":"file/upload/chunk","id":{},"params":{{"upload_id":"{upload_id}","offset":{},"data_b64":""#,
                    first_id + i as u64,
                    i * CHUNK
                )
                .into_bytes();
                let b64 = base64::engine::general_purpose::STANDARD.encode(piece);
                line.extend_from_slice(b64.as_bytes());
                line.extend_from_slice(b"\"}}\n");
                line
            })
            .collect()
    }

    /// A connection to the daemon: requests out, answers in.
    struct Conn {
        rd: BufReader<OwnedReadHalf>,
        wr: OwnedWriteHalf,
        next_id: u64,
        line: String,
    }

    impl Conn {
        async fn open(endpoint: &Path) -> Result<Self> {
            let s = common::connect_initialized(endpoint)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let (rd, wr) = s.into_split();
            Ok(Self {
                rd: BufReader::with_capacity(64 * 1024, rd),
                wr,
                next_id: 1,
                line: String::new(),
            })
        }

        async fn send(&mut self, bytes: &[u8]) -> Result<()> {
            self.wr
                .write_all(bytes)
                .await
                .map_err(|e| format!("write: {e}"))
        }

        /// The next answer; an error response is an error.
        async fn answer(&mut self) -> Result<Value> {
            self.line.clear();
            let n = self
                .rd
                .read_line(&mut self.line)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the daemon closed the connection".into());
            }
            let v: Value = serde_json::from_str(&self.line)
                .map_err(|e| format!("bad answer {:?}: {e}", self.line))?;
            match v.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(format!("error answer: {}", self.line.trim_end())),
            }
        }

        async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
            let id = self.take_id();
            let mut line = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id})
                .to_string()
                .into_bytes();
            line.push(b'\n');
            self.send(&line).await?;
            self.answer().await
        }

        fn take_id(&mut self) -> u64 {
            self.next_id += 1;
            self.next_id
        }
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Mode {
        Sequential,
        Pipelined,
    }

    /// One upload of `file`; the time from begin to the commit's answer.
    async fn upload(c: &mut Conn, file: &[u8], mode: Mode) -> Result<Duration> {
        let sha = hex(&Sha256::digest(file));
        // Frames are built before the clock starts except for the upload id.
        let id_placeholder = "upl_00000000000000000000000000000000";
        let first_id = c.next_id + 1;
        let mut lines = chunk_lines(id_placeholder, file, first_id);
        c.next_id += lines.len() as u64;
        let t0 = Instant::now();
        let r = c
            .call(
                "file/upload/begin",
                json!({"session_id": SESSION, "size_bytes": file.len(), "sha256": sha, "filename": "bench.bin"}),
            )
            .await?;
        let upload_id = r["upload_id"].as_str().ok_or("no upload_id")?.to_owned();
        if upload_id.len() != id_placeholder.len() {
            return Err(format!("unexpected upload id {upload_id}"));
        }
        for l in &mut lines {
            // The placeholder sits at a fixed offset in every line.
            let at = l
                .windows(id_placeholder.len())
                .position(|w| w == id_placeholder.as_bytes())
                .ok_or("placeholder")?;
            l[at..at + upload_id.len()].copy_from_slice(upload_id.as_bytes());
        }
        match mode {
            Mode::Sequential => {
                for l in &lines {
                    c.send(l).await?;
                    c.answer().await?;
                }
            }
            Mode::Pipelined => {
                for l in &lines {
                    c.send(l).await?;
                }
                for _ in &lines {
                    c.answer().await?;
                }
            }
        }
        let r = c
            .call("file/upload/commit", json!({ "upload_id": upload_id }))
            .await?;
        let elapsed = t0.elapsed();
        if r["size_bytes"] != file.len() || r["deduplicated"] != false {
            return Err(format!("unexpected commit result {r}"));
        }
        Ok(elapsed)
    }

    /// The same chunk lines through a Unix socket to a reader that discards
    /// them; the time until the reader has the last byte.
    async fn raw(dir: &Path, lines: &[Vec<u8>]) -> Result<Duration> {
        let path = dir.join("raw.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(|e| format!("bind: {e}"))?;
        let total: usize = lines.iter().map(Vec::len).sum();
        let reader = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await?;
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0usize;
            while got < total {
                let n = s.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            std::io::Result::Ok((got, Instant::now()))
        });
        let mut w = UnixStream::connect(&path)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let t0 = Instant::now();
        for l in lines {
            w.write_all(l).await.map_err(|e| format!("write: {e}"))?;
        }
        let (got, t1) = reader
            .await
            .map_err(|e| format!("reader: {e}"))?
            .map_err(|e| format!("reader: {e}"))?;
        if got != total {
            return Err(format!("the reader got {got} of {total} bytes"));
        }
        Ok(t1 - t0)
    }

    /// What the daemon must do at the least, in this process: decode, hash,
    /// write, then fsync, rename and fsync the directory. The time of each phase.
    fn floor(dir: &Path, lines: &[Vec<u8>], r: usize) -> Result<[Duration; 4]> {
        let t0 = Instant::now();
        let mut file = Vec::with_capacity(FILE_BYTES);
        let key = b"\"data_b64\":\"";
        for l in lines {
            let s = l
                .windows(key.len())
                .position(|w| w == key)
                .ok_or("data_b64")?
                + key.len();
            let body = &l[s..l.len() - 4];
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(body)
                .map_err(|e| format!("decode: {e}"))?;
            file.extend_from_slice(&bytes);
        }
        let t1 = Instant::now();
        let sha = hex(&Sha256::digest(&file));
        let t2 = Instant::now();
        let tmp = dir.join(format!(".floor-{r}.tmp"));
        let mut f = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        f.write_all(&file).map_err(|e| e.to_string())?;
        let t3 = Instant::now();
        f.sync_all().map_err(|e| e.to_string())?;
        drop(f);
        std::fs::rename(&tmp, dir.join(sha)).map_err(|e| e.to_string())?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| e.to_string())?;
        let t4 = Instant::now();
        Ok([t1 - t0, t2 - t1, t3 - t2, t4 - t3])
    }

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    fn mbps(d: Duration) -> f64 {
        FILE_BYTES as f64 / 1e6 / d.as_secs_f64()
    }

    /// (median, best) MB/s of the rounds' durations.
    fn summary(ds: &[Duration]) -> (f64, f64) {
        let mut v: Vec<f64> = ds.iter().map(|d| mbps(*d)).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    }

    async fn run() -> Result<()> {
        let n = rounds();
        let server = Server::daemon().map_err(|e| format!("starting the daemon: {e}"))?;
        let scratch = ScratchDir::new("upload").map_err(|e| e.to_string())?;
        let mut c = Conn::open(&server.endpoint).await?;
        c.call(
            "session/new",
            json!({"agent_alias": "echo", "session_id": SESSION, "chat_mode": "chat"}),
        )
        .await?;
        println!("upload bench: {}", common::machine());
        println!(
            "file {FILE_BYTES} bytes in {} chunks of {CHUNK} bytes; {n} rounds; MB = 10^6 bytes of file data",
            FILE_BYTES.div_ceil(CHUNK)
        );

        let (mut seq, mut pipe, mut raws, mut phases) = (vec![], vec![], vec![], vec![]);
        // A warm-up round of each, not counted.
        let warm = content(10_000);
        upload(&mut c, &warm, Mode::Sequential).await?;
        raw(
            scratch.path(),
            &chunk_lines("upl_00000000000000000000000000000000", &warm, 1),
        )
        .await?;
        for r in 0..n {
            let a = content(2 * r);
            let b = content(2 * r + 1);
            let lines = chunk_lines("upl_00000000000000000000000000000000", &a, 1);
            // Rotate the order, so that a change in the machine's load spreads over all rows.
            for step in 0..4 {
                match (step + r) % 4 {
                    0 => seq.push(upload(&mut c, &a, Mode::Sequential).await?),
                    1 => pipe.push(upload(&mut c, &b, Mode::Pipelined).await?),
                    2 => raws.push(raw(scratch.path(), &lines).await?),
                    _ => phases.push(floor(scratch.path(), &lines, r)?),
                }
            }
        }
        let (raw_med, raw_best) = summary(&raws);
        let floors: Vec<Duration> = phases.iter().map(|p| p.iter().sum()).collect();
        let (floor_med, _) = summary(&floors);
        let row = |name: &str, ds: &[Duration]| {
            let (med, best) = summary(ds);
            println!(
                "{name:<22} median {med:>8.1} MB/s   best {best:>8.1} MB/s   median/raw {:.3}   median/floor {:.2}",
                med / raw_med,
                med / floor_med
            );
        };
        row("upload, sequential", &seq);
        row("upload, pipelined", &pipe);
        row("floor (in process)", &floors);
        let ms = |i: usize| median(phases.iter().map(|p| p[i]).collect()).as_secs_f64() * 1e3;
        println!(
            "{:<22} decode {:.1} ms, sha256 {:.1} ms, write {:.1} ms, fsync+rename+dir fsync {:.1} ms (medians)",
            "floor phases",
            ms(0),
            ms(1),
            ms(2),
            ms(3)
        );
        println!(
            "{:<22} median {raw_med:>8.1} MB/s   best {raw_best:>8.1} MB/s",
            "raw socket"
        );
        let (seq_med, _) = summary(&seq);
        let ratio = seq_med / raw_med;
        println!(
            "ratio upload/raw (sequential, medians): {ratio:.3} (target >= 0.5: {}); the floor alone reaches {:.3}",
            if ratio >= 0.5 { "met" } else { "NOT met" },
            floor_med / raw_med
        );
        let of_floor = seq_med / floor_med;
        println!(
            "target as re-decided (docs/decisions.md): upload/floor (sequential, medians) >= 0.8: {of_floor:.2}, {}",
            if of_floor >= 0.8 { "met" } else { "NOT met" }
        );
        drop(c);
        drop(server);
        Ok(())
    }
}
