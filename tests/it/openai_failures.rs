//! Failures of the model server over the real socket: each ends
//! the turn `failed` with `-32603` and a `data.reason` of its class
//! (`provider_unreachable`, `provider_error` with the HTTP status,
//! `provider_timeout`, `provider_protocol`), the partial text kept;
//! 429/5xx answers retried with bounded backoff; cancel closes the request.

use crate::common;

use common::values::items;
use std::io::Write;
use std::net::TcpListener;

use serde_json::{json, Value};

use common::assert::assert_error_exact;
use common::openai::{self, config, merged};
use common::openai_server::{sse, OpenAiServer, Reply, Step};
use common::sessions::{complete, msg, Turn};

/// A daemon whose agent `m` uses `base_url` (and `extra`); one turn of `prompt`.
fn turn_against(server: &OpenAiServer, base_url: Option<&str>, extra: &str) -> Turn {
    let mut text = config(server, extra);
    if let Some(url) = base_url {
        text = text.replace(&server.base_url(), url);
    }
    let d = openai::start(&text);
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let t = c.prompt("s-1", "hi");
    t.check("s-1");
    t
}

/// Asserts a failed turn: `-32603`, this data, this content, and the
/// message in the `turn_complete` too; returns the message.
fn failed(t: &Turn, data: Value, content: &str) -> String {
    let e = t.error();
    let m = e["message"].as_str().unwrap().to_owned();
    assert_error_exact(e, -32603, Some(&m), Some(data));
    assert_eq!(
        t.turn_complete(),
        &complete("s-1", "failed", content, Some(&m))
    );
    m
}

fn unreachable() -> Value {
    json!({"reason": "provider_unreachable"})
}

#[test]
fn connection_refused_is_unreachable() {
    let server = OpenAiServer::start();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let t = turn_against(&server, Some(&url), "");
    let m = failed(&t, unreachable(), "");
    assert!(m.starts_with("request: error sending request"), "{m}");
    assert!(m.contains("Connection refused"), "{m}");
}

#[test]
fn an_unknown_host_is_unreachable() {
    let server = OpenAiServer::start();
    let t = turn_against(
        &server,
        Some("http://zc-no-such-host.invalid/v1"),
        "request_timeout_secs = 10",
    );
    let m = failed(&t, unreachable(), "");
    assert!(m.contains("dns error"), "{m}");
}

#[test]
fn a_tls_failure_is_unreachable() {
    let server = OpenAiServer::start();
    // A plain-HTTP peer where TLS is expected.
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = plain.accept() {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let url = format!("https://127.0.0.1:{port}/v1");
    let t = turn_against(&server, Some(&url), "");
    let m = failed(&t, unreachable(), "");
    assert!(m.contains("received corrupt message"), "{m}");
}

#[test]
fn an_http_error_carries_its_status_and_the_servers_message() {
    let server = OpenAiServer::start();
    // OpenAI's error object, then Ollama's string form; 4xx is not retried.
    server.push(Reply::Status(
        400,
        r#"{"error":{"message":"max_tokens is too large","type":"invalid_request_error","param":"max_tokens","code":null}}"#.into(),
    ));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_error", "status": 400}), "");
    assert_eq!(m, "HTTP 400: max_tokens is too large");
    assert_eq!(server.requests().len(), 1);

    let server = OpenAiServer::start();
    server.push(Reply::Status(
        404,
        r#"{"error":"model \"qwen9\" not found, try pulling it first"}"#.into(),
    ));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_error", "status": 404}), "");
    assert_eq!(
        m,
        "HTTP 404: model \"qwen9\" not found, try pulling it first"
    );
}

#[test]
fn busy_answers_are_retried_then_reported() {
    let server = OpenAiServer::start();
    server.push(Reply::Status(
        503,
        r#"{"error":{"message":"loading model"}}"#.into(),
    ));
    server.push(Reply::Status(
        429,
        r#"{"error":{"message":"slow down"}}"#.into(),
    ));
    server.push(Reply::Stream(sse::answer(&["at last"])));
    let t = turn_against(&server, None, "");
    assert_eq!(t.result()["content"], "at last");
    assert_eq!(server.requests().len(), 3);
    // The bodies are the same request each time.
    let reqs = server.requests();
    assert_eq!(reqs[0].body, reqs[2].body);

    let server = OpenAiServer::start();
    for _ in 0..3 {
        server.push(Reply::Status(
            429,
            r#"{"error":{"message":"slow down"}}"#.into(),
        ));
    }
    server.push(Reply::Stream(sse::answer(&["never sent"])));
    let t = turn_against(&server, None, "max_retries = 1");
    let m = failed(&t, json!({"reason": "provider_error", "status": 429}), "");
    assert_eq!(m, "HTTP 429: slow down");
    assert_eq!(server.requests().len(), 2, "1 try + max_retries");
}

#[test]
fn a_stream_cut_mid_answer_keeps_the_partial_text() {
    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::content("par"),
        sse::content("tial"),
        Step::Cut,
    ]));
    let d = openai::start(&config(&server, ""));
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let t = c.prompt("s-1", "hi");
    t.check("s-1");
    assert_eq!(t.chunks().concat(), "partial");
    let m = failed(&t, json!({"reason": "provider_protocol"}), "partial");
    assert!(m.starts_with("stream cut: "), "{m}");
    let rows = c.ok("session/messages", json!({"session_id": "s-1"}));
    let rows: Vec<(Value, Value)> = items(&rows["messages"])
        .iter()
        .map(|r| (r["role"].clone(), r["content"].clone()))
        .collect();
    assert_eq!(
        rows,
        [
            (json!("user"), json!("hi")),
            (json!("assistant"), json!("partial")),
            (json!("system"), json!(format!("Turn failed: {m}"))),
        ]
    );
}

