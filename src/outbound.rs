//! The write side of a connection (SPEC §3.7, §4): every outbound frame
//! (responses, notifications, daemon→client requests) goes through one
//! bounded queue to one writer task, so frames never interleave.
//!
//! The queue holds at most 64 frames and 16 MiB. Producers wait while it is
//! full; one that has waited 30 s closes the connection (a client that stops
//! reading cannot grow the daemon's memory). The writer drains every frame
//! that is ready into one write, so a pipelining client costs one syscall
//! per batch, not per frame.

use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use crate::limits::{WRITE_QUEUE_BYTES, WRITE_QUEUE_FRAMES, WRITE_STALL};
use crate::memory;

/// The connection is closed (or closing): the frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection closed")]
pub struct Closed;

/// How long a cancelled producer still waits for room before the
/// connection is closed (docs/decisions.md, "Cancel wins over a stalled client").
pub const CANCELLED_WRITE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest batch the writer assembles before writing.
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// What the queue may hold: frames and bytes, each counted from the moment
/// a producer queues a frame until the writer has written it (a frame the
/// writer is busy writing still counts).
#[derive(Debug)]
struct Budget {
    frames: Semaphore,
    bytes: Semaphore,
}

impl Budget {
    fn close(&self) {
        self.frames.close();
        self.bytes.close();
    }

    fn give_back(&self, frames: usize, bytes: usize) {
        self.frames.add_permits(frames);
        self.bytes.add_permits(bytes);
        memory::budget().sub(bytes);
    }
}

/// A producer's handle on a connection's write queue.
#[derive(Debug, Clone)]
pub struct Outbound {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    budget: Arc<Budget>,
    closed: CancellationToken,
}

/// The writer's end of the queue.
#[derive(Debug)]
pub struct WriteQueue {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    budget: Arc<Budget>,
}

/// A new queue; `closed` is cancelled when a producer stalls too long.
pub fn write_queue(closed: CancellationToken) -> (Outbound, WriteQueue) {
    // The channel itself is unbounded: the budget is what bounds it.
    let (tx, rx) = mpsc::unbounded_channel();
    let budget = Arc::new(Budget {
        frames: Semaphore::new(WRITE_QUEUE_FRAMES),
        bytes: Semaphore::new(WRITE_QUEUE_BYTES),
    });
    (
        Outbound {
            tx,
            budget: budget.clone(),
            closed,
        },
        WriteQueue { rx, budget },
    )
}

fn charge(frame: &[u8]) -> u32 {
    // A frame is at most 8 MiB, so it always fits into an empty queue.
    frame.len().min(WRITE_QUEUE_BYTES) as u32
}

impl Outbound {
    /// Queues one frame, waiting while the queue is full.
    pub async fn send(&self, frame: Vec<u8>) -> Result<(), Closed> {
        self.send_inner(frame, None).await
    }

