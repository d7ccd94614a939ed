//! JSON-RPC 2.0 envelopes (§3.2–§3.4): one frame parsed, validated and
//! classified by shape, and the writing of outbound frames.
//!
//! Parsing borrows from the frame: `id`, `params`, `result` and `error` stay
//! raw JSON text, so an id is echoed as the exact JSON text received (a
//! string with its escapes, a number with all its digits) and params are
//! decoded once, by the method that owns them. A plain frame (a `status`
//! call) is read without a parser ([`plain`]); any other by serde_json.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::RpcError;
use crate::limits::MAX_ID_BYTES;

/// The detail of `-32600` for an id over [`MAX_ID_BYTES`].
const ID_TOO_LONG: &str = "id longer than 4096 bytes";

/// What one frame is, once parsed and validated. Values are their raw
/// JSON text, as received.
#[derive(Debug)]
pub enum Classified<'a> {
    /// A valid request (`id` present) or notification (`id` absent).
    Request {
        id: Option<&'a str>,
        method: Cow<'a, str>,
        params: Option<&'a str>,
    },
    /// A valid response: `Ok(result)` or `Err(error object)`.
    Response {
        id: &'a str,
        outcome: Result<&'a str, &'a str>,
    },
    /// An invalid frame that is answered with `error` and this id (`None` = `null`).
    Reply {
        id: Option<&'a str>,
        error: RpcError,
    },
    /// A malformed response: logged without its contents, never answered.
    Drop { reason: &'static str },
}

/// The JSON type of a raw value, from its first byte (serde_json trims whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

/// The JSON type of the raw JSON text `raw`.
pub fn kind(raw: &str) -> JsonKind {
    match raw.as_bytes().first() {
        Some(b'{') => JsonKind::Object,
        Some(b'[') => JsonKind::Array,
        Some(b'"') => JsonKind::String,
        Some(b't' | b'f') => JsonKind::Bool,
        Some(b'n') => JsonKind::Null,
        _ => JsonKind::Number,
    }
}

fn is_valid_id(raw: &str) -> bool {
    matches!(
        kind(raw),
        JsonKind::String | JsonKind::Number | JsonKind::Null
    )
}

/// Parses and classifies one frame (the table of §3.3).
pub fn classify(frame: &str) -> Classified<'_> {
    match plain::plain_envelope(frame) {
        Some(env) => classify_envelope(env),
        None => classify_parsed(frame),
    }
}

/// [`classify`] by serde_json.
fn classify_parsed(frame: &str) -> Classified<'_> {
    match serde_json::from_str(frame) {
        Ok(env) => classify_envelope(env),
        Err(e) => classify_non_object(frame, e),
    }
}

fn classify_envelope(env: Envelope<'_>) -> Classified<'_> {
    match env.method {
        Some(method) => classify_request(env, method),
        None if env.result.is_some() || env.error.is_some() => classify_response(env),
        None => ambiguous("frame has neither method nor result/error"),
    }
}

/// The frame did not decode as an object: tell invalid JSON from valid non-objects.
fn classify_non_object<'a>(frame: &'a str, err: serde_json::Error) -> Classified<'a> {
    if err.is_syntax() || err.is_eof() {
        return Classified::Reply {
            id: None,
            error: RpcError::Parse(err.to_string()),
        };
    }
    // A type error may come before the end of the text: check the whole text is JSON.
    if let Err(e) = serde_json::from_str::<IgnoredAny>(frame) {
        return Classified::Reply {
            id: None,
            error: RpcError::Parse(e.to_string()),
        };
    }
    if frame.trim_start().starts_with('[') {
        Classified::Reply {
            id: None,
            error: RpcError::Batch,
        }
    } else {
        ambiguous("frame is not a JSON object")
    }
}

