//! The daemon-wide memory budget
//! (docs/reliability.md "Memory budget"): over it, new work is refused with
//! `-32004` `{"limit":"memory"}`, never a crash; under `ulimit -v 2 GiB`
//! every memory attack we know leaves the daemon up and answering, its
//! peak RSS under the stated bound (budget + 512 MiB).

// Unix only: ulimit -v (setrlimit), /proc/self/pagemap and the daemon's memory from /proc.

use crate::common;

use common::{Client, Daemon, DaemonBuilder, MAX_FRAME};
use serde_json::{json, Value};

const GIB: u64 = 1024 * 1024 * 1024;

/// A prompt frame of about 8 MiB (a text line the turn would echo).
fn big_prompt(sid: &str, id: &str) -> Vec<u8> {
    let head = format!(
        r#"{{"jsonrpc":"2.0","method":"session/prompt","params":{{"session_id":"{sid}","prompt":""#
    );
    let tail = format!(r#""}},"id":"{id}"}}"#);
    let mut f = Vec::with_capacity(MAX_FRAME + 1);
    f.extend_from_slice(head.as_bytes());
    f.resize(MAX_FRAME - 64 - tail.len(), b'x');
    f.extend_from_slice(tail.as_bytes());
    f.push(b'\n');
    f
}

/// Starts `::sleep` on a new session `sid` of `c`, then queues `n` 8 MiB
/// prompts behind it without reading; their ids.
fn queue_big_prompts(c: &mut Client, sid: &str, n: usize) -> Vec<Value> {
    c.new_session(sid, "chat");
    c.start_prompt(sid, "::sleep 600000");
    (0..n)
        .map(|i| {
            let id = format!("{sid}-big{i}");
            c.send_raw(&big_prompt(sid, &id));
            json!(id)
        })
        .collect()
}

/// Runs one prompt on `sid` to its answer (big turns: a long deadline, and
/// the updates are skipped unparsed); the answer.
fn big_turn(c: &mut Client, sid: &str, prompt: &str) -> Value {
    let id = c.start_prompt(sid, prompt);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = c.try_recv_line(left).expect("the turn's frames");
        if line.starts_with(r#"{"jsonrpc":"2.0","method":"session/update""#) {
            continue;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

fn daemon(budget_mib: Option<u64>) -> Daemon {
    let mut b = DaemonBuilder::new().address_space_limit(2 * GIB);
    if let Some(m) = budget_mib {
        b = b.env("ZEROCLAW_MEMORY_BUDGET_MIB", m.to_string());
    }
    b.spawn()
}

#[test]
fn over_the_budget_new_work_is_refused_with_memory_and_admitted_again_after() {
    let d = daemon(Some(64));
    let mut a = d.client();
    let mut b = d.client();
    let ids_a = queue_big_prompts(&mut a, "qa", 5);
    let ids_b = queue_big_prompts(&mut b, "qb", 5);
    // 10 frames of ~8 MiB against 64 MiB while a's are held: some of b's
    // are refused at once, each with the budget named.
    let (_, refused) = b.until("a prompt refused for memory", |f| {
        f.method().is_none() && f.v["error"]["code"] == -32004
    });
    let e = refused.error();
    assert_eq!(
        e["data"],
        json!({"limit": "memory", "max": 64 * 1024 * 1024}),
        "{e}"
    );
    assert_eq!(e["message"], "memory exceeded");
    assert!(ids_b.contains(&refused.v["id"]), "{}", refused.raw);
    // Closing gives every frame back.
    for (c, sid) in [(&mut a, "qa"), (&mut b, "qb")] {
        let close = c.send("session/close", json!({ "session_id": sid }));
        c.until_answer(&close);
    }
    let _ = ids_a;
    // Everything given back: new work is admitted again.
    let mut c = d.session_client("after", "chat");
    assert_eq!(c.prompt("after", "ok").result()["content"], "ok");
}

#[test]
fn every_memory_attack_under_ulimit_v_2_gib_leaves_the_daemon_up() {
    let d = daemon(None);
    // 1. The ::context bomb (bounded at 16 MiB an item, compacted by bytes).
    let mut c = d.session_client("bomb", "acp");
    for _ in 0..16 {
        let v = big_turn(&mut c, "bomb", "::chunk 65536\n::context");
        assert_eq!(v["result"]["stop_reason"], "end_turn", "{}", v["error"]);
    }
    // 2. One 16 MB ::repeat turn.
    c.new_session("rep", "acp");
    let v = big_turn(&mut c, "rep", "::chunk 65536\n::repeat 16000000 y");
    assert_eq!(v["result"]["stop_reason"], "end_turn", "{}", v["error"]);
    // 3. An endless file in file/attach path mode.
    let v = c.call(
        "file/attach",
        json!({"session_id": "rep", "files": [{"path": "/proc/self/pagemap"}]}),
        json!("attach"),
    );
    assert_eq!(v["error"]["data"]["reason"], "file_too_large", "{v}");
    // 4. Three connections with 7 queued 8 MiB prompts each.
    let mut queued: Vec<(Client, Vec<Value>)> = (0..3)
        .map(|i| {
            let mut q = d.client();
            let ids = queue_big_prompts(&mut q, &format!("q{i}"), 7);
            (q, ids)
        })
        .collect();
    // 5. A client that never reads, flooding.
    let mut stalled = d.session_client("flood", "chat");
    stalled.start_prompt("flood", "::chunk 1000\n::repeat 16000000 z");

    // Still up and answering everyone else.
    let mut probe = d.client();
    assert!(probe.status().is_object());
    for (i, (q, ids)) in queued.iter_mut().enumerate() {
        q.send("session/close", json!({"session_id": format!("q{i}")}));
        q.until_all(ids);
    }
    probe.ok("session/close", json!({"session_id": "flood"}));
    assert!(probe.status().is_object());
    let peak = d.peak_rss_kib().unwrap() / 1024;
    eprintln!("all attacks under ulimit -v 2 GiB: peak RSS {peak} MiB");
    assert!(
        peak < 1024 + 512,
        "peak RSS {peak} MiB over the stated bound"
    );
}

#[test]
fn seven_queued_8_mib_prompts_cost_about_their_frames() {
    let d = daemon(None);
    let mut c = d.session_client("q", "chat");
    c.start_prompt("q", "::sleep 600000");
    assert!(c.status().is_object());
    let before = d.rss_kib().unwrap();
    let ids: Vec<Value> = (0..7)
        .map(|i| {
            let id = format!("big{i}");
            c.send_raw(&big_prompt("q", &id));
            json!(id)
        })
        .collect();
    // Every frame is read and queued once `status` behind them is answered.
    c.send_line(r#"{"jsonrpc":"2.0","method":"status","id":"status"}"#);
    c.until("status behind the prompts", |f| f.v["id"] == "status");
    let grown = (d.rss_kib().unwrap() - before) / 1024;
    let frames = 7 * MAX_FRAME as u64 / (1024 * 1024);
    eprintln!("7 queued 8 MiB prompts: RSS +{grown} MiB for {frames} MiB of frames");
    // The frame is freed once its prompt is decoded: ~1.3x, not 2.1x.
    assert!(
        grown * 10 < frames * 17,
        "RSS grew {grown} MiB for {frames} MiB"
    );
    c.send("session/close", json!({"session_id": "q"}));
    c.until_all(&ids);
}
