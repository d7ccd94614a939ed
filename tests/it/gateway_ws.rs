//! §12 over a real WebSocket on loopback: the same methods and rules
//! as the local socket, with the gateway's differences — a token is
//! required, uploads are local-only, `file/attach` takes no `path` — and its
//! framing (one message per text frame, 8 MiB), peer labels, audit events,
//! revocation, connection counting and shutdown.

// Unix only: one test stops the daemon with SIGTERM.

use crate::common;
use crate::gateway_support;

use common::values::items;
use std::time::Duration;

use futures_util::SinkExt;

use common::{Client, FRAME_TOO_LARGE, MAX_FRAME, RECV_TIMEOUT};
use gateway_support::{error_of, Gateway, Got, Ws};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn initialize_needs_a_paired_token_and_binds_the_shared_operator() {
    let gw = Gateway::start();
    let mut ws = gw.ws().await;
    let peer = ws.peer_label();

    // Before initialize, as on the local socket.
    let v = ws.call("status", json!({}), json!(1)).await;
    assert_eq!(error_of(&v)["data"]["reason"], "not_initialized", "{v}");

    let v = ws.initialize(None).await;
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","error":{"code":-32010,"message":"Remote connections must present authToken","data":{"reason":"token_required"}},"id":"init"})
    );
    let v = ws.initialize(Some("zc_nope")).await;
    assert_eq!(error_of(&v)["data"]["reason"], "credential_rejected", "{v}");

    let token = gw.create_token();
    let v = ws.initialize(Some(&token)).await;
    let r = &v["result"];
    assert_eq!(r["principalId"], "shared-operator", "{v}");
    assert_eq!(r["transport"], "wss", "{v}");
    let caps: Vec<&str> = items(&r["capabilities"])
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(caps.contains(&"file/attach"), "{caps:?}");
    assert!(
        !caps.iter().any(|c| c.starts_with("file/upload/")),
        "{caps:?}"
    );
    let v = ws.call("status", json!({}), json!(2)).await;
    assert_eq!(v["result"]["principal_id"], "shared-operator", "{v}");

    // Audit events carry the wss peer label (§2.5).
    gw.wait_event_of("connection_accepted", &peer);
    let bound = gw.wait_event_of("principal_bound", &peer);
    assert_eq!(bound["principal_id"], "shared-operator");
    assert_eq!(bound["auth_provider"], "native");
    ws.inner.close(None).await.unwrap();
    let closed = gw.wait_event_of("connection_closed", &peer);
    assert_eq!(closed["principal_id"], "shared-operator");
    assert!(
        !gw.daemon.log.text().contains(&token),
        "the token is logged"
    );
}

/// Runs one prompt (with a thought, a tool call and an ask) and returns every
/// frame from the `session/prompt` request to its answer, the session id
/// replaced by `S`.
async fn prompt_frames_ws(ws: &mut Ws, sid: &str) -> Vec<Value> {
    let v = ws
        .call(
            "session/new",
            json!({"agent_alias":"echo","session_id":sid,"chat_mode":"acp"}),
            json!("new"),
        )
        .await;
    assert!(v.get("result").is_some(), "{v}");
    ws.send_json(&prompt_request(sid)).await;
    let mut frames = Vec::new();
    loop {
        let f = ws.recv_json().await;
        if f["method"] == "elicitation/create" {
            ws.send_json(&json!({"jsonrpc":"2.0","result":{"action":"accept","content":{"answer":"yes"}},"id":f["id"]}))
                .await;
        }
        let done = f["id"] == "p";
        frames.push(normalize(f, sid));
        if done {
            return frames;
        }
    }
}

fn prompt_frames_local(c: &mut Client, sid: &str) -> Vec<Value> {
    let v = c.call(
        "session/new",
        json!({"agent_alias":"echo","session_id":sid,"chat_mode":"acp"}),
        json!("new"),
    );
    assert!(v.get("result").is_some(), "{v}");
    c.send_json(&prompt_request(sid));
    let mut frames = Vec::new();
    loop {
        let f = c.recv_json();
        if f["method"] == "elicitation/create" {
            c.send_json(&json!({"jsonrpc":"2.0","result":{"action":"accept","content":{"answer":"yes"}},"id":f["id"]}));
        }
        let done = f["id"] == "p";
        frames.push(normalize(f, sid));
        if done {
            return frames;
        }
    }
}

fn prompt_request(sid: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"session/prompt","params":{"session_id":sid,"prompt":"Hello there\n::think hmm\n::tool t {\"a\":1}\n::ask Continue?\nbye"},"id":"p"})
}

fn normalize(v: Value, sid: &str) -> Value {
    serde_json::from_str(&v.to_string().replace(sid, "S")).unwrap()
}