fn ambiguous(detail: &'static str) -> Classified<'static> {
    Classified::Reply {
        id: None,
        error: RpcError::InvalidEnvelope(Cow::Borrowed(detail)),
    }
}

fn classify_request<'a>(env: Envelope<'a>, method: &'a str) -> Classified<'a> {
    if kind(method) != JsonKind::String {
        return ambiguous("method must be a string");
    }
    if env.result.is_some() || env.error.is_some() {
        return ambiguous("a request must not carry result or error");
    }
    if env.id.is_some_and(|id| id.len() > MAX_ID_BYTES) {
        // Echoing it could exceed the frame limit (§3.1): answered with a
        // null id, as a request whose id cannot be used (docs/decisions.md).
        return Classified::Reply {
            id: None,
            error: RpcError::InvalidEnvelope(Cow::Borrowed(ID_TOO_LONG)),
        };
    }
    let echo_id = env.id.filter(|id| is_valid_id(id));
    let invalid = |detail: &'static str| Classified::Reply {
        id: echo_id,
        error: RpcError::InvalidEnvelope(Cow::Borrowed(detail)),
    };
    if !is_jsonrpc_2(env.jsonrpc) {
        return invalid("jsonrpc must be \"2.0\"");
    }
    if env.id.is_some() && echo_id.is_none() {
        return invalid("id must be a string, number or null");
    }
    if let Some(p) = env.params {
        if !matches!(kind(p), JsonKind::Object | JsonKind::Array) {
            return invalid("params must be an object or an array");
        }
    }
    let text = method;
    // Almost every method name has no escape: its text between the quotes is the name.
    let plain = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'));
    if let Some(name) = plain.filter(|t| !t.contains('\\')) {
        return Classified::Request {
            id: env.id,
            method: Cow::Borrowed(name),
            params: env.params,
        };
    }
    match serde_json::from_str::<Cow<'a, str>>(text) {
        Ok(method) => Classified::Request {
            id: env.id,
            method,
            params: env.params,
        },
        // The text is a JSON string; what fails is an escape of a lone
        // UTF-16 surrogate (`"\ud800"`), which is no Unicode character.
        Err(_) => invalid("method must be valid Unicode: it escapes a lone surrogate"),
    }
}

fn classify_response(env: Envelope<'_>) -> Classified<'_> {
    let Some(id) = env.id else {
        return Classified::Drop {
            reason: "response without id",
        };
    };
    if !is_valid_id(id) {
        return Classified::Drop {
            reason: "response id must be a string, number or null",
        };
    }
    if !is_jsonrpc_2(env.jsonrpc) {
        return Classified::Drop {
            reason: "jsonrpc must be \"2.0\"",
        };
    }
    if env.params.is_some() {
        return Classified::Drop {
            reason: "response must not carry params",
        };
    }
    match (env.result, env.error) {
        (Some(result), None) => Classified::Response {
            id,
            outcome: Ok(result),
        },
        (None, Some(error)) if is_error_object(error) => Classified::Response {
            id,
            outcome: Err(error),
        },
        (None, Some(_)) => Classified::Drop {
            reason: "malformed error object",
        },
        _ => Classified::Drop {
            reason: "response must carry exactly one of result and error",
        },
    }
}

fn is_jsonrpc_2(v: Option<&str>) -> bool {
    match v {
        Some("\"2.0\"") => true,
        Some(v) if kind(v) == JsonKind::String => {
            serde_json::from_str::<Cow<'_, str>>(v).is_ok_and(|s| s == "2.0")
        }
        _ => false,
    }
}

/// `{"code": <integer>, "message": <string>, "data"?: <any>}`.
fn is_error_object(raw: &str) -> bool {
    #[derive(Deserialize)]
    struct ErrorObject<'a> {
        #[allow(dead_code)]
        code: i64,
        #[allow(dead_code)]
        #[serde(borrow)]
        message: Cow<'a, str>,
    }
    kind(raw) == JsonKind::Object && serde_json::from_str::<ErrorObject<'_>>(raw).is_ok()
}

