//! Concurrent config writers (§6.8, §8.16 steps 2–3 and 8): batches of
//! different clients serialize under the config write lock, a commit waits
//! for `config.toml.lock`, and permissions are re-resolved once the lock is
//! held.

use crate::common;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::users::{config_bytes, set_many};
use common::Daemon;
use serde_json::{json, Value};
use zeroclaw::config::Config;

/// Batch `i` of writer `who`: four props that must always land together.
fn batch(who: u32, i: u32) -> Vec<(&'static str, Value)> {
    let n = who * 100_000 + i + 1;
    vec![
        ("daemon.ask_timeout_secs", json!(n)),
        ("agents.echo.system_prompt", json!(format!("{who}-{i}"))),
        ("daemon.approval_timeout_secs", json!(n)),
        ("agents.echo.chunk_chars", json!(n)),
    ]
}

/// `(who, i)` of the batch a config holds; panics on a mix.
fn which(ask: u64, prompt: &str, approval: u64, chunk: u64, context: &str) -> (u32, u32) {
    let (who, i) = prompt
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .unwrap_or_else(|| panic!("{context}: prompt {prompt:?}"));
    let n = u64::from(who * 100_000 + i + 1);
    assert!(
        ask == n && approval == n && chunk == n,
        "{context}: batches interleaved: prompt {prompt:?}, ask {ask}, approval {approval}, chunk {chunk}"
    );
    (who, i)
}

fn which_running(all: &Value) -> (u32, u32) {
    which(
        all["daemon"]["ask_timeout_secs"].as_u64().unwrap(),
        all["agents"]["echo"]["system_prompt"].as_str().unwrap(),
        all["daemon"]["approval_timeout_secs"].as_u64().unwrap(),
        all["agents"]["echo"]["chunk_chars"].as_u64().unwrap(),
        "config/get",
    )
}

fn which_on_disk(cfg: &Path) -> (u32, u32) {
    let text = String::from_utf8(config_bytes(cfg)).unwrap();
    let c = Config::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let echo = &c.agents["echo"];
    which(
        c.daemon.ask_timeout_secs.into(),
        &echo.system_prompt,
        c.daemon.approval_timeout_secs.into(),
        echo.chunk_chars.into(),
        "config.toml",
    )
}

