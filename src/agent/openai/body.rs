//! The answer's body, read by a task of its own: receiving and the HTTP
//! framing (hyper) run beside the turn's SSE splitting and decoding, so a
//! fast stream uses two cores instead of one (docs/performance.md). The
//! task ends with the body; dropping the [`Body`] aborts it, which drops
//! the response and closes the connection at once (cancel, failure).

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::mpsc::{self, error::TryRecvError};
use tokio::task::JoinHandle;

/// Pieces read ahead of the turn at most (each at most hyper's read buffer).
const AHEAD: usize = 8;

/// One read of the body: bytes, or the transport error that ended it.
pub type Piece = reqwest::Result<Bytes>;

/// The body being read.
pub struct Body {
    rx: mpsc::Receiver<Piece>,
    task: JoinHandle<()>,
}

impl Body {
    /// Starts reading `response`'s body.
    pub fn spawn(response: reqwest::Response) -> Self {
        let (tx, rx) = mpsc::channel(AHEAD);
        let task = tokio::spawn(async move {
            let mut body = response.bytes_stream();
            while let Some(piece) = body.next().await {
                let failed = piece.is_err();
                if tx.send(piece).await.is_err() || failed {
                    return;
                }
            }
        });
        Body { rx, task }
    }

    /// The next piece, waiting for it; `None` once the body ended.
    /// Cancel-safe: a piece is never lost when the wait is dropped.
    pub async fn next(&mut self) -> Option<Piece> {
        self.rx.recv().await
    }

    /// The next piece if one is read already: `Some(None)` once the body
    /// ended, `None` if nothing is there yet.
    pub fn ready(&mut self) -> Option<Option<Piece>> {
        match self.rx.try_recv() {
            Ok(piece) => Some(Some(piece)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(None),
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        self.task.abort();
    }
}
