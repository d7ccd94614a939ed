//! The echo agent's directives over the real socket (§10.3, §8.4,
//! §8.5, §3.7, §3.8): the exact `session/update` sequence of each
//! directive, `turn_complete` last, every update before the answer, and
//! the snake_case dialect.

use crate::common;
use common::errors::agent_failed;
use common::sessions;
use common::start::{config_with, echo_session, start, start_echo, Env};
use common::updates::tool_call_upd;
use common::values::items;
use common::wait::eventually;

use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{json, Value};
use sessions::*;

/// One whole turn on a fresh session `s-1` of `mode` (an earlier one is
/// deleted first), checked for its shape.
fn turn_on(d: &Daemon, mode: &str, prompt: &str) -> Turn {
    let mut c = d.client();
    c.ok(
        "session/delete",
        json!({"session_id": "s-1", "chat_mode": mode}),
    );
    c.new_session("s-1", mode);
    let t = c.prompt("s-1", prompt);
    t.check("s-1");
    t
}

/// The message chunks of `prompt` on a fresh chat session, with its result content.
fn chunks_of(d: &Daemon, prompt: &str) -> Vec<String> {
    let t = turn_on(d, "chat", prompt);
    assert_eq!(t.result()["stop_reason"], "end_turn", "{}", t.response.raw);
    t.chunks()
}

#[test]
fn the_spec_example_is_streamed_frame_for_frame_in_both_modes() {
    let d = start_echo();
    for mode in ["acp", "chat"] {
        let t = turn_on(
            &d,
            mode,
            "Hello\n::tool echo {\"text\":\"x\"}\n::think done",
        );
        assert_eq!(
            t.raw(),
            [
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"agent_message_chunk","text":"Hello"}}"#,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_call","toolCallId":"tc_1","name":"echo","rawInput":{"text":"x"}}}"#,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_result","toolCallId":"tc_1","name":"echo","rawOutput":"{\"text\":\"x\"}"}}"#,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"agent_thought_chunk","text":"done"}}"#,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"turn_complete","outcome":"completed","content":"Hello"}}"#,
            ],
            "mode {mode}"
        );
        assert_eq!(
            t.result(),
            &json!({"session_id": "s-1", "stop_reason": "end_turn", "content": "Hello"})
        );
    }
}

#[test]
fn text_is_chunked_by_chunk_chars_in_unicode_scalar_values() {
    let d = start(&config_with(
        "[agents.c4]\nbackend = \"echo\"\nchunk_chars = 4\n",
    ));
    let mut c = d.client();
    c.new_session_of("c4", "s-1", "chat");
    let t = c.prompt("s-1", "abcdefghij\nxy\nh\u{e9}llo w\u{f6}rld\u{1f980}!");
    t.check("s-1");
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", "abcd"),
            msg("s-1", "efgh"),
            msg("s-1", "ij"),
            msg("s-1", "\nxy"),
            msg("s-1", "\nh\u{e9}l"),
            msg("s-1", "lo w"),
            msg("s-1", "\u{f6}rld"),
            msg("s-1", "\u{1f980}!"),
            complete(
                "s-1",
                "completed",
                "abcdefghij\nxy\nh\u{e9}llo w\u{f6}rld\u{1f980}!",
                None
            ),
        ]
    );
    // The default is 16.
    assert_eq!(
        chunks_of(&d, "abcdefghijklmnopqrstuvwxyz"),
        ["abcdefghijklmnop", "qrstuvwxyz"]
    );
}

#[test]
fn empty_lines_and_text_items() {
    let d = start_echo();
    // A later empty item is the single chunk "\n"; a first empty item emits nothing.
    assert_eq!(chunks_of(&d, "a\n\nb"), ["a", "\n", "\nb"]);
    assert_eq!(chunks_of(&d, "\nb"), ["\nb"]);
    // A trailing "\n" makes no empty last line; "\r\n" loses its "\r".
    assert_eq!(chunks_of(&d, "a\r\nb\n"), ["a", "\nb"]);
    // Unknown or invalid directives are text lines, leading blanks kept.
    assert_eq!(
        chunks_of(&d, "::nope x\n  ::chunk 0\n::sleep -1\n::Think"),
        ["::nope x", "\n  ::chunk 0", "\n::sleep -1", "\n::Think"]
    );
    // A reply with no text item is empty.
    let t = turn_on(&d, "chat", "::think only");
    assert_eq!(
        t.updates(),
        vec![
            thought("s-1", "only"),
            complete("s-1", "completed", "", None)
        ]
    );
    assert_eq!(t.result()["content"], "");
}

