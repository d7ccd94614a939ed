//! Text deltas already received, sent as one chunk: a fast server's
//! deltas cost one event each (persisted, notified) instead of one per
//! token, and a lone delta still goes out at once (docs/agents.md).
//!
//! A stream faster than [`MIN_CHUNK_INTERVAL`] per delta would still make
//! a chunk each time the turn catches up with it (hundreds a second, each a
//! commit and a notification); so after a chunk, text is held until the
//! interval has passed, then sent with whatever joined it. Nobody sees a
//! millisecond; a model of a few hundred tokens a second is never held.

use std::time::{Duration, Instant};

use super::chunk::Decoded;
use super::delta::Calls;
use super::End;
use crate::agent::coalesce::Coalesce;
use crate::agent::sink::EventSink;
use crate::agent::{ProviderFailure, ProviderReason};

/// The least time between two chunks of one answer (but the first).
pub const MIN_CHUNK_INTERVAL: Duration = Duration::from_millis(1);

/// Text deltas received but not yet sent: the shared [`Coalesce`], fed
/// from the stream's pieces.
#[derive(Default)]
pub struct Pending {
    text: Coalesce,
    /// Text was added since the last flush.
    held: bool,
    /// When the last chunk was sent.
    sent_at: Option<Instant>,
}

impl Pending {
    /// Takes one chunk: its reasoning, then its content, join the pending
    /// text (sent first if the other stream was pending); its tool call
    /// deltas go to `calls`. Empty texts cost nothing.
    pub async fn absorb<S: EventSink>(
        &mut self,
        sink: &mut S,
        chunk: Decoded<'_>,
        text: &mut String,
        calls: &mut Calls,
    ) -> Result<(), End> {
        let d = chunk.delta;
        for t in [d.reasoning_content, d.reasoning].into_iter().flatten() {
            if !t.is_empty() {
                self.text.add(sink, true, &t).await?;
                self.held = true;
            }
        }
        if let Some(t) = d.content.filter(|t| !t.is_empty()) {
            self.text.add(sink, false, &t).await?;
            self.held = true;
            text.push_str(&t);
        }
        if let Some(deltas) = d.tool_calls.filter(|c| !c.is_empty()) {
            calls.add(deltas).map_err(|m| {
                End::Provider(ProviderFailure {
                    reason: ProviderReason::Protocol,
                    status: None,
                    message: m,
                })
            })?;
        }
        Ok(())
    }

    /// Whether the pending text is a whole chunk already.
    pub fn full(&self) -> bool {
        self.text.full()
    }

    /// When the held text must go out (`None`: nothing is held).
    pub fn due(&self) -> Option<Instant> {
        if !self.held {
            return None;
        }
        Some(match self.sent_at {
            Some(at) => at + MIN_CHUNK_INTERVAL,
            None => Instant::now(),
        })
    }

    /// Sends the held text if it is a whole chunk or due.
    pub async fn flush_if_due<S: EventSink>(&mut self, sink: &mut S) -> Result<(), End> {
        match self.due() {
            Some(due) if self.full() || due <= Instant::now() => self.flush(sink).await,
            _ => Ok(()),
        }
    }

    /// Sends the held text as one chunk.
    pub async fn flush<S: EventSink>(&mut self, sink: &mut S) -> Result<(), End> {
        if !self.held {
            return Ok(());
        }
        self.held = false;
        self.sent_at = Some(Instant::now());
        Ok(self.text.flush(sink).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::openai::chunk::decode;
    use crate::agent::testing::RecordingSink;

    #[tokio::test]
    async fn joins_one_stream_and_keeps_the_order_across_streams() {
        let mut sink = RecordingSink::default();
        let (mut text, mut calls, mut p) = (String::new(), Calls::default(), Pending::default());
        let chunks = [
            r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"b"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"","content":"c"}}]}"#,
            r#"{"choices":[{"delta":{"content":"d"},"finish_reason":"stop"}]}"#,
        ];
        for c in chunks {
            let chunk = decode(c).unwrap();
            p.absorb(&mut sink, chunk, &mut text, &mut calls).await.ok();
        }
        let chunk = decode(r#"{"choices":[{"delta":{"content":"e"}}]}"#).unwrap();
        p.absorb(&mut sink, chunk, &mut text, &mut calls).await.ok();
        p.flush(&mut sink).await.ok();
        p.flush(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["thought:ab", "msg:cde"]);
        assert_eq!(text, "cde");
    }

    #[tokio::test]
    async fn the_first_text_is_due_at_once_and_later_text_after_the_interval() {
        let mut sink = RecordingSink::default();
        let (mut text, mut calls, mut p) = (String::new(), Calls::default(), Pending::default());
        assert_eq!(p.due(), None);
        let chunk = || decode(r#"{"choices":[{"delta":{"content":"x"}}]}"#).unwrap();
        p.absorb(&mut sink, chunk(), &mut text, &mut calls)
            .await
            .ok();
        assert!(p.due().is_some_and(|d| d <= Instant::now()));
        p.flush_if_due(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["msg:x"]);
        assert_eq!(p.due(), None);

        // Right after a chunk, new text waits for the interval.
        p.absorb(&mut sink, chunk(), &mut text, &mut calls)
            .await
            .ok();
        let due = p.due().unwrap();
        assert!(due > Instant::now());
        p.flush_if_due(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["msg:x"]);
        tokio::time::sleep_until(due.into()).await;
        p.flush_if_due(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["msg:x", "msg:x"]);

        // An empty delta holds nothing.
        let empty = decode(r#"{"choices":[{"delta":{"content":""}}]}"#).unwrap();
        p.absorb(&mut sink, empty, &mut text, &mut calls).await.ok();
        assert_eq!(p.due(), None);
    }
}
