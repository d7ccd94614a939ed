//! The queue of a connection's frames that do not come straight from the
//! connection driver (SPEC §3.7, §4): answers of handlers that had to wait,
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

/// The connection is closed (or closing): the frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection closed")]
pub struct Closed;

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

fn take(sem: &Semaphore, n: u32) -> Result<bool, Closed> {
    match sem.try_acquire_many(n) {
        Ok(permit) => {
            permit.forget();
            Ok(true)
        }
        Err(TryAcquireError::NoPermits) => Ok(false),
        Err(TryAcquireError::Closed) => Err(Closed),
    }
}

impl Outbound {
    /// Queues one frame, waiting while the queue is full.
    pub async fn send(&self, frame: Vec<u8>) -> Result<(), Closed> {
        let n = charge(&frame);
        let has_frame = take(&self.budget.frames, 1)?;
        let has_bytes = has_frame && take(&self.budget.bytes, n)?;
        if !has_bytes {
            self.wait_for_room(has_frame, n).await?;
        }
        self.tx.send(frame).map_err(|_| Closed)
    }

    /// The slow path: wait for room, at most [`WRITE_STALL`] in all.
    async fn wait_for_room(&self, has_frame: bool, n: u32) -> Result<(), Closed> {
        let budget = &self.budget;
        let wait = async {
            if !has_frame {
                budget.frames.acquire().await.map_err(|_| Closed)?.forget();
            }
            budget
                .bytes
                .acquire_many(n)
                .await
                .map_err(|_| Closed)?
                .forget();
            Ok::<(), Closed>(())
        };
        match tokio::time::timeout(WRITE_STALL, wait).await {
            Ok(r) => r,
            Err(_) => {
                tracing::info!(
                    event = "write_stalled",
                    "write queue full for 30 s: closing the connection"
                );
                self.closed.cancel();
                Err(Closed)
            }
        }
    }

    /// Whether the writer has gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
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

    /// [`WriteQueue::recv`] as a poll.
    pub fn poll_recv(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Vec<u8>>> {
        let f = std::task::ready!(self.rx.poll_recv(cx));
        if let Some(f) = &f {
            self.budget.give_back(1, charge(f) as usize);
        }
        std::task::Poll::Ready(f)
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
}
