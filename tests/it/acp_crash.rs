//! Crash recovery of ACP sessions (§9.3, §9.6, §8.3, §8.11): the real
//! daemon is killed with SIGKILL in the middle of a streaming turn and
//! restarted on the same config dir; the transcript must then hold the
//! prompt, every chunk any client was sent (a chunk is committed before its
//! notification), and exactly one `Turn interrupted` marker, however often it
//! is read and whatever triggers the recovery; the rebuilt context never
//! holds the marker.
//!
//! `kill9_campaign` kills at seeded random delays (`ZC_CRASH_SEED`,
//! `ZC_CRASH_ITERS`, default 100 iterations) and prints its outcome counts.

// Unix only: one test stops the daemon gracefully with SIGTERM (AcpEnv::stop).

use crate::common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use common::acp::*;
use common::{RecvError, Rng};
use serde_json::{json, Value};

/// The streamed reply of the campaign's turns: one chunk per character.
const TEXT: &str = "durable chunks, one by one";
/// Milliseconds before each chunk.
const CHUNK_DELAY_MS: u64 = 20;

fn slow_prompt(text: &str, delay_ms: u64) -> String {
    format!("::delay {delay_ms}\n::chunk 1\n{text}")
}

/// Everything a client got from the daemon for one session, up to EOF.
#[derive(Debug, Default)]
struct Seen {
    updates: Vec<Value>,
    answered: bool,
}

impl Seen {
    fn text(&self) -> String {
        chunk_text(&self.updates)
    }

    fn completed(&self) -> bool {
        self.updates
            .iter()
            .any(|u| u["type"] == "turn_complete" && u["outcome"] == "completed")
    }

    fn push(&mut self, v: Value, prompt_id: &Value) {
        if v["method"] == "session/update" {
            self.updates.push(v["params"].clone());
        } else if v["id"] == *prompt_id {
            assert!(v.get("result").is_some(), "the prompt failed: {v}");
            self.answered = true;
        } else {
            panic!("unexpected frame {v}");
        }
    }
}

/// Reads what the daemon sends until `deadline`.
fn read_until(rpc: &mut Rpc, seen: &mut Seen, prompt_id: &Value, deadline: Instant) {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match rpc.read_frame(left) {
            Ok(v) => seen.push(v, prompt_id),
            Err(RecvError::Timeout(_)) => return,
            Err(e) => panic!("reading the turn: {}", common::describe(&e)),
        }
    }
}

/// Reads frames into `seen` while `more` holds, each within the receive bound.
fn read_while(rpc: &mut Rpc, seen: &mut Seen, id: &Value, more: impl Fn(&Seen) -> bool) {
    while more(seen) {
        let v = rpc.read_frame(common::RECV_TIMEOUT).expect("an update");
        seen.push(v, id);
    }
}

/// After the daemon died: what it had written to the socket, up to EOF.
fn drain(rpc: &mut Rpc, seen: &mut Seen, prompt_id: &Value) {
    loop {
        match rpc.read_frame(Duration::from_secs(5)) {
            Ok(v) => seen.push(v, prompt_id),
            Err(RecvError::Eof(rest)) => {
                // A frame cut by the kill is not a frame the client got.
                let _ = rest;
                return;
            }
            Err(e) => panic!("draining after the kill: {}", common::describe(&e)),
        }
    }
}

/// How the recovered session is first touched after the restart.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// `session/messages` (recovery without a live session, §8.11).
    Messages,
    /// `session/prompt` (rehydration, §8.4).
    Prompt,
    /// `session/new` resume (§8.3).
    New,
}

/// What the transcript of one killed turn turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Killed before the begin transaction committed: no rows.
    NotBegun,
    /// Prompt and marker, no text committed.
    InterruptedNoText,
    /// Prompt, partial text, marker.
    InterruptedPartial,
    /// Finalized before the kill: prompt and the whole reply, no marker.
    Completed,
}

