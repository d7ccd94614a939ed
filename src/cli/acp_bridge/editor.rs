//! The editor's side of the wire: ACP frames (NDJSON, one JSON-RPC message
//! a line) read from stdin and written to stdout. Stdout carries protocol
//! only: every frame goes through [`Out`], and nothing else in the bridge
//! prints to stdout (logs go to stderr).
//!
//! Memory is bounded while the editor reads slowly: frames wait in a queue
//! of at most [`OUT_BUDGET`] bytes (one frame larger than that is let in
//! alone). [`Out::send`] waits for room, so the bridge stops reading the
//! daemon's socket and the daemon's own bounded queue holds the turn back.
//!
//! Frames are written straight into a batch of up to [`BATCH_BYTES`], which
//! enters the queue as one item and leaves it as one write: a turn streams
//! a frame per chunk, and a queue item, a writer wake-up or a write per
//! frame cost more than mapping the frame. The bridge's loop calls
//! [`Out::flush`] before it waits, so a frame never waits in a batch while
//! the loop is idle.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;

use crate::codec::FrameCodec;

/// Bytes of frames queued for the editor at most (plus the one being written).
pub const OUT_BUDGET: usize = 4 * 1024 * 1024;

/// Bytes of frames gathered before they enter the queue as one item.
pub const BATCH_BYTES: usize = 64 * 1024;

/// The editor's frames, bounded at 8 MiB a line like the daemon's.
pub type EditorIn = FramedRead<tokio::io::Stdin, FrameCodec>;

/// Reads stdin.
pub fn input() -> EditorIn {
    FramedRead::new(tokio::io::stdin(), FrameCodec::default())
}

/// Stdout, written without a thread hop where it can be: a pipe or a
/// socket (editors give one or the other: Node's child processes get a
/// socket pair) is made non-blocking and driven by the runtime; anything
/// else (a file, a terminal) goes through tokio's blocking pool.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(unix)]
    if let Some(w) = stdout_nonblocking() {
        return w;
    }
    Box::new(tokio::io::stdout())
}

#[cfg(unix)]
fn stdout_nonblocking() -> Option<Box<dyn AsyncWrite + Unpin + Send>> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    // A duplicate of fd 1 (the same open pipe or socket): nothing else in
    // the bridge writes stdout, so its non-blocking mode surprises no one.
    let file = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        let pipe = tokio::net::unix::pipe::Sender::from_file(file).ok()?;
        return Some(Box::new(pipe));
    }
    if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        return Some(Box::new(tokio::net::UnixStream::from_std(socket).ok()?));
    }
    None
}

/// The queue to the editor, and the batch being gathered for it.
#[derive(Debug)]
pub struct Out {
    tx: mpsc::UnboundedSender<(Vec<u8>, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
    batch: Vec<u8>,
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
        let batch = Vec::with_capacity(BATCH_BYTES);
        (Self { tx, room, batch }, task)
    }

    /// Adds one frame (`line` without its `\n`) to the batch; a full batch
    /// is queued, waiting for room.
    pub async fn send_line(&mut self, line: Vec<u8>) -> Result<(), Gone> {
        self.send_with(|batch| {
            batch.extend_from_slice(&line);
            true
        })
        .await
        .map(|_| ())
    }

    /// Lets `write` append one frame (without its `\n`) to the batch, in
    /// place; `write` says whether it did (appending nothing when it did
    /// not). A full batch is queued, waiting for room.
    pub async fn send_with(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> bool,
    ) -> Result<bool, Gone> {
        if !write(&mut self.batch) {
            return Ok(false);
        }
        self.batch.push(b'\n');
        if self.batch.len() >= BATCH_BYTES {
            self.flush().await?;
        }
        Ok(true)
    }

    /// Bytes gathered and not yet queued.
    pub fn batched(&self) -> usize {
        self.batch.len()
    }

    /// Queues the batch, waiting for room.
    pub async fn flush(&mut self) -> Result<(), Gone> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let cost = self.batch.len().min(OUT_BUDGET) as u32;
        let permit = self
            .room
            .clone()
            .acquire_many_owned(cost)
            .await
            .map_err(|_| Gone)?;
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_BYTES));
        self.tx.send((batch, permit)).map_err(|_| Gone)
    }

    /// Queues a message.
    pub async fn send(&mut self, msg: &Value) -> Result<(), Gone> {
        self.send_line(msg.to_string().into_bytes()).await
    }

    /// Answers the editor's request `id`.
    pub async fn answer(&mut self, id: &Value, result: Value) -> Result<(), Gone> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Answers the editor's request `id` with an error.
    pub async fn fail(&mut self, id: &Value, code: i64, message: &str) -> Result<(), Gone> {
        let error = json!({"code": code, "message": message});
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
            .await
    }

    /// Answers with the daemon's error object, as it came (code, message, data).
    pub async fn fail_with(&mut self, id: &Value, error: Value) -> Result<(), Gone> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
            .await
    }
}

/// The writer: each batch in one write, its room given back once written.
async fn write_all<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<(Vec<u8>, OwnedSemaphorePermit)>,
) {
    while let Some((batch, _room)) = rx.recv().await {
        if w.write_all(&batch).await.is_err() || w.flush().await.is_err() {
            // The editor closed stdout: nothing more can be said to it.
            rx.close();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_slow_reader_bounds_the_queue() {
        let (mut r, w) = tokio::io::duplex(64);
        let (mut out, _task) = Out::new(w);
        let frame = vec![b'x'; 1024 * 1024];
        // Three frames fit in the 4 MiB budget; the fourth waits for the reader.
        for _ in 0..3 {
            out.send_line(frame.clone()).await.unwrap();
        }
        let fifth = tokio::time::timeout(std::time::Duration::from_millis(200), async {
            out.send_line(frame.clone()).await.unwrap();
            out.send_line(frame.clone()).await.unwrap();
            out.flush().await.unwrap();
        })
        .await;
        assert!(fifth.is_err(), "the queue must not grow past its budget");
        let mut got = vec![0u8; 1024];
        r.read_exact(&mut got).await.unwrap();
        assert!(got.iter().all(|b| *b == b'x'));
    }

    #[tokio::test]
    async fn small_frames_wait_in_the_batch_until_flushed() {
        let (mut r, w) = tokio::io::duplex(1024);
        let (mut out, _task) = Out::new(w);
        out.send_line(b"{}".to_vec()).await.unwrap();
        assert_eq!(out.batched(), 3);
        let early = tokio::time::timeout(std::time::Duration::from_millis(100), async {
            let mut b = [0u8; 3];
            r.read_exact(&mut b).await.map(|_| b)
        })
        .await;
        assert!(early.is_err(), "nothing is written before the flush");
        out.send_line(b"[]".to_vec()).await.unwrap();
        out.flush().await.unwrap();
        assert_eq!(out.batched(), 0);
        let mut got = [0u8; 6];
        r.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"{}\n[]\n");
    }
}
