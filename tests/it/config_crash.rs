//! Crash safety of the config commit (§8.16 step 8): the daemon is
//! killed with SIGKILL over and over while a client commits
//! `config/set-many` batches as fast as it can. After every kill
//! `config.toml` must parse and hold exactly one complete committed batch —
//! never a mix, never a truncated or empty file, never older than the last
//! acknowledged commit — and the restarted daemon must run with that state
//! (a leftover `config.toml.tmp` is never read).

// Unix only: RLIMIT_FSIZE (setrlimit, prlimit) and the SIGXFSZ it raises (std::os::unix::process).

use crate::common;

use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::users::{config_bytes, get, set_many};
use common::{
    hermetic_env, wait_timeout, Client, Daemon, RecvError, Rng, TestDir, BIN, EXIT_TIMEOUT,
};
use serde_json::{json, Value};
use zeroclaw::config::Config;

/// Kills to run, unless the time budget runs out first.
const KILLS: usize = 100;
/// Keeps the test under a minute on a slow machine.
const BUDGET: Duration = Duration::from_secs(45);

/// Batch `k`. Even and odd batches differ in size (a 4 KiB prompt or a
/// short one), so a torn or partly written file cannot pass for either.
fn batch(k: u64) -> Vec<(&'static str, Value)> {
    let prompt = if k.is_multiple_of(2) {
        format!("A-{k}-{}", "a".repeat(4096))
    } else {
        format!("B-{k}")
    };
    vec![
        ("daemon.ask_timeout_secs", json!(k + 1)),
        ("agents.echo.system_prompt", json!(prompt)),
        ("agents.echo.env", json!({"MARK": k.to_string()})),
        ("agents.echo.chunk_chars", json!(k + 1)),
        ("daemon.approval_timeout_secs", json!(k + 2)),
    ]
}

/// The batch `config` holds, if it holds exactly one complete batch.
fn batch_of(config: &Config) -> Result<u64, String> {
    let k = u64::from(config.daemon.ask_timeout_secs)
        .checked_sub(1)
        .ok_or("ask_timeout_secs = 0")?;
    let echo = config.agents.get("echo").ok_or("no echo agent")?;
    let expect = batch(k);
    let prompt = expect[1].1.as_str().unwrap();
    let ok = echo.system_prompt == prompt
        && echo.env.get("MARK").map(String::as_str) == Some(k.to_string().as_str())
        && echo.env.len() == 1
        && u64::from(echo.chunk_chars) == k + 1
        && u64::from(config.daemon.approval_timeout_secs) == k + 2;
    if ok {
        Ok(k)
    } else {
        Err(format!(
            "a mix of batches: ask_timeout_secs says {k}, env {:?}, chunk_chars {}, approval {}, prompt {:?}…",
            echo.env,
            echo.chunk_chars,
            config.daemon.approval_timeout_secs,
            echo.system_prompt.chars().take(12).collect::<String>()
        ))
    }
}

