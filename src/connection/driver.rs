//! The one connection driver (§3.7, §4, §2.6): every transport's
//! connection runs here, in one task, so what the tests exercise is what
//! production runs.
//!
//! One poll does, in a loop, until nothing moves:
//! 1. takes frames from the connection's queue (answers of handlers that had
//!    to wait, notifications, the daemon's own requests);
//! 2. takes inbound frames and feeds each through the tower stack, polled in
//!    place: a ready answer is appended to the output buffer at once (no
//!    task, no channel); one that must wait moves into a task of its own;
//!    once [`EARLY_WRITE`] bytes of answers wait, they are written before
//!    the next frame is taken;
//! 3. writes the output buffer.
//!
//! Steps 1 and 2 pause while the output buffer holds a batch
//! ([`OUT_HIGH_WATER`]): the client is not reading. They resume from what is
//! already buffered as soon as the batch is written, so a frame that has
//! arrived is never left waiting for another readiness edge. Reading never
//! waits for a handler and never for the in-flight bound.
//!
//! The end: after the peer's half-close or the daemon's shutdown the driver
//! stops reading, finishes what is in flight, writes everything queued, and
//! only then closes ([`ConnectionEnd::Finished`]). If output makes no progress for
//! [`WRITE_STALL`] the connection is dropped ([`ConnectionEnd::Stalled`]).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFuture;
use tokio_util::task::task_tracker::TaskTrackerWaitFuture;
use tokio_util::task::TaskTracker;

use super::wire::{Inbound, Wire};
use super::{build_stack, dispatch_now, Stack};
use crate::codec::Frame;
use crate::conn_state::Conn;
use crate::jsonrpc::{error_frame, AnswerFrame};
use crate::limits::WRITE_STALL;
use crate::outbound::WriteQueue;
use crate::state::Daemon;

/// Output held before reading pauses: one batch.
const OUT_HIGH_WATER: usize = 256 * 1024;
/// Output written while inbound frames are still being answered: about
/// twenty `status` answers. One write per batch left a pipelining client
/// idle while its whole batch was made; 4 KiB cost many clients at once
/// more in writes than it gained (docs/performance.md).
const EARLY_WRITE: usize = 8 * 1024;
/// An output buffer larger than this is given back when it empties.
const KEEP: usize = 64 * 1024;
/// Rounds of one poll before the task yields to its neighbours.
const ROUNDS_PER_POLL: usize = 32;

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionEnd {
    /// Input ended (or the daemon shut down); everything owed was written.
    Finished,
    /// The peer vanished or broke its transport's protocol.
    Gone,
    /// Output made no progress for [`WRITE_STALL`].
    Stalled,
    /// Closed from this side (a producer stalled on the full queue).
    Closed,
}

/// Runs one connection to its end and closes the wire.
pub async fn drive<W: Wire>(
    daemon: &Arc<Daemon>,
    conn: &Conn,
    queue: WriteQueue,
    wire: &mut W,
) -> ConnectionEnd {
    // Listed while served: a revocation reaches the connection at once.
    let _registered = daemon.live_conns.register(conn);
    let tasks = TaskTracker::new();
    let mut driver = Driver {
        stack: build_stack(daemon, conn),
        daemon: daemon.clone(),
        conn: conn.clone(),
        tasks: tasks.clone(),
        queue,
        wire,
        out: BytesMut::new(),
        reading: true,
        last_progress: Instant::now(),
    };
    let (closed, shutdown) = (conn.closed.clone(), daemon.shutdown.clone());
    let closed = std::pin::pin!(closed.cancelled());
    let shutdown = std::pin::pin!(shutdown.cancelled());
    let all_done = std::pin::pin!(tasks.wait());
    let stall = std::pin::pin!(tokio::time::sleep(WRITE_STALL));
    let mut signals = Signals {
        closed,
        shutdown,
        all_done,
        stall,
    };
    let end = std::future::poll_fn(|cx| driver.poll(cx, &mut signals)).await;
    driver.finish(end).await;
    end
}

