//! Crash durability of checkpoint appends, and their cost.
//!
//! A child process (this test binary, filtered to [`durability_child`])
//! appends checkpoint batches in a loop and is killed with SIGKILL
//! (`TerminateProcess` on Windows); the
//! reopened database must hold a gapless prefix of whole batches, covering
//! at least every batch the child saw commit, and recovery must turn it into
//! a consistent transcript.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::checkpoint::tests::{result, text};
use super::testing::{durable_session, store, TempDir};
use super::{CheckpointEvent, Store};
use crate::faults::Faults;

async fn payloads(store: &Store, row: i64) -> Vec<String> {
    let mut conn = store.pool.acquire().await.unwrap();
    super::checkpoint::checkpoint_payloads(&mut conn, row)
        .await
        .unwrap()
}

/// Environment variable naming the data dir of the durability child.
const CHILD_DIR_ENV: &str = "ZEROCLAW_STORE_DURABILITY_CHILD";

/// Batch `b` of the durability child: `b % 5 + 1` events numbered from
/// `first`, every fifth one a tool result.
fn child_batch(b: usize, first: usize) -> Vec<CheckpointEvent> {
    (first..first + b % 5 + 1)
        .map(|n| {
            if n % 5 == 4 {
                result(&format!("c{n}"), &format!("<{n}>"))
            } else {
                text(&format!("<{n}>"))
            }
        })
        .collect()
}

/// Not a test on its own: the child process of
/// `killed_writer_leaves_a_gapless_prefix`. It appends batches forever,
/// printing the number of committed events after each one.
#[tokio::test]
async fn durability_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    let store = Store::open(std::path::Path::new(&dir), Arc::default())
        .await
        .unwrap();
    let s = store.durable_create("s", "echo", "me", "/w").await.unwrap();
    store.turn_begin(s.row, "t1", "start").await.unwrap();
    let mut committed = 0;
    for b in 0.. {
        let batch = child_batch(b, committed);
        store.checkpoint_append(s.row, &batch).await.unwrap();
        committed += batch.len();
        println!("committed {committed}");
    }
}

#[tokio::test]
async fn killed_writer_leaves_a_gapless_prefix() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = TempDir::new("durability");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::durability_tests::durability_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut reported = 0;
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while reported < 300 && Instant::now() < deadline {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(n) = line.trim().strip_prefix("committed ") {
            reported = n.parse().unwrap();
        }
    }
    child.kill().unwrap(); // SIGKILL (TerminateProcess on Windows)
    child.wait().unwrap();
    assert!(reported >= 300, "the child reported only {reported} events");

    let store = Store::open(dir.path(), Arc::new(Faults::default()))
        .await
        .unwrap();
    let row = store.durable_get("s").await.unwrap().unwrap().row;
    let stored = payloads(&store, row).await;
    assert_eq!(stored[0], r#"{"kind":"user","text":"start"}"#);
    // A batch's consecutive text events are stored as one, so the events
    // are counted from the content: "<0>", "<1>", ... in order.
    let mut joined = String::new();
    let mut stored_results = 0;
    for payload in &stored[1..] {
        let v: serde_json::Value = serde_json::from_str(payload).unwrap();
        match v["kind"].as_str() {
            Some("text") => joined.push_str(v["text"].as_str().unwrap()),
            Some("tool_result") => {
                stored_results += 1;
                joined.push_str(v["output"].as_str().unwrap());
            }
            other => panic!("unexpected event {other:?}: {payload}"),
        }
    }
    let events = joined.matches('<').count();
    assert!(events >= reported, "{events} < {reported}");
    // Every committed batch is whole: the count is a batch boundary.
    let mut boundary = 0;
    let mut b = 0;
    while boundary < events {
        boundary += b % 5 + 1;
        b += 1;
    }
    assert_eq!(boundary, events, "a batch was half written");
    let want: String = (0..events).map(|n| format!("<{n}>")).collect();
    assert_eq!(joined, want);
    assert_eq!(stored_results, events / 5);

    assert!(store.recover(row).await.unwrap());
    assert!(!store.recover(row).await.unwrap());
    let rows = store.durable_transcript(row).await.unwrap();
    assert_eq!(rows.first().unwrap().message.content, "start");
    assert_eq!(rows.last().unwrap().message.content, "Turn interrupted");
    let mut joined = String::new();
    let mut tool_rows = 0;
    for r in &rows[1..rows.len() - 1] {
        match r.message.kind.as_str() {
            "message" => joined.push_str(&r.message.content),
            "tool_result" => {
                tool_rows += 1;
                joined.push_str(&r.message.content);
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(joined, want);
    assert_eq!(tool_rows, events / 5);
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=rows.len() as i64).collect::<Vec<_>>());
}

/// `cargo test --release --lib store::durability_tests::append_timing --
/// --ignored --nocapture`: the cost of one `checkpoint_append` of 1 and of
/// 64 events, to size the group commit.
#[tokio::test]
#[ignore]
async fn append_timing() {
    let (_dir, store, _, s) = durable_session("timing").await;
    store.turn_begin(s.row, "t1", "p").await.unwrap();
    let chunk = "x".repeat(64);
    for n in [1usize, 64] {
        let batch: Vec<_> = (0..n).map(|_| text(&chunk)).collect();
        for _ in 0..50 {
            store.checkpoint_append(s.row, &batch).await.unwrap();
        }
        let iters = 2000 / n.min(8);
        let start = Instant::now();
        for _ in 0..iters {
            store.checkpoint_append(s.row, &batch).await.unwrap();
        }
        let each = start.elapsed() / iters as u32;
        println!("checkpoint_append of {n:>2} event(s): {each:?} per call ({iters} calls)");
    }
}

/// `cargo test --release --lib store::durability_tests::turn_timing --
/// --ignored --nocapture`: one turn of 10,000 one-character text events
/// (the `acp_stream` bench's turn) appended in batches of 512, 64 and 8,
/// then finalized: where the store's share of a durable turn goes.
#[tokio::test]
#[ignore]
async fn turn_timing() {
    let (_dir, store, _) = store("turn-timing").await;
    for (i, group) in [512usize, 64, 8, 512, 64, 8, 10_000]
        .into_iter()
        .enumerate()
    {
        let s = store
            .durable_create(&format!("s{i}"), "echo", "me", "/w")
            .await
            .unwrap();
        let start = Instant::now();
        store.turn_begin(s.row, "t1", "p").await.unwrap();
        let begun = start.elapsed();
        let batch: Vec<_> = (0..group).map(|_| text("x")).collect();
        let mut left = 10_000usize;
        while left > 0 {
            let n = left.min(group);
            store.checkpoint_append(s.row, &batch[..n]).await.unwrap();
            left -= n;
        }
        let appended = start.elapsed();
        let rows = store.turn_finalize(s.row, None).await.unwrap();
        let finalized = start.elapsed();
        assert_eq!(rows[1].message.content.len(), 10_000);
        println!(
            "batches of {group:>3}: begin {begun:?}, appends {:?}, finalize {:?}",
            appended - begun,
            finalized - appended
        );
    }
}