#[test]
fn chunk_changes_the_chunk_size_for_the_rest_of_the_turn() {
    let d = start_echo();
    assert_eq!(chunks_of(&d, "::chunk 2\nabcde"), ["ab", "cd", "e"]);
    assert_eq!(
        chunks_of(&d, "abcde\n::chunk 1\nxy\n::chunk 3\nuvwxyz"),
        ["abcde", "\n", "x", "y", "\nuv", "wxy", "z"]
    );
    // The next turn starts again from chunk_chars.
    let mut c = d.session_client("s-2", "chat");
    let t = c.prompt("s-2", "::chunk 1\nab");
    assert_eq!(t.chunks(), ["a", "b"]);
    let t = c.prompt("s-2", "abcdefghijklmnopq");
    assert_eq!(t.chunks(), ["abcdefghijklmnop", "q"]);
}

#[test]
fn chunks_above_64_kib_are_split_on_char_boundaries() {
    let d = start_echo();
    // 70,000 scalar values in one chunk: 65,536 bytes, then the rest.
    let t = turn_on(&d, "chat", "::chunk 100000\n::repeat 70000 a");
    let chunks = t.chunks();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0], "a".repeat(65_536));
    assert_eq!(chunks[1], "a".repeat(70_000 - 65_536));
    // Two-byte characters: the cut never splits one.
    let t = turn_on(&d, "chat", "::chunk 100000\n::repeat 40000 \u{e9}");
    let chunks = t.chunks();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].len(), 65_536);
    assert_eq!(chunks.concat(), "\u{e9}".repeat(40_000));
}

#[test]
fn repeat_is_one_text_item() {
    let d = start_echo();
    assert_eq!(chunks_of(&d, "::repeat 3 ab"), ["ababab"]);
    assert_eq!(
        chunks_of(&d, "x\n::repeat 20 a"),
        ["x", &format!("\n{}", "a".repeat(15)), "aaaaa"]
    );
    // TEXT keeps its spaces; N = 0 is an empty item.
    assert_eq!(chunks_of(&d, "::repeat 2  a"), [" a a"]);
    assert_eq!(chunks_of(&d, "x\n::repeat 0 y\nz"), ["x", "\n", "\nz"]);
    // Beyond 16 MiB it is a text line.
    assert_eq!(
        chunks_of(&d, "::repeat 16777217 x"),
        ["::repeat 1677721", "7 x"]
    );
}

#[test]
fn think_streams_thought_chunks_never_prefixed_and_not_in_the_content() {
    let d = start_echo();
    let t = turn_on(
        &d,
        "chat",
        "a\n::think abcdefghijklmnopqrstu\nb\n::think \n::think z",
    );
    assert_eq!(
        t.updates(),
        vec![
            msg("s-1", "a"),
            thought("s-1", "abcdefghijklmnop"),
            thought("s-1", "qrstu"),
            msg("s-1", "\nb"),
            thought("s-1", "z"),
            complete("s-1", "completed", "a\nb", None),
        ]
    );
    assert_eq!(t.result()["content"], "a\nb");
}

#[test]
fn tool_calls_number_per_turn_and_keep_their_json_as_written() {
    let (_d, mut c) = echo_session("s-1", "acp");
    let t = c.prompt(
        "s-1",
        "::tool t {\"b\": 1, \"a\": 2.50, \"n\": 12345678901234567890123}\n::tool bare\n::tool bad {\nafter",
    );
    t.check("s-1");
    assert_eq!(
        t.raw(),
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_call","toolCallId":"tc_1","name":"t","rawInput":{"b":1,"a":2.50,"n":12345678901234567890123}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_result","toolCallId":"tc_1","name":"t","rawOutput":"{\"b\":1,\"a\":2.50,\"n\":12345678901234567890123}"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_call","toolCallId":"tc_2","name":"bare","rawInput":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"tool_result","toolCallId":"tc_2","name":"bare","rawOutput":"{}"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"agent_message_chunk","text":"::tool bad {"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"agent_message_chunk","text":"\nafter"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","type":"turn_complete","outcome":"completed","content":"::tool bad {\nafter"}}"#,
        ]
    );
    // The next turn numbers from tc_1 again.
    let t = c.prompt("s-1", "::tool again");
    assert_eq!(t.updates()[0]["toolCallId"], "tc_1");
    // The transcript has the rows, the tool input as written.
    let m = c.call_alone("session/messages", json!({"session_id": "s-1"}));
    assert_eq!(m.result()["total"], 9, "{}", m.raw);
    assert!(
        m.raw.contains(concat!(
            r#"{"seq":2,"role":"assistant","kind":"tool_call","content":"","tool_call_id":"tc_1","tool_name":"t","tool_input":{"b":1,"a":2.50,"n":12345678901234567890123}},"#,
            r#"{"seq":3,"role":"tool","kind":"tool_result","content":"{\"b\":1,\"a\":2.50,\"n\":12345678901234567890123}","tool_call_id":"tc_1","tool_name":"t"}"#,
        )),
        "{}",
        m.raw
    );
}

