//! Framing (§3.1): a bounded [`LinesCodec`] turns the byte stream into
//! frames of at most 8 MiB, enforced while reading without buffering past
//! the limit. A whole line within the bound is taken straight from the read
//! buffer (the common case, without the inner codec's shared split).
//!
//! An oversized or non-UTF-8 frame is not a stream error: the codec yields
//! it as a [`Frame::Rejected`] item, so the frames already buffered behind
//! it are decoded at once and the connection carries on. (A decoder *error*
//! would make `FramedRead` pause and go back to the socket before looking
//! at its buffer again.) Only I/O failures are errors.
//!
//! The writing side of a client (the CLI's) is [`write_json_line`].

use std::io;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

use crate::error::RpcError;
use crate::limits::MAX_FRAME_BYTES;

/// One item of the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A frame's text (a trailing `\r` removed).
    Line(String),
    /// A frame that is answered with an error and skipped.
    Rejected(Rejection),
}

/// Why a frame was rejected; `line_len` is the frame's length in bytes
/// (for an oversized frame: how much had arrived when it was rejected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// More than 8 MiB before the `\n`; the rest of the line is discarded.
    TooLarge { line_len: usize },
    /// Not UTF-8; the line has been consumed.
    InvalidUtf8 { line_len: usize },
}

impl Rejection {
    /// The error the client is owed (`id: null`).
    pub fn reply(self) -> RpcError {
        match self {
            Self::TooLarge { .. } => RpcError::FrameTooLarge,
            Self::InvalidUtf8 { .. } => RpcError::Parse("invalid UTF-8".to_owned()),
        }
    }

    /// The `reason` of the `frame_rejected` audit event.
    pub fn reason(self) -> &'static str {
        match self {
            Self::TooLarge { .. } => "frame_too_large",
            Self::InvalidUtf8 { .. } => "invalid_utf8",
        }
    }

    /// The `line_len` of the `frame_rejected` audit event.
    pub fn line_len(self) -> usize {
        match self {
            Self::TooLarge { line_len } | Self::InvalidUtf8 { line_len } => line_len,
        }
    }
}

/// NDJSON frames: lines of at most [`MAX_FRAME_BYTES`] (a trailing `\r`
/// counts toward the limit and is removed).
#[derive(Debug)]
pub struct FrameCodec {
    lines: LinesCodec,
    max: usize,
    /// Mirrors the inner codec: after an oversized frame it discards up to the next `\n`.
    discarding: bool,
    /// The inner codec has looked at the start of an unfinished line.
    partial: bool,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::with_max(MAX_FRAME_BYTES)
    }
}

fn newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|b| *b == b'\n')
}

impl FrameCodec {
    /// A codec with another bound (tests use small ones).
    pub fn with_max(max: usize) -> Self {
        Self {
            lines: LinesCodec::new_with_max_length(max),
            max,
            discarding: false,
            partial: false,
        }
    }

    /// A whole, bounded, UTF-8 line at the start of `buf`, taken without
    /// the inner codec (whose state is then untouched: it holds nothing of
    /// an unfinished line). Anything else is left to it.
    fn plain_line(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        if self.discarding || self.partial {
            return None;
        }
        let window = buf.get(..buf.len().min(self.max.saturating_add(1)))?;
        let end = memchr::memchr(b'\n', window)?;
        let line = window.get(..end)?;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from(std::str::from_utf8(line).ok()?);
        buf.advance(end + 1);
        Some(Frame::Line(text))
    }

