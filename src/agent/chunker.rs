//! Chunked, delayed, cancellable emission of one text segment.
//!
//! A segment is split into chunks of `chunk_chars` Unicode scalar values;
//! each chunk is preceded by the current chunk delay, and each chunk is one
//! sink call with a `&str` slice of the segment (no allocation per chunk: a
//! one-million-chunk reply must stay cheap). A zero delay never touches the
//! timer; cancellation is then still noticed before every chunk, so a long
//! undelayed reply stops promptly too.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::sink::{EventSink, SinkClosed};

/// Why a turn stops early.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Cancellation was observed.
    Cancelled,
    /// The sink refused an event.
    SinkClosed,
    /// `::fail MESSAGE`.
    Failed(String),
}

impl From<SinkClosed> for Stop {
    fn from(_: SinkClosed) -> Self {
        Stop::SinkClosed
    }
}

/// Which chunk event a segment becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `agent_message_chunk`.
    Message,
    /// `agent_thought_chunk`.
    Thought,
}

/// Chunk size, chunk delay and the turn's cancellation signal.
pub struct Chunker<'c> {
    chunk_chars: usize,
    delay: Duration,
    cancel: &'c CancellationToken,
}

impl<'c> Chunker<'c> {
    /// An chunker with the turn's starting settings.
    pub fn new(chunk_chars: u32, delay_ms: u64, cancel: &'c CancellationToken) -> Self {
        let mut chunker = Chunker {
            chunk_chars: 1,
            delay: Duration::ZERO,
            cancel,
        };
        chunker.set_chunk_chars(chunk_chars);
        chunker.set_delay_ms(delay_ms);
        chunker
    }

    /// `::chunk N`. Zero (only reachable through settings) counts as one.
    pub fn set_chunk_chars(&mut self, chars: u32) {
        self.chunk_chars = usize::try_from(chars.max(1)).unwrap_or(usize::MAX);
    }

    /// `::delay MS`.
    pub fn set_delay_ms(&mut self, ms: u64) {
        self.delay = Duration::from_millis(ms);
    }

    /// Waits `duration`, or returns [`Stop::Cancelled`] as soon as the turn is
    /// cancelled. A zero duration only checks for cancellation.
    pub async fn wait(&self, duration: Duration) -> Result<(), Stop> {
        if duration.is_zero() {
            return if self.cancel.is_cancelled() {
                Err(Stop::Cancelled)
            } else {
                Ok(())
            };
        }
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep(duration) => Ok(()),
        }
    }

    /// Awaits a sink request (approval, ask) unless the turn is cancelled
    /// first; on cancellation the request's future is dropped.
    pub async fn race<T>(
        &self,
        request: impl Future<Output = Result<T, SinkClosed>>,
    ) -> Result<T, Stop> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(Stop::Cancelled),
            answer = request => Ok(answer?),
        }
    }

    /// Emits `segment` as chunks. An empty segment emits nothing.
    pub async fn emit<S: EventSink>(
        &self,
        sink: &mut S,
        stream: Stream,
        segment: &str,
    ) -> Result<(), Stop> {
        let n = self.chunk_chars;
        if segment.len() <= n {
            // At most n bytes, so at most n chars: one chunk (or none).
            if !segment.is_empty() {
                self.chunk(sink, stream, segment).await?;
            }
            return Ok(());
        }
        if segment.is_ascii() {
            let mut start = 0;
            while start < segment.len() {
                let end = segment.len().min(start.saturating_add(n));
                self.chunk(sink, stream, &segment[start..end]).await?;
                start = end;
            }
            return Ok(());
        }
        let mut start = 0;
        let mut count = 0;
        for (i, _) in segment.char_indices() {
            if count == n {
                self.chunk(sink, stream, &segment[start..i]).await?;
                start = i;
                count = 0;
            }
            count += 1;
        }
        self.chunk(sink, stream, &segment[start..]).await
    }

    /// Emits the segment made of `pieces` back to back, chunk for chunk as
    /// [`Chunker::emit`] would emit it whole, holding at most one chunk
    /// besides the pieces: a long segment need never exist in one piece.
    pub async fn emit_pieces<S: EventSink>(
        &self,
        sink: &mut S,
        stream: Stream,
        pieces: &[&str],
    ) -> Result<(), Stop> {
        let n = self.chunk_chars;
        // The start of a chunk that straddles two pieces.
        let (mut carry, mut carry_chars) = (String::new(), 0);
        for &piece in pieces {
            let mut rest = piece;
            if carry_chars > 0 {
                let (head, chars) = split_chars(rest, n - carry_chars);
                carry.push_str(head);
                carry_chars += chars;
                rest = &rest[head.len()..];
                if carry_chars < n {
                    continue;
                }
                self.chunk(sink, stream, &carry).await?;
                (carry_chars, _) = (0, carry.clear());
            }
            while !rest.is_empty() {
                let (head, chars) = split_chars(rest, n);
                if chars < n {
                    carry.push_str(head);
                    carry_chars = chars;
                    break;
                }
                self.chunk(sink, stream, head).await?;
                rest = &rest[head.len()..];
            }
        }
        if carry_chars > 0 {
            self.chunk(sink, stream, &carry).await?;
        }
        Ok(())
    }

    async fn chunk<S: EventSink>(
        &self,
        sink: &mut S,
        stream: Stream,
        text: &str,
    ) -> Result<(), Stop> {
        self.wait(self.delay).await?;
        match stream {
            Stream::Message => sink.message_chunk(text).await?,
            Stream::Thought => sink.thought_chunk(text).await?,
        }
        Ok(())
    }
}

