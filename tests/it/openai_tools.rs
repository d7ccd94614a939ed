//! Tool calls of `backend = "openai"` over the real socket:
//! streamed `tool_calls` assembled across split and interleaved deltas, the
//! approval flow (allow, reject, reject with edit, allow always), the round
//! limit, tool errors sent back to the model, and confinement.

// Unix only: the openai `shell` tool's commands are POSIX sh (pwd, $VAR, sleep &, wait).

use crate::common;

use std::time::Duration;

use serde_json::{json, Value};

use common::errors::agent_failed;
use common::openai::{self, decide, merged, until_approval};
use common::openai_server::{sse, Reply};
use common::sessions::{complete, msg, upd, update_params};

/// One answer asking for these calls: `(index, id, name, argument pieces)`,
/// every call's first delta first, then the pieces interleaved round-robin.
fn calls(text: &str, calls: &[(u32, &str, &str, &[&str])]) -> Reply {
    let mut steps = vec![sse::role()];
    if !text.is_empty() {
        steps.push(sse::content(text));
    }
    steps.extend(
        calls
            .iter()
            .map(|(i, id, name, _)| sse::tool_start(*i, id, name)),
    );
    let longest = calls.iter().map(|c| c.3.len()).max().unwrap_or(0);
    for k in 0..longest {
        for (i, _, _, pieces) in calls {
            if let Some(p) = pieces.get(k) {
                steps.push(sse::tool_args(*i, p));
            }
        }
    }
    steps.extend([sse::finish("tool_calls"), sse::usage(5, 5), sse::done()]);
    Reply::Stream(steps)
}

fn tool_call(id: &str, name: &str, input: Value) -> Value {
    upd(
        "s-1",
        "tool_call",
        json!({"toolCallId": id, "name": name, "rawInput": input}),
    )
}

fn tool_result(id: &str, name: &str, output: &str) -> Value {
    upd(
        "s-1",
        "tool_result",
        json!({"toolCallId": id, "name": name, "rawOutput": output}),
    )
}

fn api_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// A session `s-1` of agent `m`; its working directory.
#[test]
fn one_call_with_split_arguments_runs_and_goes_back_to_the_model() {
    let (server, _d, mut c, ws) = openai::session("", "acp");
    std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
    server.push(calls(
        "",
        &[(0, "call_1", "read_file", &["{\"pa", "th\": \"notes.txt\"}"])],
    ));
    server.push(Reply::Stream(sse::answer(&["It says ", "hello"])));
    let t = c.prompt("s-1", "read it");
    t.check("s-1");
    assert_eq!(
        merged(t.updates()),
        vec![
            tool_call("call_1", "read_file", json!({"path": "notes.txt"})),
            tool_result("call_1", "read_file", "hello\n"),
            msg("s-1", "It says hello"),
            complete("s-1", "completed", "It says hello", None),
        ]
    );
    let reqs = server.wait_requests(2);
    let call = api_call("call_1", "read_file", "{\"path\": \"notes.txt\"}");
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "hello\n"},
        ])
    );
    // The next turn's context holds the persisted rows (arguments compacted).
    server.push(Reply::Stream(sse::answer(&["ok"])));
    c.prompt("s-1", "thanks");
    let reqs = server.wait_requests(3);
    let call = api_call("call_1", "read_file", "{\"path\":\"notes.txt\"}");
    assert_eq!(
        reqs[2].body["messages"],
        json!([
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "hello\n"},
            {"role": "assistant", "content": "It says hello"},
            {"role": "user", "content": "thanks"},
        ])
    );
}