#[test]
fn tool_big_outputs_are_bounded_in_notifications_and_in_the_transcript() {
    let (_d, mut c) = echo_session("s-1", "acp");
    let t = c.prompt("s-1", "::tool big {\"bytes\":100000}");
    t.check("s-1");
    let u = t.updates();
    assert_eq!(u.len(), 3);
    assert_eq!(
        u[0],
        tool_call_upd("s-1", "tc_1", "big", json!({"bytes": 100000}))
    );
    assert_eq!(
        u[1],
        upd(
            "s-1",
            "tool_result",
            json!({"toolCallId": "tc_1", "name": "big", "rawOutput": "x".repeat(100_000)})
        )
    );
    assert_eq!(u[2], complete("s-1", "completed", "", None));

    // Over 1 MiB: the notification is bounded at 1 MiB.
    let t = c.prompt("s-1", "::tool big {\"bytes\":1048577}");
    assert_eq!(
        t.updates()[1]["rawOutput"],
        format!("{}\u{2026}[truncated]", "x".repeat(1_048_576))
    );
    // The transcript keeps 16 KiB of each.
    let m = c.ok("session/messages", json!({"session_id": "s-1"}));
    let rows = items(&m["messages"]);
    assert_eq!(m["total"], 6, "{m}");
    let bounded = format!("{}\u{2026}[truncated]", "x".repeat(16_384));
    assert_eq!(rows[2]["content"], bounded);
    assert_eq!(rows[5]["content"], bounded);
    // Without an integer `bytes`, `big` is a text line.
    let t = c.prompt("s-1", "::tool big {\"bytes\":1.5}");
    assert_eq!(t.chunks().concat(), "::tool big {\"bytes\":1.5}");
}

#[test]
fn context_shows_the_retained_context_the_turn_started_with() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("ctx-{mode}");
        c.new_session(&sid, mode);
        let t = c.prompt(&sid, "::context");
        t.check(&sid);
        assert_eq!(t.result()["content"], r#"{"messages":[]}"#);
        c.prompt(&sid, "hi\n::think hidden");
        let t = c.prompt(&sid, "::context\nafter");
        assert_eq!(
            t.result()["content"],
            concat!(
                r#"{"messages":[{"role":"user","kind":"message","content":"::context"},"#,
                r#"{"role":"assistant","kind":"message","content":"{\"messages\":[]}"},"#,
                r#"{"role":"user","kind":"message","content":"hi\n::think hidden"},"#,
                r#"{"role":"assistant","kind":"message","content":"hi"}]}"#,
                "\nafter"
            ),
            "mode {mode}"
        );
    }
}

#[test]
fn context_after_tool_calls_and_a_failed_turn() {
    let (_d, mut c) = echo_session("s-1", "acp");
    c.prompt("s-1", "a\n::tool t {\"k\":[1,2]}\nb");
    c.prompt("s-1", "x\n::fail no");
    let t = c.prompt("s-1", "::context");
    assert_eq!(
        t.result()["content"],
        concat!(
            r#"{"messages":["#,
            r#"{"role":"user","kind":"message","content":"a\n::tool t {\"k\":[1,2]}\nb"},"#,
            r#"{"role":"assistant","kind":"message","content":"a"},"#,
            r#"{"role":"assistant","kind":"tool_call","content":"","tool_call_id":"tc_1","tool_name":"t","tool_input":{"k":[1,2]}},"#,
            r#"{"role":"tool","kind":"tool_result","content":"{\"k\":[1,2]}","tool_call_id":"tc_1","tool_name":"t"},"#,
            r#"{"role":"assistant","kind":"message","content":"\nb"},"#,
            r#"{"role":"user","kind":"message","content":"x\n::fail no"},"#,
            r#"{"role":"assistant","kind":"message","content":"x"}]}"#,
        )
    );
}

