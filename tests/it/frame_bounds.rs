//! No frame over 8 MiB is ever written (§3.1 "MUST NOT"), whatever the
//! client echoes at the daemon: method names, ids, agent failure texts and
//! error `data` members are bounded; an id too long to echo makes the
//! request invalid (docs/decisions.md, "Echoed text and oversized ids").
//! Also: what a `"\ud800"` method is told.

use crate::common;

use common::{sized_frame, Daemon, MAX_FRAME};
use serde_json::json;

/// What `bounded at 256` makes of a run of `x` (§3.1).
fn bounded_x(n: usize) -> String {
    format!("{}…[truncated]", "x".repeat(n))
}

#[test]
fn an_8_mib_unknown_method_is_answered_with_its_name_bounded() {
    let (d, mut c) = Daemon::with_client();
    let mut frame = sized_frame(r#"{"jsonrpc":"2.0","method":"@PAD@","id":7}"#, MAX_FRAME);
    frame.push(b'\n');
    c.send_raw(&frame);
    let line = c.recv_line();
    assert!(line.len() <= MAX_FRAME, "answer of {} bytes", line.len());
    assert_eq!(
        line,
        format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"Unknown method: {}"}},"id":7}}"#,
            bounded_x(256)
        )
    );
    // Before `initialize` the same (the method table comes first).
    let mut raw = d.connect();
    raw.send_raw(&frame);
    assert_eq!(raw.recv_line(), line);
    c.expect_nothing_before_probe();
}

#[test]
fn an_id_too_long_to_echo_is_an_invalid_request_answered_with_a_null_id() {
    let (_d, mut c) = Daemon::with_client();
    let expected = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: id longer than 4096 bytes","data":{"reason":"invalid_envelope"}},"id":null}"#;
    // ~8 MiB string id on a valid method: no result, no 8 MiB error either.
    let mut frame = sized_frame(
        r#"{"jsonrpc":"2.0","method":"status","id":"@PAD@"}"#,
        MAX_FRAME,
    );
    frame.push(b'\n');
    c.send_raw(&frame);
    assert_eq!(c.recv_line(), expected);
    // The same for a number id and an unknown method.
    let digits = "9".repeat(4097);
    c.send_line(&format!(
        r#"{{"jsonrpc":"2.0","method":"nope","id":{digits}}}"#
    ));
    assert_eq!(c.recv_line(), expected);
    // 4096 bytes of id text (quotes included) is still echoed byte for byte.
    let id = format!("\"{}\"", "i".repeat(4094));
    c.send_line(&format!(
        r#"{{"jsonrpc":"2.0","method":"status","id":{id}}}"#
    ));
    let v = c.recv_json();
    assert_eq!(v["id"].as_str().map(str::len), Some(4094), "{v}");
    assert!(v.get("result").is_some(), "{v}");
    c.expect_nothing_before_probe();
}

#[test]
fn an_agent_failure_text_of_7_mib_is_bounded_in_the_answer() {
    let (_d, mut c) = Daemon::with_client();
    let v = c.call(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "fb1"}),
        json!(1),
    );
    assert!(v.get("result").is_some(), "{v}");
    let message = "m".repeat(7 * 1024 * 1024);
    c.send_json(&json!({"jsonrpc": "2.0", "method": "session/prompt",
        "params": {"session_id": "fb1", "prompt": format!("::fail {message}")}, "id": 2}));
    loop {
        let line = c.recv_line();
        assert!(line.len() <= MAX_FRAME, "a frame of {} bytes", line.len());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            assert_eq!(v["error"]["code"], -32603, "{v}");
            assert_eq!(v["error"]["data"]["reason"], "agent_failed", "{v}");
            let got = v["error"]["message"].as_str().unwrap();
            assert_eq!(got, format!("{}…[truncated]", "m".repeat(64 * 1024)));
            break;
        }
    }
}

#[test]
fn a_lone_surrogate_method_is_told_what_is_wrong() {
    let (_d, mut c) = Daemon::with_client();
    c.send_line(r#"{"jsonrpc":"2.0","method":"\ud800","id":3}"#);
    assert_eq!(
        c.recv_line(),
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: method must be valid Unicode: it escapes a lone surrogate","data":{"reason":"invalid_envelope"}},"id":3}"#
    );
}