/// The futures one poll watches besides the wire and the queue.
struct Signals<'a, 'b> {
    closed: Pin<&'a mut WaitForCancellationFuture<'b>>,
    shutdown: Pin<&'a mut WaitForCancellationFuture<'b>>,
    all_done: Pin<&'a mut TaskTrackerWaitFuture<'b>>,
    stall: Pin<&'a mut Sleep>,
}

struct Driver<'w, W> {
    stack: Stack,
    daemon: Arc<Daemon>,
    conn: Conn,
    tasks: TaskTracker,
    queue: WriteQueue,
    wire: &'w mut W,
    out: BytesMut,
    reading: bool,
    /// When output last moved (or began to wait).
    last_progress: Instant,
}

impl<W: Wire> Driver<'_, W> {
    fn poll(&mut self, cx: &mut Context<'_>, sig: &mut Signals<'_, '_>) -> Poll<ConnectionEnd> {
        for _ in 0..ROUNDS_PER_POLL {
            if sig.closed.as_mut().poll(cx).is_ready() {
                return Poll::Ready(ConnectionEnd::Closed);
            }
            if self.reading && sig.shutdown.as_mut().poll(cx).is_ready() {
                self.end_of_input();
            }
            let mut moved = self.take_queued(cx);
            match self.take_inbound(cx) {
                Ok(m) => moved |= m,
                Err(end) => return Poll::Ready(end),
            }
            match self.write(cx) {
                Ok(m) => moved |= m,
                Err(end) => return Poll::Ready(end),
            }
            if !self.reading && self.out.is_empty() && sig.all_done.as_mut().poll(cx).is_ready() {
                // Every task has queued its answer by now; take what is left.
                match self.queue.try_recv() {
                    Some(frame) => {
                        self.push(&frame);
                        continue;
                    }
                    None => return Poll::Ready(ConnectionEnd::Finished),
                }
            }
            if !moved {
                return self.poll_stall(cx, sig);
            }
        }
        // Busy: let the other tasks of this worker run.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Appends queued frames, once the previous output is written: the
    /// queue's own bound (64 frames / 16 MiB) is then what holds producers
    /// back from a client that does not read. Whether any came.
    fn take_queued(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.out.is_empty() {
            return false;
        }
        let mut moved = false;
        while self.out.len() < OUT_HIGH_WATER {
            match self.queue.poll_recv(cx) {
                Poll::Ready(Some(frame)) => {
                    self.push(&frame);
                    moved = true;
                }
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
        moved
    }

    /// Dispatches inbound frames while there is room, a batch's worth at
    /// most per call (early writes empty the buffer as it goes, so the
    /// answers made are counted): then the queue and the signals get a turn.
    fn take_inbound(&mut self, cx: &mut Context<'_>) -> Result<bool, ConnectionEnd> {
        let mut moved = false;
        let mut made = 0;
        while self.reading && self.out.len() < OUT_HIGH_WATER && made < OUT_HIGH_WATER {
            let frame = match self.wire.poll_inbound(cx) {
                Poll::Pending => break,
                Poll::Ready(Inbound::Frame(frame)) => frame,
                Poll::Ready(Inbound::End) => {
                    self.end_of_input();
                    return Ok(true);
                }
                Poll::Ready(Inbound::Gone) => return Err(ConnectionEnd::Gone),
            };
            moved = true;
            let before = self.out.len();
            match frame {
                Frame::Line(frame) => {
                    if let Some(answer) =
                        dispatch_now(&mut self.stack, &self.conn, &self.tasks, frame, cx)
                    {
                        self.push_answer(answer);
                    }
                }
                Frame::Rejected(r) => {
                    let conn = &self.conn;
                    tracing::info!(event = "frame_rejected", peer = %conn.peer.label, principal_id = %conn.principal_id(), line_len = r.line_len(), reason = r.reason());
                    self.push(&error_frame(&r.reply(), None));
                }
            }
            made += self.out.len() - before;
            if self.out.len() >= EARLY_WRITE {
                // The answers so far go out while the rest are made: a
                // pipelining client reads them (and sends again) on another
                // core instead of waiting for the whole batch.
                self.write(cx)?;
            }
        }
        Ok(moved)
    }

    /// Writes what the wire takes now.
    fn write(&mut self, cx: &mut Context<'_>) -> Result<bool, ConnectionEnd> {
        let mut moved = false;
        while !self.out.is_empty() {
            match self.wire.poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Err(ConnectionEnd::Gone),
                Poll::Ready(Ok(n)) => {
                    self.out.advance(n);
                    self.last_progress = Instant::now();
                    moved = true;
                }
                Poll::Ready(Err(e)) => {
                    tracing::debug!(conn = self.conn.id, error = %e, "write failed");
                    return Err(ConnectionEnd::Gone);
                }
                Poll::Pending => break,
            }
        }
        if self.out.is_empty() && self.out.capacity() > KEEP {
            self.out = BytesMut::new();
        }
        Ok(moved)
    }

    fn push(&mut self, frame: &[u8]) {
        self.append(|out| out.extend_from_slice(frame));
    }

    fn push_answer(&mut self, answer: AnswerFrame) {
        self.append(|out| answer.write_to(out));
    }

    /// Appends one frame, written by `write`, to the output buffer.
    fn append(&mut self, write: impl FnOnce(&mut BytesMut)) {
        let start = self.out.len();
        if start == 0 {
            // The stall clock starts when output begins to wait.
            self.last_progress = Instant::now();
        }
        write(&mut self.out);
        // Every frame to a client passes here: no configured secret leaves
        // the daemon in an answer, a notification or a request.
        let masked = match crate::logging::secrets::mask_json(&self.out[start..]) {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        };
        if let Some(masked) = masked {
            self.out.truncate(start);
            self.out.extend_from_slice(&masked);
        }
    }

    /// Nothing moved: wait, unless output has waited too long. The timer is
    /// moved only when it fires, not on every write.
    fn poll_stall(
        &mut self,
        cx: &mut Context<'_>,
        sig: &mut Signals<'_, '_>,
    ) -> Poll<ConnectionEnd> {
        if self.out.is_empty() {
            return Poll::Pending;
        }
        while sig.stall.as_mut().poll(cx).is_ready() {
            let due = self.last_progress + WRITE_STALL;
            if Instant::now() >= due {
                let conn = &self.conn;
                tracing::info!(event = "write_stalled", conn = conn.id, peer = %conn.peer.label, "no write progress for 30 s: closing");
                return Poll::Ready(ConnectionEnd::Stalled);
            }
            sig.stall.as_mut().reset(due);
        }
        Poll::Pending
    }

    fn end_of_input(&mut self) {
        self.reading = false;
        super::end_of_input(&self.daemon, &self.conn, &self.tasks);
    }

    /// After the end: input is over for good, producers see `Closed`, and
    /// the wire is closed (bounded: a peer that stopped reading cannot hold
    /// the task).
    async fn finish(&mut self, end: ConnectionEnd) {
        if self.reading {
            self.end_of_input();
        }
        self.conn.closed.cancel();
        self.queue.close();
        let grace = match end {
            ConnectionEnd::Finished => WRITE_STALL,
            ConnectionEnd::Gone | ConnectionEnd::Stalled | ConnectionEnd::Closed => CLOSE_GRACE,
        };
        let wire = &mut *self.wire;
        let _ = tokio::time::timeout(grace, std::future::poll_fn(|cx| wire.poll_close(cx))).await;
    }
}

/// How long an abrupt end waits for the wire to close (a WebSocket Close frame).
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests;
