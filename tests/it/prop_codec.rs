//! Property tests of framing (§3.1): any byte stream, cut anywhere,
//! decodes to the same frames as the stream decoded whole (the length an
//! oversized frame reports may depend on the cut; that it is oversized may
//! not), and every frame respects the bound.
//!
//! The decode driver is the fuzz target's (`fuzz/src/frames.rs`), so the
//! fuzzer and these tests exercise the codec the same way. Streams are built
//! from fragments that matter to a line codec (`\n`, `\r`, `\r\n`, blanks,
//! multi-byte and invalid UTF-8, JSON text, long runs near the bound), with a
//! small bound so that oversized frames are common.

use crate::common;

#[path = "../../fuzz/src/frames.rs"]
#[allow(dead_code)]
mod frames;

use frames::{check_frame, decode, decode_cut, items, Item};
use proptest::prelude::*;
use zeroclaw::codec::Frame;

/// One piece of a stream.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => Just(b"\n".to_vec()),
        2 => Just(b"\r\n".to_vec()),
        1 => Just(b"\r".to_vec()),
        1 => Just(b" \t".to_vec()),
        2 => Just(br#"{"jsonrpc":"2.0","method":"status","id":1}"#.to_vec()),
        1 => Just("é€😀".as_bytes().to_vec()),
        // Invalid UTF-8: a lone continuation byte, a truncated sequence, 0xff.
        1 => Just(vec![0x80]),
        1 => Just(vec![0xe2, 0x82]),
        1 => Just(vec![0xff, 0xfe]),
        // Runs around the bound (the bound is 16..=64 below).
        2 => (1usize..100).prop_map(|n| vec![b'x'; n]),
        3 => proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(fragment(), 0..24).prop_map(|v| v.concat())
}

/// A stream, a bound, and up to 8 cut points within the stream.
fn cut_stream() -> impl Strategy<Value = (Vec<u8>, usize, Vec<usize>)> {
    (stream(), 16usize..=64).prop_flat_map(|(s, max)| {
        let len = s.len();
        (Just(s), Just(max), proptest::collection::vec(0..=len, 0..8))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn any_cuts_decode_like_the_whole_stream((s, max, cuts) in cut_stream()) {
        let whole = decode(max, &[&s]);
        let cut = decode_cut(max, &s, &cuts);
        prop_assert_eq!(items(&whole), items(&cut), "cuts {:?}", cuts);
        for f in whole.iter().chain(&cut) {
            check_frame(max, f);
        }
    }

    #[test]
    fn byte_at_a_time_decodes_like_the_whole_stream((s, max, _) in cut_stream()) {
        let whole = decode(max, &[&s]);
        let pieces: Vec<&[u8]> = s.chunks(1).collect();
        prop_assert_eq!(items(&whole), items(&decode(max, &pieces)));
    }

    /// The real 8 MiB bound: nothing in these streams is oversized, and the
    /// lines are exactly the `\n`-separated pieces (one trailing `\r`
    /// removed) that are UTF-8; the rest are `invalid_utf8` rejections.
    #[test]
    fn lines_are_the_newline_separated_pieces((s, _, cuts) in cut_stream()) {
        let got = items(&decode_cut(zeroclaw::limits::MAX_FRAME_BYTES, &s, &cuts));
        prop_assert_eq!(got, reference_lines(&s));
    }
}

/// The frames of §3.1 computed directly: split at `\n`, drop one
/// trailing `\r`; the bytes after the last `\n` are a final frame unless they
/// are empty or a lone `\r` (the codec's end-of-stream rule).
fn reference_lines(s: &[u8]) -> Vec<Item> {
    let mut parts: Vec<&[u8]> = s.split(|b| *b == b'\n').collect();
    let last = parts.pop().unwrap_or_default();
    let mut out = Vec::new();
    let mut push = |p: &[u8]| {
        let line = p.strip_suffix(b"\r").unwrap_or(p);
        out.push(match std::str::from_utf8(line) {
            Ok(l) => Item::Line(l.to_owned()),
            Err(_) => Item::InvalidUtf8 { line_len: p.len() },
        });
    };
    for p in parts {
        push(p);
    }
    if !last.is_empty() && last != b"\r" {
        push(last);
    }
    out
}

/// A frame of exactly the bound passes, one byte more is rejected, and the
/// frame behind it survives, for every cut of the stream.
#[test]
fn the_bound_is_exact_at_every_cut() {
    let max = 32;
    let mut s = vec![b'a'; max];
    s.push(b'\n');
    s.extend(vec![b'b'; max + 1]);
    s.extend_from_slice(b"\nok\n");
    let want = vec![
        Item::Line("a".repeat(max)),
        Item::TooLarge,
        Item::Line("ok".into()),
    ];
    for i in 0..=s.len() {
        for j in i..=s.len() {
            let got = decode_cut(max, &s, &[i, j]);
            assert_eq!(items(&got), want, "cuts {i},{j}");
            for f in &got {
                check_frame(max, f);
                if let Frame::Rejected(r) = f {
                    assert_eq!(r.reason(), "frame_too_large");
                }
            }
        }
    }
}
