//! Decoding a byte stream with the daemon's [`FrameCodec`] the way
//! `FramedRead` and the Unix connection drive it: the stream arrives in
//! pieces; after each piece the codec is asked for frames until it has none;
//! at end of stream `decode_eof` is asked until it has none.

use bytes::BytesMut;
use tokio_util::codec::Decoder;
use zeroclaw::codec::{Frame, FrameCodec, Rejection};

/// One decoded item, comparable across splits: an oversized frame's
/// reported length depends on how much had arrived, so it is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Line(String),
    TooLarge,
    InvalidUtf8 { line_len: usize },
}

impl Item {
    pub fn of(frame: &Frame) -> Self {
        match frame {
            Frame::Line(l) => Item::Line(l.clone()),
            Frame::Rejected(Rejection::TooLarge { .. }) => Item::TooLarge,
            Frame::Rejected(Rejection::InvalidUtf8 { line_len }) => Item::InvalidUtf8 {
                line_len: *line_len,
            },
        }
    }
}

/// The frames of `stream` cut at `cuts` (sorted or not; out-of-range cuts
/// are clamped), decoded by a codec bounded at `max` bytes.
pub fn decode_cut(max: usize, stream: &[u8], cuts: &[usize]) -> Vec<Frame> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| (*c).min(stream.len())).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for c in cuts {
        pieces.push(&stream[from..c]);
        from = c;
    }
    pieces.push(&stream[from..]);
    decode(max, &pieces)
}

/// The frames of the concatenation of `pieces`, fed one piece at a time.
pub fn decode(max: usize, pieces: &[&[u8]]) -> Vec<Frame> {
    let mut codec = FrameCodec::with_max(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for p in pieces {
        buf.extend_from_slice(p);
        while let Some(f) = codec.decode(&mut buf).expect("decoding does no I/O") {
            out.push(f);
        }
    }
    while let Some(f) = codec.decode_eof(&mut buf).expect("decoding does no I/O") {
        out.push(f);
    }
    out
}

/// [`Item::of`] over a whole decode.
pub fn items(frames: &[Frame]) -> Vec<Item> {
    frames.iter().map(Item::of).collect()
}

/// The frame-level invariants of §3.1 for one decoded frame of a codec
/// bounded at `max`: a line holds no `\n` and at most `max` bytes; an
/// oversized frame reports more than `max` bytes; an invalid-UTF-8 frame
/// reports at most `max`.
pub fn check_frame(max: usize, frame: &Frame) {
    match frame {
        Frame::Line(l) => {
            assert!(!l.contains('\n'), "a line holds a newline: {l:?}");
            assert!(l.len() <= max, "a line of {} bytes > {max}", l.len());
        }
        Frame::Rejected(Rejection::TooLarge { line_len }) => {
            assert!(
                *line_len > max,
                "oversized frame of {line_len} bytes <= {max}"
            );
        }
        Frame::Rejected(Rejection::InvalidUtf8 { line_len }) => {
            assert!(
                *line_len <= max,
                "invalid UTF-8 frame of {line_len} bytes > {max}"
            );
        }
    }
}
