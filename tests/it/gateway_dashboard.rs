//! The gateway's web surface over real HTTP (docs/gateway.md): the
//! dashboard's embedded files with their exact headers and ETag
//! revalidation, the Origin check on the WebSocket upgrade, the Host check
//! against DNS rebinding, `POST /rpc` with and without a bearer token, and
//! `zeroclaw pair` / `pairing/code`.

use crate::common;
use crate::gateway_support;

use gateway_support::{http, http_head, start, Gateway, HttpAnswer};
use serde_json::{json, Value};

const CSP: &str = "default-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn get(gw: &Gateway, path: &str, extra: &str) -> HttpAnswer {
    http(
        gw.port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{extra}Connection: close\r\n\r\n",
            gw.port
        ),
    )
}

fn file(name: &str) -> String {
    let path = format!("{}/web/dashboard/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn etag_of(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(file(name).as_bytes());
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn security_headers(a: &HttpAnswer) {
    assert_eq!(a.header("content-security-policy"), Some(CSP), "{a:?}");
    assert_eq!(a.header("x-content-type-options"), Some("nosniff"), "{a:?}");
    assert_eq!(a.header("referrer-policy"), Some("no-referrer"), "{a:?}");
}

#[test]
fn get_root_serves_the_embedded_page_with_exact_headers() {
    let gw = Gateway::start();
    let a = get(&gw, "/", "");
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(a.header("cache-control"), Some("no-cache"));
    assert_eq!(a.header("etag"), Some(etag_of("index.html").as_str()));
    security_headers(&a);
    assert_eq!(a.body, file("index.html"));
    // No inline script or style in the page: CSP would block them.
    assert!(
        !a.body.contains("<script>") && !a.body.contains("style="),
        "{}",
        a.body
    );

    for (name, ty) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("dom.js", "text/javascript; charset=utf-8"),
        ("rpc.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
    ] {
        let a = get(&gw, &format!("/assets/{name}"), "");
        assert_eq!(a.status, 200, "{name}: {a:?}");
        assert_eq!(a.header("content-type"), Some(ty), "{name}");
        assert_eq!(a.header("cache-control"), Some("no-cache"), "{name}");
        assert_eq!(a.header("etag"), Some(etag_of(name).as_str()), "{name}");
        security_headers(&a);
        assert_eq!(a.body, file(name), "{name}");
    }
    // Only embedded names are served; the answer still carries the headers.
    let a = get(&gw, "/assets/../Cargo.toml", "");
    assert_eq!(a.status, 404, "{a:?}");
    security_headers(&a);
    assert_eq!(get(&gw, "/assets/nope.js", "").status, 404);
}

#[test]
fn a_matching_etag_is_answered_304_without_a_body() {
    let gw = Gateway::start();
    let tag = etag_of("app.js");
    let a = get(&gw, "/assets/app.js", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(a.status, 304, "{a:?}");
    assert_eq!(a.body, "");
    assert_eq!(a.header("etag"), Some(tag.as_str()));
    assert_eq!(a.header("cache-control"), Some("no-cache"));
    security_headers(&a);
    // A list containing it, and W/ (weak comparison), match too.
    let a = get(
        &gw,
        "/assets/app.js",
        &format!("If-None-Match: \"x\", W/{tag}\r\n"),
    );
    assert_eq!(a.status, 304, "{a:?}");
    // Another file's tag does not.
    let a = get(
        &gw,
        "/assets/app.js",
        &format!("If-None-Match: {}\r\n", etag_of("dom.js")),
    );
    assert_eq!(a.status, 200, "{a:?}");
}

fn upgrade(gw: &Gateway, host: &str, origin: Option<&str>) -> HttpAnswer {
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    http_head(
        gw.port,
        &format!(
            "GET /ws HTTP/1.1\r\nHost: {host}\r\n{origin}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        ),
    )
}

#[test]
fn a_cross_origin_upgrade_is_refused_403_and_the_own_origin_accepted() {
    let gw = start("allowed_origins = [\"https://tools.example\"]", &[]);
    let host = format!("127.0.0.1:{}", gw.port);
    for bad in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        // Same host, another port or scheme: another origin.
        format!("http://127.0.0.1:{}", gw.port + 1),
        format!("https://127.0.0.1:{}", gw.port),
        // localhost is a different origin from 127.0.0.1 for the browser.
        format!("http://localhost:{}", gw.port),
    ] {
        let a = upgrade(&gw, &host, Some(&bad));
        assert_eq!(a.status, 403, "Origin {bad}: {a:?}");
        security_headers(&a);
    }
    let a = http(
        gw.port,
        &format!("GET /ws HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
    );
    assert_eq!(a.json(), json!({"error": "origin_not_allowed"}));
    for good in [
        Some(format!("http://{host}")),
        Some("https://tools.example".to_owned()),
        None,
    ] {
        let a = upgrade(&gw, &host, good.as_deref());
        assert_eq!(a.status, 101, "Origin {good:?}: {a:?}");
    }
    // Through localhost, the page's origin is http://localhost:PORT.
    let local = format!("localhost:{}", gw.port);
    assert_eq!(
        upgrade(&gw, &local, Some(&format!("http://{local}"))).status,
        101
    );
    // A cross-origin POST /pair is refused before the code is looked at
    // (so it does not count against the lockout either).
    let a = http(
        gw.port,
        &format!("POST /pair HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nX-Pairing-Code: 000000\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(a.status, 403, "{a:?}");
    assert!(gw.daemon.log.events_named("pairing_refused").is_empty());
}

#[test]
fn a_rebinding_host_is_refused_421_and_listed_hosts_pass() {
    let gw = start("allowed_hosts = [\"zeroclaw.lan\"]", &[]);
    let p = gw.port;
    for bad in [
        format!("evil.example:{p}"),
        format!("127.0.0.1.evil.example:{p}"),
        format!("localhost.evil.example:{p}"),
    ] {
        for req in [
            format!("GET / HTTP/1.1\r\nHost: {bad}\r\nConnection: close\r\n\r\n"),
            format!("POST /pair HTTP/1.1\r\nHost: {bad}\r\nX-Pairing-Code: 000000\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            format!("POST /rpc HTTP/1.1\r\nHost: {bad}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"),
        ] {
            let a = http(p, &req);
            assert_eq!(a.status, 421, "{req}: {a:?}");
            assert_eq!(a.json(), json!({"error": "host_not_allowed"}));
            security_headers(&a);
        }
        assert_eq!(upgrade(&gw, &bad, None).status, 421, "{bad}");
    }
    for good in [
        format!("127.0.0.1:{p}"),
        format!("localhost:{p}"),
        format!("[::1]:{p}"),
        format!("ZeroClaw.LAN:{p}"),
    ] {
        let a = http(
            p,
            &format!("GET / HTTP/1.1\r\nHost: {good}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(a.status, 200, "{good}: {a:?}");
    }
    assert!(gw.daemon.log.events_named("pairing_refused").is_empty());
}

fn post_rpc(gw: &Gateway, token: Option<&str>, body: &str) -> HttpAnswer {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    http(
        gw.port,
        &format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            gw.port,
            body.len()
        ),
    )
}

#[test]
fn post_rpc_answers_with_a_bearer_token_and_refuses_without() {
    let gw = Gateway::start();
    let status = r#"{"jsonrpc":"2.0","method":"status","id":7}"#;

    let a = post_rpc(&gw, None, status);
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    assert_eq!(a.header("content-type"), Some("application/json"));
    security_headers(&a);
    assert_eq!(
        a.json(),
        json!({"jsonrpc":"2.0","error":{"code":-32010,"message":"Remote connections must present authToken","data":{"reason":"token_required"}},"id":null})
    );
    let a = post_rpc(&gw, Some("zc_not_a_token"), status);
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(
        a.json()["error"]["data"],
        json!({"reason": "credential_rejected"})
    );

    let token = gw.create_token();
    let a = post_rpc(&gw, Some(&token), status);
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("application/json"));
    let v = a.json();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["principal_id"], "shared-operator", "{v}");

    // An array: each element one frame, in order; answers as an array,
    // notifications unanswered; methods that need a channel refused.
    let batch = json!([
        {"jsonrpc":"2.0","method":"session/new","params":{"agent_alias":"echo","session_id":"h-1"},"id":1},
        {"jsonrpc":"2.0","method":"session/prompt","params":{"session_id":"h-1","prompt":"hi"},"id":2},
        {"jsonrpc":"2.0","method":"logs/subscribe","id":3},
        {"jsonrpc":"2.0","method":"status"},
        {"jsonrpc":"2.0","method":"file/upload/begin","params":{},"id":4},
        {"jsonrpc":"2.0","method":"session/list","id":"five"}
    ]);
    let a = post_rpc(&gw, Some(&token), &batch.to_string());
    assert_eq!(a.status, 200, "{a:?}");
    let v = a.json();
    let answers = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    let ids: Vec<&Value> = answers.iter().map(|x| &x["id"]).collect();
    assert_eq!(
        ids,
        [&json!(1), &json!(2), &json!(3), &json!(4), &json!("five")]
    );
    assert_eq!(answers[0]["result"]["session_id"], "h-1", "{v}");
    for (i, m) in [(1, "session/prompt"), (2, "logs/subscribe")] {
        assert_eq!(
            answers[i]["error"],
            json!({"code":-32012,"message":format!("{m} needs a connection that stays open: use the WebSocket"),"data":{"reason":"channel_required"}}),
            "{v}"
        );
    }
    assert_eq!(answers[3]["error"]["data"]["reason"], "local_only", "{v}");
    assert_eq!(
        answers[4]["result"]["sessions"][0]["session_id"], "h-1",
        "{v}"
    );

    // Only notifications: 204. Not JSON: 415. Too many: 413.
    let a = post_rpc(&gw, Some(&token), r#"{"jsonrpc":"2.0","method":"status"}"#);
    assert_eq!(a.status, 204, "{a:?}");
    let a = http(
        gw.port,
        &format!("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"),
    );
    assert_eq!(a.status, 415, "{a:?}");
    let many: Vec<Value> = (0..17)
        .map(|i| json!({"jsonrpc":"2.0","method":"status","id":i}))
        .collect();
    let a = post_rpc(&gw, Some(&token), &Value::from(many).to_string());
    assert_eq!(a.status, 413, "{a:?}");
    assert_eq!(a.json(), json!({"error":"batch_too_large","max":16}));
    // Garbage is answered as the local socket answers it.
    let a = post_rpc(&gw, Some(&token), "nope");
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json()["error"]["code"], -32700);

    // A revoked token is refused at once.
    let mut local = gw.daemon.client();
    let r = local.call("pairing/revoke", json!({"token": token}), json!(1));
    assert_eq!(r["result"]["revoked"], true, "{r}");
    let a = post_rpc(&gw, Some(&token), status);
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(
        a.json()["error"]["data"],
        json!({"reason": "credential_rejected"})
    );

    // The token is never logged (the principal is).
    assert!(
        !gw.daemon.log.text().contains(&token),
        "the token is in the log"
    );
}

#[tokio::test]
async fn zeroclaw_pair_prints_a_code_that_post_pair_redeems() {
    // A token is paired: no code at startup, `zeroclaw pair` issues one.
    let gw = Gateway::start();
    let first = gw.pairing_code().expect("a code at startup");
    let _ = gw.pair(Some(&first));
    let (code, out, err) = common::run_cli_code({
        let mut c = gw.daemon.cli();
        c.arg("pair");
        c
    });
    assert_eq!(code, Some(0), "{out}\n{err}");
    let printed = out.trim().to_owned();
    assert!(
        printed.len() == 12 && printed.bytes().all(|b| b.is_ascii_digit()),
        "{out}"
    );
    assert_ne!(printed, first, "a used code is never shown again");
    // Asked again, the same open code.
    let mut local = gw.daemon.client();
    let v = local.call("pairing/code", json!({}), json!(1));
    assert_eq!(
        v["result"],
        json!({"code": printed, "issued": false, "redeemable": true}),
        "{v}"
    );
    let a = gw.pair(Some(&printed));
    assert_eq!(a.status, 200, "{a:?}");
    let token = a.json()["token"].as_str().unwrap().to_owned();
    // Single use; the next call issues a new one.
    assert_eq!(gw.pair(Some(&printed)).status, 403);
    let v = local.call("pairing/code", json!({}), json!(2));
    assert_eq!(v["result"]["issued"], true, "{v}");
    // Local only: a token holder cannot mint codes over the WebSocket.
    let mut ws = gw.ws().await;
    ws.initialize(Some(&token)).await;
    let v = ws.call("pairing/code", json!({}), json!(3)).await;
    assert_eq!(v["error"]["code"], -32012, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "local_only", "{v}");
    // The code issued by pairing/code is not logged.
    assert!(!gw.daemon.log.text().contains(&format!("\"{printed}\"")));
}