/// The batch in `config.toml`; panics with the file if it is not one.
fn batch_on_disk(cfg: &Path) -> u64 {
    let bytes = config_bytes(cfg);
    assert!(!bytes.is_empty(), "config.toml is empty");
    let text = String::from_utf8(bytes).expect("config.toml is UTF-8");
    let config = Config::from_toml_str(&text)
        .unwrap_or_else(|e| panic!("config.toml does not load ({e}):\n{text}"));
    batch_of(&config).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The batch the running daemon holds.
fn batch_running(c: &mut Client) -> u64 {
    let k = get(c, "daemon.ask_timeout_secs").as_u64().unwrap() - 1;
    assert_eq!(get(c, "agents.echo.chunk_chars"), k + 1);
    assert_eq!(get(c, "daemon.approval_timeout_secs"), k + 2);
    assert_eq!(get(c, "agents.echo.env"), json!({"MARK": k.to_string()}));
    assert_eq!(get(c, "agents.echo.system_prompt"), batch(k)[1].1);
    k
}

/// What one writer saw before the daemon died.
#[derive(Debug, Default)]
struct Writer {
    /// The highest batch sent.
    sent: AtomicU64,
    /// The highest batch acknowledged.
    acked: AtomicU64,
    /// Acknowledgements.
    commits: AtomicU64,
}

/// Commits batches `first..` until the connection dies; returns any error
/// answer (there must be none).
fn write_batches(mut c: Client, first: u64, w: Arc<Writer>) -> Option<String> {
    let mut k = first;
    loop {
        let sets: Vec<Value> = batch(k)
            .into_iter()
            .map(|(p, v)| json!({"prop": p, "value": v}))
            .collect();
        let frame = json!({"jsonrpc": "2.0", "method": "config/set-many", "params": {"sets": sets}, "id": k});
        w.sent.store(k, Ordering::SeqCst);
        let mut line = frame.to_string().into_bytes();
        line.push(b'\n');
        if c.stream.write_all(&line).is_err() {
            return None;
        }
        match c.try_recv_line(Duration::from_secs(20)) {
            Ok(answer) => {
                let v: Value = serde_json::from_str(&answer).expect("answer is JSON");
                if v["result"]["set"] != true || v["id"] != k {
                    return Some(answer);
                }
                w.acked.store(k, Ordering::SeqCst);
                w.commits.fetch_add(1, Ordering::SeqCst);
            }
            Err(RecvError::Eof(_) | RecvError::Io(_)) => return None,
            Err(RecvError::Timeout(_)) => return Some(format!("no answer to batch {k}")),
        }
        k += 1;
    }
}

#[test]
fn sigkill_during_config_commits_leaves_one_complete_committed_state() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    let mut rng = Rng::new(u64::from(std::process::id()) * 7919 + 1);
    let started = Instant::now();

    // Batch 0, committed cleanly.
    let mut on_disk = {
        let d = Daemon::builder().config_dir(&cfg).spawn();
        let mut c = d.client();
        let v = set_many(&mut c, &batch(0));
        assert_eq!(v["result"]["set"], true, "{v}");
        batch_on_disk(&cfg)
    };
    assert_eq!(on_disk, 0);

    let mut next = 1u64;
    let (mut kills, mut commits, mut in_flight, mut tmp_left, mut newer) = (0, 0, 0, 0, 0);
    while kills < KILLS && started.elapsed() < BUDGET {
        let mut d = Daemon::builder().config_dir(&cfg).spawn();
        let mut c = d.client();
        // The restarted daemon runs with exactly what the file holds.
        assert_eq!(batch_running(&mut c), on_disk, "after {kills} kills");

        let w = Arc::new(Writer::default());
        w.acked.store(on_disk, Ordering::SeqCst);
        w.sent.store(on_disk, Ordering::SeqCst);
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (w, done) = (w.clone(), done.clone());
            let first = next;
            std::thread::spawn(move || {
                let r = write_batches(c, first, w);
                done.store(true, Ordering::SeqCst);
                r
            })
        };
        // Let at least one commit through, then kill at a random moment.
        let deadline = Instant::now() + Duration::from_secs(20);
        while w.commits.load(Ordering::SeqCst) == 0 {
            assert!(!done.load(Ordering::SeqCst), "the writer stopped early");
            assert!(Instant::now() < deadline, "no commit within 20 s");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(rng.range(0, 40_000) as u64));
        d.kill9();
        kills += 1;
        if let Some(e) = writer.join().expect("the writer thread") {
            panic!("a commit failed: {e}");
        }
        let (sent, acked) = (
            w.sent.load(Ordering::SeqCst),
            w.acked.load(Ordering::SeqCst),
        );
        commits += w.commits.load(Ordering::SeqCst);
        if sent > acked {
            in_flight += 1;
        }
        if cfg.join("config.toml.tmp").exists() {
            tmp_left += 1;
        }

        // Exactly one complete batch, at least the last acknowledged one and
        // at most the last one sent (the one in flight may or may not land).
        let k = batch_on_disk(&cfg);
        assert!(
            acked <= k && k <= sent,
            "kill {kills}: config.toml holds batch {k}; acknowledged {acked}, sent {sent}"
        );
        if k > acked {
            newer += 1;
        }
        on_disk = k;
        next = sent + 1;
    }

    // After the last kill: the daemon starts with the file's state, and its
    // next commit leaves no temporary file behind.
    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert_eq!(batch_running(&mut c), on_disk);
    let v = set_many(&mut c, &batch(next));
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(batch_on_disk(&cfg), next);
    assert!(!cfg.join("config.toml.tmp").exists());

    let _ = writeln!(
        io::stderr(),
        "config crash loop: {kills} kills in {:.1} s, {commits} commits acknowledged, \
         {in_flight} kills with a batch in flight ({newer} of which had reached config.toml), \
         {tmp_left} kills left a config.toml.tmp behind",
        started.elapsed().as_secs_f64()
    );
    assert!(
        kills >= 20,
        "only {kills} kills fit in {BUDGET:?}: the loop proves little"
    );
}