#[test]
fn a_stream_that_ends_without_done_is_a_protocol_failure() {
    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![sse::role(), sse::content("a")]));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_protocol"}), "a");
    assert_eq!(m, "stream cut: the server closed it before [DONE]");
    assert_eq!(merged(t.updates())[0], msg("s-1", "a"));
}

#[test]
fn malformed_json_and_a_non_stream_answer_are_protocol_failures() {
    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![
        sse::content("ok "),
        Step::Bytes("data: {not json}\n\n".into()),
    ]));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_protocol"}), "ok ");
    assert_eq!(
        m,
        "malformed chunk (key must be a string at line 1 column 2): {not json}"
    );

    // A server that ignores `stream: true` and answers one JSON object.
    let server = OpenAiServer::start();
    server.push(Reply::Status(
        200,
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#.into(),
    ));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_protocol"}), "");
    assert_eq!(m, "stream cut: the server closed it before [DONE]");

    // An error object inside the stream (vLLM, OpenRouter).
    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![
        sse::content("x"),
        Step::Bytes("data: {\"error\":{\"message\":\"overloaded\",\"code\":502}}\n\n".into()),
    ]));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_error"}), "x");
    assert_eq!(m, "error in stream: overloaded");
}

#[test]
fn silence_past_the_request_timeout_is_a_timeout() {
    let server = OpenAiServer::start();
    server.push(Reply::Silent);
    let t = turn_against(&server, None, "request_timeout_secs = 1");
    let m = failed(&t, json!({"reason": "provider_timeout"}), "");
    assert_eq!(m, "request: no answer within 1 s");
    server.wait_client_closed(0);

    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![
        sse::content("a"),
        Step::HoldUntilClosed,
    ]));
    let t = turn_against(&server, None, "request_timeout_secs = 1");
    let m = failed(&t, json!({"reason": "provider_timeout"}), "a");
    assert_eq!(m, "stream: no answer within 1 s");
    server.wait_client_closed(0);
}

#[test]
fn cancel_mid_stream_closes_the_request_at_once() {
    let server = OpenAiServer::start();
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::content("thinking about it"),
        Step::HoldUntilClosed,
    ]));
    let d = openai::start(&config(&server, ""));
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let pid = c.start_prompt("s-1", "hi");
    c.until_update(|u| u["type"] == "agent_message_chunk");
    let cid = c.send("session/cancel", json!({"session_id": "s-1"}));
    let t = c.until_answer(&pid);
    assert!(t.frames.iter().any(|f| f.answers(&cid)));
    assert_eq!(t.result()["stop_reason"], "cancelled");
    assert_eq!(t.result()["content"], "thinking about it");
    // The server saw the connection closed (it holds it until then).
    assert!(server.wait_client_closed(0).client_closed);
}

#[test]
fn data_that_is_not_utf8_fails_the_turn_at_once_keeping_the_text() {
    let server = OpenAiServer::start();
    // An invalid byte inside a content delta, then a stream that stays
    // open: the turn must fail on the bad event, not wait for the close.
    let mut bad = br#"data: {"choices":[{"index":0,"delta":{"content":"caf"#.to_vec();
    bad.extend_from_slice(b"\xC3(\"}}]}\n\n");
    server.push(Reply::Stream(vec![
        sse::role(),
        sse::content("par"),
        sse::content("tial"),
        Step::Raw(bad),
        sse::content("never"),
        Step::HoldUntilClosed,
    ]));
    let t = turn_against(&server, None, "request_timeout_secs = 30");
    let m = failed(&t, json!({"reason": "provider_protocol"}), "partial");
    assert_eq!(
        m,
        "malformed event stream: event data is not UTF-8 (byte 46)"
    );
    assert_eq!(t.chunks().concat(), "partial");
    assert!(server.wait_client_closed(0).client_closed);
}

/// `status` with `Retry-After: <value>` and an OpenAI error body.
fn busy(status: u16, retry_after: &str, message: &str) -> Reply {
    Reply::StatusWith(
        status,
        vec![("retry-after".into(), retry_after.into())],
        json!({"error": {"message": message}}).to_string(),
    )
}

#[test]
fn retry_after_seconds_are_honoured_up_to_the_bound() {
    // The server's delay replaces the backoff (10 ms in these configs).
    let server = OpenAiServer::start();
    server.push(busy(429, "1", "slow down"));
    server.push(Reply::Stream(sse::answer(&["waited"])));
    let started = std::time::Instant::now();
    let t = turn_against(&server, None, "");
    assert_eq!(t.result()["content"], "waited");
    assert_eq!(server.requests().len(), 2);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "retried after {:?}, before the server's Retry-After: 1",
        started.elapsed()
    );

    // Longer than the 30 s bound: reported at once, not retried.
    let server = OpenAiServer::start();
    server.push(busy(503, "120", "loading model"));
    server.push(Reply::Stream(sse::answer(&["never sent"])));
    let t = turn_against(&server, None, "");
    let m = failed(&t, json!({"reason": "provider_error", "status": 503}), "");
    assert_eq!(
        m,
        "HTTP 503: loading model (the server asks to retry after 120 s, more than the 30 s bound)"
    );
    assert_eq!(server.requests().len(), 1);

    // The HTTP-date form is not read: the backoff applies.
    let server = OpenAiServer::start();
    server.push(busy(429, "Wed, 21 Oct 2015 07:28:00 GMT", "slow down"));
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let t = turn_against(&server, None, "");
    assert_eq!(t.result()["content"], "ok");
    assert_eq!(server.requests().len(), 2);
}