/// The members of a frame that matter, as raw JSON text; all others are
/// ignored (§3.2 rule 4).
#[derive(Debug, Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a str>,
    method: Option<&'a str>,
    id: Option<&'a str>,
    params: Option<&'a str>,
    result: Option<&'a str>,
    error: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Jsonrpc,
    Method,
    Id,
    Params,
    Result,
    Error,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut env = Envelope::default();
                while let Some(key) = map.next_key::<Member>()? {
                    // A repeated member keeps its last value, as JSON parsers commonly do.
                    let slot = match key {
                        Member::Jsonrpc => &mut env.jsonrpc,
                        Member::Method => &mut env.method,
                        Member::Id => &mut env.id,
                        Member::Params => &mut env.params,
                        Member::Result => &mut env.result,
                        Member::Error => &mut env.error,
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<&'de RawValue>()?.get());
                }
                Ok(env)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

mod frames;
mod id;
mod plain;
mod reply_future;
pub use frames::{
    error_frame, notification_frame, request_frame, AnswerFrame, AnsweredInOrder, Payload,
};
pub use id::IdText;
pub use reply_future::{panicked, ReplyFuture};

/// What a method (or a gate in front of it) answers: a result payload or
/// the error its frame carries.
pub type Reply = Result<Payload, RpcError>;

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(frame: &str) -> (Option<String>, i32, Option<String>) {
        match classify(frame) {
            Classified::Reply { id, error } => (
                id.map(|i| i.to_owned()),
                error.code(),
                error.data().map(|d| serde_json::to_string(&d).unwrap()),
            ),
            other => panic!("expected a reply for {frame}, got {other:?}"),
        }
    }

    #[test]
    fn valid_request_and_notification() {
        match classify(r#"{"jsonrpc":"2.0","method":"status","params":{},"id":1}"#) {
            Classified::Request { id, method, params } => {
                assert_eq!(id.unwrap(), "1");
                assert_eq!(method, "status");
                assert_eq!(params.unwrap(), "{}");
            }
            other => panic!("{other:?}"),
        }
        match classify(r#"{"jsonrpc":"2.0","method":"st\u0061tus"}"#) {
            Classified::Request {
                id: None,
                method,
                params: None,
            } => assert_eq!(method, "status"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_are_kept_as_received_text() {
        for id in [
            r#""a\"b""#,
            "12345678901234567890123456789",
            "-0.5e10",
            "null",
            r#""zc-out-0""#,
        ] {
            let frame = format!(r#"{{"jsonrpc":"2.0","method":"x","id":{id}}}"#);
            match classify(&frame) {
                Classified::Request { id: Some(got), .. } => assert_eq!(got, id),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn every_invalid_row_of_the_table() {
        let inv = Some(r#"{"reason":"invalid_envelope"}"#.to_owned());
        // not JSON
        assert_eq!(reply("{"), (None, -32700, None));
        assert_eq!(reply("[1,"), (None, -32700, None));
        assert_eq!(reply(r#"{"a":1} x"#), (None, -32700, None));
        // request-shaped
        assert_eq!(
            reply(r#"{"method":"status","id":7}"#),
            (Some("7".into()), -32600, inv.clone())
        );
        assert_eq!(reply(r#"{"method":"status"}"#), (None, -32600, inv.clone()));
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"s","params":null,"id":"x"}"#),
            (Some("\"x\"".into()), -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"s","params":3,"id":null}"#),
            (Some("null".into()), -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"s","id":{}}"#),
            (None, -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"1.0","method":"s","id":2}"#),
            (Some("2".into()), -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":2.0,"method":"s","id":2}"#),
            (Some("2".into()), -32600, inv.clone())
        );
        // direction-ambiguous
        assert_eq!(
            reply("[]"),
            (None, -32600, Some(r#"{"reason":"batch"}"#.into()))
        );
        assert_eq!(
            reply(r#"[{"jsonrpc":"2.0","method":"status","id":1}]"#),
            (None, -32600, Some(r#"{"reason":"batch"}"#.into()))
        );
        assert_eq!(reply("3"), (None, -32600, inv.clone()));
        assert_eq!(reply(r#""x""#), (None, -32600, inv.clone()));
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":5,"id":1}"#),
            (None, -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"s","result":1,"id":1}"#),
            (None, -32600, inv.clone())
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","id":1}"#),
            (None, -32600, inv.clone())
        );
        assert_eq!(reply(r#"{}"#), (None, -32600, inv));
    }

    #[test]
    fn responses_valid_and_dropped() {
        assert!(
            matches!(classify(r#"{"jsonrpc":"2.0","result":null,"id":"zc-out-0"}"#), Classified::Response { outcome: Ok(r), .. } if r == "null")
        );
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"},"id":3}"#),
            Classified::Response {
                outcome: Err(_),
                ..
            }
        ));
        for bad in [
            r#"{"jsonrpc":"2.0","result":1}"#,
            r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":1}"#,
            r#"{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":1}"#,
            r#"{"jsonrpc":"2.0","error":{"code":1},"id":1}"#,
            r#"{"jsonrpc":"2.0","error":[],"id":1}"#,
            r#"{"jsonrpc":"2.0","result":1,"params":{},"id":1}"#,
            r#"{"result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":[1]}"#,
        ] {
            assert!(matches!(classify(bad), Classified::Drop { .. }), "{bad}");
        }
    }

    #[test]
    fn frames_are_written_in_spec_order() {
        let f = error_frame(&RpcError::FrameTooLarge, None);
        assert_eq!(
            String::from_utf8(f).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Frame exceeds 8388608 bytes\",\"data\":{\"reason\":\"frame_too_large\",\"max_frame_bytes\":8388608}},\"id\":null}\n"
        );
        let p = Payload::empty_object().into_frame(b"\"a\"");
        assert_eq!(p, b"{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":\"a\"}\n");
    }
}
