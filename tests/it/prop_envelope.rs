//! Property tests of envelope classification (§3.2–§3.4): for
//! generated frames, `zeroclaw::jsonrpc::classify` agrees with a small
//! reference model over `serde_json::Value` (`fuzz/src/model.rs`, shared
//! with the fuzz target) — same class, same error code and `data.reason`,
//! and for answered invalid requests the same id text.
//!
//! Frames are objects with random subsets of `jsonrpc`, `method`, `id`,
//! `params`, `result` and `error` (values of every JSON type, biased towards
//! the valid ones and their near misses), unknown members, repeated members
//! and escaped member names; arrays; scalars; and their truncations and
//! one-byte mutations. Ids are also spliced in as raw text (exponents, huge
//! integers, escapes) to check that they are echoed byte for byte.

use crate::common;

#[path = "../../fuzz/src/model.rs"]
#[allow(dead_code)]
mod model;

use model::{as_text, as_values, has_duplicate_keys, model, model_text, observe, text, Class};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use zeroclaw::jsonrpc::{classify, error_frame, Classified};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Eighths: exact in binary and short in decimal, so they survive a round trip.
        (-8_000_000i32..8_000_000).prop_map(|n| json!(f64::from(n) / 8.0)),
        Just(json!(2.0)),
        "[a-z0-9 ./\"\\\\é😀]{0,8}".prop_map(Value::String),
    ]
}

/// Any JSON value, a few levels deep.
fn any_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn jsonrpc_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => Just(json!("2.0")),
        1 => Just(json!("1.0")),
        1 => Just(json!("2.0 ")),
        1 => Just(json!(2.0)),
        1 => any_value(),
    ]
}

fn method_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop_oneof![
            Just("status"), Just("session/prompt"), Just(""), Just("zc-test/probe"), Just("é/😀"),
        ]
        .prop_map(Value::from),
        1 => any_value(),
    ]
}

fn id_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => any::<i64>().prop_map(Value::from),
        2 => "[a-z0-9\"\\\\-]{0,8}".prop_map(Value::String),
        1 => Just(Value::Null),
        1 => (-8000i32..8000).prop_map(|n| json!(f64::from(n) / 8.0)),
        1 => any_value(),
    ]
}

fn params_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => proptest::collection::btree_map("[a-z]{1,4}", leaf(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        2 => proptest::collection::vec(leaf(), 0..3).prop_map(Value::Array),
        1 => Just(Value::Null),
        1 => leaf(),
    ]
}

/// Valid error objects and their near misses.
fn error_value() -> impl Strategy<Value = Value> {
    let code = prop_oneof![
        4 => any::<i64>().prop_map(Value::from),
        1 => Just(json!(u64::MAX)),
        1 => Just(json!(1.5)),
        1 => Just(json!(-32600.0)),
        1 => Just(json!("-32600")),
        1 => Just(Value::Null),
    ];
    let message = prop_oneof![
        4 => "[a-z ]{0,8}".prop_map(Value::String),
        1 => leaf(),
    ];
    let present = proptest::collection::vec(any::<bool>(), 3);
    prop_oneof![
        5 => (code, message, any_value(), present).prop_map(|(c, m, d, p)| {
            let mut o = Map::new();
            // `code` and `message` are present most of the time.
            if p[0] || p[1] {
                o.insert("code".into(), c);
            }
            if p[1] || p[2] {
                o.insert("message".into(), m);
            }
            if p[2] {
                o.insert("data".into(), d);
            }
            Value::Object(o)
        }),
        1 => any_value(),
    ]
}

/// One member: the text of its name (sometimes spelled with an escape), the
/// name a parser sees, and its value.
type Member = (String, String, Value);

/// Member `name` with a value from `v`.
fn named(name: &'static str, v: BoxedStrategy<Value>) -> BoxedStrategy<Member> {
    (any::<u8>(), v)
        .prop_map(move |(spell, v)| {
            // One spelling in eight escapes the first letter (`\u006d` for `m`).
            let raw = if spell % 8 == 0 {
                format!("\"\\u{:04x}{}\"", u32::from(name.as_bytes()[0]), &name[1..])
            } else {
                format!("\"{name}\"")
            };
            (raw, name.to_owned(), v)
        })
        .boxed()
}

