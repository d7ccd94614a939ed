//! A reference model of envelope classification (§3.2–§3.4), written
//! over `serde_json::Value` independently of `src/jsonrpc/`, and the
//! mapping of the daemon's real [`Classified`] onto the same small type.
//!
//! Shared by the fuzz target (`fuzz_targets/frames.rs`) and the property
//! test `tests/it/prop_envelope.rs` (which includes this file by path), so the
//! two check the daemon against one model.
//!
//! What the model cannot see, and its users must keep out of comparisons:
//! text that `serde_json::Value` refuses although the JSON grammar allows it
//! (numbers out of `f64` range, lone surrogate escapes: the daemon keeps such
//! members as raw text and accepts them), and duplicate member names inside
//! nested objects (a `Value` keeps the last one; the daemon's error-object
//! check rejects the duplicate).

use serde_json::Value;
use zeroclaw::error::RpcError;
use zeroclaw::jsonrpc::Classified;

/// The class of one frame, as the daemon must handle it. Ids are `I`: the
/// raw JSON text (`String`) as the daemon keeps it, or the parsed `Value`
/// the model works with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class<I = String> {
    /// A valid request (`id` present) or notification (`id: None`).
    Request { id: Option<I>, method: String },
    /// A valid response to a daemon request.
    Response { id: I, ok: bool },
    /// Answered with an error: `code`, `data.reason`, and the id (`None` = `null`).
    Reply {
        code: i32,
        reason: &'static str,
        id: Option<I>,
    },
    /// A malformed response: dropped without an answer.
    Drop,
}

impl<I> Class<I> {
    /// The same class with every id converted by `f`; `None` if `f` fails.
    pub fn map_ids<J>(self, f: impl Fn(I) -> Option<J>) -> Option<Class<J>> {
        Some(match self {
            Class::Request { id, method } => Class::Request {
                id: match id {
                    Some(i) => Some(f(i)?),
                    None => None,
                },
                method,
            },
            Class::Response { id, ok } => Class::Response { id: f(id)?, ok },
            Class::Reply { code, reason, id } => Class::Reply {
                code,
                reason,
                id: match id {
                    Some(i) => Some(f(i)?),
                    None => None,
                },
            },
            Class::Drop => Class::Drop,
        })
    }
}

/// Ids as the compact text of their value: what a generator that serialized
/// the frame with `serde_json` wrote.
pub fn as_text(class: Class<Value>) -> Class<String> {
    class
        .map_ids(|v| Some(text(&v)))
        .expect("a Value always serializes")
}

/// Ids parsed from their raw text; `None` if one is not representable as a
/// `Value`. (Compare with the model's ids this way, not by re-serializing
/// them: a float's shortest text does not always parse back to the same
/// `f64` with serde_json's default float parser.)
pub fn as_values(class: Class<String>) -> Option<Class<Value>> {
    class.map_ids(|t| serde_json::from_str::<Value>(&t).ok())
}

fn reply<I>(code: i32, reason: &'static str, id: Option<I>) -> Class<I> {
    Class::Reply { code, reason, id }
}

/// The compact JSON text of `v` (what a generator that serializes `v` wrote).
pub fn text(v: &Value) -> String {
    serde_json::to_string(v).expect("a Value always serializes")
}

fn is_id(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Null)
}

/// `{"code": <i64>, "message": <string>, ...}`.
fn is_error_object(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            m.get("code").and_then(Value::as_i64).is_some()
                && m.get("message").is_some_and(Value::is_string)
        }
        _ => false,
    }
}

/// The class of frame `text` by the model: a parse error unless it is one
/// JSON value; `None` when the text is JSON by the grammar but a `Value`
/// cannot hold it (a number out of `f64` range, a lone surrogate escape),
/// where the model cannot judge.
pub fn model_text(frame: &str) -> Option<Class<Value>> {
    match serde_json::from_str::<Value>(frame) {
        Ok(v) => Some(model(&v)),
        // `IgnoredAny` checks the grammar only.
        Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(frame).is_ok() => None,
        Err(_) => Some(reply(-32700, "parse_error", None)),
    }
}