/// Limits the size of the files `pid` may write (`RLIMIT_FSIZE`): a write
/// past `bytes` kills the process with `SIGXFSZ`, exactly there. This turns
/// "killed in the middle of writing a file" into a deterministic test.
fn limit_file_size(pid: u32, bytes: u64) {
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: prlimit reads `lim` and writes nothing (no old-limit pointer).
    let r = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, 0, "prlimit: {}", io::Error::last_os_error());
}

#[test]
fn a_crash_in_the_middle_of_writing_config_toml_tmp_keeps_the_committed_file() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    let mut d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    let v = set_many(&mut c, &batch(1));
    assert_eq!(v["result"]["set"], true, "{v}");
    let committed = config_bytes(&cfg);
    assert!(committed.len() < 1024, "{} bytes", committed.len());

    // Batch 2 carries a 4 KiB prompt: the daemon dies after writing the
    // first KiB of config.toml.tmp.
    limit_file_size(d.pid, 1024);
    let sets: Vec<Value> = batch(2)
        .into_iter()
        .map(|(p, v)| json!({"prop": p, "value": v}))
        .collect();
    c.send_json(
        &json!({"jsonrpc": "2.0", "method": "config/set-many", "params": {"sets": sets}, "id": 2}),
    );
    c.expect_eof(Duration::from_secs(10));
    let status = d.wait_exit(EXIT_TIMEOUT).expect("the daemon exits");
    assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{status:?}");
    let tmp = cfg.join("config.toml.tmp");
    assert_eq!(
        std::fs::metadata(&tmp).map(|m| m.len()).ok(),
        Some(1024),
        "the crash happened inside the temporary file"
    );
    assert_eq!(config_bytes(&cfg), committed);

    // The next start reads config.toml, not the torn temporary file, and
    // its next commit replaces the leftover.
    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert_eq!(batch_running(&mut c), 1);
    let v = set_many(&mut c, &batch(4));
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(batch_on_disk(&cfg), 4);
    assert!(!tmp.exists());
}

#[test]
fn a_crash_while_creating_the_default_config_toml_is_not_fatal_to_later_starts() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    // First start on an empty config dir, killed (SIGXFSZ) at its first
    // write into a regular file: the default config.toml.
    let mut cmd = Command::new(BIN);
    cmd.arg("daemon").arg("--config-dir").arg(&cfg);
    hermetic_env(&mut cmd, dir.path());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe and only reads `lim`.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawning the daemon");
    let status = wait_timeout(&mut child, EXIT_TIMEOUT).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("the daemon did not die at its first file write")
    });
    assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{status:?}");

    // What the crash left must not be a half-created config.toml ...
    if let Ok(bytes) = std::fs::read(cfg.join("config.toml")) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            Config::from_toml_str(&text).is_ok_and(|c| c.agents.contains_key("echo")),
            "config.toml left by the crash: {text:?}"
        );
    }
    // ... and the next start works with no setup, as §2.1 promises.
    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert_eq!(get(&mut c, "agents.echo.backend"), "echo");
}