/// The six members of the envelope, each present with its own probability.
fn envelope_members(p: [f64; 6]) -> impl Strategy<Value = Vec<Member>> {
    (
        proptest::option::weighted(p[0], named("jsonrpc", jsonrpc_value().boxed())),
        proptest::option::weighted(p[1], named("method", method_value().boxed())),
        proptest::option::weighted(p[2], named("id", id_value().boxed())),
        proptest::option::weighted(p[3], named("params", params_value().boxed())),
        proptest::option::weighted(p[4], named("result", any_value().boxed())),
        proptest::option::weighted(p[5], named("error", error_value().boxed())),
    )
        .prop_map(|(a, b, c, d, e, f)| [a, b, c, d, e, f].into_iter().flatten().collect())
}

/// Unknown members, including near misses of the known names.
fn unknown_member() -> impl Strategy<Value = Member> {
    (
        prop_oneof![
            Just("x"),
            Just("Method"),
            Just("ID"),
            Just("jsonrpc2"),
            Just("")
        ],
        any_value(),
    )
        .prop_map(|(n, v)| (format!("\"{n}\""), n.to_owned(), v))
}

/// The members of an object frame, in random order: request-like,
/// response-like or any subset, plus unknown members and sometimes a
/// repeated member (the last one counts).
fn object_members() -> impl Strategy<Value = Vec<Member>> {
    let known = prop_oneof![
        // jsonrpc, method, id, params, result, error
        envelope_members([0.9, 0.95, 0.7, 0.6, 0.05, 0.05]),
        envelope_members([0.9, 0.05, 0.9, 0.1, 0.5, 0.5]),
        envelope_members([0.5; 6]),
    ];
    let repeated = proptest::option::weighted(
        0.15,
        prop_oneof![
            named("jsonrpc", jsonrpc_value().boxed()),
            named("method", method_value().boxed()),
            named("id", id_value().boxed()),
            named("params", params_value().boxed()),
            named("result", any_value().boxed()),
            named("error", error_value().boxed()),
        ],
    );
    (
        known,
        proptest::collection::vec(unknown_member(), 0..3),
        repeated,
    )
        .prop_flat_map(|(mut members, unknown, repeated)| {
            members.extend(unknown);
            members.extend(repeated);
            Just(members).prop_shuffle()
        })
}

/// A frame: its text, and the value a JSON parser that keeps the last of
/// repeated members sees.
fn frame() -> impl Strategy<Value = (String, Value)> {
    let object = (
        object_members(),
        prop_oneof![Just(""), Just(" "), Just("\t ")],
    )
        .prop_map(|(members, ws)| {
            let mut text = format!("{ws}{{");
            let mut map = Map::new();
            for (i, (raw, name, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&format!("{ws}{raw}{ws}:{ws}{}", model::text(&v)));
                map.insert(name, v);
            }
            text.push_str(&format!("{ws}}}{ws}"));
            (text, Value::Object(map))
        });
    prop_oneof![
        8 => object,
        1 => any_value().prop_map(|v| (text(&v), v)),
        1 => proptest::collection::vec(any_value(), 0..3)
            .prop_map(|v| { let v = Value::Array(v); (text(&v), v) }),
    ]
}

