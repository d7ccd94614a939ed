//! The gateway facing strangers (docs/security.md), over real sockets
//! against the real binary: no pairing code by brute force from any choice
//! of loopback address, revocation that cuts a listening client at once,
//! a door strangers cannot shut (WebSocket and slowloris floods while a
//! paired client works), a kept-alive HTTP client that loses nothing, and
//! `POST /rpc` answers charged to the memory budget.

// Unix only: a hundred 127.0.0.x source addresses and a thousand sockets at once.

use crate::common;
use crate::gateway_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use gateway_support::{error_of, write_gateway_config, Gateway, Got, Ws};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `POST /pair` from the loopback address `ip`; status and body.
async fn pair_from(ip: IpAddr, port: u16, code: &str) -> (u16, Value) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(ip, 0)).unwrap();
    let mut s = socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let req = format!("POST /pair HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pairing-Code: {code}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(common::RECV_TIMEOUT, s.read_to_end(&mut raw))
        .await
        .expect("no answer to /pair")
        .unwrap();
    let a = gateway_support::parse_http(&String::from_utf8_lossy(&raw));
    (a.status, a.json())
}

#[tokio::test]
async fn wrong_codes_from_a_hundred_loopback_addresses_burn_the_code() {
    let gw = Gateway::start();
    let code = gw.pairing_code().expect("a code at startup");
    assert_eq!(code.len(), 12, "{code}");
    assert!(code.bytes().all(|b| b.is_ascii_digit()), "{code}");
    let wrong = if code == "000000000000" {
        "000000000001"
    } else {
        "000000000000"
    };
    let mut statuses = Vec::new();
    for n in 2..102u8 {
        let (status, _) = pair_from(IpAddr::from([127, 0, 0, n]), gw.port, wrong).await;
        statuses.push(status);
    }
    // All of loopback is one source: five refusals, then locked out.
    assert_eq!(statuses[..5], [401; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    // The right code from yet another address gets no token.
    let (status, body) = pair_from(IpAddr::from([127, 0, 0, 200]), gw.port, &code).await;
    assert_eq!(status, 429, "{body}");
    assert!(gateway_support::paired_in_file(&gw.daemon.config_dir).is_empty());
    // Every refusal is logged (the log arrives on its own pipe: wait for the
    // last), and the code never is (only at startup).
    let deadline = std::time::Instant::now() + common::RECV_TIMEOUT;
    while gw.daemon.log.events_named("pairing_refused").len() < 101 {
        assert!(
            std::time::Instant::now() < deadline,
            "fewer than 101 pairing_refused events"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Five wrong guesses in total burned the code itself, whatever the lockout.
    let burned = gw.daemon.log.events_named("pairing_code_burned");
    assert_eq!(burned.len(), 1, "{burned:?}");
    assert_eq!(burned[0]["wrong_guesses"], 5);
    let locked = gw.daemon.log.events_named("pairing_locked_out");
    assert_eq!(locked[0]["source"], "loopback", "{locked:?}");
    assert_eq!(gw.daemon.log.events_named("pairing_refused").len(), 101);
    let lines = gw.daemon.log.text();
    let naming: Vec<&str> = lines.lines().filter(|l| l.contains(&code)).collect();
    assert_eq!(naming.len(), 1, "{naming:?}");
    assert!(
        naming[0].contains(r#""event":"pairing_code""#),
        "{naming:?}"
    );
    // Only the local user opens a new one.
    let mut local = gw.daemon.client();
    let v = local.call("pairing/code", json!({}), json!(1));
    assert_eq!(v["result"]["issued"], true, "{v}");
    assert_ne!(v["result"]["code"], code.as_str(), "{v}");
}

/// Reads `ws` until a text message satisfies `pred`; every message read.
async fn ws_until(ws: &mut Ws, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let v = ws.recv_json().await;
        let done = pred(&v);
        seen.push(v);
        if done {
            return seen;
        }
    }
}

#[tokio::test]
async fn a_revoked_token_hears_nothing_more_and_its_answers_are_dropped() {
    let gw = Gateway::start();
    let token = gw.create_token();
    let mut ws = gw.ws().await;
    let v = ws
        .call(
            "initialize",
            json!({"protocolVersion":1,"authToken":token,"clientCapabilities":{"elicitation":{"form":{}}}}),
            json!(0),
        )
        .await;
    assert!(v.get("result").is_some(), "{v}");
    // The listener joins a session the local client prompts.
    let mut local = gw.daemon.client();
    local.new_session("s", "chat");
    let v = ws
        .call("session/attach", json!({"session_id": "s"}), json!(1))
        .await;
    assert!(v.get("result").is_some(), "{v}");
    // It hears a turn and is asked the turn's question.
    let ask = local.start_prompt("s", "first\n::ask Continue?\nafter");
    let seen = ws_until(&mut ws, |v| v["method"] == "elicitation/create").await;
    assert!(
        seen.iter()
            .any(|v| v["params"]["update"]["content"]["text"] == "first"
                || v.to_string().contains("first")),
        "{seen:?}"
    );
    let question = seen.last().unwrap().clone();

    // Revoked while the question waits: the listener is cut off at once.
    let mut admin = gw.daemon.client();
    let v = admin.call("pairing/revoke", json!({"token": token}), json!("r"));
    assert_eq!(v["result"]["revoked"], true, "{v}");
    let cut = gw
        .daemon
        .log
        .wait_event(0, "connection_cut", common::RECV_TIMEOUT)
        .expect("no connection_cut event");
    assert_eq!(cut.1["reason"], "token_revoked", "{cut:?}");
    // Its answer to the question never reaches the agent.
    ws.send_json(&json!({"jsonrpc":"2.0","id":question["id"],"result":{"action":"accept","content":{"answer":"LEAKED"}}}))
        .await;
    let turn = local.until_answer(&ask);
    assert!(
        !format!("{:?}", turn.raw()).contains("LEAKED"),
        "{:?}",
        turn.raw()
    );
    // A later turn on the session is not sent to it at all.
    local.prompt_ok("s", "second turn");
    match ws.next(Duration::from_millis(500)).await {
        Got::Timeout => {}
        other => panic!("the revoked client still hears the session: {other:?}"),
    }
    // Its next request gets the §6.5 answer, as before.
    let v = ws.call("status", json!({}), json!(2)).await;
    assert_eq!(error_of(&v)["data"]["reason"], "token_revoked", "{v}");
}

#[tokio::test]
async fn a_kept_alive_http_client_loses_no_request_past_the_old_ten_seconds() {
    let gw = Gateway::start();
    let token = gw.create_token();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/rpc", gw.port);
    for i in 0..13 {
        let r = client
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(json!({"jsonrpc":"2.0","method":"status","id":i}).to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("request {i} failed: {e}"));
        assert_eq!(r.status(), 200, "request {i}");
        let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(v["id"], i, "{v}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // One connection carried them all: every request's peer has one port.
    let peers: std::collections::BTreeSet<String> = gw
        .daemon
        .log
        .events_named("connection_closed")
        .iter()
        .filter_map(|e| e["peer"].as_str().map(str::to_owned))
        .filter(|p| p.starts_with("http:"))
        .collect();
    assert_eq!(peers.len(), 1, "{peers:?}");
}

/// One turn of `bytes` echoed on session `sid` (a long deadline).
fn big_turn(c: &mut common::Client, sid: &str, bytes: usize) {
    let prompt = "y".repeat(bytes);
    let id = c.start_prompt(sid, &prompt);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = c.try_recv_line(left).expect("the turn's frames");
        if line.starts_with(r#"{"jsonrpc":"2.0","method":"session/update""#) {
            continue;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            assert!(v.get("result").is_some(), "{v}");
            return;
        }
    }
}

#[tokio::test]
async fn post_rpc_batches_are_charged_to_the_memory_budget() {
    let dir = common::TestDir::new();
    let port = gateway_support::free_port();
    write_gateway_config(&dir, port, "");
    let daemon = common::Daemon::builder()
        .config_dir(dir.config_dir())
        .env("ZEROCLAW_MEMORY_BUDGET_MIB", "48")
        .spawn();
    let mut local = daemon.client();
    let token = local.call("pairing/create", json!({}), json!("t"))["result"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    local.new_session("big", "chat");
    for _ in 0..2 {
        big_turn(&mut local, "big", 3 << 20);
    }
    let batch: Vec<Value> = (0..16)
        .map(|i| json!({"jsonrpc":"2.0","method":"session/messages","params":{"session_id":"big"},"id":i}))
        .collect();
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/rpc"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(Value::Array(batch).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answers: Vec<Value> = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(answers.len(), 16);
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32004)
        .collect();
    assert!(
        !refused.is_empty(),
        "every answer was built past the budget: none refused"
    );
    for a in &refused {
        assert_eq!(a["error"]["data"]["limit"], "memory", "{a}");
    }
    // The first ones were answered; the budget is given back afterwards.
    assert!(answers[0].get("result").is_some());
    let v = local.call("status", json!({}), json!("after"));
    assert!(v.get("result").is_some(), "{v}");
}

/// Opens a TCP connection and sends half a request head.
async fn slowloris(port: u16) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let _ = s
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")
        .await;
    s
}

/// `GET /` over a fresh connection: the status.
async fn get_page(port: u16) -> u16 {
    tokio::task::spawn_blocking(move || {
        gateway_support::http(
            port,
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .status
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_flooding_the_gateway_do_not_shut_the_door() {
    let gw = Gateway::start();
    let mut paired = gw.ws_initialized().await;
    // 600 WebSocket sessions that never initialize, and 300 slowloris sockets.
    let mut strangers = Vec::new();
    for _ in 0..600 {
        strangers.push(Ws::connect(gw.port).await);
    }
    let mut lorises = Vec::new();
    for _ in 0..300 {
        lorises.push(slowloris(gw.port).await);
    }
    // The paired client works, the page and /pair answer, a new paired session binds.
    let v = paired.call("status", json!({}), json!("during")).await;
    assert!(v.get("result").is_some(), "{v}");
    assert_eq!(get_page(gw.port).await, 200);
    let port = gw.port;
    let pair = tokio::task::spawn_blocking(move || gateway_support::post_pair(port, None))
        .await
        .unwrap();
    assert_eq!(pair.status, 401, "{pair:?}");
    let mut late = gw.ws_initialized().await;
    let v = late.call("status", json!({}), json!("late")).await;
    assert!(v.get("result").is_some(), "{v}");
    // The strangers' oldest were evicted; the rest are closed once the bind
    // timeout passes.
    assert!(!gw.daemon.log.events_named("connection_evicted").is_empty());
    let last = strangers.last_mut().unwrap();
    match last.next(Duration::from_secs(10)).await {
        Got::Close(Some(f)) => assert_eq!(u16::from(f.code), 1008, "{f:?}"),
        other => panic!("an unbound session was not closed: {other:?}"),
    }
    let v = paired.call("status", json!({}), json!("after")).await;
    assert!(v.get("result").is_some(), "{v}");
    drop(lorises);
}
