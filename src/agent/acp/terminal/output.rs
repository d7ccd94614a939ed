//! One terminal's captured output: the bounded buffer (cut from its
//! beginning at a character boundary) and the task that fills it from the
//! command's pipe (async on Unix; a blocking read on Windows, whose
//! anonymous pipes tokio cannot poll).

use std::sync::{Arc, Mutex};

/// The least a terminal's buffer holds before its dropped beginning is
/// compacted away.
const COMPACT_MIN: usize = 64 * 1024;

/// The captured output of one terminal.
#[derive(Debug, Default)]
pub(super) struct Output {
    bytes: Vec<u8>,
    limit: usize,
    pub(super) truncated: bool,
}

impl Output {
    /// An empty buffer keeping at most `limit` bytes.
    pub(super) fn keeping(limit: usize) -> Output {
        Output {
            limit,
            ..Output::default()
        }
    }

    /// Appends `data`. What lies beyond the limit is dropped from the
    /// beginning once the buffer holds twice the limit (at least
    /// [`COMPACT_MIN`]): a command flooding its output costs one move per
    /// limit's worth of bytes, not one per read; [`Output::kept`] is the view.
    pub(super) fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > self.limit {
            self.truncated = true;
            if self.bytes.len() > self.limit.saturating_mul(2).max(COMPACT_MIN) {
                let cut = self.cut();
                self.bytes.drain(..cut);
            }
        }
    }

    /// Where the kept output starts: at most `limit` bytes from the end, at a
    /// character boundary (never inside a UTF-8 sequence).
    fn cut(&self) -> usize {
        let mut cut = self.bytes.len().saturating_sub(self.limit);
        while cut < self.bytes.len() && self.bytes[cut] & 0xC0 == 0x80 {
            cut += 1;
        }
        cut
    }

    /// The output kept: the last `limit` bytes at most.
    pub(super) fn kept(&self) -> &[u8] {
        &self.bytes[self.cut()..]
    }
}

/// Reads the command's output into `output` until every writer is gone.
#[cfg(unix)]
pub(super) async fn capture(pipe: std::io::PipeReader, output: Arc<Mutex<Output>>) {
    use tokio::io::AsyncReadExt;
    let fd = std::os::fd::OwnedFd::from(pipe);
    let Ok(mut pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        return;
    };
    let mut buf = vec![0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => match output.lock() {
                Ok(mut o) => o.push(&buf[..n]),
                Err(_) => return,
            },
        }
    }
}

/// Reads the command's output into `output` until every writer is gone, on
/// a blocking thread (ends when the job is killed: its processes held the
/// write ends).
#[cfg(windows)]
pub(super) async fn capture(mut pipe: std::io::PipeReader, output: Arc<Mutex<Output>>) {
    use std::io::Read;
    let _ = tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => match output.lock() {
                    Ok(mut o) => o.push(&buf[..n]),
                    Err(_) => return,
                },
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_from_its_beginning_at_a_char_boundary() {
        let mut o = Output {
            limit: 4,
            ..Output::default()
        };
        o.push(b"abc");
        assert!(!o.truncated);
        // abcd, then `é` (2 bytes) and `€` (3): the last 4 bytes start
        // inside `é`, so the cut moves past it and 3 bytes are kept.
        o.push("dé€".as_bytes());
        assert_eq!(o.kept(), "€".as_bytes());
        assert!(o.truncated);
        let mut o = Output {
            limit: 0,
            ..Output::default()
        };
        o.push(b"xyz");
        assert!(o.kept().is_empty());
        // A flood: the buffer stays within twice the limit (or the
        // compaction minimum), and the view is the exact tail.
        let mut o = Output {
            limit: 100_000,
            ..Output::default()
        };
        for i in 0..100u8 {
            o.push(&[b'a' + i % 26; 8192]);
            assert!(o.bytes.len() <= 200_000 + 8192, "{}", o.bytes.len());
        }
        let tail: Vec<u8> = (0..100u8).flat_map(|i| [b'a' + i % 26; 8192]).collect();
        assert_eq!(o.kept(), &tail[tail.len() - 100_000..]);
        assert!(o.truncated);
    }
}
