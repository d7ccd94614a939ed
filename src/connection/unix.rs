//! The local Unix-socket connection in one task (SPEC §3.7, §4).
//!
//! This is the hot path, so it does its own reading and writing instead of
//! handing frames between tasks:
//!
//! - It waits for readability without holding a buffer, so an idle
//!   connection costs no read buffer; when data is there it reads a large
//!   batch at once (tokio's `poll_read`, which notes a short read as
//!   "drained" and saves the extra `EAGAIN` read).
//! - Every frame of the batch goes through the tower stack, polled in
//!   place; ready answers are appended to one output buffer that is written
//!   with a single `write` per batch, in the same task turn — no channel, no
//!   wake-up of another task.
//! - Answers that must wait run in their own tasks; they, the turns'
//!   notifications and the daemon's own requests arrive through the
//!   connection's bounded queue, which this task drains into the same buffer.
//!
//! Reading never waits for a handler and never for the in-flight bound. It
//! pauses only while a batch of output is unwritten: the client is not
//! reading. If the output makes no progress for 30 s the connection closes.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use bytes::{Buf, BytesMut};
use tokio::net::UnixStream;
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use tokio_util::task::TaskTracker;

use super::{accept_local, build_stack, dispatch_now, end_of_input, log_closed, Stack};
use crate::codec::{Frame, FrameCodec};
use crate::context::{Conn, PeerInfo};
use crate::jsonrpc::error_frame;
use crate::limits::WRITE_STALL;
use crate::state::{ConnectionGuard, Daemon};

/// How much one read may take.
const READ_CHUNK: usize = 64 * 1024;
/// Output of inline answers held before reading pauses (the client is not
/// reading): one batch. Queued frames are bounded by the queue itself.
const OUT_HIGH_WATER: usize = 256 * 1024;
/// Buffers larger than this are given back when they empty.
const KEEP: usize = 64 * 1024;

/// Serves one accepted Unix-socket connection until it ends.
pub async fn serve(
    daemon: Arc<Daemon>,
    guard: ConnectionGuard,
    stream: UnixStream,
    peer: PeerInfo,
) {
    let (conn, closed, mut queue) = accept_local(&daemon, &guard, peer);
    let tasks = TaskTracker::new();
    let mut stack = build_stack(&daemon, &conn);
    let mut io = Io {
        stream,
        rbuf: BytesMut::new(),
        out: BytesMut::new(),
        codec: FrameCodec::default(),
        last_progress: Instant::now(),
    };
    let cancelled = closed.cancelled();
    tokio::pin!(cancelled);
    let mut reading = true;
    let mut tasks_done = false;

    loop {
        if let Err(e) = io.flush() {
            tracing::debug!(conn = conn.id, error = %e, "write failed");
            break;
        }
        if !reading && tasks_done && io.out.is_empty() {
            // Everything in flight was answered and written: a graceful end.
            match queue.try_recv() {
                Some(f) => {
                    io.out.extend_from_slice(&f);
                    continue;
                }
                None => break,
            }
        }
        let room = io.out.len() < OUT_HIGH_WATER;
        let pending_out = !io.out.is_empty();
        let stall_at = io.last_progress + WRITE_STALL;
        tokio::select! {
            biased;
            _ = &mut cancelled => break,
            ready = io.stream.readable(), if reading && room => {
                if ready.is_err() || !io.read_and_dispatch(&daemon, &conn, &tasks, &mut stack).await {
                    reading = false;
                    end_of_input(&daemon, &conn, &tasks);
                }
            }
            // Queued frames are taken only once the previous batch is written,
            // so the queue's bound (64 frames / 16 MiB) is what holds the
            // producers back from a client that does not read.
            frame = queue.recv(), if io.out.is_empty() => {
                if let Some(f) = frame {
                    io.out.extend_from_slice(&f);
                    while let Some(f) = queue.try_recv() {
                        io.out.extend_from_slice(&f);
                    }
                }
            }
            _ = io.stream.writable(), if pending_out => {}
            _ = tasks.wait(), if !reading && !tasks_done => tasks_done = true,
            _ = tokio::time::sleep_until(stall_at), if pending_out => {
                tracing::info!(event = "write_stalled", conn = conn.id, peer = %conn.peer.label, "no write progress for 30 s: closing");
                break;
            }
        }
    }
    if reading {
        end_of_input(&daemon, &conn, &tasks);
    }
    closed.cancel();
    queue.close();
    let _ = io.stream.shutdown_std();
    log_closed(&conn);
    drop(guard);
}

struct Io {
    stream: UnixStream,
    rbuf: BytesMut,
    out: BytesMut,
    codec: FrameCodec,
    last_progress: Instant,
}

trait ShutdownStd {
    fn shutdown_std(&self) -> std::io::Result<()>;
}

impl ShutdownStd for UnixStream {
    fn shutdown_std(&self) -> std::io::Result<()> {
        // A half-close tells the client we are done; errors mean it is gone already.
        let fd = std::os::fd::AsFd::as_fd(self);
        let sock = std::os::unix::net::UnixStream::from(fd.try_clone_to_owned()?);
        sock.shutdown(std::net::Shutdown::Write)
    }
}

impl Io {
    /// Writes as much pending output as the socket takes without waiting.
    fn flush(&mut self) -> std::io::Result<()> {
        while !self.out.is_empty() {
            match self.stream.try_write(&self.out) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out.advance(n);
                    self.last_progress = Instant::now();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        if self.out.capacity() > KEEP {
            self.out = BytesMut::new();
        }
        self.last_progress = Instant::now();
        Ok(())
    }

    /// Reads what is there and dispatches every complete frame. `false` at
    /// end of stream or on a read error.
    async fn read_and_dispatch(
        &mut self,
        daemon: &Arc<Daemon>,
        conn: &Conn,
        tasks: &TaskTracker,
        stack: &mut Stack,
    ) -> bool {
        self.rbuf.reserve(READ_CHUNK);
        let read = poll_fn(|cx| {
            match tokio_util::io::poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.rbuf) {
                Poll::Ready(r) => Poll::Ready(Some(r)),
                // Readiness was spurious: go back to waiting.
                Poll::Pending => Poll::Ready(None),
            }
        })
        .await;
        let eof = match read {
            None => return true,
            Some(Ok(0)) => true,
            Some(Ok(_)) => false,
            Some(Err(e)) => {
                tracing::debug!(conn = conn.id, error = %e, "read failed");
                return false;
            }
        };
        let _ = daemon;
        poll_fn(|cx| {
            loop {
                if self.out.len() >= OUT_HIGH_WATER {
                    break;
                }
                let item = if eof { self.codec.decode_eof(&mut self.rbuf) } else { self.codec.decode(&mut self.rbuf) };
                match item {
                    Ok(Some(Frame::Line(frame))) => {
                        if let Some(answer) = dispatch_now(stack, conn, tasks, frame, cx) {
                            self.out.extend_from_slice(&answer);
                        }
                    }
                    Ok(Some(Frame::Rejected(r))) => {
                        tracing::info!(event = "frame_rejected", peer = %conn.peer.label, principal_id = %conn.principal_id(), line_len = r.line_len(), reason = r.reason());
                        self.out.extend_from_slice(&error_frame(&r.reply(), None));
                    }
                    Ok(None) | Err(_) => break,
                }
            }
            Poll::Ready(())
        })
        .await;
        if self.rbuf.is_empty() && self.rbuf.capacity() > 0 {
            // Idle connections hold no read buffer.
            self.rbuf = BytesMut::new();
        }
        !eof
    }
}
