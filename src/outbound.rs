//! The queue of a connection's frames that do not come straight from the
//! connection driver (§3.7, §4): answers of handlers that had to wait,
//! notifications and daemon→client requests. The driver drains it into the
//! same output buffer as the inline answers, so frames never interleave.
//!
//! The queue holds at most 64 frames and 16 MiB. Producers wait while it is
//! full; one that has waited 30 s closes the connection (a client that stops
//! reading cannot grow the daemon's memory).

use std::sync::Arc;

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

/// What the queue may hold: frames and bytes, each counted from the moment
/// a producer queues a frame until the connection driver takes it out (the
/// driver then bounds what it holds itself: one output batch).
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

/// The connection driver's end of the queue.
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
    /// that goes on.
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
        // Held for the daemon-wide budget until the driver takes it out.
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
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// [`WriteQueue::recv`] as a poll.
    pub fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Vec<u8>>> {
        std::task::ready!(self.rx.poll_recv(cx))
            .map(|f| self.taken(f))
            .into()
    }

    /// A queued frame, if one is ready now (see [`WriteQueue::recv`]).
    pub fn try_recv(&mut self) -> Option<Vec<u8>> {
        let f = self.rx.try_recv().ok()?;
        Some(self.taken(f))
    }

    /// A frame leaves the queue: its room is given back.
    fn taken(&self, f: Vec<u8>) -> Vec<u8> {
        self.budget.give_back(1, charge(&f) as usize);
        f
    }

    /// Refuses further frames: producers see [`Closed`].
    pub fn close(&mut self) {
        self.rx.close();
        self.budget.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_come_out_in_order() {
        let (out, mut q) = write_queue(CancellationToken::new());
        for i in 0..10 {
            out.send(format!("{i}\n").into_bytes()).await.unwrap();
        }
        for i in 0..10 {
            assert_eq!(q.recv().await.unwrap(), format!("{i}\n").into_bytes());
        }
        assert!(q.try_recv().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_nobody_drains_closes_the_connection_after_30s() {
        let closed = CancellationToken::new();
        let (out, _q) = write_queue(closed.clone());
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
        // Nobody drains the queue: a client that stopped reading.
        let (out, _q) = write_queue(closed.clone());
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