fn class_of(frame: &str) -> Class {
    observe(&classify(frame))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    /// The generated value is what the text holds, and the daemon classifies
    /// it as the model does, ids compared as exact text.
    #[test]
    fn classification_agrees_with_the_model((frame, value) in frame()) {
        prop_assert_eq!(&serde_json::from_str::<Value>(&frame).unwrap(), &value);
        let got = class_of(&frame);
        prop_assert_eq!(&got, &as_text(model(&value)), "frame: {}", frame);
        // An answered frame becomes one JSON line with the same id text.
        if let Classified::Reply { id, error } = classify(&frame) {
            let out = error_frame(&error, id);
            let line = std::str::from_utf8(&out).unwrap().strip_suffix('\n').unwrap();
            prop_assert!(!line.contains('\n'));
            let v: Value = serde_json::from_str(line).unwrap();
            let want_id = match &got {
                Class::Reply { id: Some(t), .. } => serde_json::from_str::<Value>(t).unwrap(),
                _ => Value::Null,
            };
            prop_assert_eq!(&v["id"], &want_id);
            prop_assert_eq!(v["error"]["code"].as_i64(), Some(i64::from(error.code())));
        }
    }

    /// Truncated and mutated frames: a parse error exactly when the text is
    /// not JSON, otherwise the model's class.
    #[test]
    fn broken_frames_agree_with_the_model(
        (frame, _) in frame(),
        cut in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        mutate in any::<bool>(),
    ) {
        let mut bytes = frame.into_bytes();
        if bytes.is_empty() {
            return Ok(());
        }
        let at = cut.index(bytes.len());
        if mutate {
            bytes[at] = byte;
        } else {
            bytes.truncate(at);
        }
        // A frame is text: bytes that are not UTF-8 never reach classify.
        let Ok(text) = String::from_utf8(bytes) else { return Ok(()) };
        if has_duplicate_keys(&text) {
            return Ok(());
        }
        let Some(want) = model_text(&text) else { return Ok(()) };
        prop_assert_eq!(as_values(class_of(&text)), Some(want), "frame: {}", text);
    }

    /// Ids are kept as the exact JSON text received (§3.5), however
    /// they are written, in requests, answered invalid requests and responses.
    #[test]
    fn ids_are_kept_byte_for_byte(raw in raw_id(), ws in prop_oneof![Just(""), Just(" \t ")]) {
        let req = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{ws}{raw}{ws}}}"#);
        prop_assert_eq!(
            class_of(&req),
            Class::Request { id: Some(raw.clone()), method: "m".into() }
        );
        let bad = format!(r#"{{"jsonrpc":"1.0","method":"m","id":{ws}{raw}{ws}}}"#);
        prop_assert_eq!(
            class_of(&bad),
            Class::Reply { code: -32600, reason: "invalid_envelope", id: Some(raw.clone()) }
        );
        if let Classified::Reply { id, error } = classify(&bad) {
            let out = error_frame(&error, id);
            let tail = format!(",\"id\":{raw}}}\n");
            prop_assert!(out.ends_with(tail.as_bytes()));
        }
        let resp = format!(r#"{{"jsonrpc":"2.0","result":null,"id":{ws}{raw}{ws}}}"#);
        prop_assert_eq!(class_of(&resp), Class::Response { id: raw, ok: true });
    }
}

/// Raw id texts: numbers and strings as a client may write them.
fn raw_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_owned()),
        Just("-0".to_owned()),
        Just("1.0E+2".to_owned()),
        Just("0.1e-7".to_owned()),
        Just("1e400".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        // Found by the fuzzer (a harness bug: the id's float text did not survive a round trip).
        Just("123456789012345678901234567890123456789012345678901234567890".to_owned()),
        Just("null".to_owned()),
        Just(r#""a\"b\\c""#.to_owned()),
        Just(r#""\u00e9\/""#.to_owned()),
        Just(r#""\ud83d\ude00""#.to_owned()),
        Just(r#""zc-out-0""#.to_owned()),
        "-?[1-9][0-9]{0,30}(\\.[0-9]{1,5})?([eE][+-]?[0-9]{1,3})?",
        "\"([a-z0-9é]|\\\\n|\\\\u00[0-7][0-9a-f]){0,10}\"",
    ]
}

/// The examples of §3.3 and §3.4, through the model and the daemon.
#[test]
fn spec_examples() {
    let cases: &[(&str, Class)] = &[
        (
            r#"{"method":"status"}"#,
            Class::Reply {
                code: -32600,
                reason: "invalid_envelope",
                id: None,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","method":"status","params":null,"id":7}"#,
            Class::Reply {
                code: -32600,
                reason: "invalid_envelope",
                id: Some("7".into()),
            },
        ),
        (
            r#"[]"#,
            Class::Reply {
                code: -32600,
                reason: "batch",
                id: None,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","result":{},"error":{"code":1,"message":"x"},"id":1}"#,
            Class::Drop,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"m","result":1,"id":1}"#,
            Class::Reply {
                code: -32600,
                reason: "invalid_envelope",
                id: None,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","id":"zc-out-0"}"#,
            Class::Reply {
                code: -32600,
                reason: "invalid_envelope",
                id: None,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","result":null,"id":null}"#,
            Class::Response {
                id: "null".into(),
                ok: true,
            },
        ),
        (
            r#"{"jsonrpc":"2.0","method":"m","id":"zc-out-0"}"#,
            Class::Request {
                id: Some(r#""zc-out-0""#.into()),
                method: "m".into(),
            },
        ),
        (
            "{",
            Class::Reply {
                code: -32700,
                reason: "parse_error",
                id: None,
            },
        ),
    ];
    for (frame, want) in cases {
        assert_eq!(&class_of(frame), want, "{frame}");
        assert_eq!(
            model_text(frame).map(as_text).as_ref(),
            Some(want),
            "model: {frame}"
        );
    }
}
