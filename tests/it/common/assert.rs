//! The one assertion on JSON-RPC error objects, [`assert_error`] (code and
//! `data.reason`), and [`assert_error_exact`], the same assertion plus the
//! message and the whole `data`, for the spec rows that fix those too.

use serde_json::{json, Value};

/// The `error` object of a whole answer frame; panics on a result.
#[track_caller]
pub fn err_of(frame: &Value) -> Value {
    frame
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {frame}"))
        .clone()
}

/// The `result` of a whole answer frame; panics on an error.
#[track_caller]
pub fn res_of(frame: &Value) -> Value {
    frame
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {frame}"))
        .clone()
}

/// Asserts an error's code and `data.reason` (`None`: no reason), and that
/// it has a non-empty message (every error has one, §3.2).
#[track_caller]
pub fn assert_error(e: &Value, code: i64, reason: Option<&str>) {
    assert_eq!(e["code"], json!(code), "error {e}");
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "error without a message: {e}"
    );
    match reason {
        Some(r) => assert_eq!(e["data"]["reason"], json!(r), "error {e}"),
        None => assert!(e["data"].get("reason").is_none(), "error {e}"),
    }
}

/// [`assert_error`] with the reason `data` carries, then exactly this
/// message (`None` where the spec gives no text) and exactly this `data`
/// (`None`: no `data` member).
#[track_caller]
pub fn assert_error_exact(e: &Value, code: i64, message: Option<&str>, data: Option<Value>) {
    let reason = data.as_ref().and_then(|d| d["reason"].as_str());
    assert_error(e, code, reason);
    if let Some(m) = message {
        assert_eq!(e["message"], m, "{e}");
    }
    assert_eq!(e.get("data").cloned(), data, "{e}");
}