#[tokio::test]
async fn a_prompt_streams_the_same_frames_as_over_the_socket() {
    let gw = Gateway::start();
    let mut local = gw.daemon.connect();
    let init = local.call(
        "initialize",
        json!({"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}),
        json!(0),
    );
    assert!(init.get("result").is_some(), "{init}");
    let expected = prompt_frames_local(&mut local, "over-local");

    let token = gw.create_token();
    let mut ws = gw.ws().await;
    let init = ws
        .call(
            "initialize",
            json!({"protocolVersion":1,"authToken":token,"clientCapabilities":{"elicitation":{"form":{}}}}),
            json!(0),
        )
        .await;
    assert!(init.get("result").is_some(), "{init}");
    let got = prompt_frames_ws(&mut ws, "over-ws").await;
    assert_eq!(got, expected);
    // It really streamed: chunks, a thought, a tool call and result, an ask, turn_complete.
    let types: Vec<&str> = got
        .iter()
        .filter_map(|f| f["params"]["type"].as_str())
        .collect();
    for t in [
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_result",
        "turn_complete",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(
        got.iter().any(|f| f["method"] == "elicitation/create"),
        "{got:?}"
    );
    assert_eq!(got.last().unwrap()["result"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn uploads_are_local_only_before_and_after_initialize() {
    let gw = Gateway::start();
    let mut ws = gw.ws().await;
    let check = |v: &Value| {
        assert_eq!(error_of(v)["code"], -32012, "{v}");
        assert_eq!(error_of(v)["data"]["reason"], "local_only", "{v}");
    };
    for m in [
        "file/upload/begin",
        "file/upload/chunk",
        "file/upload/commit",
    ] {
        check(&ws.call(m, json!({}), json!(m)).await);
    }
    let token = gw.create_token();
    assert!(ws.initialize(Some(&token)).await.get("result").is_some());
    for m in [
        "file/upload/begin",
        "file/upload/chunk",
        "file/upload/commit",
    ] {
        check(
            &ws.call(m, json!({"session_id":"x","size_bytes":1}), json!(m))
                .await,
        );
    }
}

#[tokio::test]
async fn file_attach_takes_data_but_not_paths() {
    let gw = Gateway::start();
    let mut ws = gw.ws_initialized().await;
    let v = ws
        .call(
            "session/new",
            json!({"agent_alias":"echo","session_id":"att"}),
            json!(1),
        )
        .await;
    assert!(v.get("result").is_some(), "{v}");
    let path = gw.dir.path().join("secret.txt");
    std::fs::write(&path, "secret").unwrap();
    let v = ws
        .call(
            "file/attach",
            json!({"session_id":"att","files":[{"path":path}]}),
            json!(2),
        )
        .await;
    assert_eq!(error_of(&v)["code"], -32602, "{v}");
    assert_eq!(error_of(&v)["data"]["reason"], "path_not_allowed", "{v}");
    let v = ws
        .call(
            "file/attach",
            json!({"session_id":"att","files":[{"data_b64":"dGVzdA==","filename":"t.txt"}]}),
            json!(3),
        )
        .await;
    assert_eq!(v["result"]["files"][0]["size_bytes"], 4, "{v}");
}

#[tokio::test]
async fn a_revoked_token_fails_the_next_request() {
    let gw = Gateway::start();
    let token = gw.create_token();
    let mut ws = gw.ws().await;
    assert!(ws.initialize(Some(&token)).await.get("result").is_some());
    assert!(ws
        .call("status", json!({}), json!(1))
        .await
        .get("result")
        .is_some());

    let mut local = gw.daemon.client();
    let v = local.call("pairing/revoke", json!({"token": token}), json!("r"));
    assert_eq!(v["result"]["revoked"], true, "{v}");

    let v = ws.call("status", json!({}), json!(2)).await;
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","error":{"code":-32010,"message":"Pairing token revoked: re-pair and re-initialize","data":{"reason":"token_revoked"}},"id":2})
    );
    let v = ws.call("status", json!({}), json!(3)).await;
    assert_eq!(error_of(&v)["data"]["reason"], "not_initialized", "{v}");
    // Re-initializing with the revoked token is refused too.
    let v = ws.initialize(Some(&token)).await;
    assert_eq!(error_of(&v)["data"]["reason"], "credential_rejected", "{v}");
}

/// A `status` request of exactly `len` bytes.
fn sized_status(len: usize, id: u32) -> String {
    String::from_utf8(common::sized_frame(
        &format!(r#"{{"jsonrpc":"2.0","method":"status","params":{{"pad":"@PAD@"}},"id":{id}}}"#),
        len,
    ))
    .unwrap()
}

#[tokio::test]
async fn messages_over_8_mib_get_frame_too_large_and_the_session_goes_on() {
    let gw = Gateway::start();
    let mut ws = gw.ws_initialized().await;
    let peer = ws.peer_label();
    ws.send_text(sized_status(MAX_FRAME + 1, 1)).await;
    assert_eq!(ws.recv_text().await, FRAME_TOO_LARGE);
    let rejected = gw.wait_event_of("frame_rejected", &peer);
    assert_eq!(rejected["line_len"], MAX_FRAME + 1);
    assert_eq!(rejected["reason"], "frame_too_large");
    // Exactly 8 MiB is a frame like any other.
    ws.send_text(sized_status(MAX_FRAME, 2)).await;
    let v = ws.recv_json().await;
    assert_eq!(v["id"], 2);
    assert!(v.get("result").is_some(), "{v}");
    // Binary and whitespace-only messages are ignored.
    ws.inner
        .send(Message::Binary(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":9}"
                .to_vec()
                .into(),
        ))
        .await
        .unwrap();
    ws.send_text(" \r\n\t").await;
    let v = ws.call("status", json!({}), json!(3)).await;
    assert_eq!(v["id"], 3, "{v}");
}

#[tokio::test]
async fn a_message_beyond_the_read_limit_is_answered_then_closed_1009() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    let gw = Gateway::start();
    let mut ws = gw.ws_initialized().await;
    let peer = ws.peer_label();
    // In two frames, so that the daemon has read everything when it refuses
    // the message (a refused single frame leaves bytes unread: see the next test).
    let half = zeroclaw::gateway::WS_MESSAGE_LIMIT / 2 + 1;
    let text = sized_status(2 * half, 1).into_bytes();
    let first = Frame::message(text[..half].to_vec(), OpCode::Data(Data::Text), false);
    let rest = Frame::message(text[half..].to_vec(), OpCode::Data(Data::Continue), true);
    ws.inner.send(Message::Frame(first)).await.unwrap();
    ws.inner.send(Message::Frame(rest)).await.unwrap();
    assert_eq!(ws.recv_text().await, FRAME_TOO_LARGE);
    let close = ws.expect_close(RECV_TIMEOUT).await.expect("a close code");
    assert_eq!(u16::from(close.code), 1009, "{close:?}");
    let closed = gw.wait_event_of("connection_closed", &peer);
    assert_eq!(closed["reason"], "TooLarge", "{closed}");
}

#[tokio::test]
async fn a_single_frame_beyond_the_read_limit_ends_the_session() {
    let gw = Gateway::start();
    let mut ws = gw.ws_initialized().await;
    let peer = ws.peer_label();
    let len = zeroclaw::gateway::WS_MESSAGE_LIMIT + 1;
    // The daemon refuses it from the frame header and closes while the rest
    // is still arriving, so the client may see a reset instead of the answer.
    let _ = ws
        .inner
        .send(Message::Text(sized_status(len, 1).into()))
        .await;
    match ws.next(RECV_TIMEOUT).await {
        Got::Text(t) => assert_eq!(t, FRAME_TOO_LARGE),
        Got::Close(f) => assert_eq!(f.map(|f| u16::from(f.code)), Some(1009)),
        Got::Gone(_) => {}
        Got::Timeout => panic!("the session is still open"),
    }
    let rejected = gw.wait_event_of("frame_rejected", &peer);
    assert_eq!(rejected["line_len"], len, "{rejected}");
    gw.wait_event_of("connection_closed", &peer);
}

/// Waits until `status.connections` (asked on `local`) is `n`.
async fn wait_connections(local: &mut Client, n: u64) {
    let deadline = std::time::Instant::now() + RECV_TIMEOUT;
    loop {
        let got = local.status()["connections"].as_u64().unwrap();
        if got == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{got} connections, expected {n}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn websocket_sessions_are_connections() {
    let gw = Gateway::start();
    let token = gw.create_token();
    let mut local = gw.daemon.client();
    let mut a = gw.ws().await;
    assert!(a.initialize(Some(&token)).await.get("result").is_some());
    // Counted in from the upgrade (the client may see the 101 a moment before).
    let b = gw.ws().await;
    wait_connections(&mut local, 3).await;
    let v = a.call("status", json!({}), json!(1)).await;
    assert_eq!(v["result"]["connections"], 3, "{v}");
    // Counted out once fully closed.
    drop(b);
    wait_connections(&mut local, 2).await;
}

#[tokio::test]
async fn ephemeral_mode_counts_websocket_clients() {
    let mut gw = gateway_support::start("", &["--ephemeral"]);
    let mut ws = gw.ws().await;
    // Well past the 1 s grace: the WebSocket client keeps the daemon alive.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        gw.daemon.is_running(),
        "exited with a WebSocket client connected"
    );
    let v = ws.call("nope", json!({}), json!(1)).await;
    assert_eq!(error_of(&v)["code"], -32601);
    ws.inner.close(None).await.unwrap();
    let status = gw
        .daemon
        .wait_exit(Duration::from_secs(10))
        .expect("the daemon did not exit after its last (WebSocket) client left");
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn sigterm_closes_websocket_sessions_going_away() {
    let mut gw = Gateway::start();
    let mut ws = gw.ws_initialized().await;
    gw.daemon.wait_for_handler(libc::SIGTERM);
    gw.daemon.signal(libc::SIGTERM);
    match ws.next(RECV_TIMEOUT).await {
        Got::Close(Some(f)) => assert_eq!(u16::from(f.code), 1001, "{f:?}"),
        other => panic!("expected Close 1001, got {other:?}"),
    }
    let status = gw
        .daemon
        .wait_exit(Duration::from_secs(10))
        .expect("no exit");
    assert_eq!(status.code(), Some(0));
    // The gateway no longer listens.
    assert!(std::net::TcpStream::connect(("127.0.0.1", gw.port)).is_err());
}
