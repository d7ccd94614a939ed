//! Framing (SPEC §3.1): a bounded [`LinesCodec`] turns the byte stream into
//! frames of at most 8 MiB, enforced while reading without buffering past
//! the limit, and tells an oversized or non-UTF-8 frame apart from an I/O
//! failure so that the first two are answered and the connection kept.

use std::io;

use bytes::BytesMut;
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

use crate::error::RpcError;
use crate::limits::MAX_FRAME_BYTES;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// More than 8 MiB before the `\n`; the rest of the line is discarded.
    #[error("frame exceeds {MAX_FRAME_BYTES} bytes")]
    TooLarge,
    /// The frame is not UTF-8; it has been consumed.
    #[error("frame is not valid UTF-8")]
    InvalidUtf8,
    /// The transport failed; the connection ends.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// The reply owed for a rejected frame (`None` for an I/O failure).
    pub fn reply(&self) -> Option<RpcError> {
        match self {
            Self::TooLarge => Some(RpcError::FrameTooLarge),
            Self::InvalidUtf8 => Some(RpcError::Parse("invalid UTF-8".to_owned())),
            Self::Io(_) => None,
        }
    }

    /// The `reason` of the `frame_rejected` audit event.
    pub fn audit_reason(&self) -> &'static str {
        match self {
            Self::TooLarge => "frame_too_large",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::Io(_) => "io",
        }
    }
}

/// NDJSON frames: lines of at most [`MAX_FRAME_BYTES`] (a trailing `\r`
/// counts toward the limit and is removed).
#[derive(Debug)]
pub struct FrameCodec {
    lines: LinesCodec,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::with_max(MAX_FRAME_BYTES)
    }
}

impl FrameCodec {
    /// A codec with another bound (tests use small ones).
    pub fn with_max(max: usize) -> Self {
        Self {
            lines: LinesCodec::new_with_max_length(max),
        }
    }
}

/// `decode` never does I/O, so an `Io` error out of it can only be the
/// codec's own UTF-8 check; real I/O errors arrive through `From<io::Error>`.
fn map(e: LinesCodecError) -> FrameError {
    match e {
        LinesCodecError::MaxLineLengthExceeded => FrameError::TooLarge,
        LinesCodecError::Io(_) => FrameError::InvalidUtf8,
    }
}

impl Decoder for FrameCodec {
    type Item = String;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<String>, FrameError> {
        self.lines.decode(buf).map_err(map)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<String>, FrameError> {
        self.lines.decode_eof(buf).map_err(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut FrameCodec, chunks: &[&[u8]]) -> Vec<Result<String, &'static str>> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(l)) => out.push(Ok(l)),
                    Ok(None) => break,
                    Err(e) => out.push(Err(e.audit_reason())),
                }
            }
        }
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(l)) => out.push(Ok(l)),
                Ok(None) => break,
                Err(e) => out.push(Err(e.audit_reason())),
            }
        }
        out
    }

    #[test]
    fn crlf_limit_and_final_frame() {
        let mut c = FrameCodec::with_max(4);
        let got = decode_all(&mut c, &[b"abcd\nab\r\nabcde\nxy\xff\nlast"]);
        assert_eq!(
            got,
            vec![
                Ok("abcd".into()),
                Ok("ab".into()),
                Err("frame_too_large"),
                Err("invalid_utf8"),
                Ok("last".into())
            ]
        );
    }

    #[test]
    fn the_cr_counts_toward_the_limit() {
        let mut c = FrameCodec::with_max(4);
        assert_eq!(
            decode_all(&mut c, &[b"abc\r\nabcd\r\nz\n"]),
            vec![Ok("abc".into()), Err("frame_too_large"), Ok("z".into())]
        );
    }

    #[test]
    fn every_split_decodes_identically() {
        let stream: &[u8] = b"{\"a\":1}\r\n\n  \n{\"b\":\"\xc3\xa9\"}\nxxxxxxxxxxxxxxxxxxxxxxxx\n\xff\xfe\n{\"c\":3}";
        let whole = decode_all(&mut FrameCodec::with_max(16), &[stream]);
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let got = decode_all(
                    &mut FrameCodec::with_max(16),
                    &[&stream[..i], &stream[i..j], &stream[j..]],
                );
                assert_eq!(got, whole, "split at {i},{j}");
            }
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(decode_all(&mut FrameCodec::with_max(16), &bytewise), whole);
    }
}