#[test]
fn fail_answers_agent_failed_after_a_failed_turn_complete() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let mut c = d.session_client("s-1", mode);
        let t = c.prompt("s-1", "partial\n::fail boom: it broke\nnever");
        t.check("s-1");
        assert_eq!(
            t.updates(),
            vec![
                msg("s-1", "partial"),
                complete("s-1", "failed", "partial", Some("boom: it broke")),
            ]
        );
        agent_failed(t.error(), "boom: it broke");
        // The session goes on.
        let t = c.prompt("s-1", "ok");
        assert_eq!(t.result()["content"], "ok");
        let m = c.ok("session/messages", json!({"session_id": "s-1"}));
        let rows: Vec<Value> = items(&m["messages"])
            .iter()
            .map(|r| json!([r["role"], r["kind"], r["content"]]))
            .collect();
        let mut expected = vec![
            json!(["user", "message", "partial\n::fail boom: it broke\nnever"]),
            json!(["assistant", "message", "partial"]),
        ];
        if mode == "acp" {
            expected.push(json!([
                "system",
                "interruption_marker",
                "Turn failed: boom: it broke"
            ]));
        }
        expected.push(json!(["user", "message", "ok"]));
        expected.push(json!(["assistant", "message", "ok"]));
        assert_eq!(rows, expected, "mode {mode}");
    }
}

#[test]
fn sleep_and_delay_wait_before_what_follows() {
    let d = start_echo();
    let start = Instant::now();
    let t = turn_on(&d, "chat", "a\n::sleep 150\nb");
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(t.chunks(), ["a", "\nb"]);

    // Each chunk is preceded by the delay: 4 chunks × 40 ms.
    let start = Instant::now();
    let t = turn_on(&d, "chat", "::delay 40\n::chunk 1\nabcd");
    assert!(start.elapsed() >= Duration::from_millis(160));
    assert_eq!(t.chunks(), ["a", "b", "c", "d"]);

    // Out of range: a text line.
    assert_eq!(chunks_of(&d, "::sleep 3600001"), ["::sleep 3600001"]);
    assert_eq!(chunks_of(&d, "::delay 3600001"), ["::delay 3600001"]);
}

#[test]
fn chunk_delay_ms_from_the_config_delays_every_chunk() {
    let d = start(&config_with(
        "[agents.slow]\nbackend = \"echo\"\nchunk_chars = 2\nchunk_delay_ms = 40\n",
    ));
    let mut c = d.client();
    c.new_session_of("slow", "s-1", "chat");
    let start = Instant::now();
    let t = c.prompt("s-1", "abcdef");
    assert!(start.elapsed() >= Duration::from_millis(120));
    assert_eq!(t.chunks(), ["ab", "cd", "ef"]);
    // ::delay 0 overrides it for the rest of the turn.
    let t = c.prompt("s-1", "::delay 0\nabcd");
    assert_eq!(t.chunks(), ["ab", "cd"]);
}

#[test]
fn snake_dialect_gets_snake_case_update_params() {
    let d = start(&config_with("[daemon]\napproval_timeout_secs = 5\n"));
    let mut c = client_snake(&d);
    c.new_session("s-1", "chat");
    let t = c.prompt("s-1", "Hi\n::tool echo {\"aB\":1}\n::think t");
    t.check("s-1");
    assert_eq!(
        t.raw(),
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"agent_message_chunk","text":"Hi"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"tool_call","tool_call_id":"tc_1","name":"echo","raw_input":{"aB":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"tool_result","tool_call_id":"tc_1","name":"echo","raw_output":"{\"aB\":1}"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"agent_thought_chunk","text":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"turn_complete","outcome":"completed","content":"Hi"}}"#,
        ]
    );
    assert_eq!(
        t.response.raw,
        format!(
            r#"{{"jsonrpc":"2.0","result":{{"session_id":"s-1","stop_reason":"end_turn","content":"Hi"}},"id":{}}}"#,
            t.response.v["id"]
        )
    );

    // approval_request, a failed turn_complete with its reason; on the snake
    // dialect `content` is the closing notice (docs/decisions.md).
    let id = c.start_prompt("s-1", "::approve rm {\"x\":1}\n::fail bad");
    let seen = c.until_update(|u| u["type"] == "approval_request");
    let req = seen.last().unwrap().params().clone();
    let rid = req["request_id"].as_str().unwrap().to_owned();
    assert_eq!(
        req,
        json!({"session_id": "s-1", "type": "approval_request", "request_id": rid,
               "tool_name": "rm", "arguments_summary": "{\"x\":1}", "timeout_secs": 5})
    );
    assert_eq!(
        seen[0].raw,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"tool_call","tool_call_id":"tc_1","name":"rm","raw_input":{"x":1}}}"#
    );
    let aid = c.send(
        "session/approve",
        json!({"session_id": "s-1", "request_id": rid, "decision": "reject"}),
    );
    let t = c.until_answer(&id);
    let rest: Vec<&str> = t
        .frames
        .iter()
        .filter(|f| !f.answers(&aid))
        .map(|f| f.raw.as_str())
        .collect();
    assert_eq!(
        rest,
        [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"tool_result","tool_call_id":"tc_1","name":"rm","raw_output":"denied: rejected"}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-1","type":"turn_complete","outcome":"failed","content":"turn failed: bad","reason":"bad"}}"#,
        ]
    );
}

