//! `[daemon] memory_budget_mib` (docs/config.md): the daemon-wide memory
//! budget as a config key, 1024 MiB by default, 1–1048576, applied live by
//! `config/set`, admin-only, refused at startup when out of range, and
//! overridden for the process's life by `ZEROCLAW_MEMORY_BUDGET_MIB`.
//! The budget in force is read off the `max` of a `-32004` `memory`
//! refusal of an upload chunk.

use crate::common;
use common::errors::{invalid_config, memory_exceeded};
use common::files::*;
use common::rpc::{call, ok};
use common::start::{config_with, start, write_config, Env};
use common::{Client, Daemon, DaemonBuilder, TestDir};

use serde_json::{json, Value};

const MIB: u64 = 1024 * 1024;

/// Stages a fresh 3 MiB upload on `c` in 1 MiB chunks up to the first
/// refusal; that answer (the test fails if every chunk is accepted).
fn first_refused_chunk(c: &mut Client) -> Value {
    let x = pattern(5, 3 * CHUNK);
    let u = begin_ok(c, json!({"session_id": "s", "size_bytes": x.len()}));
    for (i, piece) in x.chunks(CHUNK).enumerate() {
        let v = chunk(c, &u, (i * CHUNK) as u64, piece);
        if v.get("error").is_some() {
            return v;
        }
    }
    panic!("every chunk of 3 MiB was accepted");
}

/// Stages and commits a 3 MiB upload on `c`: every chunk must fit.
fn three_mib_fit(c: &mut Client) {
    let x = pattern(6, 3 * CHUNK);
    let u = begin_ok(c, json!({"session_id": "s", "size_bytes": x.len()}));
    for (i, piece) in x.chunks(CHUNK).enumerate() {
        chunk_ok(c, &u, (i * CHUNK) as u64, piece);
    }
    assert_eq!(res_of(&commit(c, &u))["size_bytes"], 3 * CHUNK);
}

#[track_caller]
fn assert_memory(v: &Value, mib: u64) {
    memory_exceeded(&err_of(v), mib * MIB);
}

/// `daemon.memory_budget_mib` as `config/get` reads it.
fn budget_key(c: &mut Client) -> Value {
    ok(c, "config/get", json!({"prop": "daemon.memory_budget_mib"}))["value"].clone()
}

/// `config/set` of `daemon.memory_budget_mib`; the result.
fn set_budget(c: &mut Client, mib: u64) -> Value {
    ok(
        c,
        "config/set",
        json!({"prop": "daemon.memory_budget_mib", "value": mib}),
    )
}

fn session(d: &Daemon) -> Client {
    d.session_client("s", "chat")
}

#[test]
fn the_config_key_sets_the_budget_and_config_set_applies_it_live() {
    let d = start(&config_with("[daemon]\nmemory_budget_mib = 4\n"));
    let mut c = session(&d);
    assert_eq!(budget_key(&mut c), 4);
    // Two chunks (2 MiB) stay staged on c; the third's frame and bytes do not fit.
    assert_memory(&first_refused_chunk(&mut c), 4);
    // Raised live: 3 MiB more fit beside them.
    let r = set_budget(&mut c, 64);
    assert_eq!(r, json!({"prop": "daemon.memory_budget_mib", "set": true}));
    let mut c2 = d.client();
    three_mib_fit(&mut c2);
    // Lowered live: refused again, with the new budget named.
    set_budget(&mut c, 3);
    assert_memory(&first_refused_chunk(&mut c2), 3);
}

#[test]
fn out_of_range_values_are_refused_by_config_set_and_at_startup() {
    let d = start(&config_with(""));
    let mut c = d.client();
    assert_eq!(budget_key(&mut c), 1024);
    for bad in [0u64, 1024 * 1024 + 1] {
        let v = call(
            &mut c,
            "config/set",
            json!({"prop": "daemon.memory_budget_mib", "value": bad}),
        );
        invalid_config(
            &err_of(&v),
            "daemon.memory_budget_mib",
            "must be 1-1048576 (MiB)",
        );
    }
    assert_eq!(budget_key(&mut c), 1024);
    let dir = TestDir::new();
    let text = config_with("[daemon]\nmemory_budget_mib = 0\n");
    write_config(&dir.config_dir(), &text);
    let f = match Daemon::builder().config_dir(dir.config_dir()).try_spawn() {
        Ok(_) => panic!("the daemon started with memory_budget_mib = 0"),
        Err(f) => f,
    };
    assert_eq!(f.status.code(), Some(1));
    assert!(
        f.log.text().contains("daemon.memory_budget_mib"),
        "{}",
        f.log.text()
    );
}

#[test]
fn the_environment_overrides_the_config_key_even_after_config_set() {
    let dir = TestDir::new();
    write_config(
        &dir.config_dir(),
        &config_with("[daemon]\nmemory_budget_mib = 64\n"),
    );
    let daemon = DaemonBuilder::new()
        .config_dir(dir.config_dir())
        .env("ZEROCLAW_MEMORY_BUDGET_MIB", "4")
        .spawn();
    let d = Env { daemon, dir };
    let mut c = session(&d);
    assert_memory(&first_refused_chunk(&mut c), 4);
    set_budget(&mut c, 128);
    assert_memory(&first_refused_chunk(&mut c), 4);
}
