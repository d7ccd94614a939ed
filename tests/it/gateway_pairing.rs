//! §12 and §6.7: `POST /pair` redeems the one-time code logged at
//! startup for a token committed like `pairing/create`'s; 5 failed attempts
//! lock a source out (429); the code is single-use (docs/security.md: it
//! also expires and burns after five wrong guesses from all sources). Also: binding the
//! gateway is part of startup.

use crate::common;
use crate::gateway_support;

use gateway_support::{digest, is_token, paired_in_file, post_pair, Gateway};
use serde_json::json;

#[tokio::test]
async fn the_logged_code_is_redeemed_once_for_a_token_that_initializes() {
    let gw = Gateway::start();
    let code = gw.pairing_code().expect("no pairing_code event at startup");
    assert_eq!(code.len(), 12, "{code}");
    assert!(code.bytes().all(|b| b.is_ascii_digit()), "{code}");

    let a = gw.pair(Some(&code));
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("application/json"));
    let token = a.json()["token"].as_str().unwrap().to_owned();
    assert!(is_token(&token), "{token}");
    assert_eq!(a.json().as_object().unwrap().len(), 1, "{a:?}");

    // Committed through the config path: on disk, and in the running config.
    assert_eq!(paired_in_file(&gw.daemon.config_dir), vec![digest(&token)]);
    let mut local = gw.daemon.client();
    let listed = local.call("pairing/list", json!({}), json!(1));
    assert_eq!(listed["result"]["token_hashes"], json!([digest(&token)]));

    // Single use, even with the right code.
    let again = gw.pair(Some(&code));
    assert_eq!(again.status, 403, "{again:?}");
    assert_eq!(again.json(), json!({"error": "pairing_unavailable"}));

    // The token binds the shared operator over WebSocket.
    let mut ws = gw.ws().await;
    let v = ws.initialize(Some(&token)).await;
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");

    // Neither the code's redemption nor the token is logged.
    let log = gw.daemon.log.text();
    assert!(!log.contains(&token), "the token is in the log");
    gw.daemon
        .log
        .wait_event(0, "pairing_redeemed", common::RECV_TIMEOUT)
        .expect("no pairing_redeemed event");
    assert_eq!(gw.daemon.log.events_named("pairing_redeemed").len(), 1);
}

#[tokio::test]
async fn five_failures_lock_the_client_out_for_300_s() {
    let gw = Gateway::start();
    let code = gw.pairing_code().unwrap();
    let wrong = if code == "000000000000" {
        "000000000001"
    } else {
        "000000000000"
    };
    // Missing, malformed and wrong codes all count.
    for (i, attempt) in [
        None,
        Some("123456"),
        Some("abcdef"),
        Some(wrong),
        Some(wrong),
    ]
    .into_iter()
    .enumerate()
    {
        let a = gw.pair(attempt);
        assert_eq!(a.status, 401, "attempt {i} ({attempt:?}): {a:?}");
        assert_eq!(a.json(), json!({"error": "invalid_pairing_code"}));
    }
    // Locked out: even the right code is refused, with Retry-After.
    let a = gw.pair(Some(&code));
    assert_eq!(a.status, 429, "{a:?}");
    assert_eq!(a.json()["error"], "locked_out");
    let secs = a.json()["retry_after_secs"].as_u64().unwrap();
    assert!((295..=300).contains(&secs), "{secs}");
    assert_eq!(a.header("retry-after"), Some(secs.to_string().as_str()));
    assert!(paired_in_file(&gw.daemon.config_dir).is_empty());
    gw.daemon
        .log
        .wait_event(0, "pairing_locked_out", common::RECV_TIMEOUT)
        .expect("no pairing_locked_out event");
    // Two wrong guesses did not burn the code, but the source stays locked out.
    assert_eq!(gw.pair(Some(&code)).status, 429);
}

#[test]
fn no_code_while_a_token_is_paired_or_pairing_is_off() {
    let paired = format!("paired_tokens = [\"{}\"]", "a".repeat(64));
    for extra in [paired.as_str(), "require_pairing = false\npaired_tokens = [\"bb00000000000000000000000000000000000000000000000000000000000000\"]"] {
        let gw = gateway_support::start(extra, &[]);
        assert!(gw.pairing_code().is_none(), "{extra}");
        let a = gw.pair(Some("123456789012"));
        assert_eq!(a.status, 403, "{extra}: {a:?}");
        assert_eq!(a.json(), json!({"error": "pairing_unavailable"}));
    }
}

#[test]
fn unknown_paths_are_404_and_known_paths_405_for_another_method() {
    let gw = Gateway::start();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"GET /pair HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert_eq!(gateway_support::parse_http(&raw).status, 405, "{raw}");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    s.write_all(b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert_eq!(gateway_support::parse_http(&raw).status, 404, "{raw}");
    // /ws without the upgrade headers is not an upgrade.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    s.write_all(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = gateway_support::parse_http(&raw).status;
    assert!((400..500).contains(&status), "{raw}");
}

#[test]
fn a_taken_port_fails_startup_with_status_1_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = common::TestDir::new();
    gateway_support::write_gateway_config(&dir, port, "");
    let f = common::Daemon::builder()
        .config_dir(dir.config_dir())
        .try_spawn()
        .expect_err("the daemon started on a taken port");
    assert_eq!(f.status.code(), Some(1), "{}", f.log.text());
    let addr = format!("127.0.0.1:{port}");
    assert!(
        f.log.text().contains(&addr),
        "the failure does not name {addr}:\n{}",
        f.log.text()
    );
    // The local endpoint was released: its socket is gone.
    assert!(!dir.config_dir().join("data/daemon.sock").exists());
}

#[test]
fn pairing_over_http_and_pairing_create_share_one_token_list() {
    let gw = Gateway::start();
    let code = gw.pairing_code().unwrap();
    let created = gw.create_token();
    let paired = post_pair(gw.port, Some(&code)).json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        paired_in_file(&gw.daemon.config_dir),
        vec![digest(&created), digest(&paired)]
    );
}