#[test]
fn every_update_of_a_turn_precedes_its_answer() {
    // A long, mixed turn on an ACP session (group commit of checkpoint
    // events) and on a chat session: nothing of the turn after its answer.
    // No auto-compaction in the 150 turns (§9.5).
    let d = start(
        "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\ncontext_max_messages = 1000\n",
    );
    let prompt = "::chunk 1\n::repeat 300 ab\n::tool t {\"k\":1}\n::think th\n::repeat 200 c";
    for mode in ["acp", "chat"] {
        let mut c = d.session_client("s-1", mode);
        let t = c.prompt("s-1", prompt);
        t.check("s-1");
        assert_eq!(t.chunks().len(), 600 + 201);
        c.expect_nothing_before_probe();
        // Many short turns: the answer never overtakes the last updates.
        for k in 0..150 {
            let t = c.prompt("s-1", &format!("::think t\n{k}"));
            assert_eq!(
                t.updates(),
                vec![
                    thought("s-1", "t"),
                    msg("s-1", &k.to_string()),
                    complete("s-1", "completed", &k.to_string(), None)
                ],
                "turn {k} ({mode})"
            );
        }
        c.expect_nothing_before_probe();
    }
}

/// A daemon whose agent `k` compacts above 6 messages, keeping 2.
fn compacting() -> Env {
    start(&config_with(
        "[agents.k]\nbackend = \"echo\"\ncontext_max_messages = 6\ncompact_keep_messages = 2\n",
    ))
}

fn notice(session: &str, compacted: u64, retained: u64, boundary: u64) -> Value {
    upd(
        session,
        "compaction_notice",
        json!({"compactedMessages": compacted, "retainedMessages": retained, "boundarySeq": boundary}),
    )
}

const SUMMARY_2: &str =
    r#"{"role":"user","kind":"summary","content":"[compacted 2 earlier messages]"}"#;

#[test]
fn compact_forces_compaction_before_the_turn_wherever_it_appears() {
    let d = compacting();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("k-{mode}");
        c.new_session_of("k", &sid, mode);
        c.prompt(&sid, "p1");
        c.prompt(&sid, "p2");
        let t = c.prompt(&sid, "::context\n::compact");
        t.check(&sid);
        let u = t.updates();
        assert_eq!(u[0], notice(&sid, 2, 3, 4), "mode {mode}");
        let ctx = format!(
            r#"{{"messages":[{SUMMARY_2},{{"role":"user","kind":"message","content":"p2"}},{{"role":"assistant","kind":"message","content":"p2"}}]}}"#
        );
        assert_eq!(t.result()["content"], ctx, "mode {mode}");
        // The transcript keeps every row.
        let m = c.ok("session/messages", json!({ "session_id": sid }));
        assert_eq!(m["total"], 6);
        if mode == "acp" {
            // A rebuild starts from the snapshot, then the rows after it.
            c.ok("session/close", json!({ "session_id": sid }));
            let t = c.prompt(&sid, "::context");
            assert_eq!(
                t.result()["content"],
                format!(
                    r#"{{"messages":[{SUMMARY_2},{{"role":"user","kind":"message","content":"p2"}},{{"role":"assistant","kind":"message","content":"p2"}},{{"role":"user","kind":"message","content":"::context\n::compact"}},{{"role":"assistant","kind":"message","content":{}}}]}}"#,
                    serde_json::to_string(&ctx).unwrap()
                )
            );
        }
    }
}

