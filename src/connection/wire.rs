//! What a transport must give the connection driver: inbound frames one at
//! a time, and a byte sink for NDJSON output. [`ByteWire`] is the NDJSON
//! form over any byte stream (Unix socket, named pipe, an in-memory duplex);
//! the WebSocket gateway has its own, with one message a frame.
//!
//! The byte form never waits for the socket while a complete frame is
//! already in its buffer: a frame is decoded before anything is read, so no
//! readiness edge is needed for bytes that have already arrived (an earlier
//! defect: frames left in the buffer were never answered).

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Decoder;

use crate::codec::{Frame, FrameCodec};

/// One step of a connection's input.
#[derive(Debug)]
pub enum Inbound {
    /// A frame for the stack, or one the codec refused (answered with `id: null`).
    Frame(Frame),
    /// The peer sent its last frame (a half-close): what is in flight is
    /// still answered and written.
    End,
    /// The peer is gone or broke its transport's protocol: nothing more can
    /// be delivered.
    Gone,
}

/// A transport, as the connection driver sees it.
pub trait Wire: Unpin {
    /// The next inbound step. Called again after [`Inbound::Frame`] only.
    fn poll_inbound(&mut self, cx: &mut Context<'_>) -> Poll<Inbound>;
    /// Writes a prefix of `buf` (never empty). A write that returned
    /// `Pending` is repeated with `buf` unchanged or extended, never shortened.
    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;
    /// Ends the output: a half-close, or a WebSocket Close frame.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A byte stream that can say when it is readable without a buffer, so an
/// idle connection holds none.
pub trait ByteStream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Whether [`ByteStream::poll_read_ready`] really waits (else the read
    /// buffer is kept while idle).
    const READINESS: bool = false;
    /// Ready when a read would not wait.
    fn poll_read_ready(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(unix)]
impl ByteStream for tokio::net::UnixStream {
    const READINESS: bool = true;
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::net::UnixStream::poll_read_ready(self, cx)
    }
}

impl ByteStream for tokio::io::DuplexStream {}

impl ByteStream for crate::endpoint::LocalStream {}

/// How much one read may take.
const READ_CHUNK: usize = 64 * 1024;

/// NDJSON over a byte stream.
#[derive(Debug)]
pub struct ByteWire<T> {
    io: T,
    rbuf: BytesMut,
    codec: FrameCodec,
    eof: bool,
}

impl<T: ByteStream> ByteWire<T> {
    pub fn new(io: T) -> Self {
        Self {
            io,
            rbuf: BytesMut::new(),
            codec: FrameCodec::default(),
            eof: false,
        }
    }

    /// Reads once into the buffer: `Ok(true)` if bytes came, `Ok(false)` at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if T::READINESS && self.rbuf.is_empty() {
            // Idle connections hold no read buffer.
            if self.rbuf.capacity() > 0 {
                self.rbuf = BytesMut::new();
            }
            ready!(self.io.poll_read_ready(cx))?;
        }
        self.rbuf.reserve(READ_CHUNK);
        let n = ready!(tokio_util::io::poll_read_buf(
            Pin::new(&mut self.io),
            cx,
            &mut self.rbuf
        ))?;
        Poll::Ready(Ok(n > 0))
    }
}

impl<T: ByteStream> Wire for ByteWire<T> {
    fn poll_inbound(&mut self, cx: &mut Context<'_>) -> Poll<Inbound> {
        loop {
            // Frames already here come first: they need no readiness.
            let decoded = if self.eof {
                self.codec.decode_eof(&mut self.rbuf)
            } else {
                self.codec.decode(&mut self.rbuf)
            };
            match decoded {
                Ok(Some(frame)) => return Poll::Ready(Inbound::Frame(frame)),
                Ok(None) if self.eof => return Poll::Ready(Inbound::End),
                Ok(None) => {}
                // Decoding does no I/O; an error here cannot happen, but if it
                // did the stream could not be read past it.
                Err(_) => return Poll::Ready(Inbound::Gone),
            }
            match ready!(self.poll_fill(cx)) {
                Ok(true) => {}
                Ok(false) => self.eof = true,
                Err(e) => {
                    tracing::debug!(error = %e, "read failed");
                    return Poll::Ready(Inbound::Gone);
                }
            }
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn next(w: &mut ByteWire<tokio::io::DuplexStream>) -> Inbound {
        std::future::poll_fn(|cx| w.poll_inbound(cx)).await
    }

    #[tokio::test]
    async fn buffered_frames_come_out_without_another_read_then_the_final_one_then_end() {
        let (a, mut b) = tokio::io::duplex(1 << 16);
        let mut w = ByteWire::new(a);
        b.write_all(b"one\ntwo\nthree").await.unwrap();
        b.shutdown().await.unwrap();
        let mut got = Vec::new();
        loop {
            match next(&mut w).await {
                Inbound::Frame(Frame::Line(l)) => got.push(l),
                Inbound::Frame(Frame::Rejected(r)) => panic!("rejected {r:?}"),
                Inbound::End => break,
                Inbound::Gone => panic!("gone"),
            }
        }
        assert_eq!(got, ["one", "two", "three"]);
    }
}