    /// Decodes one frame. With `eof`, the bytes after the last `\n` form a
    /// final, unterminated frame (called only once `decode` found nothing).
    fn decode_with(&mut self, buf: &mut BytesMut, eof: bool) -> io::Result<Option<Frame>> {
        if !eof {
            if let Some(frame) = self.plain_line(buf) {
                return Ok(Some(frame));
            }
        }
        // Bytes of an oversized frame's tail that this call discards first.
        // While discarding, the buffer only ever holds the new bytes.
        let (discard, discard_ends) = match (
            self.discarding,
            self.discarding.then(|| newline(buf)).flatten(),
        ) {
            (true, Some(i)) => (i + 1, true),
            (true, None) => (buf.len(), false),
            (false, _) => (0, false),
        };
        let before = buf.len();
        let decoded = if eof {
            self.lines.decode_eof(buf)
        } else {
            self.lines.decode(buf)
        };
        if discard_ends {
            self.discarding = false;
        }
        self.partial = matches!(decoded, Ok(None)) && !eof;
        Ok(match decoded {
            Ok(line) => line.map(Frame::Line),
            // Decoding does no I/O: its only errors are the bound and UTF-8.
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                self.discarding = true;
                Some(Frame::Rejected(Rejection::TooLarge {
                    line_len: newline(buf).unwrap_or(buf.len()),
                }))
            }
            Err(LinesCodecError::Io(_)) => {
                // Consumed: the discarded tail, the line, and its `\n` — except
                // for the final unterminated frame at end of stream.
                let consumed = before - buf.len() - discard;
                let line_len = if eof {
                    consumed
                } else {
                    consumed.saturating_sub(1)
                };
                Some(Frame::Rejected(Rejection::InvalidUtf8 { line_len }))
            }
        })
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        self.decode_with(buf, false)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        // Terminated frames first, so that only the true remainder is "final".
        match self.decode_with(buf, false)? {
            Some(frame) => Ok(Some(frame)),
            None => self.decode_with(buf, true),
        }
    }
}

/// Writes `msg` as one NDJSON frame, its compact JSON and the newline in
/// one write, so a peer never sees half a frame from a writer that stops.
pub async fn write_json_line<W: AsyncWrite + Unpin>(
    writer: &mut W,
    msg: &serde_json::Value,
) -> io::Result<()> {
    let mut line = msg.to_string();
    line.push('\n');
    writer.write_all(line.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(
        codec: &mut FrameCodec,
        chunks: &[&[u8]],
    ) -> Vec<Result<String, (&'static str, usize)>> {
        let item = |f: Frame| match f {
            Frame::Line(l) => Ok(l),
            Frame::Rejected(r) => Err((r.reason(), r.line_len())),
        };
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(item(f));
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
            out.push(item(f));
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
                Err(("frame_too_large", 5)),
                Err(("invalid_utf8", 3)),
                Ok("last".into())
            ]
        );
    }

    #[test]
    fn the_cr_counts_toward_the_limit() {
        let mut c = FrameCodec::with_max(4);
        let got = decode_all(&mut c, &[b"abc\r\nabcd\r\nz\n"]);
        assert_eq!(got[0], Ok("abc".into()));
        assert!(matches!(got[1], Err(("frame_too_large", _))));
        assert_eq!(got[2], Ok("z".into()));
    }

    #[test]
    fn every_split_decodes_identically() {
        let stream: &[u8] = b"{\"a\":1}\r\n\n  \n{\"b\":\"\xc3\xa9\"}\nxxxxxxxxxxxxxxxxxxxxxxxx\n\xff\xfe\n{\"c\":3}";
        // The length an oversized frame reports depends on how much had arrived: compare the rest.
        let norm = |v: Vec<Result<String, (&'static str, usize)>>| {
            v.into_iter()
                .map(|r| {
                    r.map_err(|(reason, len)| {
                        (reason, if reason == "frame_too_large" { 0 } else { len })
                    })
                })
                .collect::<Vec<_>>()
        };
        let whole = norm(decode_all(&mut FrameCodec::with_max(16), &[stream]));
        assert_eq!(whole.len(), 7);
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let got = decode_all(
                    &mut FrameCodec::with_max(16),
                    &[&stream[..i], &stream[i..j], &stream[j..]],
                );
                assert_eq!(norm(got), whole, "split at {i},{j}");
            }
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(
            norm(decode_all(&mut FrameCodec::with_max(16), &bytewise)),
            whole
        );
    }
}