#[test]
fn batches_of_two_clients_serialize_without_interleaving() {
    const BATCHES: u32 = 40;
    let (d, mut first) = Daemon::with_client();
    let v = set_many(&mut first, &batch(0, 0));
    assert_eq!(v["result"]["set"], true, "{v}");

    let stop = Arc::new(AtomicBool::new(false));
    // A reader checks every snapshot of the running config and of the file.
    let reader = {
        let (mut c, stop, cfg) = (d.client(), stop.clone(), d.config_dir.clone());
        std::thread::spawn(move || {
            let mut seen = 0u32;
            while !stop.load(Ordering::SeqCst) {
                which_running(&c.ok("config/get", json!({})));
                which_on_disk(&cfg);
                seen += 1;
            }
            seen
        })
    };
    let writers: Vec<_> = [1u32, 2]
        .into_iter()
        .map(|who| {
            let mut c = d.client();
            std::thread::spawn(move || {
                for i in 0..BATCHES {
                    let v = set_many(&mut c, &batch(who, i));
                    assert_eq!(v["result"]["set"], true, "writer {who} batch {i}: {v}");
                    // My batch landed whole; another may already follow it.
                    which_running(&c.ok("config/get", json!({})));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("a writer failed");
    }
    stop.store(true, Ordering::SeqCst);
    let snapshots = reader.join().expect("the reader failed");
    assert!(snapshots > 0);

    // The last batch of one of the writers won, in memory and on disk alike.
    let last = which_running(&first.ok("config/get", json!({})));
    assert!(
        last == (1, BATCHES - 1) || last == (2, BATCHES - 1),
        "{last:?}"
    );
    assert_eq!(which_on_disk(&d.config_dir), last);
}

/// The caller's permissions re-checked under the lock: the test maps its
/// own uid to a roster user, which a named pipe cannot carry (no peer uid).
#[cfg(unix)]
mod by_uid {
    use super::*;
    use common::assert::err_of;
    use common::errors::{missing_grant, revoked};
    use common::euid;
    use common::start::write_config;
    use common::users::{digest, get, initialize, ADMIN_TOKEN};
    use common::{Client, TestDir};
    use std::fs::{File, OpenOptions};
    use std::time::Duration;

    /// Holds an exclusive lock on `<config_dir>/config.toml.lock` until dropped.
    fn hold_file_lock(cfg: &Path) -> File {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(cfg.join("config.toml.lock"))
            .expect("opening config.toml.lock");
        f.lock().expect("locking config.toml.lock");
        f
    }

    fn self_roster(dir: &TestDir) -> Daemon {
        let text = format!(
            r#"schema_version = 1
[security]
trust_daemon_uid = false
[gateway]
paired_tokens = ["{}"]
[agents.echo]
backend = "echo"
[permission_profiles.me]
config_write_paths = ["agents.echo.*"]
grants = {{ system = ["read"], config = ["read", "update"] }}
[users.me]
uid = {}
permission_profiles = ["me"]
"#,
            digest(ADMIN_TOKEN),
            euid()
        );
        write_config(&dir.config_dir(), &text);
        Daemon::builder().config_dir(dir.config_dir()).spawn()
    }

    /// Sends `config/set-many` without waiting for the answer; returns its id.
    fn send_set_many(c: &mut Client, id: &str, sets: &[(&str, Value)]) {
        let sets: Vec<Value> = sets
            .iter()
            .map(|(p, v)| json!({"prop": p, "value": v}))
            .collect();
        c.send_json(
        &json!({"jsonrpc": "2.0", "method": "config/set-many", "params": {"sets": sets}, "id": id}),
    );
    }

    /// Waits until everything sent on `c` so far has passed the gate: `status`
    /// is answered concurrently while a set-many waits (§3.7), and frames are
    /// dispatched in order.
    fn passed_the_gate(c: &mut Client) {
        let v = c.call_frame("status", json!({}));
        assert!(v.get("result").is_some(), "{v}");
    }

    #[test]
    fn a_commit_waits_for_the_file_lock_then_rechecks_the_callers_permissions() {
        let dir = TestDir::new();
        let d = self_roster(&dir);
        let mut admin = d.connect();
        assert_eq!(
            initialize(&mut admin, Some(ADMIN_TOKEN))["result"]["principalId"],
            "shared-operator"
        );
        let mut me = d.connect();
        assert_eq!(
            initialize(&mut me, None)["result"]["principalId"],
            "user:me"
        );
        let before = config_bytes(&d.config_dir);

        // Step 8: while someone else holds config.toml.lock, the admin's commit
        // (which takes away the user's config:update) cannot finish.
        let lock = hold_file_lock(&d.config_dir);
        send_set_many(
            &mut admin,
            "revoke",
            &[(
                "permission_profiles.me.grants",
                json!({"system": ["read"], "config": ["read"]}),
            )],
        );
        admin.expect_silence(Duration::from_millis(300));
        // The user's batch passes the gate under the old policy and queues
        // behind the admin's commit for the config write lock.
        send_set_many(&mut me, "mine", &[("agents.echo.chunk_chars", json!(2))]);
        passed_the_gate(&mut me);
        me.expect_silence(Duration::from_millis(100));
        assert_eq!(config_bytes(&d.config_dir), before);

        drop(lock);
        let v = admin.recv_json();
        assert_eq!(v["id"], "revoke", "{v}");
        assert_eq!(v["result"]["set"], true, "{v}");
        // Step 3, under the lock: the permission revoked while the batch waited
        // rejects the whole batch.
        let v = me.recv_json();
        assert_eq!(v["id"], "mine", "{v}");
        missing_grant(&err_of(&v), "config:update", "config/set-many");
        assert_eq!(get(&mut admin, "agents.echo.chunk_chars"), 16);

        // Same with the whole binding revoked while waiting: `revoked`, and the
        // binding is dropped.
        admin.config_set("permission_profiles.me.grants.config", json!(["update"]));
        let lock = hold_file_lock(&d.config_dir);
        send_set_many(
            &mut admin,
            "revoke-all",
            &[("permission_profiles.me.grants", json!({}))],
        );
        admin.expect_silence(Duration::from_millis(300));
        send_set_many(&mut me, "mine-2", &[("agents.echo.chunk_chars", json!(3))]);
        passed_the_gate(&mut me);
        drop(lock);
        assert_eq!(admin.recv_json()["result"]["set"], true);
        let v = me.recv_json();
        assert_eq!(v["id"], "mine-2", "{v}");
        revoked(&err_of(&v));
        let v = me.call_frame("status", json!({}));
        assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
        assert_eq!(get(&mut admin, "agents.echo.chunk_chars"), 16);
    }
}

#[cfg(windows)]
#[test]
fn a_commit_waits_for_the_file_lock_then_rechecks_the_callers_permissions() {
    common::skip("maps the test's own uid to a roster user; a named pipe carries no uid");
}