#[test]
fn interleaved_calls_run_in_index_order_after_the_text() {
    let (server, _d, mut c, ws) = openai::session("", "acp");
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/a.rs"), "fn main() {}\n").unwrap();
    server.push(calls(
        "Looking. ",
        &[
            (0, "call_a", "list_dir", &["{\"path\"", ":\"src\"}"]),
            (
                1,
                "call_b",
                "search_text",
                &["{\"pattern\":", "\"main\"", "}"],
            ),
        ],
    ));
    server.push(Reply::Stream(sse::answer(&["Found it."])));
    let t = c.prompt("s-1", "where is main?");
    t.check("s-1");
    assert_eq!(
        merged(t.updates()),
        vec![
            msg("s-1", "Looking. "),
            tool_call("call_a", "list_dir", json!({"path": "src"})),
            tool_result("call_a", "list_dir", "a.rs\n"),
            tool_call("call_b", "search_text", json!({"pattern": "main"})),
            tool_result("call_b", "search_text", "src/a.rs:1: fn main() {}\n"),
            msg("s-1", "Found it."),
            complete("s-1", "completed", "Looking. Found it.", None),
        ]
    );
    let reqs = server.wait_requests(2);
    let m = &reqs[1].body["messages"];
    assert_eq!(m[1]["content"], "Looking. ");
    assert_eq!(
        m[1]["tool_calls"],
        json!([
            api_call("call_a", "list_dir", "{\"path\":\"src\"}"),
            api_call("call_b", "search_text", "{\"pattern\":\"main\"}"),
        ])
    );
    assert_eq!(
        m[2],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "a.rs\n"})
    );
    assert_eq!(m[3]["tool_call_id"], "call_b");
}

#[test]
fn write_file_waits_for_approval_allow_reject_and_reject_with_edit() {
    let (server, _d, mut c, ws) = openai::session("", "acp");
    let cases = [
        ("allow_once", None, "wrote 2 bytes to out.txt"),
        ("reject", None, "denied: rejected"),
        (
            "reject_with_edit",
            Some("write it to notes.md"),
            "denied: replaced: write it to notes.md",
        ),
    ];
    for (n, (decision, edit, output)) in cases.into_iter().enumerate() {
        let _ = std::fs::remove_file(ws.join("out.txt"));
        let id = format!("call_w{n}");
        server.push(calls(
            "",
            &[(
                0,
                &id,
                "write_file",
                &["{\"path\":\"out.txt\",", "\"content\":\"hi\"}"],
            )],
        ));
        server.push(Reply::Stream(sse::answer(&["done"])));
        let pid = c.start_prompt("s-1", "write");
        let (frames, req) = until_approval(&mut c);
        let input = json!({"path": "out.txt", "content": "hi"});
        assert_eq!(frames[0].params(), &tool_call(&id, "write_file", input));
        assert_eq!(req["toolName"], "write_file");
        assert_eq!(
            req["argumentsSummary"],
            "{\"path\":\"out.txt\",\"content\":\"hi\"}"
        );
        let aid = decide(&mut c, "s-1", &req, decision, edit);
        let t = c.until_answer(&pid);
        let acks: Vec<_> = t.frames.iter().filter(|f| f.answers(&aid)).collect();
        assert_eq!(acks[0].result()["acknowledged"], true);
        let updates: Vec<Value> = merged(t.updates());
        assert_eq!(
            updates,
            vec![
                tool_result(&id, "write_file", output),
                msg("s-1", "done"),
                complete("s-1", "completed", "done", None),
            ],
            "{decision}"
        );
        let written = std::fs::read_to_string(ws.join("out.txt")).ok();
        let expect = (decision == "allow_once").then(|| "hi".to_owned());
        assert_eq!(written, expect, "{decision}");
        let reqs = server.wait_requests(2 * n + 2);
        let last = reqs[2 * n + 1].body["messages"].as_array().unwrap().clone();
        assert_eq!(
            last.last().unwrap(),
            &json!({"role": "tool", "tool_call_id": id, "content": output})
        );
    }
    // Reads need no approval under the default `writes`.
    server.push(calls(
        "",
        &[(0, "call_r", "read_file", &["{\"path\":\"out.txt\"}"])],
    ));
    server.push(Reply::Stream(sse::answer(&["x"])));
    let t = c.prompt("s-1", "read");
    assert!(merged(t.updates())
        .iter()
        .all(|u| u["type"] != "approval_request"));
}

