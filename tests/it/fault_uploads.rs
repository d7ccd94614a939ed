//! Crash safety of stored uploads (§8.18.4 step 3), from a finding of
//! `scripts/fault_campaign.sh` (docs/reliability.md): the store step writes
//! `uploads/.upload-<pid>-<run>-<nonce>.tmp`, fsyncs it and renames it over
//! `<sha256>.<ext>`. A SIGKILL between the create and the rename leaves the
//! temporary file, partial or whole, in the agent's workspace. Until
//! `7cc9a24` nothing ever removed it; then every store step removed the
//! temporaries of writers that no longer exist; now a daemon also removes
//! them at startup, before its ready line, and a restarted daemon that got
//! its predecessor's pid tells them apart by the per-run token.
//!
//! The first test watches `uploads/` while `zeroclaw upload` stores a 10 MiB
//! file and kills the daemon the moment a temporary file appears (retrying
//! when the rename wins the race), restarts it, and requires that no
//! `.upload-*.tmp` is left once it is ready, and still none after another
//! store, every stored file having the SHA-256 its name says. The second
//! plants leftovers of dead writers before a start.

// Unix only: the startup sweep tells a dead writer's temporary by kill(pid, 0); Windows keeps other processes' temporaries (src/files/write.rs).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{wait_timeout, Daemon, DaemonBuilder, Rng, TestDir, EXIT_TIMEOUT};
use serde_json::json;
use sha2::{Digest, Sha256};

/// Uploads to try before giving up on catching the store step.
const ATTEMPTS: usize = 30;
/// Bytes per upload: the 10 MiB maximum, so the write takes a while.
const SIZE: usize = 10 * 1024 * 1024;

fn temporaries(uploads: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(uploads) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".upload-") && n.ends_with(".tmp"))
        })
        .collect()
}

fn live_session(d: &Daemon) {
    let mut c = d.client();
    let r = c.call(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "up", "chat_mode": "chat"}),
        json!("new"),
    );
    assert!(r.get("result").is_some(), "session/new: {r}");
}

fn upload(d: &Daemon, file: &Path) -> Child {
    let mut cmd = d.cli();
    cmd.arg("upload").arg("up").arg(file);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.spawn().expect("spawning zeroclaw upload")
}

fn payload(rng: &mut Rng, path: &Path) {
    let mut bytes = Vec::with_capacity(SIZE);
    while bytes.len() < SIZE {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn a_kill_during_the_store_step_leaves_no_partial_file() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    let uploads = cfg.join("agents/echo/workspace/uploads");
    let file = dir.path().join("payload.bin");
    let mut rng = Rng::new(0x0b5e_55ed);
    let mut d = DaemonBuilder::new().config_dir(&cfg).spawn();
    let mut caught = Vec::new();
    for attempt in 0..ATTEMPTS {
        live_session(&d);
        payload(&mut rng, &file);
        let mut client = upload(&d, &file);
        // Kill the daemon the moment the store step's temporary file exists.
        let deadline = Instant::now() + Duration::from_secs(60);
        let killed = loop {
            if !temporaries(&uploads).is_empty() {
                d.kill9();
                break true;
            }
            if client.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        if killed {
            let _ = wait_timeout(&mut client, EXIT_TIMEOUT);
        } else {
            let _ = client.kill();
            let _ = client.wait();
            d.kill9();
        }
        caught = temporaries(&uploads);
        d = DaemonBuilder::new().config_dir(&cfg).spawn();
        if !caught.is_empty() {
            eprintln!("attempt {attempt}: killed with {caught:?} in uploads/");
            break;
        }
    }
    assert!(
        !caught.is_empty(),
        "no kill landed in the store step in {ATTEMPTS} attempts: nothing shown"
    );
    assert_eq!(
        temporaries(&uploads),
        Vec::<PathBuf>::new(),
        "the restarted daemon is ready with its predecessor's partial upload still in uploads/"
    );

    // The restarted daemon stores another file; nothing partial may remain.
    live_session(&d);
    payload(&mut rng, &file);
    let mut client = upload(&d, &file);
    let status = wait_timeout(&mut client, Duration::from_secs(60)).expect("upload hangs");
    assert!(status.success(), "the upload after the restart failed");
    for entry in std::fs::read_dir(&uploads).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(".upload-") {
            continue;
        }
        let sha = format!("{:x}", Sha256::digest(std::fs::read(&path).unwrap()));
        assert_eq!(name.split('.').next(), Some(sha.as_str()), "{name}");
    }
    let left: Vec<(String, u64)> = temporaries(&uploads)
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
            )
        })
        .collect();
    assert!(
        left.is_empty(),
        "partial uploads left in {} after a restart and a new store: {left:?}",
        uploads.display()
    );
}

#[test]
fn a_start_removes_dead_writers_temporaries_and_nothing_else() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    // A first start writes the default config; the echo agent's workspace is then known.
    let d = DaemonBuilder::new().config_dir(&cfg).spawn();
    drop(d);
    let uploads = cfg.join("agents/echo/workspace/uploads");
    std::fs::create_dir_all(&uploads).unwrap();
    let dead = uploads.join(".upload-4000000000-0000000000000007-00000000deadbeef.tmp");
    let dead_older_build = uploads.join(".upload-4000000000-00000000deadbeef.tmp");
    // This test process is alive: its (hypothetical) temporary must survive.
    let live = uploads.join(format!(
        ".upload-{}-0000000000000007-00000000deadbeef.tmp",
        std::process::id()
    ));
    let stored = uploads.join("0123.txt");
    for p in [&dead, &dead_older_build, &live, &stored] {
        std::fs::write(p, b"partial").unwrap();
    }
    let _d = DaemonBuilder::new().config_dir(&cfg).spawn();
    assert!(!dead.exists(), "{}", dead.display());
    assert!(!dead_older_build.exists(), "{}", dead_older_build.display());
    assert!(live.exists(), "a live writer's temporary was removed");
    assert_eq!(std::fs::read(&stored).unwrap(), b"partial");
}
