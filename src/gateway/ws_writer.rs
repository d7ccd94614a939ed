//! The write side of a WebSocket connection. The connection driver
//! (`connection::driver`) writes its output exactly as on the local endpoint
//! — same queue budget, same 30 s stall rule, writes of a batch's answers
//! every 8 KiB (`EARLY_WRITE`) — into
//! [`WsWriter`], a byte sink that turns the queue's NDJSON back into
//! WebSocket messages: each `\n`-terminated frame becomes one text message
//! without its `\n`. Frames are compact JSON, so a `\n` byte only ever ends
//! one.
//!
//! An empty line is the session's heartbeat: it becomes a Ping, so the
//! heartbeat shares the writer (and its ordering) with every other frame.
//! Shutting the sink down sends the Close frame, with the code and reason
//! the session chose ([`CloseSlot`]), or 1001 when the daemon is shutting
//! down.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes};
use futures_util::{Sink, SinkExt};
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

/// The frame that asks the writer for a Ping.
pub(super) const PING: &[u8] = b"\n";

/// The Close frame a session wants sent when its writer shuts down.
#[derive(Debug, Clone, Default)]
pub(super) struct CloseSlot(Arc<Mutex<Option<CloseFrame>>>);

impl CloseSlot {
    /// Chooses the Close code and reason (the first choice wins).
    pub(super) fn set(&self, code: u16, reason: &'static str) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        });
    }

    fn take(&self) -> Option<CloseFrame> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// NDJSON in, WebSocket messages out.
#[derive(Debug)]
pub(super) struct WsWriter<S> {
    sink: S,
    /// The start of a frame whose `\n` has not been written yet.
    partial: Vec<u8>,
    /// A write already consumed, reported once the flush it started is done.
    owed: Option<usize>,
    close: CloseSlot,
    /// The daemon's shutdown: the Close code is then 1001 (going away).
    going_away: CancellationToken,
    closing: bool,
}

fn io_error(e: axum::Error) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, e)
}

impl<S> WsWriter<S> {
    pub(super) fn new(sink: S, close: CloseSlot, going_away: CancellationToken) -> Self {
        Self {
            sink,
            partial: Vec::new(),
            owed: None,
            close,
            going_away,
            closing: false,
        }
    }
}

impl<S> AsyncWrite for WsWriter<S>
where
    S: Sink<Message, Error = axum::Error> + Unpin,
{
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Some(n) = this.owed {
            ready!(this.sink.poll_flush_unpin(cx)).map_err(io_error)?;
            this.owed = None;
            return Poll::Ready(Ok(n));
        }
        let Some(end) = buf.iter().position(|&b| b == b'\n') else {
            this.partial.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        };
        ready!(this.sink.poll_ready_unpin(cx)).map_err(io_error)?;
        let line = if this.partial.is_empty() {
            buf[..end].to_vec()
        } else {
            let mut line = std::mem::take(&mut this.partial);
            line.extend_from_slice(&buf[..end]);
            line
        };
        let message = if line.is_empty() {
            Message::Ping(Default::default())
        } else {
            let text = Utf8Bytes::try_from(line)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            Message::Text(text)
        };
        this.sink.start_send_unpin(message).map_err(io_error)?;
        let n = end + 1;
        if n < buf.len() {
            // More frames follow in this write: the flush comes after the last.
            return Poll::Ready(Ok(n));
        }
        // The writer has nothing more for now: push it out. If that must
        // wait, the count is reported when it is done (the writer repeats a
        // pending write with the same bytes).
        this.owed = Some(n);
        ready!(this.sink.poll_flush_unpin(cx)).map_err(io_error)?;
        this.owed = None;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.sink.poll_flush_unpin(cx).map_err(io_error)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.closing {
            // A sink that is already closed (the peer closed first) has nothing to say.
            if ready!(this.sink.poll_ready_unpin(cx)).is_ok() {
                let frame = this.close.take().or_else(|| {
                    this.going_away.is_cancelled().then(|| CloseFrame {
                        code: 1001,
                        reason: Utf8Bytes::from_static("daemon shutting down"),
                    })
                });
                if let Some(frame) = frame {
                    let _ = this.sink.start_send_unpin(Message::Close(Some(frame)));
                }
            }
            this.closing = true;
        }
        // Errors here mean the connection is gone already: closed either way.
        let _ = ready!(this.sink.poll_close_unpin(cx));
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A sink that collects what it is given.
    #[derive(Debug, Clone, Default)]
    struct Collect(Arc<Mutex<Vec<Message>>>);

    impl Sink<Message> for Collect {
        type Error = axum::Error;
        fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), axum::Error>> {
            Poll::Ready(Ok(()))
        }
        fn start_send(self: Pin<&mut Self>, m: Message) -> Result<(), axum::Error> {
            self.0.lock().unwrap().push(m);
            Ok(())
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), axum::Error>> {
            Poll::Ready(Ok(()))
        }
        fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), axum::Error>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn frames_become_messages_and_empty_lines_pings() {
        let sink = Collect::default();
        let slot = CloseSlot::default();
        let mut w = WsWriter::new(sink.clone(), slot.clone(), CancellationToken::new());
        w.write_all(b"{\"a\":1}\n{\"b\":").await.unwrap();
        w.write_all(b"2}\n\n{\"c\":3}\n").await.unwrap();
        slot.set(1009, "message too big");
        w.shutdown().await.unwrap();
        let got = sink.0.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![
                Message::Text("{\"a\":1}".into()),
                Message::Text("{\"b\":2}".into()),
                Message::Ping(Default::default()),
                Message::Text("{\"c\":3}".into()),
                Message::Close(Some(CloseFrame {
                    code: 1009,
                    reason: "message too big".into()
                })),
            ]
        );
    }

    #[tokio::test]
    async fn shutdown_during_daemon_shutdown_says_going_away() {
        let sink = Collect::default();
        let going_away = CancellationToken::new();
        going_away.cancel();
        let mut w = WsWriter::new(sink.clone(), CloseSlot::default(), going_away);
        w.shutdown().await.unwrap();
        let got = sink.0.lock().unwrap().clone();
        assert!(
            matches!(&got[..], [Message::Close(Some(f))] if f.code == 1001),
            "{got:?}"
        );
    }
}