/// Checks the recovered rows against what the client saw; classifies them.
fn check_rows(rows: &[Value], prompt: &str, full: &str, seen: &Seen) -> Outcome {
    assert_contiguous(rows);
    let s = shape(rows);
    let seen_text = seen.text();
    if rows.is_empty() {
        assert!(
            seen.updates.is_empty(),
            "the client got updates but nothing was recovered: {:?}",
            seen.updates
        );
        return Outcome::NotBegun;
    }
    assert_eq!(s[0], row("user", "message", prompt), "rows {rows:?}");
    let last = s.last().unwrap();
    if last.1 == "interruption_marker" {
        assert_eq!(*last, row("system", "interruption_marker", INTERRUPTED));
        assert_eq!(markers(rows, INTERRUPTED), 1, "rows {rows:?}");
        assert!(!seen.completed(), "a completed turn got a marker: {rows:?}");
        match s.len() {
            2 => {
                assert_eq!(seen_text, "", "chunks were sent but not recovered");
                Outcome::InterruptedNoText
            }
            3 => {
                let partial = &s[1];
                assert_eq!(
                    (partial.0.as_str(), partial.1.as_str()),
                    ("assistant", "message")
                );
                assert!(
                    partial.2.starts_with(&seen_text),
                    "sent {seen_text:?}, recovered only {:?}",
                    partial.2
                );
                assert!(full.starts_with(&partial.2), "recovered {:?}", partial.2);
                Outcome::InterruptedPartial
            }
            _ => panic!("unexpected recovered rows {rows:?}"),
        }
    } else {
        assert_eq!(
            s,
            vec![
                row("user", "message", prompt),
                row("assistant", "message", full)
            ],
            "rows of a finalized turn"
        );
        assert_eq!(markers(rows, INTERRUPTED), 0);
        Outcome::Completed
    }
}

/// The context a rebuild must produce from `rows` (provider-safe: no system rows).
fn projected(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["role"] != "system")
        .map(|r| ctx(r["role"].as_str().unwrap(), r["content"].as_str().unwrap()))
        .collect()
}

/// Recovers `sid` through `path` and checks the transcript, its stability
/// under repeated reads and a new prompt, and the rebuilt context.
fn recover_and_check(
    env: &AcpEnv,
    sid: &str,
    prompt: &str,
    full: &str,
    seen: &Seen,
    path: Path,
) -> Outcome {
    let mut rpc = env.rpc();
    let (rows, context) = match path {
        Path::Messages => {
            let rows = rpc.messages(sid);
            assert_eq!(rpc.messages(sid), rows, "a second read changed the rows");
            (rows, rpc.context(sid))
        }
        Path::Prompt => {
            let context = rpc.context(sid);
            let all = rpc.messages(sid);
            let rows = all[..all.len() - 2].to_vec();
            (rows, context)
        }
        Path::New => {
            let r = rpc.new_session(sid, "acp");
            assert_eq!(r["resumed"], true, "{r}");
            let rows = rpc.messages(sid);
            assert_eq!(r["message_count"], json!(rows.len()), "{r}");
            (rows, rpc.context(sid))
        }
    };
    let outcome = check_rows(&rows, prompt, full, seen);
    assert_eq!(context, projected(&rows), "rebuilt context of {rows:?}");
    // The prompt added its two rows after the recovered ones, and nothing else.
    let after = rpc.messages(sid);
    assert_contiguous(&after);
    assert_eq!(after[..rows.len()], rows[..], "recovered rows changed");
    assert_eq!(after.len(), rows.len() + 2, "{after:?}");
    assert_eq!(
        shape(&after[rows.len()..])[0],
        row("user", "message", "::context")
    );
    assert_eq!(after[rows.len() + 1]["role"], "assistant");
    let want = usize::from(matches!(
        outcome,
        Outcome::InterruptedNoText | Outcome::InterruptedPartial
    ));
    assert_eq!(markers(&after, INTERRUPTED), want, "{after:?}");
    assert_eq!(
        rpc.messages(sid),
        after,
        "a read after the prompt changed the rows"
    );
    outcome
}

fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn kill9_campaign() {
    let seed = env_u64("ZC_CRASH_SEED", 0x5eed_ac90);
    let iters = env_u64("ZC_CRASH_ITERS", 100);
    let budget = Duration::from_secs(env_u64("ZC_CRASH_BUDGET_SECS", 80));
    let mut rng = Rng::new(seed);
    let mut env = AcpEnv::new(&echo_config(""));
    let prompt = slow_prompt(TEXT, CHUNK_DELAY_MS);
    let turn_ms = TEXT.chars().count() as u64 * CHUNK_DELAY_MS;
    let started = Instant::now();
    let mut outcomes: BTreeMap<Outcome, u32> = BTreeMap::new();
    let mut paths = [0u32; 3];
    let mut done = 0;
    // Chunks the client received (before the kill or drained after it), and
    // chunks recovered although their notification was never written.
    let (mut seen_chunks, mut unsent_chunks) = (0, 0);
    for i in 0..iters {
        if started.elapsed() > budget {
            break;
        }
        let sid = format!("crash-{i}");
        let mut rpc = env.rpc();
        rpc.new_session(&sid, "acp");
        // Kill anywhere from right after the prompt is written to a little
        // after the turn ends; one time in ten within 2 ms of the prompt.
        let ms = if rng.range(0, 9) == 0 {
            rng.range(0, 2)
        } else {
            rng.range(0, (turn_ms + 120) as usize)
        };
        let kill_after = Duration::from_millis(ms as u64);
        let id = rpc.start_prompt(&sid, &prompt);
        let sent = Instant::now();
        let mut seen = Seen::default();
        read_until(&mut rpc, &mut seen, &id, sent + kill_after);
        env.kill9();
        drain(&mut rpc, &mut seen, &id);
        drop(rpc);
        env.start();
        let path = match rng.range(0, 2) {
            0 => Path::Messages,
            1 => Path::Prompt,
            _ => Path::New,
        };
        paths[path as usize] += 1;
        let outcome = recover_and_check(&env, &sid, &prompt, TEXT, &seen, path);
        seen_chunks += seen.text().chars().count();
        let rows = env.rpc().messages(&sid);
        if outcome == Outcome::InterruptedPartial {
            let recovered = rows[1]["content"].as_str().unwrap().chars().count();
            unsent_chunks += recovered - seen.text().chars().count();
        }
        if seen.answered {
            assert_eq!(outcome, Outcome::Completed);
        }
        *outcomes.entry(outcome).or_default() += 1;
        done += 1;
    }
    let summary = format!(
        "kill9_campaign: seed {seed:#x}, {done} kills in {:.1} s (daemon starts: {}); outcomes: {outcomes:?}; first touch after restart: messages {}, prompt {}, new {}; chunks received {seen_chunks}, recovered but never sent {unsent_chunks}",
        started.elapsed().as_secs_f64(),
        env.starts,
        paths[0],
        paths[1],
        paths[2]
    );
    // Straight to stderr: the figures are wanted even when the test passes.
    let _ = writeln!(std::io::stderr(), "{summary}");
    assert!(
        done >= iters.min(20),
        "only {done} iterations fit in the budget"
    );
    // The delays cover the whole turn: both interrupted and finalized turns must occur.
    if done >= 50 {
        assert!(
            outcomes.contains_key(&Outcome::InterruptedPartial),
            "{outcomes:?}"
        );
        assert!(outcomes.contains_key(&Outcome::Completed), "{outcomes:?}");
    }
}

#[test]
fn kill9_before_any_chunk() {
    let (mut env, mut rpc) = AcpEnv::with_session(&echo_config(""), "early", "acp");
    // The thought is sent after the begin transaction; the first chunk only in 60 s.
    let prompt = "::think pondering\n::delay 60000\nnever sent";
    let id = rpc.start_prompt("early", prompt);
    let mut seen = Seen::default();
    let v = rpc.read_frame(common::RECV_TIMEOUT).expect("the thought");
    seen.push(v, &id);
    assert_eq!(seen.updates[0]["type"], "agent_thought_chunk");
    env.kill9();
    drain(&mut rpc, &mut seen, &id);
    assert_eq!(seen.text(), "");
    env.start();
    let outcome = recover_and_check(&env, "early", prompt, "never sent", &seen, Path::Messages);
    assert_eq!(outcome, Outcome::InterruptedNoText);
    // The marker is the last of the recovered rows and the only one.
    let rows = env.rpc().messages("early");
    assert_eq!(
        shape(&rows[..2]),
        vec![
            row("user", "message", prompt),
            row("system", "interruption_marker", INTERRUPTED)
        ]
    );
}

#[test]
fn kill9_right_after_the_turn_completes() {
    let (mut env, mut rpc) = AcpEnv::with_session(&echo_config(""), "done", "acp");
    let prompt = "all of it\nsecond line";
    let t = rpc.prompt_ok("done", prompt);
    assert_eq!(t.result()["content"], prompt);
    env.kill9();
    drop(rpc);
    env.start();
    let seen = Seen {
        updates: t.updates(),
        answered: true,
    };
    let outcome = recover_and_check(&env, "done", prompt, prompt, &seen, Path::Messages);
    assert_eq!(outcome, Outcome::Completed);
    // Again right after the ::context turn, then first touched by a prompt.
    let mut rpc = env.restart();
    let context = rpc.context("done");
    let rows = rpc.messages("done");
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert_eq!(markers(&rows, INTERRUPTED), 0, "{rows:?}");
    assert_eq!(context, projected(&rows[..4]));
}