#[test]
fn allow_always_skips_later_requests_for_that_tool() {
    let (server, _d, mut c, ws) = openai::session("approval = \"always\"", "acp");
    server.push(calls(
        "",
        &[
            (
                0,
                "c1",
                "write_file",
                &["{\"path\":\"a\",\"content\":\"1\"}"],
            ),
            (
                1,
                "c2",
                "write_file",
                &["{\"path\":\"b\",\"content\":\"2\"}"],
            ),
            (2, "c3", "list_dir", &["{}"]),
        ],
    ));
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let pid = c.start_prompt("s-1", "go");
    let (_, req) = until_approval(&mut c);
    assert_eq!(req["toolName"], "write_file");
    decide(&mut c, "s-1", &req, "allow_always", None);
    // list_dir is still asked (`always`), write_file not again.
    let (frames, req) = until_approval(&mut c);
    assert_eq!(req["toolName"], "list_dir");
    let seen = update_params(&frames);
    assert_eq!(
        seen[..4],
        [
            tool_result("c1", "write_file", "wrote 1 bytes to a"),
            tool_call("c2", "write_file", json!({"path": "b", "content": "2"})),
            tool_result("c2", "write_file", "wrote 1 bytes to b"),
            tool_call("c3", "list_dir", json!({})),
        ]
    );
    decide(&mut c, "s-1", &req, "allow_once", None);
    let t = c.until_answer(&pid);
    assert_eq!(t.result()["content"], "ok");
    assert_eq!(std::fs::read_to_string(ws.join("b")).unwrap(), "2");
    // A later turn of the live session: write_file is remembered.
    server.push(calls(
        "",
        &[(
            0,
            "c4",
            "write_file",
            &["{\"path\":\"c\",\"content\":\"3\"}"],
        )],
    ));
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let t = c.prompt("s-1", "again");
    assert!(
        merged(t.updates())
            .iter()
            .all(|u| u["type"] != "approval_request"),
        "{:#?}",
        t.raw()
    );
    assert_eq!(std::fs::read_to_string(ws.join("c")).unwrap(), "3");
}

