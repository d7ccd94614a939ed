//! bytes → `FrameCodec` → `classify`, the daemon's whole input path up to
//! the method router (§3.1–§3.4).
//!
//! Input layout: byte 0 picks the frame bound (odd: a small bound `1 +
//! byte/2`, so oversized frames and the discard path are reached; even: the
//! real 8 MiB), bytes 1–4 are two cut points, the rest is the byte stream.
//!
//! Checked for every input:
//! - nothing panics;
//! - the stream decodes to the same frames whole, cut at the two points, and
//!   (for short streams) one byte at a time (an oversized frame's reported
//!   length may differ; whether it is oversized may not);
//! - no line holds `\n` or exceeds the bound; oversized frames report more
//!   than the bound;
//! - for every line, `classify` returns; an answered id is a string, number
//!   or null and is written back byte for byte in a one-line JSON error
//!   frame; a request's params are an object or array;
//! - when the line is not JSON, or is JSON that `serde_json::Value` can hold
//!   (and has no repeated member names), the class equals the reference
//!   model's (`fuzz/src/model.rs`, also used by `tests/it/prop_envelope.rs`),
//!   ids compared as values.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use zeroclaw::codec::Frame;
use zeroclaw::jsonrpc::{classify, error_frame, kind, Classified, JsonKind};
use zeroclaw::limits::MAX_FRAME_BYTES;
use zeroclaw_fuzz::frames::{check_frame, decode, decode_cut, items};
use zeroclaw_fuzz::model::{as_values, has_duplicate_keys, model_text, observe};

/// Streams up to this long are also decoded one byte at a time.
const BYTEWISE_MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let (head, stream) = data.split_at(5);
    let max = if head[0] & 1 == 1 {
        1 + usize::from(head[0] >> 1)
    } else {
        MAX_FRAME_BYTES
    };
    let cut = |a: u8, b: u8| usize::from(u16::from_le_bytes([a, b])) % (stream.len() + 1);
    let cuts = [cut(head[1], head[2]), cut(head[3], head[4])];

    let whole = decode(max, &[stream]);
    let split = decode_cut(max, stream, &cuts);
    assert_eq!(items(&whole), items(&split), "cut at {cuts:?}");
    if stream.len() <= BYTEWISE_MAX {
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(items(&whole), items(&decode(max, &bytewise)), "bytewise");
    }
    for f in &split {
        check_frame(max, f);
        if let Frame::Line(line) = f {
            check_line(line);
        }
    }
});

fn check_line(line: &str) {
    let class = classify(line);
    match &class {
        Classified::Reply { id, error } => {
            if let Some(id) = id {
                assert!(
                    matches!(
                        kind(id),
                        JsonKind::String | JsonKind::Number | JsonKind::Null
                    ),
                    "answered with a non-id {id}"
                );
            }
            let id_text = *id;
            let out = error_frame(error, id_text);
            let text = std::str::from_utf8(&out).expect("error frames are UTF-8");
            let body = text.strip_suffix('\n').expect("one frame ends with \\n");
            assert!(!body.contains('\n'), "error frame spans lines: {text:?}");
            let tail = format!(",\"id\":{}}}", id_text.unwrap_or("null"));
            assert!(body.ends_with(&tail), "id not echoed as received: {body}");
            // The id is echoed as received; only a Value-representable one is re-parsed.
            if id.is_none() || serde_json::from_str::<Value>(id_text.unwrap()).is_ok() {
                serde_json::from_str::<Value>(body).expect("the error frame is JSON");
            }
        }
        Classified::Request { id, params, .. } => {
            if let Some(id) = id {
                assert!(matches!(
                    kind(id),
                    JsonKind::String | JsonKind::Number | JsonKind::Null
                ));
            }
            if let Some(p) = params {
                assert!(matches!(kind(p), JsonKind::Object | JsonKind::Array));
            }
        }
        Classified::Response { id, .. } => {
            assert!(matches!(
                kind(id),
                JsonKind::String | JsonKind::Number | JsonKind::Null
            ));
        }
        Classified::Drop { .. } => {}
    }
    // Differential check against the model where the model can judge: the
    // line is JSON a `Value` can hold, or not JSON at all (then a parse error).
    if has_duplicate_keys(line) {
        return;
    }
    let Some(want) = model_text(line) else {
        return;
    };
    if let Some(got) = as_values(observe(&class)) {
        assert_eq!(got, want, "frame: {line}");
    }
}