#[test]
fn compact_with_nothing_to_compact_and_compact_empty() {
    let d = compacting();
    for mode in ["chat", "acp"] {
        let mut c = d.client();
        let sid = format!("e-{mode}");
        c.new_session_of("k", &sid, mode);
        // Nothing to compact: the notice still comes, with 0.
        let t = c.prompt(&sid, "::compact");
        t.check(&sid);
        assert_eq!(
            t.updates(),
            vec![notice(&sid, 0, 0, 0), complete(&sid, "completed", "", None)]
        );
        // (An empty reply adds the prompt alone to the history.)
        let t = c.prompt(&sid, "a\n::compact");
        assert_eq!(t.updates()[0], notice(&sid, 0, 1, 1), "mode {mode}");
        // ::compact-empty wins over ::compact and keeps nothing.
        let t = c.prompt(&sid, "::compact\n::context\n::compact-empty");
        assert_eq!(t.updates()[0], notice(&sid, 3, 0, 3), "mode {mode}");
        assert_eq!(t.result()["content"], r#"{"messages":[]}"#);
        if mode == "acp" {
            // An empty snapshot is authoritative after a rebuild.
            c.ok("session/close", json!({ "session_id": sid }));
            let t = c.prompt(&sid, "::context");
            assert_eq!(
                t.result()["content"],
                concat!(
                    r#"{"messages":[{"role":"user","kind":"message","content":"::compact\n::context\n::compact-empty"},"#,
                    r#"{"role":"assistant","kind":"message","content":"{\"messages\":[]}"}]}"#
                )
            );
        }
    }
}

#[test]
fn auto_compaction_runs_when_the_context_would_exceed_its_maximum() {
    let d = compacting();
    let mut c = d.client();
    c.new_session_of("k", "s-1", "acp");
    for k in 1..=3 {
        let t = c.prompt("s-1", &format!("p{k}"));
        assert_eq!(t.updates()[0]["type"], "agent_message_chunk", "turn {k}");
    }
    // 6 messages + the prompt > 6: compact 4, keep 2 plus the summary.
    let t = c.prompt("s-1", "::context");
    t.check("s-1");
    assert_eq!(t.updates()[0], notice("s-1", 4, 3, 6));
    assert_eq!(
        t.result()["content"],
        r#"{"messages":[{"role":"user","kind":"summary","content":"[compacted 4 earlier messages]"},{"role":"user","kind":"message","content":"p3"},{"role":"assistant","kind":"message","content":"p3"}]}"#
    );
    // On a snake connection the notice has snake_case members.
    let mut s = client_snake(&d);
    s.new_session_of("k", "s-2", "chat");
    for k in 1..=3 {
        s.prompt("s-2", &format!("p{k}"));
    }
    let t = s.prompt("s-2", "x");
    assert_eq!(
        t.raw()[0],
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"session_id":"s-2","type":"compaction_notice","compacted_messages":4,"retained_messages":3,"boundary_seq":6}}"#
    );
}

#[test]
fn thoughts_above_64_kib_are_split_too() {
    let d = start_echo();
    let big = "t".repeat(70_000);
    let t = turn_on(&d, "chat", &format!("::chunk 100000\n::think {big}"));
    assert_eq!(
        t.texts("agent_thought_chunk"),
        ["t".repeat(65_536), "t".repeat(70_000 - 65_536)]
    );
    assert_eq!(t.result()["content"], "");
}

#[test]
fn a_turn_completes_and_is_persisted_when_its_connection_is_gone() {
    let d = start_echo();
    for mode in ["chat", "acp"] {
        let sid = format!("gone-{mode}");
        let mut a = d.session_client(&sid, mode);
        a.start_prompt(&sid, "::chunk 1\n::delay 20\nabcdef");
        a.until_update(|u| u["text"] == "a");
        drop(a);
        let mut b = d.client();
        let m = eventually("the turn to be persisted", Duration::from_secs(10), || {
            let m = b.ok("session/messages", json!({ "session_id": sid }));
            (m["total"] == 2).then_some(m)
        });
        assert_eq!(m["messages"][1]["content"], "abcdef", "mode {mode}");
        // The session lives on for other connections.
        assert_eq!(b.prompt(&sid, "next").result()["content"], "next");
    }
}