#[test]
fn kill9_in_a_turn_with_tools_keeps_paired_calls_in_context() {
    let (mut env, mut rpc) = AcpEnv::with_session(&echo_config(""), "tools", "acp");
    let prompt = "before\n::tool echo {\"b\":2,\"a\":[1,2.50]}\n::delay 60000\nafter";
    let id = rpc.start_prompt("tools", prompt);
    let mut seen = Seen::default();
    read_while(&mut rpc, &mut seen, &id, |seen| {
        !seen.updates.iter().any(|u| u["type"] == "tool_result")
    });
    env.kill9();
    drain(&mut rpc, &mut seen, &id);
    env.start();
    let mut rpc = env.rpc();
    let rows = rpc.messages("tools");
    assert_contiguous(&rows);
    assert_eq!(
        shape(&rows),
        vec![
            row("user", "message", prompt),
            row("assistant", "message", "before"),
            row("assistant", "tool_call", ""),
            row("tool", "tool_result", r#"{"b":2,"a":[1,2.50]}"#),
            row("system", "interruption_marker", INTERRUPTED),
        ]
    );
    assert_eq!(rows[2]["tool_call_id"], "tc_1");
    assert_eq!(rows[2]["tool_name"], "echo");
    assert_eq!(rows[2]["tool_input"], json!({"b": 2, "a": [1, 2.50]}));
    assert_eq!(rows[3]["tool_call_id"], "tc_1");
    let context = rpc.context("tools");
    assert_eq!(
        context,
        vec![
            ctx("user", prompt),
            ctx("assistant", "before"),
            json!({"role": "assistant", "kind": "tool_call", "content": "", "tool_call_id": "tc_1", "tool_name": "echo", "tool_input": {"b": 2, "a": [1, 2.50]}}),
            json!({"role": "tool", "kind": "tool_result", "content": "{\"b\":2,\"a\":[1,2.50]}", "tool_call_id": "tc_1", "tool_name": "echo"}),
        ]
    );
    assert_eq!(markers(&rpc.messages("tools"), INTERRUPTED), 1);
}

#[test]
fn kill9_twice_recovers_each_turn_once() {
    // Two crashed turns on one session, the second after the first was recovered.
    let mut env = AcpEnv::new(&echo_config(""));
    let prompt = slow_prompt("abcdefghij", 30);
    for round in 1..=2 {
        let mut rpc = env.rpc();
        let id = if round == 1 {
            rpc.new_session("twice", "acp");
            rpc.start_prompt("twice", &prompt)
        } else {
            rpc.start_prompt("twice", &prompt)
        };
        let mut seen = Seen::default();
        read_while(&mut rpc, &mut seen, &id, |seen| {
            seen.text().chars().count() < 3
        });
        env.kill9();
        drain(&mut rpc, &mut seen, &id);
        env.start();
        let rows = env.rpc().messages("twice");
        assert_contiguous(&rows);
        assert_eq!(markers(&rows, INTERRUPTED), round, "{rows:?}");
        let last3 = shape(&rows[rows.len() - 3..]);
        assert_eq!(last3[0], row("user", "message", &prompt));
        assert!(
            last3[1].2.starts_with(&seen.text()),
            "{last3:?} vs {}",
            seen.text()
        );
        assert_eq!(last3[2], row("system", "interruption_marker", INTERRUPTED));
    }
    // Both recovered turns are in the context, the markers are not.
    let mut rpc = env.rpc();
    let context = rpc.context("twice");
    assert_eq!(context.len(), 4, "{context:?}");
    assert!(context.iter().all(|m| m["role"] != "system"));
}

#[test]
fn sigterm_mid_turn_finalizes_the_partial_turn_without_a_marker() {
    // Graceful shutdown soft-cancels and finalizes (§2.6, §9.3 step 3): no recovery needed.
    let (mut env, mut rpc) = AcpEnv::with_session(&echo_config(""), "term", "acp");
    let prompt = slow_prompt("abcdefghijklmnopqrstuvwxyz", 50);
    let id = rpc.start_prompt("term", &prompt);
    let mut seen = Seen::default();
    read_while(&mut rpc, &mut seen, &id, |seen| {
        seen.text().chars().count() < 3
    });
    env.stop();
    drain(&mut rpc, &mut seen, &id);
    env.start();
    let rows = env.rpc().messages("term");
    assert_contiguous(&rows);
    assert_eq!(markers(&rows, INTERRUPTED), 0, "{rows:?}");
    let s = shape(&rows);
    assert_eq!(s.len(), 2, "{rows:?}");
    assert_eq!(s[0], row("user", "message", &prompt));
    assert!(s[1].2.starts_with(&seen.text()));
    // What the client was told at the end matches what was persisted.
    if let Some(tc) = seen.updates.iter().find(|u| u["type"] == "turn_complete") {
        assert_eq!(tc["outcome"], "cancelled", "{tc}");
        assert_eq!(tc["content"], json!(s[1].2), "{tc}");
    }
}
