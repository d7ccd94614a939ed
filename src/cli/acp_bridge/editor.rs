//! The editor's side of the wire: ACP frames (NDJSON, one JSON-RPC message
//! a line) read from stdin and written to stdout. Stdout carries protocol
//! only: every frame goes through [`Out`], and nothing else in the bridge
//! prints to stdout (logs go to stderr).
//!
//! Memory is bounded while the editor reads slowly: frames wait in a queue
//! of at most [`OUT_BUDGET`] bytes (one frame larger than that is let in
//! alone). [`Out::send`] waits for room, so the bridge stops reading the
//! daemon's socket and the daemon's own bounded queue holds the turn back.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;

use crate::codec::FrameCodec;

/// Bytes of frames queued for the editor at most (plus the one being written).
pub const OUT_BUDGET: usize = 4 * 1024 * 1024;

/// Frames the writer gathers into one write.
const BATCH_BYTES: usize = 256 * 1024;

/// The editor's frames, bounded at 8 MiB a line like the daemon's.
pub type EditorIn = FramedRead<tokio::io::Stdin, FrameCodec>;

/// Reads stdin.
pub fn input() -> EditorIn {
    FramedRead::new(tokio::io::stdin(), FrameCodec::default())
}

/// The queue to the editor. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Out {
    tx: mpsc::UnboundedSender<(Vec<u8>, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
}

/// The editor stopped reading for good (stdout closed).
#[derive(Debug)]
pub struct Gone;

impl Out {
    /// The queue and the task that writes it to `w` (stdout in the bridge).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        w: W,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(OUT_BUDGET));
        let task = tokio::spawn(write_all(w, rx));
        (Self { tx, room }, task)
    }

    /// Queues one frame (`line` without its `\n`), waiting for room.
    pub async fn send_line(&self, mut line: Vec<u8>) -> Result<(), Gone> {
        line.push(b'\n');
        let cost = line.len().min(OUT_BUDGET) as u32;
        let permit = self
            .room
            .clone()
            .acquire_many_owned(cost)
            .await
            .map_err(|_| Gone)?;
        self.tx.send((line, permit)).map_err(|_| Gone)
    }

    /// Queues a message.
    pub async fn send(&self, msg: &Value) -> Result<(), Gone> {
        self.send_line(msg.to_string().into_bytes()).await
    }

    /// Answers the editor's request `id`.
    pub async fn answer(&self, id: &Value, result: Value) -> Result<(), Gone> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Answers the editor's request `id` with an error.
    pub async fn fail(&self, id: &Value, code: i64, message: &str) -> Result<(), Gone> {
        let error = json!({"code": code, "message": message});
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
            .await
    }

    /// Answers with the daemon's error object, as it came (code, message, data).
    pub async fn fail_with(&self, id: &Value, error: Value) -> Result<(), Gone> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
            .await
    }
}

/// The writer: each batch of waiting frames in one write, the room given
/// back once it is written.
async fn write_all<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<(Vec<u8>, OwnedSemaphorePermit)>,
) {
    let mut buf = Vec::with_capacity(BATCH_BYTES);
    let mut permits = Vec::new();
    while let Some((line, permit)) = rx.recv().await {
        buf.extend_from_slice(&line);
        permits.push(permit);
        while buf.len() < BATCH_BYTES {
            match rx.try_recv() {
                Ok((line, permit)) => {
                    buf.extend_from_slice(&line);
                    permits.push(permit);
                }
                Err(_) => break,
            }
        }
        if w.write_all(&buf).await.is_err() || w.flush().await.is_err() {
            // The editor closed stdout: nothing more can be said to it.
            rx.close();
            return;
        }
        buf.clear();
        permits.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_slow_reader_bounds_the_queue() {
        let (mut r, w) = tokio::io::duplex(64);
        let (out, _task) = Out::new(w);
        let frame = vec![b'x'; 1024 * 1024];
        // Three frames fit in the 4 MiB budget; the fourth waits for the reader.
        for _ in 0..3 {
            out.send_line(frame.clone()).await.unwrap();
        }
        let fifth = tokio::time::timeout(std::time::Duration::from_millis(200), async {
            out.send_line(frame.clone()).await.unwrap();
            out.send_line(frame.clone()).await.unwrap();
        })
        .await;
        assert!(fifth.is_err(), "the queue must not grow past its budget");
        let mut got = vec![0u8; 1024];
        r.read_exact(&mut got).await.unwrap();
        assert!(got.iter().all(|b| *b == b'x'));
    }
}
