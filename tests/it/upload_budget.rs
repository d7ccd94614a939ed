//! Staged uploads charged to the daemon-wide memory budget
//! (docs/reliability.md "Memory budget"): each accepted chunk counts while
//! staged; over the budget a chunk is refused with `-32004`
//! `{"limit":"memory"}` and the upload stays as it was; the bytes are given
//! back when the upload is committed or its connection closes.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::memory_exceeded;
use common::files::*;
use common::start::{write_config, Env, ECHO_ONLY};
use common::wait::eventually;
use common::{DaemonBuilder, TestDir};

use serde_json::json;
use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// A daemon with a memory budget of `mib` MiB (by the environment).
fn with_budget(mib: usize) -> Env {
    let dir = TestDir::new();
    write_config(&dir.config_dir(), ECHO_ONLY);
    let daemon = DaemonBuilder::new()
        .config_dir(dir.config_dir())
        .env("ZEROCLAW_MEMORY_BUDGET_MIB", mib.to_string())
        .spawn();
    Env { daemon, dir }
}

#[track_caller]
fn assert_memory(v: &serde_json::Value, mib: usize) {
    memory_exceeded(&err_of(v), (mib * MIB) as u64);
}

#[test]
fn staged_chunks_count_against_the_memory_budget_until_commit_or_close() {
    // 4 MiB: two staged 1 MiB chunks, the ~1.4 MiB frame of a third and its
    // decoded 1 MiB do not fit (the frame is charged while in flight).
    let d = with_budget(4);
    let _s = d.session_client("s", "chat");
    let x = pattern(7, 3 * CHUNK);
    let mut a = d.client();
    let ua = begin_ok(&mut a, json!({"session_id": "s", "size_bytes": x.len()}));
    chunk_ok(&mut a, &ua, 0, &x[..CHUNK]);
    chunk_ok(&mut a, &ua, CHUNK as u64, &x[CHUNK..2 * CHUNK]);
    assert_memory(&chunk(&mut a, &ua, 2 * CHUNK as u64, &x[2 * CHUNK..]), 4);
    // Consistent after the refusal: still 2 MiB received, a retry of the
    // second chunk is a duplicate, the commit says incomplete, nothing stored.
    assert_eq!(
        res_of(&chunk(&mut a, &ua, CHUNK as u64, &x[CHUNK..2 * CHUNK])),
        json!({"upload_id": ua, "received_bytes": 2 * CHUNK, "duplicate": true})
    );
    assert_error_exact(
        &err_of(&commit(&mut a, &ua)),
        -32602,
        Some(&format!(
            "incomplete upload: received {} of {}",
            2 * CHUNK,
            3 * CHUNK
        )),
        Some(json!({"reason": "incomplete", "received_bytes": 2 * CHUNK, "size_bytes": 3 * CHUNK})),
    );
    assert!(tree(&d.uploads()).is_empty());

    // Another connection's chunk does not fit beside a's 2 MiB either.
    let y = pattern(8, CHUNK);
    let mut b = d.client();
    let ub = begin_ok(&mut b, json!({"session_id": "s", "size_bytes": y.len()}));
    assert_memory(&chunk(&mut b, &ub, 0, &y), 4);
    // a's connection closes: its staged bytes are given back.
    drop(a);
    eventually(
        "b's chunk admitted once a is gone",
        Duration::from_secs(10),
        || chunk(&mut b, &ub, 0, &y).get("result").cloned(),
    );
    let stored = res_of(&commit(&mut b, &ub));
    assert_eq!(stored["size_bytes"], CHUNK, "{stored}");
    // Committed: its 1 MiB is given back too, so 2 MiB fit again.
    let z = pattern(9, 2 * CHUNK);
    let uc = begin_ok(&mut b, json!({"session_id": "s", "size_bytes": z.len()}));
    chunk_ok(&mut b, &uc, 0, &z[..CHUNK]);
    chunk_ok(&mut b, &uc, CHUNK as u64, &z[CHUNK..]);
    assert_eq!(res_of(&commit(&mut b, &uc))["size_bytes"], 2 * CHUNK);
}
