//! Requests answered at once: a fresh id, the answer frame checked to carry
//! it, and its `result` or `error`. (Streams with notifications in between
//! are read with `sessions::Rpc`, which stands on these.)

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use super::Client;

static IDS: AtomicU64 = AtomicU64::new(1);

/// A fresh request id (a string, unique in this process).
pub fn next_id() -> Value {
    json!(format!("r{}", IDS.fetch_add(1, Ordering::Relaxed)))
}

/// Sends `method` and returns the whole answer, which must be the next frame
/// and carry the request's id.
#[track_caller]
pub fn call(c: &mut Client, method: &str, params: Value) -> Value {
    let id = next_id();
    let v = c.call(method, params.clone(), id.clone());
    assert_eq!(
        v["id"], id,
        "answer to {method} {params} with another id: {v}"
    );
    assert!(
        v.get("method").is_none(),
        "{method} {params}: expected its answer first, got {v}"
    );
    v
}

/// The `result` of `method`; panics with the frame on an error.
#[track_caller]
pub fn ok(c: &mut Client, method: &str, params: Value) -> Value {
    member(c, method, params, "result", "failed")
}

/// The `error` object of `method`; panics with the frame on a result.
#[track_caller]
pub fn fails(c: &mut Client, method: &str, params: Value) -> Value {
    member(c, method, params, "error", "should fail")
}

/// Member `key` of the answer to `method`; panics with the frame without it.
#[track_caller]
fn member(c: &mut Client, method: &str, params: Value, key: &str, otherwise: &str) -> Value {
    let v = call(c, method, params.clone());
    match v.get(key) {
        Some(m) => m.clone(),
        None => panic!("{method} {params} {otherwise}: {v}"),
    }
}
