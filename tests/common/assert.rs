//! Assertions on JSON-RPC error objects. [`assert_error`] is the exact one
//! (code, message, whole `data`); [`assert_code_reason`] is for the suites
//! whose spec rows fix only the code and `data.reason`.

use serde_json::{json, Value};

/// The `error` object of a whole answer frame; panics on a result.
#[track_caller]
pub fn err_of(frame: &Value) -> Value {
    frame
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {frame}"))
        .clone()
}

/// Asserts an error object exactly: its code, its message (`None` where the
/// spec gives no text: then only that there is a non-empty one), and exactly
/// this `data` (`None`: no `data` member).
#[track_caller]
pub fn assert_error(e: &Value, code: i64, message: Option<&str>, data: Option<Value>) {
    assert_eq!(e["code"], code, "{e}");
    match message {
        Some(m) => assert_eq!(e["message"], m, "{e}"),
        None => assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}"),
    }
    assert_eq!(e.get("data").cloned(), data, "{e}");
}

/// Asserts an error's code and `data.reason` (`None`: no reason).
#[track_caller]
pub fn assert_code_reason(e: &Value, code: i64, reason: Option<&str>) {
    assert_eq!(e["code"], json!(code), "error {e}");
    match reason {
        Some(r) => assert_eq!(e["data"]["reason"], json!(r), "error {e}"),
        None => assert!(e["data"].get("reason").is_none(), "error {e}"),
    }
}