#[test]
fn the_tool_round_limit_fails_the_turn_keeping_what_ran() {
    let (server, _d, mut c, _) = openai::session("max_tool_rounds = 1", "acp");
    server.push(calls("a", &[(0, "c1", "list_dir", &["{}"])]));
    server.push(calls("b", &[(0, "c2", "list_dir", &["{}"])]));
    let t = c.prompt("s-1", "loop");
    let m = "the model asked for tools again after 1 tool rounds (max_tool_rounds)";
    assert_eq!(
        merged(t.updates()),
        vec![
            msg("s-1", "a"),
            tool_call("c1", "list_dir", json!({})),
            tool_result("c1", "list_dir", ""),
            msg("s-1", "b"),
            complete("s-1", "failed", "ab", Some(m)),
        ]
    );
    agent_failed(t.error(), m);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn unknown_tools_bad_arguments_and_escapes_go_back_as_tool_errors() {
    let (server, _d, mut c, _) = openai::session("tools = [\"read_file\", \"list_dir\"]", "acp");
    server.push(calls(
        "",
        &[
            (0, "c1", "rm_rf", &["{}"]),
            (1, "c2", "read_file", &["{\"path\":"]),
            (2, "c3", "read_file", &["{\"path\":\"../../etc/passwd\"}"]),
            (3, "c4", "shell", &["{\"command\":\"id\"}"]),
            (4, "c5", "read_file", &["[1]"]),
        ],
    ));
    server.push(Reply::Stream(sse::answer(&["sorry"])));
    let t = c.prompt("s-1", "break things");
    t.check("s-1");
    let unknown =
        |name: &str| format!("error: unknown tool \"{name}\" (available: read_file, list_dir)");
    let bad_json =
        "error: arguments are not valid JSON: EOF while parsing a value at line 1 column 8";
    let outside = "error: path is outside the working directory";
    let not_object = "error: arguments are not a JSON object";
    assert_eq!(
        merged(t.updates()),
        vec![
            tool_call("c1", "rm_rf", json!({})),
            tool_result("c1", "rm_rf", &unknown("rm_rf")),
            tool_call(
                "c2",
                "read_file",
                json!({"invalid_arguments": "{\"path\":"})
            ),
            tool_result("c2", "read_file", bad_json),
            tool_call("c3", "read_file", json!({"path": "../../etc/passwd"})),
            tool_result("c3", "read_file", outside),
            tool_call("c4", "shell", json!({"command": "id"})),
            tool_result("c4", "shell", &unknown("shell")),
            tool_call("c5", "read_file", json!({"invalid_arguments": "[1]"})),
            tool_result("c5", "read_file", not_object),
            msg("s-1", "sorry"),
            complete("s-1", "completed", "sorry", None),
        ]
    );
    let reqs = server.wait_requests(2);
    let tool_msgs: Vec<&Value> = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(tool_msgs.len(), 5);
    assert_eq!(tool_msgs[2], outside);
    // The calls go back as the transcript records them: never the broken
    // text, which a server that parses its calls (llama.cpp's) answers 500.
    let sent: Vec<&str> = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(
        sent,
        [
            "{}",
            r#"{"invalid_arguments":"{\"path\":"}"#,
            r#"{"path":"../../etc/passwd"}"#,
            r#"{"command":"id"}"#,
            r#"{"invalid_arguments":"[1]"}"#,
        ]
    );
}

#[test]
fn shell_runs_in_the_working_directory_without_the_api_key() {
    let (server, _d, mut c, ws) = openai::session("approval = \"never\"", "acp");
    let line = format!("{{\"command\":\"pwd; echo key=${}\"}}", openai::KEY_ENV);
    server.push(calls("", &[(0, "c1", "shell", &[&line])]));
    server.push(calls(
        "",
        &[(
            0,
            "c2",
            "shell",
            &["{\"command\":[\"printf\",\"%s|\",\"a b\",\"c\"]}"],
        )],
    ));
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let t = c.prompt("s-1", "run");
    let results: Vec<String> = t
        .updates()
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        results,
        [
            format!("exit status 0\n--- stdout\n{}\nkey=\n", ws.display()),
            "exit status 0\n--- stdout\na b|c|".to_owned(),
        ]
    );
}

#[test]
fn cancel_during_a_shell_call_kills_its_process_group() {
    let (server, _d, mut c, ws) = openai::session("approval = \"never\"", "acp");
    // The shell writes its pid and its child's, then waits on the child.
    let line = "{\"command\":\"sleep 30 & echo $$ $! > pids; wait\"}";
    server.push(calls("", &[(0, "c1", "shell", &[line])]));
    let pid = c.start_prompt("s-1", "run");
    c.until_update(|u| u["type"] == "tool_call");
    let pids: Vec<i32> = common::wait::eventually("the pids file", Duration::from_secs(10), || {
        let text = std::fs::read_to_string(ws.join("pids")).ok()?;
        let pids: Vec<i32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        (pids.len() == 2).then_some(pids)
    });
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let t = c.until_answer(&pid);
    assert!(t.frames.iter().any(|f| f.answers(&cid)));
    assert_eq!(t.result()["stop_reason"], "cancelled");
    // No tool_result: the call never finished.
    assert!(merged(t.updates())
        .iter()
        .all(|u| u["type"] != "tool_result"));
    for p in pids {
        common::wait::eventually(
            "the shell's processes to be gone",
            Duration::from_secs(10),
            || common::sessions::process_gone(p).then_some(()),
        );
    }
    // Only the first request was made.
    assert_eq!(server.requests().len(), 1);
}
