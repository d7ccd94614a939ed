//! `backend = "openai"` over the real socket against a scripted model
//! server: streamed text and reasoning, the request the daemon
//! sends (model, messages, tools, key), the key never leaking, compaction,
//! and a restart in the middle of a streamed answer.

use crate::common;

use common::values::items;
use serde_json::{json, Value};

use common::openai::{self, config, merged, KEY};
use common::openai_server::{sse, OpenAiServer, Reply, Step};
use common::sessions::{complete, msg, thought};

const TOOLS: [&str; 5] = [
    "read_file",
    "write_file",
    "list_dir",
    "search_text",
    "shell",
];

#[test]
fn a_plain_turn_streams_the_answer_and_sends_the_context() {
    let (server, _d, mut c, _) = openai::session("system_prompt = \"be brief\"", "acp");
    server.push(Reply::Stream(sse::answer(&["Hel", "lo ", "wörld"])));
    let t = c.prompt("s-1", "hi");
    t.check("s-1");
    assert_eq!(
        merged(t.updates()),
        vec![
            msg("s-1", "Hello wörld"),
            complete("s-1", "completed", "Hello wörld", None),
        ]
    );
    assert_eq!(t.result()["stop_reason"], "end_turn");
    assert_eq!(t.result()["content"], "Hello wörld");

    let reqs = server.wait_requests(1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["stream"], true);
    assert!(r.body.get("temperature").is_none());
    assert_eq!(
        r.body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    );
    let names: Vec<&str> = items(&r.body["tools"])
        .iter()
        .map(|t| {
            assert_eq!(t["type"], "function");
            assert_eq!(t["function"]["parameters"]["type"], "object");
            t["function"]["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, TOOLS);

    // The next turn carries the first one as context; the system prompt
    // again first, and never stored.
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let t = c.prompt("s-1", "again");
    assert_eq!(t.result()["content"], "ok");
    let reqs = server.wait_requests(2);
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello wörld"},
            {"role": "user", "content": "again"},
        ])
    );
    let m = c.ok("session/messages", json!({"session_id": "s-1"}));
    let text = m.to_string();
    assert!(!text.contains("be brief"), "{text}");
}

#[test]
fn sampling_keys_and_the_tool_subset_are_sent_as_configured() {
    let server = OpenAiServer::start();
    let extra = "temperature = 0.25\nmax_tokens = 77\ntools = [\"list_dir\", \"read_file\"]";
    let d = openai::start(&config(&server, extra));
    let mut c = d.client();
    c.new_session_of("m", "s-1", "chat");
    server.push(Reply::Stream(sse::answer(&["x"])));
    c.prompt("s-1", "hi");
    let body = &server.wait_requests(1)[0].body;
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["max_tokens"], 77);
    let names: Vec<&Value> = items(&body["tools"])
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(names, [&json!("list_dir"), &json!("read_file")]);
    // No system prompt: no system message.
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[test]
fn reasoning_deltas_of_vllm_and_ollama_become_thoughts() {
    let (server, _d, mut c, _) = openai::session("", "acp");
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::reasoning_content("vllm thinks"),
        sse::reasoning("ollama thinks"),
        sse::content("answer"),
        sse::finish("stop"),
        sse::done(),
    ]));
    let t = c.prompt("s-1", "q");
    t.check("s-1");
    assert_eq!(
        merged(t.updates()),
        vec![
            thought("s-1", "vllm thinksollama thinks"),
            msg("s-1", "answer"),
            complete("s-1", "completed", "answer", None),
        ]
    );
    // Thoughts never enter the context.
    server.push(Reply::Stream(sse::answer(&["b"])));
    c.prompt("s-1", "next");
    let reqs = server.wait_requests(2);
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": "next"},
        ])
    );
}

#[test]
fn the_api_key_is_never_in_config_get_nor_the_log() {
    let server = OpenAiServer::start();
    let d = openai::start(&config(&server, ""));
    let mut c = d.client();
    let got = c.ok("config/get", json!({}));
    let text = got.to_string();
    assert!(!text.contains(KEY), "{text}");
    assert!(
        text.contains(openai::KEY_ENV),
        "the variable's name is shown: {text}"
    );
    c.new_session_of("m", "s-1", "acp");
    server.push(Reply::Status(
        401,
        r#"{"error":{"message":"bad key"}}"#.into(),
    ));
    let t = c.prompt("s-1", "hi");
    assert_eq!(
        t.error()["data"],
        json!({"reason": "provider_error", "status": 401})
    );
    assert!(!d.log.text().contains(KEY));
}

#[test]
fn a_missing_key_variable_fails_the_turn_naming_the_variable_only() {
    let server = OpenAiServer::start();
    let text = config(&server, "").replace(openai::KEY_ENV, "ZC_TEST_NO_SUCH_KEY");
    let d = openai::start(&text);
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let t = c.prompt("s-1", "hi");
    let m = "the API key variable ZC_TEST_NO_SUCH_KEY is not set in the daemon's environment";
    assert_eq!(t.error()["message"], m);
    assert_eq!(t.error()["data"]["reason"], "agent_failed");
    assert!(server.requests().is_empty());
}

#[test]
fn compaction_sends_the_summary_as_a_user_message() {
    let server = OpenAiServer::start();
    let extra = "context_max_messages = 4\ncompact_keep_messages = 2";
    let d = openai::start(&config(&server, extra));
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    for (i, p) in ["one", "two", "three"].iter().enumerate() {
        server.push(Reply::Stream(sse::answer(&[&format!("r{i}")])));
        c.prompt("s-1", p);
    }
    let reqs = server.wait_requests(3);
    // Turn 3 starts with 4 messages: 4 + 1 > 4, so 2 are compacted.
    assert_eq!(
        reqs[2].body["messages"],
        json!([
            {"role": "user", "content": "[compacted 2 earlier messages]"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "r1"},
            {"role": "user", "content": "three"},
        ])
    );
}

#[test]
fn a_restart_mid_answer_recovers_the_partial_text_into_the_context() {
    let server = OpenAiServer::start();
    let dir = common::TestDir::new();
    let cfg = config(&server, "");
    let common::start::Env { mut daemon, dir } = openai::start_in(dir, &cfg);
    let mut c = daemon.client();
    c.new_session_of("m", "s-1", "acp");
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::content("partial "),
        sse::content("text"),
        Step::HoldUntilClosed,
    ]));
    c.start_prompt("s-1", "first");
    c.until_update(|u| {
        u["type"] == "agent_message_chunk"
            && u["text"].as_str().is_some_and(|t| t.ends_with("text"))
    });
    // Both deltas are in the checkpoint once the last was sent to us.
    daemon.kill9();
    server.wait_client_closed(0);
    drop(daemon);
    let d = openai::start_in(dir, &cfg);
    let mut c = d.client();
    let r = c.new_session_of("m", "s-1", "acp");
    assert_eq!(r["resumed"], true, "{r}");
    server.push(Reply::Stream(sse::answer(&["fine"])));
    let t = c.prompt("s-1", "second");
    assert_eq!(t.result()["content"], "fine");
    let reqs = server.wait_requests(2);
    // The interruption marker (a system row) never reaches the model.
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "partial text"},
            {"role": "user", "content": "second"},
        ])
    );
}