/// The first `k` scalar values of `s` (all of it if shorter), and how many there are.
fn split_chars(s: &str, k: usize) -> (&str, usize) {
    let ascii_end = s.len().min(k);
    if s.as_bytes()[..ascii_end].is_ascii() {
        return (&s[..ascii_end], ascii_end);
    }
    match s.char_indices().nth(k) {
        Some((i, _)) => (&s[..i], k),
        None => (s, s.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::RecordingSink;

    async fn chunks(chars: u32, segment: &str) -> Vec<String> {
        let cancel = CancellationToken::new();
        let mut sink = RecordingSink::default();
        Chunker::new(chars, 0, &cancel)
            .emit(&mut sink, Stream::Message, segment)
            .await
            .unwrap();
        sink.lines()
    }

    #[tokio::test]
    async fn splits_by_scalar_values() {
        assert_eq!(chunks(2, "abcde").await, ["msg:ab", "msg:cd", "msg:e"]);
        assert_eq!(chunks(2, "héllo").await, ["msg:hé", "msg:ll", "msg:o"]);
        assert_eq!(chunks(1, "😀é").await, ["msg:😀", "msg:é"]);
        assert_eq!(chunks(3, "ééé").await, ["msg:ééé"]);
        assert_eq!(chunks(16, "abc").await, ["msg:abc"]);
        assert!(chunks(4, "").await.is_empty());
        assert_eq!(chunks(0, "ab").await, ["msg:a", "msg:b"]);
        assert_eq!(chunks(u32::MAX, "ab").await, ["msg:ab"]);
    }

    #[tokio::test]
    async fn pieces_are_chunked_as_the_whole_segment() {
        let cancel = CancellationToken::new();
        for chars in [1u32, 2, 3, 4, 7, 100] {
            for pieces in [
                vec!["ab", "cdé", "", "fgh😀i", "j"],
                vec!["", "abcdefghij"],
                vec!["a", "b", "c", "d", "e", "f"],
                vec![],
            ] {
                let mut sink = RecordingSink::default();
                Chunker::new(chars, 0, &cancel)
                    .emit_pieces(&mut sink, Stream::Message, &pieces)
                    .await
                    .unwrap();
                assert_eq!(
                    sink.lines(),
                    chunks(chars, &pieces.concat()).await,
                    "{chars} {pieces:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn cancelled_token_stops_undelayed_emission() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let mut sink = RecordingSink::default();
        let r = Chunker::new(1, 0, &cancel)
            .emit(&mut sink, Stream::Thought, "abc")
            .await;
        assert_eq!(r, Err(Stop::Cancelled));
        assert!(sink.lines().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn delay_precedes_each_chunk() {
        let cancel = CancellationToken::new();
        let mut sink = RecordingSink::default();
        let start = tokio::time::Instant::now();
        Chunker::new(2, 100, &cancel)
            .emit(&mut sink, Stream::Thought, "abcde")
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(300));
        assert_eq!(sink.lines(), ["thought:ab", "thought:cd", "thought:e"]);
    }
}