/// The class of a frame holding exactly `v`, by the table of §3.3.
pub fn model(v: &Value) -> Class<Value> {
    let obj = match v {
        Value::Object(m) => m,
        Value::Array(_) => return reply(-32600, "batch", None),
        _ => return reply(-32600, "invalid_envelope", None),
    };
    let result_or_error = obj.contains_key("result") || obj.contains_key("error");
    let jsonrpc_ok = obj.get("jsonrpc") == Some(&Value::String("2.0".into()));
    let id = obj.get("id");
    match obj.get("method") {
        // Request-shaped: answered, with the id when it is a valid id.
        Some(Value::String(method)) if !result_or_error => {
            let echo = id.filter(|i| is_id(i)).cloned();
            if !jsonrpc_ok {
                return reply(-32600, "invalid_envelope", echo);
            }
            if id.is_some() && echo.is_none() {
                return reply(-32600, "invalid_envelope", None);
            }
            if let Some(p) = obj.get("params") {
                if !matches!(p, Value::Object(_) | Value::Array(_)) {
                    return reply(-32600, "invalid_envelope", echo);
                }
            }
            Class::Request {
                id: echo,
                method: method.clone(),
            }
        }
        // Direction-ambiguous.
        Some(_) => reply(-32600, "invalid_envelope", None),
        // Response-shaped: valid, or dropped; never answered.
        None if result_or_error => {
            let Some(id) = id.filter(|i| is_id(i)) else {
                return Class::Drop;
            };
            if !jsonrpc_ok || obj.contains_key("params") {
                return Class::Drop;
            }
            match (obj.get("result"), obj.get("error")) {
                (Some(_), None) => Class::Response {
                    id: id.clone(),
                    ok: true,
                },
                (None, Some(e)) if is_error_object(e) => Class::Response {
                    id: id.clone(),
                    ok: false,
                },
                _ => Class::Drop,
            }
        }
        None => reply(-32600, "invalid_envelope", None),
    }
}

/// The daemon's classification in the model's terms (ids as raw JSON text).
pub fn observe(c: &Classified<'_>) -> Class {
    match c {
        Classified::Request { id, method, .. } => Class::Request {
            id: id.map(str::to_owned),
            method: method.to_string(),
        },
        Classified::Response { id, outcome } => Class::Response {
            id: (*id).to_owned(),
            ok: outcome.is_ok(),
        },
        Classified::Reply { id, error } => {
            let (code, reason) = match error {
                RpcError::Parse(_) => (-32700, "parse_error"),
                RpcError::Batch => (-32600, "batch"),
                RpcError::InvalidEnvelope(_) => (-32600, "invalid_envelope"),
                other => panic!("classify answered an unexpected error: {other:?}"),
            };
            reply(code, reason, id.map(str::to_owned))
        }
        Classified::Drop { .. } => Class::Drop,
    }
}

/// Whether any object in `frame` (at any depth) repeats a member name;
/// `false` also when `frame` is not JSON.
pub fn has_duplicate_keys(frame: &str) -> bool {
    use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
    use std::collections::HashSet;
    use std::fmt;

    /// Deserializes any JSON value and fails on a repeated member name.
    struct Unique;
    impl<'de> serde::Deserialize<'de> for Unique {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(UniqueVisitor)
        }
    }
    struct UniqueVisitor;
    impl<'de> Visitor<'de> for UniqueVisitor {
        type Value = Unique;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_unit<E>(self) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
            while seq.next_element::<Unique>()?.is_some() {}
            Ok(Unique)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
            let mut seen = HashSet::new();
            while let Some(k) = map.next_key::<String>()? {
                if !seen.insert(k) {
                    return Err(serde::de::Error::custom("duplicate member"));
                }
                map.next_value::<Unique>()?;
            }
            Ok(Unique)
        }
    }
    serde_json::from_str::<Value>(frame).is_ok() && serde_json::from_str::<Unique>(frame).is_err()
}