    /// [`Outbound::send`] for a producer that can be cancelled (a turn,
    /// §8.6): once `cancel` fires, it waits for room at most
    /// [`CANCELLED_WRITE_GRACE`] more, then closes the connection as a
    /// stalled one. A cancelled turn so ends within its grace whatever its
    /// client does, and a frame is never dropped silently from a stream
    /// that goes on (issue 13 item 3).
    pub async fn send_or_cancelled(
        &self,
        frame: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<(), Closed> {
        self.send_inner(frame, Some(cancel)).await
    }

    async fn send_inner(
        &self,
        frame: Vec<u8>,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), Closed> {
        let n = charge(&frame);
        if !self.try_reserve(n)? {
            self.wait_for_room(n, cancel).await?;
        }
        // Held for the daemon-wide budget until the writer gives it back.
        memory::budget().add(n as usize);
        self.tx.send(frame).map_err(|f| {
            memory::budget().sub(charge(&f.0) as usize);
            Closed
        })
    }

    /// Takes room for one frame of `n` bytes if there is some now.
    fn try_reserve(&self, n: u32) -> Result<bool, Closed> {
        let budget = &self.budget;
        let frame = match budget.frames.try_acquire() {
            Ok(p) => p,
            Err(TryAcquireError::NoPermits) => return Ok(false),
            Err(TryAcquireError::Closed) => return Err(Closed),
        };
        match budget.bytes.try_acquire_many(n) {
            Ok(bytes) => {
                frame.forget();
                bytes.forget();
                Ok(true)
            }
            Err(TryAcquireError::NoPermits) => Ok(false),
            Err(TryAcquireError::Closed) => Err(Closed),
        }
    }

    /// The slow path: wait for room, at most [`WRITE_STALL`] in all (and at
    /// most [`CANCELLED_WRITE_GRACE`] after `cancel`). Dropping the wait
    /// gives back what it holds: permits are forgotten only once both are held.
    async fn wait_for_room(
        &self,
        n: u32,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), Closed> {
        let budget = &self.budget;
        let reserve = async {
            let frame = budget.frames.acquire().await.map_err(|_| Closed)?;
            let bytes = budget.bytes.acquire_many(n).await.map_err(|_| Closed)?;
            frame.forget();
            bytes.forget();
            Ok::<(), Closed>(())
        };
        tokio::pin!(reserve);
        let cancelled = async {
            match cancel {
                Some(c) => {
                    c.cancelled().await;
                    tokio::time::sleep(CANCELLED_WRITE_GRACE).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = &mut reserve => r,
            _ = tokio::time::sleep(WRITE_STALL) => self.stalled("write queue full for 30 s"),
            _ = cancelled => self.stalled("write queue still full after its turn was cancelled"),
        }
    }

    fn stalled(&self, why: &'static str) -> Result<(), Closed> {
        tracing::info!(event = "write_stalled", "{why}: closing the connection");
        self.closed.cancel();
        Err(Closed)
    }

    /// Whether the writer has gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl Drop for WriteQueue {
    /// Frames never written no longer count against the memory budget.
    fn drop(&mut self) {
        self.rx.close();
        while let Ok(f) = self.rx.try_recv() {
            memory::budget().sub(charge(&f) as usize);
        }
    }
}

impl WriteQueue {
    /// The next queued frame (`None` once every producer is gone). A frame
    /// taken out no longer counts against the queue: the caller bounds what
    /// it holds itself.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        let f = self.rx.recv().await?;
        self.budget.give_back(1, charge(&f) as usize);
        Some(f)
    }

    /// A queued frame, if one is ready now (see [`WriteQueue::recv`]).
    pub fn try_recv(&mut self) -> Option<Vec<u8>> {
        let f = self.rx.try_recv().ok()?;
        self.budget.give_back(1, charge(&f) as usize);
        Some(f)
    }

    /// Refuses further frames: producers see [`Closed`].
    pub fn close(&mut self) {
        self.rx.close();
        self.budget.close();
    }

    /// Writes queued frames to `sink` until every producer is gone, or
    /// `finish` is cancelled and the queue is empty (a graceful close: what
    /// was queued is written), or `closed` is cancelled (an abort: even a
    /// write in progress stops). Then shuts the sink down.
    pub async fn run<W: AsyncWrite + Unpin>(
        mut self,
        mut sink: W,
        closed: CancellationToken,
        finish: CancellationToken,
    ) {
        let mut batch: Vec<u8> = Vec::new();
        loop {
            let first = tokio::select! {
                biased;
                f = self.rx.recv() => match f { Some(f) => f, None => break },
                _ = closed.cancelled() => break,
                _ = finish.cancelled() => break,
            };
            let (mut frames, mut bytes) = (1, charge(&first) as usize);
            let result = if let Ok(second) = self.rx.try_recv() {
                batch.clear();
                batch.extend_from_slice(&first);
                batch.extend_from_slice(&second);
                frames += 1;
                bytes += charge(&second) as usize;
                while batch.len() < MAX_BATCH_BYTES {
                    let Ok(next) = self.rx.try_recv() else { break };
                    frames += 1;
                    bytes += charge(&next) as usize;
                    batch.extend_from_slice(&next);
                }
                write(&mut sink, &batch, &closed).await
            } else {
                write(&mut sink, &first, &closed).await
            };
            self.budget.give_back(frames, bytes);
            if batch.capacity() > MAX_BATCH_BYTES * 2 {
                batch = Vec::new();
            }
            if result.is_err() {
                closed.cancel();
                break;
            }
        }
        // Producers see `Closed` from now on.
        self.rx.close();
        self.budget.close();
        let _ = sink.shutdown().await;
    }
}

async fn write<W: AsyncWrite + Unpin>(
    sink: &mut W,
    buf: &[u8],
    closed: &CancellationToken,
) -> std::io::Result<()> {
    tokio::select! {
        r = sink.write_all(buf) => r,
        _ = closed.cancelled() => Err(std::io::ErrorKind::BrokenPipe.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn frames_arrive_in_order_and_batched() {
        let closed = CancellationToken::new();
        let (out, q) = write_queue(closed.clone());
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let writer = tokio::spawn(q.run(a, closed.clone(), CancellationToken::new()));
        for i in 0..100 {
            out.send(format!("{i}\n").into_bytes()).await.unwrap();
        }
        drop(out);
        writer.await.unwrap();
        let mut s = String::new();
        b.read_to_string(&mut s).await.unwrap();
        let expect: String = (0..100).map(|i| format!("{i}\n")).collect();
        assert_eq!(s, expect);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_reader_closes_the_connection_after_30s() {
        let closed = CancellationToken::new();
        let (out, q) = write_queue(closed.clone());
        let (a, _b) = tokio::io::duplex(64); // nobody reads _b
        tokio::spawn(q.run(a, closed.clone(), CancellationToken::new()));
        let mut sent = 0usize;
        let start = tokio::time::Instant::now();
        while out.send(vec![b'x'; 1024]).await.is_ok() {
            sent += 1;
            assert!(sent < 1000, "queue must be bounded");
        }
        assert!(closed.is_cancelled());
        assert!(start.elapsed() >= WRITE_STALL);
        assert_eq!(
            sent, WRITE_QUEUE_FRAMES,
            "the queue holds exactly 64 frames"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_producer_gives_up_on_a_stalled_reader_after_its_grace() {
        let closed = CancellationToken::new();
        let (out, q) = write_queue(closed.clone());
        let (a, _b) = tokio::io::duplex(64); // nobody reads _b
        tokio::spawn(q.run(a, closed.clone(), CancellationToken::new()));
        let cancel = CancellationToken::new();
        let mut sent = 0usize;
        let start = tokio::time::Instant::now();
        let canceller = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                cancel.cancel();
            })
        };
        while out
            .send_or_cancelled(vec![b'x'; 1024], &cancel)
            .await
            .is_ok()
        {
            sent += 1;
            assert!(sent < 1000, "queue must be bounded");
        }
        canceller.await.unwrap();
        assert!(closed.is_cancelled());
        let waited = start.elapsed();
        assert!(
            waited >= std::time::Duration::from_secs(1) + CANCELLED_WRITE_GRACE
                && waited < WRITE_STALL,
            "{waited:?}"
        );
        // It waited for room like any producer until then: 64 frames queued.
        assert_eq!(sent, WRITE_QUEUE_FRAMES);
    }
}
